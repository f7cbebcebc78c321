"""The memory savers and optimizer wrappers people switch on, written as the code they follow does it,
so the tracer can run them on fake tensors (no Triton, no CUDA, no DeepSpeed install needed).

- `chunked_ce_loss`: torchtune's chunked output + `CEWithChunkedOutputLoss` (torchtune
  modules/transformer.py `TransformerDecoder.chunked_output`: the output projection applied per chunk
  of the sequence, `num_output_chunks = 8`; modules/loss/ce_chunked_output_loss.py: each chunk upcast
  to fp32 and `F.cross_entropy(..., reduction="sum")` on its own, summed, divided by the token count).
- `fused_linear_ce_loss`: Liger's fused linear cross-entropy (Liger-Kernel
  src/liger_kernel/ops/fused_linear_cross_entropy.py `fused_linear_cross_entropy_forward` L49-96:
  chunk_size = next_power_of_2(cdiv(BT, cdiv(V, H))), grad_input = zeros_like(input), grad_weight =
  zeros_like(weight) when the head trains, per chunk `logits_chunk = input_chunk @ weight.t()` then the
  CE kernel writes d loss / d logits into logits_chunk in place, then grad_input[chunk] = grad @ weight,
  grad_weight += grad.t() @ input_chunk; the backward only rescales the saved gradients). The Triton CE
  kernel is replaced by the same arithmetic in PyTorch on the chunk (one fp32 chunk transient).
  Labels as `LigerForCausalLMLoss` (transformers/model/loss_utils.py L87-92: pad by one ignore_index,
  shift, flatten the hidden states).
- `register_optimizer_in_backward`: torchtune training/memory.py `register_optim_in_bwd_hooks`: one
  optimizer per parameter stepped (and its gradient freed) in a post-accumulate-grad hook.
- `offload_saved_tensors`: torchtune training/_activation_offloading.py `OffloadActivations`: every
  tensor saved for backward of at least 1 KiB that is not a parameter is copied to (pinned) CPU memory
  in the pack hook and brought back in the unpack hook. Here the CPU copy is only its metadata (host
  memory is not GPU memory); the unpack allocates the tensor again on the device, as the GPU does.
- `MasterWeightStep`: DeepSpeed's `BF16_Optimizer` (deepspeed/runtime/bf16_optimizer.py) and
  `FP16_Optimizer` (deepspeed/runtime/fp16/fused_optimizer.py) over 16-bit weights, at one rank.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

IGNORE_INDEX = -100
TORCHTUNE_OUTPUT_CHUNKS = 8  # torchtune recipes: model.set_num_output_chunks(loss_fn.num_output_chunks) = 8
OFFLOAD_MIN_BYTES = 1024  # torchtune OffloadActivations(min_offload_size=1024)


def _decoder_and_head(model: torch.nn.Module) -> tuple[torch.nn.Module, torch.nn.Module, Any]:
    """(decoder stack, LM head, config) of a transformers causal LM, through a PEFT wrapper too."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    decoder = getattr(base, base.base_model_prefix)
    return decoder, base.get_output_embeddings(), base.config


def _softcap(logits: torch.Tensor, config: Any) -> torch.Tensor:
    cap = getattr(config, "final_logit_softcapping", None)
    if cap:  # transformers Gemma-2/3 forward: logits / cap -> tanh -> * cap
        logits = torch.tanh(logits / cap) * cap
    return logits


def chunked_ce_loss(model: torch.nn.Module, ids: torch.Tensor, chunks: int = TORCHTUNE_OUTPUT_CHUNKS):
    """torchtune: hidden states -> per-chunk output projection -> per-chunk fp32 CE (sum) / tokens."""
    decoder, head, config = _decoder_and_head(model)
    h = decoder(input_ids=ids).last_hidden_state
    logits = [_softcap(head(chunk), config) for chunk in h.chunk(chunks, dim=1)]
    del h
    # torchtune recipes: labels = hstack(labels[..., 1:], ignore_index column)
    pad = torch.full((ids.shape[0], 1), IGNORE_INDEX, dtype=ids.dtype, device=ids.device)
    labels = torch.hstack((ids[..., 1:], pad))
    label_chunks = [t.reshape(-1) for t in labels.chunk(chunks, dim=1)]
    total = (labels != IGNORE_INDEX).sum()
    loss = torch.zeros((), dtype=torch.float32, device=ids.device)
    for logit_chunk, label_chunk in zip(logits, label_chunks, strict=True):
        flat = logit_chunk.reshape(-1, logit_chunk.size(-1))
        loss = loss + F.cross_entropy(flat.float(), label_chunk, ignore_index=IGNORE_INDEX, reduction="sum")
    return loss / total


