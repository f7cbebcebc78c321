"""Validate a Scenario and fill its defaults: Scenario -> ResolvedScenario.

Every default the estimator chooses is recorded as an `Assumption(field, value, reason)`, so the
answer can show it; every impossible combination raises `ScenarioError(field, message, accepted)`.
Warnings that do not stop the estimate (context beyond the model's trained length, settings that
do not apply to the task) go to `notes`.

Defaults and why:
- task: `lora` when a LoRA rank/targets is given, `freeze` with trainable_layers, else `inference`.
- gpu: a100-80gb (the most common datacenter training card); num_gpus: t*p*c.
- batch_size 1; seq_len 2048 for training (LLaMA-Factory cutoff_len default), 4096 for inference
  (capped at max_position_embeddings).
- weight_dtype: bf16 (fp16 on cards without bf16: T4, V100); nf4 for QLoRA (QLoRA paper).
- quant_method: bnb for nf4/int8 and QLoRA int4 (bitsandbytes), GPTQ for int4 inference.
- double_quant: on (the QLoRA paper's recipe; transformers' BitsAndBytesConfig default is off).
- precision_recipe: `mixed` for full fine-tuning/pretraining/RL (16-bit weights + fp32 master and
  Adam: the ZeRO paper's 16 B/param); `amp` for LoRA/QLoRA (PEFT keeps adapters in fp32 --
  `autocast_adapter_dtype=True` -- and HF Trainer autocasts to 16-bit); `fp32` when weights are fp32.
- optimizer: adamw, fused implementation (HF Trainer default `adamw_torch_fused` since transformers 4.5x
  with torch >= 2.8); `adamw_torch` names the foreach implementation (+1 x P x 4 B at the step).
- lora_rank 8, lora_targets q_proj,v_proj (PEFT LoraConfig defaults and
  TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING for Llama-family models).
- recompute: none (HF Trainer gradient_checkpointing=False), full for QLoRA (PEFT
  prepare_model_for_kbit_training enables gradient checkpointing by default).
- attention: flash (transformers >= 4.36 uses SDPA, whose flash/mem-efficient kernels do not
  materialise scores); fp32 activations fall back to the math kernel (eager-like).
- zero_stage 0; tp = pp = cp = ep = 1; pp micro-batches = max(p, gradient_accumulation_steps).
  Inference on N > 1 GPUs with no TP stated: one copy split by tensor parallelism (vLLM
  --tensor-parallel-size), t = the largest divisor of N / (p x c) that suits the heads; the rest replicas.
- weight_dtype for inference: the official checkpoint's dtype when the catalog says it is not 16-bit
  (DeepSeek-V3/R1 ship FP8).
- kv_dtype: the compute dtype; gpu_memory_utilization 0.9 (vLLM default) for the serving figure.
- safety_margin 0.10 of the card: Fujii et al. 2024 (arXiv 2411.06465) found no OOM for runs whose
  estimate stayed under 80% of the card; 10% covers allocator fragmentation beyond our slack term
  and framework buffers we do not model, without rejecting configurations that do run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from tools.architecture import Architecture, ParamBreakdown
from tools.errors import ScenarioError
from tools.lora import freeze_trainable, full_trainable, linear_names, lora_trainable
from tools.optimizers import OPTIMIZERS, OptimizerRule, TrainableSpec
from tools.parallel import Layout
from tools.precision import RECIPES, Recipe
from tools.quant import INFERENCE_ONLY_METHOD, QUANTISED_DTYPES, WeightFormat, weight_format
from tools.result import Assumption
from tools.scenario import OPTIMIZERS as OPTIMIZER_NAMES
from tools.scenario import Scenario

if TYPE_CHECKING:
    from tools.catalog.gpus import GpuSpec

TRAINING_TASKS = ("full_finetune", "pretrain", "freeze", "lora", "qlora", "ppo", "grpo", "dpo")
RL_TASKS = ("ppo", "grpo", "dpo")
ADAPTER_TASKS = ("lora", "qlora")
DEFAULT_GPU = "a100-80gb"
DEFAULT_SAFETY_MARGIN = 0.10
DEFAULT_GPU_MEMORY_UTILIZATION = 0.9  # vllm/config/cache.py CacheConfig.gpu_memory_utilization
MAX_TOKENS_PER_MICROBATCH = 1 << 31  # beyond this no real job fits anywhere: treat as a typo
PEFT_DEFAULT_TARGETS: dict[str, list[str]] = {  # peft/utils/constants.py (by HF module naming)
    "llama": ["q_proj", "v_proj"],
    "mixtral": ["q_proj", "v_proj"],
    "deepseek": ["q_proj", "v_proj"],
    "gpt2": ["c_attn"],
    "falcon": ["query_key_value"],
    "phi3": ["qkv_proj"],
    "chatglm": ["query_key_value"],
    "glm": ["q_proj", "v_proj"],
    "internlm2": ["wqkv"],
    "baichuan": ["W_pack"],
}


@dataclass(frozen=True)
class ModelRef:
    """One model of the job: its name, architecture and exact parameter breakdown."""

    id: str
    name: str
    arch: Architecture
    params: ParamBreakdown
    checkpoint_dtype: str | None = None  # catalog: the official checkpoint's dtype when not 16-bit


@dataclass
class ResolvedScenario:
    """A validated scenario with every default filled, and the rule objects it selects."""

    scenario: Scenario  # the scenario after defaults (what Estimate.scenario shows)
    model: ModelRef
    gpu: GpuSpec
    gpu_alias_note: str | None
    task: str
    batch: int
    seq: int
    weight_dtype: str
    weight_format: WeightFormat
    recipe: Recipe | None  # None for inference
    optimizer: OptimizerRule | None  # None for inference
    trainable: TrainableSpec | None  # the trained model's trainable tensors (None for inference)
    recompute: str
    flash: bool
    layout: Layout
    kv_dtype_bytes: int
    max_new_tokens: int | None
    gpu_memory_utilization: float
    safety_margin: float
    assumptions: list[Assumption] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    attention_kernel: str = "flash"  # flash (incl. memory-efficient) | math | eager: what the GPU runs

    @property
    def training(self) -> bool:
        return self.task != "inference"

    @property
    def adapters(self) -> bool:
        return self.task in ADAPTER_TASKS or (self.task in RL_TASKS and self.scenario.lora_rank is not None)


@lru_cache(maxsize=256)
def _catalog_model(name: str) -> tuple[ModelRef, str | None]:
    from tools.catalog.models import resolve_model

    resolved = resolve_model(name)
    spec = resolved.spec
    mid = spec.id if spec else name
    display = spec.name if spec else name
    native = spec.checkpoint_dtype if spec and not resolved.assumed else None
    arch = _family_details(spec.family if spec else None, resolved.architecture)
    ref = ModelRef(mid, display, arch, _breakdown(arch), native)
    return ref, resolved.assumed


# transformers config defaults of the memory-relevant details the catalog does not store:
# Gemma/Gemma-2/Gemma-3 GemmaRMSNorm (fp32 `x * (1 + w)`); Gemma2Config attn_logit_softcapping=50.0,
# final_logit_softcapping=30.0 (Gemma-3 drops soft-capping for qk-norm).
_FAMILY_DETAILS: dict[str, dict[str, Any]] = {
    "gemma": {"norm_fp32_scale": True},
    "gemma2": {"norm_fp32_scale": True, "attn_logit_softcapping": 50.0, "final_logit_softcapping": 30.0},
    "gemma3": {"norm_fp32_scale": True},
}


def _family_details(family: str | None, arch: Architecture) -> Architecture:
    """The catalog architecture with its family's implementation details (fields left unset)."""
    details = _FAMILY_DETAILS.get(family or "", {})
    update = {k: v for k, v in details.items() if getattr(arch, k) in (None, False)}
    return arch.model_copy(update=update) if update else arch


