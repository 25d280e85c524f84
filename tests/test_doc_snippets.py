"""README.md and the docs run as written: every `bash` and `python` block, in order, in a
reader's folder next to a checkout's examples/, with the Hub ids they name served by the
loopback Hub (the tiny Llama under each). How blocks are marked: tests/doc_blocks.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.doc_blocks import blocks, environment, run_document

ROOT = Path(__file__).parents[1]
TINY_LLAMA = ROOT / "examples" / "tiny-llama"
SERVED = ("Qwen/Qwen2.5-0.5B-Instruct", "HuggingFaceTB/SmolLM2-135M")
READER, TOKEN = "doc-reader", "hf_docReaderToken0123456789abcdef"


@pytest.fixture
def reader(fake_hub, tmp_path) -> tuple[Path, dict[str, str]]:
    """The reader's working folder and environment (a Hub token in HF_TOKEN)."""
    files = {path.name: path.read_bytes() for path in TINY_LLAMA.iterdir()}
    for repo_id in SERVED:
        if repo_id not in fake_hub.repos:
            fake_hub.add_repo(repo_id, files)
    fake_hub.add_token(TOKEN, READER)
    (tmp_path / "examples").symlink_to(TINY_LLAMA.parent)
    return tmp_path, environment(HF_TOKEN=TOKEN, MOBIUS_DATA_DIR=str(tmp_path / "jobs"))


def test_readme_runs_as_written(reader, fake_hub):
    cwd, env = reader
    outputs = run_document(ROOT / "README.md", cwd, env)
    by_code = {block.code: out for block, out in outputs.items()}
    chat = next(out for code, out in by_code.items() if "og.Generator" in code)
    assert len(chat.split()) >= 20, chat  # generated text, decoded
    validation = next(out for code, out in by_code.items() if code.startswith("mobius validate"))
    assert "PASSED" in validation and "transformers" in validation
    assert (cwd / "out" / "smollm2-f16" / "model.onnx").is_file()
    [pr] = fake_hub.repos[SERVED[0]].pull_requests()
    assert pr.author == READER and "onnx/cpu-int4/model.onnx" in fake_hub.repos[SERVED[0]].files(
        pr.ref
    )


DOCS = sorted(path.name for path in (ROOT / "docs").glob("*.md"))
# Documents whose every block installs, serves or trains (each marked `no-run`), or only shows.
SHOWN_ONLY = {
    "architecture.md",
    "benchmarks.md",
    "bot.md",
    "execution-providers.md",
    "space.md",
    "supported-models.md",
    "testing.md",
}


@pytest.mark.parametrize("document", DOCS)
def test_doc_runs_as_written(reader, document):
    outputs = run_document(ROOT / "docs" / document, *reader)
    assert bool(outputs) == (document not in SHOWN_ONLY), f"{document}: {len(outputs)} ran"


def test_blocks_say_whether_they_run(tmp_path):
    doc = tmp_path / "doc.md"
    doc.write_text(
        "# t\n```bash\necho hi\n```\n```bash no-run\npip install x\n```\n"
        "```text\nmobius build\n```\n````python\nprint('```')\n````\n"
    )
    found = [(b.line, b.language, b.runs, b.code) for b in blocks(doc)]
    assert found == [
        (2, "bash", True, "echo hi\n"),
        (5, "bash", False, "pip install x\n"),
        (8, "text", False, "mobius build\n"),
        (11, "python", True, "print('```')\n"),
    ]
    doc.write_text("text\n\n```\nbare\n```\n")
    with pytest.raises(ValueError, match=r"doc.md:3: a fenced block without a language"):
        blocks(doc)


def test_a_failing_block_names_itself(tmp_path):
    doc = tmp_path / "doc.md"
    doc.write_text("```bash\necho before\nfalse\necho after\n```\n")
    with pytest.raises(AssertionError, match=r"doc.md:1 \(bash\) exited 1") as failure:
        run_document(doc, tmp_path, environment())
    assert "--- stdout\nbefore\n--- stderr" in str(failure.value)  # -e: it stopped at false
