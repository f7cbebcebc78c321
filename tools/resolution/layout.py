"""The GPU and the parallel layout: TP/PP/CP/EP, data parallelism, ZeRO stage, offload, PP micro-batches.

Defaults: gpu a100-80gb (the most common datacenter training card); tp = pp = cp = ep = 1; num_gpus
t x p x c; zero_stage 0 (2 when optimizer offload is asked: ZeRO-Offload runs on stages 1-3); pp
micro-batches max(p, gradient_accumulation_steps). Inference on N > 1 GPUs with no TP stated: one copy
split by tensor parallelism (vLLM --tensor-parallel-size), t = the largest divisor of N / (p x c) that
suits the heads; the rest replicas.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from tools.resolution.checks import (
    check_gpu_split,
    check_parallel,
    check_param_offload,
    check_training_states,
)
from tools.resolution.defaults import DEFAULT_GPU, Filled
from tools.rules.parallel import Layout, tp_fits_heads

if TYPE_CHECKING:
    from tools.catalog.gpus import GpuAlias, GpuSpec
    from tools.model.architecture import Architecture
    from tools.resolution.model import ModelRef
    from tools.scenario import Scenario


def look_up_gpu(sc: Scenario, f: Filled) -> tuple[GpuSpec, GpuAlias | None]:
    """The card (catalog id or alias) and the alias note when a name was mapped to a catalog card."""
    from tools.catalog.gpus import find_gpu

    gpu_name = sc.gpu or f.fill("gpu", DEFAULT_GPU, "gpu.default")
    gpu, alias_note = find_gpu(gpu_name)
    if alias_note:
        f.assume("gpu", gpu.id, alias_note.code, **alias_note.values)
    return gpu, alias_note


class Parallel(NamedTuple):
    """The parallel sizes, GPU count, ZeRO stage and offload chosen for the job."""

    tp: int
    pp: int
    cp: int
    ep: int
    num_gpus: int
    zero: int
    offload_optimizer: bool
    offload_params: bool


def tp_allowed(arch: Architecture, t: int) -> bool:
    """TP t splits the attention heads evenly and divides (or replicates) the KV heads (Megatron/vLLM)."""
    return tp_fits_heads(arch.num_attention_heads, 0 if arch.kv_lora_rank else arch.kv_heads, t)


def default_serving_tp(arch: Architecture, num_gpus: int, other_parallel: int, f: Filled) -> int:
    """Serving on several GPUs with no TP stated: people mean one copy of the model split over the
    GPUs (vLLM `--tensor-parallel-size N`), not N full copies. The largest t dividing the GPUs left
    after PP/CP that also suits the heads; GPUs beyond t x p x c serve as data-parallel replicas."""
    per_replica = num_gpus // other_parallel if num_gpus % other_parallel == 0 else 1
    t = max(k for k in range(1, per_replica + 1) if per_replica % k == 0 and tp_allowed(arch, k))
    heads = arch.num_attention_heads
    if t == 1:
        f.fill("tp", t, "tp.serving_replicas", heads=heads, per_replica=per_replica, num_gpus=num_gpus)
    elif t == per_replica:
        f.fill("tp", t, "tp.serving_split", num_gpus=num_gpus, tp=t)
    else:
        f.fill("tp", t, "tp.serving_largest", heads=heads, per_replica=per_replica, tp=t)
    return t


def parallel_layout(sc: Scenario, ref: ModelRef, training: bool, f: Filled) -> Parallel:
    """Parallel sizes (checked against the model), GPU count, ZeRO stage and offload."""
    arch = ref.arch
    tp, pp, cp, ep = sc.tp or 1, sc.pp or 1, sc.cp or 1, sc.ep or 1
    if not training and sc.tp is None and sc.ep is None and (sc.num_gpus or 1) > 1:
        tp = default_serving_tp(arch, sc.num_gpus or 1, pp * cp, f)
    check_parallel(arch, ref.params, tp=tp, pp=pp, ep=ep, notes=f.notes)
    model_parallel = tp * pp * cp
    num_gpus = sc.num_gpus or f.fill("num_gpus", model_parallel, "num_gpus.model_parallel")
    check_gpu_split(num_gpus, tp=tp, pp=pp, cp=cp)
    dp = num_gpus // model_parallel
    if ep > 1 and dp * tp % ep:
        f.note("ep_does_not_divide", ep=ep, ranks=dp * tp)
    check_training_states(sc, training)
    zero = sc.zero_stage or 0
    offload_opt = sc.offload_optimizer not in (None, "none")
    offload_params = sc.offload_params not in (None, "none")
    check_param_offload(offload_params, zero, training)
    if offload_params and not training:
        f.note("inference_params_offload")
    if offload_opt and zero == 0:
        zero = f.fill("zero_stage", 2, "zero_stage.offload")
    return Parallel(tp, pp, cp, ep, num_gpus, zero, offload_opt, offload_params)


def pipeline_layout(sc: Scenario, par: Parallel, f: Filled, runtime: str = "cuda") -> Layout:
    """The Layout, with the PP micro-batches in flight (at least p so the 1F1B pipeline fills)."""
    microbatches = 1
    if par.pp > 1:
        microbatches = sc.pp_microbatches or max(par.pp, sc.gradient_accumulation_steps or 0)
        if sc.pp_microbatches is None:
            f.fill("pp_microbatches", microbatches, "pp_microbatches.fill")
    if sc.sequence_parallel and par.tp == 1:
        f.note("sequence_parallel_without_tp")
    return Layout(
        num_gpus=par.num_gpus,
        tp=par.tp,
        pp=par.pp,
        cp=par.cp,
        ep=par.ep,
        zero_stage=par.zero,
        sequence_parallel=bool(sc.sequence_parallel) and par.tp > 1,
        offload_optimizer=par.offload_optimizer,
        offload_params=par.offload_params,
        microbatches=microbatches,
        runtime=runtime,
    )
