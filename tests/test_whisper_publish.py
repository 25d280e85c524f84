"""A speech export through the loopback Hub, end to end: `mobius convert --publish pr` of a tiny
Whisper repo opens one pull request that adds `onnx/` and nothing else (Optimum's and
Transformers.js' pair, and onnxruntime-genai's folder per variant), and the card's own
onnxruntime-genai snippet, run as written, transcribes transformers' greedy tokens.

The snippet is taken from the card text; the test changes only what a reader of this PR would:
the revision (the card says to add `revision="refs/pr/<number>"` until the PR is merged) and the
sample audio's URL (a local tone, no network)."""

from __future__ import annotations

import re
import uuid

import numpy as np
import onnxruntime_genai as og
import pytest
import torch
import transformers
from huggingface_hub import snapshot_download

from mobius.cli import main
from model_cards.encoder_card import SAMPLE_AUDIO
from tests.doc_blocks import Block, environment, run
from tests.test_genai_whisper import CONFIG, SAMPLING_RATE, SPECIAL, _write_wav, tokenizer

BOT, BOT_TOKEN = "mobius-whisper-bot", "hf_mobiusWhisperBotToken01"
MAX_LENGTH = 64  # the snippet's max_length, prompt included
VARIANT = {  # what each variant folder adds: genai's graphs and the files genai reads
    "encoder.onnx",
    "encoder.onnx.data",
    "decoder.onnx",
    "decoder.onnx.data",
    "genai_config.json",
    "audio_processor_config.json",
    "config.json",
    "generation_config.json",
    "preprocessor_config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "mobius.json",
}


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """test_genai_whisper's tiny Whisper, with room for the snippet's max_length."""
    folder = tmp_path_factory.mktemp("tiny-whisper")
    words = tokenizer()
    start, end = words.convert_tokens_to_ids(SPECIAL[1]), words.convert_tokens_to_ids(SPECIAL[0])
    config = transformers.WhisperConfig(
        **{**CONFIG, "max_target_positions": MAX_LENGTH},
        vocab_size=len(words),
        pad_token_id=end,
        bos_token_id=end,
        eos_token_id=end,
        decoder_start_token_id=start,
        begin_suppress_tokens=None,
    )
    torch.manual_seed(0)
    model = transformers.WhisperForConditionalGeneration(config).eval()
    with torch.no_grad():  # tokens that depend on the audio
        for tensor in model.parameters():
            tensor.add_(torch.randn_like(tensor) * 0.2)
    model.save_pretrained(folder)
    words.save_pretrained(folder)
    transformers.WhisperFeatureExtractor(feature_size=CONFIG["num_mel_bins"]).save_pretrained(
        folder
    )
    return folder, model, words


def _snippet(card: str, marker: str) -> str:
    """The card's one python block that contains `marker`."""
    [code] = [b for b in re.findall(r"```python\n(.*?)```", card, re.S) if marker in b]
    return code


def _substituted(code: str, mapping: dict[str, str]) -> str:
    for old, new in mapping.items():
        assert code.count(old) == 1, f"the snippet should hold {old!r} once:\n{code}"
        code = code.replace(old, new)
    return code


def _transformers_text(model, words, features: np.ndarray, prompt: list[int]) -> str:
    """transformers' greedy transcription of genai's features, up to the snippet's length."""
    ids = torch.tensor([prompt])
    with torch.no_grad():
        while ids.shape[1] < MAX_LENGTH and ids[0, -1] != model.config.eos_token_id:
            logits = model(input_features=torch.from_numpy(features), decoder_input_ids=ids).logits
            ids = torch.cat([ids, logits[:, -1:].argmax(-1)], dim=1)
    assert ids.shape[1] > len(prompt) + 1  # something to transcribe
    return words.decode(ids[0], skip_special_tokens=True)


def test_pull_request_card_snippet_transcribes(fake_hub, checkpoint, tmp_path, monkeypatch):
    folder, model, words = checkpoint
    fake_hub.add_token(BOT_TOKEN, BOT)
    monkeypatch.setenv("HF_TOKEN", BOT_TOKEN)
    repo_id = f"org-{uuid.uuid4().hex[:8]}/tiny-whisper"
    source = {p.name: p.read_bytes() for p in folder.iterdir()}
    fake_hub.add_repo(repo_id, source)
    args = ["convert", repo_id, "--ep", "default,cpu", "--dtype", "f32", "--publish", "pr"]
    assert main([*args, "--output", str(tmp_path / "out"), "--no-progress"]) == 0
    [pr] = fake_hub.repos[repo_id].pull_requests()
    tree = fake_hub.repos[repo_id].files(pr.ref)
    optimum = {"onnx/encoder_model.onnx", "onnx/decoder_model_merged.onnx"}
    cpu = {f"onnx/cpu-f32/{name}" for name in ("encoder_model.onnx", "decoder_model_merged.onnx")}
    genai = {f"onnx/{variant}/{name}" for variant in ("default-f32", "cpu-f32") for name in VARIANT}
    assert {path for path in tree if path not in source} == {
        "onnx/README.md",
        *optimum,
        *cpu,
        *genai,
    }
    assert all(tree[path] == data for path, data in source.items())  # nothing else changed
    card = tree["onnx/README.md"].decode()
    assert "pipeline_tag: automatic-speech-recognition" in card

    time = np.arange(2 * SAMPLING_RATE) / SAMPLING_RATE
    noise = np.random.default_rng(2).standard_normal(time.size)
    wav = tmp_path / "tone.wav"
    _write_wav(wav, 0.3 * np.sin(2 * np.pi * 440 * time) * np.exp(-time) + 0.05 * noise)
    download = f'snapshot_download("{repo_id}", '
    reader = {download: f'{download}revision="{pr.ref}", ', SAMPLE_AUDIO: wav.as_uri()}
    code = _substituted(_snippet(card, "import onnxruntime_genai"), reader)
    work = tmp_path / "reader"
    work.mkdir()
    printed = run(Block(tmp_path / "README.md", 0, "python", True, code), work, environment())

    # the reference: transformers on the features genai's processor makes of the same file
    downloaded = snapshot_download(repo_id, revision=pr.ref, allow_patterns=["onnx/cpu-f32/*"])
    processor = og.Model(f"{downloaded}/onnx/cpu-f32").create_multimodal_processor()
    inputs = processor(["".join(SPECIAL[1:])], audios=og.Audios.open(str(wav)))
    features = inputs["audio_features"].as_numpy()
    prompt = inputs["input_ids"].as_numpy()[0].tolist()
    assert printed.strip() == _transformers_text(model, words, features, prompt)
