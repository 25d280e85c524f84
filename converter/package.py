"""ModelPackage: the ONNX graph with its bound weights, and how it is written to disk.

A saved package holds `model.onnx` + `model.onnx.data`, `genai_config.json` for
onnxruntime-genai, the source's tokenizer and generation files, and `mobius.json`
recording where it came from and how it was built.
"""

from __future__ import annotations

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

from converter.config import ArchitectureConfig
from converter.errors import MobiusError
from converter.lowering import LoweringReport
from converter.registry import Family
from converter.sizes import human_size
from converter.source import Source
from converter.tasks import OPSET, TextGenerationTask

MODEL_FILE = "model.onnx"
DATA_FILE = "model.onnx.data"
TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "added_tokens.json",
    "tokenizer.model",
    "vocab.json",
    "merges.txt",
    "chat_template.jinja",
    "chat_template.json",
    "generation_config.json",
)
_SEARCH_KEYS = ("do_sample", "temperature", "top_k", "top_p", "repetition_penalty")


@dataclass
class ModelPackage:
    model: ir.Model
    config: ArchitectureConfig
    family: Family
    task: TextGenerationTask
    source: Source
    ep: str
    dtype: str
    lowering: LoweringReport

    def save(self, output: str | Path, *, progress: bool = True) -> Path:
        """Write the package into `output`; files appear there only once all are written."""
        output = Path(output)
        try:
            output.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryDirectory(dir=output, prefix=".partial-") as staging:
                self._write_files(Path(staging), progress)
                for item in Path(staging).iterdir():
                    item.replace(output / item.name)
        except OSError as err:
            raise MobiusError(self._write_failure(output, err)) from err
        return output

    def _write_files(self, staging: Path, progress: bool) -> None:
        self._write_model(staging / MODEL_FILE, progress)
        generation = _read_json(self.source.path / "generation_config.json")
        _write_json(staging / "genai_config.json", self.genai_config(generation))
        for name in TOKENIZER_FILES:
            if (self.source.path / name).is_file():
                shutil.copyfile(self.source.path / name, staging / name)
        _write_json(staging / "mobius.json", self.manifest())

    def _write_failure(self, output: Path, err: OSError) -> str:
        """One line: what failed, and the disk space the package needs against what is free
        (a full disk surfaces as a bare short write, e.g. "16384 requested and 3072 written")."""
        needed = sum(v.const_value.nbytes for v in self.model.graph.initializers.values())
        where = next((p for p in (output, *output.parents) if p.exists()), Path("/"))
        free = shutil.disk_usage(where).free
        cause = err.strerror or str(err) or type(err).__name__
        return (
            f"writing the package to {output} failed ({cause}); it needs about "
            f"{human_size(needed)} and its disk has {human_size(free)} free"
        )

    def _write_model(self, path: Path, progress: bool) -> None:
        # The bar starts at the first tensor, the first moment its total is known.
        bar = None

        def tick(_tensor, info) -> None:
            nonlocal bar
            if bar is None:
                bar = tqdm(desc="writing weights", unit="tensor", total=info.total)
            bar.update(1)

        try:
            callback = tick if progress else None
            ir.save(self.model, path, external_data=DATA_FILE, callback=callback, max_workers=2)
        finally:
            if bar is not None:
                bar.close()

    def genai_config(self, generation: dict[str, Any]) -> dict[str, Any]:
        cfg = self.config
        eos = generation.get("eos_token_id", list(cfg.eos_token_id))
        eos = eos if isinstance(eos, list) else [eos]
        pad = generation.get("pad_token_id", cfg.pad_token_id)
        pad = pad if pad is not None else (eos[0] if eos else 0)
        bos = generation.get("bos_token_id", cfg.bos_token_id)
        search = {"max_length": cfg.max_position_embeddings, "num_beams": 1, "do_sample": False}
        search.update({k: generation[k] for k in _SEARCH_KEYS if generation.get(k) is not None})
        return {
            "model": {
                "type": self.family.genai_type,
                "bos_token_id": bos if bos is not None else pad,
                "eos_token_id": eos if len(eos) != 1 else eos[0],
                "pad_token_id": pad,
                "vocab_size": cfg.vocab_size,
                "context_length": cfg.max_position_embeddings,
                "decoder": {
                    "filename": MODEL_FILE,
                    "session_options": {"log_id": "onnxruntime-genai", "provider_options": []},
                    "head_size": cfg.head_dim,
                    "hidden_size": cfg.hidden_size,
                    "num_attention_heads": cfg.num_attention_heads,
                    "num_key_value_heads": cfg.num_key_value_heads,
                    "num_hidden_layers": cfg.num_hidden_layers,
                    **self.task.io_names(),
                },
            },
            # GroupQueryAttention updates a max-length cache in place; the standard op concats.
            "search": {"past_present_share_buffer": self._gqa_everywhere(), **search},
        }

    def _gqa_everywhere(self) -> bool:
        layers = self.config.num_hidden_layers
        return self.lowering.fusions.get("GroupQueryAttention", 0) == layers

    def manifest(self) -> dict[str, Any]:
        return {
            "source": {
                "repo_id": self.source.repo_id,
                "revision": self.source.revision,
                "path": None if self.source.repo_id else str(self.source.path),
            },
            "model_type": self.config.model_type,
            "task": self.task.name,
            "ep": self.ep,
            "dtype": self.dtype,
            "opset": OPSET,
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
