"""Render the model card (README.md with Hub front matter) and the PR text for converted variants.

Inputs are plain data: the source repo (`SourceInfo`) and each variant's manifest and
validation report as dicts (`mobius.json`, `ValidationReport.as_dict()`). Everything taken
from the source is sanitized before it reaches YAML or a markdown table; the output depends
only on the inputs (variants are sorted, no clock is read).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import quote

import jinja2

from converter.execution_providers import DTYPES, EXECUTION_PROVIDERS
from converter.package.package import INLINE_LIMIT
from converter.package.transformers_js import JS_DTYPES, model_file
from converter.repo_files import is_repo_id
from converter.sizes import human_size
from model_cards import encoder_card, vlm_card

Mode = Literal["pr", "repo", "local"]  # published as a PR, as a repo, or kept on disk

HUB_URL = "https://huggingface.co"
EP_ORDER = ("cpu", "cuda", "dml", "webgpu", "default")
BASE_TAGS = ("onnx", "onnxruntime", "onnxruntime-genai", "mobius")
MANIFEST_FILE = "mobius.json"
DEFAULT_PIPELINE_TAG = "text-generation"
VERSION_KEYS = ("mobius", "onnxscript", "onnx_ir", "onnx", "onnxruntime")
GENAI_PROVIDERS = {"cuda": "cuda", "dml": "dml", "webgpu": "webgpu"}  # og.Config names
GPU_EPS = ("cuda", "dml", "webgpu")

_FOLDER = re.compile(r"[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*")
_LICENSE_ID = re.compile(r"[a-z0-9][a-z0-9.+-]*")
_PIPELINE_TAG = re.compile(r"[a-z][a-z0-9-]*")
_URL = re.compile(r"https?://[A-Za-z0-9._~:/?=&%+-]+")
_YAML_PLAIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/:?=&%+~-]*")
_NOT_AN_ID = ("other", "unknown")  # licenses that need license_name and license_link
_YAML_WORDS = {"true", "false", "yes", "no", "on", "off", "null", "y", "n"}
_NUMBER = re.compile(r"[-+]?(\d[\d_]*)?\.?\d*([eE][-+]?\d+)?")
_TOKEN = re.compile(r"hf_[A-Za-z0-9]{8,}")  # never print a Hub token
MAX_NOTES = 10  # structural-check lines shown per variant


@dataclass(frozen=True)
class SourceInfo:
    """The source repo at the converted revision, or a local folder (`repo_id` None, `revision`
    "" and `folder` its name). Explicit license fields win over card_data."""

    repo_id: str | None
    revision: str  # the commit sha that was converted
    model_type: str
    ref: str | None = None  # the revision as asked, when it was not the default branch
    folder: str | None = None  # a local source's folder name (no path: it is the host's)
    license: str | None = None
    license_name: str | None = None
    license_link: str | None = None
    pipeline_tag: str | None = None
    card_data: dict[str, Any] = field(default_factory=dict)  # the source's cardData

    @classmethod
    def from_model_info(cls, info: Any, *, model_type: str, ref: str | None = None) -> SourceInfo:
        """From `huggingface_hub.HfApi().model_info(repo, revision=...)` (read by attribute);
        `ref`: the revision that was asked for (a branch, tag or `refs/pr/N`), if any."""
        data = info.card_data.to_dict() if info.card_data is not None else {}
        return cls(
            repo_id=info.id,
            revision=info.sha,
            model_type=model_type,
            ref=None if ref in (None, "main", info.sha) else ref,
            pipeline_tag=info.pipeline_tag,
            card_data=data,
        )

    @classmethod
    def local(cls, folder: str | Path, *, model_type: str) -> SourceInfo:
        """A local checkpoint folder; the card names the folder, never the host's path."""
        return cls(repo_id=None, revision="", model_type=model_type, folder=Path(folder).name)

    @property
    def name(self) -> str:
        return self.repo_id or self.folder or "model"

    @property
    def unreviewed(self) -> bool:
        """Converted from a pull request of the source, not from a branch or tag."""
        return bool(self.ref and self.ref.startswith("refs/pr/"))

    def _field(self, name: str) -> Any:
        value = getattr(self, name)
        return value if value is not None else self.card_data.get(name)


