"""llama.cpp GGUF and ExLlamaV2 EXL2 weight formats: the bits each tensor really takes.

GGUF block layouts (bytes per block / weights per block) are the `block_*` structs of ggml's
ggml/src/ggml-common.h (each has a static_assert on its size); a "file type" such as Q4_K_M is a
mix of block types chosen per tensor by llama.cpp src/llama-quant.cpp (`llama_tensor_get_type_impl`,
default type from `llama_ftype_get_default_type`, shape fallback from `tensor_type_fallback`).

What the GPU holds under llama.cpp with every layer offloaded (`-ngl 999`):
- decoder linears in the mix below; 1-D tensors (norms, biases) stay F32 (convert_hf_to_gguf.py writes
  1-D tensors as F32);
- the output matrix in its own type (Q6_K for most mixes, Q5_K for the IQ1/IQ2 mixes, Q8_0 for Q8_0);
- the token embedding stays in host memory (llama-model.cpp: "there is very little benefit to
  offloading the input layer, so always keep it on the CPU"), unless it is tied to the output, when the
  output's copy in the output type is on the GPU.

Simplifications stated: no importance matrix (imatrix changes a few IQ3_XXS/IQ4 choices); the
8-expert (Mixtral) bumps, the Falcon and the 70B attn_v rules are not applied (they move well under 1%
of the weights); routed-expert linears use their own count as the layer count for the per-layer rules.

EXL2 (exllamav2 convert.py): the stated bits per weight is the average over the decoder linears
(`-b`), the output layer at 6 bits (`-hb 6`, the default); embeddings and norms are counted 16-bit.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tools.model.architecture import LinearShape

if TYPE_CHECKING:
    from typing import Protocol

    class _Local(Protocol):
        other: int
        embedding_and_head: int
        head_matmul: int


# ggml-common.h: (bytes per block, weights per block); bpw = 8 * bytes / weights
BLOCKS: dict[str, tuple[int, int]] = {
    "f32": (4, 1),
    "f16": (2, 1),
    "q8_0": (34, 32),  # ggml_half d + int8 qs[32]
    "q6_k": (210, 256),  # ql[128] + qh[64] + int8 scales[16] + half d: 6.5625 bpw
    "q5_k": (176, 256),  # half d, dmin + scales[12] + qh[32] + qs[128]: 5.5 bpw
    "q5_1": (24, 32),
    "q5_0": (22, 32),
    "q4_k": (144, 256),  # half d, dmin + scales[12] + qs[128]: 4.5 bpw
    "q4_1": (20, 32),
    "q4_0": (18, 32),  # half d + nibbles[16]: 4.5 bpw
    "iq4_nl": (18, 32),
    "iq4_xs": (136, 256),  # half d + u16 scales_h + scales_l[4] + qs[128]: 4.25 bpw
    "q3_k": (110, 256),  # hmask[32] + qs[64] + scales[12] + half d: 3.4375 bpw
    "iq3_s": (110, 256),  # 3.4375 bpw
    "iq3_xxs": (98, 256),  # 3.0625 bpw
    "q2_k": (84, 256),  # scales[16] + qs[64] + half d, dmin: 2.625 bpw
    "iq2_s": (82, 256),  # 2.5625 bpw
    "iq2_xs": (74, 256),  # 2.3125 bpw
    "iq2_xxs": (66, 256),  # 2.0625 bpw
    "iq1_m": (56, 256),  # 1.75 bpw
    "iq1_s": (50, 256),  # 1.5625 bpw
}

# llama-quant.cpp llama_ftype_get_default_type: file type -> the type most tensors get
FILE_TYPES: dict[str, str] = {
    "q8_0": "q8_0",
    "q6_k": "q6_k",
    "q5_k_m": "q5_k",
    "q5_k_s": "q5_k",
    "q5_1": "q5_1",
    "q5_0": "q5_0",
    "q4_k_m": "q4_k",
    "q4_k_s": "q4_k",
    "q4_1": "q4_1",
    "q4_0": "q4_0",
    "iq4_nl": "iq4_nl",
    "iq4_xs": "iq4_xs",
    "q3_k_l": "q3_k",
    "q3_k_m": "q3_k",
    "q3_k_s": "q3_k",
    "iq3_m": "iq3_s",
    "iq3_s": "iq3_s",
    "iq3_xs": "iq3_s",
    "iq3_xxs": "iq3_xxs",
    "q2_k": "q2_k",
    "q2_k_s": "q2_k",
    "iq2_m": "iq2_s",
    "iq2_s": "iq2_xs",
    "iq2_xs": "iq2_xs",
    "iq2_xxs": "iq2_xxs",
    "iq1_m": "iq1_m",
    "iq1_s": "iq1_s",
}
GGUF_DTYPES: tuple[str, ...] = tuple(FILE_TYPES)

# tensor_type_fallback: a row length not divisible by the block falls back to a 32-block type
_FALLBACK = {
    **dict.fromkeys(("iq1_s", "iq1_m", "iq2_xxs", "iq2_xs", "iq2_s", "iq3_xxs", "iq3_s", "iq4_xs"), "iq4_nl"),
    **dict.fromkeys(("q2_k", "q3_k"), "q4_0"),
    "q4_k": "q5_0",
    "q5_k": "q5_1",
    "q6_k": "q8_0",
}
_IQ2_MIXES = ("iq2_xxs", "iq2_xs", "iq1_s", "iq2_s", "iq2_m", "iq1_m")


def bpw(block_type: str) -> float:
    """Bits per weight of one ggml block type (ggml-common.h block sizes)."""
    size, n = BLOCKS[block_type]
    return 8 * size / n


def row_bytes(block_type: str, n_cols: int) -> int:
    """ggml_row_size: bytes of one row of n_cols weights (the fallback type when the row does not divide)."""
    t = block_type
    if n_cols % BLOCKS[t][1]:
        t = _FALLBACK.get(t, "f16")
        if n_cols % BLOCKS[t][1]:
            t = "f16"
    size, n = BLOCKS[t]
    return n_cols // n * size


def _category(name: str) -> str:
    """llama.cpp tensor category of an HF module name (tensor_get_category on the GGUF name)."""
    if name in ("v_proj", "kv_b_proj") or name in ("qkv_proj", "W_pack", "c_attn", "query_key_value", "wqkv"):
        return "attn_v"  # category_is_attn_v: ATTENTION_V, ATTENTION_QKV, ATTENTION_KV_B
    if name == "k_proj":
        return "attn_k"
    if name in ("q_proj", "q_b_proj"):
        return "attn_q"
    if name in ("o_proj", "wo", "dense"):
        return "attn_output"
    if name in ("down_proj", "w2", "dense_4h_to_h", "fc2"):
        return "ffn_down"
    if name in ("gate_proj", "w1", "gate_up_proj", "dense_h_to_4h"):
        return "ffn_gate"
    if name in ("up_proj", "w3"):
        return "ffn_up"
    if name == "gate":
        return "router"  # ffn_gate_inp: never quantised
    return "other"


def _use_more_bits(i: int, n: int) -> bool:
    # llama-quant.cpp use_more_bits
    return i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2


def tensor_type(ftype: str, category: str, i: int, n: int, n_gqa: int) -> str:
    """The block type llama.cpp gives tensor `i` of `n` of `category` in file type `ftype`
    (llama_tensor_get_type_impl, dense non-Falcon path, no imatrix)."""
    t = FILE_TYPES[ftype]
    if category == "router":
        return "f32"
    if ftype in _IQ2_MIXES:
        if category == "attn_v":
            return "q4_k" if n_gqa >= 4 else ("iq3_s" if ftype in ("iq2_s", "iq2_m") else "q2_k")
        if category == "ffn_down" and i < n // 8:
            return "iq3_s" if ftype in ("iq2_s", "iq2_m") else "q2_k"
        if category == "attn_output":
            if ftype in ("iq1_s", "iq1_m"):
                return "iq2_xxs"
            if ftype in ("iq2_s", "iq2_m"):
                return "iq3_s"
        return t
    if category == "attn_v":
        rules = {
            "q2_k": "q4_k" if n_gqa >= 4 else "q3_k",
            "q2_k_s": "q4_k" if n_gqa >= 4 else t,
            "iq3_xxs": "q4_k" if n_gqa >= 4 else "iq3_s",
            "iq3_xs": "q4_k" if n_gqa >= 4 else t,
            "iq3_s": "q4_k" if n_gqa >= 4 else t,
            "iq3_m": "q4_k",
            "q3_k_m": "q5_k" if i < 2 else "q4_k",
            "q3_k_l": "q5_k",
            "iq4_nl": "q5_k" if n_gqa >= 4 else t,
            "iq4_xs": "q5_k" if n_gqa >= 4 else t,
            "q4_k_m": "q6_k" if _use_more_bits(i, n) else t,
            "q5_k_m": "q6_k" if _use_more_bits(i, n) else t,
            "q4_k_s": "q5_k" if i < 4 else t,
        }
        return rules.get(ftype, t)
    if category in ("attn_k", "attn_q"):
        return {"iq3_xs": "iq3_xxs", "iq3_xxs": "iq2_s"}.get(ftype, t)
    if category == "ffn_down":
        first8 = i < n // 8
        if ftype == "q2_k":
            return "q3_k"
        if ftype == "q2_k_s":
            return "q4_k" if first8 else t
        if ftype == "iq3_xxs":
            return "q4_k" if first8 else "q3_k"
        if ftype == "q3_k_m":
            return "q5_k" if i < n // 16 else "q4_k"
        if ftype == "iq3_m":
            return "q4_k" if first8 else t
        if ftype == "q3_k_l":
            return "q5_k"
        if ftype in ("q4_k_m", "q5_k_m"):
            return "q6_k" if _use_more_bits(i, n) else t
        if ftype in ("iq4_nl", "iq4_xs", "q4_k_s"):
            return "q5_k" if first8 else t
        return t
    if category == "attn_output":
        return {"q2_k": "q3_k", "iq3_xxs": "iq3_s", "q3_k_m": "q4_k", "q3_k_l": "q5_k", "iq3_m": "q4_k"}.get(
            ftype, t
        )
    if category in ("ffn_gate", "ffn_up") and ftype == "iq3_xs":
        return "iq3_xxs" if n // 8 <= i < 7 * n // 8 else t
    return t


def output_type(ftype: str) -> str:
    """The output matrix's type (llama_tensor_get_type_impl, OUTPUT category)."""
    if FILE_TYPES[ftype] == "q8_0":
        return "q8_0"
    if ftype in ("iq2_xxs", "iq2_xs", "iq3_xxs", "iq1_s", "iq2_s", "iq2_m", "iq1_m"):
        return "q5_k"
    return "q6_k"


