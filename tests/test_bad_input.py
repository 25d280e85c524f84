"""Every bad input the converter promises to refuse: the exception type, and a message that
names the problem (the key, the tensor, the file). Also the CLI's one-line errors and the
promise that a failed build leaves nothing half-written."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest

from converter import build
from converter.cli import main
from converter.config import ArchitectureConfig, check_generation_config
from converter.errors import (
    ConfigError,
    MobiusError,
    UnsupportedModelError,
    WeightsError,
)
from converter.registry import families
from tests.checkpoints import (
    TINY_LLAMA,
    copy_tiny_llama,
    edit_config,
    read_safetensors,
    write_raw,
    write_safetensors,
)

WEIGHTS = "model.safetensors"
PACKAGE_FILES = {
    "config.json",
    "model.onnx",
    "model.onnx.data",
    "genai_config.json",
    "mobius.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "generation_config.json",
}


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    """A writable copy of examples/tiny-llama to corrupt."""
    return copy_tiny_llama(tmp_path / "tiny")


def convert(folder: Path, **kwargs: Any) -> None:
    build(str(folder), progress=False, **kwargs)


def rewrite_weights(folder: Path, changes: dict[str, np.ndarray | None]) -> None:
    """Replace or add tensors of model.safetensors; None deletes one."""
    tensors = read_safetensors(folder / WEIGHTS)
    for name, array in changes.items():
        if array is None:
            del tensors[name]
        else:
            tensors[name] = array
    write_safetensors(folder / WEIGHTS, tensors)


# --- config.json ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", r"config\.json is not valid JSON"),
        ("[" * 100_000, r"config\.json is not valid JSON"),  # nesting deeper than the parser
        ("[1, 2]", r"config\.json must hold a JSON object"),
        ('"llama"', r"config\.json must hold a JSON object"),
    ],
    ids=["not-json", "deeply-nested", "list", "string"],
)
def test_config_not_a_json_object(tiny: Path, text: str, message: str) -> None:
    (tiny / "config.json").write_text(text)
    with pytest.raises(ConfigError, match=message):
        convert(tiny)


@pytest.mark.parametrize(
    ("key", "value"), [("eos_token_id", [1, 512]), ("bos_token_id", 9999), ("pad_token_id", 513)]
)
def test_generation_config_token_outside_the_vocabulary(tiny: Path, key: str, value) -> None:
    (tiny / "generation_config.json").write_text(json.dumps({key: value}))
    cfg = ArchitectureConfig.from_hf(json.loads((tiny / "config.json").read_text()))
    message = (
        rf"generation_config\.json: '{key}' = \d+ is outside the vocabulary \(vocab_size 512\)"
    )
    with pytest.raises(ConfigError, match=message):
        check_generation_config(tiny, cfg.vocab_size)
    with pytest.raises(ConfigError, match=message):
        convert(tiny)  # build checks it before anything is built


def test_generation_config_inside_the_vocabulary_passes(tiny: Path) -> None:
    cfg = ArchitectureConfig.from_hf(json.loads((tiny / "config.json").read_text()))
    check_generation_config(tiny, cfg.vocab_size)  # eos [1, 5], pad 1, bos 0


def test_config_not_utf8(tiny: Path) -> None:
    (tiny / "config.json").write_bytes(b"\xff\xfe{}")
    with pytest.raises(ConfigError, match=r"config\.json is not valid JSON"):
        convert(tiny)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"model_type": ...}, r"'model_type' is missing"),
        ({"model_type": ""}, r"'model_type' is missing"),
        ({"model_type": 7}, r"'model_type' must be a string, got 7"),
        ({"text_config": "llama"}, r"'text_config' must be a JSON object"),
        ({"num_attention_heads": "4"}, r"'num_attention_heads' must be an integer, got '4'"),
        ({"num_attention_heads": 4.0}, r"'num_attention_heads' must be an integer"),
        ({"num_hidden_layers": True}, r"'num_hidden_layers' must be an integer"),
        ({"num_hidden_layers": 10**9}, r"'num_hidden_layers' = 1000000000 is outside"),
        ({"vocab_size": 0}, r"'vocab_size' = 0 is outside"),
        ({"vocab_size": 10**12}, r"'vocab_size' = 1000000000000 is outside"),
        ({"hidden_size": -1}, r"'hidden_size' = -1 is outside"),
        ({"intermediate_size": 0}, r"'intermediate_size' = 0 is outside"),
        ({"max_position_embeddings": 10**15}, r"'max_position_embeddings' = \d+ is outside"),
        ({"head_dim": "16"}, r"'head_dim' must be an integer"),
        ({"rms_norm_eps": "tiny"}, r"'rms_norm_eps' must be a number"),
        ({"rms_norm_eps": -1.0}, r"'rms_norm_eps' = -1.0 must be a finite positive number"),
        ({"tie_word_embeddings": "yes"}, r"'tie_word_embeddings' must be true or false"),
        ({"eos_token_id": "</s>"}, r"'eos_token_id' must hold non-negative token ids"),
        (
            {"eos_token_id": [1, 512]},
            r"config\.json: 'eos_token_id' = 512 is outside the vocabulary \(vocab_size 512\)",
        ),
        ({"bos_token_id": 70000}, r"'bos_token_id' = 70000 is outside the vocabulary"),
        ({"pad_token_id": 600}, r"'pad_token_id' = 600 is outside the vocabulary"),
        (
            {"num_key_value_heads": 3},
            r"'num_key_value_heads' = 3 must divide 'num_attention_heads' = 4",
        ),
        (
            {"head_dim": ..., "hidden_size": 66},
            r"'hidden_size' = 66 is not divisible by 'num_attention_heads' = 4; set 'head_dim'",
        ),
        ({"hidden_act": None}, r"'hidden_act' must name an activation, got None"),
        ({"hidden_act": 3}, r"'hidden_act' must name an activation, got 3"),
        ({"rope_theta": "big"}, r"rope_theta must be a number"),
        ({"rope_scaling": [2.0]}, r"rope_scaling must be a mapping"),
        (
            {"rope_scaling": {"rope_type": "wobbly", "factor": 2.0}},
            r"rope_scaling\.rope_type: unknown rope type 'wobbly' \(known: default, linear",
        ),
        (
            {"rope_parameters": {"type": "wobbly"}},
            r"rope_parameters\.type: unknown rope type 'wobbly'",
        ),
        ({"rope_scaling": {"rope_type": "linear"}}, r"rope_scaling\.factor is required"),
        (
            {"rope_scaling": {"rope_type": "linear", "factor": -2}},
            r"rope_scaling\.factor must be positive",
        ),
        ({"partial_rotary_factor": 3}, r"partial_rotary_factor must be in \(0, 1\]"),
        ({"layer_types": ["full_attention"]}, r"'layer_types' must list one entry per layer \(2\)"),
        ({"layer_types": "full_attention"}, r"'layer_types' must list one entry per layer"),
        (
            {"layer_types": ["full_attention", "chunked_attention"]},
            r"'layer_types' holds unsupported attention type 'chunked_attention'",
        ),
        (
            {"layer_types": ["full_attention", ["sliding_attention"]]},
            r"'layer_types' holds unsupported attention type \['sliding_attention'\]",
        ),
        (
            {"layer_types": ["sliding_attention", "full_attention"]},
            r"'layer_types' asks for sliding attention but 'sliding_window' is unset",
        ),
        ({"sliding_window": "4k"}, r"'sliding_window' must be an integer"),
        ({"sliding_window": 0}, r"'sliding_window' = 0 is outside"),
    ],
    ids=lambda v: json.dumps(v, default=str)[:60] if isinstance(v, dict) else None,
)
def test_config_error_names_the_key(tiny: Path, changes: dict[str, Any], message: str) -> None:
    edit_config(tiny, **changes)
    with pytest.raises(ConfigError, match=message):
        convert(tiny)


_TINY = {"vocab_size": 128, "hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2}
_COMPASS = {
    **_TINY,
    "model_type": "cohere_compass_text",
    "layer_types": ["sliding_attention", "full_attention"],
    "sliding_window": 4,
}


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (
            {**_TINY, "model_type": "gptj", "rotary_dim": 20},
            r"'rotary_dim' = 20 must be even and at most the head size 16",
        ),
        ({**_TINY, "model_type": "nemotron"}, r"'num_key_value_heads' is missing"),
        (
            {**_COMPASS, "rope_parameters": {"full_attention": {"rope_theta": 1e4}}},
            r"'rope_parameters' has no entry for sliding_attention layers",
        ),
        (
            {
                **_COMPASS,
                "rope_parameters": {
                    "sliding_attention": None,
                    "full_attention": {"rope_theta": 1e4},
                },
            },
            r"'rope_parameters' = .* is not supported: sliding layers without rope while",
        ),
    ],
    ids=lambda v: v["model_type"] if isinstance(v, dict) else None,
)
def test_family_config_error_names_the_key(config: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        ArchitectureConfig.from_hf(config)


def test_unknown_activation_fails_at_build(tiny: Path) -> None:
    edit_config(tiny, hidden_act="mish")
    with pytest.raises(ConfigError, match=r"'hidden_act' = 'mish' is not a supported activation"):
        convert(tiny)


# --- registry -----------------------------------------------------------------------------------


def test_unregistered_model_type_suggests_the_nearest(tiny: Path) -> None:
    edit_config(tiny, model_type="llamaa")
    with pytest.raises(UnsupportedModelError, match=r"'llamaa'.*nearest supported: llama\b"):
        convert(tiny)


def test_unregistered_model_type_without_a_near_match(tiny: Path) -> None:
    edit_config(tiny, model_type="qqqqqqqq")  # near no registered type
    with pytest.raises(UnsupportedModelError) as err:
        convert(tiny)
    assert str(err.value) == (
        f"model_type 'qqqqqqqq' is not supported (run `mobius list models` for all "
        f"{len(families())})"
    )


def test_unsupported_model_is_refused_before_weights_are_read(tiny: Path) -> None:
    edit_config(tiny, model_type="reformer")
    (tiny / WEIGHTS).write_bytes(b"junk")
    with pytest.raises(UnsupportedModelError, match="'reformer'"):
        convert(tiny)


@pytest.mark.parametrize(
    ("kwargs", "allowed"),
    [
        ({"ep": "tpu9000"}, ["default"]),
        ({"dtype": "int3"}, ["f32", "f16", "bf16"]),
    ],
    ids=["ep", "dtype"],
)
def test_unknown_ep_or_dtype_lists_the_allowed_values(
    tiny: Path, kwargs: dict[str, str], allowed: list[str]
) -> None:
    (tiny / WEIGHTS).unlink()  # refused before the model is even looked at
    with pytest.raises(MobiusError) as err:
        convert(tiny, **kwargs)
    message = str(err.value)
    assert next(iter(kwargs.values())) in message
    assert all(re.search(rf"\b{value}\b", message) for value in allowed), message


# --- binding weights ----------------------------------------------------------------------------


def test_missing_tensor_is_named(tiny: Path) -> None:
    rewrite_weights(tiny, {"model.layers.1.mlp.up_proj.weight": None})
    with pytest.raises(
        WeightsError,
        match=r"1 tensor\(s\) missing from the checkpoint: "
        r"'model\.layers\.1\.mlp\.up_proj\.weight'",
    ):
        convert(tiny)


def test_shape_mismatch_names_tensor_and_both_shapes(tiny: Path) -> None:
    wrong = np.zeros((64, 64), ml_dtypes.bfloat16)
    rewrite_weights(tiny, {"model.layers.0.self_attn.k_proj.weight": wrong})
    with pytest.raises(
        WeightsError,
        match=r"'model\.layers\.0\.self_attn\.k_proj\.weight' has shape \[64, 64\], "
        r"the model expects \[32, 64\]",
    ):
        convert(tiny)


def test_unused_tensor_is_named(tiny: Path) -> None:
    rewrite_weights(tiny, {"model.layers.0.extra.weight": np.ones(4, np.float32)})
    with pytest.raises(
        WeightsError,
        match=r"1 tensor\(s\) in the checkpoint but unused by the model: "
        r"'model\.layers\.0\.extra\.weight'",
    ):
        convert(tiny)


def test_known_unused_rotary_buffer_is_accepted(tiny: Path) -> None:
    inv_freq = np.ones(8, np.float32)
    rewrite_weights(tiny, {"model.layers.0.self_attn.rotary_emb.inv_freq": inv_freq})
    convert(tiny)


def test_integer_tensor_where_a_float_weight_is_expected(tiny: Path) -> None:
    rewrite_weights(tiny, {"model.norm.weight": np.ones(64, np.int16)})
    with pytest.raises(
        WeightsError, match=r"tensor 'model\.norm\.weight' is I16, expected floating point"
    ):
        convert(tiny)


_opened: list[str] = []


def _record_opens(event: str, args: tuple[Any, ...]) -> None:
    if event == "open" and isinstance(args[0], str | bytes | os.PathLike):
        path = os.fsdecode(args[0])
        if path.endswith(".bin"):
            _opened.append(path)


sys.addaudithook(_record_opens)  # audit hooks cannot be removed: it only records .bin opens


def test_pickle_only_checkpoint_is_refused_without_opening_it(tiny: Path) -> None:
    (tiny / WEIGHTS).unlink()
    pickle = tiny / "pytorch_model.bin"
    pickle.write_bytes(b"\x80\x04not really a pickle")
    _opened.clear()
    with pytest.raises(WeightsError) as err:
        convert(tiny)
    message = str(err.value)
    assert "pytorch_model.bin" in message
    assert "safetensors" in message
    assert "never unpickles" in message
    assert not any(path.endswith("pytorch_model.bin") for path in _opened)


def test_audit_hook_sees_bin_opens(tmp_path: Path) -> None:
    """The hook the test above relies on does notice a .bin file being opened."""
    path = tmp_path / "x.bin"
    path.write_bytes(b"")
    _opened.clear()
    path.read_bytes()
    assert str(path) in _opened


def test_no_weights_at_all(tiny: Path) -> None:
    (tiny / WEIGHTS).unlink()
    with pytest.raises(
        WeightsError, match=rf"no \*\.safetensors weights in {re.escape(str(tiny))}"
    ):
        convert(tiny)


def test_a_folder_named_like_a_shard_is_not_a_shard(tiny: Path) -> None:
    (tiny / WEIGHTS).unlink()
    (tiny / WEIGHTS).mkdir()
    with pytest.raises(WeightsError, match=r"no \*\.safetensors weights"):
        convert(tiny)


# --- corrupt safetensors headers ----------------------------------------------------------------


def _entry(dtype: str = "F32", shape: list[int] | None = None, offsets: Any = None) -> dict:
    return {
        "dtype": dtype,
        "shape": [2] if shape is None else shape,
        "data_offsets": [0, 8] if offsets is None else offsets,
    }


@pytest.mark.parametrize(
    ("header", "data", "message"),
    [
        (b"{abc}", b"", r"model\.safetensors: corrupt safetensors header"),
        (b"\xff\xfe\xfd", b"", r"model\.safetensors: corrupt safetensors header"),
        (b"[" * 100_000, b"", r"model\.safetensors: corrupt safetensors header"),
        (b"[1, 2]", b"", r"model\.safetensors: corrupt safetensors header"),
        ({"w": "F32"}, b"", r"tensor 'w' has a corrupt header entry"),
        ({"w": _entry(dtype="Q4")}, bytes(8), r"tensor 'w' has unsupported dtype 'Q4'"),
        ({"w": _entry(shape=[-2])}, bytes(8), r"tensor 'w' has an invalid shape \[-2\]"),
        ({"w": _entry(shape=[1] * 9)}, bytes(8), r"tensor 'w' has an invalid shape"),
        ({"w": _entry(shape=[2.0])}, bytes(8), r"tensor 'w' has an invalid shape"),
        (
            {"w": _entry(offsets=[0, 16])},
            bytes(8),
            r"tensor 'w' has data offsets \[0, 16\] outside",
        ),
        ({"w": _entry(offsets=[8, 4])}, bytes(8), r"tensor 'w' has data offsets \[8, 4\] outside"),
        ({"w": _entry(offsets=[-8, 0])}, bytes(8), r"tensor 'w' has data offsets \[-8, 0\]"),
        ({"w": _entry(offsets=[0])}, bytes(8), r"tensor 'w' has data offsets \[0\] outside"),
        (
            {"a": _entry(offsets=[0, 8]), "b": _entry(offsets=[4, 12])},
            bytes(12),
            r"model\.safetensors: tensors 'a' and 'b' overlap in the data section",
        ),
        (
            {"a": _entry(offsets=[0, 8]), "b": _entry(offsets=[0, 8])},
            bytes(8),
            r"tensors 'a' and 'b' overlap",
        ),
        (
            {"big": _entry(shape=[4], offsets=[0, 16]), "c": _entry(shape=[1], offsets=[4, 8])},
            bytes(16),
            r"tensors 'big' and 'c' overlap",
        ),
        (
            {"w": _entry(shape=[3], offsets=[0, 8])},
            bytes(8),
            r"model\.safetensors: tensor 'w': shape \[3\] does not match its F32 byte size",
        ),
        (
            {"w": _entry(shape=[2**40, 2**40], offsets=[0, 8])},
            bytes(8),
            r"tensor 'w': shape \[1099511627776, 1099511627776\] does not match",
        ),
    ],
    ids=[
        "header-not-json",
        "header-not-utf8",
        "header-deeply-nested",
        "header-not-object",
        "entry-not-object",
        "unknown-dtype",
        "negative-dim",
        "too-many-dims",
        "float-dim",
        "offsets-past-end",
        "offsets-reversed",
        "offsets-negative",
        "offsets-one-number",
        "ranges-overlap",
        "ranges-equal",
        "range-inside-another",
        "shape-size-mismatch",
        "absurd-shape",
    ],
)
def test_corrupt_header_is_refused(
    tiny: Path, header: dict | bytes, data: bytes, message: str
) -> None:
    write_raw(tiny / WEIGHTS, header, data)
    with pytest.raises(WeightsError, match=message):
        convert(tiny)


def test_truncated_file(tiny: Path) -> None:
    (tiny / WEIGHTS).write_bytes(b"\x10\x00\x00")
    with pytest.raises(WeightsError, match=r"model\.safetensors is not a safetensors file"):
        convert(tiny)


def test_header_length_larger_than_the_file(tiny: Path) -> None:
    write_raw(tiny / WEIGHTS, b"{}")
    blob = bytearray((tiny / WEIGHTS).read_bytes())
    blob[:8] = (1 << 20).to_bytes(8, "little")
    (tiny / WEIGHTS).write_bytes(bytes(blob))
    with pytest.raises(WeightsError, match=r"model\.safetensors: header length 1048576 is absurd"):
        convert(tiny)


def test_header_length_of_eight_exabytes(tiny: Path) -> None:
    (tiny / WEIGHTS).write_bytes(b"\xff" * 8 + b"{}")
    with pytest.raises(WeightsError, match=r"model\.safetensors: header length \d+ is absurd"):
        convert(tiny)


# --- sharded checkpoints ------------------------------------------------------------------------


def shard(folder: Path, index: dict[str, str] | None = None) -> dict[str, str]:
    """Split tiny-llama's weights into two shards (+ an index unless `index` is {}), and return
    the weight map written."""
    tensors = read_safetensors(folder / WEIGHTS)
    (folder / WEIGHTS).unlink()
    names = list(tensors)
    first, second = "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"
    write_safetensors(folder / first, {n: tensors[n] for n in names[:10]})
    write_safetensors(folder / second, {n: tensors[n] for n in names[10:]})
    weight_map = {n: first for n in names[:10]} | {n: second for n in names[10:]}
    if index is not None:
        weight_map |= index
    write_index(folder, weight_map)
    return weight_map


def write_index(folder: Path, weight_map: Any) -> None:
    index = {"metadata": {"total_size": 0}, "weight_map": weight_map}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))


def test_sharded_checkpoint_converts(tiny: Path) -> None:
    shard(tiny)
    convert(tiny)


@pytest.mark.parametrize(
    "name",
    ["../x.safetensors", "/abs/x.safetensors", "sub/x.safetensors", "sub\\x.safetensors", ".."],
)
def test_index_naming_an_unsafe_shard_is_refused(tiny: Path, name: str) -> None:
    # The file exists where the name points, so only the name itself can be the reason.
    target = Path(name) if name.startswith("/") else tiny / name
    if name != ".." and not name.startswith("/"):
        target.parent.mkdir(parents=True, exist_ok=True)
        write_safetensors(target, {"model.extra": np.ones(2, np.float32)})
    shard(tiny, {"model.extra": name})
    with pytest.raises(
        WeightsError, match=rf"refusing unsafe shard file name {re.escape(repr(name))}"
    ):
        convert(tiny)


@pytest.mark.parametrize("value", [5, ["x.safetensors"], None, ""])
def test_index_with_a_non_name_is_refused(tiny: Path, value: Any) -> None:
    shard(tiny, {"model.extra": value})
    with pytest.raises(WeightsError, match="refusing unsafe shard file name"):
        convert(tiny)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{oops", r"model\.safetensors\.index\.json is malformed"),
        ("[1]", r"model\.safetensors\.index\.json is malformed"),
        ('{"metadata": {}}', r"model\.safetensors\.index\.json is malformed"),
        ('{"weight_map": ["a"]}', r"'weight_map' must be an object"),
        ("[" * 100_000, r"model\.safetensors\.index\.json is malformed"),
    ],
    ids=["not-json", "not-object", "no-weight-map", "weight-map-list", "deeply-nested"],
)
def test_malformed_index(tiny: Path, text: str, message: str) -> None:
    (tiny / "model.safetensors.index.json").write_text(text)
    with pytest.raises(WeightsError, match=message):
        convert(tiny)


def test_index_naming_a_missing_shard(tiny: Path) -> None:
    shard(tiny)
    (tiny / "model-00002-of-00002.safetensors").unlink()
    with pytest.raises(
        WeightsError,
        match=r"index\.json names shard 'model-00002-of-00002\.safetensors', which is missing",
    ):
        convert(tiny)


def test_tensor_in_two_shards(tiny: Path) -> None:
    tensors = read_safetensors(tiny / WEIGHTS)
    write_safetensors(
        tiny / "extra.safetensors", {"model.norm.weight": tensors["model.norm.weight"]}
    )
    with pytest.raises(WeightsError, match=r"tensor 'model\.norm\.weight' appears in two shards"):
        convert(tiny)


def test_tensor_in_two_indexed_shards(tiny: Path) -> None:
    weight_map = shard(tiny)
    tensors = read_safetensors(tiny / "model-00002-of-00002.safetensors")
    first = tiny / "model-00001-of-00002.safetensors"
    write_safetensors(
        first, read_safetensors(first) | {"model.norm.weight": tensors["model.norm.weight"]}
    )
    write_index(tiny, weight_map)
    with pytest.raises(WeightsError, match=r"tensor 'model\.norm\.weight' appears in two shards"):
        convert(tiny)


# --- the CLI, in process --------------------------------------------------------------------


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main([*argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def bad_models(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    """Folders that fail in each layer, with the text their one error line must hold."""
    unsupported = copy_tiny_llama(tmp_path / "unsupported")
    edit_config(unsupported, model_type="llamaa")
    bad_config = copy_tiny_llama(tmp_path / "bad-config")
    edit_config(bad_config, hidden_size="wide")
    missing = copy_tiny_llama(tmp_path / "missing-tensor")
    rewrite_weights(missing, {"model.norm.weight": None})
    pickles = copy_tiny_llama(tmp_path / "pickles")
    (pickles / WEIGHTS).rename(pickles / "pytorch_model.bin")
    return {
        "unsupported": (unsupported, "model_type 'llamaa' is not supported; nearest supported"),
        "config": (bad_config, "'hidden_size' must be an integer, got 'wide'"),
        "missing-tensor": (missing, "'model.norm.weight'"),
        "pickles": (pickles, "never unpickles"),
        "no-folder": (tmp_path / "nowhere", "no such folder"),
    }


@pytest.mark.parametrize(
    "case", ["unsupported", "config", "missing-tensor", "pickles", "no-folder"]
)
def test_cli_error_is_one_line_and_writes_nothing(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    bad_models: dict[str, tuple[Path, str]],
    case: str,
) -> None:
    folder, expected = bad_models[case]
    output = tmp_path / "out"
    code, out, err = run_cli(capsys, "build", "--model", str(folder), "--output", str(output))
    assert code != 0
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("mobius: error: ")
    assert expected in lines[0]
    assert not output.exists()


@pytest.mark.parametrize("where", ["before", "after"])
def test_cli_debug_raises_with_traceback(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, where: str
) -> None:
    folder = copy_tiny_llama(tmp_path / "m")
    edit_config(folder, model_type="llamaa")
    args = ["build", "--model", str(folder), "--output", str(tmp_path / "out")]
    argv = ["--debug", *args] if where == "before" else [*args, "--debug"]
    with pytest.raises(UnsupportedModelError, match="llamaa"):
        main(argv)
    assert not (tmp_path / "out").exists()


def test_cli_list_models_names_every_family(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "list", "models")
    assert code == 0
    assert err == ""
    listed = [line.split()[0] for line in out.splitlines() if "not yet (" not in line]
    assert sorted(listed) == sorted(families())


def test_failed_save_leaves_no_package_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = build(str(TINY_LLAMA), progress=False)

    def write_then_fail(model: object, path: Path, progress: bool) -> None:
        path.write_bytes(b"half a model")
        raise OSError("disk full")

    monkeypatch.setattr("converter.package.package.write_graph", write_then_fail)
    output = tmp_path / "out"
    with pytest.raises(MobiusError, match=r"writing the package to .* failed \(disk full\)"):
        package.save(output, progress=False)
    assert not output.exists() or list(output.iterdir()) == []


# --- the real console script: one success, one error ------------------------------------------


def _mobius() -> str:
    script = shutil.which("mobius") or str(Path(sys.executable).parent / "mobius")
    assert Path(script).exists(), "the `mobius` console script is not installed"
    return script


def test_console_script_builds_tiny_llama(tmp_path: Path) -> None:
    output = tmp_path / "pkg"
    result = subprocess.run(
        [_mobius(), "build", "--model", str(TINY_LLAMA), "--output", str(output), "--no-progress"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert str(output.resolve()) in result.stdout
    assert {p.name for p in output.iterdir()} == PACKAGE_FILES
    manifest = json.loads((output / "mobius.json").read_text())
    assert manifest["ep"] == "default" and manifest["dtype"] == "f32"


def test_console_script_error_is_one_line(tmp_path: Path) -> None:
    folder = copy_tiny_llama(tmp_path / "m")
    rewrite_weights(folder, {"model.layers.0.self_attn.q_proj.weight": None})
    output = tmp_path / "out"
    result = subprocess.run(
        [_mobius(), "build", "--model", str(folder), "--output", str(output)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        "mobius: error: 1 tensor(s) missing from the checkpoint: "
        "'model.layers.0.self_attn.q_proj.weight'"
    ]
    assert not output.exists()
