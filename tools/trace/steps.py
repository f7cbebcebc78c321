"""The programs we trace: one HF training step (twice), a PEFT LoRA/DoRA step, and generation.

Each follows what the reference stack does on a GPU:
- training: `loss = model(input_ids, labels=input_ids).loss` (transformers/loss/loss_utils.py
  ForCausalLMLoss: `logits.float()` then cross-entropy), the model output dropped before
  `loss.backward()` (as transformers' Trainer.compute_loss returns only the loss), then
  `torch.optim.AdamW(fused=True)` (Trainer's default `adamw_torch_fused` for torch >= 2.8),
  `zero_grad(set_to_none=True)`. Steps 1 and 2 are both measured: optimizer states appear at step 1.
- recipes: fp32; amp = fp32 weights + `torch.autocast(bfloat16)` around the forward (Trainer
  `bf16=True`); bf16 = pure bf16 weights, grads and AdamW states.
- LoRA/DoRA: PEFT `get_peft_model` on a frozen base (adapters upcast to fp32, PEFT's default
  `autocast_adapter_dtype=True`), `lora_dropout` as requested (0 unless stated); `lm_head` /
  `embed_tokens` targets through PEFT's Linear / Embedding LoRA layers.
- savers (tools/trace/savers.py): torchtune's chunked cross-entropy, Liger's fused linear
  cross-entropy, torchtune's optimizer-in-backward and activation offloading; recipe `mixed`: a
  DeepSpeed master-weight step (BF16_Optimizer for bf16 weights, FP16_Optimizer for fp16).
- inference: prefill with a DynamicCache and `logits_to_keep=1` (as `generate` does), then greedy
  decode steps, under `torch.no_grad()`.
"""

from __future__ import annotations

import warnings
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any

import torch
from torch._subclasses.fake_tensor import FakeTensorMode

from tools.model.architecture import Architecture
from tools.trace.build import build_model, family_for
from tools.trace.savers import (
    MasterWeightStep,
    chunked_ce_loss,
    fused_linear_ce_loss,
    offload_saved_tensors,
    register_optimizer_in_backward,
)
from tools.trace.tracker import (
    GRADIENTS,
    KV_CACHE,
    MASTER_WEIGHTS,
    OPTIMIZER_STATES,
    PARAMETERS,
    MemoryTracker,
    TraceReport,
)

TRAIN_TASKS = ("full_finetune", "pretrain", "lora", "dpo", "grpo")
RL_TASKS = ("dpo", "grpo")


@dataclass
class TraceRequest:
    """What to trace. `recipe`: fp32 | amp | bf16 (training); inference uses `weight_dtype`."""

    architecture: Architecture
    task: str = "full_finetune"
    recipe: str = "amp"
    weight_dtype: str = "bf16"
    batch_size: int = 1
    seq_len: int = 512
    gradient_checkpointing: bool = False
    attention: str = "sdpa"  # sdpa | eager (transformers attn_implementation)
    lora_rank: int | None = None
    lora_targets: list[str] = field(default_factory=lambda: ["q_proj", "v_proj"])
    dora: bool = False
    max_new_tokens: int = 4
    lora_dropout: float = 0.0
    loss: str = "hf"  # hf | chunked (torchtune CEWithChunkedOutputLoss) | fused_linear (Liger)
    optimizer_in_backward: bool = False
    activation_offload: bool = False
    # recipe mixed: DeepSpeed's wrapper at ZeRO-0 is FP16_Optimizer for fp16 AND bf16 weights (engine.py
    # _do_optimizer_sanity_check -> FP16 / DDP_BFLOAT16 -> _configure_fp16_optimizer); "bf16" traces
    # BF16_Optimizer (ZeRO-0 with pipeline parallelism, or ZeRO-1 with grad_accum_dtype fp32)
    master_style: str = "fp16"
    steps: int = 2
    family: str | None = None
    fake: bool = True  # False: real CPU tensors (tracker validation on tiny configs)


