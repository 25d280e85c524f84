"""A vision-language model as the three graphs onnxruntime-genai runs (the contract every VLM
family keeps):

  vision     the image inputs of the family's `image_layout` -> image_features
             [num_image_tokens, text hidden]: every image's tokens, in order, already projected
             into the text model's space
  embedding  input_ids, image_features -> inputs_embeds: the text model's token rows with the
             rows of the image token (`cfg.image_token_id`) replaced, in order, by the features
  decoder    the text family's own decoder (its model class, its config) fed inputs_embeds

`part(which)` builds a fresh module for one graph (a parameter belongs to one graph), bound by
the same checkpoint names. Module paths are one canonical layout: the decoder under
`language_model` (the text family's names below it: `language_model.model.layers.0...`,
`language_model.lm_head`), the embedding table at `language_model.model.embed_tokens`, the
vision parts under the family's names; the family's `renames` map the other layouts a
checkpoint may have onto it. A family sets `make_vision` (its tower and projector as
attributes) and `image_features`; `mrope` when its decoder reads [3, batch, seq] positions;
`make_decoder` and `decoder_reads_ids` when its decoder attends otherwise than its text
family's (Gemma 3's image tokens among themselves, found from input_ids read beside
inputs_embeds); `unused_tensors` lists the checkpoint tensors the graphs never read (tower
layers past the feature layer). A text model whose embedding scales the token rows (Gemma's)
has them scaled in the embedding graph, the image features merged unscaled, and a decoder
that does not scale inputs_embeds again.
"""

from __future__ import annotations

from dataclasses import replace
from typing import ClassVar

import onnx_ir as ir
from onnxscript import nn

from converter.components import Embedding
from converter.config import ArchitectureConfig
from converter.config.vision_language import VisionLanguageConfig
from converter.errors import ConfigError
from converter.tasks.vision_language import VLM_TASK

PARTS = ("vision", "embedding", "decoder")


class Holder(nn.Module):
    """A module whose only job is a name in the path (`language_model.model.`): calling it
    calls its one child (parameter names follow the modules called)."""

    def __init__(self, name: str, child: nn.Module):
        super().__init__()
        setattr(self, name, child)
        self.child = name

    def forward(self, op, *args):
        return getattr(self, self.child)(op, *args)


