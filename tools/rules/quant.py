"""Weight storage formats: bytes of the weights and of their quantisation metadata.

One small frozen class per format (vLLM kv_cache_interface style), each answering the same
question for the linear layers it quantises: `linear_bytes(linears) -> (data, metadata)`.
What a format does NOT quantise (embeddings, LM head, norms, biases) stays in its 16-bit
`compute_bytes` dtype (bitsandbytes/transformers `get_keys_to_not_convert` keeps the LM head;
embeddings and norms are not nn.Linear; GPTQ/AWQ quantise only the decoder's linears).

Choices stated:
- bnb int8 (LLM.int8, Dettmers et al. 2022): int8 weight + one fp32 scale per output row (SCB).
  The fp16 outlier decomposition acts on activation columns at run time (a transient per
  forward), not on stored weights: nothing extra is stored.
- bnb NF4/FP4 (QLoRA, Dettmers et al. 2023, sec. 2): 4-bit codes + one fp32 absmax per block of 64;
  with double quantisation the absmax are 8-bit plus one fp32 constant per 256 blocks:
  0.5 + 4/64 = 0.5625 B/param, with DQ 0.5 + 1/64 + 4/(64*256) B/param. bnb's per-tensor code
  tables (<1.1 KiB per linear) are not counted.
- GPTQ (AutoGPTQ/optimum QuantLinear): packed 4-bit qweight, fp16 scales and packed 4-bit qzeros
  per group of `group` input features, plus int32 g_idx per input feature. AWQ (AutoAWQ
  WQLinear_GEMM): the same without g_idx.
- FP8 (compressed-tensors / vLLM Fp8LinearMethod, per-tensor): 1 B weight + fp32 weight_scale and
  input_scale per linear; the LM head and embeddings stay 16-bit.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from tools.model.architecture import LinearShape
from tools.rules.gguf import GGUF_DTYPES, Exl2Format, GgufFormat


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class DenseFormat:
    """Unquantised: every parameter in one dtype."""

    name: str
    bytes_per_param: int
    quantised: bool = False
    label: str = ""
    source: str = "PyTorch dtype sizes (torch.finfo): fp32 4 B, bf16/fp16 2 B"

    @property
    def compute_bytes(self) -> int:
        return self.bytes_per_param

    def linear_bytes(self, linears: Iterable[LinearShape]) -> tuple[int, int]:
        return sum(
            lin.count * lin.in_features * lin.out_features for lin in linears
        ) * self.bytes_per_param, 0

    def rate_text(self) -> str:
        return f"{self.bytes_per_param} B"


@dataclass(frozen=True)
class Fp8Format:
    """FP8 (E4M3) weights with per-tensor scales."""

    name: str = "fp8"
    quantised: bool = True
    compute_bytes: int = 2
    label: str = "FP8 (E4M3) weights, per-tensor scales"
    source: str = "vLLM Fp8LinearMethod / compressed-tensors: 1 B weight + fp32 weight_scale and input_scale"

    def linear_bytes(self, linears: Iterable[LinearShape]) -> tuple[int, int]:
        data = meta = 0
        for lin in linears:
            data += lin.count * lin.in_features * lin.out_features  # 1 B per element
            meta += lin.count * 2 * 4  # weight_scale + input_scale, fp32 per tensor
        return data, meta

    def rate_text(self) -> str:
        return "1 B + n_linear x 8 B"


@dataclass(frozen=True)
class BnbInt8Format:
    """bitsandbytes LLM.int8: int8 weights with an fp32 scale per row."""

    name: str = "int8"
    quantised: bool = True
    compute_bytes: int = 2
    label: str = "bitsandbytes LLM.int8 (int8 weights, fp32 row scales)"
    source: str = (
        "bitsandbytes Linear8bitLt / Int8Params (CB int8 + SCB fp32 per row); Dettmers et al. 2022 LLM.int8()"
    )

    def linear_bytes(self, linears: Iterable[LinearShape]) -> tuple[int, int]:
        data = meta = 0
        for lin in linears:
            data += lin.count * lin.in_features * lin.out_features
            meta += lin.count * lin.out_features * 4  # SCB: one fp32 absmax per output row
        return data, meta

    def rate_text(self) -> str:
        return "1 B + n_rows x 4 B"


@dataclass(frozen=True)
class Bnb4bitFormat:
    """NF4 / FP4: 4-bit codes + blockwise absmax (optionally double-quantised)."""

    name: str = "nf4"
    double_quant: bool = True
    block: int = 64
    dq_block: int = 256
    quantised: bool = True
    compute_bytes: int = 2
    source: str = (
        "QLoRA (Dettmers et al. 2023) sec. 2: NF4 block 64 fp32 absmax; double quant: 8-bit absmax "
        "+ fp32 per 256 blocks; bitsandbytes functional.quantize_4bit"
    )

    @property
    def label(self) -> str:
        kind = "NF4" if self.name == "nf4" else "FP4"
        return f"bitsandbytes {kind}, block {self.block}, " + (
            "double quantisation" if self.double_quant else "fp32 absmax"
        )

    def linear_bytes(self, linears: Iterable[LinearShape]) -> tuple[int, int]:
        data = meta = 0
        for lin in linears:
            n = lin.in_features * lin.out_features
            blocks = _cdiv(n, self.block)
            data += lin.count * _cdiv(n, 2)  # two 4-bit codes per byte
            if self.double_quant:  # 8-bit absmax per block + fp32 absmax per dq_block blocks
                meta += lin.count * (blocks + 4 * _cdiv(blocks, self.dq_block))
            else:
                meta += lin.count * 4 * blocks
        return data, meta

    def rate_text(self) -> str:
        if self.double_quant:
            return f"0.5 B + P_linear x (1/{self.block} B + 4/({self.block}*{self.dq_block}) B)"
        return f"0.5 B + P_linear x 4/{self.block} B"


@dataclass(frozen=True)
class GroupwiseIntFormat:
    """GPTQ / AWQ: packed `bits`-bit weights, fp16 scales and packed zeros per group of inputs."""

    name: str = "gptq"
    bits: int = 4
    group: int = 128
    g_idx: bool = True  # GPTQ keeps an int32 group index per input feature; AWQ does not
    quantised: bool = True
    compute_bytes: int = 2

    @property
    def label(self) -> str:
        return f"{self.name.upper()} int{self.bits}, group {self.group}, fp16 scales + packed zeros"

    @property
    def source(self) -> str:
        if self.g_idx:
            return (
                "AutoGPTQ/optimum QuantLinear: qweight, qzeros (packed), fp16 scales per group, int32 g_idx"
            )
        return "AutoAWQ WQLinear_GEMM: qweight, qzeros (packed), fp16 scales per group"

    def linear_bytes(self, linears: Iterable[LinearShape]) -> tuple[int, int]:
        data = meta = 0
        for lin in linears:
            groups = _cdiv(lin.in_features, self.group)
            data += lin.count * _cdiv(lin.in_features * lin.out_features * self.bits, 8)
            scales = groups * lin.out_features * 2  # fp16 scale per group per output
            zeros = _cdiv(groups * lin.out_features * self.bits, 8)  # packed zero points
            gidx = 4 * lin.in_features if self.g_idx else 0
            meta += lin.count * (scales + zeros + gidx)
        return data, meta

    def rate_text(self) -> str:
        text = f"{self.bits / 8:g} B + P_linear x (2 + {self.bits / 8:g}) B/{self.group}"
        return text + (" + sum(d_in) x 4 B (g_idx)" if self.g_idx else "")


WeightFormat = (
    DenseFormat | Fp8Format | BnbInt8Format | Bnb4bitFormat | GroupwiseIntFormat | GgufFormat | Exl2Format
)

FP32 = DenseFormat("fp32", 4, label="fp32")
BF16 = DenseFormat("bf16", 2, label="bf16")
FP16 = DenseFormat("fp16", 2, label="fp16")
DENSE_FORMATS: dict[str, DenseFormat] = {"fp32": FP32, "bf16": BF16, "fp16": FP16}
QUANTISED_DTYPES = ("fp8", "int8", "int4", "nf4", *GGUF_DTYPES, "exl2")
# formats only an inference engine reads (llama.cpp/ollama GGUF, ExLlamaV2 EXL2), with the method they imply
INFERENCE_ONLY_METHOD: dict[str, str] = {**dict.fromkeys(GGUF_DTYPES, "gguf"), "exl2": "exl2"}


@lru_cache(maxsize=256)  # formats are frozen values: one object per distinct storage
def weight_format(
    weight_dtype: str,
    quant_method: str | None,
    *,
    group_size: int | None = None,
    double_quant: bool = True,
    bits: float | None = None,
) -> WeightFormat:
    """The storage format for `weight_dtype` stored by `quant_method` (already validated);
    `bits` is the stated bits per weight of an EXL2 quant."""
    if weight_dtype in GGUF_DTYPES:
        return GgufFormat(weight_dtype)
    if weight_dtype == "exl2":
        return Exl2Format(bits or 4.0)
    if weight_dtype in DENSE_FORMATS:
        return DENSE_FORMATS[weight_dtype]
    if weight_dtype == "fp8":
        return Fp8Format()
    if weight_dtype == "nf4":
        return Bnb4bitFormat("nf4", double_quant=double_quant, block=group_size or 64)
    if weight_dtype == "int8":
        if quant_method == "gptq":
            return GroupwiseIntFormat("gptq", bits=8, group=group_size or 128)
        return BnbInt8Format()
    if weight_dtype == "int4":
        if quant_method == "bnb":
            return Bnb4bitFormat("fp4", double_quant=double_quant, block=group_size or 64)
        if quant_method == "awq":
            return GroupwiseIntFormat("awq", bits=4, group=group_size or 128, g_idx=False)
        return GroupwiseIntFormat("gptq", bits=4, group=group_size or 128)
    raise ValueError(weight_dtype)