@dataclass
class TraceResult:
    """A traced run: the request, the measured report and what differs from the GPU it stands for."""

    request: TraceRequest
    report: TraceReport
    family: str
    kernels: list[str]
    gpu_differences: list[str]
    versions: dict[str, str]

    def as_dict(self) -> dict[str, Any]:
        r = self.request
        return {
            "family": self.family,
            "task": r.task,
            "recipe": r.recipe,
            "weight_dtype": r.weight_dtype,
            "batch_size": r.batch_size,
            "seq_len": r.seq_len,
            "gradient_checkpointing": r.gradient_checkpointing,
            "attention": r.attention,
            "lora_rank": r.lora_rank,
            "lora_targets": r.lora_targets if r.lora_rank else None,
            "dora": r.dora,
            "max_new_tokens": r.max_new_tokens if r.task == "inference" else None,
            "lora_dropout": r.lora_dropout if r.lora_rank else None,
            "loss": r.loss,
            "optimizer_in_backward": r.optimizer_in_backward,
            "activation_offload": r.activation_offload,
            "fake_tensors": r.fake,
            **self.report.as_dict(),
            "kernels": self.kernels,
            "gpu_differences": self.gpu_differences,
            "versions": self.versions,
        }


GPU_DIFFERENCES = (
    "CUDA context, cuBLAS/cuDNN workspaces and NCCL buffers are not tensors: not in this peak "
    "(the estimator's total adds them)",
    "the caching allocator rounds to 512 B (counted here) but also caches freed blocks in 2 MiB/20 MiB "
    "segments: max_memory_reserved is typically a few % above this peak",
    "SDPA: the trace runs the CPU kernel with the memory of the kernel a GPU picks (flash for 16-bit, "
    "memory-efficient for fp32 without GQA: output + fp32 log-sum-exp; math with materialised scores "
    "for fp32 with GQA); the FlashAttention-2 package (attn_implementation=flash_attention_2) is not traced",
    "eager attention materialises the same a*s*s scores on CPU and GPU",
    "dropout (PEFT lora_dropout > 0) runs ATen native_dropout, the fused kernel CUDA picks (1-byte mask "
    "saved); CPU's own fallback would save a noise tensor of the input dtype",
)


def _versions() -> dict[str, str]:
    import transformers

    out = {"torch": torch.__version__, "transformers": transformers.__version__}
    try:
        import peft

        out["peft"] = peft.__version__
    except ImportError:  # pragma: no cover - peft is part of the [trace] extra
        pass
    return out


def _cache_tensors(cache: Any) -> list[torch.Tensor]:
    """Key/value tensors held by a transformers Cache (DynamicCache layers, or legacy tuples)."""
    out: list[torch.Tensor] = []
    for layer in getattr(cache, "layers", None) or []:
        for name in ("keys", "values", "compressed_kv", "k_pe"):
            t = getattr(layer, name, None)
            if isinstance(t, torch.Tensor):
                out.append(t)
    if not out and isinstance(cache, tuple | list):
        for item in cache:
            out.extend(t for t in item if isinstance(t, torch.Tensor))
    return out


def _model_dtype(req: TraceRequest) -> str:
    if req.task == "inference":
        return req.weight_dtype
    if req.task == "lora" or (req.task in RL_TASKS and req.lora_rank):
        return req.weight_dtype  # frozen base as loaded (bf16 for a LoRA run)
    if req.recipe == "mixed":  # DeepSpeed master-weight step over 16-bit weights
        return req.weight_dtype if req.weight_dtype in ("bf16", "fp16") else "bf16"
    return {"fp32": "fp32", "amp": "fp32", "bf16": "bf16"}[req.recipe]


def _move_adapter_by_reassign(layer: Any, adapter_name: str, device: Any = None) -> None:
    """PEFT's BaseTunerLayer._move_adapter_to_device_of_base_layer (tuners_utils.py), same effect:
    cast the new adapter to the base layer's dtype, but by re-assigning parameters instead of
    `Module.to()`, which must swap_tensors for fake parameters and fails on them."""
    base_dtype = layer.get_base_layer().weight.dtype
    for name in (*layer.adapter_layer_names, *layer.other_param_names):
        adapters = getattr(layer, name, None)
        if (
            not isinstance(adapters, torch.nn.ModuleDict | torch.nn.ParameterDict)
            or adapter_name not in adapters
        ):
            continue
        item = adapters[adapter_name]
        if isinstance(item, torch.nn.Module):
            for owner in item.modules():
                for pname, p in list(owner.named_parameters(recurse=False)):
                    if p.dtype.is_floating_point and p.dtype != base_dtype:
                        cast = torch.nn.Parameter(p.data.to(base_dtype), requires_grad=p.requires_grad)
                        setattr(owner, pname, cast)
        elif isinstance(item, torch.Tensor) and item.dtype.is_floating_point and item.dtype != base_dtype:
            adapters[adapter_name] = torch.nn.Parameter(
                item.data.to(base_dtype), requires_grad=item.requires_grad
            )


