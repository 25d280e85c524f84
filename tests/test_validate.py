"""converter.validate and `mobius validate` on the tiny trained Llama shipped in examples/."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from converter import MobiusError, SourceError, build
from converter.cli import main
from converter.execution_providers import DTYPES
from converter.validate import THRESHOLDS, validate

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
@pytest.mark.parametrize("dtype", ["f32", "f16", "int8", "int4"])
def test_variants_pass_against_transformers(packages, ep, dtype):
    report = validate(packages(ep, dtype))
    print(report.as_dict())
    assert report.status == "passed", report.failures
    assert report.reference == "transformers"
    assert report.load_seconds > 0 and report.tokens_per_second > 0
    if dtype == "f32":
        assert report.max_abs_diff <= 1e-4 and report.greedy_match == 1.0


def test_every_dtype_has_thresholds():
    assert set(THRESHOLDS) == set(DTYPES)


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


def test_ep_missing_on_host_with_an_invalid_graph_fails(packages, tmp_path):
    """Not being able to run a variant is no excuse for publishing a graph the checker rejects."""
    import onnx

    package = shutil.copytree(packages("cuda", "f16"), tmp_path / "cuda-f16")
    model = onnx.load(package / "model.onnx", load_external_data=False)
    model.graph.node[0].input[0] = "defined_nowhere"
    onnx.save(model, package / "model.onnx")
    report = validate(package)
    assert report.status == "failed" and report.structural["checker"] != "ok"
    assert "the ONNX checker rejects model.onnx" in report.failures[0]


@pytest.fixture
def no_transformers(monkeypatch):
    """An environment without the validate extra, as the import check sees it."""
    for name in ("torch", "transformers"):
        monkeypatch.setitem(sys.modules, name, None)


def test_default_f32_without_transformers_is_unverified(packages, no_transformers, capsys):
    report = validate(packages("default", "f32"))
    assert report.status == "unverified" and report.max_abs_diff is None
    assert 'pip install "mobius-hub[validate]"' in report.reason
    assert main(["validate", str(packages("default", "f32"))]) == 1
    out = capsys.readouterr().out
    assert "UNVERIFIED" in out and "mobius-hub[validate]" in out and "PASSED" not in out


def test_default_reference_of_default_f32_is_unverified(packages):
    report = validate(packages("default", "f32"), reference="default")
    assert report.status == "unverified" and report.reference is None
    assert "transformers reference" in report.reason


def test_other_variants_without_transformers_use_the_default_f32(packages, no_transformers):
    report = validate(packages("cpu", "f32"), steps=4)
    assert report.reference == "default-f32"
    assert report.status == "passed", report.failures


def test_transformers_reference_without_the_extra_is_refused(packages, no_transformers, capsys):
    package = str(packages("cpu", "f32"))
    assert main(["validate", package, "--reference", "transformers"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "needs torch and transformers" in err and 'pip install "mobius-hub[validate]"' in err
    with pytest.raises(MobiusError, match=r"mobius-hub\[validate\]"):
        validate(package, reference="transformers")


@pytest.mark.parametrize("steps", ["0", "-3"])
def test_steps_below_one_are_refused(packages, capsys, steps):
    with pytest.raises(SystemExit) as exit_info:
        main(["validate", str(packages("cpu", "f32")), "--steps", steps])
    assert exit_info.value.code == 2
    assert "argument --steps: must be at least 1" in capsys.readouterr().err
    with pytest.raises(MobiusError, match="steps must be a whole number of at least 1"):
        validate(packages("cpu", "f32"), steps=int(steps))


def test_moved_source_folder_is_named_and_can_be_given(tmp_path, capsys):
    checkpoint, moved = tmp_path / "checkpoint", tmp_path / "moved"
    shutil.copytree(TINY_LLAMA, checkpoint)
    package = build(str(checkpoint), ep="cpu", progress=False).save(
        tmp_path / "pkg", progress=False
    )
    checkpoint.rename(moved)
    with pytest.raises(SourceError, match=rf"built from {checkpoint}, which is gone.*--source DIR"):
        validate(package)
    assert main(["validate", str(package)]) == 1
    assert "--source DIR" in capsys.readouterr().err
    assert validate(package, source=moved, steps=2).status == "passed"
    assert main(["validate", str(package), "--source", str(moved), "--steps", "2"]) == 0


def test_missing_hub_source_points_at_source_option(fake_hub, packages, tmp_path):
    package = tmp_path / "pkg"
    shutil.copytree(packages("cpu", "f32"), package)
    manifest = json.loads((package / "mobius.json").read_text())
    manifest["source"] = {"repo_id": "nobody/gone", "revision": "0" * 40, "path": None}
    (package / "mobius.json").write_text(json.dumps(manifest))
    with pytest.raises(SourceError, match=r"nobody/gone.*; validate compares .*--source DIR"):
        validate(package)
    assert validate(package, source=TINY_LLAMA, steps=2).status == "passed"


@pytest.mark.parametrize(("ep", "dtype"), [("cpu", "f32"), ("default", "f32"), ("cuda", "f16")])
@pytest.mark.parametrize("removed", ["tokenizer.json", "tokenizer_config.json"])
def test_text_generation_without_tokenizer_fails(packages, tmp_path, capsys, ep, dtype, removed):
    package = tmp_path / "pkg"
    shutil.copytree(packages(ep, dtype), package)
    (package / removed).unlink()
    report = validate(package, steps=2)
    assert report.status == "failed"
    assert [
        f"onnxruntime-genai cannot run this package without {removed}" in line
        for line in report.failures
    ] == [True]
    assert main(["validate", str(package), "--steps", "2"]) == 1
    assert f"without {removed}" in capsys.readouterr().out