@dataclass(frozen=True)
class VariantInfo:
    """One converted variant as it lies on the Hub."""

    folder: str  # the Hub path, variant_folder(ep, dtype)
    ep: str
    dtype: str
    size_bytes: int  # all files of the variant, on disk
    manifest: dict[str, Any]  # mobius.json
    report: dict[str, Any] | None = None  # ValidationReport.as_dict(), None if not validated

    @classmethod
    def from_package(cls, path: str | Path, report: dict[str, Any] | None = None) -> VariantInfo:
        """Read a package folder written by `ModelPackage.save` (its manifest and size)."""
        path = Path(path)
        manifest = json.loads((path / MANIFEST_FILE).read_text())
        size = sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
        ep, dtype = manifest["ep"], manifest["dtype"]
        return cls(variant_folder(ep, dtype), ep, dtype, size, manifest, report)


def variant_folder(ep: str, dtype: str) -> str:
    """Where a variant lives in the Hub repo: `onnx/<ep>-<dtype>`."""
    return f"onnx/{ep}-{dtype}"


def variant_order(variant: str) -> tuple[tuple[int, str], tuple[int, str]]:
    """Sort key for variant names, `<ep>-<dtype>` or `onnx/<ep>-<dtype>`: by EP, then dtype,
    the order of every list of variants (cards, replies, tables)."""
    ep, _, dtype = variant.removeprefix("onnx/").partition("-")
    return _rank(ep, EP_ORDER), _rank(dtype, DTYPES)


def card_path(mode: Mode) -> str:
    """Where the card goes: `README.md` of an export repo, else `onnx/README.md` (in a PR the
    source README stays; on disk the card sits beside the variant folders)."""
    if mode not in ("pr", "repo", "local"):
        raise ValueError(f"mode must be 'pr', 'repo' or 'local', not {mode!r}")
    return "README.md" if mode == "repo" else "onnx/README.md"


def render(
    source: SourceInfo,
    variants: list[VariantInfo],
    *,
    mode: Mode,
    command: str,
    repo_id: str | None = None,
    note: str = "",
) -> str:
    """The model card for `card_path(mode)`.

    `repo_id` is the repo the card is published in: the source repo in "pr" mode (the
    default there), the export repo in "repo" mode (required there); "local" cards describe
    packages on disk. `note` is a line for the reader (e.g. why the repo has the name it has).
    """
    card_path(mode)
    if mode == "pr" and source.repo_id is None:
        raise ValueError("a local source has no repo to open a pull request on")
    target = repo_id or (source.repo_id if mode == "pr" else None)
    if target is None and mode == "repo":
        raise ValueError("render(mode='repo') needs repo_id, the repo the card is published in")
    context = _context(source, variants)
    primary = _primary(context["variants"])
    if vlm_card.is_vlm(variants):
        return _ENV.get_template("vlm_card.md.j2").render(
            **context,
            **vlm_card.context(variants),
            front_matter=vlm_card.front_matter(source, variants),
            mode=mode,
            note=_cell(note),
            repo_id=_repo_id(target) if target else None,
            link_prefix="onnx/" if mode == "repo" else "",
            primary=primary,
            genai_provider=GENAI_PROVIDERS.get(primary["ep"]),
            command_fence=_fence(command),
            command=_TOKEN.sub("hf_***", command.strip()),
        )
    if encoder_card.is_encoder(variants):
        return _ENV.get_template("encoder_card.md.j2").render(
            **context,
            **encoder_card.context(variants, context["variants"], target),
            front_matter=encoder_card.front_matter(source, variants),
            mode=mode,
            note=_cell(note),
            ort_provider=_ort_provider(primary["ep"]),
            command_fence=_fence(command),
            command=_TOKEN.sub("hf_***", command.strip()),
        )
    return _ENV.get_template("card.md.j2").render(
        **context,
        front_matter=front_matter(source, variants),
        mode=mode,
        note=_cell(note),
        repo_id=_repo_id(target) if target else None,
        link_prefix="onnx/" if mode == "repo" else "",
        primary=primary,
        genai_provider=GENAI_PROVIDERS.get(primary["ep"]),
        ort_provider=_ort_provider(primary["ep"]),
        command_fence=_fence(command),
        command=_TOKEN.sub("hf_***", command.strip()),
    )