def _apply_lora(model: torch.nn.Module, req: TraceRequest) -> torch.nn.Module:
    from unittest import mock

    from peft import get_peft_model
    from peft.tuners.tuners_utils import BaseTunerLayer

    config = lora_config(req.lora_rank, req.lora_targets, req.dora, dropout=req.lora_dropout)
    original_to = torch.nn.Module.to

    def to_same_device_is_noop(module: torch.nn.Module, *args: Any, **kwargs: Any) -> torch.nn.Module:
        # LoraModel._replace_module calls `module.to(weight.device)`: already there on fake tensors.
        target = args[0] if len(args) == 1 and not kwargs else None
        if isinstance(target, torch.device) and all(p.device == target for p in module.parameters()):
            return module
        return original_to(module, *args, **kwargs)

    with (
        mock.patch.object(BaseTunerLayer, "_move_adapter_to_device_of_base_layer", _move_adapter_by_reassign),
        mock.patch.object(torch.nn.Module, "to", to_same_device_is_noop),
    ):
        try:
            return get_peft_model(model, config)
        except ValueError as exc:  # PEFT: "Target modules {...} not found in the base model"
            from tools.errors import ScenarioError

            kinds = ("Linear", "Conv1D")  # torch Linear; transformers' GPT-2 Conv1D
            names = sorted(
                {n.rsplit(".", 1)[-1] for n, m in model.named_modules() if type(m).__name__ in kinds}
            )
            raise ScenarioError(
                "lora_targets", str(exc).splitlines()[0][:160], accepted="all-linear or " + ", ".join(names)
            ) from exc


def lora_config(lora_rank: int | None, lora_targets: Any, dora: bool, dropout: float = 0.0) -> Any:
    """The PEFT LoraConfig every traced (and GPU-measured) LoRA/DoRA job uses: alpha 2r, dropout as
    stated (0 by default, PEFT's and LLaMA-Factory's default)."""
    from peft import LoraConfig

    # PEFT resolves "all-linear" itself: every Linear/Conv1D except the output layer
    all_linear = any(t.strip().lower() in ("all-linear", "all_linear", "all") for t in lora_targets)
    targets: str | list[str] = "all-linear" if all_linear else list(lora_targets)
    rank = int(lora_rank or 8)
    return LoraConfig(
        r=rank,
        lora_alpha=2 * rank,
        target_modules=targets,
        lora_dropout=float(dropout),
        use_dora=dora,
        task_type="CAUSAL_LM",
    )


def training_setup(model: torch.nn.Module, gradient_checkpointing: bool) -> torch.optim.Optimizer:
    """train mode, optional checkpointing, and the optimizer of a traced training step."""
    model.train()
    if gradient_checkpointing:
        # non-reentrant torch.utils.checkpoint (PyTorch's recommendation). preserve_rng_state stashes
        # the CPU/CUDA generator states in host memory (not GPU tensors), so it is off here.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)  # renamed activation_checkpointing_enable in v5
            model.gradient_checkpointing_enable(
                gradient_checkpointing_kwargs={"use_reentrant": False, "preserve_rng_state": False}
            )
    trainable = [p for p in model.parameters() if p.requires_grad]
    # transformers Trainer's default optim with torch >= 2.8: adamw_torch_fused
    return torch.optim.AdamW(trainable, lr=1e-5, fused=True)


def _loss(model: torch.nn.Module, ids: torch.Tensor, req: TraceRequest) -> torch.Tensor:
    if req.loss == "chunked":
        return chunked_ce_loss(model, ids)
    if req.loss == "fused_linear":
        return fused_linear_ce_loss(model, ids)
    return model(input_ids=ids, labels=ids).loss


class NullTracker:
    """The tracker interface doing nothing: the same programs measured by another means (gpu_measure.py)."""

    def mark(self, phase: str) -> None:
        pass

    def note(self, category: str, tensors: Any) -> None:
        pass

    def set_autocast(self, active: bool) -> None:
        pass


