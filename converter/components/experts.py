"""The experts of one MoE layer, stacked per projection, and the checkpoint layouts they read.

Each form stacks the weights in the layout it multiplies with, assembled from the checkpoint
when the package is written (converter.weights.Assembly):

- `dense` (standard ops): `gate_up` [E, H, 2I] (gate columns, then up) and `down` [E, I, H];
  every expert runs on every token and the routing weights, zero for the experts a token did
  not pick, weight the sum. Exact and portable, at num_experts / top_k times the expert FLOPs.
- `kernel` (com.microsoft.MoE): `fc1` [E, 2I, H] with gate and up rows interleaved (the one
  SwiGLU layout onnxruntime's CPU kernel takes, swiglu_fusion=1) and `fc2` [E, H, I].

A layout names an expert stack's tensors in a checkpoint and gives each projection as
[E, out, in] (`gate`, `up`, `down`) and, where experts have biases, [E, out].
"""

from __future__ import annotations

import numpy as np
import onnx_ir as ir
from onnxscript import nn

from converter.components.activations import activation
from converter.weights import Assembly, EitherShape


class PerExpert:
    """`{prefix}.{i}.{gate}.weight`, ...: one torch Linear per expert and projection (what
    transformers saves for most families); `expert` spells an expert's key from its index
    (Switch Transformers: "expert_{}")."""

    def __init__(
        self,
        gate: str = "gate_proj",
        up: str = "up_proj",
        down: str = "down_proj",
        expert: str = "{}",
    ):
        self.names = {"gate": gate, "up": up, "down": down}
        self.expert = expert

    def key(self, prefix: str, index: int, name: str, kind: str) -> str:
        return f"{prefix}.{self.expert.format(index)}.{name}.{kind}"

    def weight(self, prefix: str, part: str, shape: tuple[int, int, int]) -> Assembly:
        experts, out, inner = shape
        name = self.names[part]
        tensors = tuple((self.key(prefix, i, name, "weight"), (out, inner)) for i in range(experts))
        return Assembly(tensors, np.stack)

    def gate_up_stack(self, prefix: str, shape: tuple[int, int, int], kernel: bool) -> Assembly:
        """Gate and up of every expert written straight into the form's stack (interleaved
        rows [E, 2I, H] for the kernel, gate then up columns [E, H, 2I] for the dense form),
        so no stacked copy of either is made on the way (it would double the peak memory)."""
        experts, inner, hidden = shape
        parts = tuple(
            (self.key(prefix, i, self.names[part], "weight"), (inner, hidden))
            for part in ("gate", "up")
            for i in range(experts)
        )

        def build(arrays: list[np.ndarray]) -> np.ndarray:
            gates, ups = arrays[:experts], arrays[experts:]
            if kernel:
                out = np.empty((experts, 2 * inner, hidden), arrays[0].dtype)
                for e in range(experts):
                    out[e, 0::2], out[e, 1::2] = gates[e], ups[e]
                return out
            out = np.empty((experts, hidden, 2 * inner), arrays[0].dtype)
            for e in range(experts):
                out[e, :, :inner], out[e, :, inner:] = gates[e].T, ups[e].T
            return out

        return Assembly(parts, build)

    def bias(self, prefix: str, part: str, shape: tuple[int, int]) -> Assembly:
        experts, out = shape
        name = self.names[part]
        tensors = tuple((self.key(prefix, i, name, "bias"), (out,)) for i in range(experts))
        return Assembly(tensors, np.stack)


class InputMajor:
    """`{prefix}.{gate_up}` [E, H, 2I] (gate columns, then up) and `{prefix}.{down}` [E, I, H]:
    experts saved as torch parameters multiplied from the right (Llama 4, Aria)."""

    def __init__(self, gate_up: str, down: str):
        self.gate_up, self.down = gate_up, down

    def weight(self, prefix: str, part: str, shape: tuple[int, int, int]) -> Assembly:
        experts, out, inner = shape
        if part == "down":
            name = (f"{prefix}.{self.down}", (experts, inner, out))
            return Assembly((name,), lambda arrays: transposed(arrays[0]))
        half = slice(0, out) if part == "gate" else slice(out, 2 * out)
        name = (f"{prefix}.{self.gate_up}", (experts, inner, 2 * out))
        return Assembly((name,), lambda arrays: transposed(arrays[0][:, :, half]))


class EitherMajor:
    """`{prefix}.{gate_up}` and `{prefix}.{down}` stacked either output-major ([E, 2I, H], gate
    rows then up, and [E, H, I]: what transformers 5's save_pretrained writes of Qwen3-VL-MoE)
    or input-major ([E, H, 2I] and [E, I, H]: the Hub's checkpoints), told apart by shape as
    transformers tells them (output-major where both fit)."""

    def __init__(self, gate_up: str, down: str):
        self.gate_up, self.down = gate_up, down

    def weight(self, prefix: str, part: str, shape: tuple[int, int, int]) -> Assembly:
        experts, out, inner = shape
        if part == "down":
            own = (experts, out, inner)
            name = (f"{prefix}.{self.down}", EitherShape((own, (experts, inner, out))))
            return Assembly((name,), lambda arrays: _output_major(arrays[0], own))
        rows = slice(0, out) if part == "gate" else slice(out, 2 * out)
        own = (experts, 2 * out, inner)
        name = (f"{prefix}.{self.gate_up}", EitherShape((own, (experts, inner, 2 * out))))
        return Assembly((name,), lambda arrays: _output_major(arrays[0], own)[:, rows])