def _n_gqa(linears: list[LinearShape]) -> int:
    q = next((lin for lin in linears if lin.name == "q_proj"), None)
    k = next((lin for lin in linears if lin.name == "k_proj"), None)
    if q is None or k is None or not k.out_features:
        return 1
    return max(1, q.out_features // k.out_features)


@dataclass(frozen=True)
class GgufFormat:
    """One llama.cpp file type (Q4_K_M, IQ3_XS, Q8_0, ...): a per-tensor mix of ggml block types."""

    name: str = "q4_k_m"
    quantised: bool = True
    compute_bytes: int = 2  # llama.cpp CUDA matmuls dequantise to f16 and keep f16/f32 activations
    source: str = "llama.cpp ggml-common.h block layouts; src/llama-quant.cpp llama_tensor_get_type_impl (per-tensor mix)"

    @property
    def label(self) -> str:
        return f"GGUF {self.name.upper()}: {describe_mix(self.name)}"

    def linear_types(self, linears: Iterable[LinearShape]) -> list[tuple[LinearShape, dict[str, int]]]:
        """For each linear, how many of its instances get each block type."""
        lins = list(linears)
        gqa = _n_gqa(lins)
        out = []
        for lin in lins:
            counts: dict[str, int] = {}
            for i in range(lin.count):
                t = tensor_type(self.name, _category(lin.name), i, lin.count, gqa)
                counts[t] = counts.get(t, 0) + 1
            out.append((lin, counts))
        return out

    def linear_bytes(self, linears: Iterable[LinearShape]) -> tuple[int, int]:
        data = 0
        for lin, counts in self.linear_types(linears):
            for t, c in counts.items():
                data += c * lin.out_features * row_bytes(t, lin.in_features)
        return data, 0  # block scales are inside the block sizes

    def effective_bpw(self, linears: Iterable[LinearShape]) -> float:
        lins = list(linears)
        n = sum(lin.count * lin.in_features * lin.out_features for lin in lins)
        return 8 * self.linear_bytes(lins)[0] / n if n else bpw(FILE_TYPES[self.name])

    def non_linear_bytes(self, loc: _Local) -> int:
        """Norms/biases in F32, the output matrix in its type, an untied token embedding in host memory."""
        small = loc.other - loc.embedding_and_head
        head = round(loc.head_matmul * bpw(output_type(self.name)) / 8)
        return small * 4 + head

    def rate_text(self) -> str:
        return f"{describe_mix(self.name)} per tensor"


@dataclass(frozen=True)
class Exl2Format:
    """ExLlamaV2 EXL2 at an average `bits` per weight over the decoder linears."""

    bits: float = 4.0
    name: str = "exl2"
    head_bits: int = 6
    quantised: bool = True
    compute_bytes: int = 2
    source: str = (
        "exllamav2 convert.py: -b average bits per weight over the decoder linears, -hb 6 output layer"
    )

    @property
    def label(self) -> str:
        return f"EXL2 {self.bits:g} bpw"

    def linear_bytes(self, linears: Iterable[LinearShape]) -> tuple[int, int]:
        n = sum(lin.count * lin.in_features * lin.out_features for lin in linears)
        return round(n * self.bits / 8), 0

    def effective_bpw(self, linears: Iterable[LinearShape]) -> float:
        return self.bits

    def non_linear_bytes(self, loc: _Local) -> int:
        head = loc.head_matmul
        return (loc.other - head) * 2 + round(head * self.head_bits / 8)

    def rate_text(self) -> str:
        return f"{self.bits:g}/8 B"


# file types whose mix promotes some tensors above the base type (llama-quant.cpp), and which
_MIX_EXTRAS = {
    "q4_k_m": "Q6_K 6.5625 bpw for attn_v and ffn_down in half the layers",
    "q5_k_m": "Q6_K 6.5625 bpw for attn_v and ffn_down in half the layers",
    "q4_k_s": "Q5_K for the first attn_v and ffn_down layers",
    "q3_k_m": "Q4_K/Q5_K for attn_v, attn_output and ffn_down",
    "q3_k_l": "Q5_K for attn_v, attn_output and ffn_down",
    "q2_k": "Q3_K/Q4_K for attn_v, attn_output and ffn_down",
    "iq3_xs": "IQ3_XXS for q/k and middle ffn_gate/up",
}


def describe_mix(ftype: str) -> str:
    """'Q4_K 4.5 bpw, Q6_K 6.5625 bpw on attn_v/ffn_down in half the layers' style short text."""
    base = FILE_TYPES[ftype]
    text = f"mostly {base.upper()} {bpw(base):g} bpw"
    extra = _MIX_EXTRAS.get(ftype)
    return text + (f", {extra}" if extra else "")


def mix_label_values(ftype: str) -> dict[str, object]:
    """The file type's mix as a component label's values (code weights.gguf, tools/labels.py): the
    promoted tensors are named by `mix` (the file type, worded in prompts/<lang>/components.toml)."""
    base = FILE_TYPES[ftype]
    values: dict[str, object] = {"file_type": ftype.upper(), "base": base.upper(), "base_bpw": bpw(base)}
    return values | ({"mix": ftype} if ftype in _MIX_EXTRAS else {})


_GGUF_RE = re.compile(r"(?<![a-z0-9])(i?q[1-8](?:_k)?(?:_[0-9a-z]{1,3})?)(?![a-z0-9])")
_EXL2_RE = re.compile(r"(\d(?:\.\d{1,3})?)\s*(?:bpw|bits?\s*per\s*weight)")


def gguf_file_type(text: str) -> str | None:
    """The GGUF file type named in `text` ('Q4_K_M', 'q4km', 'IQ3_XS', 'q8_0'), or None."""
    low = text.lower().replace("-", "_")
    low = re.sub(r"\bq([2-6])k([msl])\b", r"q\1_k_\2", low)  # q4km -> q4_k_m
    for m in _GGUF_RE.finditer(low):
        name = m.group(1)
        if name in FILE_TYPES:
            return name
        if name + "_m" in FILE_TYPES and name.endswith("_k") and name != "q6_k":
            return name + "_m"  # llama.cpp's "Q4_K" / "Q5_K" / "Q3_K" aliases are the _M mixes
    return None


def exl2_bits(text: str) -> float | None:
    """The bits per weight of an EXL2 quant named in `text` ('4.65bpw'), or None."""
    m = _EXL2_RE.search(text.lower())
    if not m:
        return None
    bits = float(m.group(1))
    return bits if 1.0 < bits <= 8.5 else None