def _breakdown(arch: Architecture) -> ParamBreakdown:
    from tools.params import count_params

    return count_params(arch)


def resolve_model_ref(
    model: str | None, params: int | None, architecture: Architecture | None
) -> tuple[ModelRef, list[Assumption], list[str]]:
    """The model a scenario names (catalog id, bare size, explicit architecture or a parameter count)."""
    assumptions: list[Assumption] = []
    notes: list[str] = []
    if architecture is not None:
        ref = ModelRef(
            model or "custom", model or "custom architecture", architecture, _breakdown(architecture)
        )
    elif model:
        ref, assumed = _catalog_model(model.strip())
        if assumed:
            assumptions.append(Assumption(field="model", value=ref.id, reason=assumed))
    elif params:
        ref, assumed = _catalog_model(f"{params / 1e9:g}B")
        assumptions.append(
            Assumption(
                field="model",
                value=ref.id,
                reason=assumed or f"{params:,} parameters taken as {ref.name}'s architecture",
            )
        )
    else:
        raise ScenarioError(
            "model",
            "no model given",
            accepted="a catalog model (llama-2-7b, Qwen2.5-7B), a size (7B, 70亿), params, or an HF config",
        )
    if params and ref.params.total and abs(params - ref.params.total) / ref.params.total > 0.02:
        notes.append(
            f"params={params:,} differs from {ref.name}'s architecture ({ref.params.total:,}); "
            "the architecture's exact count is used"
        )
    return ref, assumptions, notes


