"""What both front doors submit: a ConversionRequest (plain data, no queue machinery)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

from converter.errors import MobiusError
from converter.execution_providers import DTYPES, EXECUTION_PROVIDERS, execution_provider
from converter.features import STATIC_CACHE, parse_features
from model_cards import variant_order

Publish = Literal["pr", "repo", "none"]
Origin = Literal["space", "hub-mention", "github", "cli"]
PUBLISH = ("pr", "repo", "none")
ORIGINS = ("space", "hub-mention", "github", "cli")


class BadRequest(MobiusError, ValueError):
    """A request that cannot be served as asked; the message says why and what would work."""


def check_variants(eps: tuple[str, ...], dtypes: tuple[str, ...]) -> None:
    """Every (ep, dtype) pair must be one an execution provider runs; one message lists every
    problem and the supported values. The one check the CLI, the Space and the bot share."""
    problems = []
    for ep in dict.fromkeys(eps):
        for dtype in dict.fromkeys(dtypes):
            try:
                execution_provider(ep, dtype)
            except MobiusError as err:
                problems.append(str(err))
    if problems:
        raise BadRequest("; ".join(dict.fromkeys(problems)))


@dataclass(frozen=True)
class ConversionRequest:
    """What to convert and where to deliver it. JSON-serializable: `to_dict` / `from_dict`.

    `source`: a Hub repo id, or a local folder (origin "cli" only). Each (ep, dtype) pair is a
    variant. `publish`: "pr" on the source repo, "repo" `{namespace}/{name}-ONNX` (namespace
    defaults to the requester's), or "none". `requester`: who asked (Hub or GitHub user name).
    `features`, `release` and `max_seq_len` (static-cache's buffer length) go to every
    variant's `converter.build`; unknown features are refused here, before anything is queued.
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
    features: tuple[str, ...] = ()
    release: bool = False
    max_seq_len: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "eps", tuple(self.eps))
        object.__setattr__(self, "dtypes", tuple(self.dtypes))
        try:
            features = tuple(sorted(parse_features(self.features)))
        except MobiusError as err:
            raise BadRequest(str(err)) from None
        object.__setattr__(self, "features", features)
        if not self.source.strip():
            raise BadRequest("source is empty: give a Hub repo id")
        if not self.eps or not self.dtypes:
            raise BadRequest(
                "a request needs at least one execution provider "
                f"({', '.join(EXECUTION_PROVIDERS)}) and one dtype ({', '.join(DTYPES)})"
            )
        if self.publish not in PUBLISH:
            raise BadRequest(f"publish must be one of {', '.join(PUBLISH)}, not {self.publish!r}")
        if self.origin not in ORIGINS:
            raise BadRequest(f"origin must be one of {', '.join(ORIGINS)}, not {self.origin!r}")
        check_variants(self.eps, self.dtypes)
        if self.max_seq_len is not None:
            length = self.max_seq_len
            if isinstance(length, bool) or not isinstance(length, int) or length < 1:
                raise BadRequest(
                    f"max_seq_len must be a whole number of at least 1, not {length!r}"
                )
            if STATIC_CACHE not in features:
                raise BadRequest(
                    f"max_seq_len sizes the {STATIC_CACHE} feature's buffers: ask for "
                    f"{STATIC_CACHE} too, or leave max_seq_len out"
                )

    def build_options(self) -> dict[str, Any]:
        """What every variant's `converter.build` gets besides its ep and dtype (max_seq_len
        only when given)."""
        options: dict[str, Any] = {"features": list(self.features), "release": self.release}
        if self.max_seq_len is not None:
            options["max_seq_len"] = self.max_seq_len
        return options

    @property
    def variants(self) -> tuple[str, ...]:
        """`<ep>-<dtype>` for each requested pair, in card order (`variant_order`)."""
        names = {f"{ep}-{dtype}" for ep in self.eps for dtype in self.dtypes}
        return tuple(sorted(names, key=variant_order))

    def key(self, revision: str | None = None, *, private: bool = False) -> str:
        """Identity for dedupe: source, revision (`revision`, the resolved sha, wins over the
        requested one), sorted variants, build options and publish target; for a `private`
        source also the requester, so nobody is answered with another requester's private
        job."""
        target = (
            f"repo:{self.namespace or self.requester}" if self.publish == "repo" else self.publish
        )
        rev = revision or self.revision or "default"
        built = [*self.features, *(["release"] if self.release else [])]
        if self.max_seq_len is not None:
            built.append(f"max_seq_len={self.max_seq_len}")
        built = "".join(f" +{item}" for item in built)
        key = f"{self.source}@{rev} [{','.join(self.variants)}]{built} -> {target}"
        return f"{key} for {self.requester}" if private else key

    def to_dict(self) -> dict[str, Any]:
        lists = {name: list(getattr(self, name)) for name in ("eps", "dtypes", "features")}
        return {**asdict(self), **lists}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ConversionRequest:
        return cls(**data)
