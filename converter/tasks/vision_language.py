"""image-text-to-text: a vision-language model as onnxruntime-genai's three components, with
the names its genai_config.json declares.

  vision.onnx     pixel_values (float32) -> image_features [num_image_tokens, hidden]
                  by the model's `image_layout`:
                    "pixels"   pixel_values [num_images, channels, height, width]
                    "patches"  pixel_values [num_patches, patch_width] (the processor's
                               flattened patches), image_grid_thw (int64) [num_images, 3]
                    "merged_patches"  the same and image_merge_sizes (int64) [num_images]
                               (each image's merge block side: VideoLLaMA 3)
                    "tiles"    pixel_values [batch_size, num_tiles, channels, height, width]
                               (Idefics 3's image splits; all-zero tiles pad the list),
                               pixel_attention_mask (int64) [batch_size, num_tiles, height,
                               width]
                    "padded_images"  the same of any height and width (Idefics 2's images,
                               padded bottom and right to the largest of the batch)
                    "sized"    pixel_values [num_images, channels, height, width] (padded to
                               the largest), image_sizes (int64) [num_images, 2]: each
                               image's height and width in pixels (Pixtral)
                    "crops"    pixel_values [num_images, num_crops, channels, height, width]
                               (LLaVA-NeXT's crops, padded to the most of any image),
                               image_sizes (int64) [num_images, 2] (each image's height, width)
                    "prompt_crops"  the same and batch_num_images (int64) [batch] (each
                               prompt's image count: LLaVA-OneVision tiles a prompt's only image)
  embedding.onnx  input_ids (int64) [batch, sequence_length], image_features
                  [num_image_tokens, hidden] -> inputs_embeds [batch, sequence_length, hidden]
                  (every step after the prompt feeds no image tokens and 0 features)
  model.onnx      the text-generation decoder fed inputs_embeds (position_ids [3, batch,
                  sequence_length] for multimodal rope), its cache as for text generation

`hidden` is the model's `features_width`: the text model's, or wider where a family packs
more beside it (Qwen3-VL's DeepStack features, which the decoder unpacks).
image_features and inputs_embeds are in the graph's float type; pixel_values are float32
whatever it is, cast at the edge.
"""

from __future__ import annotations

from dataclasses import dataclass

import onnx_ir as ir
from onnxscript import GraphBuilder

from converter.tasks.base import Component, as_model, new_graph, set_output
from converter.tasks.text_generation import BATCH, TextGenerationTask
from converter.tasks.zero_shot import ImageInputs

VLM_TASK = "image-text-to-text"
IMAGE_TOKENS = "num_image_tokens"
FLOAT = ir.DataType.FLOAT


@dataclass
class PatchInputs(ImageInputs):
    """Qwen-VL's flattened patches and each image's (temporal, height, width) patch grid."""

    image_grid_thw: ir.Value | None = None


@dataclass
class MergedPatchInputs(PatchInputs):
    """Flattened patches whose merge block side is each image's own."""

    merge_sizes: ir.Value | None = None


@dataclass
class SizedImageInputs(ImageInputs):
    """Images of different sizes padded into one batch, and each one's (height, width)."""

    image_sizes: ir.Value | None = None


@dataclass
class CropInputs(SizedImageInputs):
    """LLaVA-NeXT's crops of each image and the image's (height, width)."""

    batch_num_images: ir.Value | None = None  # "prompt_crops" only


