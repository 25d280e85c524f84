"""The layout Transformers.js reads: portable text-generation variants as `onnx/model*.onnx`.

Transformers.js (and Optimum) load `onnx/model{suffix}.onnx` with `config.json` and the
tokenizer at the model's root; the suffix names the dtype (`""` f32, `_fp16`, `_quantized`
int8, `_q4`). Only the `default` EP's graphs (standard ONNX ops) go there. A graph whose
weights fit in one protobuf file is written whole, as Transformers.js expects below 2 GB; a
larger one keeps its weights in `model{suffix}.onnx_data`, which Transformers.js fetches only
when `config.json` declares it under `transformers.js_config.use_external_data_format` (not
`.onnx.data`: it derives the name).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import onnx_ir as ir

from converter.package.package import MANIFEST, write_graph
from converter.repo_files import CONFIG, RUNTIME_FILES
from converter.tasks.base import DTYPE_SUFFIXES

EP = "default"
TASK = "text-generation"
# the dtypes Transformers.js loads, by its names; their files take DTYPE_SUFFIXES
JS_DTYPES = {"f32": "fp32", "f16": "fp16", "int8": "q8", "int4": "q4"}
JS_CONFIG = "transformers.js_config"


def model_file(manifest: dict[str, Any]) -> str | None:
    """`onnx/model{suffix}.onnx` for a package whose manifest Transformers.js can run, else
    None."""
    if manifest.get("task") != TASK or manifest.get("ep") != EP:
        return None
    dtype = manifest.get("dtype", "")
    return f"onnx/model{DTYPE_SUFFIXES[dtype]}.onnx" if dtype in JS_DTYPES else None


def write_layout(
    packages: Iterable[str | Path], root: str | Path, *, root_files: bool
) -> list[str]:
    """Write the Transformers.js files of `packages` (saved package folders; the others are
    passed over) under `root`, and with `root_files` also `config.json` and the tokenizer and
    generation files at `root`. Returns the written paths relative to `root`, sorted; none
    when no package fits. Transformers.js files of an earlier call are removed first."""
    root = Path(root)
    stale = [f"model{DTYPE_SUFFIXES[d]}.onnx{end}" for d in JS_DTYPES for end in ("", "_data")]
    for name in stale:  # an earlier call's files: only this call's may remain
        (root / "onnx" / name).unlink(missing_ok=True)
    written: list[str] = []
    external: dict[str, int] = {}
    dtypes: list[str] = []
    source: Path | None = None
    for package in map(Path, packages):
        manifest = json.loads((package / MANIFEST).read_text())
        name = model_file(manifest)
        if name is None:
            continue
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        graph = package / manifest["components"][0]["filename"]
        write_graph(ir.load(graph), root / name)
        written.append(name)
        if (root / f"{name}_data").is_file():  # over protobuf's cap (package.INLINE_LIMIT)
            external[Path(name).name] = 1
            written.append(f"{name}_data")
        dtypes.append(manifest["dtype"])
        source = source or package
    if source is None or not root_files:
        return sorted(written)
    for file in (CONFIG, *RUNTIME_FILES):
        if (source / file).is_file():
            shutil.copyfile(source / file, root / file)
            written.append(file)
    _declare(root / CONFIG, external, dtypes)
    return sorted(written)


def _declare(config_path: Path, external: dict[str, int], dtypes: list[str]) -> None:
    """Tell Transformers.js which files keep external weights, and which dtype to load when
    there is no f32 file (its default)."""
    if not config_path.is_file():
        return
    settings: dict[str, Any] = {}
    if external:
        settings["use_external_data_format"] = external
    if "f32" not in dtypes:
        settings["dtype"] = JS_DTYPES[min(dtypes, key=list(JS_DTYPES).index)]
    if not settings:
        return
    config = json.loads(config_path.read_text())
    config[JS_CONFIG] = {**config.get(JS_CONFIG, {}), **settings}
    config_path.write_text(json.dumps(config, indent=2) + "\n")
