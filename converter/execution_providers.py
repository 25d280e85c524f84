"""Execution providers as data: which fused kernels each one gets, for which dtypes.

The graph builder and the lowering passes read these records; nothing else in the
converter names an EP. `default` is the portable graph of standard ONNX ops only.
"""

from __future__ import annotations

from dataclasses import dataclass

from converter.errors import MobiusError

# Fusions an EP may get; each is counted after lowering (see converter/lowering.py).
GQA = "GroupQueryAttention"  # com.microsoft, replaces Attention (+ RotaryEmbedding inside)
ROTARY_IN_GQA = "rotary_in_gqa"  # GQA applies rotary itself (do_rotary=1)
SKIP_NORM = "SkipNormalization"  # com.microsoft Skip(Simplified)LayerNormalization
MATMUL_NBITS = "MatMulNBits"  # com.microsoft int4 weights
GATHER_Q4 = "GatherBlockQuantized"  # com.microsoft int4 embedding table
PACKED_QKV = "packed_qkv"  # one MatMul for q, k and v
PACKED_GATE_UP = "packed_gate_up"  # one MatMul for gate and up
MOE = "MoE"  # com.microsoft mixture of experts (routing, experts and weighted sum in one op)
QMOE = "QMoE"  # com.microsoft MoE over block-wise 4-bit experts
ENCODER_MHA = "MultiHeadAttention"  # com.microsoft bidirectional attention with a padding mask

DTYPES = ("f32", "f16", "bf16", "int8", "int4")
# int8 is dynamic quantization (converter/lowering/int8.py): int8 weights, activations quantized
# at run time by DynamicQuantizeLinear, whose ONNX schema takes float32 only.
INT8_ACTIVATION = "f32"