def _output_major(array: np.ndarray, shape: tuple[int, int, int]) -> np.ndarray:
    return array if array.shape == shape else transposed(array)


def transposed(array: np.ndarray) -> np.ndarray:
    """[E, a, b] -> [E, b, a], contiguous."""
    return np.ascontiguousarray(array.transpose(0, 2, 1))


def _gate_then_up(gate: np.ndarray, up: np.ndarray) -> np.ndarray:
    """[E, I, H] twice -> [E, H, 2I]: the dense form's gate columns, then up's."""
    return transposed(np.concatenate([gate, up], axis=1))


def interleave(gate: np.ndarray, up: np.ndarray) -> np.ndarray:
    """[E, I, ...] twice -> [E, 2I, ...] with rows gate 0, up 0, gate 1, up 1, ..."""
    return np.stack([gate, up], axis=2).reshape(gate.shape[0], -1, *gate.shape[2:])


class Experts(nn.Module):
    """`num_experts` gated experts (act(gate) * up, then down), stacked for their form; the
    activation is `cfg.activation`, or GPT-OSS's clamped SwiGLU where `moe` sets a limit."""

    def __init__(self, cfg, dtype: ir.DataType, layout, kernel: bool):
        super().__init__()
        moe = cfg.moe
        experts, inner, hidden = moe.num_experts, moe.expert_size, cfg.hidden_size
        self.moe, self.layout, self.kernel, self.act = moe, layout, kernel, cfg.activation
        self.shapes = {"gate": (experts, inner, hidden), "down": (experts, hidden, inner)}
        if kernel:
            self.fc1 = nn.Parameter([experts, 2 * inner, hidden], dtype)
            self.fc2 = nn.Parameter([experts, hidden, inner], dtype)
        else:
            self.gate_up = nn.Parameter([experts, hidden, 2 * inner], dtype)
            self.down = nn.Parameter([experts, inner, hidden], dtype)
        self.gate_up_bias = nn.Parameter([experts, 2 * inner], dtype) if moe.expert_bias else None
        self.down_bias = nn.Parameter([experts, hidden], dtype) if moe.expert_bias else None

    @property
    def dense_stacks(self) -> tuple:
        """The stacks the dense form multiplies by (quantized through DequantizeLinear)."""
        return () if self.kernel else (self.gate_up, self.down)

    def assemblies(self) -> dict[str, Assembly]:
        """How each stacked parameter is made from the checkpoint's tensors."""
        first = self.fc1 if self.kernel else self.gate_up
        prefix = first.name.rsplit(".", 1)[0]
        gate_shape, down_shape = self.shapes["gate"], self.shapes["down"]
        down = self.layout.weight(prefix, "down", down_shape)
        if hasattr(self.layout, "gate_up_stack"):
            gate_up = self.layout.gate_up_stack(prefix, gate_shape, self.kernel)
        else:
            gate = self.layout.weight(prefix, "gate", gate_shape)
            up = self.layout.weight(prefix, "up", gate_shape)
            gate_up = Assembly.join(interleave if self.kernel else _gate_then_up, gate, up)
        if self.kernel:
            found = {self.fc1.name: gate_up, self.fc2.name: down}
        else:
            found = {self.gate_up.name: gate_up, self.down.name: down.then(transposed)}
        if self.moe.expert_bias:
            gate_b = self.layout.bias(prefix, "gate", gate_shape[:2])
            up_b = self.layout.bias(prefix, "up", gate_shape[:2])
            pair = interleave if self.kernel else (lambda g, u: np.concatenate([g, u], axis=1))
            found[self.gate_up_bias.name] = Assembly.join(pair, gate_b, up_b)
            found[self.down_bias.name] = self.layout.bias(prefix, "down", down_shape[:2])
        return found

    def kernel_attributes(self) -> dict:
        """The MoE op's activation attributes: SwiGLU over interleaved gate/up rows."""
        moe = self.moe
        attributes = {
            "activation_type": "swiglu",
            "swiglu_fusion": 1,
            "activation_alpha": moe.swiglu_alpha,
            "activation_beta": moe.swiglu_beta,
        }
        if moe.swiglu_limit is not None:
            attributes["swiglu_limit"] = moe.swiglu_limit
        return attributes

    def forward(self, op, flat, routing, normalize: bool = False):
        """Tokens [T, H] through their experts. The kernel form takes the MoE op's router
        input (logits, or log-weights) and its `normalize`; the dense form takes the routing
        weights [T, E] and runs every expert on every token."""
        if self.kernel:
            return op.MoE(
                flat,
                routing,
                self.fc1,
                self.gate_up_bias,
                self.fc2,
                self.down_bias,
                k=self.moe.top_k,
                normalize_routing_weights=int(normalize),
                _domain="com.microsoft",
                **self.kernel_attributes(),
            )
        h = op.MatMul(flat, self.gate_up)  # [E, T, 2I]
        if self.gate_up_bias is not None:
            h = op.Add(h, op.Unsqueeze(self.gate_up_bias, [1]))
        gate, up = op.Split(h, axis=-1, num_outputs=2, _outputs=2)
        y = op.MatMul(self._gated(op, gate, up), self.down)  # [E, T, H]
        if self.down_bias is not None:
            y = op.Add(y, op.Unsqueeze(self.down_bias, [1]))
        per_expert = op.Unsqueeze(op.Transpose(routing, perm=[1, 0]), [2])  # [E, T, 1]
        return op.ReduceSum(op.Mul(y, per_expert), [0], keepdims=0)

    def _gated(self, op, gate, up):
        moe = self.moe
        if moe.swiglu_limit is None and moe.swiglu_alpha == 1.0 and moe.swiglu_beta == 0.0:
            return op.Mul(activation(op, self.act, gate), up)
        if moe.swiglu_limit is not None:
            gate = op.Min(gate, moe.swiglu_limit)
            up = op.Clip(up, -moe.swiglu_limit, moe.swiglu_limit)
        glu = op.Mul(gate, op.Sigmoid(op.Mul(gate, moe.swiglu_alpha)))
        return op.Mul(glu, op.Add(up, moe.swiglu_beta))


