"""Weight storage and the training rules.

Defaults: weight_dtype bf16 (fp16 on cards without bf16: T4, V100); nf4 for QLoRA (QLoRA paper); for
inference the official checkpoint's dtype when the catalog says it is not 16-bit (DeepSeek-V3/R1 ship
FP8). quant_method: bnb for nf4/int8 and QLoRA int4 (bitsandbytes), GPTQ for int4 inference.
double_quant: on (the QLoRA paper's recipe; transformers' BitsAndBytesConfig default is off).
precision_recipe: `mixed` for full fine-tuning/pretraining/RL (16-bit weights + fp32 master and Adam: the
ZeRO paper's 16 B/param); `amp` for LoRA/QLoRA (PEFT keeps adapters in fp32 -- autocast_adapter_dtype --
and HF Trainer autocasts to 16-bit); `fp32` when weights are fp32. optimizer: adamw, fused (HF Trainer
default `adamw_torch_fused`); `adamw_torch` names the foreach implementation (+1 x P x 4 B at the step).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tools.errors import ScenarioError
from tools.resolution.checks import check_quant_method, check_weight_dtype
from tools.resolution.defaults import Filled
from tools.resolution.task import uses_adapters
from tools.rules.optimizers import OPTIMIZERS, OptimizerRule
from tools.rules.precision import RECIPES, Recipe
from tools.rules.quant import INFERENCE_ONLY_METHOD, QUANTISED_DTYPES, WeightFormat, weight_format
from tools.scenario import OPTIMIZERS as OPTIMIZER_NAMES

if TYPE_CHECKING:
    from tools.catalog.gpus import GpuSpec
    from tools.resolution.model import ModelRef
    from tools.scenario import Scenario


def default_weight_dtype(sc: Scenario, task: str, ref: ModelRef, gpu: GpuSpec, f: Filled) -> str:
    if sc.weight_dtype is not None:
        return sc.weight_dtype
    if task == "qlora":
        return f.fill("weight_dtype", "nf4", "weight_dtype.qlora")
    if task == "inference" and ref.checkpoint_dtype:
        return f.fill(
            "weight_dtype",
            ref.checkpoint_dtype,
            "weight_dtype.checkpoint",
            model=ref.name,
            dtype=ref.checkpoint_dtype.upper(),
        )
    if gpu.bf16:
        return f.fill("weight_dtype", "bf16", "weight_dtype.bf16")
    return f.fill("weight_dtype", "fp16", "weight_dtype.no_bf16", gpu=gpu.name)


def default_quant_method(sc: Scenario, task: str, weight_dtype: str, f: Filled) -> str | None:
    quant_method = sc.quant_method
    if weight_dtype in INFERENCE_ONLY_METHOD:  # GGUF / EXL2 name their own storage
        return INFERENCE_ONLY_METHOD[weight_dtype]
    if weight_dtype in QUANTISED_DTYPES and quant_method is None:
        if weight_dtype == "fp8":
            quant_method = "fp8"
        elif weight_dtype in ("nf4", "int8") or task == "qlora" or task != "inference":
            quant_method = f.fill("quant_method", "bnb", "quant_method.bnb", dtype=weight_dtype)
        else:
            quant_method = f.fill("quant_method", "gptq", "quant_method.gptq")
    return quant_method


def weight_storage(
    sc: Scenario, task: str, ref: ModelRef, gpu: GpuSpec, f: Filled
) -> tuple[str, WeightFormat]:
    """The weight dtype and its storage format (quantisation method, group, double quantisation)."""
    weight_dtype = default_weight_dtype(sc, task, ref, gpu, f)
    check_weight_dtype(task, weight_dtype)
    if "fp8" in (weight_dtype, sc.kv_dtype) and not gpu.fp8:
        f.note("no_fp8_tensor_cores", gpu=gpu.name)
    if weight_dtype == "bf16" and not gpu.bf16:
        f.note("no_native_bf16", gpu=gpu.name)
    quant_method = default_quant_method(sc, task, weight_dtype, f)
    check_quant_method(weight_dtype, quant_method)
    bnb4 = weight_dtype == "nf4" or (weight_dtype == "int4" and quant_method == "bnb")
    double_quant = sc.double_quant
    if bnb4 and double_quant is None:
        double_quant = f.fill("double_quant", True, "double_quant.qlora")
    wformat = weight_format(
        weight_dtype,
        quant_method,
        group_size=sc.quant_group_size,
        double_quant=bool(double_quant),
        bits=sc.weight_bits,
    )
    return weight_dtype, wformat


def default_recipe(sc: Scenario, task: str, weight_dtype: str, f: Filled) -> str:
    if sc.precision_recipe is not None:
        return sc.precision_recipe
    if weight_dtype == "fp32":
        return f.fill("precision_recipe", "fp32", "precision_recipe.fp32")
    if uses_adapters(task, sc):
        return f.fill("precision_recipe", "amp", "precision_recipe.amp")
    return f.fill("precision_recipe", "mixed", "precision_recipe.mixed")


def training_rules(
    sc: Scenario, task: str, weight_dtype: str, f: Filled
) -> tuple[Recipe | None, OptimizerRule | None]:
    """The precision recipe and the optimizer of a training job; (None, None) for inference."""
    if task == "inference":
        for name in ("optimizer", "precision_recipe"):
            if getattr(sc, name) is not None:
                f.note("no_effect_on_inference", field=name)
        return None, None
    rname = default_recipe(sc, task, weight_dtype, f)
    oname = sc.optimizer or f.fill("optimizer", "adamw", "optimizer.default")
    if oname not in OPTIMIZERS:
        raise ScenarioError(
            "optimizer",
            f"unknown optimizer '{oname}'",
            accepted=", ".join(OPTIMIZER_NAMES),
            code="unknown_optimizer",
            values={"name": oname, "names": ", ".join(OPTIMIZER_NAMES)},
        )
    optimizer = OPTIMIZERS[oname]
    if optimizer.paged:
        f.note("paged_optimizer")
    if (
        task in ("full_finetune", "pretrain", "freeze")
        and rname in ("amp", "fp32")
        and weight_dtype != "fp32"
    ) and sc.weight_dtype is not None:
        f.note("recipe_keeps_fp32_weights", recipe=rname, weight_dtype=weight_dtype)
    return RECIPES[rname], optimizer
