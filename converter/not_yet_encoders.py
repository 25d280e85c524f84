"""Encoder model types of the pinned transformers that mobius does not convert yet, each with
its category and the reason. The encoder scope is every type of transformers' masked-LM,
image-classification, zero-shot-image-classification, CTC and audio-classification mappings
(tests/test_encoder_coverage.py holds each to being registered, and then parity-tested, or
listed here)."""

ENCODER_NOT_YET: dict[str, tuple[str, str]] = {
    "albert": (
        "encoder",
        "a text encoder (AlbertForMaskedLM): its blocks are not built yet",
    ),
    "align": (
        "multimodal",
        "a two-tower text-image model (AlignModel): its blocks are not built yet",
    ),
    "altclip": (
        "multimodal",
        "a two-tower text-image model (AltCLIPModel): its blocks are not built yet",
    ),
    "audio-spectrogram-transformer": (
        "audio",
        "an audio encoder (ASTForAudioClassification): its blocks are not built yet",
    ),
    "bart": (
        "seq2seq",
        "BartForConditionalGeneration is the encoder-decoder's masked-LM head: encoder-"
        "decoders are issue 13",
    ),
    "big_bird": (
        "encoder",
        "a text encoder (BigBirdForMaskedLM): its blocks are not built yet",
    ),
    "bit": (
        "vision",
        "BiT's ResNet-v2 blocks are not built: weight-standardized Convs (each filter "
        "normalized at run time; would fold into the weights at binding), GroupNorm with "
        "the activation, pre-activation bottlenecks and TensorFlow 'SAME' dynamic padding "
        "(DynamicPad2d, BitMaxPool2d)",
    ),
    "blip": (
        "multimodal",
        "a two-tower text-image model (BlipModel): its blocks are not built yet",
    ),
    "blip-2": (
        "multimodal",
        "a two-tower text-image model (Blip2ForImageTextRetrieval): its blocks are not built yet",
    ),
    "camembert": (
        "encoder",
        "a text encoder (CamembertForMaskedLM): its blocks are not built yet",
    ),
    "chinese_clip": (
        "multimodal",
        "a two-tower text-image model (ChineseCLIPModel): its blocks are not built yet",
    ),
    "clip": (
        "multimodal",
        "a two-tower text-image model (CLIPModel, CLIPForImageClassification): its blocks"
        " are not built yet",
    ),
    "clipseg": (
        "multimodal",
        "a two-tower text-image model (CLIPSegModel): its blocks are not built yet",
    ),
    "convbert": (
        "encoder",
        "a text encoder (ConvBertForMaskedLM): its blocks are not built yet",
    ),
    "cvt": (
        "vision",
        "CvT's blocks are not built: convolutional token embeddings per stage and q/k/v "
        "projected by depthwise Conv + BatchNorm over the token map (strided for keys and "
        "values), with a cls token joining only in the last stage",
    ),
    "data2vec-audio": (
        "audio",
        "a speech encoder (Data2VecAudioForCTC, Data2VecAudioForSequenceClassification): "
        "its blocks are not built yet",
    ),
    "data2vec-text": (
        "encoder",
        "a text encoder (Data2VecTextForMaskedLM): its blocks are not built yet",
    ),
    "deberta": (
        "encoder",
        "a text encoder (DebertaForMaskedLM): its blocks are not built yet",
    ),
    "deberta-v2": (
        "encoder",
        "a text encoder (DebertaV2ForMaskedLM): its blocks are not built yet",
    ),
    "dinat": (
        "vision",
        "DiNAT's dilated neighborhood attention (each token attends to its k x k "
        "neighbours at a dilation, with a relative bias) is not built; transformers "
        "itself needs the natten kernels to run it",
    ),
    "distilbert": (
        "encoder",
        "a text encoder (DistilBertForMaskedLM): its blocks are not built yet",
    ),
    "efficientnet": (
        "vision",
        "EfficientNet's blocks are not built: width/depth multipliers (round_filters, "
        "round_repeats), TensorFlow 'SAME' padding on strided depthwise Convs, MBConv "
        "expansion with squeeze-and-excitation and swish, BatchNorm with its own "
        "eps/momentum",
    ),
    "electra": (
        "encoder",
        "a text encoder (ElectraForMaskedLM): its blocks are not built yet",
    ),
    "ernie": (
        "encoder",
        "a text encoder (ErnieForMaskedLM): its blocks are not built yet",
    ),
    "esm": (
        "encoder",
        "a text encoder (EsmForMaskedLM): its blocks are not built yet",
    ),
    "esmc": (
        "encoder",
        "a text encoder (EsmcForMaskedLM): its blocks are not built yet",
    ),
    "eurobert": (
        "encoder",
        "a text encoder (EuroBertForMaskedLM): its blocks are not built yet",
    ),
    "flaubert": (
        "encoder",
        "a text encoder (FlaubertWithLMHeadModel): its blocks are not built yet",
    ),
    "fnet": (
        "encoder",
        "a text encoder (FNetForMaskedLM): its blocks are not built yet",
    ),
    "focalnet": (
        "vision",
        "FocalNet's focal modulation (hierarchical depthwise-Conv contexts gated per "
        "level plus a global average context, multiplied into a query projection) is not "
        "built; Swin-like stages otherwise",
    ),
    "funnel": (
        "encoder",
        "a text encoder (FunnelForMaskedLM): its blocks are not built yet",
    ),
    "granite_speech5_ctc": (
        "audio",
        "a speech encoder (GraniteSpeech5ForCTC): its blocks are not built yet",
    ),
    "gte": (
        "encoder",
        "a text encoder (GteForMaskedLM): its blocks are not built yet",
    ),
    "hgnet_v2": (
        "vision",
        "HGNetV2's blocks are not built: the two-branch stem (padded max pool with "
        "ceil_mode beside a Conv pair, concatenated), HG blocks aggregating concatenated "
        "light Conv outputs through squeeze/excitation Convs, learnable affine blocks "
        "(scale and bias after each activation)",
    ),
    "hiera": (
        "vision",
        "Hiera's mask-unit attention is not built: tokens unrolled into mask-unit order "
        "across stages, attention within (then across) units with query max-pooling at "
        "stage transitions, and the reroll back to a spatial map",
    ),
    "hubert": (
        "audio",
        "a speech encoder (HubertForCTC, HubertForSequenceClassification): its blocks are"
        " not built yet",
    ),
    "ibert": (
        "encoder",
        "a text encoder (IBertForMaskedLM): its blocks are not built yet",
    ),
    "imagegpt": (
        "vision",
        "ImageGPT reads input_ids (its processor turns pixels into k-means colour-cluster "
        "tokens), not pixel_values: a GPT-2 decoder with its mean-square norm (no mean, "
        "no bias) whose classifier averages the hidden states; the image tasks here take "
        "pixel_values",
    ),
    "jina_embeddings_v3": (
        "encoder",
        "a text encoder (JinaEmbeddingsV3ForMaskedLM): its blocks are not built yet",
    ),
    "lasr_ctc": (
        "audio",
        "a speech encoder (LasrForCTC): its blocks are not built yet",
    ),
    "layoutlm": (
        "encoder",
        "a text encoder (LayoutLMForMaskedLM): its blocks are not built yet",
    ),
    "levit": (
        "vision",
        "LeViT's blocks are not built: Conv+BatchNorm stem with Hardswish, "
        "Linear+BatchNorm1d layers, attention with learned per-head biases over an offset "
        "index, subsampling attention between stages, and the distilled two-head "
        "classifier",
    ),
    "longformer": (
        "encoder",
        "a text encoder (LongformerForMaskedLM): its blocks are not built yet",
    ),
    "luke": (
        "encoder",
        "a text encoder (LukeForMaskedLM): its blocks are not built yet",
    ),
    "mbart": (
        "seq2seq",
        "MBartForConditionalGeneration is the encoder-decoder's masked-LM head: encoder-"
        "decoders are issue 13",
    ),
    "megatron-bert": (
        "encoder",
        "a text encoder (MegatronBertForMaskedLM): its blocks are not built yet",
    ),
    "metaclip_2": (
        "multimodal",
        "a two-tower text-image model (MetaClip2Model, MetaClip2ForImageClassification): "
        "its blocks are not built yet",
    ),
    "mobilebert": (
        "encoder",
        "a text encoder (MobileBertForMaskedLM): its blocks are not built yet",
    ),
    "mobilevit": (
        "vision",
        "MobileViT's blocks are not built: MobileNetV2 inverted residuals and MobileViT "
        "layers that unfold the map into patches, run transformer layers across patches "
        "at each pixel position, then fold back and fuse with a Conv",
    ),
    "mobilevitv2": (
        "vision",
        "MobileViTV2's blocks are not built: separable linear self-attention (a softmax "
        "context vector over patches), GroupNorm, and the unfold/fold of the map into "
        "patches (torch Unfold/Fold)",
    ),
    "modernbert": (
        "encoder",
        "a text encoder (ModernBertForMaskedLM): its blocks are not built yet",
    ),
    "modernvbert": (
        "encoder",
        "a text encoder (ModernVBertForMaskedLM): its blocks are not built yet",
    ),
    "mpnet": (
        "encoder",
        "a text encoder (MPNetForMaskedLM): its blocks are not built yet",
    ),
    "mra": (
        "encoder",
        "a text encoder (MraForMaskedLM): its blocks are not built yet",
    ),
    "mvp": (
        "seq2seq",
        "MvpForConditionalGeneration is the encoder-decoder's masked-LM head: encoder-"
        "decoders are issue 13",
    ),
    "neomme": (
        "encoder",
        "a text encoder (NeoMMEForMaskedLM): its blocks are not built yet",
    ),
    "nomic_bert": (
        "encoder",
        "a text encoder (NomicBertForMaskedLM): its blocks are not built yet",
    ),
    "nystromformer": (
        "encoder",
        "a text encoder (NystromformerForMaskedLM): its blocks are not built yet",
    ),
    "omniasr_ctc": (
        "audio",
        "a speech encoder (OmniASRForCTC): its blocks are not built yet",
    ),
    "parakeet_ctc": (
        "audio",
        "a speech encoder (ParakeetForCTC): its blocks are not built yet",
    ),
    "perceiver": (
        "encoder",
        "a text encoder (PerceiverForMaskedLM, PerceiverForImageClassificationLearned): "
        "its blocks are not built yet",
    ),
    "pp_lcnet": (
        "vision",
        "PP-LCNet's blocks are not built: depthwise-separable Convs with Hardswish and "
        "squeeze-and-excitation, channels from scale via make_divisible, and its Conv + "
        "dropout head",
    ),
    "pvt": (
        "vision",
        "PVT's blocks are not built: spatial-reduction attention (keys and values from a "
        "strided Conv + LayerNorm of the map), per-stage position tables resized to the "
        "map, and a cls token only in the last stage",
    ),
    "pvt_v2": (
        "vision",
        "PVT v2's blocks are not built: overlapping patch embeddings (strided Conv + "
        "LayerNorm), spatial-reduction attention (strided Conv, or adaptive average "
        "pooling in the linear variant), and a depthwise Conv inside the MLP",
    ),
    "reformer": (
        "encoder",
        "a text encoder (ReformerForMaskedLM): its blocks are not built yet",
    ),
    "rembert": (
        "encoder",
        "a text encoder (RemBertForMaskedLM): its blocks are not built yet",
    ),
    "roberta": (
        "encoder",
        "a text encoder (RobertaForMaskedLM): its blocks are not built yet",
    ),
    "roberta-prelayernorm": (
        "encoder",
        "a text encoder (RobertaPreLayerNormForMaskedLM): its blocks are not built yet",
    ),
    "roc_bert": (
        "encoder",
        "a text encoder (RoCBertForMaskedLM): its blocks are not built yet",
    ),
    "roformer": (
        "encoder",
        "a text encoder (RoFormerForMaskedLM): its blocks are not built yet",
    ),
    "segformer": (
        "vision",
        "SegFormer's Mix Transformer is not built: overlapping patch embeddings per "
        "stage, sequence-reduction attention (strided Conv + LayerNorm on keys and "
        "values), Mix-FFN with a depthwise Conv, and a LayerNorm per stage",
    ),
    "sew": (
        "audio",
        "a speech encoder (SEWForCTC, SEWForSequenceClassification): its blocks are not built yet",
    ),
    "sew-d": (
        "audio",
        "a speech encoder (SEWDForCTC, SEWDForSequenceClassification): its blocks are not"
        " built yet",
    ),
    "shieldgemma2": (
        "vlm",
        "ShieldGemma2ForImageClassification runs the whole Gemma 3 vision-language model "
        "(SigLIP tower, projector, decoder over a policy prompt) and reads the yes/no "
        "token logits; that VLM is not converted",
    ),
    "siglip": (
        "multimodal",
        "a two-tower text-image model (SiglipModel, SiglipForImageClassification): its "
        "blocks are not built yet",
    ),
    "siglip2": (
        "multimodal",
        "a two-tower text-image model (Siglip2Model, Siglip2ForImageClassification): its "
        "blocks are not built yet",
    ),
    "squeezebert": (
        "encoder",
        "a text encoder (SqueezeBertForMaskedLM): its blocks are not built yet",
    ),
    "swiftformer": (
        "vision",
        "SwiftFormer's blocks are not built: efficient additive attention (normalized "
        "queries weighted by a learned vector into one global query, multiplied into the "
        "keys), Conv encoders with BatchNorm and layer scales, and the distilled two-head "
        "classifier",
    ),
    "tapas": (
        "encoder",
        "a text encoder (TapasForMaskedLM): its blocks are not built yet",
    ),
    "textnet": (
        "vision",
        "TextNet's RepConv layers are not built: parallel k x k, k x 1 and 1 x k Convs "
        "each with BatchNorm (eps from batch_norm_eps), summed, in its stage layout",
    ),
    "timm_wrapper": (
        "vision",
        "TimmWrapper runs whichever timm architecture its config names (`architecture`), "
        "with timm's modules and tensor names; each would need its own conversion",
    ),
    "tipsv2": (
        "multimodal",
        "a two-tower text-image model (Tipsv2Model): its blocks are not built yet",
    ),
    "ultrabert": (
        "encoder",
        "a text encoder (UltrabertForMaskedLM): its blocks are not built yet",
    ),
    "ultravbert": (
        "encoder",
        "a text encoder (UltraVBertForMaskedLM): its blocks are not built yet",
    ),
    "unispeech": (
        "audio",
        "a speech encoder (UniSpeechForCTC, UniSpeechForSequenceClassification): its "
        "blocks are not built yet",
    ),
    "unispeech-sat": (
        "audio",
        "a speech encoder (UniSpeechSatForCTC, UniSpeechSatForSequenceClassification): "
        "its blocks are not built yet",
    ),
    "videoprism": (
        "multimodal",
        "a two-tower text-image model (VideoPrismClipModel): its blocks are not built yet",
    ),
    "wav2vec2": (
        "audio",
        "a speech encoder (Wav2Vec2ForCTC, Wav2Vec2ForSequenceClassification): its blocks"
        " are not built yet",
    ),
    "wav2vec2-bert": (
        "audio",
        "a speech encoder (Wav2Vec2BertForCTC, Wav2Vec2BertForSequenceClassification): "
        "its blocks are not built yet",
    ),
    "wav2vec2-conformer": (
        "audio",
        "a speech encoder (Wav2Vec2ConformerForCTC, "
        "Wav2Vec2ConformerForSequenceClassification): its blocks are not built yet",
    ),
    "wavlm": (
        "audio",
        "a speech encoder (WavLMForCTC, WavLMForSequenceClassification): its blocks are "
        "not built yet",
    ),
    "whisper": (
        "speech",
        "WhisperForAudioClassification is the encoder of an encoder-decoder speech model: issue 13",
    ),
    "xlm": (
        "encoder",
        "a text encoder (XLMWithLMHeadModel): its blocks are not built yet",
    ),
    "xlm-roberta": (
        "encoder",
        "a text encoder (XLMRobertaForMaskedLM): its blocks are not built yet",
    ),
    "xlm-roberta-xl": (
        "encoder",
        "a text encoder (XLMRobertaXLForMaskedLM): its blocks are not built yet",
    ),
    "xmod": (
        "encoder",
        "a text encoder (XmodForMaskedLM): its blocks are not built yet",
    ),
    "yoso": (
        "encoder",
        "a text encoder (YosoForMaskedLM): its blocks are not built yet",
    ),
}
