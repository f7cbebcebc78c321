"""What the optimizer holds on one GPU: fp32 master weights, optimizer states, step temporaries.

- master weights: P_trainable_local x B_master (mixed recipes; tools/rules/precision.py), / N under ZeRO-1/2/3;
- optimizer states: the optimizer's own formula (tools/rules/optimizers.py) x this GPU's share of the
  trainable parameters, / N under ZeRO-1/2/3; paged optimizers are counted as resident;
- step temporaries: the foreach implementation's transient (torch/optim/adamw.py _multi_tensor_adamw;
  none for fused Adam) + DeepSpeed ZeRO-1/2's fp32 gradient partition (stage_1_and_2.py).
All three are off the GPU under ZeRO-Offload (tools/components/offload.py).
"""

from __future__ import annotations

from tools import calibration as cal
from tools.components.phased import TRAIN_PHASES, PhasedComponent, phased, same
from tools.components.step import TrainStep


def _zero_text(ts: TrainStep) -> tuple[str, str]:
    """(formula suffix, substituted suffix) of the ZeRO-1/2/3 divisor of states and master weights."""
    if ts.lay.states_divisor > 1:
        return " / N (ZeRO-1/2/3)", f" / {ts.dp}"
    return "", ""


def master_weights(ts: TrainStep) -> PhasedComponent | None:
    recipe = ts.recipe
    if ts.lay.offload_optimizer or not recipe.master_bytes:
        return None
    z, zs = _zero_text(ts)
    master = ts.trainable_local * recipe.master_bytes // ts.lay.states_divisor
    return phased(
        "master_weights",
        "master_weights",
        recipe.source,
        same(
            TRAIN_PHASES,
            master,
            lambda: (
                f"P_trainable_local x {recipe.master_bytes} B{z}",
                f"{ts.trainable_local:,} x {recipe.master_bytes} B{zs} = {master:,} B",
            ),
        ),
        ts.role,
    )


def optimizer_states(ts: TrainStep) -> PhasedComponent | None:
    if ts.lay.offload_optimizer:
        return None
    recipe, opt, spec = ts.recipe, ts.opt, ts.trainable
    z, zs = _zero_text(ts)
    states = round(opt.state_bytes(spec, recipe.state_bytes) * ts.trainable_share) // ts.lay.states_divisor

    def texts() -> tuple[str, str]:
        formula = (
            f"{opt.state_formula()} (B_state = {recipe.state_bytes} B)"
            + (" x P_trainable_local / P_trainable" if ts.trainable_local != spec.params else "")
            + z
        )
        subst = _states_subst(
            opt.state_substituted(spec, recipe.state_bytes), ts.trainable_local, spec.params, zs
        )
        return formula, subst + f" = {states:,} B"

    return phased(
        "optimizer_states",
        "optimizer_states",
        opt.source,
        same(TRAIN_PHASES, states, texts),
        ts.role,
        optimizer=opt.name,
        note_code="optimizer.paged" if opt.paged else None,
    )


def _states_subst(global_text: str, local: int, total: int, shard_text: str) -> str:
    """'2 x 6,738,415,616 x 4 B' (+ this GPU's share under PP/TP/freeze, + the ZeRO divisor)."""
    if local != total:
        global_text = f"({global_text}) x {local:,}/{total:,}"
    return global_text + shard_text


def step_temporaries(ts: TrainStep) -> PhasedComponent | None:
    """Temporaries of the optimizer step (0 bytes: None)."""
    if ts.lay.offload_optimizer:
        return None
    recipe, lay = ts.recipe, ts.lay
    s_div = lay.states_divisor
    transient = 0
    if not recipe.fused_optimizer:  # DeepSpeed/Megatron run a fused Adam: no foreach transient
        transient = (
            round(ts.opt.step_transient_bytes(ts.trainable, recipe.state_bytes) * ts.trainable_share) // s_div
        )
    foreach, part = transient, 0
    partitioned = bool(
        lay.zero_stage >= 1 and recipe.master_bytes and ts.dp > 1
    )  # N = 1: ZeRO shards nothing
    if partitioned:
        part = ts.trainable_local * cal.ZERO_FP32_GRAD_PARTITION_BYTES // s_div
        transient += part
    if not transient:
        return None

    def texts() -> tuple[str, str]:
        temp_f, temp_s = [], []
        if foreach:
            temp_f.append("T_foreach = P_trainable_local x B_state")
            temp_s.append(f"{foreach:,} B")
        if partitioned:
            temp_f.append("G_fp32_partition = P_trainable_local x 4 B / N (DeepSpeed ZeRO-1/2)")
            temp_s.append(f"{part:,} B")
        return " + ".join(temp_f), " + ".join(temp_s) + f" = {transient:,} B"

    return phased(
        "optimizer_step_temporaries",
        "optimizer_step_temporaries",
        "torch/optim/adamw.py _multi_tensor_adamw; DeepSpeed stage_1_and_2.py",
        {"optimizer_step": (transient, texts)},
        ts.role,
    )
