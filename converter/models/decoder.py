"""The generic decoder-only LM: Llama and the families that differ from it by switches.

Llama, Mistral, Qwen2/3, Phi-3, Gemma 1/2/3, Granite and OLMo-2 are this file with
the switches of their `ArchitectureConfig` (norm layout, q/k norms, fused
projections, softcaps, multipliers, sliding windows, local rope).
"""

from __future__ import annotations

import onnx_ir as ir
from onnxscript import nn

from converter.components import Attention, Embedding, GatedMLP, Linear, make_norm
from converter.components.attention import AttentionSpec, GroupQueryAttention, StandardAttention
from converter.components.cache import LayerCache, kv_cache
from converter.components.linear import Bias
from converter.components.moe import SparseMoe
from converter.components.static_attention import StaticAttention
from converter.config import ArchitectureConfig
from converter.dtypes import NAME_OF
from converter.execution_providers import (
    GATHER_Q4,
    PACKED_GATE_UP,
    PACKED_QKV,
    SKIP_NORM,
    ExecutionProvider,
)
from converter.execution_providers import GQA as GQA_FUSION
from converter.tasks.text_generation import DecoderInputs

# Norm attributes each layout owns, in the order they apply.
_LAYOUT_NORMS = {
    "pre": ("input_layernorm", "post_attention_layernorm"),
    "sandwich": (
        "input_layernorm",
        "post_attention_layernorm",
        "pre_feedforward_layernorm",
        "post_feedforward_layernorm",
    ),
    "post": ("post_attention_layernorm", "post_feedforward_layernorm"),
    "parallel": ("input_layernorm",),
}


class DecoderLayer(nn.Module):
    """Attention and MLP under `attention_name` and `mlp_name`, and the norms of the config's
    layout, each under the name `layout_norms` gives it (a family whose checkpoint names them
    otherwise overrides these)."""

    attention_cls = Attention
    mlp_cls = GatedMLP
    moe_cls = SparseMoe  # the MLP of layers the config gives experts
    attention_name, mlp_name = "self_attn", "mlp"
    layout_norms = _LAYOUT_NORMS

    def __init__(self, cfg: ArchitectureConfig, index: int, dtype: ir.DataType, ep):
        super().__init__()
        self.layout, self.index = cfg.layout, index
        spec = attention_spec(cfg, index)
        attention = self.attention_cls(cfg, dtype, spec, packed=ep.has(PACKED_QKV))
        setattr(self, self.attention_name, attention)
        setattr(self, self.mlp_name, self.make_mlp(cfg, index, dtype, ep))
        for name in self.layout_norms[cfg.layout]:
            setattr(self, name, make_norm(cfg, cfg.hidden_size, dtype))
        self.residual_multiplier = cfg.residual_multiplier

    def make_mlp(self, cfg: ArchitectureConfig, index: int, dtype: ir.DataType, ep):
        if cfg.moe is not None and cfg.moe.is_sparse(index):
            return self.moe_cls(cfg, dtype, ep)
        return self.mlp_cls(cfg, dtype, packed=ep.has(PACKED_GATE_UP))

    def expected_fusions(self, plan) -> dict[str, int]:
        """Its norms that read a residual sum (a skip-norm fusion absorbs each): the input
        norm of every layer but the first (which reads the embeddings), and in pre/sandwich
        layouts the norm before the MLP; post-norm layers normalize outputs, not sums."""
        if not plan.has(SKIP_NORM):
            return {}
        after_previous_layer = int(self.index > 0)
        per_layout = {"pre": 1 + after_previous_layer, "sandwich": 1 + after_previous_layer}
        per_layout |= {"post": 0, "parallel": after_previous_layer}
        return {"skip_norms": per_layout[self.layout]}

    def _residual(self, op, x, h):
        if self.residual_multiplier != 1.0:
            h = op.Mul(h, self.residual_multiplier)
        return op.Add(x, h)

    def forward(self, op, x, kernel, past_key, past_value):
        attention, mlp = getattr(self, self.attention_name), getattr(self, self.mlp_name)

        def attend(h):
            return attention(op, h, kernel, past_key, past_value)

        norms = [getattr(self, name) for name in self.layout_norms[self.layout]]
        if self.layout == "parallel":
            h = norms[0](op, x)
            a, key, value = attend(h)
            return op.Add(op.Add(x, a), mlp(op, h)), key, value
        if self.layout == "post":
            after_attention, after_mlp = norms
            a, key, value = attend(x)
            x = self._residual(op, x, after_attention(op, a))
            return self._residual(op, x, after_mlp(op, mlp(op, x))), key, value
        a, key, value = attend(norms[0](op, x))
        if self.layout == "sandwich":
            _, after_attention, before_mlp, after_mlp = norms
            x = self._residual(op, x, after_attention(op, a))
            m = mlp(op, before_mlp(op, x))
            return self._residual(op, x, after_mlp(op, m)), key, value
        x = self._residual(op, x, a)
        return self._residual(op, x, mlp(op, norms[1](op, x))), key, value


