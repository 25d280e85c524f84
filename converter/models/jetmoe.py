"""JetMoE: experts in the MLP (Granite MoE's stacked layout, plus an output bias) and a
mixture of attention heads: each token's top-k experts project its queries (num_key_value_heads
heads each) and take back their heads' outputs, over keys and values every expert shares."""

import onnx_ir as ir
from onnxscript import nn

from converter.components.linear import Linear
from converter.config import ConfigReader
from converter.models.decoder import DecoderBody, DecoderLayer, DecoderLM
from converter.models.granitemoe import GraniteMoe, GraniteMoeRules, Router
from converter.registry import Family


class JetMoeMoe(GraniteMoe):
    def __init__(self, cfg, dtype: ir.DataType, ep):
        super().__init__(cfg, dtype, ep)
        self.bias = nn.Parameter([cfg.hidden_size], dtype)

    def forward(self, op, x):
        return op.Add(super().forward(op, x), self.bias)


class Stack(nn.Module):
    """Each expert's projection `weight` [out, in], stacked; called: [E, in, out]."""

    def __init__(self, shape: list[int], dtype: ir.DataType):
        super().__init__()
        self.weight = nn.Parameter(shape, dtype)

    def forward(self, op):
        return op.Transpose(self.weight, perm=[0, 2, 1])


class AttentionExperts(nn.Module):
    """Per expert a query projection `input_linear` [E, D, H] and an output projection
    `output_linear` [E, H, D] (D: num_key_value_heads * head_dim), picked by `router`."""

    def __init__(self, cfg, dtype: ir.DataType, width: int):
        super().__init__()
        self.experts, self.top_k, self.width = cfg.moe.num_experts, cfg.moe.top_k, width
        self.router = Router(cfg, dtype)
        self.input_linear = Stack([self.experts, width, cfg.hidden_size], dtype)
        self.output_linear = Stack([self.experts, cfg.hidden_size, width], dtype)
        self.bias = nn.Parameter([cfg.hidden_size], dtype)

    def forward(self, op, step: str, *args):
        """`step` (route, queries or outputs) of the experts, run in this module's scope so
        its parameters take their checkpoint names."""
        return getattr(self, step)(op, *args)

    def route(self, op, flat):
        """Each token's picks [T, k] and their weights: a softmax over the picks' logits."""
        top, picked = op.TopK(self.router(op, flat), [self.top_k], axis=-1, _outputs=2)
        return picked, op.Softmax(top, axis=-1)

    def queries(self, op, flat, picked):
        """[T, k, D]: each pick's query projection (every expert's, gathered at the picks)."""
        every = op.MatMul(flat, self.input_linear(op))  # [E, T, D]
        every = op.Transpose(every, perm=[1, 0, 2])
        index = op.Unsqueeze(picked, [2])
        index = op.Expand(index, op.Concat(op.Shape(picked), [self.width], axis=0))
        return op.GatherElements(every, index, axis=1)

    def outputs(self, op, heads, picked, weights):
        """[T, H]: each pick's heads [T, k, D] weighted, through its expert's output
        projection, summed, plus the bias."""
        expert_ids = op.Constant(value_ints=list(range(self.experts)))
        chosen = op.Equal(op.Unsqueeze(picked, [2]), expert_ids)  # [T, k, E]
        weight = op.Unsqueeze(weights, [2])
        per_expert = op.Where(chosen, weight, op.Mul(weight, 0.0))
        mixed = op.MatMul(op.Transpose(per_expert, perm=[0, 2, 1]), heads)  # [T, E, D]
        mixed = op.Transpose(mixed, perm=[1, 0, 2])
        out = op.MatMul(mixed, self.output_linear(op))  # [E, T, H]
        return op.Add(op.ReduceSum(out, [0], keepdims=0), self.bias)


class MixtureOfHeads(nn.Module):
    """Queries from the token's attention experts, keys and values from `kv_proj`; a token's
    query heads ordered kv head by kv head, so head h reads kv head h // top_k as grouped
    attention does (transformers tiles the kv heads and orders queries pick by pick)."""

    def __init__(self, cfg, dtype: ir.DataType, spec, packed: bool = False):
        super().__init__()
        self.spec, self.top_k = spec, cfg.moe.top_k
        width = spec.kv_heads * spec.head_dim
        self.experts = AttentionExperts(cfg, dtype, width)
        self.kv_proj = Linear(cfg.hidden_size, 2 * width, False, dtype)

    def _regroup(self, op, x, a: int, b: int):
        """[..., a, b, head_dim] heads -> [..., b, a, head_dim], flattened as [T, a*b*d]."""
        d = self.spec.head_dim
        x = op.Transpose(op.Reshape(x, [-1, a, b, d]), perm=[0, 2, 1, 3])
        return op.Reshape(x, [-1, a * b * d])

    cache_through_kernel = True  # keys and values reach the cache only through the kernel

    def forward(self, op, x, kernel, past_key, past_value):
        spec, k = self.spec, self.top_k
        flat = op.Flatten(x, axis=2)
        picked, weights = self.experts(op, "route", flat)
        q = self._regroup(op, self.experts(op, "queries", flat, picked), k, spec.kv_heads)
        batch_seq = op.Shape(x, start=0, end=2)
        q = op.Reshape(q, op.Concat(batch_seq, [-1], axis=0))
        key, value = op.Split(self.kv_proj(op, x), axis=-1, num_outputs=2, _outputs=2)
        y, present_key, present_value = kernel(op, q, key, value, past_key, past_value, spec)
        heads = op.Reshape(
            self._regroup(op, y, spec.kv_heads, k), [-1, k, spec.kv_heads * spec.head_dim]
        )
        out = self.experts(op, "outputs", heads, picked, weights)
        return op.Reshape(out, op.Shape(x)), present_key, present_value


class JetMoeLayer(DecoderLayer):
    attention_cls = MixtureOfHeads
    attention_name = "self_attention"
    moe_cls = JetMoeMoe


class JetMoeBody(DecoderBody):
    layer_cls = JetMoeLayer


class JetMoeLM(DecoderLM):
    body_cls = JetMoeBody


class JetMoeRules(GraniteMoeRules):
    """`kv_channels` is the head size; the query heads are num_key_value_heads per pick."""

    def read(self, r: ConfigReader):
        r.alias(kv_channels="head_dim")
        r.raw["num_attention_heads"] = r.int("num_key_value_heads") * self.top_k(r)
        if r.float("rms_norm_eps", default=1e-6) != 1e-6:
            r.refuse("rms_norm_eps", "JetMoE's layer norms keep 1e-6 whatever it says")
        return super().read(r)


FAMILIES = [
    Family(
        "jetmoe",
        JetMoeLM,
        "experts in the MLP and in attention: each token's top-k experts project its queries "
        "and outputs over shared keys and values",
        ("jetmoe/jetmoe-8b",),
        rules=JetMoeRules(),
        category="moe",
    ),
]
