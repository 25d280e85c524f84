"""The registry is the single source for the docs and for what the parity suite must cover."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from converter.errors import UnsupportedModelError
from converter.registry import families, family_for

ROOT = Path(__file__).parents[1]


def _generator():
    spec = importlib.util.spec_from_file_location("gen_docs", ROOT / "scripts" / "gen_docs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", ["supported-models.md", "execution-providers.md"])
def test_generated_docs_are_current(name):
    render = _generator().GENERATED[name]
    assert (ROOT / "docs" / name).read_text() == render(), (
        f"docs/{name} is stale: run python scripts/gen_docs.py"
    )


def test_doc_lists_every_family():
    text = (ROOT / "docs" / "supported-models.md").read_text()
    for model_type in families():
        assert f"| `{model_type}` |" in text


def test_unknown_model_type_names_the_nearest():
    with pytest.raises(UnsupportedModelError, match="nearest supported: llama"):
        family_for("llamma")