class _FusedLinearCE(torch.autograd.Function):
    """Liger's LigerFusedLinearCrossEntropyFunction: the gradients are computed in the forward."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, weight: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        bt, h = x.shape
        v = weight.shape[0]
        inc_factor = -(-v // h)
        chunk = 1 << max(0, (-(-bt // inc_factor) - 1).bit_length())  # triton.next_power_of_2
        n_chunks = -(-bt // chunk)
        grad_input = torch.zeros_like(x)
        grad_weight = torch.zeros_like(weight) if weight.requires_grad else None
        loss_1d = torch.zeros(bt, dtype=torch.float32, device=x.device)
        n_valid = (target != IGNORE_INDEX).sum().clamp(min=1)
        for i in range(n_chunks):
            lo, hi = i * chunk, min((i + 1) * chunk, bt)
            x_chunk = x[lo:hi]
            logits_chunk = x_chunk @ weight.t()
            t_chunk = target[lo:hi]
            # liger_cross_entropy_kernel: loss and d loss / d logits (softmax - one-hot) / n, in place
            fp32 = logits_chunk.float()
            lse = torch.logsumexp(fp32, dim=-1)
            valid = t_chunk != IGNORE_INDEX
            safe_t = t_chunk.clamp(min=0)
            picked = fp32.gather(-1, safe_t.unsqueeze(-1)).squeeze(-1)
            loss_1d[lo:hi] = torch.where(valid, lse - picked, 0.0)
            fp32.sub_(lse.unsqueeze(-1)).exp_()
            fp32.scatter_add_(-1, safe_t.unsqueeze(-1), -valid.unsqueeze(-1).to(fp32.dtype))
            fp32.mul_((valid.unsqueeze(-1) / n_valid).to(fp32.dtype))
            logits_chunk = logits_chunk.copy_(fp32)
            del fp32
            grad_input[lo:hi] = (logits_chunk @ weight).to(grad_input.dtype)
            if grad_weight is not None:
                grad_weight.addmm_(logits_chunk.t().to(x_chunk.dtype), x_chunk)
            del logits_chunk
        ctx.save_for_backward(grad_input.detach(), grad_weight.detach() if grad_weight is not None else None)
        return loss_1d.sum() / n_valid

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[Any, ...]:
        grad_input, grad_weight = ctx.saved_tensors
        # Liger fused_linear_cross_entropy_backward: element_mul in place unless grad_output == 1
        return grad_input, grad_weight, None


def fused_linear_ce_loss(model: torch.nn.Module, ids: torch.Tensor) -> torch.Tensor:
    """Liger fused linear CE over the decoder's last hidden states: the full logits never exist."""
    decoder, head, _config = _decoder_and_head(model)
    h = decoder(input_ids=ids).last_hidden_state
    labels = F.pad(ids, (0, 1), value=IGNORE_INDEX)[..., 1:].contiguous().view(-1)
    hidden = h.reshape(-1, h.shape[-1])
    weight = head.get_base_layer().weight if hasattr(head, "get_base_layer") else head.weight
    # under autocast the chunk matmuls run in 16 bits (Liger's amp_custom_fwd keeps the caller's state)
    return _FusedLinearCE.apply(hidden, weight, labels)


def register_optimizer_in_backward(params: list[torch.nn.Parameter]) -> dict[torch.nn.Parameter, Any]:
    """torchtune register_optim_in_bwd_hooks: AdamW(fused) per parameter, stepped as its grad is ready."""
    optims = {p: torch.optim.AdamW([p], lr=1e-5, fused=True) for p in params}

    def step(param: torch.Tensor) -> None:
        optims[param].step()
        optims[param].zero_grad(set_to_none=True)

    for p in params:
        p.register_post_accumulate_grad_hook(step)
    return optims


def _is_parameter_view(t: torch.Tensor) -> bool:
    return isinstance(t, torch.nn.Parameter) or isinstance(getattr(t, "_base", None), torch.nn.Parameter)


