"""RL fine-tuning (PPO, GRPO, DPO): which models are resident, in which phase, on each GPU.

    rl_footprint(rs) -> ModelFootprint   (called by tools.estimator for task ppo / grpo / dpo)

Composed from `tools.footprint.model_footprint` (one footprint per model and mode) into RL phases;
every component carries `model_role` (actor, critic, reference, reward, policy).

What each algorithm holds (per GPU; all models colocated on every GPU -- the TRL default, where
every process holds every model; OpenRLHF/verl can instead place models on separate GPUs):
- PPO (TRL PPOTrainer, OpenRLHF): actor and critic TRAINABLE (each with its own gradients, master
  weights and optimizer states); reference and reward FROZEN (inference weights only); rollout KV
  cache for rollout_batch_size sequences of prompt + max_new_tokens. Critic and reward default to the
  policy's architecture (stated as an assumption); the critic is the policy's model with a value head
  (TRL AutoModelForCausalLMWithValueHead keeps the LM head; the h x 1 head is negligible).
- GRPO (Shao et al. 2024, DeepSeekMath; TRL GRPOTrainer): no critic; G = num_generations completions
  per prompt, so the rollout KV cache holds rollout_batch_size x G sequences and the policy trains on
  batch_size x G sequences. Reward: rule-based functions by default (no reward model on the GPU, the
  DeepSeek-R1 recipe); a reward model only when `reward_model` is given. Reference: kept (the KL
  term of the GRPO objective; TRL drops it when beta = 0).
- DPO (Rafailov et al. 2023; TRL DPOTrainer): policy trainable + frozen reference; chosen and
  rejected are concatenated into one forward (trl/trainer/dpo_trainer.py concatenated_forward), so
  the policy trains on 2 x batch_size sequences and the reference scores 2 x batch_size.
- LoRA/QLoRA policies: the reference is the SAME base with the adapters disabled -- no second copy
  (trl/trainer/dpo_trainer.py and ppo_trainer.py: `ref_model = None` for PEFT models, reference
  log-probs under `model.disable_adapter()`); PPO's critic also gets LoRA (OpenRLHF applies
  --lora_rank to actor and critic), the reward model stays frozen and full.
- `reference_offload`: reference (and reward) weights live in CPU RAM and are on the GPU only during
  their own scoring forward (OpenRLHF --ref_reward_offload).
- ZeRO-3: frozen models are sharded like the trained ones (TRL prepares them with DeepSpeed); the
  rollout gathers the actor's full weights for generation (TRL unwrap_model_for_generation,
  ds3_gather_for_generation=True), on top of the sharded partition.
- Generation with HF `generate` inside the trainer (TRL default use_vllm=False): KV cache + one
  layer's transient + last-position logits.

Phases (the peak is the largest): `rollout` (actor generating), `score_*` (no-grad forwards of the
reference / reward / critic over the rollouts, one at a time; the actor's own old-log-prob pass is the
same size as the reference's -- same architecture -- and is not listed separately), `actor_update` / `critic_update` /
`policy_update` (the trained model at its own peak phase, the others' persistent state resident).

Defaults this module fills (recorded as assumptions; they could move into tools.resolve):
max_new_tokens = seq_len // 2, rollout_batch_size = batch_size, num_generations = 8 (TRL GRPOConfig).
"""

from __future__ import annotations

from dataclasses import replace

from tools import calibration as cal
from tools.footprint import ModelFootprint, PhasedComponent, model_footprint
from tools.lora import lora_trainable
from tools.resolve import ModelRef, ResolvedScenario, resolve_model_ref
from tools.result import Assumption

GRPO_DEFAULT_NUM_GENERATIONS = 8  # trl/trainer/grpo_config.py num_generations default
# What a trained model keeps between its own update steps (optimizer state, master copy, weights);
# gradients too when the estimator counts them resident across the step (calibration).
PERSISTENT_TRAIN_PARTS = ("weights", "quant_metadata", "master_weights", "optimizer_states") + (
    ("gradients",) if cal.GRADS_RESIDENT_ALL_STEP else ()
)
STATIC_PARTS = ("weights", "quant_metadata")


