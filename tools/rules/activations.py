"""Activation memory: what autograd saves for backward, per layer and per pipeline stage.

Block kinds (one class each, same question: `per_layer(...) -> LayerActivations`):
- GptBlock: GPT-3-style (LayerNorm, GELU MLP of 4h, dropout). Korthikanti et al. 2022, Table 2:
  s*b*h*(34 + 5*a*s/h) bytes per layer with 16-bit activations; with TP and no sequence parallel
  s*b*h*(10 + 24/t + 5*a*s/(h*t)); with sequence parallel everything / t. Flash attention removes
  the 5*a*s^2*b score bytes and adds the fp32 log-sum-exp (4*a*s*b).
- LlamaBlock: HF Llama-style (RMSNorm with fp32 upcast, SwiGLU with intermediate i, GQA/MLA, no
  dropout), from the autograd graph of transformers' modeling_llama.py; the per-tensor constants
  are named in tools/calibration.py. MoE layers save top-k experts' MLP tensors per token.
Recompute strategies (Korthikanti sec. 4 / HF gradient_checkpointing): none, selective (drop the
attention core: scores/softmax), full (keep each layer's input, one layer live during backward).
Context parallel divides s (each rank holds s/c tokens); data parallel does NOT shrink a GPU's
activations for a given micro-batch. Pipeline parallel 1F1B: stage k holds min(p - k, m) micro-
batches in flight, so the first stage holds p micro-batches of its L/p layers (~ L layers' worth).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import NamedTuple

from tools import calibration as cal
from tools.model.architecture import Architecture

ATTN_IN_LINEARS = frozenset(
    {
        "q_proj",
        "k_proj",
        "v_proj",
        "qkv_proj",
        "query_key_value",
        "W_pack",
        "wqkv",
        "c_attn",
        "q_a_proj",
        "q_b_proj",
        "kv_a_proj_with_mqa",
        "kv_b_proj",
    }
)
ATTN_OUT_LINEARS = frozenset({"o_proj", "dense", "wo", "c_proj"})
MLP_IN_LINEARS = frozenset({"gate_proj", "up_proj", "gate_up_proj", "w1", "w3", "dense_h_to_4h", "c_fc"})
MLP_OUT_LINEARS = frozenset({"down_proj", "w2", "dense_4h_to_h", "c_proj"})


class SaveMask(NamedTuple):
    """Which weights of a layer train: a frozen weight's matmul saves no input for backward.

    Full fine-tuning: everything trains. LoRA: the norms are frozen and only the targeted linears
    save their inputs (PEFT's lora_A consumes the same input as the base layer).
    """

    norm_weights: bool = True
    attn_in: bool = True  # q/k/v (or fused qkv) train -> the input norm's output is saved
    attn_out: bool = True  # o_proj trains -> its (contiguous) input is saved
    mlp_in: bool = True  # gate/up train -> the post-attention norm's output is saved
    mlp_out: bool = True  # down_proj trains -> the SwiGLU product is saved
    # PEFT LoRA with fp32 adapters under autocast (peft/tuners/lora/layer.py Linear.forward:
    # `x = self._cast_input_dtype(x, lora_A.weight.dtype)`, then autocast casts it back to 16 bits for
    # lora_A's matmul): every targeted linear saves its OWN 16-bit copy of its input instead of sharing
    # the producer's tensor. Counts: how many targeted linears read each input (traced llama-2-7b
    # LoRA q,v: +2h B/token/layer over one shared copy; qwen3-8b: exact with the q/k-norm terms).
    own_input_copies: bool = False
    attn_in_targets: int = 0
    mlp_in_targets: int = 0
    # DoRA (peft/tuners/lora/dora.py DoraLinearLayer.forward): the base output and the LoRA output
    # are each saved by their mul with the magnitude scale: 2 x B x out_features per targeted linear
    # (traced llama-3-8b DoRA q,v: +20 KB/token/layer = 2 x 2 x (4096 + 1024)).
    dora_out_features: int = 0
    # bitsandbytes 4-/8-bit base linears keep their input for backward even though their weight is
    # frozen (bitsandbytes/autograd/_functions.py MatMul4Bit.forward: `if any(ctx.needs_input_grad[:2]):
    # ctx.tensors = (A, B)`; the input requires grad through the residual stream): QLoRA saves every
    # linear's input, shared by the base layers reading the same tensor. That is bitsandbytes < 0.43.3,
    # what the published QLoRA rows ran (litgpt: 0.41-0.42); 0.43.3 saves `ctx.tensors = (None, B)`
    # (bitsandbytes-foundation/bitsandbytes autograd/_functions.py at 012c660), so for current versions
    # this is a conservative overcount, kept on purpose (an underestimate is the worse error).
    base_saves_inputs: bool = False
    # PEFT lora_dropout > 0 (nn.Dropout on the LoRA path's input, peft/tuners/lora/layer.py
    # update_layer): each targeted linear saves its dropped copy (an own input copy) and the dropout's
    # 1-byte mask (aten native_dropout) per input element.
    lora_dropout: bool = False

    @classmethod
    @lru_cache(maxsize=256)  # a frozen value per distinct (targets, copies)
    def for_targets(
        cls, targets: tuple[str, ...] | frozenset[str], *, own_input_copies: bool = False
    ) -> SaveMask:
        t = set(targets)
        return cls(
            norm_weights=False,
            attn_in=bool(t & ATTN_IN_LINEARS),
            attn_out=bool(t & ATTN_OUT_LINEARS),
            mlp_in=bool(t & MLP_IN_LINEARS),
            mlp_out=bool(t & MLP_OUT_LINEARS),
            own_input_copies=own_input_copies,
            # projections reading the norm output (MLA: q_proj/q_a_proj and kv_a_proj_with_mqa)
            attn_in_targets=len(t & (ATTN_IN_LINEARS - {"q_b_proj", "kv_b_proj"})),
            mlp_in_targets=len(t & MLP_IN_LINEARS),
        )


FULL_MASK = SaveMask()


class LayerActivations(NamedTuple):
    """Bytes saved by one (average) layer for one micro-batch on one GPU."""

    full: int  # everything saved without recompute
    core: int  # the attention-core part selective recompute drops
    layer_input: int  # the layer's input, what full recompute keeps
    texts: Callable[[], tuple[str, str]]  # (formula, substituted), made only when shown

    @property
    def formula(self) -> str:
        return self.texts()[0]

    @property
    def substituted(self) -> str:
        return self.texts()[1]


def _div(x: float, t: int) -> float:
    return x / t


class GptBlock:
    """Korthikanti et al. 2022, Table 2 (GPT-3 style block, 16-bit activations, 1-byte dropout masks)."""

    source = "Korthikanti et al. 2022 (Reducing Activation Recomputation), Table 2 / eqs. (1)-(2)"

    def per_layer(
        self,
        arch: Architecture,
        *,
        b: int,
        s: int,
        act_bytes: int,
        residual_bytes: int,
        flash: bool,
        tp: int,
        sp: bool,
        mask: SaveMask = FULL_MASK,
        kernel: str = "",
    ) -> LayerActivations:
        flash = (kernel or ("flash" if flash else "eager")) == "flash"
        h, a = arch.hidden_size, arch.num_attention_heads
        scale = act_bytes / 2  # the 34 and 5 assume 2-byte activations
        if tp == 1:
            sbh_coeff = cal.KORTHIKANTI_SBH
            coeff_text = f"{cal.KORTHIKANTI_SBH}"
        elif sp:
            sbh_coeff = cal.KORTHIKANTI_SBH / tp
            coeff_text = f"{cal.KORTHIKANTI_SBH}/{tp}"
        else:
            sbh_coeff = cal.KORTHIKANTI_TP_REPLICATED_SBH + cal.KORTHIKANTI_TP_SHARDED_SBH / tp
            coeff_text = f"{cal.KORTHIKANTI_TP_REPLICATED_SBH} + {cal.KORTHIKANTI_TP_SHARDED_SBH}/{tp}"
        base = s * b * h * sbh_coeff * scale
        if flash:
            core = cal.FLASH_LSE_BYTES_PER_HEAD * a * s * b / tp
            formula = f"A_layer = s x b x h x ({coeff_text}) + 4 x a x s x b / t (flash)"
            core_text = f"4 x {a} x {s} x {b} / {tp}"
        else:
            core = cal.KORTHIKANTI_SCORES * a * s * s * b * scale / tp
            formula = f"A_layer = s x b x h x ({coeff_text}) + 5 x a x s^2 x b / t"
            core_text = f"5 x {a} x {s}^2 x {b} / {tp}"
        full = int(base + core)
        return LayerActivations(
            full,
            int(core),
            s * b * h * residual_bytes // (tp if sp else 1),
            lambda: (formula, f"{s} x {b} x {h} x ({coeff_text}) x {scale:g} + {core_text} = {full:,} B"),
        )


class LlamaBlock:
    """HF Llama-style decoder layer (modeling_llama.py), constants in tools/calibration.py."""

    source = (
        "autograd saved tensors of transformers modeling_llama.py LlamaDecoderLayer (RMSNorm fp32 upcast, "
        "SwiGLU, SDPA/eager attention); constants in tools/calibration.py"
    )

    def per_layer(
        self,
        arch: Architecture,
        *,
        b: int,
        s: int,
        act_bytes: int,
        residual_bytes: int,
        flash: bool,
        tp: int,
        sp: bool,
        mask: SaveMask = FULL_MASK,
        kernel: str = "",
    ) -> LayerActivations:
        kernel = kernel or ("flash" if flash else "eager")
        B, h, a, d = act_bytes, arch.hidden_size, arch.num_attention_heads, arch.d_head
        tok = s * b
        norm_div = tp if sp else 1
        norm, own, out_copy = self._norm_bytes(arch, B, residual_bytes, mask)
        attn, latent_norms = self._attention_bytes(arch, B, mask, kernel, own, out_copy)
        norm += latent_norms
        mlp = self._mlp_per_token(arch, B, mask)
        attn += cal.DORA_SAVED_OUTPUT_COPIES * B * mask.dora_out_features
        if mask.lora_dropout:  # 1-byte dropout masks of every targeted linear's input
            attn += cal.DROPOUT_MASK_BYTES * (
                (mask.attn_in_targets + mask.mlp_in_targets) * h
                + (a * d if mask.attn_out else 0)
                + (arch.intermediate_size if mask.mlp_out else 0)
            )
        core = self._core_bytes(arch, B, s, b, tp, kernel)
        per_tok = norm / norm_div + (attn + mlp) / tp
        full = int(tok * per_tok + core)
        # readable: bytes saved per token by the norms, the attention projections and the MLP, then the core

        def texts() -> tuple[str, str]:
            norm_tok, attn_tok, mlp_tok = norm / norm_div, attn / tp, mlp / tp
            formula = (
                "A_layer = s x b x (B_norms + B_attn/t + B_mlp/t)"
                if tp > 1
                else "A_layer = s x b x (B_norms + B_attn + B_mlp)"
            ) + {"flash": " + A_core (flash)", "math": " + A_core (SDPA math)"}.get(
                kernel, " + A_core (eager)"
            )
            subst = f"{s:,} x {b} x ({norm_tok:,.0f} + {attn_tok:,.0f} + {mlp_tok:,.0f}) B + {core:,.0f} B = {full:,} B"
            return formula, subst

        return LayerActivations(full, int(core), tok * h * residual_bytes // (tp if sp else 1), texts)

    def _norm_bytes(
        self, arch: Architecture, B: int, residual_bytes: int, mask: SaveMask
    ) -> tuple[float, float, float]:
        """(bytes per token saved by the layer's norms, one norm's own saved bytes per element, the
        16-bit output copy per element)."""
        h = arch.hidden_size
        # norms (replicated under TP without SP): the fp32 upcast copy always; the normalised tensor
        # when the norm weight trains; the output when a consuming linear trains. The first two norms
        # feed attention and MLP; extra ones (Gemma's post-norms) feed the residual add.
        # `weight * hidden.to(input_dtype)` saves the normalised tensor in the residual dtype (fp32
        # under amp: fp32 embeddings keep the residual stream fp32)
        upcast = cal.RMSNORM_FP32_UPCAST_BYTES
        # (GemmaRMSNorm: `x * (1 + weight.float())` always in fp32)
        normed = cal.RMSNORM_NORMALIZED_SAVED_COPIES * (4 if arch.norm_fp32_scale else residual_bytes)
        out_copy = cal.RMSNORM_OUTPUT_SAVED_COPIES * B
        own = upcast + (normed if mask.norm_weights else 0)
        attn_in_n, mlp_in_n = self._input_consumers(arch, mask, residual_bytes != B)
        norm = (
            2 * own + out_copy * (attn_in_n + mlp_in_n) + max(0, arch.norms_per_layer - 2) * own
        ) * h + cal.RMSNORM_RSQRT_BYTES * arch.norms_per_layer
        return norm, own, out_copy

    @staticmethod
    def _attention_bytes(
        arch: Architecture, B: int, mask: SaveMask, kernel: str, own: float, out_copy: float
    ) -> tuple[float, float]:
        """(bytes per token saved by the attention projections, MLA latent norms' bytes per token)."""
        a, d = arch.num_attention_heads, arch.d_head
        latent_norms = 0
        o_in = cal.ATTN_O_PROJ_INPUT_COPIES if mask.attn_out else 0
        if mask.attn_out and mask.own_input_copies:
            o_in = 1  # the LoRA path's own 16-bit copy of o_proj's input
        if arch.kv_lora_rank:  # MLA: per-head q/k of (nope + rope), v of v_head_dim, latent norms
            qk = int(arch.qk_nope_head_dim or 0) + int(arch.qk_rope_head_dim or 0)
            vd = int(arch.v_head_dim or d)
            attn = B * a * (2 * qk + vd) + (cal.ATTN_OUT_SAVED_COPIES + o_in) * B * a * vd
            latent_norms = (own + (out_copy if mask.attn_in else 0)) * (
                int(arch.kv_lora_rank) + int(arch.q_lora_rank or 0)
            )
        elif kernel == "math":
            # SDPA math kernel (torch/nn/attention _scaled_dot_product_attention_math): scaled q, scaled
            # and head-expanded k, expanded v, and the output: 4 tensors of a*d (traced tinyllama fp32)
            attn = cal.MATH_SDPA_AD_SAVED_COPIES * B * a * d + o_in * B * a * d
        else:
            kv_heads = a if (kernel != "flash" and cal.EAGER_KV_REPEAT) else max(1, arch.kv_heads)
            attn = (
                cal.ATTN_Q_SAVED_COPIES * B * a * d
                + cal.ATTN_KV_SAVED_COPIES * B * kv_heads * d
                + (cal.ATTN_OUT_SAVED_COPIES + o_in) * B * a * d
            )
        if arch.qk_norm:
            # Qwen3/Gemma3 q_norm/k_norm: per-head RMSNorm before RoPE (RoPE's mul saves only cos/sin):
            # fp32 upcast (+ normalised copy when the weight trains) of a+g heads, one fp32 rsqrt per head
            heads = a + max(1, arch.kv_heads)
            upcast = cal.RMSNORM_FP32_UPCAST_BYTES
            attn += (upcast + (B if mask.norm_weights else 0)) * heads * d + cal.RMSNORM_RSQRT_BYTES * heads
        return attn, latent_norms

    @staticmethod
    def _core_bytes(arch: Architecture, B: int, s: int, b: int, tp: int, kernel: str) -> float:
        """The attention core of one layer: flash's fp32 log-sum-exp, or the materialised scores."""
        a = arch.num_attention_heads
        if kernel == "flash":
            core_tok = cal.FLASH_LSE_BYTES_PER_HEAD * a
            return s * b * core_tok / tp
        if kernel == "math":  # the softmax output (compute dtype), also what matmul(probs, v) saves
            return B * a * s * s * b / tp
        # fp32 softmax output + B-byte probabilities per score element (one tensor under fp32)
        per_score = cal.EAGER_SOFTMAX_FP32_BYTES + (cal.EAGER_PROBS_SAVED_COPIES * B if B != 4 else 0)
        if arch.attn_logit_softcapping:  # Gemma-2: tanh(scores / cap) saves its output
            per_score += B
        return per_score * a * s * s * b / tp

    @staticmethod
    def _input_consumers(arch: Architecture, mask: SaveMask, fp32_norm_out: bool) -> tuple[int, int]:
        """16-bit copies of the two norm outputs saved for backward (attention input, MLP input).

        One shared tensor when the norm output is already 16-bit and its consumers' weights train;
        one copy PER consumer when each consumer casts it: autocast over an fp32 norm output (amp:
        fp32 residual, each linear's autocast cast is a separate tensor), or PEFT's fp32 LoRA path."""
        from tools.model.params import NAMINGS

        if mask.own_input_copies:
            base = int(mask.base_saves_inputs)
            return mask.attn_in_targets + base, mask.mlp_in_targets + base
        if not fp32_norm_out:
            return int(mask.attn_in), int(mask.mlp_in)
        naming = NAMINGS.get(arch.module_names, NAMINGS["llama"])
        attn_n = 1 if naming.qkv else (2 if arch.kv_lora_rank else 3)
        mlp_n = 1 if (naming.gate_up or not arch.gated_mlp) else 2
        return attn_n * int(mask.attn_in), mlp_n * int(mask.mlp_in)

    @staticmethod
    def _mlp_per_token(arch: Architecture, B: int, mask: SaveMask) -> float:
        copies = cal.MLP_GATED_SAVED_COPIES if arch.gated_mlp else cal.MLP_PLAIN_SAVED_COPIES
        copies += cal.MLP_DOWN_INPUT_COPIES * (int(mask.mlp_out) + int(mask.base_saves_inputs))
        dense = copies * B * arch.intermediate_size
        if not arch.is_moe:
            return dense
        k = int(arch.num_experts_per_tok or 1)
        moe_i = int(arch.moe_intermediate_size or arch.intermediate_size)
        shared_i = int(arch.shared_expert_intermediate_size or arch.num_shared_experts * moe_i)
        moe = (
            k * (copies * B * moe_i + cal.MOE_DISPATCH_SAVED_COPIES * B * arch.hidden_size)
            + copies * B * shared_i
            + cal.MOE_ROUTER_FP32_BYTES_PER_EXPERT * int(arch.num_experts or 0)
        )
        n_moe, n = arch.num_moe_layers, arch.num_hidden_layers
        return (moe * n_moe + dense * (n - n_moe)) / n  # average over dense and MoE layers


class HfGpt2Block:
    """transformers modeling_gpt2.py GPT2Block as HF trains it (no TP): LayerNorm, Conv1D, SDPA,
    dropout 0.1 masks and the composite tanh GELU (`gelu_new`, activations.NewGELUActivation), whose
    intermediates Korthikanti's 34 sbh (a fused GELU) does not have. Traced per token per layer:
    60 h x B/2 (bf16 46,136 B and fp32 92,176 B at h = 768), amp 64 h (fp32 LayerNorm outputs cast
    per Conv1D), plus the attention core as in GptBlock. LoRA save masks are not applied (the
    full-training figure: an overestimate for LoRA on GPT-2)."""

    source = (
        "traced transformers modeling_gpt2.py GPT2Block (benchmarks/accuracy); tools/calibration.py HF_GPT2_*"
    )

    def per_layer(
        self,
        arch: Architecture,
        *,
        b: int,
        s: int,
        act_bytes: int,
        residual_bytes: int,
        flash: bool,
        tp: int,
        sp: bool,
        mask: SaveMask = FULL_MASK,
        kernel: str = "",
    ) -> LayerActivations:
        if tp > 1:  # Megatron-style TP: Korthikanti's split terms
            return GptBlock().per_layer(
                arch,
                b=b,
                s=s,
                act_bytes=act_bytes,
                residual_bytes=residual_bytes,
                flash=flash,
                tp=tp,
                sp=sp,
                kernel=kernel,
            )
        flash = (kernel or ("flash" if flash else "eager")) == "flash"
        h, a = arch.hidden_size, arch.num_attention_heads
        coeff = cal.HF_GPT2_SBH_16BIT * act_bytes / 2
        if residual_bytes != act_bytes:  # amp
            coeff += cal.HF_GPT2_AMP_EXTRA_SBH
        base = s * b * h * coeff
        if flash:
            core = cal.FLASH_LSE_BYTES_PER_HEAD * a * s * b
            core_text = "4 x a x s x b (flash)"
        else:
            core = cal.KORTHIKANTI_SCORES * a * s * s * b * act_bytes / 2
            core_text = "5 x a x s^2 x b x B/2 (eager)"
        full = int(base + core)
        return LayerActivations(
            full,
            int(core),
            s * b * h * residual_bytes,
            lambda: (
                f"A_layer = s x b x h x {coeff:g} + {core_text}",
                f"{s:,} x {b} x {h} x {coeff:g} + {int(core):,} B = {full:,} B",
            ),
        )


def block_for(arch: Architecture) -> GptBlock | LlamaBlock | HfGpt2Block:
    if arch.block_style == "gpt":
        return HfGpt2Block() if arch.module_names == "gpt2" else GptBlock()
    return LlamaBlock()


class StageActivations(NamedTuple):
    """Saved activations of one pipeline stage: the peak, what is kept through backward and what lives only while a recomputed layer runs."""

    bytes: int  # at the largest moment: kept + live
    source: str
    # (formula, substituted, kept_formula, kept_substituted), made only when shown; the kept texts
    # describe `kept` alone (full recompute: without the recomputed layer)
    texts: Callable[[], tuple[str, str, str, str]]
    kept: int = 0  # saved through forward and backward (all layers; full recompute: the layer inputs)
    live: int = 0  # full recompute: the recomputed layer's activations, only while its backward runs
    layer_full: int = 0  # one layer's full saved set (the last layer's backward runs with it alive)

    @property
    def formula(self) -> str:
        return self.texts()[0]

    @property
    def substituted(self) -> str:
        return self.texts()[1]

    @property
    def kept_formula(self) -> str:
        return self.texts()[2]

    @property
    def kept_substituted(self) -> str:
        return self.texts()[3]


class NoRecompute:
    name = "none"

    def total(self, layer: LayerActivations, n_layers: int, in_flight: int) -> int:
        return in_flight * n_layers * layer.full

    def stage(self, layer: LayerActivations, n_layers: int, in_flight: int) -> tuple[int, str, str]:
        """(total, formula, substituted)."""
        total = self.total(layer, n_layers, in_flight)
        return (
            total,
            "m_flight x L_local x A_layer",
            f"{in_flight} x {n_layers} x {layer.full:,} B = {total:,} B",
        )


class SelectiveRecompute:
    name = "selective"

    def total(self, layer: LayerActivations, n_layers: int, in_flight: int) -> int:
        return in_flight * n_layers * (layer.full - layer.core)

    def stage(self, layer: LayerActivations, n_layers: int, in_flight: int) -> tuple[int, str, str]:
        """(total, formula, substituted)."""
        total = self.total(layer, n_layers, in_flight)
        return (
            total,
            "m_flight x L_local x (A_layer - A_core)",
            f"{in_flight} x {n_layers} x ({layer.full:,} - {layer.core:,}) B = {total:,} B",
        )


class FullRecompute:
    name = "full"

    def total(self, layer: LayerActivations, n_layers: int, in_flight: int) -> int:
        return in_flight * n_layers * layer.layer_input + cal.RECOMPUTE_LIVE_LAYERS * layer.full

    def stage(self, layer: LayerActivations, n_layers: int, in_flight: int) -> tuple[int, str, str]:
        """(total, formula, substituted)."""
        live = cal.RECOMPUTE_LIVE_LAYERS * layer.full
        total = self.total(layer, n_layers, in_flight)
        return (
            total,
            "m_flight x L_local x A_in + A_recomputed",
            f"{in_flight} x {n_layers} x {layer.layer_input:,} B + {live:,} B = {total:,} B",
        )


RECOMPUTE: dict[str, NoRecompute | SelectiveRecompute | FullRecompute] = {
    "none": NoRecompute(),
    "selective": SelectiveRecompute(),
    "full": FullRecompute(),
}


def stage_activations(
    arch: Architecture,
    *,
    b: int,
    s: int,
    act_bytes: int,
    residual_bytes: int,
    flash: bool,
    tp: int,
    sp: bool,
    recompute: str,
    n_layers: int,
    in_flight: int,
    mask: SaveMask = FULL_MASK,
    kernel: str = "",
) -> StageActivations:
    """Activation bytes one pipeline stage holds at the end of forward (s = tokens on this CP rank)."""
    block = block_for(arch)
    layer = block.per_layer(
        arch,
        b=b,
        s=s,
        act_bytes=act_bytes,
        residual_bytes=residual_bytes,
        flash=flash,
        tp=tp,
        sp=sp,
        mask=mask,
        kernel=kernel,
    )
    rule = RECOMPUTE[recompute]
    total = rule.total(layer, n_layers, in_flight)
    live = cal.RECOMPUTE_LIVE_LAYERS * layer.full if recompute == "full" else 0

    def texts() -> tuple[str, str, str, str]:
        _, formula, subst = rule.stage(layer, n_layers, in_flight)
        layer_f, layer_s = layer.texts()
        kept_f, kept_s = f"{formula}; {layer_f}", f"{subst}; A_layer = {layer_s}"
        if live:
            kept_f = f"m_flight x L_local x A_in; {layer_f}"
            kept_s = (
                f"{in_flight} x {n_layers} x {layer.layer_input:,} B = {total - live:,} B"
                f"; A_layer = {layer_s}"
            )
        return f"{formula}; {layer_f}", f"{subst}; A_layer = {layer_s}", kept_f, kept_s

    return StageActivations(
        total,
        block.source,
        texts,
        kept=total - live,
        live=live,
        layer_full=layer.full if n_layers else 0,
    )


def inference_transient(
    arch: Architecture, *, b: int, s: int, act_bytes: int, flash: bool, tp: int
) -> tuple[int, str, str]:
    """(bytes, formula, substituted) of the largest live set inside one layer during a no-grad forward
    over s tokens of b sequences."""
    total, texts = inference_transient_entry(arch, b=b, s=s, act_bytes=act_bytes, flash=flash, tp=tp)
    return total, *texts()


def eager_softmax_bytes(act_bytes: int, *, fp16: bool, fp32_softmax: bool = True) -> int:
    """Bytes live per attention score at eager attention's softmax (modeling_llama.eager_attention_forward:
    `softmax(scores + mask, dim=-1, dtype=torch.float32).to(query.dtype)`): the 16-bit input, the fp32
    output, and the larger of the fp32 copy of the input and the cast probabilities. PyTorch
    aten/src/ATen/native/SoftMax.cpp `softmax(input, dim, dtype)` runs the fused half_to_float kernel only for
    fp16 on CUDA; a bf16 input is first copied to fp32 (`input_.toType(dtype)`), that copy alive beside the
    fp32 output (traced: llama-3-8b b8 s4096, gemma-2-2b b4 s4096). An fp32 input is neither copied nor cast.
    `fp32_softmax` False: GPT-2/Falcon-style blocks take the softmax in the scores' own dtype (modeling_gpt2
    eager_attention_forward `softmax(attn_weights, dim=-1)`): the scores and one more copy (traced gpt2-medium
    b8 s1024: the bmm output and its scaled copy)."""
    if not fp32_softmax:
        return 2 * act_bytes
    upcast = 0 if act_bytes == 4 or fp16 else cal.EAGER_SOFTMAX_FP32_BYTES
    cast = 0 if act_bytes == 4 else act_bytes
    return act_bytes + cal.EAGER_SOFTMAX_FP32_BYTES + max(upcast, cast)


def inference_transient_entry(
    arch: Architecture, *, b: int, s: int, act_bytes: int, flash: bool, tp: int, fp16: bool = False
) -> tuple[int, Callable[[], tuple[str, str]]]:
    """`inference_transient` as (bytes, a callable making (formula, substituted) when shown). Eager
    attention: the larger of the MLP's moment and the softmax's moment (scores, masks, the residual stream
    and repeat_kv's a-head K and V copies); `fp16`: fp16 compute (CUDA's fused fp16 softmax)."""
    B, h, a = act_bytes, arch.hidden_size, arch.num_attention_heads
    if arch.is_moe:
        moe_i = int(arch.moe_intermediate_size or arch.intermediate_size)
        shared_i = int(arch.shared_expert_intermediate_size or arch.num_shared_experts * moe_i)
        width_i = max(
            arch.intermediate_size if arch.num_dense_layers else 0,
            int(arch.num_experts_per_tok or 1) * moe_i + shared_i,
        )
    else:
        width_i = arch.intermediate_size
    tok = s * b
    i_copies = cal.INFERENCE_TRANSIENT_I_COPIES if arch.gated_mlp else cal.INFERENCE_TRANSIENT_I_COPIES_PLAIN
    per_tok = (cal.INFERENCE_TRANSIENT_H_COPIES * B + cal.INFERENCE_FP32_NORM_BYTES) * h + (
        i_copies * B * width_i
    ) / tp
    mla = 0.0
    if arch.kv_lora_rank:  # transformers MLA decompresses per-head q, k (nope + rope) and v for the prompt
        qk = int(arch.qk_nope_head_dim or 0) + int(arch.qk_rope_head_dim or 0)
        mla = B * a * (2 * qk + int(arch.v_head_dim or arch.d_head)) / tp
        per_tok += mla
    total = int(tok * per_tok)
    if flash:
        return total, _transient_texts(s, b, B, h, i_copies, width_i, tp, mla, arch, total)
    # the softmax's moment: per score the live bytes of eager_softmax_bytes; the (b, 1, s, s) 16-bit masks (one
    # per attention kind: causal, sliding); per token the residual stream's copies and q/k/v at a heads
    per_score = eager_softmax_bytes(B, fp16=fp16, fp32_softmax=arch.block_style == "llama")
    n_masks = 2 if arch.sliding_window else 1
    scores = per_score * a * s * s * b // tp + n_masks * B * s * s * b
    around = cal.EAGER_MOMENT_H_COPIES * B * h + cal.EAGER_MOMENT_HEAD_COPIES * B * a * arch.d_head // tp
    softmax_moment = tok * (around + int(mla)) + scores
    mlp_moment = total
    total = max(mlp_moment, softmax_moment)

    def texts() -> tuple[str, str]:
        mlp_f, mlp_s = _transient_texts(s, b, B, h, i_copies, width_i, tp, mla, arch, mlp_moment)()
        formula = (
            f"max({mlp_f}, s x b x ({cal.EAGER_MOMENT_H_COPIES} x B x h + {cal.EAGER_MOMENT_HEAD_COPIES} x B x a x d"
            " / t) + (c_softmax x a / t + n_masks x B) x s^2 x b) (eager)"
        )
        subst = (
            f"max({mlp_s}, {s:,} x {b} x {around:,} B + ({per_score} x {a} / {tp} + {n_masks} x {B}) x "
            f"{s:,}^2 x {b} B = {softmax_moment:,} B) = {total:,} B"
        )
        return formula, subst

    return total, texts


def _transient_texts(
    s: int,
    b: int,
    B: int,
    h: int,
    i_copies: int,
    width_i: int,
    tp: int,
    mla: float,
    arch: Architecture,
    total: int,
) -> Callable[[], tuple[str, str]]:
    """(formula, substituted) of the MLP's moment of a no-grad forward (the whole transient with flash)."""

    def texts() -> tuple[str, str]:
        extra_text = f" + {mla:,.0f}" if arch.kv_lora_rank else ""
        inner = f"(2 x B + 4) x h + {i_copies} x B x i / t" + (" + B_mla" if arch.kv_lora_rank else "")
        subst = (
            f"{s:,} x {b} x ({(cal.INFERENCE_TRANSIENT_H_COPIES * B + 4) * h:,} + {i_copies} x {B} x {width_i:,} / {tp}"
            f"{extra_text}) B = {total:,} B"
        )
        return f"s x b x ({inner})", subst

    return texts


def final_norm_bytes(
    arch: Architecture, *, tokens: int, act_bytes: int, residual_bytes: int, trains: bool
) -> int:
    """Saved tensors of the final norm before the LM head (whole model trains: its weight and the LM
    head's; LoRA: only the fp32 upcast). RMSNorm (modeling_llama LlamaRMSNorm): fp32 upcast + rsqrt
    per token, the normalised tensor (residual dtype) and the LM head's 16-bit input when they train.
    LayerNorm (GPT-2): its input + mean/rstd per token, the LM head's input when it trains."""
    h = arch.hidden_size
    out = act_bytes if trains else 0
    if arch.block_style == "gpt":
        return tokens * ((residual_bytes + out) * h + 8)
    return tokens * ((cal.RMSNORM_FP32_UPCAST_BYTES + (residual_bytes if trains else 0) + out) * h + 4)
