"""GGUF files (llama.cpp's format) in: their metadata read as a Hugging Face config, their
tensors as a checkpoint, so `build_gguf` runs the same build as a safetensors folder."""
