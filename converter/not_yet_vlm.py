"""Vision-language model types of the pinned transformers that mobius does not convert yet, each
with its category and the reason. The image-text-to-text scope is every type of transformers'
MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES (tests/test_vlm_coverage.py holds each to being
registered, and then parity-tested, or listed here). A VLM converts as three components (vision,
embedding, decoder: converter/tasks/vision_language.py); the reasons say what a type needs
beyond that."""

LLAVA_LIKE = (
    "LLaVA's layout (a vision tower, a projector, the image features in place of the image "
    "tokens) with {}: not built yet"
)
QWEN_VL_LIKE = (
    "a Qwen-VL-style vision tower over the processor's flattened patches (2-D rotary, a patch "
    "merger) with {}: not built yet"
)
ENCODER_DECODER = (
    "an image-conditioned encoder-decoder ({}): the decoder cross-attends to the image encoder, "
    "which the vision + embedding + decoder layout does not carry; not yet"
)
VQ_TOKENS = (
    "images become discrete tokens of a VQ-VAE codebook ({}) that the decoder reads as ordinary "
    "ids: the VQ encoder graph is not built yet"
)
QFORMER = (
    "a Q-Former ({}) turns the vision tower's patches into a fixed set of query tokens before "
    "the language model: not built yet"
)
TEXT_NOT_YET = "its text model ({}) does not convert yet (see the text-generation scope)"
OCR_SAM = (
    "SAM's windowed ViT and neck are built (converter/models/sam_vision.py, GOT-OCR 2.0's tower); "
    "{}: not built yet"
)
OMNI = (
    "an omni model: audio and vision towers both feed {}; the audio tower and its embedding "
    "merge are not built yet"
)
MINICPM = (
    "MiniCPM-V's layout: a SigLIP-style tower over variable-size slices with a windowed "
    "attention merger and a downsampling MLP ({}): not built yet"
)

