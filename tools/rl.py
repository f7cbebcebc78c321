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
- GRPO (Shao et al. 2024, DeepSeekMath; TRL GRPOTrainer, trl/trainer/grpo_trainer.py): no critic;
  `batch_size` is TRL's per_device_train_batch_size and counts COMPLETIONS: RepeatRandomSampler spreads
  the G = num_generations completions of a prompt over the global batch (processes x micro-batch x
  accumulation), so G does not multiply a GPU's micro-batch. Each GPU generates its own micro-batch (or,
  with `rollout_batch_size` prompts stated, rollout x G sequences). The loss takes 16-bit log-probs of the
  completion positions only (`_get_per_token_logps(..., logits_to_keep)` + selective_log_softmax), not
  an fp32 cross-entropy over every position; the reference's log-probs likewise, under torch.no_grad,
  in chunks of the micro-batch. Defaults (TRL GRPOConfig / open-r1): prompt 512 + completion 256 tokens
  when no length is stated, gradient checkpointing on (open-r1 recipes). Reward: rule-based functions by
  default (no reward model on the GPU, the DeepSeek-R1 recipe); a reward model only when `reward_model`
  is given. Reference: kept (the KL term; TRL drops it when beta = 0). Generation: HF generate inside
  the trainer (TRL use_vllm=False); with `gpu_memory_utilization` stated, vLLM colocate mode instead:
  that share of the card is reserved by the engine for the whole run (no sleep mode).
- PPO (TRL PPOTrainer, trl/trainer/ppo_trainer.py): rollouts by generate under no_grad, then minibatch
  updates; the actor's log-probs cover the response positions only (logits[:, context_length - 1 : -1]);
  the critic is a value model (AutoModelForSequenceClassification, num_labels=1): no vocabulary logits.
  Not modelled: TRL runs policy and value forward/backward in one step (PolicyAndValueWrapper); here
  actor and critic updates are separate phases (OpenRLHF style), which can understate TRL's peak.
- DPO (Rafailov et al. 2023; TRL DPOTrainer): policy trainable + frozen reference; chosen and
  rejected are concatenated into one forward (trl/trainer/dpo_trainer.py concatenated_forward), so
  the policy trains on 2 x batch_size sequences with 16-bit log-probs of every position
  (selective_log_softmax) and the reference scores 2 x batch_size under no_grad
  (precompute_ref_log_probs=False, the default).
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
- Log-prob bytes per element (TRL_LOGPS_*): with grad 4 B at the end of the forward, 8 B in the
  backward (traced); no_grad 4 B; DPO's end of forward + 2 B for the reference's logits (see the constants).

