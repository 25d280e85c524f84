"""Regenerate `examples/tiny-llama`: a random-weight Llama with a small trained BPE tokenizer.

The output is deterministic (fixed seed, sorted JSON), so running this script twice yields
byte-identical files. It needs only ``tokenizers``, ``numpy``, ``ml_dtypes`` and ``safetensors``.

    python examples/make_tiny_llama.py
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
from safetensors.numpy import save_file
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

OUT_DIR = Path(__file__).resolve().parent / "tiny-llama"
SEED = 1234
VOCAB_SIZE = 512  # special tokens + 256 byte-level symbols + learned merges
HIDDEN, INTERMEDIATE, LAYERS, HEADS, KV_HEADS, HEAD_DIM = 64, 128, 2, 4, 2, 16

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


def make_weights(vocab: int) -> dict[str, np.ndarray]:
    """Random HF Llama state dict in bfloat16.

    A plain std=0.02 init gives near-uniform attention, so the next token would depend almost
    only on the previous one and RoPE / KV-cache bugs would go unnoticed. Larger q/k/v/o/MLP and
    embedding scales make the logits depend on context and position.
    """
    rng = np.random.default_rng(SEED)

    def mat(rows: int, cols: int, std: float) -> np.ndarray:
        return rng.normal(0.0, std, size=(rows, cols)).astype(ml_dtypes.bfloat16)

    def norm() -> np.ndarray:
        return (1.0 + rng.normal(0.0, 0.05, size=(HIDDEN,))).astype(ml_dtypes.bfloat16)

    q_dim, kv_dim = HEADS * HEAD_DIM, KV_HEADS * HEAD_DIM
    weights = {"model.embed_tokens.weight": mat(vocab, HIDDEN, 0.2)}
    for i in range(LAYERS):
        p = f"model.layers.{i}"
        weights |= {
            f"{p}.self_attn.q_proj.weight": mat(q_dim, HIDDEN, 0.2),
            f"{p}.self_attn.k_proj.weight": mat(kv_dim, HIDDEN, 0.2),
            f"{p}.self_attn.v_proj.weight": mat(kv_dim, HIDDEN, 0.1),
            f"{p}.self_attn.o_proj.weight": mat(HIDDEN, q_dim, 0.1),
            f"{p}.mlp.gate_proj.weight": mat(INTERMEDIATE, HIDDEN, 0.1),
            f"{p}.mlp.up_proj.weight": mat(INTERMEDIATE, HIDDEN, 0.1),
            f"{p}.mlp.down_proj.weight": mat(HIDDEN, INTERMEDIATE, 0.1),
            f"{p}.input_layernorm.weight": norm(),
            f"{p}.post_attention_layernorm.weight": norm(),
        }
    weights["model.norm.weight"] = norm()
    weights["lm_head.weight"] = mat(vocab, HIDDEN, 0.2)
    return weights


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
    write_json(
        OUT_DIR / "config.json",
        {
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
        },
    )
    save_file(make_weights(vocab), str(OUT_DIR / "model.safetensors"), metadata={"format": "pt"})
    print(f"wrote {OUT_DIR} (vocab={vocab}, bos={bos_id}, eos={eos_id}, end={end_id})")


if __name__ == "__main__":
    main()