class VisionLanguageModel(nn.Module):
    heads = (VLM_TASK,)
    # LlavaForConditionalGeneration & co. are the image-text-to-text models
    head_tasks: ClassVar[dict[str, str]] = {
        "ForConditionalGeneration": VLM_TASK,
        "Model": VLM_TASK,
    }
    image_layout = "pixels"  # which image inputs the vision graph reads (tasks/vision_language)
    mrope = False  # the decoder reads [3, batch, sequence] positions
    mrope_rows = 3  # their rows (HunYuanVL's XD-RoPE reads one per rope section)
    # how a runtime computes a prompt's multimodal positions, recorded in mobius.json: None,
    # Qwen-VL's (converter/validate/mrope.py); "xdrope", HunYuanVL's
    position_rule: str | None = None
    decoder_reads_ids = False  # the decoder reads input_ids beside inputs_embeds (its mask)
    # the token_type_ids transformers' processor gives the model, whose mask reads them (what
    # the graphs reproduce, so validation gives them too): "image", 1 on image tokens (Gemma
    # 3); "prefix", 0 on the prompt and 1 after it (PaliGemma); "": none
    token_types = ""
    image_prompt: str | None = None  # what a prompt holds for an image (the card's snippet)
    # the text model scales inputs_embeds after the image features are merged in, as the
    # decoder fed inputs_embeds does (HyperCLOVA X Vision): the embedding graph does not scale
    scales_merged_embeds = False

    def __init__(
        self, cfg: VisionLanguageConfig, dtype, ep, task: str, tensors, part: str = "decoder"
    ):
        super().__init__()
        if task not in self.heads:
            raise ConfigError(f"{cfg.model_type} has no {task} head here")
        if part not in PARTS:
            raise ValueError(f"no part {part!r}: one of {', '.join(PARTS)}")
        from converter.registry import family_for

        scale = cfg.text.embedding_multiplier
        # Gemma scales the token rows before the image features replace some of them
        rows_scaled = bool(family_for(cfg.text_type).rules.traits.get("embed_scale_sqrt"))
        if scale != 1.0 and not rows_scaled and not self.scales_merged_embeds:
            raise ConfigError(
                f"text_config: the {cfg.text_type} text model scales its inputs_embeds (image "
                "features included) inside the decoder: not supported yet"
            )
        self.args, self.cfg, self.dtype = (cfg, dtype, ep, task, tensors), cfg, dtype
        if part == "vision":
            self.make_vision(cfg, dtype, ep)
        elif part == "embedding":
            # Gemma's scaled word embedding: the token rows are scaled (in their dtype), the
            # image features merged after them are not
            row_scale = scale if rows_scaled else 1.0
            table = Embedding(cfg.text.vocab_size, cfg.text.hidden_size, dtype, row_scale)
            self.language_model = Holder("model", Holder("embed_tokens", table))
        else:
            # rows scaled by the embedding graph must not be scaled again; a text model that
            # scales the merged inputs_embeds keeps its multiplier
            text = replace(cfg.text, embedding_multiplier=1.0) if rows_scaled else cfg.text
            self.language_model = self.make_decoder(text, dtype, ep)
            self.language_model.gathers_tokens = False  # the embedding graph does

    def part(self, which: str) -> VisionLanguageModel:
        """A fresh module for one graph: "vision", "embedding" or "decoder"."""
        return type(self)(*self.args, part=which)

    def make_vision(self, cfg: VisionLanguageConfig, dtype: ir.DataType, ep) -> None:
        raise NotImplementedError

    def make_decoder(self, text: ArchitectureConfig, dtype: ir.DataType, ep) -> nn.Module:
        """The text family's own decoder (a family whose attention differs subclasses it)."""
        from converter.registry import family_for

        return family_for(self.cfg.text_type).model_class(text, dtype, ep)

    @property
    def features_width(self) -> int:
        """The width of image_features and inputs_embeds: the text model's, unless a family
        packs more beside it (Qwen3-VL's DeepStack features)."""
        return self.cfg.text.hidden_size

    def image_features(self, op, image) -> ir.Value:
        """[num_image_tokens, text hidden] from the task's image inputs."""
        raise NotImplementedError

    @classmethod
    def genai_fields(cls, cfg: VisionLanguageConfig, section: str) -> dict:
        """What genai_config.json's `section` ("model", "vision", "embedding") says of the
        family besides file and I/O names."""
        return {"image_token_id": cfg.image_token_id} if section == "model" else {}

    def unused_tensors(self) -> tuple[str, ...]:
        """Checkpoint tensors (regexes, in the canonical names) no graph reads: a tied head's
        copy of the table; a family adds its own (tower layers past the feature layer)."""
        return (r"language_model\.lm_head\.weight",) if self.cfg.tie_word_embeddings else ()

    def embed(self, op, input_ids: ir.Value, image_features: ir.Value) -> ir.Value:
        embeds = self.language_model(op, input_ids)
        return merge_image_features(op, embeds, input_ids, image_features, self.cfg.image_token_id)


def merge_image_features(op, embeds, input_ids, features, image_token_id: int) -> ir.Value:
    """`embeds` [batch, sequence, hidden] with the rows where `input_ids` is the image token
    replaced by the rows of `features` [num_image_tokens, hidden], in order. A count that
    differs from the number of image tokens fails at run time (ScatterND), as transformers
    refuses it; no image tokens and no features (every step after the prompt) pass through."""
    hidden = op.Shape(embeds, start=2, end=3)
    flat = op.Reshape(embeds, op.Concat([-1], hidden, axis=0))
    where = op.NonZero(op.Equal(op.Reshape(input_ids, [-1]), image_token_id))  # [1, count]
    rows = op.Reshape(features, op.Concat([-1], hidden, axis=0))
    merged = op.ScatterND(flat, op.Transpose(where, perm=[1, 0]), rows)
    return op.Reshape(merged, op.Shape(embeds))