def pr_title(source: SourceInfo, variants: list[VariantInfo]) -> str:
    """One line: which variants this PR adds (and from which ref, when not the default)."""
    names = ", ".join(v["name"] for v in _context(source, variants)["variants"])
    at = f" from {_cell(source.ref)}" if source.ref else ""
    return f"Add ONNX variants ({names}) converted by mobius{at}"


def pr_description(source: SourceInfo, variants: list[VariantInfo], *, mode: Mode = "pr") -> str:
    """Short markdown for the PR (or commit) description: variants and validation figures."""
    return _ENV.get_template("pr_description.md.j2").render(
        **_context(source, variants), card=card_path(mode), mode=mode
    )


def front_matter(source: SourceInfo, variants: list[VariantInfo]) -> dict[str, str | list[str]]:
    """The card's Hub metadata; every value is a plain YAML scalar (checked)."""
    data: dict[str, str | list[str]] = {}
    if source.repo_id is not None:  # a local folder has no base model or terms on the Hub
        data["base_model"] = _repo_id(source.repo_id)
        data |= _license(source)
    data["pipeline_tag"] = _pipeline_tag(source, variants)
    data["tags"] = _tags(variants)
    for value in data.values():
        for item in value if isinstance(value, list) else [value]:
            if not _yaml_plain(item):
                raise ValueError(f"front matter value {item!r} is not a plain YAML scalar")
    return data


def _context(source: SourceInfo, variants: list[VariantInfo]) -> dict[str, Any]:
    if not variants:
        raise ValueError("a card needs at least one variant")
    ordered = sorted(variants, key=lambda v: variant_order(f"{v.ep}-{v.dtype}"))
    rows = [_row(v) for v in ordered]
    manifests = [v.manifest for v in ordered]
    hub = source.repo_id is not None
    return {
        "source": source,
        "name": _cell(source.name),
        "source_url": f"{HUB_URL}/{_repo_id(source.repo_id)}" if hub else "",
        "revision": _cell(source.revision),
        "ref": _cell(source.ref or ""),
        "unreviewed": source.unreviewed,
        "revision_url": f"{HUB_URL}/{source.repo_id}/tree/{_url_part(source.revision)}",
        "license_text": _license_text(source) if hub else "see the source folder",
        "model_type": source.model_type,
        "variants": rows,
        "references": sorted({r["reference"] for r in rows if r["reference"]}),
        "fallbacks": [(r["name"], line) for r in rows for line in r["fallbacks"]],
        "structural": [(r["name"], line) for r in rows for line in r["unsupported"]],
        "versions": {
            k: _distinct(m.get("versions", {}).get(k) for m in manifests) for k in VERSION_KEYS
        },
        "opsets": _distinct(m.get("opset") for m in manifests),
        "built_at": _distinct(m.get("built_at") for m in manifests),
        "built_with": _built_with(manifests),
        "not_executed": [r["name"] for r in rows if r["status"] == "not executed"],
        "not_executed_gpu": [
            r["name"] for r in rows if r["status"] == "not executed" and r["ep"] in GPU_EPS
        ],
        "failed": [r["name"] for r in rows if r["status"] == "failed"],
        "transformers_js": _transformers_js(ordered),
        "has_int8": any(r["dtype"] == "int8" for r in rows),
        "has_int4": any(r["dtype"] == "int4" for r in rows),
        "has_half": any(r["dtype"] in ("f16", "bf16") for r in rows),
    }


