"""Validate a Scenario and fill its defaults: Scenario -> ResolvedScenario.

Every default the estimator chooses is recorded as an `Assumption(field, value, code, values)`
(tools/assumptions.py: the words are each channel's; kept as records and made into Assumption objects
when read), so the answer can show it; every impossible combination raises `ScenarioError(field, message, accepted)`.
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
from typing import TYPE_CHECKING

from tools.assumptions import Said, made
from tools.notes import Note
from tools.resolution.defaults import (
    DEFAULT_GPU,
    DEFAULT_GPU_MEMORY_UTILIZATION,
    DEFAULT_SAFETY_MARGIN,
    MAX_TOKENS_PER_MICROBATCH,
    Filled,
)
from tools.resolution.kernels import attention_kernel, recompute_strategy
from tools.resolution.layout import look_up_gpu, parallel_layout, pipeline_layout, tp_allowed
from tools.resolution.model import ModelRef, look_up_model, resolve_model_ref
from tools.resolution.numerics import training_rules, weight_storage
from tools.resolution.serving import kv_dtype_bytes, memory_reservation
from tools.resolution.sizes import sizes
from tools.resolution.task import PEFT_DEFAULT_TARGETS, choose_task, trainable_set
from tools.result import Assumption
from tools.round_trip import as_asked, with_filled
from tools.rules.optimizers import OptimizerRule, TrainableSpec
from tools.rules.overhead import runtime_of
from tools.rules.parallel import Layout
from tools.rules.precision import Recipe
from tools.rules.quant import WeightFormat
from tools.scenario import ADAPTER_TASKS, RL_TASKS, TRAINING_TASKS, Scenario
from tools.unified_memory import mac_notes

if TYPE_CHECKING:
    from tools.catalog.gpus import GpuAlias, GpuSpec

__all__ = [
    "ADAPTER_TASKS",
    "DEFAULT_GPU",
    "DEFAULT_GPU_MEMORY_UTILIZATION",
    "DEFAULT_SAFETY_MARGIN",
    "MAX_TOKENS_PER_MICROBATCH",
    "PEFT_DEFAULT_TARGETS",
    "RL_TASKS",
    "TRAINING_TASKS",
    "ModelRef",
    "ResolvedScenario",
    "resolve",
    "resolve_model_ref",
    "tp_allowed",
]


@dataclass
class ResolvedScenario:
    """A validated scenario with every default filled, and the rule objects it selects."""

    scenario: Scenario  # the scenario after defaults (what Estimate.scenario shows)
    model: ModelRef
    gpu: GpuSpec
    gpu_alias_note: GpuAlias | None  # how the GPU name was read (also an assumption)
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
    said: list[Said] = field(default_factory=list)  # the assumptions, as records (tools/assumptions.py)
    notes: list[Note] = field(default_factory=list)
    attention_kernel: str = "flash"  # flash (incl. memory-efficient) | math | eager: what the GPU runs

    @property
    def assumptions(self) -> list[Assumption]:
        """Every default filled, as Assumption objects (made on each read: an estimate reads them once;
        the planner's candidates never do)."""
        return made(self.said)

    def assumed(self, name: str) -> bool:
        """Was `name` filled by a default (or read from another name) rather than stated?"""
        return any(rec[0] == name for rec in self.said)

    def say(self, name: str, value: object, code: str, /, *, replace: bool = False, **values: object) -> None:
        """Record one more assumption (`replace`: instead of any earlier one about `name`)."""
        if replace:
            self.said[:] = [rec for rec in self.said if rec[0] != name]
        self.said.append((name, value, code, values))

    @property
    def training(self) -> bool:
        return self.task != "inference"

    @property
    def adapters(self) -> bool:
        return self.task in ADAPTER_TASKS or (self.task in RL_TASKS and self.scenario.lora_rank is not None)


def resolve(scenario: Scenario) -> ResolvedScenario:
    """Validate `scenario`, fill every default (recorded as assumptions) and select the rules: the
    stages of tools/resolution/ in order (each stage's checks raise before a later stage runs)."""
    sc, f = as_asked(scenario), Filled()
    ref = look_up_model(sc, f)
    task = choose_task(sc, f)
    training = task != "inference"
    gpu, alias_note = look_up_gpu(sc, f)
    parallel = parallel_layout(sc, ref, training, f)
    batch, seq = sizes(sc, ref.arch, training, f)
    weight_dtype, wformat = weight_storage(sc, task, ref, gpu, f)
    recipe, optimizer = training_rules(sc, task, weight_dtype, f)
    trainable = trainable_set(sc, task, ref.params, ref.arch, f)
    recompute = recompute_strategy(sc, task, f)
    kernel = attention_kernel(sc, ref.arch, recipe, weight_dtype, f)
    kv_bytes = kv_dtype_bytes(sc, training, weight_dtype, gpu, f)
    gmu, margin = memory_reservation(sc, training, f)
    layout = pipeline_layout(sc, parallel, f, runtime_of(gpu.vendor))
    mac_notes(gpu.vendor, layout, f)
    return ResolvedScenario(
        scenario=with_filled(sc, f.changes),
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
        flash=kernel == "flash",
        attention_kernel=kernel,
        layout=layout,
        kv_dtype_bytes=kv_bytes,
        max_new_tokens=sc.max_new_tokens,
        gpu_memory_utilization=gmu,
        safety_margin=margin,
        said=f.said,
        notes=f.notes,
    )
