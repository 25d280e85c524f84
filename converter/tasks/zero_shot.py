"""zero-shot-image-classification: a contrastive text-image model (CLIP, SigLIP, ...) as three
graphs, so both runtimes that use such models find theirs:

  onnx/model.onnx         input_ids, attention_mask [text_batch_size, sequence_length],
                          pixel_values -> logits_per_image [image_batch_size, text_batch_size],
                          logits_per_text, text_embeds, image_embeds (L2-normalized)
                          What Transformers.js' zero-shot-image-classification pipeline and its
                          CLIPModel / SiglipModel load, and Optimum's export of the task.
  onnx/text_model.onnx    input_ids, attention_mask -> the text features (text_embeds: projected,
                          not normalized, as CLIPTextModelWithProjection; SigLIP: pooler_output,
                          as SiglipTextModel), last_hidden_state
  onnx/vision_model.onnx  pixel_values -> image_embeds (SigLIP: pooler_output), last_hidden_state
                          What Transformers.js' CLIPTextModelWithProjection,
                          CLIPVisionModelWithProjection, SiglipTextModel and SiglipVisionModel
                          (and its image-feature-extraction pipeline) load.

pixel_values are float32 [image_batch_size, channels, image_size, image_size] (CLIPSeg: height,
width, its positions resized to them) and every output float32, whatever the graph's dtype
(what image processors give and what Transformers.js' pipelines compute on: under Node, a
float16 tensor's data are its raw 16-bit words); the graph
casts at its edges, as the fp16 exports Transformers.js ships do (keep_io_types). SigLIP 2's
variable patch grids (NaFlex) read the processor's patches instead: pixel_values
[image_batch_size, num_patches, channels * patch_size²], pixel_attention_mask (int32)
[image_batch_size, num_patches] and spatial_shapes (int64) [image_batch_size, 2] (rows and
columns of patches). Every family's text graphs read attention_mask, SigLIP's too: transformers
masks its text when given one (its pipeline pads to max_length and passes it), where Optimum's
SigLIP export reads input_ids alone.
The model returns {output name: (value, symbolic dims)} for each part; the task names the
graph inputs.
"""

from __future__ import annotations

from dataclasses import dataclass

import onnx_ir as ir
from onnxscript import GraphBuilder

from converter.tasks.base import Component, as_model, new_graph, set_float32_output
from converter.tasks.encoding import SEQUENCE, TextInputs

ZERO_SHOT = "zero-shot-image-classification"
FLOAT = ir.DataType.FLOAT
TEXT_BATCH, IMAGE_BATCH, PATCHES = "text_batch_size", "image_batch_size", "num_patches"
# each part of the model: its role and file
PARTS = {
    "both": ("text-image", "onnx/model.onnx"),
    "text": ("text", "onnx/text_model.onnx"),
    "vision": ("vision", "onnx/vision_model.onnx"),
}


@dataclass
class ImageInputs:
    pixel_values: ir.Value  # already in the graph's float type
    pixel_attention_mask: ir.Value | None = None  # NaFlex only
    spatial_shapes: ir.Value | None = None  # NaFlex only


@dataclass(frozen=True)
class ZeroShotImageTask:
    name: str = ZERO_SHOT

    def components(self, model, cfg, dtype: ir.DataType) -> list[Component]:
        return [self._component(model.part(part), cfg, dtype, part) for part in PARTS]

    def _component(self, module, cfg, dtype: ir.DataType, part: str) -> Component:
        graph = new_graph()
        builder = GraphBuilder(graph)
        text = image = None
        if part != "vision":
            i64, seq = ir.DataType.INT64, [TEXT_BATCH, SEQUENCE]
            input_ids = builder.input("input_ids", i64, seq)
            text = TextInputs(input_ids, builder.input("attention_mask", i64, seq), None)
        if part != "text":
            image = image_inputs(builder, cfg.vision, dtype, module.image_dims())
        outputs = module(builder.op, text, image)
        for name, (value, dims) in outputs.items():
            set_float32_output(builder, value, name, dims, dtype)
        role, filename = PARTS[part]
        return Component(role, filename, as_model(graph), module, {})


def image_inputs(builder, vision, dtype: ir.DataType, sides: tuple) -> ImageInputs:
    """The image inputs of a vision tower's config, pixel values cast to `dtype`; `sides`: the
    images' height and width (names where the tower takes any)."""
    f32, op = FLOAT, builder.op
    if vision.num_patches is None:
        dims = [IMAGE_BATCH, vision.num_channels, *sides]
        pixels = builder.input("pixel_values", f32, dims)
        return ImageInputs(_cast(op, pixels, dtype))
    width = vision.num_channels * vision.patch_size**2
    pixels = builder.input("pixel_values", f32, [IMAGE_BATCH, PATCHES, width])
    mask = builder.input("pixel_attention_mask", ir.DataType.INT32, [IMAGE_BATCH, PATCHES])
    shapes = builder.input("spatial_shapes", ir.DataType.INT64, [IMAGE_BATCH, 2])
    return ImageInputs(_cast(op, pixels, dtype), mask, shapes)


def _cast(op, value: ir.Value, dtype: ir.DataType) -> ir.Value:
    """A float32 input in the graph's float type."""
    return value if dtype == FLOAT else op.Cast(value, to=dtype)
