"""ModelPackage: a task's components with their bound weights, and how they are written.

A saved package holds each component's graph (`model.onnx` for a decoder) with its external
data beside it (`<file>.data`), `genai_config.json` for onnxruntime-genai (text generation, and
speech models in its whisper layout with `audio_processor_config.json`), the source's
tokenizer, processor and generation files, and `mobius.json` recording where it came from and
how it was built.
"""

from __future__ import annotations

import dataclasses
import datetime
import importlib.metadata
import json
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import onnx_ir as ir
from tqdm import tqdm

from converter.config import GENERATION_CONFIG, ArchitectureConfig
from converter.errors import MobiusError
from converter.features import TEXT_ONLY
from converter.lowering import LoweringReport
from converter.package.genai_config import GENAI_CONFIG, genai_config
from converter.package.genai_speech import (
    AUDIO_PROCESSOR_CONFIG,
    audio_processor_config,
    whisper_genai_config,
)
from converter.package.processor_config import PREPROCESSOR_CONFIG, PROCESSOR_CONFIG, WRITERS
from converter.registry import GENERATIVE, Family
from converter.release import strip
from converter.repo_files import CONFIG, RUNTIME_FILES, SENTENCE_TRANSFORMERS
from converter.sizes import human_size
from converter.source import Source
from converter.tasks import OPSET, Component
from converter.tasks.text_generation import WRITE_INDICES

MANIFEST = "mobius.json"
INLINE_LIMIT = 1900 * 1024 * 1024  # below protobuf's 2 GiB cap on one file


