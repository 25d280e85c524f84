"""Every vision-language parity case, gathered from this package's modules (one per family
module): `CASES` maps a case id, `model_type` or `model_type:variant`, to a VlmCase."""

from dataclasses import dataclass, field

from tests.parity.gather import gather_cases


@dataclass(frozen=True)
class VlmCase:
    """A tiny config (`model_type`, `text_config`, `vision_config`, ...) for transformers'
    `model_class`, saved with random weights; `inputs` names the images and prompt of
    tests/parity/vlm_reference.py's INPUTS ("pixels": fixed-size images, one a prompt;
    "pixel_pairs": two a prompt; "patches": Qwen-VL's flattened patches of two grids;
    "merged_patches": VideoLLaMA 3's patches of three grids and merge sizes; "sized": two images
    of different sizes padded into one batch, with image_sizes; "tiles": Idefics 3's
    image splits; "padded_images": Idefics 2's split images of different sizes, padded;
    "crops": LLaVA-NeXT's crops of three images); `token_types` the
    token_type_ids transformers is given ("image": 1 on image tokens, as Gemma 3's processor
    makes them; "prefix": 0 on the prompt, 1 after it, as PaliGemma's; "": none); `overrides`
    are config attributes set after construction."""

    config: dict
    inputs: str = "pixels"
    token_types: str = ""
    model_class: str = "AutoModelForImageTextToText"
    overrides: dict = field(default_factory=dict)


CASES = gather_cases(__name__, __path__, "vision-language parity case")
