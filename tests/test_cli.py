"""What the `mobius` command prints: --json output alone on stdout, per-variant progress,
progress bars with a real total, and one-line errors for a front door whose extra is missing."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from converter.registry import families
from mobius.cli import main

TINY_LLAMA = Path(__file__).parents[1] / "examples" / "tiny-llama"


def test_build_json_is_all_of_stdout(tmp_path, capsys):
    out = tmp_path / "pkg"
    argv = ["build", "--model", str(TINY_LLAMA), "--output", str(out), "--json"]
    assert main([*argv, "--ep", "cpu", "--dtype", "int4"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["package"] == str(out.resolve())
    assert (printed["model_type"], printed["ep"], printed["dtype"]) == ("llama", "cpu", "int4")
    assert printed["lowering"]["fusions"]["GroupQueryAttention"] == 2
    assert printed["lowering"]["fusions"]["int4_matmuls"] > 0
    assert printed["source"]["path"] == str(TINY_LLAMA.resolve())
    settings = {"block_size": 32, "symmetric": True, "head_bits": 8, "prequantized": False}
    assert printed["int4"] == {**settings, "method": "rtn"}


def test_int4_method_reaches_the_build(tmp_path, capsys):
    scales = {}
    for method in ("rtn", "search"):
        out = tmp_path / method
        argv = ["build", "--model", str(TINY_LLAMA), "--output", str(out), "--json"]
        argv += ["--ep", "cpu", "--dtype", "int4", "--no-progress", "--int4-method", method]
        assert main(argv) == 0
        assert json.loads(capsys.readouterr().out)["int4"]["method"] == method
        weights = onnx.load(out / "model.onnx").graph.initializer
        scales[method] = {t.name: numpy_helper.to_array(t) for t in weights if "scales" in t.name}
    assert scales["rtn"].keys() == scales["search"].keys() and scales["rtn"]
    assert all(not np.array_equal(scales["rtn"][n], scales["search"][n]) for n in scales["rtn"])
    with pytest.raises(SystemExit):  # argparse names the choices
        main(["build", "--model", str(TINY_LLAMA), "--output", str(tmp_path), "--int4-method", "x"])
    assert "search" in capsys.readouterr().err


def test_build_takes_int8(tmp_path, capsys):
    argv = ["build", "--model", str(TINY_LLAMA), "--output", str(tmp_path / "pkg"), "--json"]
    assert main([*argv, "--ep", "cpu", "--dtype", "int8", "--no-progress"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["dtype"] == "int8" and printed["lowering"]["fusions"]["int8_matmuls"] == 8
    with pytest.raises(SystemExit):  # argparse names the choices
        main([*argv, "--dtype", "int3"])
    assert "int8" in capsys.readouterr().err


def test_weight_bar_shows_its_total_from_the_start(tmp_path, capsys):
    assert main(["build", "--model", str(TINY_LLAMA), "--output", str(tmp_path / "a")]) == 0
    bars = [s for s in re.split(r"[\r\n]", capsys.readouterr().err) if "writing model.onnx" in s]
    assert bars, "no weight bar"
    assert all(re.match(r"writing model.onnx:\s+\d+%\|.*\| \d+/16 ", bar) for bar in bars), bars
    assert "16/16" in bars[-1]
    argv = ["build", "--model", str(TINY_LLAMA), "--output", str(tmp_path / "b"), "--no-progress"]
    assert main(argv) == 0
    assert "writing model.onnx" not in capsys.readouterr().err


def test_list_models_json(capsys):
    assert main(["list", "models", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    supported = [row["model_type"] for row in rows if row["status"] == "supported"]
    assert supported == sorted(families())
    llama = next(row for row in rows if row["model_type"] == "llama")
    assert llama["task"] == "text-generation" and llama["genai_type"] == "llama"
    assert "HuggingFaceTB/SmolLM2-135M" in llama["examples"]
    assert llama["parity_eps"] == ["default", "cpu"] and llama["category"] == "dense"
    mamba = next(row for row in rows if row["model_type"] == "mamba")
    assert mamba["status"] == "not yet" and mamba["category"] == "ssm" and mamba["reason"]


def test_convert_prints_each_variant_as_it_goes(tmp_path, capsys):
    argv = ["convert", str(TINY_LLAMA), "--output", str(tmp_path), "--no-progress"]
    assert main([*argv, "--ep", "default,cpu", "--dtype", "f32"]) == 0
    out = capsys.readouterr().out.splitlines()
    steps = [line.split(" (")[0] for line in out if line.startswith("[")]
    assert steps == [
        "[1/2] default-f32: building",
        "[1/2] default-f32: validating",
        "[1/2] default-f32: passed",
        "[2/2] cpu-f32: building",
        "[2/2] cpu-f32: validating",
        "[2/2] cpu-f32: passed",
    ]
    summary = r"passed \(max abs diff [0-9.e+-]+, top-1 100\.0%, vs transformers\)"
    assert any(re.fullmatch(rf"\[2/2\] cpu-f32: {summary}", line) for line in out)
    assert re.fullmatch(rf"default-f32  {summary}", out[-2]), out[-2]
    assert re.fullmatch(rf"cpu-f32      {summary}", out[-1]), out[-1]


def test_convert_json_is_all_of_stdout(tmp_path, capsys):
    argv = ["convert", str(TINY_LLAMA), "--output", str(tmp_path), "--json"]
    assert main([*argv, "--ep", "cpu", "--dtype", "int4"]) == 0
    captured = capsys.readouterr()
    result = json.loads(captured.out)
    assert result["output"] == str(tmp_path) and result["failed"] == []
    assert list(result["reports"]) == ["onnx/cpu-int4"]
    assert result["reports"]["onnx/cpu-int4"]["status"] == "passed"
    assert "[1/1] cpu-int4: validating" in captured.err.splitlines()


@pytest.mark.parametrize(
    ("command", "module"),
    [("bot", "fastapi"), ("bot", "uvicorn"), ("bot", "github3"), ("space", "gradio")],
)
def test_front_door_without_its_extra_names_it(monkeypatch, tmp_path, capsys, command, module):
    monkeypatch.setitem(sys.modules, module, None)  # what an import sees when it is not installed
    for loaded in ("bot.app", "bot.replies", "space_app.app"):  # so they import it again
        monkeypatch.delitem(sys.modules, loaded, raising=False)
    assert main([command, "--data-dir", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert err == (
        f"mobius: error: mobius {command} needs {module}, which this environment lacks: "
        f'pip install "mobius-hub[{command}]"\n'
    )
