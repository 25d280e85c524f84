"""Every encoder parity case, gathered from this package's modules (one per family module):
`CASES` maps a case id, `model_type` or `model_type:variant`, to an EncoderCase."""

from dataclasses import dataclass, field

from tests.parity.gather import gather_cases


@dataclass(frozen=True)
class EncoderCase:
    """A tiny config (`model_type` and sizes) and the transformers head classes to convert,
    each checked on every output its graph has. `inputs` is the modality fed: text, image
    or audio."""

    config: dict
    heads: tuple[str, ...]
    inputs: str = "text"
    overrides: dict = field(default_factory=dict)  # config keys set after construction
    # BatchNorm statistics measured on random inputs; False where measured ones make the model
    # ill-conditioned (LeViT: its BatchNorms rescale attention averages of small variance, and
    # torch's own float32 then strays from float64 past the tolerance)
    calibrate: bool = True
    # the side of the images fed, where not the vision config's image_size (CLIPSeg resizes its
    # positions to any)
    image_size: int | None = None


CASES = gather_cases(__name__, __path__, "encoder parity case")
