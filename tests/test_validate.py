"""converter.validate and `mobius validate` on the tiny trained Llama shipped in examples/."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from converter import build
from converter.cli import main
from converter.validate import validate

TINY_LLAMA = Path(__file__).parents[1] / "examples" / "tiny-llama"


@pytest.fixture(scope="module")
def packages(tmp_path_factory):
    root = tmp_path_factory.mktemp("validate")

    def package(ep: str, dtype: str) -> Path:
        out = root / f"{ep}-{dtype}"
        if not out.exists():
            build(str(TINY_LLAMA), ep=ep, dtype=dtype, progress=False).save(out, progress=False)
        return out

    return package


@pytest.mark.parametrize("ep", ["default", "cpu"])
@pytest.mark.parametrize("dtype", ["f32", "f16", "int4"])
def test_variants_pass_against_transformers(packages, ep, dtype):
    report = validate(packages(ep, dtype))
    print(report.as_dict())
    assert report.status == "passed", report.failures
    assert report.reference == "transformers"
    assert report.load_seconds > 0 and report.tokens_per_second > 0
    if dtype == "f32":
        assert report.max_abs_diff <= 1e-4 and report.greedy_match == 1.0


def test_default_f32_reference_built_on_the_fly(packages):
    report = validate(packages("cpu", "int4"), reference="default")
    assert report.reference == "default-f32"
    assert report.status == "passed", report.failures


def test_json_output_and_exit_code(packages, capsys):
    assert main(["validate", str(packages("cpu", "f32")), "--json", "--steps", "4"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["status"] == "passed" and report["dtype"] == "f32"
    assert 0 <= report["top1_agreement"] <= 1 and report["greedy_match"] == 1.0


def test_missed_threshold_fails_with_exit_code_1(packages, tmp_path, capsys):
    broken = tmp_path / "broken"
    broken.mkdir()
    for item in packages("default", "f32").iterdir():
        (broken / item.name).write_bytes(item.read_bytes())
    data = np.fromfile(broken / "model.onnx.data", dtype=np.float32)
    data[: data.size // 2] *= 1.01  # a 1% error in half the weights
    data.tofile(broken / "model.onnx.data")
    assert main(["validate", str(broken)]) == 1
    out = capsys.readouterr().out
    assert "FAILED" in out and "max_abs_diff" in out


def test_ep_missing_on_host_is_not_executed(packages, capsys):
    package = packages("cuda", "f16")
    report = validate(package)
    assert report.status == "not executed"
    assert report.structural["checker"] == "ok"
    assert report.max_abs_diff is None
    assert main(["validate", str(package)]) == 0
    assert "NOT EXECUTED" in capsys.readouterr().out