Phases (the peak is the largest): `rollout` (actor generating), `score_*` (no-grad forwards of the
reference / reward / critic over the rollouts, one at a time; the actor's own old-log-prob pass is the
same size as the reference's -- same architecture -- and is not listed separately), `actor_update` / `critic_update` /
`policy_update` (the trained model at its own peak phase, the others' persistent state resident).

Defaults this module fills (recorded as assumptions; they could move into tools.resolve):
max_new_tokens = seq_len // 2 (GRPO without lengths: 256 of 512 + 256), rollout_batch_size = batch_size
(PPO), num_generations = 8 (TRL GRPOConfig), GRPO gradient checkpointing on (open-r1).
"""

from __future__ import annotations

from tools import calibration as cal
from tools import cutoff
from tools.assumptions import Said, said
from tools.call_memo import memo_same_input, memo_scope
from tools.components.phased import derived
from tools.footprint import ModelFootprint, PhasedComponent, model_footprint
from tools.model.lora import lora_spec
from tools.notes import note
from tools.resolve import ModelRef, ResolvedScenario, resolve_model_ref
from tools.round_trip import with_filled

GRPO_DEFAULT_NUM_GENERATIONS = 8  # trl/trainer/grpo_config.py num_generations default
GRPO_DEFAULT_PROMPT_LEN = 512  # trl/trainer/grpo_config.py max_prompt_length default
GRPO_DEFAULT_COMPLETION_LEN = 256  # trl/trainer/grpo_config.py max_completion_length default
# Log-probs as TRL computes them (trl/trainer/utils.py selective_log_softmax, bf16/fp16 path: a
# per-row F.log_softmax then gather; grpo_trainer._get_per_token_logps: logits / temperature),
# bytes per element of (sequences x scored positions x V) in the 16-bit compute dtype:
# - with grad, end of forward: the temperature-scaled copy + the saved per-row log-softmax outputs;
TRL_LOGPS_FORWARD_BYTES = 4
# - with grad, backward: saved log-softmax + the per-row gradients (all alive until the row loop's
#   unbind backward stacks them) + the stacked gradient + the sliced logits' zero-filled gradient: traced
#   8 B (tools/trace/rl_steps.py on qwen2.5-7b GRPO LoRA b8, 512 completion tokens: 4.65 GiB of loss
#   backward temporaries over 8 x 512 x 152,064 elements);
TRL_LOGPS_BACKWARD_BYTES = 8
# - no_grad (reference / old log-probs): the lm_head output + the scaled copy (one row's
#   log-softmax on top is a single sequence, not counted).
TRL_LOGPS_NOGRAD_BYTES = 4
# DPO (trl/trainer/dpo_trainer.py _compute_loss): the reference forward runs AFTER the policy's forward,
# inside the same loss, while the policy's graph and log-probs are alive: its 16-bit logits (2 B per
# element) sit on top of the policy's end-of-forward (traced tinyllama / llama-2-7b DPO LoRA)
TRL_DPO_REFERENCE_LOGITS_BYTES = 2
TRL_LOGPS_SOURCE = (
    "trl/trainer/utils.py selective_log_softmax (bf16 row loop); trl grpo_trainer._get_per_token_logps "
    "(logits_to_keep = completion positions), dpo_trainer.concatenated_forward, ppo_trainer"
)
STATIC_PARTS = ("weights", "quant_metadata")
# What a trained model holds in every phase of its step: weights, master copy and optimizer state.
PERSISTENT_STATE_PARTS = (*STATIC_PARTS, "master_weights", "optimizer_states")
# What it keeps between its own update steps: those, and gradients too when the estimator counts them
# resident across the step (calibration).
PERSISTENT_TRAIN_PARTS = PERSISTENT_STATE_PARTS + (("gradients",) if cal.GRADS_RESIDENT_ALL_STEP else ())

# Every part taken from a model's footprint is relabelled with its role (`_take(role=...)`), so the
# per-model footprints are made without one: the reference, reward and critic forwards of one model over
# the same sequences are one call, made once per estimate (tools.call_memo).
_model_footprint = memo_same_input(model_footprint)


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
    note_code: str | None = None,
) -> list[PhasedComponent]:
    """Copy `fp`'s parts at `src_phase` into `dst_phases` (optionally filtered, renamed or divided)."""
    out = []
    for part in fp.parts:
        if only is not None and part.name not in only:
            continue
        if part.name in skip or src_phase not in part.at:
            continue
        entry = part.at[src_phase]
        if divide > 1:
            value = entry[0] // divide
            entry = derived(entry, value, " / N (ZeRO-3)", lambda s, v=value: f"({s}) / {divide} = {v:,} B")
        if entry[0] <= 0:
            continue
        name = (rename or {}).get(part.name, part.name)
        out.append(
            PhasedComponent(
                name=name,
                label=part.label,
                label_values=part.label_values,
                source=part.source,
                at=dict.fromkeys(dst_phases, entry),  # the same (bytes, texts) in each phase
                model_role=role,
                note_code=note_code or part.note_code,
            )
        )
    return out


# the scored tokens of a log-prob tensor, as a label value (prompts/<lang>/components.toml [values])
LOGPS_SCORED = {
    "scored tokens, no_grad": "scored_no_grad",
    "response tokens": "response",
    "completion tokens": "completion",
    "chosen + rejected tokens": "chosen_rejected",
}


def _logps_part(
    rs: ResolvedScenario,
    model: ModelRef,
    role: str,
    *,
    sequences: int,
    positions: int,
    at_bytes: dict[str, int],
    what: str,
) -> PhasedComponent | None:
    """Log-prob tensors of `sequences` x `positions` scored tokens, as TRL computes them (module
    constants TRL_LOGPS_*): `at_bytes` maps phase -> bytes per element of sequences x positions x V/t."""
    vocab_local = -(-model.arch.vocab_size // rs.layout.tp)
    tokens = sequences * positions
    at = {}
    for ph, per in at_bytes.items():
        total = per * tokens * vocab_local
        at[ph] = (
            total,
            lambda per=per, total=total: (
                f"n_seq x n_scored x V/t x {per} B",
                f"{sequences} x {positions:,} x {vocab_local:,} x {per} B = {total:,} B",
            ),
        )
    if tokens <= 0 or not at:
        return None
    return PhasedComponent(
        name="logits",
        label="logits.logps",
        label_values=(("scored", LOGPS_SCORED[what]),),
        source=TRL_LOGPS_SOURCE,
        at=at,
        model_role=role,
    )


def _swap_logits(fp: ModelFootprint, part: PhasedComponent | None) -> ModelFootprint:
    """`fp` with its logits part (last PP stage only) replaced by `part`."""
    if not any(p.name == "logits" for p in fp.parts):
        return fp
    parts = tuple(p for p in fp.parts if p.name != "logits") + ((part,) if part is not None else ())
    return fp._replace(parts=parts)


def _other_model(rs: ResolvedScenario, name: str | None, role: str, assumptions: list[Said]) -> ModelRef:
    """The critic / reward model: the named one, else the policy's own architecture (an assumption)."""
    if name:
        ref, more, _ = resolve_model_ref(name, None, None)
        assumptions.extend(more)
        return ref
    field = "critic_model" if role == "critic" else "reward_model"
    assumptions.append(said(field, rs.model.id, f"{field}.policy_size", model=rs.model.name))
    return rs.model


def fill_rl_defaults(rs: ResolvedScenario) -> tuple[int, int, int, int]:
    """(prompt_len, max_new_tokens, rollout sequences per GPU, generations per prompt), defaults recorded."""
    sc, changes, new = rs.scenario, {}, []
    assumed = {rec[0] for rec in rs.said}
    seq_assumed = "seq_len" in assumed  # resolve() already filled its SFT default
    if rs.task == "grpo" and seq_assumed and sc.max_new_tokens is None:
        # TRL GRPOConfig: max_prompt_length=512, max_completion_length=256 (not the SFT cutoff_len)
        rs.seq = GRPO_DEFAULT_PROMPT_LEN + GRPO_DEFAULT_COMPLETION_LEN
        changes["seq_len"] = rs.seq
        rs.say("seq_len", rs.seq, "seq_len.grpo", replace=True)
    if rs.task == "grpo" and "recompute" in assumed and rs.recompute == "none":
        # open-r1 GRPO recipes (recipes/*/grpo/config_*.yaml) and TRL's GRPO examples set it on
        rs.recompute = "full"
        changes.update(recompute="full", gradient_checkpointing=True)
        rs.say("recompute", "full", "recompute.grpo", replace=True)
    max_new = sc.max_new_tokens or 0
    if sc.max_new_tokens is None and rs.task != "dpo":  # DPO scores given pairs: no generation
        if rs.task == "grpo" and seq_assumed:
            max_new, code = GRPO_DEFAULT_COMPLETION_LEN, "max_new_tokens.grpo"
        else:
            max_new, code = rs.seq // 2, "max_new_tokens.half"  # half of seq_len is the response
        changes["max_new_tokens"] = max_new
        new.append(said("max_new_tokens", max_new, code))
    gens = 1
    if rs.task == "grpo":
        gens = sc.num_generations or GRPO_DEFAULT_NUM_GENERATIONS
        if sc.num_generations is None:
            changes["num_generations"] = gens
            new.append(said("num_generations", gens, "num_generations.grpo"))
    rollout = sc.rollout_batch_size
    if rs.task == "grpo":
        # trl grpo_trainer RepeatRandomSampler: per_device_train_batch_size counts COMPLETIONS; the G
        # completions of a prompt are spread over the global batch; each process generates its own
        # micro-batch. A stated rollout_batch_size counts prompts: x G completions.
        sequences = rollout * gens if rollout else rs.batch
        if "batch_size" in assumed:
            rs.say("batch_size", rs.batch, "batch_size.grpo", replace=True, batch=rs.batch)
    else:
        if rollout is None and rs.task != "dpo":
            rollout = rs.batch
            changes["rollout_batch_size"] = rollout
            new.append(said("rollout_batch_size", rollout, "rollout_batch_size.default"))
        sequences = rollout or rs.batch
    if changes:
        rs.scenario = with_filled(sc, changes)
    rs.said.extend(new)
    return max(1, rs.seq - max_new), max_new, sequences, gens


def _frozen(
    rs: ResolvedScenario,
    model: ModelRef,
    role: str,
    *,
    batch: int,
    seq: int,
    score_positions: int,
    resident_phases: tuple[str, ...],
    score_phase: str,
    offload: bool,
) -> list[PhasedComponent]:
    """A frozen model: weights resident in `resident_phases` (only `score_phase` when offloaded),
    plus its no-grad forward transient in `score_phase` and the log-probs of `score_positions`
    positions per sequence (0: a reward model's single score, no vocabulary logits)."""
    fwd = _model_footprint(rs, model=model, mode="forward", batch=batch, seq=seq, all_position_logits=False)
    if score_positions and (fwd.stage is None or fwd.stage.last):
        lp = _logps_part(
            rs,
            model,
            role,
            sequences=batch,
            positions=score_positions,
            at_bytes={"forward": TRL_LOGPS_NOGRAD_BYTES},
            what="scored tokens, no_grad",
        )
        fwd = fwd._replace(parts=fwd.parts + ((lp,) if lp else ()))
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
            note_code="zero3.gathered_layer",
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
    logps_positions: int | None = None,
    what: str = "completion tokens",
    forward_extra_bytes: int = 0,
) -> tuple[ModelFootprint, list[PhasedComponent]]:
    """A trained model: its own peak in `update_phase`, its persistent states in `resident_phases`.
    `logps_positions`: the loss takes TRL's 16-bit log-probs of that many positions per sequence
    instead of the SFT fp32 cross-entropy over every position (0: no vocabulary logits, a value head)."""
    tr = _model_footprint(
        rs, model=model, mode="train", batch=batch, seq=seq, trainable=trainable, adapters=adapters
    )
    if logps_positions is not None:
        lp = _logps_part(
            rs,
            model,
            role,
            sequences=batch,
            positions=logps_positions,
            at_bytes={
                "end_of_forward": TRL_LOGPS_FORWARD_BYTES + forward_extra_bytes,
                "backward": TRL_LOGPS_BACKWARD_BYTES,
            },
            what=what,
        )
        tr = _swap_logits(tr, lp)
    parts = _take(tr, tr.peak_phase(), (update_phase,), role=role)
    parts += _take(tr, "optimizer_step", resident_phases, role=role, only=PERSISTENT_TRAIN_PARTS)
    return tr, parts


def _persistent_bytes(fp: ModelFootprint) -> int:
    """What a trained model holds in every phase of its step whatever the phase: its weights, master
    weights and optimizer states (the same bytes at each training phase)."""
    return sum(p.bytes_at("optimizer_step") for p in fp.parts if p.name in PERSISTENT_STATE_PARTS)


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
    gen = _model_footprint(
        rs,
        model=rs.model,
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
            note_code="rl.generation_gathers_weights",
        )
    return parts


# --------------------------------------------------------------------------------------------------
# the algorithms
# --------------------------------------------------------------------------------------------------
def _ppo(rs: ResolvedScenario, prompt_len: int, rollout: int, assumptions: list[Said]) -> ModelFootprint:
    """TRL PPOTrainer: rollouts by generate under no_grad, then minibatch updates on the rollouts.
    Log-probs only of the response positions (ppo_trainer: logits[:, context_length - 1 : -1]); the critic
    (AutoModelForSequenceClassification, num_labels=1) has a value head, no vocabulary logits."""
    seq, b = rs.seq, rs.batch
    response = max(1, seq - prompt_len)
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
        adapters=rs.adapters,  # as the critic's: a critic of the policy's model trains alike (one footprint)
        logps_positions=response,
        what="response tokens",
    )
    critic_trainable = None
    if rs.adapters:  # OpenRLHF: --lora_rank applies to actor and critic
        sc = rs.scenario
        critic_trainable = lora_spec(
            critic_ref.params, sc.lora_rank or 8, sc.lora_targets or ["q_proj", "v_proj"], sc.dora
        )
    critic_fp, critic_parts = _trained(
        rs,
        critic_ref,
        "critic",
        batch=b,
        seq=seq,
        update_phase="critic_update",
        resident_phases=tuple(p for p in phases if p != "critic_update"),
        trainable=critic_trainable,
        adapters=rs.adapters,
        logps_positions=0,
    )
    parts += critic_parts
    # actor and critic keep their weights and optimizer states in every phase: a lower bound of the peak
    # (with PP, of the stage whose whole step is the largest: which stage that is, activations decide)
    cutoff.check(_persistent_bytes(actor_fp) + _persistent_bytes(critic_fp), resident=rs.layout.pp == 1)
    parts += _actor_rollout(rs, actor_fp, sequences=rollout, prompt_len=prompt_len, seq=seq, role="actor")
    # critic values over the rollouts: a no-grad forward (its weights are already counted as persistent)
    critic_fwd = _model_footprint(
        rs, model=critic_ref, mode="forward", batch=rollout, seq=seq, all_position_logits=False
    )
    parts += _take(critic_fwd, "forward", ("score_critic",), role="critic", skip=STATIC_PARTS)
    parts += _reference(rs, rollout, seq, response, phases, "score_reference", offload)
    parts += _frozen(
        rs,
        reward_ref,
        "reward",
        batch=rollout,
        seq=seq,
        score_positions=0,
        resident_phases=phases,
        score_phase="score_reward",
        offload=offload,
    )
    return _assemble(rs, phases, parts, actor_fp)


def _reference(
    rs: ResolvedScenario,
    batch: int,
    seq: int,
    positions: int,
    phases: tuple[str, ...],
    score_phase: str,
    offload: bool,
) -> list[PhasedComponent]:
    """The reference: a frozen copy of the policy, or (LoRA/QLoRA) the policy with adapters disabled:
    only its forward transient, no second set of weights (TRL: ref_model = None for PEFT models).
    Its log-probs cover `positions` positions per sequence, computed under torch.no_grad."""
    if rs.adapters:
        fwd = _model_footprint(
            rs, model=rs.model, mode="forward", batch=batch, seq=seq, all_position_logits=False
        )
        parts = _take(
            fwd,
            "forward",
            (score_phase,),
            role="reference",
            skip=STATIC_PARTS,
            note_code="rl.reference_adapters_disabled",
        )
        if fwd.stage is None or fwd.stage.last:
            lp = _logps_part(
                rs,
                rs.model,
                "reference",
                sequences=batch,
                positions=positions,
                at_bytes={score_phase: TRL_LOGPS_NOGRAD_BYTES},
                what="scored tokens, no_grad",
            )
            parts += [lp] if lp else []
        return parts
    return _frozen(
        rs,
        rs.model,
        "reference",
        batch=batch,
        seq=seq,
        score_positions=positions,
        resident_phases=phases,
        score_phase=score_phase,
        offload=offload,
    )


def _grpo(
    rs: ResolvedScenario, prompt_len: int, sequences: int, gens: int, assumptions: list[Said]
) -> ModelFootprint:
    """TRL GRPOTrainer: the policy trains on its micro-batch of `batch_size` completions (generations
    spread over the global batch, not multiplied into it), log-probs of the completion positions only
    (logits_to_keep); the reference scores the same micro-batch under no_grad."""
    seq = rs.seq
    completion = max(1, seq - prompt_len)
    has_rm = bool(rs.scenario.reward_model)
    phases = ("rollout", "score_reference") + (("score_reward",) if has_rm else ()) + ("actor_update",)
    offload = bool(rs.scenario.reference_offload)
    actor_fp, parts = _trained(
        rs,
        rs.model,
        "actor",
        batch=rs.batch,
        seq=seq,
        update_phase="actor_update",
        resident_phases=tuple(p for p in phases if p not in ("actor_update", "rollout")),
        logps_positions=completion,
    )
    if rs.scenario.gpu_memory_utilization is not None:  # vLLM colocate mode
        parts += _take(actor_fp, "optimizer_step", ("rollout",), role="actor", only=PERSISTENT_TRAIN_PARTS)
    else:
        parts += _actor_rollout(
            rs, actor_fp, sequences=sequences, prompt_len=prompt_len, seq=seq, role="actor"
        )
    # the reference scores in chunks of per_device_train_batch_size (trl _get_per_token_logps batch_size)
    parts += _reference(rs, min(sequences, rs.batch), seq, completion, phases, "score_reference", offload)
    if has_rm:
        reward_ref = _other_model(rs, rs.scenario.reward_model, "reward", assumptions)
        parts += _frozen(
            rs,
            reward_ref,
            "reward",
            batch=min(sequences, rs.batch),
            seq=seq,
            score_positions=0,
            resident_phases=phases,
            score_phase="score_reward",
            offload=offload,
        )
    else:
        assumptions.append(said("reward_model", None, "reward_model.rule_based"))
    parts += _vllm_colocate(rs, phases)
    return _assemble(rs, phases, parts, actor_fp)


def _vllm_colocate(rs: ResolvedScenario, phases: tuple[str, ...]) -> list[PhasedComponent]:
    """TRL use_vllm=True, vllm_mode="colocate": the vLLM engine in every training process reserves
    vllm_gpu_memory_utilization x card memory (its weights copy + KV blocks) for the whole run
    (trl grpo_config.py vllm_gpu_memory_utilization; no sleep mode)."""
    gmu = rs.scenario.gpu_memory_utilization
    if gmu is None:
        return []
    card = rs.gpu.memory_bytes
    reserved = int(card * gmu)
    at = dict.fromkeys(
        phases,
        (reserved, lambda: ("vllm_gpu_memory_utilization x M_card", f"{gmu} x {card:,} B = {reserved:,} B")),
    )
    return [
        PhasedComponent(
            name="vllm_reservation",
            label="vllm_reservation",
            source="trl grpo_trainer vllm_mode='colocate'; vllm gpu_memory_utilization (vllm/config/cache.py)",
            at=at,
            model_role="actor",
        )
    ]


def _dpo(rs: ResolvedScenario) -> ModelFootprint:
    """TRL DPOTrainer: chosen and rejected concatenated into one forward (concatenated_forward) of
    2 x batch sequences; 16-bit log-probs of every position (selective_log_softmax); the reference's
    under no_grad (or precomputed: precompute_ref_log_probs)."""
    seq, pairs = rs.seq, 2 * rs.batch
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
        logps_positions=seq,
        what="chosen + rejected tokens",
        forward_extra_bytes=TRL_DPO_REFERENCE_LOGITS_BYTES,
    )
    parts += _reference(rs, pairs, seq, seq, phases, "score_reference", offload)
    return _assemble(rs, phases, parts, policy_fp)