@dataclass(frozen=True)
class ExecutionProvider:
    name: str
    ort_provider: str  # onnxruntime's name, to run or to check kernels against
    dtypes: tuple[str, ...]
    fusions: frozenset[str]
    int4_activation: str = "f32"  # activation dtype of int4 graphs (q4f16 on GPUs)
    int4_accuracy_level: int = 0  # MatMulNBits accuracy_level (4: int8 compute on CPU)
    gqa_head_size_multiple: int = 1  # GroupQueryAttention kernel constraint
    gqa_dtypes: tuple[str, ...] = ("f32", "f16")  # activation dtypes its GQA kernel runs
    gqa_rotary_multiple: int = 8  # do_rotary needs cos_cache dim 1 (rotary_dim / 2) % 8 == 0
    gqa_rotary_head_size_multiple: int = 1  # do_rotary's own head_size constraint
    # What its GQA kernel reads from local_window_size: the number of keys a query sees,
    # itself included, is local_window_size - gqa_window_offset (transformers' sliding_window
    # counts the same keys). None: the kernel ignores the attribute.
    gqa_window_offset: int | None = None
    gqa_softcap: bool = True  # whether its GQA kernel applies the softcap attribute
    gqa_sinks: bool = False  # whether its GQA kernel is known to read head_sink (attention sinks)
    moe_dtypes: tuple[str, ...] = ()  # activation dtypes its MoE kernel runs
    qmoe_dtypes: tuple[str, ...] = ()  # activation dtypes its QMoE kernel runs
    # (dtype, why not) for dtypes this EP does not run, named in the refusal
    refusals: tuple[tuple[str, str], ...] = ()
    # fp8-kv-cache (converter/components/fp8_cache.py): why this EP cannot keep a float8
    # cache (None: it can), and whether its GroupQueryAttention reads one itself
    fp8_cache_refusal: str | None = None
    gqa_fp8_cache: bool = False

    def has(self, fusion: str) -> bool:
        return fusion in self.fusions

    def activation_dtype(self, dtype: str) -> str:
        """The float dtype activations use for `dtype` (int4 and int8 name the weights)."""
        if dtype == "int8":
            return INT8_ACTIVATION
        return self.int4_activation if dtype == "int4" else dtype

    def refusal(self, dtype: str) -> str | None:
        """Why this EP does not run `dtype`, where the record says."""
        return dict(self.refusals).get(dtype)

    def gqa_unsupported_reason(
        self,
        head_dim: int,
        activation: str,
        *,
        windowed: bool = False,
        softcap: bool = False,
        sinks: bool = False,
    ) -> str | None:
        """Why this model cannot use GroupQueryAttention here (None: it can)."""
        kernel = f"{self.name}'s GroupQueryAttention"
        if activation not in self.gqa_dtypes:
            return f"{kernel} has no {activation} kernel"
        if head_dim % self.gqa_head_size_multiple:
            return (
                f"head_size {head_dim} is not a multiple of {self.gqa_head_size_multiple} "
                f"on {self.name}"
            )
        if windowed and self.gqa_window_offset is None:
            return f"{kernel} ignores local_window_size (sliding window)"
        if softcap and not self.gqa_softcap:
            return f"{kernel} ignores softcap"
        if sinks and not self.gqa_sinks:
            return f"{kernel} is not known to read head_sink (attention sinks)"
        return None

    def moe_unsupported_reason(self, activation: str, int4: bool) -> str | None:
        """Why experts cannot run in this EP's MoE (QMoE for int4) kernel (None: they can)."""
        kernel, dtypes = (QMOE, self.qmoe_dtypes) if int4 else (MOE, self.moe_dtypes)
        if not self.has(kernel):
            return f"{self.name} has no {kernel} kernel"
        if activation not in dtypes:
            return f"{self.name}'s {kernel} kernel has no {activation} version"
        return None

    def gqa_rotary_unsupported_reason(self, head_dim: int, rotary_dims: list[int]) -> str | None:
        """Why GroupQueryAttention cannot rotate q and k itself here (None: it can)."""
        if not self.has(ROTARY_IN_GQA):
            return f"{self.name}'s GroupQueryAttention does not apply do_rotary"
        if head_dim % self.gqa_rotary_head_size_multiple:
            return (
                f"do_rotary needs head_size % {self.gqa_rotary_head_size_multiple} == 0 on "
                f"{self.name}, head_size is {head_dim}"
            )
        for dim in rotary_dims:
            if dim // 2 % self.gqa_rotary_multiple:
                return (
                    f"rotary dim {dim} / 2 is not a multiple of {self.gqa_rotary_multiple} "
                    f"on {self.name}"
                )
        return None

    def gqa_local_window_size(self, window: int | None) -> int:
        """GroupQueryAttention's local_window_size for a transformers sliding_window."""
        if window is None:
            return -1
        assert self.gqa_window_offset is not None, "no GQA for windows on this EP"
        return window + self.gqa_window_offset


_FUSED = frozenset(
    {
        GQA,
        ROTARY_IN_GQA,
        SKIP_NORM,
        MATMUL_NBITS,
        GATHER_Q4,
        PACKED_QKV,
        PACKED_GATE_UP,
        MOE,
        QMOE,
        ENCODER_MHA,
    }
)

