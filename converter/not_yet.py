"""Causal-LM model types of the pinned transformers (MODEL_FOR_CAUSAL_LM_MAPPING_NAMES) that
mobius does not convert yet: each with its category and the reason. tests/test_coverage.py
holds every such type to being either registered (and then in the parity matrix) or listed
here; docs/supported-models.md and `mobius list models` show both."""

CATEGORIES = {
    "dense": "dense decoder-only",
    "moe": "mixture of experts",
    "mla": "multi-head latent attention",
    "ssm": "state-space / recurrent / linear attention",
    "encoder": "text encoder",
    "vision": "vision encoder",
    "audio": "audio encoder",
    "multimodal": "text-image towers",
    "seq2seq": "encoder-decoder",
    "vlm": "vision-language",
    "speech": "speech and audio",
}

ENCODER_LM_HEAD = (
    "the encoder run as a causal decoder (its ...LMHeadModel / ...ForCausalLM head with "
    "is_decoder): the encoder tasks convert where the type is supported (encoders scope), the "
    "causal-LM head with a KV cache does not yet"
)

SEQ2SEQ_DECODER_ALONE = (
    "the decoder of an encoder-decoder run alone (its ...ForCausalLM head, cross-attention "
    "unused): the encoder-decoder converts in the seq2seq scope, the decoder alone does not yet"
)