class DecoderBody(nn.Module):
    """Embeddings, layers and the final norm, under the attribute names a family's checkpoint
    uses (`embedding_name`, `layers_name`, `final_norm_name`); `make_embedding` and
    `make_final_norm` build the two ends where a family's differ."""

    layer_cls = DecoderLayer
    embedding_name = "embed_tokens"
    layers_name = "layers"
    final_norm_name = "norm"
    gqa_refused: str | None = None  # why this family's attention cannot be GroupQueryAttention

    def __init__(self, cfg: ArchitectureConfig, dtype: ir.DataType, ep: ExecutionProvider):
        super().__init__()
        self.kernel = AttentionKernelChoice(cfg, ep, dtype, self.gqa_refused)
        setattr(self, self.embedding_name, self.make_embedding(cfg, dtype))
        layers = [self.layer_cls(cfg, i, dtype, ep) for i in range(cfg.num_hidden_layers)]
        setattr(self, self.layers_name, nn.ModuleList(layers))
        setattr(self, self.final_norm_name, self.make_final_norm(cfg, dtype))

    def make_embedding(self, cfg: ArchitectureConfig, dtype: ir.DataType) -> nn.Module:
        return Embedding(cfg.vocab_size, cfg.hidden_size, dtype, cfg.embedding_multiplier)

    def make_final_norm(self, cfg: ArchitectureConfig, dtype: ir.DataType) -> nn.Module | None:
        """The norm after the last layer (None: a family without one)."""
        return make_norm(cfg, cfg.hidden_size, dtype)

    @property
    def embedding(self) -> nn.Module:
        """The token embedding, whose `weight` a tied head reads."""
        return getattr(self, self.embedding_name)

    def expected_fusions(self, plan) -> dict[str, int]:
        counts = {}
        if plan.has(SKIP_NORM):  # the final norm reads the last sum
            counts["skip_norms"] = int(getattr(self, self.final_norm_name) is not None)
        if plan.has(GQA_FUSION):
            counts[GQA_FUSION] = len(getattr(self, self.layers_name)) if self.kernel.gqa else 0
        return counts

    def embed(self, op, inputs: DecoderInputs):
        return self.embedding(op, inputs.tokens, inputs.embedded)

    def after_layer(self, op, index: int, x):
        """The hidden states after layer `index`, as the next layer reads them."""
        return x

    def make_kernel(self, op, inputs: DecoderInputs):
        """The attention kernel of one graph (a family whose masks read more overrides it)."""
        tokens, mask, positions = inputs.tokens, inputs.attention_mask, inputs.position_ids
        if inputs.static is None:  # (a family's kernel choice may take no static caches)
            return self.kernel.make(op, tokens, mask, positions)
        return self.kernel.make(op, tokens, mask, positions, inputs.static)

    def forward(self, op, inputs: DecoderInputs):
        x = self.embed(op, inputs)
        kernel = self.make_kernel(op, inputs)
        presents = []
        layers = getattr(self, self.layers_name)
        for index, (layer, (past_key, past_value)) in enumerate(
            zip(layers, inputs.past, strict=True)
        ):
            x, key, value = layer(op, x, kernel, past_key, past_value)
            x = self.after_layer(op, index, x)
            presents.append((key, value))
        final_norm = getattr(self, self.final_norm_name)
        return (x if final_norm is None else final_norm(op, x)), presents