# --------------------------------------------------------------------------------------------------
# composition helpers
# --------------------------------------------------------------------------------------------------
def _take(
    fp: ModelFootprint,
    src_phase: str,
    dst_phases: tuple[str, ...],
    *,
    role: str,
    only: tuple[str, ...] | None = None,
    skip: tuple[str, ...] = (),
    rename: dict[str, str] | None = None,
    divide: int = 1,
    note: str | None = None,
) -> list[PhasedComponent]:
    """Copy `fp`'s parts at `src_phase` into `dst_phases` (optionally filtered, renamed or divided)."""
    out = []
    for part in fp.parts:
        if only is not None and part.name not in only:
            continue
        if part.name in skip or src_phase not in part.at:
            continue
        value, formula, subst = part.at[src_phase]
        if divide > 1:
            value = value // divide
            formula = f"{formula} / N (ZeRO-3 sharded)"
            subst = f"({subst}) / {divide} = {value:,} B"
        if value <= 0:
            continue
        name = (rename or {}).get(part.name, part.name)
        out.append(
            PhasedComponent(
                name=name,
                label=part.label,
                source=part.source,
                at={ph: (value, formula, subst) for ph in dst_phases},
                model_role=role,
                note=note or part.note,
            )
        )
    return out


def _other_model(
    rs: ResolvedScenario, name: str | None, role: str, assumptions: list[Assumption]
) -> ModelRef:
    """The critic / reward model: the named one, else the policy's own architecture (an assumption)."""
    if name:
        ref, more, _ = resolve_model_ref(name, None, None)
        assumptions.extend(more)
        return ref
    field = "critic_model" if role == "critic" else "reward_model"
    assumptions.append(
        Assumption(
            field=field,
            value=rs.model.id,
            reason=f"no {role} model given: the same size as the policy ({rs.model.name})",
        )
    )
    return rs.model


def _fill_defaults(rs: ResolvedScenario) -> tuple[int, int, int, int]:
    """(prompt_len, max_new_tokens, rollout prompts, generations per prompt), defaults recorded."""
    sc, changes, new = rs.scenario, {}, []
    max_new = sc.max_new_tokens or 0
    if sc.max_new_tokens is None and rs.task != "dpo":  # DPO scores given pairs: no generation
        max_new = rs.seq // 2
        changes["max_new_tokens"] = max_new
        new.append(
            Assumption(field="max_new_tokens", value=max_new, reason="half of seq_len is the response")
        )
    rollout = sc.rollout_batch_size
    if rollout is None and rs.task != "dpo":
        rollout = rs.batch
        changes["rollout_batch_size"] = rollout
        new.append(
            Assumption(
                field="rollout_batch_size", value=rollout, reason="one micro-batch of prompts per rollout"
            )
        )
    gens = 1
    if rs.task == "grpo":
        gens = sc.num_generations or GRPO_DEFAULT_NUM_GENERATIONS
        if sc.num_generations is None:
            changes["num_generations"] = gens
            new.append(
                Assumption(
                    field="num_generations", value=gens, reason="TRL GRPOConfig default num_generations=8"
                )
            )
    if changes:
        rs.scenario = sc.model_copy(update=changes)
        rs.assumptions.extend(new)
    return max(1, rs.seq - max_new), max_new, rollout or rs.batch, gens


def _frozen(
    rs: ResolvedScenario,
    model: ModelRef,
    role: str,
    *,
    batch: int,
    seq: int,
    all_positions: bool,
    resident_phases: tuple[str, ...],
    score_phase: str,
    offload: bool,
) -> list[PhasedComponent]:
    """A frozen model: weights resident in `resident_phases` (only `score_phase` when offloaded),
    plus its no-grad forward transient in `score_phase`."""
    fwd = model_footprint(
        rs, model=model, role=role, mode="forward", batch=batch, seq=seq, all_position_logits=all_positions
    )
    zero3 = rs.layout.zero_stage >= 3 and rs.layout.dp > 1
    divide = rs.layout.dp if zero3 else 1
    parts = _take(
        fwd,
        "forward",
        (score_phase,) if offload else resident_phases,
        role=role,
        only=STATIC_PARTS,
        divide=divide,
    )
    if zero3:  # the layer being computed is gathered in full during the forward
        parts += _take(
            fwd,
            "forward",
            (score_phase,),
            role=role,
            only=("weights",),
            rename={"weights": "zero3_gathered_params"},
            divide=max(1, model.params.num_layers),
            note="one gathered layer during the forward (ZeRO-3)",
        )
    parts += _take(fwd, "forward", (score_phase,), role=role, skip=STATIC_PARTS)
    return parts


