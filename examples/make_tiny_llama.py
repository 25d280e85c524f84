"""Regenerate `examples/tiny-llama`: a tiny Llama and BPE tokenizer, both trained on CORPUS.

The model is trained with torch as a next-token LM on random windows of the tokenized corpus,
then saved as bfloat16. The output is deterministic (fixed seed, deterministic single-threaded
training, sorted JSON), so running this script twice on one machine yields byte-identical files.
It needs the test extras (``pip install -e .[test]``: torch, transformers, tokenizers) and about
half a minute of CPU.

    python examples/make_tiny_llama.py
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import save_file
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import LlamaConfig, LlamaForCausalLM

OUT_DIR = Path(__file__).resolve().parent / "tiny-llama"
SEED = 1234
VOCAB_SIZE = 512  # special tokens + 256 byte-level symbols + learned merges
HIDDEN, INTERMEDIATE, LAYERS, HEADS, KV_HEADS, HEAD_DIM = 64, 128, 2, 4, 2, 16
STEPS, BATCH, WINDOW, LR = 300, 16, 64, 3e-3  # next-token training on random corpus windows

BOS, EOS, USER, ASSISTANT, SYSTEM, END = (
    "<|begin_of_text|>",
    "<|end_of_text|>",
    "<|user|>",
    "<|assistant|>",
    "<|system|>",
    "<|end|>",
)
SPECIAL_TOKENS = [BOS, EOS, USER, ASSISTANT, SYSTEM, END]  # ids 0..5, in this order

# The template starts with bos, like Llama 3: onnxruntime-genai encodes without special tokens,
# and transformers' apply_chat_template(tokenize=True) does too, so both see one bos.
CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{% for message in messages %}"
    "{{ '<|' + message['role'] + '|>\\n' + message['content'] + '<|end|>\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>\\n' }}{% endif %}"
)

CORPUS = """\
A river begins as a thin line of water high in the hills. Rain falls on the slopes, snow melts
in the spring, and small streams gather in the folds of the land until they meet and grow
stronger. By the time the water reaches the valley it has a name, a voice, and a direction.
It carries sand and stones, it cuts new banks after every storm, and it feeds the fields and
the towns that grew up along its edges. People have always settled near rivers, because a river
brings water to drink, fish to eat, and a road that leads to the sea.

The weather in the valley changes quickly. In the morning the sky may be clear and blue, and
by noon a wall of grey clouds can roll over the ridge. The wind turns cold, the first drops
fall on the dry road, and then the rain comes down hard for an hour. Farmers watch the clouds
and the birds, and they say that swallows fly low before a storm. In the evening the air is
fresh again, the puddles shine in the last light, and the river runs a little faster and a
little browner than it did the day before.

Cooking is a quiet way to end a long day. Start with an onion, a clove of garlic, and a spoon
of oil in a warm pan. Stir slowly until the onion turns soft and golden, then add a handful of
chopped tomatoes and a pinch of salt. Let the sauce simmer while the water for the pasta comes
to a boil. Taste it, add pepper or a few leaves of fresh basil, and do not rush. A good meal
does not need many things; it needs time, attention, and people to share it with.

The old mill by the bridge still stands, although its wheel stopped turning many years ago.
Children play on the stone steps in the summer, and in the winter the ice makes strange shapes
around the wooden posts. Walkers stop there to rest, to look at the water, and to talk about
the weather, the harvest, and the news from the city. The river does not listen; it keeps
moving, patient and steady, toward the wide grey sea.

Bread is one of the oldest foods we know. Flour, water, salt, and a little yeast are mixed into
a dough, which is folded and pressed until it becomes smooth. Then it rests in a warm place and
slowly rises. When it goes into a hot oven, the crust turns brown and the kitchen fills with a
smell that makes everyone hungry. Fresh bread with butter and a bowl of soup is a simple supper
that many people love on a cold and rainy night.