def attention_spec(cfg: ArchitectureConfig, index: int) -> AttentionSpec:
    scale = cfg.attention_scale
    if cfg.scale_by_inverse_layer:  # GPT-2's scale_attn_by_inverse_layer_idx
        scale /= index + 1
    return AttentionSpec(
        heads=cfg.num_attention_heads,
        kv_heads=cfg.kv_heads_of(index),
        head_dim=cfg.head_dim_of(index),
        scale=scale,
        softcap=cfg.attn_logit_softcap or 0.0,
        window=cfg.window_of(index),
        rope=cfg.rope_of(index),
        alibi=cfg.alibi,
    )


def layer_caches(cfg: ArchitectureConfig) -> list[LayerCache]:
    """Each layer's self-attention KV cache (sliding layers keep a sliding one)."""
    return [
        kv_cache(cfg.kv_heads_of(i), cfg.head_dim_of(i), cfg.window_of(i))
        for i in range(cfg.num_hidden_layers)
    ]


def _own_cache_use(module) -> bool:
    """An attention module whose forward is not the generic one's, unless the class that
    writes that forward declares `cache_through_kernel` (its keys and values reach the cache
    only through the kernel's call, so any kernel's cache contract holds)."""
    if not isinstance(getattr(module, "spec", None), AttentionSpec):
        return False
    owner = next(c for c in type(module).__mro__ if "forward" in vars(c))
    return owner is not Attention and not vars(owner).get("cache_through_kernel", False)


class AttentionKernelChoice:
    """GroupQueryAttention where the EP has it and its constraints hold, else standard ops.

    `fallbacks` records why a fused kernel was not used, for mobius.json and the report.
    """

    def __init__(
        self,
        cfg: ArchitectureConfig,
        ep: ExecutionProvider,
        dtype: ir.DataType,
        refused: str | None = None,
    ):
        self.dtype, self.ep = dtype, ep
        layers = range(cfg.num_hidden_layers)
        self.windows = sorted({cfg.window_of(i) for i in layers}, key=str)
        head_dims = sorted({cfg.head_dim_of(i) for i in layers})
        if cfg.alibi is not None:
            refused = refused or "ALiBi position biases reach attention as an additive mask"
        reason = ""
        if ep.has(GQA_FUSION):
            reasons = [refused] + [
                ep.gqa_unsupported_reason(
                    head_dim,
                    NAME_OF[dtype],
                    windowed=self.windows != [None],
                    softcap=bool(cfg.attn_logit_softcap),
                    sinks=cfg.attention_sinks,
                )
                for head_dim in head_dims
            ]
            reason = next((r for r in reasons if r), None)
        self.gqa = reason is None
        ropes = {cfg.rope_of(i) for i in layers} - {None}
        dims = sorted(r.dim for r in ropes)
        rotary_reasons = [ep.gqa_rotary_unsupported_reason(d, dims) for d in head_dims]
        rotary_reason = next((r for r in rotary_reasons if r), None)
        if any(r.mrope_section for r in ropes):
            rotary_reason = (
                "multimodal rope turns by position_ids, which the kernel's rotary ignores"
            )
        self.rotary_inside = rotary_reason is None
        self.fallbacks = []
        if reason:
            self.fallbacks.append(f"standard Attention op instead of GroupQueryAttention: {reason}")
        elif self.gqa and ropes and rotary_reason:
            self.fallbacks.append(f"RotaryEmbedding outside GroupQueryAttention: {rotary_reason}")

    def make(self, op, tokens, attention_mask, position_ids, static=None):
        """The kernel for one graph, with its shared inputs (masks, lengths, rotary tables);
        `tokens` (ids or embeddings) gives the new sequence length. `static`
        (StaticCacheInputs): caches of fixed size the standard kernel scatters into
        (GroupQueryAttention writes into them itself, fed by the attention mask)."""
        if self.gqa:
            return GroupQueryAttention(
                op, self.dtype, attention_mask, position_ids, self.rotary_inside, self.ep
            )
        if static is not None:
            return StaticAttention(op, self.dtype, tokens, position_ids, static, self.windows)
        return StandardAttention(op, self.dtype, tokens, attention_mask, position_ids, self.windows)