def _transformers_js(variants: list[VariantInfo]) -> dict[str, Any] | None:
    """The Transformers.js files of `variants` (see converter.package.transformers_js), the
    dtype its snippet loads (the first's) and whether some may keep external weights."""
    found = [(model_file(v.manifest), v) for v in variants]
    found = [(name, v) for name, v in found if name]
    if not found:
        return None
    return {
        "files": [name for name, _ in found],
        "dtype": JS_DTYPES[found[0][1].dtype],
        "large": any(v.size_bytes >= INLINE_LIMIT for _, v in found),
    }


def _row(variant: VariantInfo) -> dict[str, Any]:
    folder = _checked(variant.folder, _FOLDER, "variant folder")
    report = variant.report or {}
    status = report.get("status", "not validated")
    structural = report.get("structural") or {}
    lowering = variant.manifest.get("lowering") or {}
    fallbacks = _unique(lowering.get("fallbacks") or [], report.get("fallbacks") or [])
    return {
        "name": folder.rsplit("/", 1)[-1],
        "folder": folder,
        "ep": _cell(variant.ep),
        "dtype": _cell(variant.dtype),
        "size": human_size(variant.size_bytes),
        "status": status,
        "validation": _validation(status, report, structural, variant.ep),
        "max_abs_diff": _number(report.get("max_abs_diff"), "{:.3g}"),
        "top1": _number(report.get("top1_agreement"), "{:.1%}"),
        "greedy": _number(report.get("greedy_match"), "{:.1%}"),
        "reference": _cell(report.get("reference") or ""),
        "fallbacks": [_cell(line) for line in fallbacks],
        "unsupported": _capped([_cell(line) for line in structural.get("unsupported_ops") or []]),
    }


def _validation(status: str, report: dict[str, Any], structural: dict[str, Any], ep: str) -> str:
    if status == "passed":
        return "passed"
    if status == "failed":
        failures = "; ".join(report.get("failures") or []) or "thresholds missed"
        return _cell(f"**FAILED**: {failures}")
    if status == "not executed":
        checker = str(structural.get("checker", "not run"))
        check = "ONNX checker ok" if checker == "ok" else f"ONNX checker: {checker}"
        missing = len(structural.get("unsupported_ops") or [])
        kernels = f"{missing} node(s) without a {ep} kernel" if missing else "all kernels present"
        check += f", {kernels}"
        return _cell(f"not executed on this host (structural check: {check})")
    if report.get("reason"):
        return _cell(f"{status}: {report['reason']}")
    return _cell(status)


def _license(source: SourceInfo) -> dict[str, str]:
    """`license` carried over when it is a Hub license id, else `other` with a name and link."""
    value = source._field("license")
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    if isinstance(value, str) and _LICENSE_ID.fullmatch(value) and value not in _NOT_AN_ID:
        return {"license": value}
    name = source._field("license_name") or (value if isinstance(value, str) else None)
    if not name or name in _NOT_AN_ID:
        name = f"{source.repo_id.rsplit('/', 1)[-1]}-license"
    return {
        "license": "other",
        "license_name": _slug(str(name)) or "source-license",
        "license_link": _license_link(source),
    }


def _license_link(source: SourceInfo) -> str:
    link = source._field("license_link")
    repo_url = f"{HUB_URL}/{source.repo_id}"
    if not isinstance(link, str) or not link.strip():
        return repo_url
    link = link.strip()
    if not re.match(r"https?://", link):  # relative to the source repo, pinned to the revision
        link = f"{repo_url}/blob/{source.revision}/{link.lstrip('./')}"
    link = _url_part(link, safe=":/?=&%+~")
    return link if _URL.fullmatch(link) else repo_url


def _license_text(source: SourceInfo) -> str:
    data = _license(source)
    if data["license"] != "other":
        return f"`{data['license']}`"
    shown = source._field("license_name") or source._field("license") or "not stated"
    return f"{_cell(str(shown))} (see [the source repo's terms]({data['license_link']}))"