def _assemble(
    rs: ResolvedScenario, phases: tuple[str, ...], parts: list[PhasedComponent], main: ModelFootprint
) -> ModelFootprint:
    trained = {"actor", "critic", "policy"}
    roles = list(dict.fromkeys(p.model_role for p in parts if p.model_role))
    colocated = note(
        "rl_colocated",
        models=[{"role": r, "trainable": r in trained} for r in roles],
        lora_reference=bool(rs.adapters and "reference" in roles),
        reference_offload=bool(rs.scenario.reference_offload),
    )
    notes = [*main.notes, colocated]
    return ModelFootprint(
        phases=phases, parts=tuple(parts), gpu_role=main.gpu_role, notes=tuple(notes), stage=main.stage
    )


def rl_footprint(rs: ResolvedScenario) -> ModelFootprint:
    """The RL job's footprint on its most loaded GPU, by RL phase (see the module docstring).

    Fills the RL defaults into `rs.scenario` and `rs.assumptions` (max_new_tokens, rollout_batch_size,
    num_generations, critic/reward model) so the Estimate shows them.
    """
    prompt_len, _, rollout, gens = fill_rl_defaults(rs)
    extra: list[Said] = []
    with memo_scope():  # the defaults are filled: `rs` stays as it is while the step is composed
        if rs.task == "ppo":
            fp = _ppo(rs, prompt_len, rollout, extra)
        elif rs.task == "grpo":
            fp = _grpo(rs, prompt_len, rollout, gens, extra)
        elif rs.task == "dpo":
            fp = _dpo(rs)
        else:
            raise ValueError(f"rl_footprint handles ppo, grpo and dpo, not {rs.task!r}")
    rs.said.extend(extra)
    return fp