def offload_saved_tensors() -> Any:
    """torchtune OffloadActivations, metadata-only host copy (see the module docstring)."""

    def pack(t: torch.Tensor) -> Any:
        if t.numel() * t.element_size() < OFFLOAD_MIN_BYTES or _is_parameter_view(t):
            return ("kept", t)
        return ("host", (t.shape, t.stride(), t.dtype, t.is_contiguous(), t.device))

    def unpack(packed: Any) -> torch.Tensor:
        kind, value = packed
        if kind == "kept":
            return value
        shape, stride, dtype, contiguous, device = value
        # brought back to the device: torchtune copies `empty_like(activation)` to the host and `.to(device)`
        # back, a compact tensor of the saved tensor's own size (not its base storage's)
        if contiguous:
            return torch.empty(shape, dtype=dtype, device=device)
        return torch.empty_strided(shape, stride, dtype=dtype, device=device)

    return torch.autograd.graph.saved_tensors_hooks(pack, unpack)


class MasterWeightStep:
    """A DeepSpeed master-weight optimizer over 16-bit weights at one rank (ZeRO-0/1, N = 1).

    style "bf16" (deepspeed/runtime/bf16_optimizer.py, BF16_Optimizer):
      - L154-158: the trainable 16-bit params are flattened into one buffer (the params become views);
      - L169-170: fp32 master = the rank's partition `.clone().float()` (all of it at N = 1);
      - L176-177: `fp32_groups_gradients_flat` = zeros_like(flat, fp32), allocated once, kept for good;
      - L371 (backward_epilogue -> update_hp_grads): hp_grad.add_(lp.grad.to(fp32)) per parameter;
      - L326-333: the wrapped (fused) Adam steps on the master with the fp32 buffer as its grad;
        update_lp_params copies the master back into the 16-bit params; clear_hp_grads zero_()s the buffer;
        zero_grad(set_to_none=True) frees the 16-bit grads.
    style "fp16" (deepspeed/runtime/fp16/fused_optimizer.py, FP16_Optimizer):
      - L92-101: 16-bit flat params, fp32 master = flat.clone().float();
      - L286-294 (step): grads_groups_flat = _flatten_dense_tensors([p.grad.to(fp32) for p in group]):
        every gradient upcast (a list of fp32 copies) and concatenated into one fp32 flat gradient;
      - L312-313: p.grad = None; fused Adam on the master; L348-349: the fp32 flat grad dropped;
        L355-357: the 16-bit params updated from the master.
    """

    def __init__(self, params: list[torch.nn.Parameter], style: str) -> None:
        self.params = params
        self.style = style
        flat = torch.cat([p.detach().reshape(-1) for p in params])
        offset = 0
        for p in params:  # _update_storage_to_flattened_tensor: params become views of the flat buffer
            n = p.numel()
            p.data = flat[offset : offset + n].view_as(p)
            offset += n
        self.flat16 = flat
        self.master = flat.clone().float().detach().requires_grad_(True)
        self.hp_grads = torch.zeros_like(flat, dtype=torch.float32) if style == "bf16" else None
        self.inner = torch.optim.AdamW([self.master], lr=1e-5, fused=True)

    def backward_epilogue(self) -> None:
        if self.hp_grads is None:
            return
        offset = 0
        for p in self.params:
            n = p.numel()
            if p.grad is not None:
                self.hp_grads[offset : offset + n].add_(p.grad.reshape(-1).to(torch.float32))
            offset += n

    def step(self) -> None:
        with torch.no_grad():
            if self.hp_grads is not None:
                self.master.grad = self.hp_grads
                self.inner.step()
                self.master.grad = None
            else:
                grads = [
                    torch.zeros(p.size(), dtype=torch.float32, device=p.device)
                    if p.grad is None
                    else p.grad.to(torch.float32)
                    for p in self.params
                ]
                flat_grad = torch.cat([g.reshape(-1) for g in grads])
                del grads
                self.master.grad = flat_grad
                for p in self.params:
                    p.grad = None
                del flat_grad
                self.inner.step()
                self.master.grad = None
            self.flat16.copy_(self.master)  # update_lp_params / the unflatten-and-copy loop
            if self.hp_grads is not None:
                self.hp_grads.zero_()

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    def states(self) -> list[torch.Tensor]:
        return [t for s in self.inner.state.values() for t in s.values()]
