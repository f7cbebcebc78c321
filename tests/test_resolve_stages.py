"""Each stage of `tools.resolve.resolve` alone (tools/resolution/): what it fills, the reason it records,
and the error it raises. The stages run in this order inside `resolve`; here each gets what earlier
stages would have chosen."""

from __future__ import annotations

import pytest

from service.agent.assumption_text import assumption_text
from tools.errors import ScenarioError
from tools.notes import note
from tools.planner import _tp_for
from tools.resolution.defaults import Filled
from tools.resolution.kernels import attention_kernel, recompute_strategy
from tools.resolution.layout import look_up_gpu, parallel_layout, pipeline_layout, tp_allowed
from tools.resolution.model import look_up_model, resolve_model_ref
from tools.resolution.numerics import training_rules, weight_storage
from tools.resolution.serving import kv_dtype_bytes, memory_reservation
from tools.resolution.sizes import sizes
from tools.resolution.task import choose_task, trainable_set
from tools.rules.parallel import tp_fits_heads
from tools.scenario import Scenario

P_7B = 6_738_415_616  # llama-2-7b: HF config, 32 layers x 202,383,360 + 2 x 32000 x 4096 + 4096


def ref_of(name: str):
    return resolve_model_ref(name, None, None)[0]


def filled_fields(f: Filled) -> dict:
    return {a.field: a.value for a in f.assumptions}


def test_model_look_up_sets_the_exact_parameter_count() -> None:
    f = Filled()
    ref = look_up_model(Scenario(model="llama-2-7b"), f)
    assert ref.params.total == P_7B and f.changes == {"params": P_7B}
    f = Filled()
    ref = look_up_model(Scenario(params=7_000_000_000), f)
    assert f.changes["model"] == ref.id and filled_fields(f)["model"] == ref.id
    with pytest.raises(ScenarioError) as err:
        look_up_model(Scenario(), Filled())
    assert err.value.field == "model"


def test_task_from_what_was_stated() -> None:
    for sc, task in (
        (Scenario(model="m", lora_rank=16), "lora"),
        (Scenario(model="m", trainable_layers=2), "freeze"),
        (Scenario(model="m"), "inference"),
    ):
        f = Filled()
        assert choose_task(sc, f) == task and filled_fields(f) == {"task": task}
    f = Filled()
    assert choose_task(Scenario(model="m", task="dpo"), f) == "dpo" and not f.assumptions


def test_gpu_default_and_alias() -> None:
    f = Filled()
    gpu, note = look_up_gpu(Scenario(model="m"), f)
    assert gpu.id == "a100-80gb" and note is None and filled_fields(f) == {"gpu": "a100-80gb"}
    f = Filled()
    gpu, note = look_up_gpu(Scenario(model="m", gpu="A100"), f)
    assert gpu.id == "a100-80gb" and note is not None and note.values["variant"] == "80 GB"
    assert filled_fields(f) == {"gpu": "a100-80gb"}


def test_parallel_layout_serving_tp_and_checks() -> None:
    f = Filled()
    par = parallel_layout(Scenario(model="llama-2-7b", num_gpus=8), ref_of("llama-2-7b"), False, f)
    assert (par.tp, par.num_gpus, par.zero) == (8, 8, 0)
    assert (f.assumptions[0].code, f.assumptions[0].values) == ("tp.serving_split", {"num_gpus": 8, "tp": 8})
    assert "vLLM --tensor-parallel-size 8" in assumption_text(f.assumptions[0], "en")
    f = Filled()  # 40 heads over 16 GPUs: TP 8 is the largest divisor of 16 that splits them
    par = parallel_layout(Scenario(model="llama-2-13b", num_gpus=16), ref_of("llama-2-13b"), False, f)
    assert par.tp == 8 and "TP=8 is the largest" in assumption_text(f.assumptions[0], "en")
    f = Filled()
    sc = Scenario(model="llama-2-7b", num_gpus=4, offload_optimizer="cpu")
    par = parallel_layout(sc, ref_of("llama-2-7b"), True, f)
    assert (par.tp, par.zero, par.offload_optimizer) == (1, 2, True) and filled_fields(f)["zero_stage"] == 2
    for sc, training, code_or_field in (
        (Scenario(model="llama-2-7b", tp=3), True, "tp_heads"),
        (Scenario(model="llama-2-13b", tp=16), True, "tp_heads"),
        (Scenario(model="llama-2-7b", tp=2, num_gpus=3), True, "num_gpus_split"),
        (Scenario(model="llama-2-7b", zero_stage=2), False, "zero_inference"),
        (Scenario(model="llama-2-7b", offload_params="cpu", zero_stage=2), True, "offload_params"),
        (Scenario(model="llama-2-7b", pp=64), True, "pp_layers"),
    ):
        with pytest.raises(ScenarioError) as err:
            parallel_layout(sc, ref_of(sc.model or ""), training, Filled())
        assert code_or_field in (err.value.code, err.value.field)


