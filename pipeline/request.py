"""What both front doors submit: a ConversionRequest (plain data, no queue machinery)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

Publish = Literal["pr", "repo", "none"]
Origin = Literal["space", "hub-mention", "github", "cli"]
PUBLISH = ("pr", "repo", "none")
ORIGINS = ("space", "hub-mention", "github", "cli")


@dataclass(frozen=True)
class ConversionRequest:
    """What to convert and where to deliver it. JSON-serializable: `to_dict` / `from_dict`.

    `source`: a Hub repo id, or a local folder (origin "cli" only). Each (ep, dtype) pair is a
    variant. `publish`: "pr" on the source repo, "repo" `{namespace}/{name}-ONNX` (namespace
    defaults to the requester's), or "none". `requester`: who asked (Hub or GitHub user name).
    """

    source: str
    eps: tuple[str, ...]
    dtypes: tuple[str, ...]
    revision: str | None = None
    publish: Publish = "pr"
    namespace: str | None = None
    private: bool = False
    requester: str = ""
    origin: Origin = "cli"

    def __post_init__(self) -> None:
        object.__setattr__(self, "eps", tuple(self.eps))
        object.__setattr__(self, "dtypes", tuple(self.dtypes))
        if not self.source.strip():
            raise ValueError("source is empty: give a Hub repo id")
        if not self.eps or not self.dtypes:
            raise ValueError("a request needs at least one execution provider and one dtype")
        if self.publish not in PUBLISH:
            raise ValueError(f"publish must be one of {', '.join(PUBLISH)}, not {self.publish!r}")
        if self.origin not in ORIGINS:
            raise ValueError(f"origin must be one of {', '.join(ORIGINS)}, not {self.origin!r}")

    @property
    def variants(self) -> tuple[str, ...]:
        """`<ep>-<dtype>` for each requested pair, sorted."""
        return tuple(sorted({f"{ep}-{dtype}" for ep in self.eps for dtype in self.dtypes}))

    def key(self, revision: str | None = None) -> str:
        """Identity for dedupe: source, revision (`revision`, the resolved sha, wins over the
        requested one), sorted variants and publish target."""
        target = (
            f"repo:{self.namespace or self.requester}" if self.publish == "repo" else self.publish
        )
        rev = revision or self.revision or "default"
        return f"{self.source}@{rev} [{','.join(self.variants)}] -> {target}"

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "eps": list(self.eps), "dtypes": list(self.dtypes)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ConversionRequest:
        return cls(**data)
