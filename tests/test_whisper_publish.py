"""A speech export through the loopback Hub, end to end: `mobius convert --publish pr` of a tiny
Whisper repo opens one pull request that adds `onnx/` and nothing else (Optimum's and
Transformers.js' pair, and onnxruntime-genai's folder per variant), and the card's own
onnxruntime-genai, Transformers.js and Optimum snippets, run as written, print transformers'
greedy transcription.

The snippets are taken from the card text; the test changes only what a reader of this PR
would: the revision (the card says to add it until the PR is merged), the sample audio's URL (a
local tone, no network; under Node the samples themselves, as the card says) and, for Node, the
Hub's address (the loopback one, as HF_ENDPOINT is for Python)."""

from __future__ import annotations

import json
import re
import subprocess
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
from tests.transformers_js import MODULES

BOT, BOT_TOKEN = "mobius-whisper-bot", "hf_mobiusWhisperBotToken01"
MAX_LENGTH = 64  # the genai snippet's max_length, prompt included
JS_NEW_TOKENS = OPTIMUM_NEW_TOKENS = 64  # the snippets' max_new_tokens, after the start token
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
        **{**CONFIG, "max_target_positions": 2 * MAX_LENGTH},
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
    # as Whisper's repos name it: Transformers.js decodes speech with a WhisperTokenizer
    settings = folder / "tokenizer_config.json"
    settings.write_text(
        json.dumps({**json.loads(settings.read_text()), "tokenizer_class": "WhisperTokenizer"})
    )
    transformers.WhisperFeatureExtractor(feature_size=CONFIG["num_mel_bins"]).save_pretrained(
        folder
    )
    return folder, model, words


def _snippet(card: str, fence: str, marker: str) -> str:
    """The card's one block opened by `fence` that contains `marker`."""
    [code] = [b for b in re.findall(f"{fence}(.*?)```", card, re.S) if marker in b]
    return code


def _substituted(code: str, mapping: dict[str, str]) -> str:
    for old, new in mapping.items():
        assert code.count(old) == 1, f"the snippet should hold {old!r} once:\n{code}"
        code = code.replace(old, new)
    return code


