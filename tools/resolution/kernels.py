"""Recompute strategy and the attention kernel.

Defaults: recompute none (HF Trainer gradient_checkpointing=False), full for QLoRA (PEFT
prepare_model_for_kbit_training enables gradient checkpointing by default). attention flash
(transformers >= 4.36 uses SDPA, whose flash/mem-efficient kernels do not materialise scores); fp32
activations fall back to the math kernel (eager-like) with GQA.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tools.resolution.defaults import Filled

if TYPE_CHECKING:
    from tools.model.architecture import Architecture
    from tools.rules.precision import Recipe
    from tools.scenario import Scenario


def recompute_strategy(sc: Scenario, task: str, f: Filled) -> str:
    if sc.recompute is not None:
        recompute = sc.recompute
        if sc.gradient_checkpointing is not None and sc.gradient_checkpointing != (recompute == "full"):
            f.note(
                "recompute_disagrees", gradient_checkpointing=sc.gradient_checkpointing, recompute=recompute
            )
        return recompute
    if sc.gradient_checkpointing is not None:
        return "full" if sc.gradient_checkpointing else "none"
    if task == "qlora":
        # PEFT prepare_model_for_kbit_training enables gradient checkpointing by default
        return f.fill("recompute", "full", "recompute.qlora_default")
    if task != "inference":
        return f.fill("recompute", "none", "recompute.trainer_default")
    return "none"


def attention_kernel(
    sc: Scenario, arch: Architecture, recipe: Recipe | None, weight_dtype: str, f: Filled
) -> str:
    """flash (incl. memory-efficient) | math | eager: what the GPU runs."""
    attention = sc.attention or f.fill("attention", "flash", "attention.sdpa_default")
    act_bytes = recipe.activation_bytes if recipe else (4 if weight_dtype == "fp32" else 2)
    # The SDPA kernel a CUDA GPU picks (torch sdp_utils.cpp): flash for 16-bit inputs; for fp32 the
    # memory-efficient kernel (same memory as flash: output + fp32 log-sum-exp), except with GQA, where
    # transformers passes enable_gqa (integrations/sdpa_attention.py) and only the math kernel accepts it.
    kernel = "eager" if attention == "eager" else "flash"
    if kernel == "flash" and act_bytes == 4:
        if arch.kv_heads < arch.num_attention_heads and not arch.kv_lora_rank:
            kernel = "math"
            f.note("fp32_gqa_math_kernel")
        else:
            f.note("fp32_mem_efficient_kernel")
    return kernel