def train_program(
    model: torch.nn.Module, ref_model: torch.nn.Module | None, req: TraceRequest, tracker: Any, device: str
) -> None:
    """The training program of `req` (SFT / LoRA with its savers, DPO / GRPO) on `device`."""
    if req.task in RL_TASKS:
        _train_rl(model, ref_model, req, tracker, device)
    else:
        _train(model, req, tracker, device)


def _train(model: torch.nn.Module, req: TraceRequest, tracker: Any, device: str = "cpu") -> None:
    optimizer = training_setup(model, req.gradient_checkpointing)
    trainable = [p for group in optimizer.param_groups for p in group["params"]]
    master: MasterWeightStep | None = None
    in_bwd: dict[Any, Any] = {}
    if req.recipe == "mixed":
        optimizer = None  # the DeepSpeed wrapper owns the step
        master = MasterWeightStep(trainable, req.master_style)
        tracker.note(PARAMETERS, [master.flat16])  # the 16-bit params are now views of this flat buffer
        tracker.note(MASTER_WEIGHTS, [master.master])
        if master.hp_grads is not None:
            tracker.note(GRADIENTS, [master.hp_grads])
    elif req.optimizer_in_backward:
        optimizer = None
        in_bwd = register_optimizer_in_backward(trainable)
    vocab = model.config.vocab_size
    ids = torch.randint(0, vocab, (req.batch_size, req.seq_len), device=device)
    autocast = req.recipe == "amp"
    for _ in range(req.steps):
        tracker.mark("forward")
        tracker.set_autocast(autocast)
        ctx = torch.autocast(ids.device.type, dtype=torch.bfloat16) if autocast else nullcontext()
        offload = offload_saved_tensors() if req.activation_offload else nullcontext()
        with ctx, offload:
            loss = _loss(model, ids, req)
        tracker.set_autocast(False)
        tracker.mark("backward")
        loss.backward()
        del loss
        tracker.note(GRADIENTS, [p.grad for p in trainable])
        tracker.mark("optimizer")
        if master is not None:
            master.backward_epilogue()
            master.step()
            tracker.note(OPTIMIZER_STATES, master.states())
            master.zero_grad()
        elif optimizer is not None:
            optimizer.step()
            tracker.note(OPTIMIZER_STATES, [t for s in optimizer.state.values() for t in s.values()])
            optimizer.zero_grad(set_to_none=True)
        else:
            states = [t for o in in_bwd.values() for s in o.state.values() for t in s.values()]
            tracker.note(OPTIMIZER_STATES, states)
    tracker.mark("end")


def _train_rl(
    model: torch.nn.Module,
    ref_model: torch.nn.Module | None,
    req: TraceRequest,
    tracker: Any,
    device: str = "cpu",
) -> None:
    """DPO / GRPO update steps (tools/trace/rl_steps.py): reference scoring + policy update."""
    from tools.trace.rl_steps import dpo_loss_step, grpo_loss_step, grpo_reference_logps

    optimizer = training_setup(model, req.gradient_checkpointing)
    trainable = [p for group in optimizer.param_groups for p in group["params"]]
    vocab = model.config.vocab_size
    autocast = req.recipe == "amp"
    rows = 2 * req.batch_size if req.task == "dpo" else req.batch_size
    ids = torch.randint(0, vocab, (rows, req.seq_len), device=device)
    keep = max(1, min(req.seq_len - 1, req.max_new_tokens))
    for _ in range(req.steps):
        tracker.set_autocast(autocast)
        if req.task == "dpo":
            tracker.mark("forward")
            loss = dpo_loss_step(model, ref_model, ids, autocast)
        else:
            tracker.mark("score_reference")
            ref_logps = grpo_reference_logps(model, ref_model, ids, keep, autocast)
            tracker.mark("forward")
            loss = grpo_loss_step(model, ids, keep, ref_logps, autocast)
        tracker.set_autocast(False)
        tracker.mark("backward")
        loss.backward()
        del loss
        tracker.note(GRADIENTS, [p.grad for p in trainable])
        tracker.mark("optimizer")
        optimizer.step()
        tracker.note(OPTIMIZER_STATES, [t for s in optimizer.state.values() for t in s.values()])
        optimizer.zero_grad(set_to_none=True)
    tracker.mark("end")


