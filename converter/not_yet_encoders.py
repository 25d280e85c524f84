"""Encoder model types of the pinned transformers that mobius does not convert yet, each with
its category and the reason. The encoder scope is every type of transformers' masked-LM,
image-classification, zero-shot-image-classification, CTC and audio-classification mappings
(tests/test_encoder_coverage.py holds each to being registered, and then parity-tested, or
listed here)."""

SEQ2SEQ_MASKED_LM = (
    "{}ForConditionalGeneration, the masked-LM mapping's class, is the encoder-decoder: it "
    "converts in the seq2seq scope (text2text-generation); the encoder alone as a fill-mask "
    "graph is not built"
)

ENCODER_NOT_YET: dict[str, tuple[str, str]] = {
    "bart": ("seq2seq", SEQ2SEQ_MASKED_LM.format("Bart")),
    "big_bird": (
        "encoder",
        "BERT's layers, but the released checkpoints run block_sparse attention: beyond "
        "(5 + 2 num_random_blocks) block_size tokens transformers pads the sequence to whole "
        "blocks and lets each query block see the first and last blocks, a 3-block sliding "
        "window and num_random_blocks random blocks (at inference all copies of block 0, "
        "weighting it again in the softmax), with special second and second-to-last blocks; "
        "below that length it switches to full attention. That length-dependent pattern is not "
        "built, and a full-attention graph would differ on long inputs",
    ),
    "blip": (
        "multimodal",
        "BlipModel, the zero-shot class, is deprecated by transformers and the Hub's BLIP"
        " checkpoints are its captioning, VQA and image-text-matching heads; its ViT "
        "packs q/k/v in one `qkv` and its text tower is a BERT whose layers carry cross-"
        "attention: not built yet",
    ),
    "blip-2": (
        "multimodal",
        "Blip2ForImageTextRetrieval needs the Q-Former: learned query tokens cross-"
        "attending the ViT-g's image states every other layer, the text run through the "
        "same Q-Former, and the similarity the maximum over the query embeddings: not "
        "built yet",
    ),
    "dinat": (
        "vision",
        "DiNAT's dilated neighborhood attention (each token attends to its k x k "
        "neighbours at a dilation, with a relative bias) is not built; transformers "
        "itself needs the natten kernels to run it",
    ),
    "hiera": (
        "vision",
        "Hiera's mask-unit attention is not built: tokens unrolled into mask-unit order "
        "across stages, attention within (then across) units with query max-pooling at "
        "stage transitions, and the reroll back to a spatial map",
    ),
    "mbart": ("seq2seq", SEQ2SEQ_MASKED_LM.format("MBart")),
    "mra": (
        "encoder",
        "a text encoder (MraForMaskedLM): its blocks are not built yet",
    ),
    "mvp": ("seq2seq", SEQ2SEQ_MASKED_LM.format("Mvp")),
    "reformer": (
        "encoder",
        "a text encoder (ReformerForMaskedLM): its blocks are not built yet",
    ),
    "shieldgemma2": (
        "vlm",
        "ShieldGemma2ForImageClassification runs the whole Gemma 3 vision-language model "
        "(SigLIP tower, projector, decoder over a policy prompt) and reads the yes/no "
        "token logits; that VLM is not converted",
    ),
    "timm_wrapper": (
        "vision",
        "TimmWrapper runs whichever timm architecture its config names (`architecture`), "
        "with timm's modules and tensor names; each would need its own conversion",
    ),
    "videoprism": (
        "multimodal",
        "VideoPrismClipModel sits in the zero-shot-image-classification mapping but is a "
        "video-text two-tower: its tower reads pixel_values_videos [batch, frames, 3, H, W], "
        "which the task's inputs (pixel_values [batch, 3, H, W]) cannot express, and no "
        "video task exists. Its blocks are not built either: a factorized space-time ViT "
        "(tubelet patches + spatial positions, spatial layers, then temporal layers over "
        "each patch's frames with their own positions, regrouped to frame-major), auxiliary "
        "layers, an attention-pooling head (learned query, softplus per-dim query scale), "
        "LayerNorms scaled by 1 + weight, tanh-softcapped attention logits; its text tower "
        "scales embeddings by sqrt(hidden), adds sinusoidal positions, appends a CLS token "
        "last and attends causally (under an attention mask); its logits are softmaxes of "
        "the similarity over the batch axis (videos for logits_per_video, texts for "
        "logits_per_text), not scaled dot products",
    ),
    "whisper": (
        "speech",
        "WhisperForAudioClassification is the encoder of an encoder-decoder speech model: issue 13",
    ),
}
