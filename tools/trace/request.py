"""Scenario -> what to trace. One mapping, used by `vramwise trace` and the accuracy benchmark,
so the estimator and the tracer always look at the same job. No torch import here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tools.errors import ScenarioError
from tools.model.architecture import Architecture
from tools.scenario import Scenario

TRACEABLE_TASKS = ("inference", "full_finetune", "pretrain", "lora", "dpo", "grpo")
TRACEABLE_RECIPES = ("fp32", "amp", "bf16", "mixed")
# catalog family -> transformers family in tools/trace/build.py (others: chosen from the architecture)
CATALOG_FAMILIES = {
    "llama": "llama",
    "mistral": "mistral",
    "mixtral": "mixtral",
    "qwen2": "qwen2",
    "qwen3": "qwen3",
    "qwen3_moe": "qwen3_moe",
    "qwen2_moe": "qwen2_moe",
    "gemma2": "gemma2",
    "gemma3": "gemma3",
    "phi3": "phi3",
    "gpt2": "gpt2",
}


@dataclass
class TracePlan:
    """Plain-data description of the trace (the torch-side TraceRequest is built from it)."""

    architecture: Architecture
    family: str | None
    task: str
    recipe: str
    weight_dtype: str
    batch_size: int
    seq_len: int
    gradient_checkpointing: bool
    attention: str  # transformers attn_implementation: sdpa | eager
    lora_rank: int | None
    lora_targets: list[str]
    dora: bool
    max_new_tokens: int
    lora_dropout: float = 0.0
    loss: str = "hf"  # hf | chunked | fused_linear
    optimizer_in_backward: bool = False
    activation_offload: bool = False
    assumptions: list[str] = field(default_factory=list)


def _architecture(s: Scenario) -> tuple[Architecture, str | None]:
    if s.architecture is not None:
        return s.architecture, None
    if not s.model:
        raise ScenarioError("model", "trace needs a catalog model or an explicit architecture")
    from tools.catalog.models import find_model

    spec = find_model(s.model)
    return spec.architecture, CATALOG_FAMILIES.get(spec.family)


def plan_from_scenario(s: Scenario) -> TracePlan:
    """Map a Scenario onto a single-device trace; refuse what a CPU trace cannot run."""
    notes: list[str] = []
    arch, family = _architecture(s)
    task = s.task or "full_finetune"
    if s.task is None:
        notes.append("task not stated: full_finetune")
    if task not in TRACEABLE_TASKS:
        why = (
            "bitsandbytes 4-bit kernels do not run on fake CPU tensors"
            if task == "qlora"
            else "PPO's actor and critic updates are not traced (DPO and GRPO are)"
        )
        raise ScenarioError("task", f"{task} cannot be traced: {why}", accepted=", ".join(TRACEABLE_TASKS))
    for name in ("tp", "pp", "cp", "ep"):
        if (getattr(s, name) or 1) > 1:
            raise ScenarioError(name, "trace measures one device; parallelism is not traced", accepted="1")
    if (s.zero_stage or 0) > 1 or (s.num_gpus or 1) > 1:
        raise ScenarioError("num_gpus", "trace measures one device without sharding", accepted="1")
    if s.optimizer not in (None, "adamw"):
        raise ScenarioError("optimizer", "trace runs torch.optim.AdamW(fused=True)", accepted="adamw")
    weight_dtype = s.weight_dtype or ("fp32" if s.precision_recipe in ("fp32", "amp") else "bf16")
    if weight_dtype not in ("fp32", "bf16", "fp16"):
        raise ScenarioError("weight_dtype", "trace builds unquantised models", accepted="fp32, bf16, fp16")
    if task == "lora" or (task in ("dpo", "grpo") and s.lora_rank):
        recipe = "amp"  # bf16 autocast (Trainer bf16=True) over the frozen base and fp32 adapters
        weight_dtype = s.weight_dtype or "bf16"
    elif task == "inference":
        recipe = "bf16" if weight_dtype != "fp32" else "fp32"
    else:
        recipe = s.precision_recipe or {"fp32": "amp", "bf16": "bf16", "fp16": "bf16"}[weight_dtype]
        if s.precision_recipe is None:
            notes.append(f"precision_recipe not stated: {recipe}")
        if recipe not in TRACEABLE_RECIPES:
            raise ScenarioError(
                "precision_recipe", f"{recipe} is not traced", accepted=", ".join(TRACEABLE_RECIPES)
            )
    attention = "eager" if s.attention == "eager" else "sdpa"
    if family == "gemma2" and s.attention is None:
        attention = "eager"  # transformers' Gemma2 has no SDPA path (attention logit soft-capping)
        notes.append("attention not stated: eager (Gemma-2)")
    checkpointing = bool(s.gradient_checkpointing or s.recompute == "full")
    if s.activation_offloading and not checkpointing:
        raise ScenarioError(
            "activation_offloading",
            "offloading is traced with checkpointing (torchtune warns against it without)",
            accepted="with gradient_checkpointing",
        )
    if s.optimizer_in_backward and s.precision_recipe == "mixed":
        raise ScenarioError("optimizer_in_backward", "not with a master-weight wrapper", accepted="false")
    for name in ("packing", "fp8_training"):
        if getattr(s, name):
            raise ScenarioError(name, f"{name} is not traced (modelled from its source)", accepted="false")
    if s.recompute == "selective":
        raise ScenarioError("recompute", "selective recompute is not traced", accepted="none, full")
    batch, seq = _traced_sizes(s, notes)
    return TracePlan(
        architecture=arch,
        family=family,
        task="full_finetune" if task == "pretrain" else task,
        recipe=recipe,
        weight_dtype=weight_dtype,
        batch_size=batch,
        seq_len=seq,
        gradient_checkpointing=checkpointing,
        attention=attention,
        lora_rank=s.lora_rank or (8 if task == "lora" else None),  # RL: LoRA only when a rank is stated
        lora_targets=list(s.lora_targets or ["q_proj", "v_proj"]),
        dora=s.dora,
        max_new_tokens=s.max_new_tokens if s.max_new_tokens is not None else 4,
        lora_dropout=float(s.lora_dropout or 0.0) if (task == "lora" or s.lora_rank) else 0.0,
        loss={"chunked": "chunked", "fused_linear": "fused_linear"}.get(s.cross_entropy or "", "hf"),
        optimizer_in_backward=bool(s.optimizer_in_backward),
        activation_offload=bool(s.activation_offloading),
        assumptions=notes,
    )


def _traced_sizes(s: Scenario, notes: list[str]) -> tuple[int, int]:
    """Micro-batch and sequence length of the traced run (1 and 512 when not stated, noted)."""
    if s.batch_size is None:
        notes.append("batch_size not stated: 1")
    if s.seq_len is None:
        notes.append("seq_len not stated: 512")
    return s.batch_size or 1, s.seq_len or 512