class UngatedExperts(nn.Module):
    """`num_experts` experts without a gate: act(up), then down (Switch Transformers' wi, wo),
    stacked for their form: the kernel's `fc1` [E, I, H] and `fc2` [E, H, I], or the dense
    form's `up` [E, H, I] and `down` [E, I, H]. The layout's "up" and "down" name them; with
    `moe.expert_bias` each projection has its bias (`up_bias` [E, I], `down_bias` [E, H])."""

    # activations com.microsoft.MoE computes as transformers does (its gelu approximates)
    kernel_activations = ("relu", "silu", "swish")

    def __init__(self, cfg, dtype: ir.DataType, layout, kernel: bool):
        super().__init__()
        moe = cfg.moe
        experts, inner, hidden = moe.num_experts, moe.expert_size, cfg.hidden_size
        self.moe, self.layout, self.kernel, self.act = moe, layout, kernel, cfg.activation
        self.shapes = {"up": (experts, inner, hidden), "down": (experts, hidden, inner)}
        if kernel:
            self.fc1 = nn.Parameter([experts, inner, hidden], dtype)
            self.fc2 = nn.Parameter([experts, hidden, inner], dtype)
        else:
            self.up = nn.Parameter([experts, hidden, inner], dtype)
            self.down = nn.Parameter([experts, inner, hidden], dtype)
        self.up_bias = nn.Parameter([experts, inner], dtype) if moe.expert_bias else None
        self.down_bias = nn.Parameter([experts, hidden], dtype) if moe.expert_bias else None

    @property
    def dense_stacks(self) -> tuple:
        return () if self.kernel else (self.up, self.down)

    def assemblies(self) -> dict[str, Assembly]:
        first, second = (self.fc1, self.fc2) if self.kernel else (self.up, self.down)
        prefix = first.name.rsplit(".", 1)[0]
        up = self.layout.weight(prefix, "up", self.shapes["up"])
        down = self.layout.weight(prefix, "down", self.shapes["down"])
        if self.kernel:
            found = {first.name: up, second.name: down}
        else:
            found = {first.name: up.then(transposed), second.name: down.then(transposed)}
        if self.moe.expert_bias:
            found[self.up_bias.name] = self.layout.bias(prefix, "up", self.shapes["up"][:2])
            found[self.down_bias.name] = self.layout.bias(prefix, "down", self.shapes["down"][:2])
        return found

    def forward(self, op, flat, routing, normalize: bool = False):
        """As Experts.forward: the kernel's router input, or the dense routing weights."""
        if self.kernel:
            return op.MoE(
                flat,
                routing,
                self.fc1,
                self.up_bias,
                self.fc2,
                self.down_bias,
                k=self.moe.top_k,
                normalize_routing_weights=int(normalize),
                activation_type="silu" if self.act == "swish" else self.act,
                _domain="com.microsoft",
            )
        h = op.MatMul(flat, self.up)  # [E, T, I]
        if self.up_bias is not None:
            h = op.Add(h, op.Unsqueeze(self.up_bias, [1]))
        y = op.MatMul(activation(op, self.act, h), self.down)  # [E, T, H]
        if self.down_bias is not None:
            y = op.Add(y, op.Unsqueeze(self.down_bias, [1]))
        per_expert = op.Unsqueeze(op.Transpose(routing, perm=[1, 0]), [2])  # [E, T, 1]
        return op.ReduceSum(op.Mul(y, per_expert), [0], keepdims=0)
