"""Causal-LM model types of the pinned transformers (MODEL_FOR_CAUSAL_LM_MAPPING_NAMES) that
mobius does not convert yet: each with its category and the reason. tests/test_coverage.py
holds every such type to being either registered (and then in the parity matrix) or listed
here; docs/supported-models.md and `mobius list models` show both."""

CATEGORIES = {
    "dense": "dense decoder-only",
    "moe": "mixture of experts",
    "mla": "multi-head latent attention",
    "ssm": "state-space / recurrent / linear attention",
    "encoder": "encoder with an LM head",
    "seq2seq": "encoder-decoder",
    "vlm": "vision-language",
    "speech": "speech and audio",
}

NOT_YET: dict[str, tuple[str, str]] = {
    "axk1": ("mla", "multi-head latent attention (with experts): the next wave (issue 11)"),
    "axk2": ("mla", "multi-head latent attention (with experts): the next wave (issue 11)"),
    "bailing_hybrid": (
        "mla",
        "multi-head latent attention (with experts): the next wave (issue 11)",
    ),
    "bamba": (
        "ssm",
        "state-space, recurrent or linear-attention layers: a cache of another kind, not yet",
    ),
    "bart": ("seq2seq", "the decoder half of an encoder-decoder model: issue 13"),
    "beam": ("moe", "mixture-of-experts decoder: its routed experts are the next wave (issue 11)"),
    "bert": ("encoder", "an encoder model with a causal-LM head: encoders are issue 12"),
    "bert-generation": ("encoder", "an encoder model with a causal-LM head: encoders are issue 12"),
    "big_bird": ("encoder", "an encoder model with a causal-LM head: encoders are issue 12"),
    "bigbird_pegasus": ("seq2seq", "the decoder half of an encoder-decoder model: issue 13"),
    "blenderbot": ("seq2seq", "the decoder half of an encoder-decoder model: issue 13"),
    "blenderbot-small": ("seq2seq", "the decoder half of an encoder-decoder model: issue 13"),
    "blt": (
        "dense",
        "Byte Latent Transformer: an entropy model cuts the bytes into patches at run time, "
        "then a local encoder (hashed n-gram embeddings, cross-attention from bytes to "
        "patches), a global transformer over the patches and a local decoder cross-attending "
        "them: three stacks over data-dependent patch boundaries, which need a task of their "
        "own",
    ),
    "camembert": ("encoder", "an encoder model with a causal-LM head: encoders are issue 12"),
    "cpmant": (
        "dense",
        "a prefix LM whose first call prepends prompt_length learned prompt tokens that stay "
        "in the KV cache, so the cache is longer than attention_mask; onnxruntime-genai "
        "allocates every present.* output by attention_mask's length and refuses it",
    ),
    "data2vec-text": ("encoder", "an encoder model with a causal-LM head: encoders are issue 12"),
    "deepseek_v2": ("mla", "multi-head latent attention (with experts): the next wave (issue 11)"),
    "deepseek_v3": ("mla", "multi-head latent attention (with experts): the next wave (issue 11)"),
    "deepseek_v32": ("mla", "multi-head latent attention (with experts): the next wave (issue 11)"),
    "deepseek_v4": (
        "moe",
        "mixture-of-experts decoder: its routed experts are the next wave (issue 11)",
    ),
    "dots3_note": ("speech", "a speech or audio model: issue 13"),
    "dots3_note_text": (
        "mla",
        "multi-head latent attention (with experts): the next wave (issue 11)",
    ),
    "electra": ("encoder", "an encoder model with a causal-LM head: encoders are issue 12"),
    "emu3": ("vlm", "a vision-language model: issue 14"),
    "ernie": ("encoder", "an encoder model with a causal-LM head: encoders are issue 12"),
    "falcon_h1": (
        "ssm",
        "state-space, recurrent or linear-attention layers: a cache of another kind, not yet",
    ),
    "falcon_mamba": (
        "ssm",
        "state-space, recurrent or linear-attention layers: a cache of another kind, not yet",
    ),
    "fuyu": ("vlm", "a vision-language model: issue 14"),
    "gemma3": ("vlm", "a vision-language model: issue 14"),
    "gemma3n": ("speech", "a speech or audio model: issue 13"),
    "gemma4": ("speech", "a speech or audio model: issue 13"),
    "gemma4_assistant": (
        "dense",
        "a Gemma 4 speculative-decoding draft (multi-token prediction): each step it reads "
        "the target model's last key/values per layer type and its hidden states "
        "(inputs_embeds of 2 x backbone_hidden_size) and keeps no cache of its own, so it "
        "runs only inside the target's generate loop, not as a text-generation package",
    ),
    "gemma4_unified": ("speech", "a speech or audio model: issue 13"),
    "gemma4_unified_assistant": (
        "dense",
        "a Gemma 4 speculative-decoding draft (multi-token prediction): each step it reads "
        "the target model's last key/values per layer type and its hidden states "
        "(inputs_embeds of 2 x backbone_hidden_size) and keeps no cache of its own, so it "
        "runs only inside the target's generate loop, not as a text-generation package",
    ),
    "git": ("vlm", "a vision-language model: issue 14"),
    "glm4_moe_lite": (
        "mla",
        "multi-head latent attention (with experts): the next wave (issue 11)",
    ),
    "glm_moe_dsa": ("mla", "multi-head latent attention (with experts): the next wave (issue 11)"),
    "got_ocr2": ("vlm", "a vision-language model: issue 14"),
    "granitemoehybrid": (
        "ssm",
        "state-space, recurrent or linear-attention layers: a cache of another kind, not yet",
    ),
    "hy_v4": ("mla", "multi-head latent attention (with experts): the next wave (issue 11)"),
    "inkling2_loop_text": (
        "moe",
        "mixture-of-experts decoder: its routed experts are the next wave (issue 11)",
    ),
    "inkling2_text": (
        "moe",
        "mixture-of-experts decoder: its routed experts are the next wave (issue 11)",
    ),
    "inkling_text": (
        "moe",
        "mixture-of-experts decoder: its routed experts are the next wave (issue 11)",
    ),
    "jamba": (
        "ssm",
        "state-space, recurrent or linear-attention layers: a cache of another kind, not yet",
    ),
    "kimi_linear": ("mla", "multi-head latent attention (with experts): the next wave (issue 11)"),
    "lara_mini": (
        "ssm",
        "state-space, recurrent or linear-attention layers: a cache of another kind, not yet",
    ),
    "lfm2": (
        "ssm",
        "state-space, recurrent or linear-attention layers: a cache of another kind, not yet",
    ),
    "lfm2_moe": (
        "ssm",
        "LFM2's experts would fit the MoE core, but most of its layers are gated short "
        "convolutions (in_proj to B, C, x; a depthwise conv of conv_L_cache taps over B * x) "
        "whose recent inputs are a per-layer state carried between calls; the "
        "text-generation task, its genai_config and the runtime only carry KV caches, so the "
        "conv state (as for lfm2) is not yet",
    ),
    "lfm3": (
        "ssm",
        "state-space, recurrent or linear-attention layers: a cache of another kind, not yet",
    ),
    "llama4": ("vlm", "a vision-language model: issue 14"),
    "longcat_flash": (
        "mla",
        "multi-head latent attention (with experts): the next wave (issue 11)",
    ),
    "mamba": (
        "ssm",
        "state-space, recurrent or linear-attention layers: a cache of another kind, not yet",
    ),
    "mamba2": (
        "ssm",
        "state-space, recurrent or linear-attention layers: a cache of another kind, not yet",
    ),
    "marian": ("seq2seq", "the decoder half of an encoder-decoder model: issue 13"),
    "mbart": ("seq2seq", "the decoder half of an encoder-decoder model: issue 13"),
    "megatron-bert": ("encoder", "an encoder model with a causal-LM head: encoders are issue 12"),
    "mimo_v2_flash": (
        "moe",
        "mixture-of-experts decoder: its routed experts are the next wave (issue 11)",
    ),
    "minimax": (
        "ssm",
        "lightning (linear) attention in its `linear_attention` layers keeps a recurrent state "
        "per layer instead of a KV cache: a cache of another kind, not yet",
    ),
    "minimax_m3_vl_text": (
        "moe",
        "mixture-of-experts decoder: its routed experts are the next wave (issue 11)",
    ),
    "mllama": ("vlm", "a vision-language model: issue 14"),
    "moshi": ("speech", "a speech or audio model: issue 13"),
    "moss_transcribe_diarize": ("speech", "a speech or audio model: issue 13"),
    "musicgen": ("speech", "a speech or audio model: issue 13"),
    "musicgen_melody": ("speech", "a speech or audio model: issue 13"),
    "mvp": ("seq2seq", "the decoder half of an encoder-decoder model: issue 13"),
    "nemotron_h": (
        "ssm",
        "state-space, recurrent or linear-attention layers: a cache of another kind, not yet",
    ),
    "olmo_hybrid": (
        "ssm",
        "state-space, recurrent or linear-attention layers: a cache of another kind, not yet",
    ),
    "pegasus": ("seq2seq", "the decoder half of an encoder-decoder model: issue 13"),
    "phi4_multimodal": ("speech", "a speech or audio model: issue 13"),
    "plbart": ("seq2seq", "the decoder half of an encoder-decoder model: issue 13"),
    "prophetnet": ("seq2seq", "the decoder half of an encoder-decoder model: issue 13"),
    "qwen3_5": ("vlm", "a vision-language model: issue 14"),
    "qwen3_5_moe": ("vlm", "a vision-language model: issue 14"),
    "qwen3_5_moe_text": (
        "ssm",
        "state-space, recurrent or linear-attention layers: a cache of another kind, not yet",
    ),
    "qwen3_5_text": (
        "ssm",
        "state-space, recurrent or linear-attention layers: a cache of another kind, not yet",
    ),
    "qwen3_next": (
        "ssm",
        "state-space, recurrent or linear-attention layers: a cache of another kind, not yet",
    ),
    "qwen4_exp": ("vlm", "a vision-language model: issue 14"),
    "qwen4_exp_text": (
        "ssm",
        "state-space, recurrent or linear-attention layers: a cache of another kind, not yet",
    ),
    "recurrent_gemma": (
        "ssm",
        "state-space, recurrent or linear-attention layers: a cache of another kind, not yet",
    ),
    "reformer": (
        "dense",
        "Reformer: LSH attention hashes keys with random rotations (drawn anew on every call "
        "unless hash_seed is set), sorts them into buckets and attends within chunks, in "
        "reversible layers; its cache holds past hidden states and buckets, not keys and "
        "values",
    ),
    "rembert": ("encoder", "an encoder model with a causal-LM head: encoders are issue 12"),
    "roberta": ("encoder", "an encoder model with a causal-LM head: encoders are issue 12"),
    "roberta-prelayernorm": (
        "encoder",
        "an encoder model with a causal-LM head: encoders are issue 12",
    ),
    "roc_bert": ("encoder", "an encoder model with a causal-LM head: encoders are issue 12"),
    "roformer": ("encoder", "an encoder model with a causal-LM head: encoders are issue 12"),
    "rwkv": (
        "ssm",
        "state-space, recurrent or linear-attention layers: a cache of another kind, not yet",
    ),
    "sarvam_mla": ("mla", "multi-head latent attention (with experts): the next wave (issue 11)"),
    "sarvam_moe": (
        "moe",
        "mixture-of-experts decoder: its routed experts are the next wave (issue 11)",
    ),
    "trocr": ("seq2seq", "the decoder half of an encoder-decoder model: issue 13"),
    "whisper": ("seq2seq", "the decoder half of an encoder-decoder model: issue 13"),
    "xlm": ("encoder", "an encoder model with a causal-LM head: encoders are issue 12"),
    "xlm-roberta": ("encoder", "an encoder model with a causal-LM head: encoders are issue 12"),
    "xlm-roberta-xl": ("encoder", "an encoder model with a causal-LM head: encoders are issue 12"),
    "xlnet": ("encoder", "an encoder model with a causal-LM head: encoders are issue 12"),
    "xlstm": (
        "ssm",
        "state-space, recurrent or linear-attention layers: a cache of another kind, not yet",
    ),
    "xmod": ("encoder", "an encoder model with a causal-LM head: encoders are issue 12"),
    "youtu": ("mla", "multi-head latent attention (with experts): the next wave (issue 11)"),
    "zamba": (
        "ssm",
        "state-space, recurrent or linear-attention layers: a cache of another kind, not yet",
    ),
    "zamba2": (
        "ssm",
        "state-space, recurrent or linear-attention layers: a cache of another kind, not yet",
    ),
    "zaya": (
        "ssm",
        "its experts would fit the MoE core, but every layer's attention is CCA (compressed "
        "convolutional attention): q and k pass a causal depthwise then grouped 1-D convolution "
        "over time (cca_time0 + cca_time1 - 2 past columns of the q/k projections), and half of "
        "each value head is the previous token's v_proj_delayed; both are per-layer states "
        "carried between calls beside the KV cache, which the text-generation task, its "
        "genai_config and the runtime do not carry (as for lfm2's conv state), so not yet",
    ),
}