def _generate(model: torch.nn.Module, req: TraceRequest, tracker: MemoryTracker) -> None:
    model.eval()
    vocab = model.config.vocab_size
    prompt = max(1, req.seq_len - req.max_new_tokens)
    with torch.no_grad():
        ids = torch.randint(0, vocab, (req.batch_size, prompt))
        tracker.mark("prefill")
        out = model(input_ids=ids, use_cache=True, logits_to_keep=1)
        cache = out.past_key_values
        tracker.note(KV_CACHE, _cache_tensors(cache))
        # transformers generate: next_token_logits = logits[:, -1, :].to(float32); greedy argmax
        next_ids = out.logits[:, -1, :].float().argmax(-1, keepdim=True)
        del out
        for _ in range(req.max_new_tokens):
            tracker.mark("decode")
            out = model(input_ids=next_ids, cache=cache, use_cache=True)
            cache = out.past_key_values
            tracker.note(KV_CACHE, _cache_tensors(cache))
            next_ids = out.logits[:, -1, :].float().argmax(-1, keepdim=True)
            del out
    tracker.mark("end")


def gpu_sdpa_backend(req: TraceRequest) -> str:
    """The SDPA kernel a CUDA GPU would run for this request (torch sdp_utils.cpp checks):
    flash needs fp16/bf16 inputs; the memory-efficient kernel takes fp32 but not `enable_gqa`
    (which transformers passes for GQA models without a mask: integrations/sdpa_attention.py
    use_gqa_in_sdpa); anything else runs the math kernel, which materialises the scores."""
    if req.attention != "sdpa":
        return "eager"
    compute_fp32 = (
        _model_dtype(req) == "fp32" and req.recipe != "amp" and req.task != "lora" and not req.lora_rank
    )
    if not compute_fp32:
        return "flash"
    gqa = req.architecture.kv_heads < req.architecture.num_attention_heads
    return "math" if gqa else "efficient"


def _sdpa_backends(gpu_backend: str) -> list[Any]:
    """CPU kernels with the GPU kernel's memory: the CPU flash kernel saves the output and an fp32
    log-sum-exp like CUDA flash / memory-efficient attention; math is the same composite on both."""
    from torch.nn.attention import SDPBackend

    return [SDPBackend.MATH] if gpu_backend == "math" else [SDPBackend.FLASH_ATTENTION, SDPBackend.MATH]


def _no_padding_skip(original: Any) -> Any:
    """transformers masking_utils._ignore_causal_mask_sdpa reads the padding mask's values to decide
    whether SDPA may use `is_causal` instead of a materialised mask; fake tensors have no values, so
    it would always materialise one. Our inputs never contain padding (the mask is all ones, as the
    real-tensor run sees), so the check is answered with the padding mask treated as absent."""

    def decide(padding_mask: Any, *args: Any, **kwargs: Any) -> Any:
        from torch._subclasses.fake_tensor import is_fake

        if padding_mask is not None and is_fake(padding_mask):
            padding_mask = None
        return original(padding_mask, *args, **kwargs)

    return decide


def _no_packing(original: Any) -> Any:
    """masking_utils.find_packed_sequence_indices (used when no cache and no attention mask, e.g. with
    gradient checkpointing) reads position ids to detect packed sequences; on real tensors our plain
    arange positions give None (no packing). Same answer for fake tensors, after the same ops."""

    def find(position_ids: Any) -> Any:
        from torch._subclasses.fake_tensor import is_fake

        found = original(position_ids)
        return None if found is not None and is_fake(found) else found

    return find


def _gpu_dropout(original: Any) -> Any:
    """F.dropout as a CUDA GPU runs it. ATen's `dropout` (aten/src/ATen/native/Dropout.cpp) takes the
    fused `native_dropout` kernel only when `is_fused_kernel_acceptable` (CUDA/XPU inputs): it saves a
    1-byte bool mask. On CPU it falls back to `_dropout`: a noise tensor of the INPUT dtype (4 B per
    element for PEFT's fp32 LoRA path) multiplied in and saved. The trace calls native_dropout, which
    runs on CPU too, so the saved mask has the GPU's size."""

    def dropout(input: Any, p: float = 0.5, training: bool = True, inplace: bool = False) -> Any:
        if not training or p <= 0.0 or p >= 1.0 or inplace:
            return original(input, p, training, inplace)
        return torch.native_dropout(input, p, True)[0]

    return dropout