def test_pipeline_micro_batches() -> None:
    f = Filled()
    par = parallel_layout(Scenario(model="llama-2-7b", pp=4), ref_of("llama-2-7b"), True, Filled())
    lay = pipeline_layout(Scenario(model="llama-2-7b", pp=4, gradient_accumulation_steps=8), par, f)
    assert (lay.pp, lay.microbatches, lay.num_gpus) == (4, 8, 4)
    assert filled_fields(f) == {"pp_microbatches": 8}


def test_sizes_defaults_and_checks() -> None:
    arch = ref_of("gpt2").arch
    f = Filled()
    assert sizes(Scenario(model="gpt2"), arch, False, f) == (1, 1024)  # 4096 capped at 1024 positions
    assert filled_fields(f) == {"batch_size": 1, "seq_len": 1024}
    assert sizes(Scenario(model="gpt2"), arch, True, Filled()) == (1, 2048)
    f = Filled()
    sizes(Scenario(model="gpt2", seq_len=4096), arch, False, f)
    assert f.notes[0].code == "seq_beyond_context"
    assert f.notes[0].values == {"seq_len": 4096, "max_position_embeddings": 1024}
    with pytest.raises(ScenarioError) as err:
        sizes(Scenario(model="gpt2", batch_size=1_000_000, seq_len=10_000), arch, True, Filled())
    assert err.value.code == "tokens_too_many"
    with pytest.raises(ScenarioError) as err:
        sizes(Scenario(model="gpt2", seq_len=100, max_new_tokens=200), arch, False, Filled())
    assert err.value.field == "max_new_tokens"


def test_weight_storage() -> None:
    from tools.catalog.gpus import find_gpu

    a100, v100 = find_gpu("a100-80gb")[0], find_gpu("v100")[0]
    f = Filled()
    dtype, fmt = weight_storage(Scenario(model="llama-2-7b"), "qlora", ref_of("llama-2-7b"), a100, f)
    assert dtype == "nf4" and fmt.quantised
    assert filled_fields(f) == {"weight_dtype": "nf4", "quant_method": "bnb", "double_quant": True}
    f = Filled()
    assert weight_storage(Scenario(model="llama-2-7b"), "lora", ref_of("llama-2-7b"), v100, f)[0] == "fp16"
    f = Filled()  # DeepSeek-V3 ships FP8: served as shipped
    assert (
        weight_storage(Scenario(model="deepseek-v3"), "inference", ref_of("deepseek-v3"), a100, f)[0] == "fp8"
    )
    for sc, task, code_or_field in (
        (Scenario(model="llama-2-7b", weight_dtype="bf16"), "qlora", "qlora_dtype"),
        (Scenario(model="llama-2-7b", weight_dtype="int8"), "full_finetune", "train_quantised"),
        (Scenario(model="llama-2-7b", weight_dtype="nf4", quant_method="gptq"), "inference", "quant_method"),
    ):
        with pytest.raises(ScenarioError) as err:
            weight_storage(sc, task, ref_of("llama-2-7b"), a100, Filled())
        assert code_or_field in (err.value.code, err.value.field)


def test_training_rules() -> None:
    f = Filled()
    recipe, opt = training_rules(Scenario(model="m"), "lora", "bf16", f)
    assert (
        recipe.name == "amp"
        and opt is not None
        and filled_fields(f) == {"precision_recipe": "amp", "optimizer": "adamw"}
    )
    recipe, _ = training_rules(Scenario(model="m"), "full_finetune", "bf16", Filled())
    assert recipe.name == "mixed" and recipe.master_bytes == 4
    assert training_rules(Scenario(model="m"), "full_finetune", "fp32", Filled())[0].name == "fp32"
    f = Filled()
    assert training_rules(Scenario(model="m", optimizer="sgd"), "inference", "bf16", f) == (None, None)
    assert f.notes == [note("no_effect_on_inference", field="optimizer")]


