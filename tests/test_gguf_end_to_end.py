"""examples/tiny-llama (trained) written to one GGUF file, weights and tokenizer, the way
llama.cpp's converter writes them: `mobius build-gguf` of that file generates in
onnxruntime-genai exactly what `mobius build` of the original folder generates."""

from __future__ import annotations

from pathlib import Path

import onnxruntime_genai as og
import transformers

from mobius.cli import main
from tests.genai_greedy import genai_greedy
from tests.gguf_files import write_gguf
from tests.gguf_tokenizers import byte_level_metadata
from tests.test_genai import NEW_TOKENS

TINY_LLAMA = Path(__file__).parents[1] / "examples" / "tiny-llama"
PROMPT = "The river ran past the old mill, and"


def _greedy(package: Path) -> tuple[list[int], list[int]]:
    """The package's own tokenization of PROMPT, and its greedy continuation."""
    prompt = list(og.Tokenizer(og.Model(str(package))).encode(PROMPT))
    return prompt, genai_greedy(package, len(prompt) + NEW_TOKENS, prompt)


def test_a_gguf_file_generates_what_its_source_folder_does(tmp_path):
    model = transformers.AutoModelForCausalLM.from_pretrained(TINY_LLAMA)
    tokenizer = byte_level_metadata(TINY_LLAMA, "gpt-2")
    write_gguf(model, tmp_path / "tiny.gguf", tokenizer=tokenizer)
    args = ["--output", str(tmp_path / "from-gguf"), "--ep", "cpu", "--no-progress"]
    assert main(["build-gguf", str(tmp_path / "tiny.gguf"), *args]) == 0
    args = ["--output", str(tmp_path / "from-folder"), "--ep", "cpu", "--no-progress"]
    assert main(["build", "--model", str(TINY_LLAMA), *args]) == 0
    prompt, tokens = _greedy(tmp_path / "from-gguf")
    assert (prompt, tokens) == _greedy(tmp_path / "from-folder")
    assert len(tokens) == NEW_TOKENS
