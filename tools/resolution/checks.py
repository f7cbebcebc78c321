"""Cross-field checks of a scenario: each raises the ScenarioError that names the field, what was wrong
and what is accepted (with a stable `code` and the figures of the message for translated answers)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tools.errors import ScenarioError
from tools.notes import Note, note
from tools.resolution.defaults import MAX_TOKENS_PER_MICROBATCH
from tools.rules.parallel import tp_fits_heads
from tools.rules.quant import QUANTISED_DTYPES

if TYPE_CHECKING:
    from tools.model.architecture import Architecture, ParamBreakdown
    from tools.scenario import Scenario


def check_tensor_parallel(arch: Architecture, tp: int, notes: list[Note]) -> None:
    """TP splits the attention heads evenly and divides (or replicates) the KV heads (Megatron/vLLM)."""
    heads, kv = arch.num_attention_heads, arch.kv_heads
    if heads % tp:
        divisors = [t for t in range(1, heads + 1) if heads % t == 0 and t <= 64]
        raise ScenarioError(
            "tp",
            f"tp={tp} does not divide the {heads} attention heads",
            accepted="a divisor of the attention heads: " + ", ".join(map(str, divisors)),
            code="tp_heads",
            values={"tp": tp, "heads": heads, "divisors": ", ".join(map(str, divisors))},
        )
    if arch.kv_lora_rank:
        return
    if not tp_fits_heads(heads, kv, tp):
        raise ScenarioError(
            "tp",
            f"tp={tp} neither divides nor is a multiple of the {kv} KV heads",
            accepted=f"a divisor or multiple of {kv}",
            code="tp_kv_heads",
            values={"tp": tp, "kv_heads": kv},
        )
    if tp > kv:
        notes.append(note("kv_heads_replicated", tp=tp, kv_heads=kv, copies=tp // kv))


def check_parallel(
    arch: Architecture, pb: ParamBreakdown, *, tp: int, pp: int, ep: int, notes: list[Note]
) -> None:
    """TP against the heads, PP against the layers, EP against the experts."""
    check_tensor_parallel(arch, tp, notes)
    if pp > arch.num_hidden_layers:
        raise ScenarioError(
            "pp",
            f"pp={pp} is larger than the {arch.num_hidden_layers} layers",
            accepted=f"1..{arch.num_hidden_layers}",
            code="pp_layers",
            values={"pp": pp, "layers": arch.num_hidden_layers},
        )
    if ep > 1:
        if not arch.is_moe:
            raise ScenarioError(
                "ep",
                "expert parallelism needs an MoE model",
                accepted="ep=1 for dense models",
                code="ep_dense",
            )
        if int(arch.num_experts or 0) % ep:
            raise ScenarioError(
                "ep",
                f"ep={ep} does not divide the {arch.num_experts} experts",
                accepted=f"a divisor of {arch.num_experts}",
                code="ep_experts",
                values={"ep": ep, "experts": arch.num_experts},
            )
    if pb.num_layers != arch.num_hidden_layers:  # pragma: no cover - count_params invariant
        raise ScenarioError("architecture", "inconsistent layer count", code="layer_count")


def check_gpu_split(num_gpus: int, *, tp: int, pp: int, cp: int) -> None:
    model_parallel = tp * pp * cp
    if num_gpus % model_parallel:
        raise ScenarioError(
            "num_gpus",
            f"{num_gpus} GPUs cannot be split into tp x pp x cp = {tp} x {pp} x {cp} = {model_parallel}",
            accepted=f"a multiple of {model_parallel}",
            code="num_gpus_split",
            values={"num_gpus": num_gpus, "tp": tp, "pp": pp, "cp": cp, "model_parallel": model_parallel},
        )


def check_training_states(sc: Scenario, training: bool) -> None:
    """ZeRO and optimizer offload shard or move training states: nothing to do for inference."""
    if training:
        return
    if sc.zero_stage:
        raise ScenarioError(
            "zero_stage",
            "ZeRO shards training states (gradients, optimizer); it does not apply to inference",
            accepted="0 or unset for inference; use tp/pp to split a model for serving",
            code="zero_inference",
        )
    if sc.offload_optimizer not in (None, "none"):
        raise ScenarioError(
            "offload_optimizer",
            "there is no optimizer in inference",
            accepted="none",
            code="optimizer_inference",
        )


def check_param_offload(offload_params: bool, zero: int, training: bool) -> None:
    if offload_params and zero != 3 and training:
        raise ScenarioError(
            "offload_params",
            "parameter offload needs ZeRO stage 3 (DeepSpeed offload_param / FSDP CPUOffload)",
            accepted="zero_stage=3 with offload_params=cpu|nvme, or offload_params=none",
            code="param_offload_zero",
        )


def check_tokens(batch: int, seq: int) -> None:
    if batch * seq > MAX_TOKENS_PER_MICROBATCH:
        raise ScenarioError(
            "batch_size",
            f"batch_size x seq_len = {batch * seq:,} tokens in one micro-batch is beyond any GPU",
            accepted=f"batch_size x seq_len up to {MAX_TOKENS_PER_MICROBATCH:,}",
            code="tokens_too_many",
            values={"tokens": f"{batch * seq:,}", "limit": f"{MAX_TOKENS_PER_MICROBATCH:,}"},
        )


def check_max_new_tokens(max_new_tokens: int | None, seq: int) -> None:
    if max_new_tokens is not None and max_new_tokens > seq:
        raise ScenarioError(
            "max_new_tokens",
            f"max_new_tokens {max_new_tokens:,} is larger than the context seq_len {seq:,}",
            accepted="0..seq_len (seq_len = prompt + generated tokens)",
            code="max_new_tokens_context",
            values={"max_new_tokens": f"{max_new_tokens:,}", "seq_len": f"{seq:,}"},
        )


def check_weight_dtype(task: str, weight_dtype: str) -> None:
    """QLoRA needs a 4-bit base; full and freeze training cannot train quantised weights."""
    if task == "qlora" and weight_dtype not in ("nf4", "int4"):
        raise ScenarioError(
            "weight_dtype",
            f"QLoRA needs a 4-bit base, got {weight_dtype}",
            accepted="nf4 or int4 (bnb FP4) for qlora; use task=lora for a 16-bit base",
            code="qlora_dtype",
            values={"weight_dtype": weight_dtype},
        )
    if task in ("full_finetune", "pretrain", "freeze") and weight_dtype in QUANTISED_DTYPES:
        raise ScenarioError(
            "weight_dtype",
            f"{weight_dtype} weights cannot be trained directly ({task})",
            accepted="fp32, bf16 or fp16 for full/freeze training; use qlora for a 4-bit frozen base",
            code="train_quantised",
            values={"weight_dtype": weight_dtype, "task": task},
        )


def check_quant_method(weight_dtype: str, quant_method: str | None) -> None:
    if weight_dtype == "nf4" and quant_method not in (None, "bnb"):
        raise ScenarioError(
            "quant_method", "NF4 is a bitsandbytes format", accepted="bnb for nf4", code="nf4_method"
        )
    if quant_method == "awq" and weight_dtype != "int4":
        raise ScenarioError(
            "quant_method",
            "AWQ stores 4-bit weights",
            accepted="weight_dtype=int4 with awq",
            code="awq_dtype",
        )


def check_fine_tuning_settings(sc: Scenario, task: str, adapter_task: bool) -> None:
    """LoRA settings need an adapter task; trainable_layers needs freeze tuning."""
    lora_asked = sc.lora_rank is not None or bool(sc.lora_targets) or sc.dora
    if lora_asked and not adapter_task:
        fld = "lora_rank" if sc.lora_rank is not None else ("lora_targets" if sc.lora_targets else "dora")
        raise ScenarioError(
            fld,
            f"LoRA settings do not apply to task={task}",
            accepted="lora_rank / lora_targets / dora with task lora or qlora (or an RL task with LoRA)",
            code="lora_task",
            values={"task": task},
        )
    if sc.trainable_layers is not None and task != "freeze":
        raise ScenarioError(
            "trainable_layers",
            f"does not apply to task={task}",
            accepted="task=freeze",
            code="trainable_layers_task",
            values={"task": task},
        )


def check_trainable_layers(n: int, pb: ParamBreakdown) -> None:
    if n > pb.num_layers:
        raise ScenarioError(
            "trainable_layers",
            f"{n} is more than the {pb.num_layers} layers",
            accepted=f"0..{pb.num_layers}",
            code="trainable_layers_count",
            values={"count": n, "layers": pb.num_layers},
        )
