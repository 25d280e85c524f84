"""Build features together: fp8-kv-cache and prune-prefill-prefix combine; the static cache
refuses both by name rather than ignoring one."""

from __future__ import annotations

import numpy as np
import onnx
import pytest

from converter import build
from converter.errors import ConfigError
from converter.validate.runtime import OnnxDecoder
from tests.checkpoints import TINY_LLAMA

PROMPT = np.array([[5, 17, 42, 9, 3, 28]])


@pytest.mark.parametrize("ep", ["default", "cpu"])
def test_fp8_cache_with_pruned_prefill(ep, tmp_path):
    both = build(
        str(TINY_LLAMA), ep=ep, features="fp8-kv-cache,prune-prefill-prefix", progress=False
    )
    fp8 = build(str(TINY_LLAMA), ep=ep, features=["fp8-kv-cache"], progress=False)
    both_dir = both.save(tmp_path / "both", progress=False)
    fp8_dir = fp8.save(tmp_path / "fp8", progress=False)
    graph = onnx.load(both_dir / "model.onnx", load_external_data=False).graph
    assert "GatherND" in {n.op_type for n in graph.node}
    assert {i.type.tensor_type.elem_type for i in graph.input if "past" in i.name} == {
        onnx.TensorProto.FLOAT8E4M3FN
    }
    steps = [np.array([[11]]), np.array([[7]])]
    mask = np.ones_like(PROMPT)
    pruned = OnnxDecoder(both_dir).run(PROMPT, mask, steps)
    full = OnnxDecoder(fp8_dir).run(PROMPT, mask, steps)
    assert pruned[0].shape[1] == 1
    np.testing.assert_allclose(pruned[0], full[0][:, -1:], atol=1e-5)
    for a, b in zip(pruned[1:], full[1:], strict=True):
        np.testing.assert_allclose(a, b, atol=1e-5)


@pytest.mark.parametrize("other", ["fp8-kv-cache", "prune-prefill-prefix"])
def test_static_cache_refuses_what_it_does_not_combine_with(other):
    with pytest.raises(ConfigError, match="static cache does not combine with"):
        build(str(TINY_LLAMA), features=["static-cache", other], max_seq_len=64, progress=False)