class _Defaults:
    """Collects filled fields and their assumptions."""

    def __init__(self) -> None:
        self.changes: dict[str, Any] = {}
        self.assumptions: list[Assumption] = []

    def fill(self, name: str, value: Any, reason: str) -> Any:
        self.changes[name] = value
        self.assumptions.append(Assumption(field=name, value=value, reason=reason))
        return value


def resolve(scenario: Scenario) -> ResolvedScenario:
    """Validate `scenario`, fill every default (recorded as assumptions) and select the rules."""
    from tools.catalog.gpus import find_gpu

    sc = scenario
    d = _Defaults()
    ref, model_assumptions, notes = resolve_model_ref(sc.model, sc.params, sc.architecture)
    d.assumptions.extend(model_assumptions)
    arch, pb = ref.arch, ref.params
    d.changes["params"] = pb.total
    if sc.model is None and sc.architecture is None:
        d.changes["model"] = ref.id

    # --- task --------------------------------------------------------------------------------
    task = sc.task
    if task is None:
        if sc.lora_rank is not None or sc.lora_targets:
            task = d.fill("task", "lora", "a LoRA rank/targets was given")
        elif sc.trainable_layers is not None:
            task = d.fill("task", "freeze", "trainable_layers was given")
        else:
            task = d.fill("task", "inference", "no training setting was given")
    training = task != "inference"

    # --- GPU -----------------------------------------------------------------------------------
    gpu_name = sc.gpu or d.fill("gpu", DEFAULT_GPU, "no GPU given: the most common datacenter card")
    gpu, alias_note = find_gpu(gpu_name)
    if alias_note:
        d.assumptions.append(Assumption(field="gpu", value=gpu.id, reason=alias_note))

    # --- parallelism -----------------------------------------------------------------------------
    tp, pp, cp, ep = sc.tp or 1, sc.pp or 1, sc.cp or 1, sc.ep or 1
    if not training and sc.tp is None and sc.ep is None and (sc.num_gpus or 1) > 1:
        tp = _default_serving_tp(arch, sc.num_gpus or 1, pp * cp, d)
    _validate_parallel(arch, pb, tp=tp, pp=pp, cp=cp, ep=ep, notes=notes)
    model_parallel = tp * pp * cp
    num_gpus = sc.num_gpus or d.fill("num_gpus", model_parallel, "t x p x c: no data parallelism stated")
    if num_gpus % model_parallel:
        raise ScenarioError(
            "num_gpus",
            f"{num_gpus} GPUs cannot be split into tp x pp x cp = {tp} x {pp} x {cp} = {model_parallel}",
            accepted=f"a multiple of {model_parallel}",
            code="num_gpus_split",
            values={"num_gpus": num_gpus, "tp": tp, "pp": pp, "cp": cp, "model_parallel": model_parallel},
        )
    dp = num_gpus // model_parallel
    if ep > 1 and dp * tp % ep:
        notes.append(f"ep={ep} does not divide the data-parallel x tensor-parallel ranks ({dp * tp})")

    zero = sc.zero_stage
    if not training:
        if zero:
            raise ScenarioError(
                "zero_stage",
                "ZeRO shards training states (gradients, optimizer); it does not apply to inference",
                accepted="0 or unset for inference; use tp/pp to split a model for serving",
                code="zero_inference",
            )
        if sc.offload_optimizer not in (None, "none"):
            raise ScenarioError("offload_optimizer", "there is no optimizer in inference", accepted="none")
    zero = zero or 0
    offload_opt = sc.offload_optimizer not in (None, "none")
    offload_params = sc.offload_params not in (None, "none")
    if offload_params and zero != 3 and training:
        raise ScenarioError(
            "offload_params",
            "parameter offload needs ZeRO stage 3 (DeepSpeed offload_param / FSDP CPUOffload)",
            accepted="zero_stage=3 with offload_params=cpu|nvme, or offload_params=none",
        )
    if offload_params and not training:
        notes.append(
            "offload_params for inference (accelerate device_map / cpu_offload): weights stay in CPU RAM and each "
            "layer is copied to the GPU when it runs; expect a large slowdown (every token streams all weights over PCIe)"
        )
    if offload_opt and zero == 0:
        zero = d.fill(
            "zero_stage", 2, "optimizer offload (ZeRO-Offload) runs on ZeRO stage 1-3; stage 2 assumed"
        )

    # --- sizes -----------------------------------------------------------------------------------
    batch = sc.batch_size or d.fill("batch_size", 1, "micro-batch of one sequence per GPU")
    if sc.seq_len:
        seq = sc.seq_len
    elif training:
        seq = d.fill("seq_len", 2048, "a common fine-tuning cutoff length (LLaMA-Factory cutoff_len default)")
    else:
        seq = d.fill(
            "seq_len",
            min(4096, arch.max_position_embeddings),
            "4096-token context (capped at the model's max_position_embeddings)",
        )
    if batch * seq > MAX_TOKENS_PER_MICROBATCH:
        raise ScenarioError(
            "batch_size",
            f"batch_size x seq_len = {batch * seq:,} tokens in one micro-batch is beyond any GPU",
            accepted=f"batch_size x seq_len up to {MAX_TOKENS_PER_MICROBATCH:,}",
            code="tokens_too_many",
            values={"tokens": f"{batch * seq:,}", "limit": f"{MAX_TOKENS_PER_MICROBATCH:,}"},
        )
    if seq > arch.max_position_embeddings:
        notes.append(
            f"seq_len {seq:,} exceeds the model's max_position_embeddings ({arch.max_position_embeddings:,}): "
            "quality may degrade without RoPE scaling; memory is estimated as asked"
        )
    if sc.max_new_tokens is not None and sc.max_new_tokens > seq:
        raise ScenarioError(
            "max_new_tokens",
            f"max_new_tokens {sc.max_new_tokens:,} is larger than the context seq_len {seq:,}",
            accepted="0..seq_len (seq_len = prompt + generated tokens)",
        )

    # --- numerics ----------------------------------------------------------------------------------
    weight_dtype = sc.weight_dtype
    if weight_dtype is None:
        if task == "qlora":
            weight_dtype = d.fill("weight_dtype", "nf4", "QLoRA stores the frozen base in 4-bit NF4")
        elif not training and ref.checkpoint_dtype:
            weight_dtype = d.fill(
                "weight_dtype",
                ref.checkpoint_dtype,
                f"{ref.name}'s official checkpoint is {ref.checkpoint_dtype.upper()}: vLLM/SGLang serve it as "
                "shipped (say bf16 for an upcast copy)",
            )
        elif gpu.bf16:
            weight_dtype = d.fill("weight_dtype", "bf16", "16-bit weights, bf16 on this card")
        else:
            weight_dtype = d.fill("weight_dtype", "fp16", f"{gpu.name} has no bf16: fp16")
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
    if "fp8" in (weight_dtype, sc.kv_dtype) and not gpu.fp8:
        notes.append(
            f"{gpu.name} has no FP8 tensor cores: FP8 is stored as counted but dequantised on the fly "
            "(weight-only, e.g. vLLM Marlin), with no FP8 compute speed-up"
        )
    if weight_dtype == "bf16" and not gpu.bf16:
        notes.append(f"{gpu.name} has no native bf16 support; fp16 is the usual choice (same bytes)")
    quant_method = sc.quant_method
    if weight_dtype in INFERENCE_ONLY_METHOD:  # GGUF / EXL2 name their own storage
        quant_method = INFERENCE_ONLY_METHOD[weight_dtype]
    elif weight_dtype in QUANTISED_DTYPES and quant_method is None:
        if weight_dtype == "fp8":
            quant_method = "fp8"
        elif weight_dtype in ("nf4", "int8") or task == "qlora" or training:
            quant_method = d.fill("quant_method", "bnb", f"{weight_dtype} weights via bitsandbytes")
        else:
            quant_method = d.fill("quant_method", "gptq", "int4 checkpoints for serving are usually GPTQ")
    if weight_dtype == "nf4" and quant_method not in (None, "bnb"):
        raise ScenarioError("quant_method", "NF4 is a bitsandbytes format", accepted="bnb for nf4")
    if quant_method == "awq" and weight_dtype != "int4":
        raise ScenarioError("quant_method", "AWQ stores 4-bit weights", accepted="weight_dtype=int4 with awq")
    bnb4 = weight_dtype == "nf4" or (weight_dtype == "int4" and quant_method == "bnb")
    double_quant = sc.double_quant
    if bnb4 and double_quant is None:
        double_quant = d.fill(
            "double_quant", True, "the QLoRA paper's recipe (bnb_4bit_use_double_quant=True)"
        )
    wformat = weight_format(
        weight_dtype,
        quant_method,
        group_size=sc.quant_group_size,
        double_quant=bool(double_quant),
        bits=sc.weight_bits,
    )

    recipe: Recipe | None = None
    optimizer: OptimizerRule | None = None
    if training:
        rname = sc.precision_recipe
        if rname is None:
            if weight_dtype == "fp32":
                rname = d.fill("precision_recipe", "fp32", "fp32 weights: fp32 training")
            elif task in ADAPTER_TASKS or (task in RL_TASKS and sc.lora_rank is not None):
                rname = d.fill(
                    "precision_recipe",
                    "amp",
                    "PEFT keeps adapters in fp32 (autocast_adapter_dtype) under 16-bit autocast (HF Trainer)",
                )
            else:
                rname = d.fill(
                    "precision_recipe",
                    "mixed",
                    "16-bit weights + fp32 master and Adam states (ZeRO paper, 16 B/param)",
                )
        recipe = RECIPES[rname]
        oname = sc.optimizer or d.fill(
            "optimizer",
            "adamw",
            "HF Trainer default adamw_torch_fused (transformers >= 4.5x, torch >= 2.8): fused AdamW, no "
            "step transient; optim=adamw_torch (foreach) would add 1 x params x 4 B at the step",
        )
        if oname not in OPTIMIZERS:
            raise ScenarioError(
                "optimizer", f"unknown optimizer '{oname}'", accepted=", ".join(OPTIMIZER_NAMES)
            )
        optimizer = OPTIMIZERS[oname]
        if optimizer.paged:
            notes.append(
                "paged optimizer: states live in CUDA unified memory and are paged to CPU RAM under "
                "memory pressure instead of failing; they are counted as resident on the GPU here"
            )
        if (
            task in ("full_finetune", "pretrain", "freeze")
            and rname in ("amp", "fp32")
            and weight_dtype != "fp32"
        ) and sc.weight_dtype is not None:
            notes.append(
                f"precision_recipe={rname} keeps fp32 weights: weight_dtype={weight_dtype} names the "
                "autocast dtype, weights are counted at 4 B"
            )
    else:
        for name in ("optimizer", "precision_recipe"):
            if getattr(sc, name) is not None:
                notes.append(f"{name} has no effect on inference (no optimizer step, weights as stored)")

    # --- fine-tuning -------------------------------------------------------------------------------
    trainable = _trainable(sc, task, pb, arch, d)

    # --- activations ---------------------------------------------------------------------------------
    if sc.recompute is not None:
        recompute = sc.recompute
        if sc.gradient_checkpointing is not None and sc.gradient_checkpointing != (recompute == "full"):
            notes.append(
                f"gradient_checkpointing={sc.gradient_checkpointing} and recompute={recompute} disagree; "
                f"recompute={recompute} is used"
            )
    elif sc.gradient_checkpointing is not None:
        recompute = "full" if sc.gradient_checkpointing else "none"
    elif task == "qlora":
        recompute = d.fill(
            "recompute",
            "full",
            "PEFT prepare_model_for_kbit_training enables gradient checkpointing by default",
        )
    elif training:
        recompute = d.fill("recompute", "none", "HF Trainer default gradient_checkpointing=False")
    else:
        recompute = "none"
    attention = sc.attention or d.fill(
        "attention", "flash", "transformers uses SDPA (flash / memory-efficient kernels) by default"
    )
    act_bytes = recipe.activation_bytes if recipe else (4 if weight_dtype == "fp32" else 2)
    # The SDPA kernel a CUDA GPU picks (torch sdp_utils.cpp): flash for 16-bit inputs; for fp32 the
    # memory-efficient kernel (same memory as flash: output + fp32 log-sum-exp), except with GQA, where
    # transformers passes enable_gqa (integrations/sdpa_attention.py) and only the math kernel accepts it.
    kernel = "eager" if attention == "eager" else "flash"
    if kernel == "flash" and act_bytes == 4:
        if arch.kv_heads < arch.num_attention_heads and not arch.kv_lora_rank:
            kernel = "math"
            notes.append(
                "fp32 activations with GQA: SDPA has no flash kernel for fp32 and the memory-efficient one "
                "does not take enable_gqa, so it runs the math path (materialised scores)"
            )
        else:
            notes.append(
                "fp32 activations: SDPA runs the memory-efficient kernel (no flash kernel for fp32; "
                "same memory as flash: no score matrices)"
            )
    flash = kernel == "flash"

    # --- inference / serving -------------------------------------------------------------------------
    kv_default = (
        "fp32" if weight_dtype == "fp32" else ("fp16" if weight_dtype == "fp16" or not gpu.bf16 else "bf16")
    )
    kv_dtype = sc.kv_dtype
    if kv_dtype is None and not training:
        kv_dtype = d.fill("kv_dtype", kv_default, "the compute dtype")
    kv_bytes = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "int8": 1}[kv_dtype or kv_default]
    gmu = sc.gpu_memory_utilization
    if gmu is None:
        gmu = DEFAULT_GPU_MEMORY_UTILIZATION
        if not training:
            d.fill("gpu_memory_utilization", gmu, "vLLM default, used for the serving-capacity figure")
    margin = sc.safety_margin
    if margin is None:
        margin = d.fill(
            "safety_margin",
            DEFAULT_SAFETY_MARGIN,
            "keep 10% of the card free (Fujii et al. 2024: runs estimated under 80% never OOMed)",
        )

    microbatches = 1
    if pp > 1:
        microbatches = sc.pp_microbatches or max(pp, sc.gradient_accumulation_steps or 0)
        if sc.pp_microbatches is None:
            d.fill("pp_microbatches", microbatches, "at least p micro-batches so the 1F1B pipeline fills")
    if sc.sequence_parallel and tp == 1:
        notes.append("sequence_parallel only splits activations across TP ranks; with tp=1 it has no effect")
    layout = Layout(
        num_gpus=num_gpus,
        tp=tp,
        pp=pp,
        cp=cp,
        ep=ep,
        zero_stage=zero,
        sequence_parallel=bool(sc.sequence_parallel) and tp > 1,
        offload_optimizer=offload_opt,
        offload_params=offload_params,
        microbatches=microbatches,
    )
    filled = sc.model_copy(update=d.changes)
    return ResolvedScenario(
        scenario=filled,
        model=ref,
        gpu=gpu,
        gpu_alias_note=alias_note,
        task=task,
        batch=batch,
        seq=seq,
        weight_dtype=weight_dtype,
        weight_format=wformat,
        recipe=recipe,
        optimizer=optimizer,
        trainable=trainable,
        recompute=recompute if training else "none",
        flash=flash,
        attention_kernel=kernel,
        layout=layout,
        kv_dtype_bytes=kv_bytes,
        max_new_tokens=sc.max_new_tokens,
        gpu_memory_utilization=gmu,
        safety_margin=margin,
        assumptions=d.assumptions,
        notes=notes,
    )


