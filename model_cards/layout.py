"""Where each file of a converted variant lies on the Hub.

Text generation and vision-language models: the whole package in its variant folder
`onnx/<ep>-<dtype>/` (onnxruntime-genai loads a folder). Every other task uses the layout
Transformers.js, Optimum and sentence-transformers read: the portable `default` variants'
graphs directly under `onnx/` (`onnx/model.onnx`, `onnx/model_fp16.onnx`,
`onnx/model_quantized.onnx`, `onnx/model_q4.onnx`, CLIP's `onnx/text_model.onnx` ...), other
EPs' graphs in their variant folder, each variant's manifest at `onnx/<ep>-<dtype>/mobius.json`
(so provenance checks read every export alike), and the config, tokenizer and processor files
at the repo root, where a pull request finds the source's own: a PR adds `onnx/` and nothing
else. A speech package that also holds onnxruntime-genai's graphs (Whisper's encoder.onnx /
decoder.onnx, its genai_config.json) keeps those, and a copy of the config, tokenizer and
processor files genai reads beside them, in its variant folder.
"""

from __future__ import annotations

from pathlib import PurePosixPath

from converter.repo_files import CONFIG, RUNTIME_FILES

GENERATION = "text-generation"
# tasks whose package a runtime loads as one folder (onnxruntime-genai's layout)
FOLDER_TASKS = (GENERATION, "image-text-to-text")
FLAT_EP = "default"  # the EP whose graphs take the libraries' plain names
GENAI_ROLES = ("genai-encoder", "genai-decoder")  # converter/tasks/genai_speech.py


def hub_paths(manifest: dict, relative: str, mode: str) -> list[str]:
    """The Hub paths of package file `relative` (none: not published in this `mode`)."""
    folder = f"onnx/{manifest['ep']}-{manifest['dtype']}"
    if manifest.get("task", GENERATION) in FOLDER_TASKS or relative == "mobius.json":
        return [f"{folder}/{relative}"]
    path = PurePosixPath(relative)
    if path.parts[0] == "onnx":
        inside = "/".join(path.parts[1:])
        return [f"onnx/{inside}" if manifest["ep"] == FLAT_EP else f"{folder}/{inside}"]
    root = [] if mode == "pr" else [relative]
    if not any(c["role"] in GENAI_ROLES for c in manifest.get("components", [])):
        return root
    return [f"{folder}/{relative}", *(root if relative in (CONFIG, *RUNTIME_FILES) else [])]


def graph_paths(manifest: dict) -> list[str]:
    """The Hub paths of the variant's graphs, as a user loads them."""
    return [hub_paths(manifest, c["filename"], "repo")[0] for c in manifest.get("components", [])]