@dataclass
class ModelPackage:
    """A task's components with their bound weights, and how the package is written."""

    components: list[Component]
    config: ArchitectureConfig
    family: Family
    task: Any  # the task that made the components
    source: Source
    ep: str
    dtype: str
    lowering: LoweringReport
    features: frozenset[str] = frozenset()  # the build features it was made with
    release: bool = False  # saved without debug and provenance metadata (converter/release.py)
    stripped: int = 0  # characters of metadata --release removed
    int4: Any = None  # an int4 build's settings (converter.lowering.Int4), recorded in mobius.json

    @property
    def model(self) -> ir.Model:
        """The graph of a one-component package (text generation's decoder)."""
        if len(self.components) != 1:
            raise ValueError(f"the package has {len(self.components)} components: pick one")
        return self.components[0].model

    @property
    def runtime(self) -> str:
        """What runs the package: onnxruntime-genai for generation it has a type for (every
        decoder; the VLM types it names), onnxruntime otherwise."""
        generative = self.task.name in GENERATIVE and self.family.genai_type is not None
        return "onnxruntime-genai" if generative and not self.scatters_cache else "onnxruntime"

    @property
    def scatters_cache(self) -> bool:
        """A static cache in its portable contract (write_indices), which onnxruntime-genai
        cannot feed."""
        return any(WRITE_INDICES in c.io.get("inputs", {}) for c in self.components)

    def _static_cache(self) -> dict[str, Any]:
        """mobius.json's record of a static cache: its size and how a runtime feeds it."""
        if not getattr(self.task, "static_cache", False):
            return {}
        contract = "write_indices" if self.scatters_cache else "shared_buffer"
        return {"static_cache": {"max_seq_len": self.task.max_seq_len, "contract": contract}}

    def _image_prompt(self) -> dict[str, str]:
        prompt = getattr(self.family.model_class, "image_prompt", None)
        return {"image_prompt": prompt} if prompt else {}

    def _position_rule(self) -> dict[str, str]:
        rule = getattr(self.family.model_class, "position_rule", None)
        return {"position_rule": rule} if rule else {}

    def save(self, output: str | Path, *, progress: bool = True) -> Path:
        """Write the package into `output`; files appear there only once all are written."""
        output = Path(output)
        try:
            output.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryDirectory(dir=output, prefix=".partial-") as staging:
                self._write_files(Path(staging), progress)
                for item in sorted(Path(staging).iterdir()):
                    item.replace(output / item.name)
        except OSError as err:
            raise MobiusError(self._write_failure(output, err)) from err
        return output

    def _write_files(self, staging: Path, progress: bool) -> None:
        for component in self.components:
            path = staging / component.filename
            path.parent.mkdir(parents=True, exist_ok=True)
            if self.release:
                self.stripped += strip(component.model)
            write_graph(component.model, path, progress)
        generation = _read_json(self.source.path / GENERATION_CONFIG)
        written = set()
        if self.runtime == "onnxruntime-genai":
            _write_json(staging / GENAI_CONFIG, genai_config(self, generation))
            writer = WRITERS.get(self.family.genai_type)
            if writer is not None:
                # genai's own processor_config.json (a transformers processor's is left out)
                pre = _read_json(self.source.path / PREPROCESSOR_CONFIG)
                _write_json(staging / PROCESSOR_CONFIG, writer(pre, self.config.vision))
                written.add(PROCESSOR_CONFIG)
        if any(c.role == "genai-encoder" for c in self.components):  # a whisper-type speech model
            _write_json(staging / GENAI_CONFIG, whisper_genai_config(self, generation))
            preprocessor = _read_json(self.source.path / PREPROCESSOR_CONFIG)
            audio = audio_processor_config(preprocessor, self.config.extra["num_mel_bins"])
            _write_json(staging / AUDIO_PROCESSOR_CONFIG, audio)
        # Transformers.js and Optimum read the model's config.json beside onnx/ (for text
        # generation, beside the Transformers.js files written from the default variants)
        if TEXT_ONLY in self.features:  # a plain LLM's config.json: the text model's section
            text = _read_json(self.source.path / CONFIG).get("text_config", {})
            _write_json(staging / CONFIG, {"model_type": self.config.model_type, **text})
            written.add(CONFIG)
        for name in (CONFIG, *RUNTIME_FILES):
            if (self.source.path / name).is_file() and name not in written:
                shutil.copyfile(self.source.path / name, staging / name)
        _write_json(staging / MANIFEST, self.manifest())

    def _write_failure(self, output: Path, err: OSError) -> str:
        """One line: what failed, and the disk space the package needs against what is free
        (a full disk surfaces as a bare short write, e.g. "16384 requested and 3072 written")."""
        needed = sum(
            v.const_value.nbytes
            for c in self.components
            for v in c.model.graph.initializers.values()
        )
        where = next((p for p in (output, *output.parents) if p.exists()), Path("/"))
        free = shutil.disk_usage(where).free
        cause = err.strerror or str(err) or type(err).__name__
        return (
            f"writing the package to {output} failed ({cause}); it needs about "
            f"{human_size(needed)} and its disk has {human_size(free)} free"
        )

    def manifest(self) -> dict[str, Any]:
        return {
            "source": {
                "repo_id": self.source.repo_id,
                "revision": self.source.revision,
                "path": None if self.source.repo_id else str(self.source.file or self.source.path),
            },
            "model_type": self.config.model_type,
            "task": self.task.name,
            "features": sorted(self.features),
            "release": self.release,
            **self._static_cache(),
            "runtime": self.runtime,
            # the text a prompt holds for each image (vision-language models)
            **self._image_prompt(),
            # how a runtime computes a prompt's multimodal positions, where not Qwen-VL's
            **self._position_rule(),
            # a sentence-transformers repo (its modules.json) loads with backend="onnx"
            "sentence_transformers": (self.source.path / SENTENCE_TRANSFORMERS).is_file(),
            "components": [{"role": c.role, "filename": c.filename} for c in self.components],
            "ep": self.ep,
            "dtype": self.dtype,
            **({"int4": dataclasses.asdict(self.int4)} if self.int4 is not None else {}),
            "opset": max(c.model.opset_imports.get("", OPSET) for c in self.components),
            "lowering": self.lowering.as_dict(),
            "versions": {
                name: _version(dist)
                for name, dist in (
                    ("mobius", "mobius-hub"),
                    ("onnx", "onnx"),
                    ("onnx_ir", "onnx-ir"),
                    ("onnxscript", "onnxscript"),
                    ("onnxruntime", "onnxruntime"),
                )
            },
            "built_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        }


def write_graph(model: ir.Model, path: Path, progress: bool = False) -> None:
    """`path` and its external data `path`.data; the bar starts at the first tensor, the
    first moment its total is known. Graphs under `onnx/` (the Transformers.js / Optimum
    layout) are one file when protobuf allows: Transformers.js reads external data only when
    a config asks for it. `model` may be one loaded with its weights outside it."""
    # Transformers.js and Optimum fetch a graph's external data as `<file>_data`
    external = f"{path.name}.data"
    if path.parent.name == "onnx":
        if _weight_bytes(model) < INLINE_LIMIT:
            ir.save(ir.external_data.load_to_model(model), path)
            return
        external = f"{path.name}_data"
    bar = None

    def tick(_tensor, info) -> None:
        nonlocal bar
        if bar is None:
            bar = tqdm(desc=f"writing {path.name}", unit="tensor", total=info.total)
        bar.update(1)

    try:
        callback = tick if progress else None
        ir.save(model, path, external_data=external, callback=callback, max_workers=2)
    finally:
        if bar is not None:
            bar.close()


def _weight_bytes(model: ir.Model) -> int:
    return sum(v.const_value.nbytes for v in model.graph.initializers.values())


def _version(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def _read_json(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text())
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _write_json(path: Path, data: dict[str, Any]) -> None:
    path.write_text(json.dumps(data, indent=2) + "\n")