@dataclass(frozen=True)
class VisionLanguageTask:
    name: str = VLM_TASK
    last_logits_only: bool = False  # the decoder's (the prune-prefill-prefix feature)

    def components(self, model, cfg, dtype: ir.DataType) -> list[Component]:
        vision, embedding = model.part("vision"), model.part("embedding")
        decoder = model.part("decoder").language_model
        text = TextGenerationTask(
            inputs_embeds=True,
            mrope=model.mrope,
            mrope_rows=model.mrope_rows,
            embeds_width=model.features_width,
            ids_beside_embeds=model.decoder_reads_ids,
            last_logits_only=self.last_logits_only,
        )
        return [
            self._vision(vision, cfg, dtype),
            self._embedding(embedding, cfg, dtype),
            *text.components(decoder, cfg.text, dtype),
        ]

    def _vision(self, module, cfg, dtype: ir.DataType) -> Component:
        graph = new_graph()
        builder = GraphBuilder(graph)
        image, names = image_inputs(builder, module.image_layout, cfg.vision, dtype)
        features = module.image_features(builder.op, image)
        width = module.features_width
        set_output(builder, features, "image_features", [IMAGE_TOKENS, width], dtype)
        io = {"inputs": names, "outputs": {"image_features": "image_features"}}
        return Component("vision", "vision.onnx", as_model(graph), module, io)

    def _embedding(self, module, cfg, dtype: ir.DataType) -> Component:
        graph = new_graph()
        builder = GraphBuilder(graph)
        seq = [BATCH, "sequence_length"]
        input_ids = builder.input("input_ids", ir.DataType.INT64, seq)
        hidden = module.features_width
        features = builder.input("image_features", dtype, [IMAGE_TOKENS, hidden])
        embeds = module.embed(builder.op, input_ids, features)
        set_output(builder, embeds, "inputs_embeds", [*seq, hidden], dtype)
        io = {
            "inputs": {"input_ids": "input_ids", "image_features": "image_features"},
            "outputs": {"inputs_embeds": "inputs_embeds"},
        }
        return Component("embedding", "embedding.onnx", as_model(graph), module, io)


def image_inputs(builder, layout: str, vision, dtype: ir.DataType):
    """The vision graph's inputs for `layout`, and their names as genai_config declares them."""
    op = builder.op
    if layout == "pixels":
        side = vision.image_size
        shape = ["num_images", vision.num_channels, side, side]
        pixels = builder.input("pixel_values", FLOAT, shape)
        return ImageInputs(_cast(op, pixels, dtype)), {"pixel_values": "pixel_values"}
    if layout == "patches":
        pixels = builder.input("pixel_values", FLOAT, ["num_patches", vision.patch_width])
        grid = builder.input("image_grid_thw", ir.DataType.INT64, ["num_images", 3])
        names = {"pixel_values": "pixel_values", "image_grid_thw": "image_grid_thw"}
        return PatchInputs(_cast(op, pixels, dtype), image_grid_thw=grid), names
    if layout == "merged_patches":
        image, names = image_inputs(builder, "patches", vision, dtype)
        merge = builder.input("image_merge_sizes", ir.DataType.INT64, ["num_images"])
        names["image_merge_sizes"] = "image_merge_sizes"
        merged = MergedPatchInputs(
            image.pixel_values, image_grid_thw=image.image_grid_thw, merge_sizes=merge
        )
        return merged, names
    if layout in ("tiles", "padded_images"):
        tiles = ["batch_size", "num_tiles"]
        sides = [vision.image_size] * 2 if layout == "tiles" else ["height", "width"]
        pixels = builder.input("pixel_values", FLOAT, [*tiles, vision.num_channels, *sides])
        mask = builder.input("pixel_attention_mask", ir.DataType.INT64, [*tiles, *sides])
        names = {"pixel_values": "pixel_values", "pixel_attention_mask": "pixel_attention_mask"}
        return ImageInputs(_cast(op, pixels, dtype), pixel_attention_mask=mask), names
    if layout == "sized":
        shape = ["num_images", vision.num_channels, "height", "width"]
        pixels = builder.input("pixel_values", FLOAT, shape)
        sizes = builder.input("image_sizes", ir.DataType.INT64, ["num_images", 2])
        names = {"pixel_values": "pixel_values", "image_sizes": "image_sizes"}
        return SizedImageInputs(_cast(op, pixels, dtype), image_sizes=sizes), names
    if layout in ("crops", "prompt_crops"):
        side = vision.image_size
        shape = ["num_images", "num_crops", vision.num_channels, side, side]
        pixels = builder.input("pixel_values", FLOAT, shape)
        sizes = builder.input("image_sizes", ir.DataType.INT64, ["num_images", 2])
        names = {"pixel_values": "pixel_values", "image_sizes": "image_sizes"}
        image = CropInputs(_cast(op, pixels, dtype), image_sizes=sizes)
        if layout == "prompt_crops":
            image.batch_num_images = builder.input("batch_num_images", ir.DataType.INT64, [BATCH])
            names["batch_num_images"] = "batch_num_images"
        return image, names
    raise ValueError(f"no image layout {layout!r}")


def _cast(op, value: ir.Value, dtype: ir.DataType) -> ir.Value:
    return value if dtype == FLOAT else op.Cast(value, to=dtype)
