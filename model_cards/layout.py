"""Where each file of a converted variant lies on the Hub.

Text generation and vision-language models: the whole package in its variant folder
`onnx/<ep>-<dtype>/` (onnxruntime-genai loads a folder). Every other task uses the layout
Transformers.js, Optimum and sentence-transformers read: the portable `default` variants'
graphs directly under `onnx/` (`onnx/model.onnx`, `onnx/model_fp16.onnx`,
`onnx/model_quantized.onnx`, `onnx/model_q4.onnx`, CLIP's `onnx/text_model.onnx` ...), other
EPs' graphs in their variant folder, each variant's manifest at `onnx/<ep>-<dtype>/mobius.json`
(so provenance checks read every export alike), and the config, tokenizer and processor files
at the repo root, where a pull request finds the source's own: a PR adds `onnx/` and nothing
else.
"""

from __future__ import annotations

from pathlib import PurePosixPath

GENERATION = "text-generation"
# tasks whose package a runtime loads as one folder (onnxruntime-genai's layout)
FOLDER_TASKS = (GENERATION, "image-text-to-text")
FLAT_EP = "default"  # the EP whose graphs take the libraries' plain names


def hub_path(manifest: dict, relative: str, mode: str) -> str | None:
    """The Hub path of package file `relative` (None: not published in this `mode`)."""
    folder = f"onnx/{manifest['ep']}-{manifest['dtype']}"
    if manifest.get("task", GENERATION) in FOLDER_TASKS or relative == "mobius.json":
        return f"{folder}/{relative}"
    path = PurePosixPath(relative)
    if path.parts[0] == "onnx":
        inside = "/".join(path.parts[1:])
        return f"onnx/{inside}" if manifest["ep"] == FLAT_EP else f"{folder}/{inside}"
    return None if mode == "pr" else relative


def graph_paths(manifest: dict) -> list[str]:
    """The Hub paths of the variant's graphs, as a user loads them."""
    return [hub_path(manifest, c["filename"], "repo") for c in manifest.get("components", [])]
