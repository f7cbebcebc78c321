"""One RL training step as TRL runs it, on the tracer's models (no TRL import: its loss code is
re-written here line by line, so the tracer needs only torch/transformers/peft).

- DPO (trl/trainer/dpo_trainer.py `_compute_loss`, L1329-1400 at f2cd577): chosen and rejected
  concatenated into one batch of 2 x batch_size rows; the policy forward with grad; `shift_logits =
  logits[..., :-1, :]`; `selective_log_softmax(shift_logits, input_ids[..., 1:])`; masked sum per row;
  THEN the reference forward under `torch.no_grad()` (a frozen copy, or the same PEFT model inside
  `use_adapter(model, None)`, i.e. adapters disabled) while the policy's graph and logits are alive;
  sigmoid loss `-logsigmoid(beta * (chosen_logratios - rejected_logratios))`; backward; optimizer step.
- GRPO (trl/trainer/grpo_trainer.py): the rollout (generation) is traced as inference elsewhere; here
  the reference log-probs of the completions under no_grad (`_get_per_token_logps_and_entropies`,
  L1440-1540, logits_to_keep = completion length + 1, `logits.div_(temperature)`, selective_log_softmax),
  then `_compute_loss` (L2991-3100): the policy's per-token log-probs with grad, entropies under
  no_grad (`entropy_from_logits`, chunks of 128 rows), coef_1 = exp(logp - old_logp) with
  old_logp = logp.detach() (one iteration per generation), clipped surrogate, the k3 KL to the
  reference (beta > 0), token-mean over the completion mask; backward; optimizer step.
- `selective_log_softmax` (trl/trainer/utils.py L479-523): 16-bit logits take the per-row loop of
  log_softmax + gather; fp32 logits the gather - logsumexp path.
"""

from __future__ import annotations

from contextlib import nullcontext
from typing import Any

import torch
import torch.nn.functional as F

DPO_BETA = 0.1  # TRL DPOConfig beta
GRPO_BETA = 0.04  # the KL term on (TRL's default is 0.0, which drops the reference model altogether)
GRPO_EPSILON = 0.2  # TRL GRPOConfig epsilon
ENTROPY_CHUNK_ROWS = 128  # trl entropy_from_logits chunk_size


def selective_log_softmax(logits: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """trl/trainer/utils.py selective_log_softmax, same branches."""
    if logits.dtype in (torch.float32, torch.float64):
        selected = torch.gather(logits, dim=-1, index=index.unsqueeze(-1)).squeeze(-1)
        lse = torch.stack([torch.logsumexp(row, dim=-1) for row in logits])
        return selected - lse
    out = []
    for row_logits, row_labels in zip(logits, index, strict=True):
        row_logps = F.log_softmax(row_logits, dim=-1)
        out.append(row_logps.gather(dim=-1, index=row_labels.unsqueeze(-1)).squeeze(-1))
    return torch.stack(out)


def entropy_from_logits(logits: torch.Tensor, chunk_size: int = ENTROPY_CHUNK_ROWS) -> torch.Tensor:
    flat = logits.reshape(-1, logits.shape[-1])
    ents = []
    for chunk in flat.split(chunk_size, dim=0):
        logps = F.log_softmax(chunk, dim=-1)
        ents.append(-(torch.exp(logps) * logps).sum(-1))
    return torch.cat(ents, dim=0).reshape(logits.shape[:-1])


def _reference_context(policy: torch.nn.Module, ref_model: torch.nn.Module | None) -> tuple[Any, Any]:
    """(module to call, context): a frozen copy, or the PEFT policy with its adapters disabled."""
    if ref_model is not None:
        return ref_model, nullcontext()
    return policy, policy.disable_adapter()


def dpo_loss_step(
    policy: torch.nn.Module, ref_model: torch.nn.Module | None, ids: torch.Tensor, autocast: bool
) -> torch.Tensor:
    """The DPO loss of one concatenated batch [chosen; rejected] (rows 2 x pairs)."""
    ctx = torch.autocast(ids.device.type, dtype=torch.bfloat16) if autocast else nullcontext()
    completion_mask = torch.ones_like(ids)
    with ctx:
        outputs = policy(input_ids=ids, use_cache=False)
        shift_logits = outputs.logits[..., :-1, :]
        shift_labels = ids[..., 1:]
        shift_mask = completion_mask[..., 1:]
        per_token_logps = selective_log_softmax(shift_logits, shift_labels)
        per_token_logps = per_token_logps.masked_fill(shift_mask == 0, 0.0)
        logps = per_token_logps.sum(dim=1)
        chosen_logps, rejected_logps = logps.chunk(2, dim=0)
        ref, ref_ctx = _reference_context(policy, ref_model)
        with torch.no_grad(), ref_ctx:
            ref_outputs = ref(input_ids=ids, use_cache=False)
            ref_logps = selective_log_softmax(ref_outputs.logits[..., :-1, :], shift_labels)
            ref_logps = ref_logps.masked_fill(shift_mask == 0, 0.0).sum(dim=1)
            del ref_outputs
        ref_chosen, ref_rejected = ref_logps.chunk(2, dim=0)
        logits = DPO_BETA * ((chosen_logps - ref_chosen) - (rejected_logps - ref_rejected))
        loss = -F.logsigmoid(logits).mean()
    del outputs
    return loss


def _completion_logps(model: torch.nn.Module, ids: torch.Tensor, keep: int) -> torch.Tensor:
    """TRL _get_per_token_logps_and_entropies for one batch (temperature 1.0)."""
    logits = model(input_ids=ids, use_cache=False, logits_to_keep=keep + 1).logits
    logits = logits[:, :-1, :]
    logits = logits[:, -keep:, :]
    logits.div_(1.0)
    return logits


def grpo_reference_logps(
    policy: torch.nn.Module, ref_model: torch.nn.Module | None, ids: torch.Tensor, keep: int, autocast: bool
) -> torch.Tensor:
    ctx = torch.autocast(ids.device.type, dtype=torch.bfloat16) if autocast else nullcontext()
    ref, ref_ctx = _reference_context(policy, ref_model)
    with torch.no_grad(), ref_ctx, ctx:
        logits = _completion_logps(ref, ids, keep)
        out = selective_log_softmax(logits, ids[:, -keep:])
        del logits
    return out


def grpo_loss_step(
    policy: torch.nn.Module, ids: torch.Tensor, keep: int, ref_logps: torch.Tensor, autocast: bool
) -> torch.Tensor:
    ctx = torch.autocast(ids.device.type, dtype=torch.bfloat16) if autocast else nullcontext()
    with ctx:
        logits = _completion_logps(policy, ids, keep)
        per_token_logps = selective_log_softmax(logits, ids[:, -keep:])
        with torch.no_grad():
            entropies = entropy_from_logits(logits)
        del logits, entropies
        mask = torch.ones_like(per_token_logps)
        advantages = torch.zeros(ids.shape[0], 1, dtype=per_token_logps.dtype, device=ids.device)
        old = per_token_logps.detach()
        coef_1 = torch.exp(per_token_logps - old)
        coef_2 = torch.clamp(coef_1, 1 - GRPO_EPSILON, 1 + GRPO_EPSILON)
        per_token_loss = -torch.min(coef_1 * advantages, coef_2 * advantages)
        kl = torch.exp(ref_logps - per_token_logps) - (ref_logps - per_token_logps) - 1
        per_token_loss = per_token_loss + GRPO_BETA * kl
        loss = (per_token_loss * mask).sum() / mask.sum().clamp(min=1.0)
    return loss