EXECUTION_PROVIDERS: dict[str, ExecutionProvider] = {
    ep.name: ep
    for ep in (
        ExecutionProvider(
            "default", "CPUExecutionProvider", ("f32", "f16", "int8", "int4"), frozenset()
        ),
        ExecutionProvider(
            "cpu",
            "CPUExecutionProvider",
            # int8: onnxruntime's CPU EP fuses the standard chain into DynamicQuantizeMatMul
            ("f32", "f16", "int8", "int4"),
            _FUSED,
            int4_accuracy_level=4,
            # measured on onnxruntime 1.32 (docs/execution-providers.md): head_size % 8 == 0,
            # and % 16 == 0 with do_rotary; others are refused at run time
            gqa_head_size_multiple=8,
            gqa_rotary_head_size_multiple=16,
            # measured on 1.32: a query sees local_window_size keys, itself included
            # (gqa_attention_base.h starts the window at causal length - local_window_size)
            gqa_window_offset=0,
            gqa_sinks=True,  # measured on 1.32: head_sink joins the softmax as one more logit
            # measured on 1.32: MoE and QMoE run f32 and f16 (the kernel table lists MoE
            # for float only)
            moe_dtypes=("f32", "f16"),
            qmoe_dtypes=("f32", "f16"),
        ),
        ExecutionProvider(
            "cuda",
            "CUDAExecutionProvider",
            ("f32", "f16", "bf16", "int4"),
            _FUSED,
            int4_activation="f16",
            gqa_head_size_multiple=8,
            gqa_dtypes=("f16", "bf16"),  # published kernel table: no f32 GroupQueryAttention
            # group_query_attention.cc registers float8e4m3fn caches (f16/bf16 activations, with
            # USE_FP8_KV_CACHE) with PER_CHANNEL k_scale/v_scale
            gqa_fp8_cache=True,
            # group_query_attention_impl.cu hands flash attention local_window_size - 1 as its
            # left window, which counts keys besides the query itself
            gqa_window_offset=0,
            moe_dtypes=("f32", "f16", "bf16"),
            qmoe_dtypes=("f16", "bf16"),
            refusals=(
                (
                    "int8",
                    "onnxruntime's CUDA EP has no DynamicQuantizeLinear kernel and its "
                    "MatMulInteger takes int8 activations only (dynamic quantization makes "
                    "uint8): the int8 MatMuls would run on CPU",
                ),
            ),
        ),
        ExecutionProvider(
            "dml",
            "DmlExecutionProvider",
            # int8: the published kernel table has DynamicQuantizeLinear (float) and
            # MatMulInteger (uint8 or int8 on both sides)
            ("f32", "f16", "int8", "int4"),
            # no GatherBlockQuantized kernel in the published table; its GroupQueryAttention
            # (DmlOperatorGroupQueryAttention.cpp) passes q, k, v, past lengths, heads and scale
            # to DirectML's multi-head attention and reads neither cos/sin (do_rotary),
            # local_window_size nor softcap
            # (encoders: its MultiHeadAttention's key_padding_mask support is unmeasured)
            _FUSED - {GATHER_Q4, ROTARY_IN_GQA, MOE, QMOE, ENCODER_MHA},
            int4_activation="f16",
            gqa_softcap=False,
            fp8_cache_refusal="DirectML has no float8 tensor type (DML_TENSOR_DATA_TYPE)",
        ),
        ExecutionProvider(
            "webgpu",
            "WebGpuExecutionProvider",
            ("f32", "f16", "int4"),
            # its kernel table has QMoE but no MoE: int4 experts reach QMoE from the float MoE
            # (encoders: its MultiHeadAttention's key_padding_mask support is unmeasured)
            _FUSED - {MOE, QMOE, ENCODER_MHA},
            int4_activation="f16",
            # attention.cc's InPlaceSoftmax starts the window at causal length -
            # local_window_size (its flash path is skipped while a window applies)
            gqa_window_offset=0,
            fp8_cache_refusal=(
                "onnxruntime's WebGPU EP has no float8 DequantizeLinear (its kernel takes int8, "
                "uint8 and int32)"
            ),
            refusals=(
                (
                    "int8",
                    "onnxruntime's WebGPU EP has no MatMulInteger or DynamicQuantizeLinear "
                    "kernel: the int8 MatMuls would run on CPU",
                ),
            ),
        ),
    )
}


def execution_provider(name: str, dtype: str) -> ExecutionProvider:
    """The EP record, after checking that it runs `dtype`; errors before any work starts."""
    ep = EXECUTION_PROVIDERS.get(name)
    if ep is None:
        raise MobiusError(
            f"unknown execution provider {name!r}; choose from {', '.join(EXECUTION_PROVIDERS)}"
        )
    if dtype not in DTYPES:
        raise MobiusError(f"unknown dtype {dtype!r}; choose from {', '.join(DTYPES)}")
    if dtype not in ep.dtypes:
        runs = [e.name for e in EXECUTION_PROVIDERS.values() if dtype in e.dtypes]
        why = ep.refusal(dtype)
        raise MobiusError(
            f"execution provider {name!r} does not run {dtype} (it runs "
            f"{', '.join(ep.dtypes)}){f': {why}' if why else ''}; {dtype} is available for "
            f"{', '.join(runs)}"
        )
    return ep