class DecoderLM(nn.Module):
    """The body under `body_name` and the LM head under `head_name`: a Linear (biased with
    `head_bias`), or the body's embedding table when the config ties them, plus a bias of the
    head's own with `head_bias` (CTRL, GPT-J)."""

    body_cls = DecoderBody
    body_name = "model"
    head_name = "lm_head"
    head_bias = False
    gathers_tokens = True  # False where another graph embeds the tokens (a VLM's decoder)

    def __init__(self, cfg: ArchitectureConfig, dtype: ir.DataType, ep: ExecutionProvider):
        super().__init__()
        self.cfg = cfg
        setattr(self, self.body_name, self.body_cls(cfg, dtype, ep))
        setattr(self, self.head_name, self.make_head(cfg, dtype))

    def make_head(self, cfg: ArchitectureConfig, dtype: ir.DataType) -> nn.Module | None:
        """A Linear; tied to the embedding table, only the head's own bias (or nothing)."""
        if not cfg.tie_word_embeddings:
            return Linear(cfg.hidden_size, cfg.logits_size, self.head_bias, dtype, head=True)
        return Bias(cfg.vocab_size, dtype) if self.head_bias else None

    @property
    def body(self) -> DecoderBody:
        return getattr(self, self.body_name)

    def embedding_table(self):
        return self.body.embedding.weight

    def caches(self) -> list[LayerCache]:
        return layer_caches(self.cfg)

    @property
    def writes_cache_in_place(self) -> bool:
        """Its attention kernel writes new keys and values into a max-length past itself
        (GroupQueryAttention); otherwise a static cache's graph scatters them."""
        return self.body.kernel.gqa

    def static_cache_refused(self) -> str | None:
        """Why its caches cannot be fixed-size ones written in place (None: they can). The
        static contract covers the generic body's attention over one plain key/value cache
        per layer; a family that keeps other caches or builds other masks is refused."""
        body = type(self.body)
        if type(self).caches is not DecoderLM.caches:
            return "its layers do not each keep one plain key/value cache"
        generic = (DecoderBody.forward, DecoderBody.make_kernel, AttentionKernelChoice.make)
        kernel = getattr(self.body, "kernel", None)
        found = (getattr(body, "forward", None), getattr(body, "make_kernel", None))
        if (*found, getattr(type(kernel), "make", None)) != generic:
            return "its attention reads masks or caches the generic decoder does not build"
        own = sorted({type(m).__name__ for m in self.modules() if _own_cache_use(m)})
        if own:
            return f"its attention ({', '.join(own)}) reaches the cache or kernel its own way"
        if self.writes_cache_in_place:
            return None
        if self.cfg.alibi is not None:
            return "ALiBi biases are counted from each row's first real token, by the mask"
        if self.cfg.attention_sinks:
            return "attention sinks need GroupQueryAttention (--ep cpu) for a static cache"
        return None

    def fallbacks(self) -> list[str]:
        """Why fused kernels were not used: the attention kernel's, then any its parts give."""
        found = list(self.body.kernel.fallbacks)
        for module in self.modules():
            if module is not self and hasattr(module, "fallbacks"):
                found += [f for f in module.fallbacks() if f not in found]
        return found

    def expected_fusions(self, plan) -> dict[str, int]:
        fusions = tied_head_fusions(self.cfg, plan)
        return fusions if self.gathers_tokens else {**fusions, "int4_embeddings": 0}

    def forward(self, op, inputs: DecoderInputs):
        hidden, presents = self.body(op, inputs)
        if inputs.last_only:
            hidden = last_position(op, hidden, inputs.attention_mask)
        return self.logits(op, hidden), presents

    def logits(self, op, hidden):
        """The head's (or the tied table's, plus the head's own bias if it keeps one), then
        the logit multiplier and softcap."""
        cfg, head = self.cfg, getattr(self, self.head_name)
        if cfg.tie_word_embeddings:
            logits = tied_logits(op, cfg, self.embedding_table(), hidden)
            if head is not None:
                logits = head(op, logits)
        else:
            logits = head(op, hidden)
        if cfg.logits_multiplier != 1.0:
            logits = op.Mul(logits, cfg.logits_multiplier)
        if cfg.final_logit_softcap:
            cap = cfg.final_logit_softcap
            logits = op.Mul(op.Tanh(op.Div(logits, cap)), cap)
        return logits


