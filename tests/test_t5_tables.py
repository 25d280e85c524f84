"""T5 checkpoints whose stacks carry their own token tables (google/madlad400-3b-mt keeps
encoder.embed_tokens, decoder.embed_tokens and lm_head and no shared.weight; older dumps repeat
shared.weight under both names): each stack embeds with its own table, as transformers does,
and the package matches transformers loading the same files."""

from __future__ import annotations

import numpy as np
import pytest
import safetensors.torch
import torch
import transformers

from converter import build
from converter.validate.seq2seq_runtime import OnnxSeq2Seq
from tests.parity.seq2seq_cases import CASES
from tests.parity.seq2seq_reference import case_inputs, make_seq2seq, reference


def _rewrite(folder, own_tables: bool, keep_shared: bool) -> None:
    path = folder / "model.safetensors"
    tensors = safetensors.torch.load_file(path)
    shared = tensors["shared.weight"] if keep_shared else tensors.pop("shared.weight")
    for name, seed in (("encoder.embed_tokens", 1), ("decoder.embed_tokens", 2), ("lm_head", 3)):
        noise = torch.randn(shared.shape, generator=torch.Generator().manual_seed(seed))
        if own_tables or name != "lm_head":
            tensors[f"{name}.weight"] = noise if own_tables else shared.clone()
    safetensors.torch.save_file(tensors, path, metadata={"format": "pt"})


@pytest.mark.parametrize(
    ("own_tables", "keep_shared"),
    [(True, False), (False, True)],
    ids=["own-tables-no-shared", "repeated-shared"],
)
def test_stacks_read_their_own_tables(tmp_path, own_tables, keep_shared):
    case = CASES["t5:v1.1"]
    make_seq2seq("t5:v1.1", case, tmp_path / "hf")  # (transformers 5 saves shared.weight only)
    _rewrite(tmp_path / "hf", own_tables, keep_shared)
    model = transformers.AutoModelForSeq2SeqLM.from_pretrained(tmp_path / "hf").eval()
    feeds, ids = case_inputs("t5:v1.1", case, model)
    encoded, logits = reference(model, feeds, ids)
    build(str(tmp_path / "hf"), ep="cpu", progress=False).save(tmp_path / "onnx", progress=False)
    runtime = OnnxSeq2Seq(tmp_path / "onnx")
    kept = feeds["attention_mask"][..., None]
    assert np.abs((runtime.encode(feeds) - encoded) * kept).max() <= 1e-4
    steps = np.concatenate(runtime.run(feeds, ids, 2), axis=1)
    assert np.abs(steps - logits).max() <= 1e-4