def _tp_allowed(arch: Architecture, t: int) -> bool:
    """TP t splits the attention heads evenly and divides (or replicates) the KV heads (Megatron/vLLM)."""
    if arch.num_attention_heads % t:
        return False
    kv = arch.kv_heads
    return bool(arch.kv_lora_rank) or kv % t == 0 or t % kv == 0


def _default_serving_tp(arch: Architecture, num_gpus: int, other_parallel: int, d: _Defaults) -> int:
    """Serving on several GPUs with no TP stated: people mean one copy of the model split over the
    GPUs (vLLM `--tensor-parallel-size N`), not N full copies. The largest t dividing the GPUs left
    after PP/CP that also suits the heads; GPUs beyond t x p x c serve as data-parallel replicas."""
    per_replica = num_gpus // other_parallel if num_gpus % other_parallel == 0 else 1
    t = max(k for k in range(1, per_replica + 1) if per_replica % k == 0 and _tp_allowed(arch, k))
    if t == 1:
        reason = (
            f"no TP size splits the {arch.num_attention_heads} attention heads over {per_replica} GPUs: "
            f"each of the {num_gpus} GPUs serves a full copy (data-parallel replicas)"
        )
    elif t == per_replica:
        reason = f"serving on {num_gpus} GPUs: one copy split by tensor parallelism (vLLM --tensor-parallel-size {t})"
    else:
        reason = (
            f"{per_replica} does not divide the {arch.num_attention_heads} attention heads: TP={t} is the "
            f"largest that does (vLLM --tensor-parallel-size {t}); the other GPUs hold replicas"
        )
    d.fill("tp", t, reason)
    return t


