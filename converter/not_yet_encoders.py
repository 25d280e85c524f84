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
    "beit": (
        "vision",
        "a vision model (BeitForImageClassification): its blocks are not built yet",
    ),
    "big_bird": (
        "encoder",
        "a text encoder (BigBirdForMaskedLM): its blocks are not built yet",
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
    "convnext": (
        "vision",
        "a vision model (ConvNextForImageClassification): its blocks are not built yet",
    ),
    "convnextv2": (
        "vision",
        "a vision model (ConvNextV2ForImageClassification): its blocks are not built yet",
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
    "data2vec-vision": (
        "vision",
        "a vision model (Data2VecVisionForImageClassification): its blocks are not built yet",
    ),
    "deberta": (
        "encoder",
        "a text encoder (DebertaForMaskedLM): its blocks are not built yet",
    ),
    "deberta-v2": (
        "encoder",
        "a text encoder (DebertaV2ForMaskedLM): its blocks are not built yet",
    ),
    "deit": (
        "vision",
        "a vision model (DeiTForImageClassification): its blocks are not built yet",
    ),
    "dinat": (
        "vision",
        "a vision model (DinatForImageClassification): its blocks are not built yet",
    ),
    "dinov2": (
        "vision",
        "a vision model (Dinov2ForImageClassification): its blocks are not built yet",
    ),
    "dinov2_with_registers": (
        "vision",
        "a vision model (Dinov2WithRegistersForImageClassification): its blocks are not built yet",
    ),
    "distilbert": (
        "encoder",
        "a text encoder (DistilBertForMaskedLM): its blocks are not built yet",
    ),
    "donut-swin": (
        "vision",
        "a vision model (DonutSwinForImageClassification): its blocks are not built yet",
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
    "hiera": (
        "vision",
        "a vision model (HieraForImageClassification): its blocks are not built yet",
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
        "a vision model (ImageGPTForImageClassification): its blocks are not built yet",
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
    "reformer": (
        "encoder",
        "a text encoder (ReformerForMaskedLM): its blocks are not built yet",
    ),
    "regnet": (
        "vision",
        "a vision model (RegNetForImageClassification): its blocks are not built yet",
    ),
    "rembert": (
        "encoder",
        "a text encoder (RemBertForMaskedLM): its blocks are not built yet",
    ),
    "resnet": (
        "vision",
        "a vision model (ResNetForImageClassification): its blocks are not built yet",
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
        "vision",
        "a vision model (ShieldGemma2ForImageClassification): its blocks are not built yet",
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
    "swin": (
        "vision",
        "a vision model (SwinForImageClassification): its blocks are not built yet",
    ),
    "swinv2": (
        "vision",
        "a vision model (Swinv2ForImageClassification): its blocks are not built yet",
    ),
    "tapas": (
        "encoder",
        "a text encoder (TapasForMaskedLM): its blocks are not built yet",
    ),
    "timm_wrapper": (
        "vision",
        "a vision model (TimmWrapperForImageClassification): its blocks are not built yet",
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