def test_trainable_set() -> None:
    pb, arch = ref_of("llama-2-7b").params, ref_of("llama-2-7b").arch
    f = Filled()
    spec = trainable_set(Scenario(model="llama-2-7b"), "lora", pb, arch, f)
    # PEFT r=8 on q_proj, v_proj: 32 layers x 2 x (4096 x 8 + 8 x 4096)
    assert spec.params == 32 * 2 * (4096 * 8 + 8 * 4096) == 4_194_304
    assert filled_fields(f) == {"lora_rank": 8, "lora_targets": ["q_proj", "v_proj"]}
    assert trainable_set(Scenario(model="llama-2-7b"), "inference", pb, arch, Filled()) is None
    assert trainable_set(Scenario(model="llama-2-7b"), "full_finetune", pb, arch, Filled()).params == P_7B
    with pytest.raises(ScenarioError) as err:
        trainable_set(Scenario(model="llama-2-7b", lora_rank=8), "full_finetune", pb, arch, Filled())
    assert err.value.code == "lora_task"
    with pytest.raises(ScenarioError) as err:
        trainable_set(Scenario(model="llama-2-7b", trainable_layers=40), "freeze", pb, arch, Filled())
    assert err.value.field == "trainable_layers"


def test_recompute_and_attention_kernel() -> None:
    from tools.rules.precision import RECIPES

    f = Filled()
    assert recompute_strategy(Scenario(model="m"), "qlora", f) == "full" and filled_fields(f) == {
        "recompute": "full"
    }
    assert recompute_strategy(Scenario(model="m", gradient_checkpointing=True), "lora", Filled()) == "full"
    f = Filled()
    assert (
        recompute_strategy(Scenario(model="m", recompute="selective", gradient_checkpointing=True), "lora", f)
        == "selective"
    )
    assert f.notes[0].code == "recompute_disagrees"
    fp32 = RECIPES["fp32"]
    f = Filled()  # fp32 with GQA (8 KV heads of 32): only the math kernel takes enable_gqa
    assert attention_kernel(Scenario(model="m"), ref_of("llama-3-8b").arch, fp32, "fp32", f) == "math"
    assert attention_kernel(Scenario(model="m"), ref_of("llama-2-7b").arch, fp32, "fp32", Filled()) == "flash"
    assert (
        attention_kernel(
            Scenario(model="m", attention="eager"), ref_of("llama-2-7b").arch, None, "bf16", Filled()
        )
        == "eager"
    )


def test_kv_dtype_and_reservation() -> None:
    from tools.catalog.gpus import find_gpu

    a100, v100 = find_gpu("a100-80gb")[0], find_gpu("v100")[0]
    f = Filled()
    assert kv_dtype_bytes(Scenario(model="m"), False, "bf16", a100, f) == 2 and filled_fields(f) == {
        "kv_dtype": "bf16"
    }
    assert kv_dtype_bytes(Scenario(model="m", kv_dtype="fp8"), False, "bf16", a100, Filled()) == 1
    f = Filled()
    assert kv_dtype_bytes(Scenario(model="m"), False, "bf16", v100, f) == 2 and filled_fields(f) == {
        "kv_dtype": "fp16"
    }
    f = Filled()
    assert memory_reservation(Scenario(model="m"), False, f) == (0.9, 0.10)
    assert filled_fields(f) == {"gpu_memory_utilization": 0.9, "safety_margin": 0.10}
    f = Filled()
    assert memory_reservation(Scenario(model="m"), True, f) == (0.9, 0.10) and filled_fields(f) == {
        "safety_margin": 0.10
    }


def test_one_tp_rule_for_resolve_and_planner() -> None:
    assert tp_fits_heads(32, 8, 4) and tp_fits_heads(32, 8, 16)  # 16 = a multiple of 8 KV heads: replicated
    assert not tp_fits_heads(32, 8, 3) and not tp_fits_heads(40, 40, 16)
    assert tp_fits_heads(128, 0, 8)  # MLA: no KV-head constraint
    for name in ("llama-2-7b", "llama-3-8b", "llama-2-13b", "deepseek-v3"):
        arch = ref_of(name).arch
        kv = 0 if arch.kv_lora_rank else arch.kv_heads
        for n in (1, 2, 4, 8, 16):
            largest = max(
                t
                for t in (1, 2, 4, 8)
                if t <= n and tp_allowed(arch, t) and all(tp_allowed(arch, u) for u in (1, 2, 4, 8) if u <= t)
            )
            assert _tp_for(n, arch.num_attention_heads, kv) == largest