VLM_NOT_YET: dict[str, tuple[str, str]] = {
    "apertus1p5": ("vlm", VQ_TOKENS.format("a ResNet-and-attention vision tokenizer")),
    "aria": (
        "vlm",
        "an Idefics-3-style SigLIP tower whose patches a cross-attention projector with learned "
        "queries pools, into a mixture-of-experts text model (aria_text): not built yet",
    ),
    "blip": (
        "vlm",
        "a ViT whose features a BERT-layout text decoder cross-attends to in every layer: the "
        "cross-attention decoder is not the embedding-merge layout; not yet",
    ),
    "blip-2": ("vlm", QFORMER.format("BLIP-2's, with OPT or Flan-T5 behind it")),
    "chameleon": ("vlm", VQ_TOKENS.format("Chameleon's VQGAN, its ids mapped into the vocabulary")),
    "cohere_compass": (
        "vlm",
        QWEN_VL_LIKE.format("Cohere's own text model and sequence-classification heads"),
    ),
    "cosmos3_edge": (
        "vlm",
        "a ViT with a patch merger into its own text model (cosmos3_edge_text): not built yet",
    ),
    "deepseek_ocr2": (
        "vlm",
        OCR_SAM.format(
            "its positions resized bicubically to each view, two more stride-2 Convs, a "
            "Qwen2-style ViT over the SAM map and learned queries, global and local views "
            "joined by a separator, into DeepSeek-V2's MoE"
        ),
    ),
    "deepseek_vl_hybrid": (
        "vlm",
        "two vision towers (SigLIP at low resolution, a SAM ViT with a neck at high "
        "resolution) whose features are concatenated before the aligner: not built yet",
    ),
    "diffusion_gemma": (
        "vlm",
        "a block-diffusion language model (an encoder and a decoder denoising blocks of tokens "
        "in parallel): not autoregressive generation, which the decoder graph assumes",
    ),
    "dots3_note": (
        "vlm",
        "a mixture-of-experts vision tower and an audio tower into a sparse-attention MoE "
        "decoder with an indexer: not built yet",
    ),
    "emu3": ("vlm", VQ_TOKENS.format("Emu3's 3-D VQ-VAE")),
    "ernie4_5_vl_moe": (
        "vlm",
        QWEN_VL_LIKE.format(
            "a variable-resolution resampler and a multimodal MoE decoder "
            "whose experts split by modality"
        ),
    ),
    "evolla": (
        "vlm",
        "a protein-language model: a SaProt encoder and a resampler feed cross-attention layers "
        "of a Llama decoder, not images",
    ),
    "fast_vlm": (
        "vlm",
        "LLaVA's projector into Qwen2, but its tower is timm's FastViT-MCi3 (FastViTHD, through "
        "timm_wrapper: reparameterized RepMixer convolution stages, then attention stages, its "
        "last feature map the image tokens): no FastViT tower is built yet",
    ),
    "florence2": ("seq2seq", ENCODER_DECODER.format("a DaViT tower feeding BART")),
    "fuyu": (
        "vlm",
        "no vision tower: image patches are linearly projected straight into a Persimmon "
        "decoder, with newline tokens between patch rows; the patch embedding component is not "
        "built yet",
    ),
    "gemma3n": (
        "vlm",
        "a MobileNet-v5 vision tower and a Conformer audio tower into Gemma 3n's AltUp/LAuReL "
        "decoder with per-layer embeddings: not built yet",
    ),
    "gemma4": (
        "vlm",
        "Gemma 4's vision tower (2-D rotary, pooled patches) and audio tower into gemma4_text: "
        "not built yet",
    ),
    "gemma4_unified": (
        "vlm",
        "Gemma 4's unified layout (the vision embedder inside the text model, an audio tower): "
        "not built yet",
    ),
    "git": (
        "vlm",
        "a CLIP tower whose projected features prefix a BERT-layout causal decoder that attends "
        "to them bidirectionally: not the embedding-merge layout; not yet",
    ),
    "glm5_next": (
        "vlm",
        "a vision tower into a decoder with hyper-connections, linear attention and an indexer: "
        "not built yet",
    ),
    "granite4_vision": (
        "vlm",
        "LLaVA-NeXT tiling with a windowed Q-Former downsampler into Granite 4: not built yet",
    ),
    "granite_docling": (
        "vlm",
        "a SigLIP-style tower with a routed DeepStack connector feeding several decoder "
        "layers: not built yet",
    ),
    "hy_v4_vl": (
        "vlm",
        QWEN_VL_LIKE.format("a decoder with hyper-connections, an indexer and experts"),
    ),
    "idefics": (
        "vlm",
        "a perceiver resampler and gated cross-attention layers inserted into a Llama decoder "
        "(Flamingo's layout): not built yet",
    ),
    "inkling2": (
        "vlm",
        "a decoder of sliding and full attention with short convolutions and relative position "
        "biases: its cache and attention are not built yet",
    ),
    "inkling2_loop": (
        "vlm",
        "Inkling 2's decoder run in loops with message gates: not built yet",
    ),
    "inkling_mm_model": (
        "vlm",
        "vision and audio towers into an MoE decoder with short convolutions: not built yet",
    ),
    "instructblip": ("vlm", QFORMER.format("InstructBLIP's, reading the instruction too")),
    "instructblipvideo": ("vlm", QFORMER.format("InstructBLIP-Video's, per frame")),
    "janus": (
        "vlm",
        "SigLIP understanding tower plus a VQ-VAE generation head: the understanding path is "
        "LLaVA-like, the generation head is not built; not yet",
    ),
    "kimi_k25": (
        "vlm",
        "a MoonViT tower (2-D rotary, native resolution) into DeepSeek-V3's latent attention "
        "MoE: not built yet",
    ),
    "kosmos-2": (
        "vlm",
        "a CLIP tower whose whole last hidden state goes through post_layernorm and an L2 "
        "normalize, then image_to_text_projection (dense, then latent_query_num learned queries "
        "cross-attending the projected patches concatenated with themselves) into an "
        "XGLM-like decoder whose attention has a LayerNorm before out_proj (inner_attn_ln) and "
        "whose MLP has one after the activation (ffn_layernorm), neither built by the fairseq "
        "layers; the features fill the rows image_embeds_position_mask marks (the processor's "
        "distinct ids from unk + 1; config.json names no image token), then sqrt(embed_dim) scales "
        "them with the text rows (the embedding graph would need the mask as an input): not "
        "built yet",
    ),
    "kosmos-2.5": (
        "vlm",
        "a Pix2Struct-style variable-resolution tower (flattened patches with row/column "
        "embeddings) into a sinusoidal-position decoder: not built yet",
    ),
    "lfm2_vl": (
        "vlm",
        "a SigLIP 2 NaFlex tower, pixel unshuffle and a LayerNorm projector into LFM2: "
        + TEXT_NOT_YET.format("lfm2, gated short convolutions"),
    ),
    "lfm3_vl": (
        "vlm",
        "its own vision tower with short convolutions into LFM3: not built yet",
    ),
    "llama4": (
        "vlm",
        "an unfold-convolution ViT with 2-D rotary and a pixel-shuffle MLP into Llama 4's MoE "
        "decoder (chunked attention, no-rope layers): not built yet",
    ),
    "minicpm_ocr": ("vlm", MINICPM.format("MiniCPM OCR")),
    "minicpmv4_6": ("vlm", MINICPM.format("MiniCPM-V 4.6")),
    "minicpmv4_7": ("vlm", MINICPM.format("MiniCPM-V 4.7")),
    "minimax_m3_vl": (
        "vlm",
        "a vision tower into MiniMax M3's sparse-attention MoE decoder: not built yet",
    ),
    "mistral4": (
        "vlm",
        "Mistral 4's latent-attention MoE decoder, listed here only as a causal LM: "
        + TEXT_NOT_YET.format("mistral4"),
    ),
    "mistral_large4": (
        "vlm",
        "a Pixtral tower into a sparse-attention MoE decoder with an indexer: not built yet",
    ),
    "mllama": (
        "vlm",
        "a tiled vision encoder with aspect-ratio embeddings feeding cross-attention layers "
        "interleaved in the Llama decoder: not the embedding-merge layout; not yet",
    ),
    "molmo2": (
        "vlm",
        "a ViT whose multi-layer features an attention-pooling adapter reduces per crop: not "
        "built yet",
    ),
    "muse_glimmer": (
        "vlm",
        "a vision tower into a decoder with centered RMSNorm and normed embeddings: not built yet",
    ),
    "muse_spark": (
        "vlm",
        "vision and audio towers into an MoE decoder with residual gates: not built yet",
    ),
    "nemotron_h_omni": (
        "vlm",
        "a RADIO vision tower and an audio tower into Nemotron-H's hybrid Mamba decoder: "
        + TEXT_NOT_YET.format("nemotron_h"),
    ),
    "paddleocr_vl": (
        "vlm",
        "a NaViT-style SigLIP tower with 2-D rotary (VideoLLaMA 3's encoder layers) whose "
        "learned position grid is resampled bilinearly without aligned corners (Qwen3-VL's "
        "aligns them), a projector merging raster-ordered 2x2 blocks, into ERNIE 4.5's decoder "
        "with Qwen2-VL's 3-D rope rotating halves (ERNIE 4.5 rotates interleaved pairs): not "
        "built yet",
    ),
    "perception_lm": (
        "vlm",
        "LLaVA's projector into Llama, but its tower is timm's Perception Encoder (through "
        "timm_wrapper: an Eva-style ViT with 2-D rotary) over each image's tiles, the projected "
        "tokens average-pooled 2x2, video frames through the same path: no Perception Encoder "
        "tower is built yet",
    ),
    "pi0": (
        "vlm",
        "a vision-language-action model: PaliGemma plus a flow-matching action expert; it "
        "produces actions, not text",
    ),
    "pix2struct": (
        "seq2seq",
        ENCODER_DECODER.format("variable-resolution flattened patches into a T5-style decoder"),
    ),
    "pp_formulanet": (
        "seq2seq",
        ENCODER_DECODER.format("a SAM-style tower feeding an mBART-style decoder"),
    ),
    "qianfan_ocr": (
        "vlm",
        "InternVL's graphs (converter/models/internvl.py) into Qwen3, but transformers loads "
        "its checkpoints from InternVL's original layout (vision_model.encoder.layers.N with one "
        "fused attn.qkv, ls1/ls2, mlp1.0/1/3), whose q/k/v split and renames are not built yet",
    ),
    "qwen2_5_omni_thinker": ("vlm", OMNI.format("Qwen2.5-Omni's thinker")),
    "qwen3_5": (
        "vlm",
        "Qwen3-VL's vision tower into Qwen3.5's gated delta-net hybrid decoder, whose recurrent "
        "state the decoder graph does not carry yet",
    ),
    "qwen3_5_moe": (
        "vlm",
        "Qwen3-VL's vision tower into Qwen3.5's gated delta-net MoE decoder, whose recurrent "
        "state the decoder graph does not carry yet",
    ),
    "qwen3_omni_moe_thinker": ("vlm", OMNI.format("Qwen3-Omni's MoE thinker")),
    "qwen4_exp": (
        "vlm",
        "a vision tower into a gated delta-net MoE decoder with n-gram embeddings and an "
        "indexer: not built yet",
    ),
    "step3p7": (
        "vlm",
        "a vision tower with 2-D rotary into Step's MoE decoder: not built yet",
    ),
    "t5gemma2": (
        "seq2seq",
        ENCODER_DECODER.format("a SigLIP tower feeding T5Gemma 2's encoder"),
    ),
    "udop": (
        "seq2seq",
        ENCODER_DECODER.format(
            "document layout: patches, words and boxes into a T5 encoder with 2-D relative biases"
        ),
    ),
    "unlimited_ocr": (
        "vlm",
        OCR_SAM.format(
            "DeepSeek-OCR's layout: a CLIP ViT over the SAM map, its tokens concatenated with the "
            "map's, global and local views, into a DeepSeek MoE with reference sliding windows"
        ),
    ),
    "vision-encoder-decoder": (
        "seq2seq",
        ENCODER_DECODER.format("any vision encoder with any text decoder, e.g. TrOCR, Donut"),
    ),
}