def _validate_parallel(
    arch: Architecture, pb: ParamBreakdown, *, tp: int, pp: int, cp: int, ep: int, notes: list[str]
) -> None:
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
    if not arch.kv_lora_rank:
        if kv % tp and tp % kv:
            raise ScenarioError(
                "tp",
                f"tp={tp} neither divides nor is a multiple of the {kv} KV heads",
                accepted=f"a divisor or multiple of {kv}",
                code="tp_kv_heads",
                values={"tp": tp, "kv_heads": kv},
            )
        if tp > kv:
            notes.append(
                f"tp={tp} > {kv} KV heads: each KV head is replicated on {tp // kv} ranks (Megatron/vLLM)"
            )
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
                "ep", "expert parallelism needs an MoE model", accepted="ep=1 for dense models"
            )
        if int(arch.num_experts or 0) % ep:
            raise ScenarioError(
                "ep",
                f"ep={ep} does not divide the {arch.num_experts} experts",
                accepted=f"a divisor of {arch.num_experts}",
            )
    if pb.num_layers != arch.num_hidden_layers:  # pragma: no cover - count_params invariant
        raise ScenarioError("architecture", "inconsistent layer count")
    _ = cp


def _trainable(
    sc: Scenario, task: str, pb: ParamBreakdown, arch: Architecture, d: _Defaults
) -> TrainableSpec | None:
    lora_asked = sc.lora_rank is not None or bool(sc.lora_targets) or sc.dora
    adapter_task = task in ADAPTER_TASKS or (task in RL_TASKS and sc.lora_rank is not None)
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
        raise ScenarioError("trainable_layers", f"does not apply to task={task}", accepted="task=freeze")
    if task == "inference":
        return None
    if adapter_task:
        rank = sc.lora_rank or d.fill("lora_rank", 8, "PEFT LoraConfig default r=8")
        targets = sc.lora_targets
        if not targets:
            names = linear_names(pb)
            default = [
                n for n in PEFT_DEFAULT_TARGETS.get(arch.module_names, ["q_proj", "v_proj"]) if n in names
            ]
            targets = d.fill(
                "lora_targets",
                default or ["all-linear"],
                "PEFT default target modules for this model family",
            )
        return lora_trainable(pb, rank, targets, dora=sc.dora)
    if task == "freeze":
        n = sc.trainable_layers
        if n is None:
            n = d.fill("trainable_layers", 2, "LLaMA-Factory freeze_trainable_layers default (last 2 layers)")
        if n > pb.num_layers:
            raise ScenarioError(
                "trainable_layers",
                f"{n} is more than the {pb.num_layers} layers",
                accepted=f"0..{pb.num_layers}",
            )
        return freeze_trainable(pb, n)
    return full_trainable(pb, arch.hidden_size)