def _trained(
    rs: ResolvedScenario,
    model: ModelRef,
    role: str,
    *,
    batch: int,
    seq: int,
    update_phase: str,
    resident_phases: tuple[str, ...],
    trainable=None,
    adapters: bool | None = None,
) -> tuple[ModelFootprint, list[PhasedComponent]]:
    """A trained model: its own peak in `update_phase`, its persistent states in `resident_phases`."""
    tr = model_footprint(
        rs, model=model, role=role, mode="train", batch=batch, seq=seq, trainable=trainable, adapters=adapters
    )
    parts = _take(tr, tr.peak_phase(), (update_phase,), role=role)
    parts += _take(tr, "optimizer_step", resident_phases, role=role, only=PERSISTENT_TRAIN_PARTS)
    return tr, parts


def _actor_rollout(
    rs: ResolvedScenario,
    train_fp: ModelFootprint,
    *,
    sequences: int,
    prompt_len: int,
    seq: int,
    role: str,
) -> list[PhasedComponent]:
    """The actor generating: KV cache, generation transient and logits; its persistent training state;
    under ZeRO-3 the full weights gathered for generation on top of the shard."""
    gen = model_footprint(
        rs,
        role=role,
        mode="generate",
        batch=sequences,
        seq=seq,
        prompt_len=prompt_len,
        kv_sequences=sequences,
    )
    parts = _take(train_fp, "optimizer_step", ("rollout",), role=role, only=PERSISTENT_TRAIN_PARTS)
    parts += _take(gen, "decode", ("rollout",), role=role, skip=STATIC_PARTS)
    if rs.layout.zero_stage >= 3 and (rs.layout.dp > 1 or rs.layout.offload_params):
        parts += _take(
            gen,
            "decode",
            ("rollout",),
            role=role,
            only=STATIC_PARTS,
            rename={
                "weights": "generation_gathered_weights",
                "quant_metadata": "generation_gathered_quant_metadata",
            },
            note="TRL unwrap_model_for_generation gathers the full ZeRO-3 weights to generate",
        )
    return parts


# --------------------------------------------------------------------------------------------------
# the algorithms
# --------------------------------------------------------------------------------------------------
def _ppo(
    rs: ResolvedScenario, prompt_len: int, rollout: int, assumptions: list[Assumption]
) -> ModelFootprint:
    seq, b = rs.seq, rs.batch
    phases = ("rollout", "score_reference", "score_reward", "score_critic", "actor_update", "critic_update")
    offload = bool(rs.scenario.reference_offload)
    critic_ref = _other_model(rs, rs.scenario.critic_model, "critic", assumptions)
    reward_ref = _other_model(rs, rs.scenario.reward_model, "reward", assumptions)

    actor_fp, parts = _trained(
        rs,
        rs.model,
        "actor",
        batch=b,
        seq=seq,
        update_phase="actor_update",
        resident_phases=tuple(p for p in phases if p not in ("actor_update", "rollout")),
    )
    critic_trainable = None
    if rs.adapters:  # OpenRLHF: --lora_rank applies to actor and critic
        sc = rs.scenario
        critic_trainable = lora_trainable(
            critic_ref.params, sc.lora_rank or 8, sc.lora_targets or ["q_proj", "v_proj"], dora=sc.dora
        )
    _, critic_parts = _trained(
        rs,
        critic_ref,
        "critic",
        batch=b,
        seq=seq,
        update_phase="critic_update",
        resident_phases=tuple(p for p in phases if p != "critic_update"),
        trainable=critic_trainable,
        adapters=rs.adapters,
    )
    parts += critic_parts
    parts += _actor_rollout(rs, actor_fp, sequences=rollout, prompt_len=prompt_len, seq=seq, role="actor")
    # critic values over the rollouts: a no-grad forward (its weights are already counted as persistent)
    critic_fwd = model_footprint(
        rs, model=critic_ref, role="critic", mode="forward", batch=rollout, seq=seq, all_position_logits=False
    )
    parts += _take(critic_fwd, "forward", ("score_critic",), role="critic", skip=STATIC_PARTS)
    parts += _reference(rs, rollout, seq, phases, "score_reference", offload)
    parts += _frozen(
        rs,
        reward_ref,
        "reward",
        batch=rollout,
        seq=seq,
        all_positions=False,
        resident_phases=phases,
        score_phase="score_reward",
        offload=offload,
    )
    return _assemble(rs, phases, parts, actor_fp)