Questions and answers help us learn. What is the weather like today? It is cloudy, with a
light wind from the west, and it may rain later. Where does the river go? It flows through the
valley, past the mill and the bridge, and on to the sea. How do you make a simple sauce? You
cook onions and tomatoes slowly, with salt, pepper, and a little patience.
"""


def train_tokenizer() -> Tokenizer:
    """Train a byte-level BPE tokenizer on CORPUS with the special tokens at ids 0..5."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        min_frequency=1,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(CORPUS.splitlines(keepends=True), trainer=trainer)
    bos_id = tok.token_to_id(BOS)
    tok.post_processor = processors.TemplateProcessing(
        single=f"{BOS} $A", pair=f"{BOS} $A {BOS}:1 $B:1", special_tokens=[(BOS, bos_id)]
    )
    if tok.get_vocab_size() != VOCAB_SIZE:
        raise RuntimeError(f"expected {VOCAB_SIZE} tokens, got {tok.get_vocab_size()}")
    return tok


def train(config: dict[str, Any], ids: list[int]) -> tuple[dict[str, torch.Tensor], float]:
    """Train a LlamaForCausalLM built from `config` on random windows of `ids`.

    Returns the bfloat16 state dict and the mean loss of the last 20 steps. Seeded, deterministic
    and single-threaded, so the weights are byte-identical from run to run on one machine.
    """
    threads, deterministic = torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    torch.manual_seed(SEED)
    try:
        model = LlamaForCausalLM(LlamaConfig(**config, attn_implementation="eager"))
        model.train()
        data = torch.tensor(ids)
        optimizer = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=0.01)
        schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: 1 - s / STEPS)
        losses = []
        for _ in range(STEPS):
            starts = torch.randint(0, len(ids) - WINDOW, (BATCH,))
            batch = torch.stack([data[s : s + WINDOW] for s in starts.tolist()])
            loss = model(input_ids=batch, labels=batch).loss
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            schedule.step()
            losses.append(loss.item())
    finally:
        torch.set_num_threads(threads)
        torch.use_deterministic_algorithms(deterministic)
    state = {k: v.detach().to(torch.bfloat16).contiguous() for k, v in model.state_dict().items()}
    return state, sum(losses[-20:]) / 20


def write_json(path: Path, data: dict[str, Any]) -> None:
    path.write_text(json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


def main() -> None:
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    tok = train_tokenizer()
    tok.save(str(OUT_DIR / "tokenizer.json"))
    vocab = tok.get_vocab_size()
    bos_id, eos_id, end_id = (tok.token_to_id(t) for t in (BOS, EOS, END))

    write_json(
        OUT_DIR / "tokenizer_config.json",
        {
            "tokenizer_class": "PreTrainedTokenizerFast",
            "bos_token": BOS,
            "eos_token": EOS,
            "pad_token": EOS,
            "additional_special_tokens": [USER, ASSISTANT, SYSTEM, END],
            "add_bos_token": True,
            "add_eos_token": False,
            "clean_up_tokenization_spaces": False,
            "model_max_length": 512,
            "chat_template": CHAT_TEMPLATE,
        },
    )
    write_json(
        OUT_DIR / "special_tokens_map.json",
        {
            "bos_token": BOS,
            "eos_token": EOS,
            "pad_token": EOS,
            "additional_special_tokens": [USER, ASSISTANT, SYSTEM, END],
        },
    )
    write_json(
        OUT_DIR / "generation_config.json",
        {
            "bos_token_id": bos_id,
            "eos_token_id": [eos_id, end_id],
            "pad_token_id": eos_id,
            "do_sample": False,
        },
    )
    config = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "vocab_size": vocab,
        "hidden_size": HIDDEN,
        "intermediate_size": INTERMEDIATE,
        "num_hidden_layers": LAYERS,
        "num_attention_heads": HEADS,
        "num_key_value_heads": KV_HEADS,
        "head_dim": HEAD_DIM,
        "max_position_embeddings": 512,
        "rms_norm_eps": 1e-5,
        "rope_theta": 10000.0,
        "hidden_act": "silu",
        "attention_bias": False,
        "mlp_bias": False,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
        "bos_token_id": bos_id,
        "eos_token_id": eos_id,
        "pad_token_id": eos_id,
    }
    write_json(OUT_DIR / "config.json", config)
    weights, loss = train(config, tok.encode(CORPUS).ids)
    save_file(weights, str(OUT_DIR / "model.safetensors"), metadata={"format": "pt"})
    print(f"wrote {OUT_DIR} (vocab={vocab}, bos={bos_id}, eos={eos_id}, end={end_id})")
    print(f"trained {STEPS} steps, final loss {loss:.3f}")


if __name__ == "__main__":
    main()