NOT_YET: dict[str, tuple[str, str]] = {
    "axk2": (
        "mla",
        "DeepSeek sparse attention (an indexer with its own key cache picking each query's top "
        "index_topk past tokens) and norms gated by a low-rank sigmoid MLP: not yet",
    ),
    "bailing_hybrid": (
        "ssm",
        "Ling 3's hybrid: most layers are Kimi delta attention (gated delta-rule linear attention"
        " after short causal convolutions of q, k and v), whose recurrent state and conv states "
        "are carried between calls; the others are gated multi-head latent attention. The "
        "text-generation task, its genai_config and the runtime carry only KV caches, so the "
        "delta state is not yet",
    ),
    "bamba": (
        "ssm",
        "state-space, recurrent or linear-attention layers: a cache of another kind, not yet",
    ),
    "bart": ("seq2seq", SEQ2SEQ_DECODER_ALONE),
    "bert": ("encoder", ENCODER_LM_HEAD),
    "bert-generation": ("encoder", ENCODER_LM_HEAD),
    "big_bird": ("encoder", ENCODER_LM_HEAD),
    "bigbird_pegasus": ("seq2seq", SEQ2SEQ_DECODER_ALONE),
    "blenderbot": ("seq2seq", SEQ2SEQ_DECODER_ALONE),
    "blenderbot-small": ("seq2seq", SEQ2SEQ_DECODER_ALONE),
    "blt": (
        "dense",
        "Byte Latent Transformer: an entropy model cuts the bytes into patches at run time, "
        "then a local encoder (hashed n-gram embeddings, cross-attention from bytes to "
        "patches), a global transformer over the patches and a local decoder cross-attending "
        "them: three stacks over data-dependent patch boundaries, which need a task of their "
        "own",
    ),
    "camembert": ("encoder", ENCODER_LM_HEAD),
    "cpmant": (
        "dense",
        "a prefix LM whose first call prepends prompt_length learned prompt tokens that stay "
        "in the KV cache, so the cache is longer than attention_mask; onnxruntime-genai "
        "allocates every present.* output by attention_mask's length and refuses it",
    ),
    "data2vec-text": ("encoder", ENCODER_LM_HEAD),
    "deepseek_v32": (
        "mla",
        "DeepSeek sparse attention: a per-layer indexer, with a key cache of its own, keeps each "
        "query's top index_topk past tokens (a third cache per layer and a top-k mask): not yet",
    ),
    "deepseek_v4": (
        "mla",
        "DeepSeek-V4's attention keeps three caches per layer, not one KV pair: a sliding window "
        "of a single shared K=V head plus long-range entries its compressors emit every "
        "compress_rate tokens (HCA) or scored by a lightning indexer with its own key cache "
        "(CSA), the compressors' buffers of not-yet-compressed tokens carried between calls; "
        "around it run manifold-constrained hyper-connections (hc_mult residual streams mixed by "
        "Sinkhorn-normalized weights) and hash-routed first MoE layers (a token-id -> expert "
        "table). That compressed, buffered cache has no place in the task, genai_config or "
        "runtime yet",
    ),
    "dots3_note": ("speech", "a speech or audio model: issue 13"),
    "dots3_note_text": (
        "mla",
        "DeepSeek sparse attention: a per-layer indexer, with a key cache of its own, keeps each "
        "query's top index_topk past tokens (a third cache per layer and a top-k mask): not yet",
    ),
    "electra": ("encoder", ENCODER_LM_HEAD),
    "emu3": ("vlm", "a vision-language model: issue 14"),
    "ernie": ("encoder", ENCODER_LM_HEAD),
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
    "glm_moe_dsa": (
        "mla",
        "DeepSeek sparse attention: a per-layer indexer, with a key cache of its own, keeps each "
        "query's top index_topk past tokens (a third cache per layer and a top-k mask): not yet",
    ),
    "got_ocr2": ("vlm", "a vision-language model: issue 14"),
    "granitemoehybrid": (
        "ssm",
        "state-space, recurrent or linear-attention layers: a cache of another kind, not yet",
    ),
    "hy_v4": (
        "mla",
        "HY-V4's attention is DeepSeek-V3.2's sparse (DSA) multi-head latent attention: a "
        "lightning indexer with its own per-layer key cache picks each query's top-k keys (shared"
        " across layers by indexer_types), so a layer keeps an indexer cache besides its latent "
        "KV cache, which the task, genai_config and runtime do not carry yet; its layers also mix"
        " hyper-connection residual streams",
    ),
    "inkling2_loop_text": (
        "ssm",
        "Inkling 2 with looped layers (loop_layer_index_start..end run more than once, passing "
        "gated messages between passes): each layer also runs short causal convolutions whose "
        "recent inputs are a per-layer conv state carried between calls, which the "
        "text-generation task, its genai_config and the runtime do not carry (as for lfm2)",
    ),
    "inkling2_text": (
        "ssm",
        "Inkling 2's layers run short causal convolutions (dynamic ones on the keys and values, "
        "fixed ones after attention and the MLP) whose recent inputs are a per-layer conv state "
        "carried between calls, and mix block attention residuals; the text-generation task, its "
        "genai_config and the runtime carry only KV caches, so the conv state (as for lfm2) is "
        "not yet",
    ),
    "inkling_text": (
        "ssm",
        "every Inkling layer runs short causal convolutions (on the keys, and on the attention "
        "and MLP outputs, conv_kernel_size / sconv_kernel_size taps) whose recent inputs are a "
        "per-layer conv state carried between calls; the text-generation task, its genai_config "
        "and the runtime carry only KV caches, so the conv state (as for lfm2) is not yet",
    ),
    "jamba": (
        "ssm",
        "state-space, recurrent or linear-attention layers: a cache of another kind, not yet",
    ),
    "kimi_linear": (
        "mla",
        "Kimi Delta Attention (linear-attention) layers between its latent-attention layers keep a"
        " recurrent state and convolution cache, a cache of another kind: not yet",
    ),
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
    "mamba": (
        "ssm",
        "state-space, recurrent or linear-attention layers: a cache of another kind, not yet",
    ),
    "mamba2": (
        "ssm",
        "state-space, recurrent or linear-attention layers: a cache of another kind, not yet",
    ),
    "marian": ("seq2seq", SEQ2SEQ_DECODER_ALONE),
    "mbart": ("seq2seq", SEQ2SEQ_DECODER_ALONE),
    "megatron-bert": ("encoder", ENCODER_LM_HEAD),
    "minimax": (
        "ssm",
        "lightning (linear) attention in its `linear_attention` layers keeps a recurrent state "
        "per layer instead of a KV cache: a cache of another kind, not yet",
    ),
    "minimax_m3_vl_text": (
        "mla",
        "MiniMax-M3's `minimax_m3_sparse` layers are block-sparse attention picked by a lightning"
        " indexer whose keys are a second per-layer cache (idx_keys) beside the KV cache; the "
        "task, genai_config and runtime carry one KV pair per layer, so the indexer cache is not "
        "yet",
    ),
    "mllama": ("vlm", "a vision-language model: issue 14"),
    "moshi": ("speech", "a speech or audio model: issue 13"),
    "moss_transcribe_diarize": ("speech", "a speech or audio model: issue 13"),
    "musicgen": ("speech", "a speech or audio model: issue 13"),
    "musicgen_melody": ("speech", "a speech or audio model: issue 13"),
    "mvp": ("seq2seq", SEQ2SEQ_DECODER_ALONE),
    "nemotron_h": (
        "ssm",
        "state-space, recurrent or linear-attention layers: a cache of another kind, not yet",
    ),
    "olmo_hybrid": (
        "ssm",
        "state-space, recurrent or linear-attention layers: a cache of another kind, not yet",
    ),
    "pegasus": ("seq2seq", SEQ2SEQ_DECODER_ALONE),
    "phi4_multimodal": ("speech", "a speech or audio model: issue 13"),
    "plbart": ("seq2seq", SEQ2SEQ_DECODER_ALONE),
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
    "rembert": ("encoder", ENCODER_LM_HEAD),
    "roberta": ("encoder", ENCODER_LM_HEAD),
    "roberta-prelayernorm": (
        "encoder",
        ENCODER_LM_HEAD,
    ),
    "roc_bert": ("encoder", ENCODER_LM_HEAD),
    "roformer": ("encoder", ENCODER_LM_HEAD),
    "rwkv": (
        "ssm",
        "state-space, recurrent or linear-attention layers: a cache of another kind, not yet",
    ),
    "trocr": ("seq2seq", "the decoder half of an encoder-decoder model: issue 13"),
    "whisper": ("seq2seq", "the decoder half of an encoder-decoder model: issue 13"),
    "xlm": ("encoder", ENCODER_LM_HEAD),
    "xlm-roberta": ("encoder", ENCODER_LM_HEAD),
    "xlm-roberta-xl": ("encoder", ENCODER_LM_HEAD),
    "xlnet": ("encoder", ENCODER_LM_HEAD),
    "xlstm": (
        "ssm",
        "state-space, recurrent or linear-attention layers: a cache of another kind, not yet",
    ),
    "xmod": ("encoder", ENCODER_LM_HEAD),
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