def _node(transformers_js, *args) -> str:
    done = subprocess.run(
        [transformers_js.node, *map(str, args)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-6000:]
    return done.stdout


def _transformers_text(model, words, features: np.ndarray, prompt: list[int], new: int) -> str:
    """transformers' greedy transcription: up to `new` tokens after the prompt, or its end."""
    ids = torch.tensor([prompt])
    with torch.no_grad():
        encoded = model.get_encoder()(torch.from_numpy(features))
        while ids.shape[1] < len(prompt) + new and ids[0, -1] != model.config.eos_token_id:
            logits = model(encoder_outputs=encoded, decoder_input_ids=ids).logits
            ids = torch.cat([ids, logits[:, -1:].argmax(-1)], dim=1)
    assert ids.shape[1] > len(prompt) + 1  # something to transcribe
    return words.decode(ids[0], skip_special_tokens=True)


@pytest.fixture(scope="module")
def published(fake_hub, checkpoint, tmp_path_factory):
    """`mobius convert --publish pr` of the tiny Whisper: the repo id, the source files and the
    pull request's ref."""
    fake_hub.add_token(BOT_TOKEN, BOT)
    repo_id = f"org-{uuid.uuid4().hex[:8]}/tiny-whisper"
    source = {p.name: p.read_bytes() for p in checkpoint[0].iterdir()}
    fake_hub.add_repo(repo_id, source)
    args = ["convert", repo_id, "--ep", "default,cpu", "--dtype", "f32", "--publish", "pr"]
    out = tmp_path_factory.mktemp("out")
    with pytest.MonkeyPatch.context() as env:
        env.setenv("HF_TOKEN", BOT_TOKEN)
        assert main([*args, "--output", str(out), "--no-progress"]) == 0
    [pr] = fake_hub.repos[repo_id].pull_requests()
    return repo_id, source, pr.ref


def _tone() -> np.ndarray:
    time = np.arange(2 * SAMPLING_RATE) / SAMPLING_RATE
    noise = np.random.default_rng(2).standard_normal(time.size)
    return 0.3 * np.sin(2 * np.pi * 440 * time) * np.exp(-time) + 0.05 * noise


def test_pull_request_adds_onnx_only(fake_hub, published):
    repo_id, source, ref = published
    tree = fake_hub.repos[repo_id].files(ref)
    optimum = {"onnx/encoder_model.onnx", "onnx/decoder_model_merged.onnx"}
    cpu = {f"onnx/cpu-f32/{name}" for name in ("encoder_model.onnx", "decoder_model_merged.onnx")}
    genai = {f"onnx/{variant}/{name}" for variant in ("default-f32", "cpu-f32") for name in VARIANT}
    added = {"onnx/README.md", *optimum, *cpu, *genai}
    assert {path for path in tree if path not in source} == added
    assert all(tree[path] == data for path, data in source.items())  # nothing else changed
    assert "pipeline_tag: automatic-speech-recognition" in tree["onnx/README.md"].decode()


def test_card_genai_snippet_transcribes(fake_hub, checkpoint, published, tmp_path):
    _, model, words = checkpoint
    repo_id, _, ref = published
    card = fake_hub.repos[repo_id].files(ref)["onnx/README.md"].decode()
    wav = tmp_path / "tone.wav"
    _write_wav(wav, _tone())
    download = f'snapshot_download("{repo_id}", '
    reader = {download: f'{download}revision="{ref}", ', SAMPLE_AUDIO: wav.as_uri()}
    code = _substituted(_snippet(card, "```python\n", "import onnxruntime_genai"), reader)
    work = tmp_path / "reader"
    work.mkdir()
    printed = run(Block(tmp_path / "README.md", 0, "python", True, code), work, environment())

    # the reference: transformers on the features genai's processor makes of the same file
    downloaded = snapshot_download(repo_id, revision=ref, allow_patterns=["onnx/cpu-f32/*"])
    processor = og.Model(f"{downloaded}/onnx/cpu-f32").create_multimodal_processor()
    inputs = processor(["".join(SPECIAL[1:])], audios=og.Audios.open(str(wav)))
    features = inputs["audio_features"].as_numpy()
    prompt = inputs["input_ids"].as_numpy()[0].tolist()
    expected = _transformers_text(model, words, features, prompt, MAX_LENGTH - len(prompt))
    assert printed.strip() == expected


def test_card_transformers_js_snippet_transcribes(
    fake_hub, transformers_js, checkpoint, published, tmp_path
):
    folder, model, words = checkpoint
    repo_id, _, ref = published
    card = fake_hub.repos[repo_id].files(ref)["onnx/README.md"].decode()
    samples = _tone().astype(np.float32)
    imports = 'import { pipeline } from "@huggingface/transformers";'
    reader = {  # the loopback Hub, the PR's revision, and Node's samples for the URL
        imports: f'import {{ env, pipeline }} from "@huggingface/transformers";\n'
        f'env.remoteHost = "{fake_hub.url}/";\nenv.cacheDir = "{tmp_path / "cache"}";',
        '{ dtype: "fp32" }': f'{{ dtype: "fp32", revision: "{ref}" }}',
        f'"{SAMPLE_AUDIO}"': f"new Float32Array({json.dumps(samples.tolist())})",
    }
    code = _substituted(_snippet(card, "```js\n", imports), reader)
    script = tmp_path / "snippet.mjs"
    script.write_text(code)
    (tmp_path / "node_modules").symlink_to(MODULES)
    printed = _node(transformers_js, script)

    extractor = transformers.WhisperFeatureExtractor.from_pretrained(folder)
    features = extractor(samples, sampling_rate=SAMPLING_RATE, return_tensors="np").input_features
    start = [model.generation_config.decoder_start_token_id]
    expected = _transformers_text(model, words, features, start, JS_NEW_TOKENS)
    # the pipeline's answer as the snippet's console.log prints it
    answer = json.dumps({"text": expected})
    assert printed == _node(transformers_js, "-e", f"console.log({answer})")


def test_card_optimum_snippet_transcribes(
    fake_hub, legacy_clients, checkpoint, published, tmp_path
):
    """In the venv of Optimum and transformers 4.57 (tests/legacy_clients), the loopback Hub
    reached through HF_ENDPOINT as the Python snippets above."""
    folder, model, words = checkpoint
    repo_id, _, ref = published
    card = fake_hub.repos[repo_id].files(ref)["onnx/README.md"].decode()
    wav = tmp_path / "tone.wav"
    _write_wav(wav, _tone())
    processor = f'AutoProcessor.from_pretrained("{repo_id}"'
    onnx = f'ORTModelForSpeechSeq2Seq.from_pretrained("{repo_id}", '
    reader = {
        processor: f'{processor}, revision="{ref}"',
        onnx: f'{onnx}revision="{ref}", ',
        SAMPLE_AUDIO: wav.as_uri(),
    }
    code = _substituted(_snippet(card, "```python\n", "ORTModelForSpeechSeq2Seq"), reader)
    env = {k: v for k, v in environment().items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [str(legacy_clients.python), "-c", code],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-6000:]

    heard = np.frombuffer(wav.read_bytes()[44:], "<i2") / 32768  # as the snippet reads it
    extractor = transformers.WhisperFeatureExtractor.from_pretrained(folder)
    features = extractor(heard, sampling_rate=SAMPLING_RATE, return_tensors="np").input_features
    start = [model.generation_config.decoder_start_token_id]
    expected = _transformers_text(model, words, features, start, OPTIMUM_NEW_TOKENS)
    assert done.stdout == f"{[expected]}\n"  # the snippet prints the batch's list