def _pipeline_tag(source: SourceInfo, variants: list[VariantInfo]) -> str:
    for tag in (source._field("pipeline_tag"), *(v.manifest.get("task") for v in variants)):
        if isinstance(tag, str) and _PIPELINE_TAG.fullmatch(tag):
            return tag
    return DEFAULT_PIPELINE_TAG


def _tags(variants: list[VariantInfo]) -> list[str]:
    eps = sorted({v.ep for v in variants}, key=lambda e: _rank(e, EP_ORDER))
    dtypes = sorted({v.dtype for v in variants}, key=lambda d: _rank(d, DTYPES))
    # "default" (the portable graph) is no useful tag on the Hub; its files load in
    # Transformers.js
    js = ["transformers.js"] if any(model_file(v.manifest) for v in variants) else []
    tags = [*BASE_TAGS, *js, *(e for e in eps if e != "default"), *dtypes]
    return [_slug(t) for t in dict.fromkeys(tags) if _slug(t)]


def _primary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The variant the usage snippets load: a passing one first, then cpu before GPUs."""
    usable = [r for r in rows if r["dtype"] != "bf16"] or rows  # numpy has no bfloat16
    return min(usable, key=lambda r: (r["status"] != "passed", r["status"] == "failed"))


def _ort_provider(ep: str) -> str:
    provider = EXECUTION_PROVIDERS.get(ep)
    return provider.ort_provider if provider else "CPUExecutionProvider"


def _cell(text: Any) -> str:
    """Safe inside a markdown table cell and on one line: no newlines, pipes or raw HTML."""
    text = " ".join(str(text).split())
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def _code(text: Any) -> str:
    """Inline code for a table cell; falls back to plain text when it holds backticks."""
    text = _cell(text)
    return text if "`" in text else f"`{text}`"


def _fence(text: str) -> str:
    """A code fence longer than any backtick run in text."""
    runs = [len(m) for m in re.findall(r"`+", text)]
    return "`" * max(3, max(runs, default=0) + 1)


def _number(value: Any, spec: str) -> str:
    return spec.format(value) if isinstance(value, int | float) else "—"


def _built_with(manifests: list[dict[str, Any]]) -> str:
    """The build features and --release the variants were made with ("" for a plain build)."""
    features = sorted({f for m in manifests for f in m.get("features", [])})
    parts = [f"features {', '.join(features)}"] if features else []
    parts += ["--release"] if any(m.get("release") for m in manifests) else []
    return _cell("; ".join(parts))


def _distinct(values: Any) -> str:
    found = sorted({str(v) for v in values if v is not None})
    return _cell(", ".join(found)) if found else "unknown"


def _capped(lines: list[str]) -> list[str]:
    extra = len(lines) - MAX_NOTES
    return lines if extra <= 0 else [*lines[:MAX_NOTES], f"… and {extra} more"]


def _unique(*lists: list[str]) -> list[str]:
    return list(dict.fromkeys(str(line) for items in lists for line in items))


def _rank(value: str, order: tuple[str, ...]) -> tuple[int, str]:
    return (order.index(value) if value in order else len(order), value)


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9.]+", "-", text.lower()).strip("-.")


def _url_part(text: str, safe: str = "") -> str:
    return quote(text.strip(), safe=safe)


def _checked(value: str, pattern: re.Pattern[str], what: str) -> str:
    if not isinstance(value, str) or not pattern.fullmatch(value):
        raise ValueError(f"invalid {what}: {value!r}")
    return value


def _repo_id(value: str) -> str:
    if not isinstance(value, str) or not is_repo_id(value):
        raise ValueError(f"invalid repo id: {value!r}")
    return value


def _yaml_plain(value: str) -> bool:
    return (
        bool(_YAML_PLAIN.fullmatch(value))
        and not value.endswith(":")
        and value.lower() not in _YAML_WORDS
        and not _NUMBER.fullmatch(value)
    )


_ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("model_cards", "templates"),
    autoescape=False,  # markdown; table cells are escaped by _cell/_code in Python
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=True,
)
_ENV.filters["code"] = _code
_ENV.filters["cell"] = _cell
