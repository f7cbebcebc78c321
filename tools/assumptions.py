"""Assumptions: the defaults the estimator chose for the user, as data (a field, its value, a code and values).

The estimator says *which* default it took and why by a stable code; the sentence is the channels'
(service/agent/assumption_text.py formats `prompts/<lang>/assumptions.toml`, one template per code, in
every language; the English one also fills `Assumption.reason` in the JSON users see). `ASSUMPTION_CODES`
lists every code the estimator can emit with the values its template may use; tests/test_assumptions.py
checks that every code has a template in each language. Making one stays cheap (no validation: the planner
resolves dozens of candidates per question).
"""

from __future__ import annotations

from tools.result import Assumption, constructed

# code -> the values its templates may use
ASSUMPTION_CODES: dict[str, tuple[str, ...]] = {
    # resolve stages (tools/resolution/*)
    "model.bare_size": ("size", "model", "params"),
    "model.nearest_size": ("size", "model", "params", "gap", "wanted"),
    "model.built_for_size": (
        "size",
        "params",
        "layers",
        "hidden",
        "heads",
        "kv",
        "head_dim",
        "inter",
        "vocab",
        "within",
    ),
    "model.from_params": ("params", "layers", "hidden", "heads", "kv", "head_dim", "inter", "vocab"),
    "architecture.config_default": ("key", "default"),
    "architecture.vision_not_counted": (),
    "task.lora_settings": (),
    "task.freeze_settings": (),
    "task.no_training": (),
    "trainable_layers.default": ("layers",),
    "lora_rank.default": ("rank",),
    "lora_targets.default": (),
    "batch_size.default": (),
    "seq_len.training_default": (),
    "seq_len.inference_default": (),
    "images.tokens": ("text_tokens", "images", "image_tokens", "decoder_tokens"),
    "gpu.default": (),
    "gpu.alias": ("alias", "variant", "card"),
    "gpu.alias_other": ("alias", "variant", "card", "other"),
    "gpu.alias_others": ("alias", "variant", "card", "others", "last"),
    "gpu.stated_size": ("gb", "gib"),
    "gpu.stated_size_of_card": ("card", "gb", "gib", "marketed"),
    "gpu.named_at_stated_size": ("card", "gb", "gib", "vendor"),
    "num_gpus.model_parallel": (),
    "zero_stage.offload": (),
    "pp_microbatches.fill": (),
    "tp.serving_replicas": ("heads", "per_replica", "num_gpus"),
    "tp.serving_split": ("num_gpus", "tp"),
    "tp.serving_largest": ("heads", "per_replica", "tp"),
    "weight_dtype.qlora": (),
    "weight_dtype.checkpoint": ("model", "dtype"),
    "weight_dtype.bf16": (),
    "weight_dtype.no_bf16": ("gpu",),
    "quant_method.bnb": ("dtype",),
    "quant_method.gptq": (),
    "double_quant.qlora": (),
    "precision_recipe.fp32": (),
    "precision_recipe.amp": (),
    "precision_recipe.mixed": (),
    "optimizer.default": (),
    "recompute.qlora_default": (),
    "recompute.trainer_default": (),
    "attention.sdpa_default": (),
    "kv_dtype.compute": (),
    "gpu_memory_utilization.vllm_default": (),
    "safety_margin.default": (),
    # the estimator (tools/estimator.py)
    "engine.default": (),
    # serving engines (tools/serving.py)
    "gpu_memory_utilization.vllm_engine": (),
    "gpu_memory_utilization.sglang_default": (),
    "max_num_batched_tokens.vllm_default": (),
    "max_num_batched_tokens.sglang_default": (),
    "n_ctx.gguf": (),
    "kv_dtype.gguf": (),
    # RL (tools/rl.py)
    "critic_model.policy_size": ("model",),
    "reward_model.policy_size": ("model",),
    "reward_model.rule_based": (),
    "seq_len.grpo": (),
    "recompute.grpo": (),
    "max_new_tokens.grpo": (),
    "max_new_tokens.half": (),
    "num_generations.grpo": (),
    "batch_size.grpo": ("batch",),
    "rollout_batch_size.default": (),
    # memory savers (tools/components/savers.py)
    "lora_dropout.default": ("extra_bytes",),  # extra_bytes: what lora_dropout=0.05 would add, when known
}


# An assumption as the estimator records it: (field, value, code, values). The Assumption objects are made
# from these only when an estimate is shown (`made`): the planner's candidates never need them.
Said = tuple[str, object, str, dict[str, object]]


def assumption(field: str, value: object, code: str, /, **values: object) -> Assumption:
    """An Assumption of `field` = `value` said by `code` (ASSUMPTION_CODES) with its values; no validation."""
    return constructed(Assumption, field=field, value=value, code=code, values=values, reason=None)


def said(field: str, value: object, code: str, /, **values: object) -> Said:
    """The record of `assumption(field, value, code, **values)`, made later by `made`."""
    return (field, value, code, values)


def made(records: list[Said]) -> list[Assumption]:
    """The Assumption objects of `records`, in order."""
    return [assumption(f, v, c, **values) for f, v, c, values in records]