def last_position(op, hidden, attention_mask):
    """[batch, 1, hidden]: each row's last new token, the last of `hidden` [batch, sequence,
    hidden] whose `attention_mask` [batch, past + sequence] is 1 (the last column when rows are
    unpadded or left-padded; the last real token of a right-padded row, as onnxruntime-genai
    pads a batch of prompts). Taken after the final norm, which so keeps its skip-norm fusion
    with the last residual sum: the norm costs the hidden size per row, the head the hidden
    size times the vocabulary."""
    sequence = op.Shape(hidden, start=1, end=2)
    total = op.Shape(attention_mask, start=1, end=2)
    new = op.Slice(attention_mask, op.Sub(total, sequence), total, [1])  # [batch, sequence]
    columns = op.Range(1, op.Add(op.Squeeze(sequence), 1), 1)  # 1 .. sequence
    # a row with no new real token (all padding) reads -1, its last column
    last = op.Sub(op.ReduceMax(op.Mul(new, columns), [1], keepdims=1), 1)  # [batch, 1]
    return op.Unsqueeze(op.GatherND(hidden, last, batch_dims=1), [1])


def declared_fusions(module, plan, fusion: str) -> int:
    """How many `fusion`s one run of `module` produces, by its parts' declarations (a family
    whose layers run more than once declares the other runs with it)."""
    parts = (m.expected_fusions(plan) for m in module.modules() if hasattr(m, "expected_fusions"))
    return sum(counts.get(fusion, 0) for counts in parts)


def tied_head_fusions(cfg: ArchitectureConfig, plan) -> dict[str, int]:
    """int4 builds (unless the head stays float) multiply a head tied to the embeddings by a
    quantized copy of the table, and EPs with GatherBlockQuantized read quantized rows too."""
    int4 = plan.int4
    if int4 is None or int4.head_bits is None:
        return {}
    return {
        "int4_matmuls": int(cfg.tie_word_embeddings),
        "int4_embeddings": int(plan.has(GATHER_Q4)),
    }


def tied_logits(op, cfg: ArchitectureConfig, table, hidden):
    """hidden times the embedding table, as the Gemm int4 lowering recognizes as a tied head."""
    flat = op.Flatten(hidden, axis=2)  # [batch * sequence, the table's width]
    logits = op.Gemm(flat, table, transB=1)
    batch_seq = op.Shape(hidden, start=0, end=2)
    return op.Reshape(logits, op.Concat(batch_seq, [cfg.vocab_size], axis=0))
