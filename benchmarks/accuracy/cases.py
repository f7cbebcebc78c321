"""The traced accuracy matrix: real catalog models x tasks x recipes x batch x sequence x recompute.

Each case is one Scenario; the same Scenario goes to the estimator and (through
`tools.trace.request.plan_from_scenario`) to the tracer, so both measure one job. Every other
case (by position) is held out of calibration: `split` is "calibration" or "held_out".
QLoRA is not in the matrix: bitsandbytes' 4-bit kernels do not run on fake CPU tensors.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

GPU = "h100-80gb"  # the verdict's card; tensor_peak_bytes does not depend on it

# (model, task, recipe, batch, seq, checkpointing, extra scenario fields)
# recipe: fp32 / amp / bf16 for full fine-tuning; "-" for LoRA (bf16 base, fp32 adapters, bf16
# autocast: transformers Trainer bf16=True) and inference (bf16 weights).
_MATRIX: list[tuple[str, str, str, int, int, bool, dict[str, Any]]] = [
    # Llama-2-7B: MHA, 32k vocabulary (7B class)
    ("llama-2-7b", "full_finetune", "amp", 1, 512, False, {}),
    ("llama-2-7b", "full_finetune", "amp", 2, 2048, True, {}),
    ("llama-2-7b", "full_finetune", "bf16", 4, 1024, False, {}),
    ("llama-2-7b", "full_finetune", "fp32", 1, 1024, True, {}),
    ("llama-2-7b", "full_finetune", "amp", 1, 1024, False, {"attention": "eager"}),
    ("llama-2-7b", "lora", "-", 4, 2048, False, {"lora_rank": 16}),
    ("llama-2-7b", "lora", "-", 8, 4096, True, {"lora_rank": 64, "lora_targets": ["all-linear"]}),
    ("llama-2-7b", "inference", "-", 1, 4096, False, {}),
    ("llama-2-7b", "inference", "-", 8, 2048, False, {}),
    # Llama-3-8B: GQA 32/8, 128k vocabulary
    ("llama-3-8b", "full_finetune", "amp", 1, 2048, False, {}),
    ("llama-3-8b", "full_finetune", "bf16", 2, 4096, True, {}),
    ("llama-3-8b", "full_finetune", "amp", 8, 1024, True, {}),
    ("llama-3-8b", "full_finetune", "fp32", 1, 512, False, {}),
    ("llama-3-8b", "full_finetune", "bf16", 1, 2048, False, {"attention": "eager"}),
    ("llama-3-8b", "lora", "-", 1, 512, False, {"lora_rank": 8}),
    ("llama-3-8b", "lora", "-", 4, 2048, True, {"lora_rank": 16, "lora_targets": ["all-linear"]}),
    ("llama-3-8b", "lora", "-", 2, 1024, False, {"lora_rank": 16, "dora": True}),
    ("llama-3-8b", "inference", "-", 4, 8192, False, {}),
    ("llama-3-8b", "inference", "-", 1, 512, False, {}),
    # Llama-3-70B (70B class)
    ("llama-3-70b", "full_finetune", "bf16", 1, 2048, True, {}),
    ("llama-3-70b", "full_finetune", "bf16", 1, 8192, True, {}),
    ("llama-3-70b", "full_finetune", "amp", 1, 1024, True, {}),
    ("llama-3-70b", "lora", "-", 1, 4096, True, {"lora_rank": 16}),
    ("llama-3-70b", "lora", "-", 2, 2048, True, {"lora_rank": 64, "lora_targets": ["all-linear"]}),
    ("llama-3-70b", "inference", "-", 1, 8192, False, {}),
    ("llama-3-70b", "inference", "-", 8, 4096, False, {}),
    # Mistral-7B-v0.1: GQA, sliding window 4096
    ("mistral-7b-v0.1", "full_finetune", "amp", 2, 2048, False, {}),
    ("mistral-7b-v0.1", "full_finetune", "bf16", 1, 8192, True, {}),
    ("mistral-7b-v0.1", "lora", "-", 4, 4096, True, {"lora_rank": 16}),
    ("mistral-7b-v0.1", "inference", "-", 4, 8192, False, {}),
    ("mistral-7b-v0.1", "inference", "-", 1, 2048, False, {}),
    # Qwen2.5-7B: GQA 28/4, qkv bias, 152k vocabulary
    ("qwen2.5-7b", "full_finetune", "amp", 1, 1024, False, {}),
    ("qwen2.5-7b", "full_finetune", "bf16", 4, 2048, True, {}),
    ("qwen2.5-7b", "lora", "-", 2, 4096, True, {"lora_rank": 16, "lora_targets": ["all-linear"]}),
    ("qwen2.5-7b", "lora", "-", 8, 1024, False, {"lora_rank": 8}),
    ("qwen2.5-7b", "inference", "-", 2, 8192, False, {}),
    ("qwen2.5-7b", "full_finetune", "fp32", 1, 512, True, {}),
    # Qwen3-8B: q/k RMSNorm
    ("qwen3-8b", "full_finetune", "bf16", 1, 4096, False, {}),
    ("qwen3-8b", "full_finetune", "amp", 2, 1024, True, {}),
    ("qwen3-8b", "lora", "-", 4, 2048, False, {"lora_rank": 32}),
    ("qwen3-8b", "inference", "-", 8, 1024, False, {}),
    ("qwen3-8b", "lora", "-", 1, 2048, True, {"lora_rank": 8, "lora_targets": ["all-linear"], "dora": True}),
    # Gemma-2-2B: 4 norms per layer, 256k vocabulary, eager attention (transformers has no SDPA path)
    ("gemma-2-2b", "full_finetune", "amp", 1, 1024, False, {"attention": "eager"}),
    ("gemma-2-2b", "full_finetune", "bf16", 4, 2048, True, {"attention": "eager"}),
    ("gemma-2-2b", "lora", "-", 2, 4096, True, {"lora_rank": 16, "attention": "eager"}),
    ("gemma-2-2b", "inference", "-", 4, 4096, False, {"attention": "eager"}),
    ("gemma-2-2b", "full_finetune", "fp32", 2, 512, False, {"attention": "eager"}),
    # Mixtral-8x7B: MoE 8 experts top-2 (bf16: experts run through torch._grouped_mm)
    ("mixtral-8x7b", "full_finetune", "bf16", 1, 2048, True, {}),
    ("mixtral-8x7b", "lora", "-", 2, 1024, True, {"lora_rank": 16}),
    ("mixtral-8x7b", "inference", "-", 4, 4096, False, {}),
    ("mixtral-8x7b", "inference", "-", 1, 512, False, {}),
    ("mixtral-8x7b", "full_finetune", "bf16", 4, 1024, False, {}),
    # Qwen3-30B-A3B: MoE 128 experts top-8
    ("qwen3-30b-a3b", "full_finetune", "bf16", 1, 1024, True, {}),
    ("qwen3-30b-a3b", "lora", "-", 4, 2048, True, {"lora_rank": 8}),
    ("qwen3-30b-a3b", "inference", "-", 2, 8192, False, {}),
    ("qwen3-30b-a3b", "full_finetune", "bf16", 2, 512, False, {}),
    # TinyLlama-1.1B: GQA 32/4, small model, activation-dominated
    ("tinyllama-1.1b", "full_finetune", "amp", 8, 2048, False, {}),
    ("tinyllama-1.1b", "full_finetune", "fp32", 4, 1024, False, {}),
    ("tinyllama-1.1b", "lora", "-", 8, 512, False, {"lora_rank": 8}),
    ("tinyllama-1.1b", "inference", "-", 8, 8192, False, {}),
    ("tinyllama-1.1b", "full_finetune", "bf16", 8, 8192, True, {}),
    ("tinyllama-1.1b", "full_finetune", "amp", 2, 2048, False, {"attention": "eager"}),
    # GPT-2 (124M): LayerNorm + GELU MLP, learned positions (max 1024)
    ("gpt2", "full_finetune", "amp", 8, 1024, False, {}),
    ("gpt2", "full_finetune", "fp32", 4, 1024, True, {}),
    ("gpt2", "inference", "-", 8, 1024, False, {}),
    # Phi-3-mini: fused qkv_proj / gate_up_proj
    ("phi-3-mini", "full_finetune", "bf16", 2, 2048, True, {}),
    ("phi-3-mini", "inference", "-", 4, 4096, False, {}),
    # DeepSeek-V2-Lite: MLA attention + MoE (64 experts top-6, 2 shared), traced as DeepseekV3 code
    ("deepseek-v2-lite", "inference", "-", 2, 4096, False, {}),
    ("deepseek-v2-lite", "full_finetune", "bf16", 1, 2048, True, {}),
    # Gemma-3-1B: q/k norms, 5:1 sliding-window:global layers, 262k vocabulary
    ("gemma-3-1b", "full_finetune", "amp", 2, 2048, False, {}),
    ("gemma-3-1b", "inference", "-", 4, 8192, False, {}),
    # PEFT lora_dropout 0.05 / 0.1 (alpha 2r, bf16 base, fp32 adapters, bf16 autocast): a 1-byte mask
    # (CUDA's fused native_dropout) and an own 16-bit input copy per targeted linear
    ("tinyllama-1.1b", "lora", "-", 1, 1024, False, {"lora_rank": 8, "lora_dropout": 0.05}),
    (
        "tinyllama-1.1b",
        "lora",
        "-",
        4,
        2048,
        False,
        {"lora_rank": 64, "lora_targets": ["all-linear"], "lora_dropout": 0.1},
    ),
    ("tinyllama-1.1b", "lora", "-", 2, 2048, True, {"lora_rank": 64, "lora_dropout": 0.1}),
    (
        "tinyllama-1.1b",
        "lora",
        "-",
        4,
        1024,
        True,
        {"lora_rank": 8, "lora_targets": ["all-linear"], "lora_dropout": 0.05},
    ),
    (
        "tinyllama-1.1b",
        "lora",
        "-",
        2,
        2048,
        False,
        {"lora_rank": 8, "lora_targets": ["all-linear"], "lora_dropout": 0.05},
    ),
    ("tinyllama-1.1b", "lora", "-", 4, 2048, False, {"lora_rank": 8, "lora_dropout": 0.1}),
    ("llama-2-7b", "lora", "-", 1, 2048, False, {"lora_rank": 8, "lora_dropout": 0.05}),
    (
        "llama-2-7b",
        "lora",
        "-",
        2,
        1024,
        False,
        {"lora_rank": 64, "lora_targets": ["all-linear"], "lora_dropout": 0.05},
    ),
    ("llama-2-7b", "lora", "-", 4, 1024, True, {"lora_rank": 64, "lora_dropout": 0.1}),
    (
        "llama-2-7b",
        "lora",
        "-",
        1,
        2048,
        True,
        {"lora_rank": 8, "lora_targets": ["all-linear"], "lora_dropout": 0.1},
    ),
    (
        "llama-2-7b",
        "lora",
        "-",
        4,
        2048,
        False,
        {"lora_rank": 8, "lora_targets": ["all-linear"], "lora_dropout": 0.1},
    ),
    ("llama-2-7b", "lora", "-", 2, 1024, True, {"lora_rank": 8, "lora_dropout": 0.05}),
    # DeepSpeed master-weight step at ZeRO-0, one rank: FP16_Optimizer (DeepSpeed wraps bf16 weights in it too)
    ("llama-3-8b", "full_finetune", "mixed", 1, 2048, True, {"weight_dtype": "bf16"}),
    ("llama-3-8b", "full_finetune", "mixed", 1, 2048, True, {"weight_dtype": "fp16"}),
    ("tinyllama-1.1b", "full_finetune", "mixed", 2, 1024, False, {"weight_dtype": "bf16"}),
    ("tinyllama-1.1b", "full_finetune", "mixed", 2, 1024, True, {"weight_dtype": "fp16"}),
    # memory savers: torchtune chunked CE, Liger fused linear CE, optimizer in backward, offloading
    ("llama-3-8b", "lora", "-", 2, 2048, True, {"lora_rank": 16, "cross_entropy": "chunked"}),
    ("llama-3-8b", "lora", "-", 2, 2048, True, {"lora_rank": 16, "cross_entropy": "fused_linear"}),
    ("tinyllama-1.1b", "full_finetune", "bf16", 4, 2048, False, {"cross_entropy": "chunked"}),
    ("tinyllama-1.1b", "full_finetune", "bf16", 4, 1024, False, {"cross_entropy": "fused_linear"}),
    ("qwen2.5-7b", "lora", "-", 2, 2048, True, {"lora_rank": 16, "cross_entropy": "chunked"}),
    ("qwen2.5-7b", "lora", "-", 4, 1024, True, {"lora_rank": 16, "cross_entropy": "fused_linear"}),
    ("llama-3-8b", "full_finetune", "bf16", 1, 2048, True, {"optimizer_in_backward": True}),
    ("tinyllama-1.1b", "full_finetune", "bf16", 2, 1024, True, {"optimizer_in_backward": True}),
    ("tinyllama-1.1b", "full_finetune", "bf16", 1, 512, True, {"activation_offloading": True}),
    ("llama-3-8b", "lora", "-", 2, 2048, True, {"lora_rank": 16, "activation_offloading": True}),
    # LoRA on the LM head / token embedding (PEFT Linear / Embedding LoRA, named explicitly)
    (
        "tinyllama-1.1b",
        "lora",
        "-",
        4,
        1024,
        False,
        {"lora_rank": 16, "lora_targets": ["q_proj", "v_proj", "lm_head"]},
    ),
    (
        "llama-2-7b",
        "lora",
        "-",
        2,
        2048,
        True,
        {"lora_rank": 8, "lora_targets": ["q_proj", "v_proj", "lm_head", "embed_tokens"]},
    ),
    # RL update steps as TRL writes them (tools/trace/rl_steps.py): DPO (2 x batch rows, reference forward
    # after the policy's), GRPO (completions per device, reference log-probs first); LoRA policies use the
    # adapter-disabled policy as the reference, full ones a frozen bf16 copy
    ("tinyllama-1.1b", "dpo", "-", 1, 512, True, {"lora_rank": 16}),
    ("tinyllama-1.1b", "dpo", "bf16", 1, 512, True, {}),
    ("llama-2-7b", "dpo", "-", 2, 1024, True, {"lora_rank": 16}),
    ("tinyllama-1.1b", "grpo", "-", 4, 768, True, {"lora_rank": 16, "max_new_tokens": 256}),
    ("tinyllama-1.1b", "grpo", "bf16", 4, 768, True, {"max_new_tokens": 256}),
    ("qwen2.5-7b", "grpo", "-", 8, 1024, True, {"lora_rank": 16, "max_new_tokens": 512}),
    ("llama-3-8b", "dpo", "bf16", 1, 1024, True, {}),
]

# per-family summary (docs/accuracy.md): which family a case belongs to
SAVER_FIELDS = ("cross_entropy", "optimizer_in_backward", "activation_offloading")


@dataclass(frozen=True)
class Case:
    id: str
    split: str  # calibration | held_out
    scenario: dict[str, Any]


def _scenario(
    model: str, task: str, recipe: str, batch: int, seq: int, gc: bool, extra: dict
) -> dict[str, Any]:
    s: dict[str, Any] = {
        "model": model,
        "task": task,
        "gpu": GPU,
        "num_gpus": 1,
        "batch_size": batch,
        "seq_len": seq,
        "attention": extra.get("attention", "flash"),
    }
    if task == "inference":
        s |= {"weight_dtype": "bf16", "max_new_tokens": 4}
    elif task in ("dpo", "grpo"):
        s |= {"optimizer": "adamw", "gradient_checkpointing": gc, "weight_dtype": "bf16"}
        if "lora_rank" in extra:
            s["lora_rank"] = extra["lora_rank"]
        else:
            s["precision_recipe"] = recipe
        if "max_new_tokens" in extra:
            s["max_new_tokens"] = extra["max_new_tokens"]
    else:
        s |= {"optimizer": "adamw", "gradient_checkpointing": gc}
    if task == "full_finetune":
        weight = extra.get("weight_dtype", "bf16" if recipe in ("bf16", "mixed") else "fp32")
        s |= {"precision_recipe": recipe, "weight_dtype": weight}
    if task == "lora":
        s |= {
            "weight_dtype": "bf16",
            "lora_rank": extra["lora_rank"],
            "lora_targets": extra.get("lora_targets", ["q_proj", "v_proj"]),
            "dora": extra.get("dora", False),
        }
        if "lora_dropout" in extra:
            s["lora_dropout"] = extra["lora_dropout"]
    for name in SAVER_FIELDS:
        if name in extra:
            s[name] = extra[name]
    return s


def _case_id(model: str, task: str, recipe: str, batch: int, seq: int, gc: bool, extra: dict) -> str:
    parts = [model, task if recipe == "-" else f"{task}-{recipe}", f"b{batch}", f"s{seq}"]
    if gc:
        parts.append("gc")
    if extra.get("attention") == "eager":
        parts.append("eager")
    if "lora_rank" in extra:
        parts.append(f"r{extra['lora_rank']}")
    if extra.get("lora_targets") == ["all-linear"]:
        parts.append("all")
    if extra.get("dora"):
        parts.append("dora")
    if recipe == "mixed":
        parts.append(extra.get("weight_dtype", "bf16"))
    if "lora_dropout" in extra:
        parts.append(f"drop{extra['lora_dropout']}")
    targets = extra.get("lora_targets") or []
    parts += [t.replace("_", "") for t in ("lm_head", "embed_tokens") if t in targets]
    if extra.get("cross_entropy"):
        parts.append(f"ce-{extra['cross_entropy']}")
    if extra.get("optimizer_in_backward"):
        parts.append("opt-in-bwd")
    if extra.get("activation_offloading"):
        parts.append("offload")
    return "/".join(parts)


def family(case_scenario: dict[str, Any]) -> str:
    """full FT / LoRA / inference / savers / master-weight family of a case (per-family figures)."""
    s = case_scenario
    if s["task"] == "inference":
        return "inference"
    if s["task"] in ("dpo", "grpo", "ppo"):
        return "RL (DPO / GRPO update)"
    if any(s.get(n) for n in SAVER_FIELDS):
        return "memory savers"
    if s.get("precision_recipe") == "mixed":
        return "master-weight step"
    if s["task"] == "lora":
        return "LoRA with dropout" if s.get("lora_dropout") else "LoRA / DoRA"
    return "full fine-tuning"


def all_cases() -> list[Case]:
    return [
        Case(_case_id(*row), "calibration" if i % 2 == 0 else "held_out", _scenario(*row))
        for i, row in enumerate(_MATRIX)
    ]


QUICK_IDS = 12  # --quick: the first cases of the matrix (for a fast smoke run of the tracer)