def _reference(
    rs: ResolvedScenario, batch: int, seq: int, phases: tuple[str, ...], score_phase: str, offload: bool
) -> list[PhasedComponent]:
    """The reference: a frozen copy of the policy, or (LoRA/QLoRA) the policy with adapters disabled:
    only its forward transient, no second set of weights (TRL: ref_model = None for PEFT models)."""
    if rs.adapters:
        fwd = model_footprint(
            rs, role="reference", mode="forward", batch=batch, seq=seq, all_position_logits=True
        )
        return _take(
            fwd,
            "forward",
            (score_phase,),
            role="reference",
            skip=STATIC_PARTS,
            note="adapters disabled on the policy: no second copy of the base (TRL with PEFT)",
        )
    return _frozen(
        rs,
        rs.model,
        "reference",
        batch=batch,
        seq=seq,
        all_positions=True,
        resident_phases=phases,
        score_phase=score_phase,
        offload=offload,
    )


def _grpo(
    rs: ResolvedScenario, prompt_len: int, rollout: int, gens: int, assumptions: list[Assumption]
) -> ModelFootprint:
    seq = rs.seq
    sequences = rollout * gens
    has_rm = bool(rs.scenario.reward_model)
    phases = ("rollout", "score_reference") + (("score_reward",) if has_rm else ()) + ("actor_update",)
    offload = bool(rs.scenario.reference_offload)
    actor_fp, parts = _trained(
        rs,
        rs.model,
        "actor",
        batch=rs.batch * gens,
        seq=seq,
        update_phase="actor_update",
        resident_phases=tuple(p for p in phases if p not in ("actor_update", "rollout")),
    )
    parts += _actor_rollout(rs, actor_fp, sequences=sequences, prompt_len=prompt_len, seq=seq, role="actor")
    parts += _reference(rs, sequences, seq, phases, "score_reference", offload)
    if has_rm:
        reward_ref = _other_model(rs, rs.scenario.reward_model, "reward", assumptions)
        parts += _frozen(
            rs,
            reward_ref,
            "reward",
            batch=sequences,
            seq=seq,
            all_positions=False,
            resident_phases=phases,
            score_phase="score_reward",
            offload=offload,
        )
    else:
        assumptions.append(
            Assumption(
                field="reward_model",
                value=None,
                reason="GRPO with rule-based reward functions: no reward model on the GPU",
            )
        )
    return _assemble(rs, phases, parts, actor_fp)


def _dpo(rs: ResolvedScenario) -> ModelFootprint:
    seq, pairs = rs.seq, 2 * rs.batch  # chosen + rejected concatenated (TRL concatenated_forward)
    phases = ("score_reference", "policy_update")
    offload = bool(rs.scenario.reference_offload)
    policy_fp, parts = _trained(
        rs,
        rs.model,
        "policy",
        batch=pairs,
        seq=seq,
        update_phase="policy_update",
        resident_phases=("score_reference",),
    )
    parts += _reference(rs, pairs, seq, phases, "score_reference", offload)
    return _assemble(rs, phases, parts, policy_fp)


def _assemble(
    rs: ResolvedScenario, phases: tuple[str, ...], parts: list[PhasedComponent], main: ModelFootprint
) -> ModelFootprint:
    trained = {"actor", "critic", "policy"}
    roles = list(dict.fromkeys(p.model_role for p in parts if p.model_role))
    held = ", ".join(f"{r} ({'trainable' if r in trained else 'frozen'})" for r in roles)
    lora_ref = (
        " (the reference is the policy with adapters disabled)"
        if rs.adapters and "reference" in roles
        else ""
    )
    where = (
        "reference/reward weights live in CPU RAM and come to the GPU only for their forward"
        if rs.scenario.reference_offload
        else "frozen models stay resident"
    )
    notes = [*main.notes, f"RL: every GPU holds {held}{lora_ref} -- colocated, the TRL default; {where}"]
    return ModelFootprint(
        phases=phases, parts=tuple(parts), gpu_role=main.gpu_role, notes=tuple(notes), stage=main.stage
    )


def rl_footprint(rs: ResolvedScenario) -> ModelFootprint:
    """The RL job's footprint on its most loaded GPU, by RL phase (see the module docstring).

    Fills the RL defaults into `rs.scenario` and `rs.assumptions` (max_new_tokens, rollout_batch_size,
    num_generations, critic/reward model) so the Estimate shows them.
    """
    prompt_len, _, rollout, gens = _fill_defaults(rs)
    extra: list[Assumption] = []
    if rs.task == "ppo":
        fp = _ppo(rs, prompt_len, rollout, extra)
    elif rs.task == "grpo":
        fp = _grpo(rs, prompt_len, rollout, gens, extra)
    elif rs.task == "dpo":
        fp = _dpo(rs)
    else:
        raise ValueError(f"rl_footprint handles ppo, grpo and dpo, not {rs.task!r}")
    rs.assumptions.extend(extra)
    return replace(fp)
