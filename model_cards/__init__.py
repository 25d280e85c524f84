"""Model cards: jinja2 templates rendered into a Hub README for converted packages (issue 4).

Example::

    source = SourceInfo.from_model_info(HfApi().model_info(repo, revision=sha), model_type="llama")
    variants = [VariantInfo.from_package(path, report.as_dict()) for path, report in built]
    card = render(source, variants, mode="pr", command="mobius convert ...")
    # upload `card` to card_path("pr") == "onnx/README.md", each package to variant.folder
"""

from model_cards.card import (
    HUB_URL,
    Mode,
    SourceInfo,
    VariantInfo,
    card_path,
    front_matter,
    human_size,
    pr_description,
    pr_title,
    render,
    variant_folder,
    variant_order,
)

__all__ = [
    "HUB_URL",
    "Mode",
    "SourceInfo",
    "VariantInfo",
    "card_path",
    "front_matter",
    "human_size",
    "pr_description",
    "pr_title",
    "render",
    "variant_folder",
    "variant_order",
]