def trace(req: TraceRequest) -> TraceResult:
    """Run the request's program under the tracker and return the measured peak."""
    fam = family_for(req.architecture, req.family)
    dtype = _model_dtype(req)
    if dtype == "fp32" and not fam.fp32_ok:
        from tools.errors import ScenarioError

        raise ScenarioError(
            "precision_recipe",
            f"{fam.name} experts run through torch._grouped_mm, which needs bf16/fp16 weights",
            accepted="bf16",
        )
    if req.attention == "sdpa" and not fam.sdpa_ok:
        from tools.errors import ScenarioError

        raise ScenarioError(
            "attention", f"transformers has no SDPA attention for {fam.name}", accepted="eager"
        )
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()  # "use_cache=True is incompatible with gradient checkpointing" etc.
    fake_mode = FakeTensorMode() if req.fake else None
    model = build_model(req.architecture, dtype, req.attention, fake_mode, family=fam.name)
    tracker = MemoryTracker()
    from unittest import mock

    from torch.nn.attention import sdpa_kernel
    from transformers import masking_utils

    gpu_backend = gpu_sdpa_backend(req)
    skip = _no_padding_skip(masking_utils._ignore_causal_mask_sdpa)
    packing = _no_packing(masking_utils.find_packed_sequence_indices)
    with (
        fake_mode if fake_mode is not None else nullcontext(),
        mock.patch.object(masking_utils, "_ignore_causal_mask_sdpa", skip),
        mock.patch.object(masking_utils, "find_packed_sequence_indices", packing),
        mock.patch.object(torch.nn.functional, "dropout", _gpu_dropout(torch.nn.functional.dropout)),
        sdpa_kernel(_sdpa_backends(gpu_backend)),
        warnings.catch_warnings(),
    ):
        warnings.simplefilter("ignore", FutureWarning)  # transformers v5 renames (cache=, activation_*)
        ref_model = None
        if req.task == "lora" or (req.task in RL_TASKS and req.lora_rank):
            model = _apply_lora(model, req)  # RL + LoRA: the reference is the policy, adapters disabled
        elif req.task in RL_TASKS:  # a frozen copy of the policy (TRL create_reference_model)
            ref_model = build_model(req.architecture, dtype, req.attention, fake_mode, family=fam.name)
            ref_model.eval().requires_grad_(False)
        with tracker:
            tracker.note(PARAMETERS, [*model.parameters(), *model.buffers()])
            if ref_model is not None:
                tracker.note(PARAMETERS, [*ref_model.parameters(), *ref_model.buffers()])
            if req.task == "inference":
                _generate(model, req, tracker)
            elif req.task in RL_TASKS:
                _train_rl(model, ref_model, req, tracker)
            else:
                _train(model, req, tracker)
    report = tracker.report()
    del model
    kernels = [*report.attention_ops, f"GPU SDPA kernel modelled: {gpu_backend}"]
    return TraceResult(
        request=req,
        report=report,
        family=fam.name,
        kernels=kernels,
        gpu_differences=list(GPU_DIFFERENCES),
        versions=_versions(),
    )


def request_from_plan(plan: Any, fake: bool = True, steps: int = 2) -> TraceRequest:
    """The torch-side request for a `tools.trace.request.TracePlan`."""
    return TraceRequest(
        architecture=plan.architecture,
        task=plan.task,
        recipe=plan.recipe,
        weight_dtype=plan.weight_dtype,
        batch_size=plan.batch_size,
        seq_len=plan.seq_len,
        gradient_checkpointing=plan.gradient_checkpointing,
        attention=plan.attention,
        lora_rank=plan.lora_rank,
        lora_targets=list(plan.lora_targets),
        dora=plan.dora,
        max_new_tokens=plan.max_new_tokens,
        lora_dropout=plan.lora_dropout,
        loss=plan.loss,
        optimizer_in_backward=plan.optimizer_in_backward,
        activation_offload=plan.activation_offload,
        steps=steps,
        family=plan.family,
        fake=fake,
    )
