"""Published GPU memory measurements (benchmarks/data/published_memory.csv) and their comparison code.

Every row must name its source (repository, path, 40-hex commit), the metric the source reports,
a catalog model and GPU, convert its stated figure to bytes exactly, and describe a valid Scenario.
Physical plausibility is checked against the catalog: a measured peak cannot exceed the card, and
it cannot be below the weights that must be resident.
"""

from __future__ import annotations

import re
from collections import Counter

import pytest

from benchmarks.accuracy.published import (
    DATA_CSV,
    METRICS,
    OUTCOMES,
    PublishedRow,
    hf_lora_targets,
    load_rows,
    summarize,
    to_scenario,
)
from tools.catalog.gpus import find_gpu
from tools.catalog.models import find_model, get_model
from tools.scenario import Scenario

ROWS = load_rows()
SOURCES = {
    ("Lightning-AI/litgpt", "tutorials/resource-tables.md"),
    ("Lightning-AI/litgpt", "config_hub/finetune/README.md"),
    ("pytorch/torchtune", "README.md"),
}
UNIT_BYTES = {"GB": 10**9, "GiB": 2**30}


def _ids(rows: list[PublishedRow]) -> list[str]:
    return [r.case_id for r in rows]


def test_data_file_has_rows_from_each_source() -> None:
    assert DATA_CSV.exists()
    assert len(ROWS) >= 100
    per_source = Counter((r.source_repo, r.source_path) for r in ROWS)
    assert set(per_source) == SOURCES
    assert all(n >= 15 for n in per_source.values())
    assert len(set(_ids(ROWS))) == len(ROWS), "case ids must be unique"


@pytest.mark.parametrize("row", ROWS, ids=_ids(ROWS))
def test_row_names_source_commit_metric(row: PublishedRow) -> None:
    assert (row.source_repo, row.source_path) in SOURCES
    assert re.fullmatch(r"[0-9a-f]{40}", row.source_commit)
    assert row.source_table and row.source_row
    assert row.metric in METRICS
    assert row.outcome in OUTCOMES
    assert row.unit in UNIT_BYTES
    assert row.task in ("full_finetune", "lora", "qlora", "inference")


@pytest.mark.parametrize("row", ROWS, ids=_ids(ROWS))
def test_stated_figure_converts_to_bytes_exactly(row: PublishedRow) -> None:
    if row.outcome == "oom":
        assert row.value_as_stated == "OOM"
        assert row.measured_bytes is None
        return
    scale = UNIT_BYTES[row.unit]
    assert row.measured_bytes == round(float(row.value_as_stated) * scale)
    decimals = len(row.value_as_stated.split(".")[1])
    assert row.resolution_bytes == round(scale * 10**-decimals / 2)
    # the figure appears verbatim in the transcribed source row
    assert row.value_as_stated in row.source_row


@pytest.mark.parametrize("row", ROWS, ids=_ids(ROWS))
def test_model_and_gpu_resolve_and_scenario_is_valid(row: PublishedRow) -> None:
    spec = find_model(row.model)
    card, _note = find_gpu(row.gpu)
    assert card.id == row.gpu
    scenario = to_scenario(row)
    assert isinstance(scenario, Scenario)
    assert scenario.model == spec.id
    assert scenario.task == row.task
    assert scenario.num_gpus == row.num_gpus
    if row.batch_size is not None:
        assert scenario.batch_size == row.batch_size
    if row.seq_len is not None:
        assert scenario.seq_len == row.seq_len
    if row.task == "qlora" or row.weight_dtype == "nf4":
        assert scenario.weight_dtype == "nf4" and scenario.quant_method == "bnb"
        assert scenario.double_quant == (row.quant == "nf4-dq")
    if row.task in ("lora", "qlora") and (row.lora_rank or "lora_rank" in row.assumed):
        assert scenario.lora_rank and scenario.lora_targets


MEASURED = [r for r in ROWS if r.outcome == "measured"]


@pytest.mark.parametrize("row", MEASURED, ids=_ids(MEASURED))
def test_measured_bytes_are_physically_plausible(row: PublishedRow) -> None:
    card, _ = find_gpu(row.gpu)
    assert 0 < row.measured_bytes <= card.memory_bytes, "a measured peak cannot exceed the card"
    spec = find_model(row.model)
    sharded = row.num_gpus > 1 or "offload" in row.notes.lower()
    if sharded:
        return
    # resident weights are a floor: 2 B/param in bf16; NF4 >= 0.5 B/param (4 bits + absmax, QLoRA paper)
    floor_per_param = 2.0 if row.weight_dtype == "bf16" else 0.5
    optimizer = row.optimizer or row.assumed.get("optimizer")
    if (
        row.comparable
        and row.task == "full_finetune"
        and optimizer == "adamw"
        and row.precision_recipe == "bf16"
    ):
        floor_per_param = (
            8.0  # bf16 weights 2 + gradients 2 + AdamW m, v 2 + 2 (ZeRO paper sec. 3.1 accounting)
        )
    assert row.measured_bytes >= 0.97 * floor_per_param * spec.params


@pytest.mark.parametrize(
    ("case_id", "model_id", "low", "high"),
    [
        # litgpt resource tables, single-GPU inference in bf16: the peak is the bf16 weights plus a
        # short prompt's KV cache and logits. Llama-2-7B: 6,738,415,616 params x 2 B = 13.48 GB vs 13.52 GB.
        ("litgpt-rt-infer-llama-2-7b-bf16", "llama-2-7b", 1.000, 1.010),
        # Llama-2-13B: 13,015,864,320 x 2 B = 26.03 GB vs 26.21 GB
        ("litgpt-rt-infer-llama-2-13b-bf16", "llama-2-13b", 1.000, 1.010),
    ],
)
def test_bf16_inference_rows_sit_just_above_the_weights(
    case_id: str, model_id: str, low: float, high: float
) -> None:
    row = next(r for r in ROWS if r.case_id == case_id)
    weights = 2 * get_model(model_id).params
    assert low <= row.measured_bytes / weights <= high


@pytest.mark.parametrize("model_id", ["llama-2-7b", "llama-2-13b"])
def test_assumed_litgpt_lora_defaults_reproduce_the_stated_trainable_counts(model_id: str) -> None:
    """The resource tables state trainable parameters; r=8 on q and v (our assumption) must give them."""
    rows = [r for r in ROWS if r.model == model_id and r.source_table == "Finetuning with LoRA on 1 GPU"]
    assert rows
    for row in rows:
        stated = int(row.source_row.split("|")[4].strip().replace(",", ""))
        scenario = to_scenario(row)
        arch = get_model(model_id).architecture
        linears = {lin.name: lin for lin in get_model(model_id).breakdown.linears}
        r = scenario.lora_rank
        trainable = sum(  # PEFT/litgpt LoRA: r x (in + out) per targeted linear, per layer
            r * (linears[name].in_features + linears[name].out_features) * linears[name].count
            for name in scenario.lora_targets
        )
        assert trainable == stated, (row.case_id, trainable, stated, arch.num_hidden_layers)


def test_hf_lora_targets_follow_each_family_naming() -> None:
    llama = get_model("llama-3.1-8b").architecture
    assert hf_lora_targets(llama, ["q_proj", "v_proj"]) == ["q_proj", "v_proj"]
    assert hf_lora_targets(llama, ["q_proj", "k_proj", "v_proj", "o_proj", "mlp", "lm_head"]) == [
        "q_proj",
        "k_proj",
        "v_proj",
        "o_proj",
        "gate_proj",
        "up_proj",
        "down_proj",
    ]  # lm_head dropped: per-layer linears only (see hf_lora_targets)
    phi3 = get_model("phi-3-mini").architecture  # fused qkv_proj and gate_up_proj (modeling_phi3)
    assert hf_lora_targets(phi3, ["q_proj", "k_proj", "v_proj", "o_proj", "mlp"]) == [
        "qkv_proj",
        "o_proj",
        "gate_up_proj",
        "down_proj",
    ]
    falcon = get_model("falcon-7b").architecture  # query_key_value; 2-matrix MLP
    assert hf_lora_targets(falcon, ["q_proj", "v_proj", "mlp"]) == [
        "query_key_value",
        "dense_h_to_4h",
        "dense_4h_to_h",
    ]


def test_comparable_rows_state_the_settings_that_matter() -> None:
    """Rows in the headline summary carry a batch, a sequence length and single-card settings."""
    comparable = [r for r in ROWS if r.comparable and r.outcome == "measured"]
    assert len(comparable) >= 40
    for row in comparable:
        assert row.batch_size, row.case_id
        assert row.seq_len or "seq_len" in row.assumed, row.case_id
        assert row.metric in ("allocated", "active"), row.case_id


def _result(case_id: str, error_pct: float | None, *, comparable: bool = True, **kw: object) -> dict:
    base = {
        "case_id": case_id,
        "comparable": comparable,
        "error_pct": error_pct,
        "outcome": "measured",
        "estimate_exceeds_card": None,
        "error": None,
    }
    return {**base, **kw}


def test_summarize_hand_checked() -> None:
    results = [
        _result("a", 2.0),
        _result("b", -8.0),
        _result("c", 4.0),
        _result("d", -1.0),
        _result("e", 12.0),
        _result("x", -50.0, comparable=False),
        _result("oom1", None, outcome="oom", estimate_exceeds_card=True),
        _result("oom2", None, outcome="oom", estimate_exceeds_card=False),
        _result("bad", None, error="ScenarioError: model: unknown model"),
    ]
    s = summarize(results)
    assert s["cases"] == 5
    assert s["median_abs_error_pct"] == 4.0  # |2, 8, 4, 1, 12| sorted: 1 2 4 8 12
    assert s["p90_abs_error_pct"] == 12.0  # nearest rank: ceil(0.9 x 5) = 5th
    assert s["worst_case"] == "e" and s["worst_error_pct"] == 12.0
    assert s["underestimates_beyond_5pct"] == 1  # b
    assert s["mean_signed_error_pct"] == pytest.approx(1.8)
    assert (s["oom_rows"], s["oom_rows_estimated_to_fit"]) == (2, 1)
    assert s["errors"] == 1
    everything = summarize(results, comparable_only=False)
    assert everything["cases"] == 6
    assert everything["worst_case"] == "x"
    assert everything["underestimates_beyond_5pct"] == 2


def test_every_row_is_estimable_by_the_real_estimator() -> None:
    from benchmarks.accuracy.published import published_rows

    results = published_rows()
    assert len(results) == len(ROWS)
    failures = [(r["case_id"], r["error"]) for r in results if r["error"]]
    assert not failures
    for r in results:
        if r["outcome"] == "measured":
            assert r["estimate_bytes"] > 0 and r["error_pct"] is not None
        else:
            assert r["estimate_exceeds_card"] is not None


# ----------------------------------------------------------------------------- litgpt bitsandbytes rows (H17)
def _row(case_id: str) -> PublishedRow:
    return next(r for r in ROWS if r.case_id == case_id)


def test_litgpt_nf4_inference_adjustment_hand_checked() -> None:
    """Llama-2-7B nf4 (no double quant) in litgpt generate/base.py: LM head 4-bit, dequantised fp16 + bf16."""
    from benchmarks.accuracy.published import litgpt_bnb_adjustment
    from tools.estimator import estimate

    row = _row("litgpt-rt-infer-llama-2-7b-nf4")
    scenario = to_scenario(row)
    adj = litgpt_bnb_adjustment(row, scenario, estimate(scenario, plan=False))
    assert adj is not None
    vh = 32_000 * 4_096  # 131,072,000 LM head params
    head_4bit = vh // 2 + (vh // 64) * 4  # 4-bit codes + fp32 absmax per block of 64: 73,728,000 B
    transient = 2 * vh * 2  # fp16 dequantize_4bit output + its bf16 cast: 524,288,000 B
    # replaces the estimator's transformers workspace: one bf16 copy of the MLP linear (11008 x 4096)
    hf_workspace = 11_008 * 4_096 * 2
    assert adj.bytes == head_4bit - vh * 2 + transient - hf_workspace == 245_694_464


def test_litgpt_adjustment_brings_nf4_inference_rows_within_2pct() -> None:
    """Every resource-table NF4 inference row (7 models, 1.3B-70B) lands within 2% once the litgpt facts apply."""
    from benchmarks.accuracy.published import published_rows

    rows = [
        r
        for r in published_rows()
        if r["task"] == "inference" and "nf4" in r["case_id"] and r["outcome"] == "measured"
    ]
    assert len(rows) == 13
    for r in rows:
        assert r["adjustment_bytes"] > 0, r["case_id"]
        assert abs(r["error_pct"]) < 2.0, (r["case_id"], r["error_pct"])


def test_bnb_4bit_inference_counts_the_dequantised_linear_only_for_multi_token_inputs() -> None:
    """bitsandbytes matmul_4bit: gemv_4bit (no dequantised weight) for one token, MatMul4Bit otherwise."""
    from tools.estimator import estimate

    base = {"model": "llama-2-7b", "task": "inference", "gpu": "a100-80gb", "weight_dtype": "nf4"}
    est = estimate(Scenario.model_validate({**base, "batch_size": 1, "seq_len": 512}), plan=False)
    ws = est.component("dequant_workspace")
    assert ws is not None and ws.bytes == 11_008 * 4_096 * 2  # largest linear (MLP), bf16: 90,177,536 B
    bf16 = estimate(Scenario.model_validate({**base, "weight_dtype": "bf16", "seq_len": 512}), plan=False)
    assert bf16.component("dequant_workspace") is None


def test_adjustment_only_touches_litgpt_bitsandbytes_rows() -> None:
    from benchmarks.accuracy.published import published_rows

    for r in published_rows():
        row = _row(r["case_id"])
        litgpt_bnb = row.source_repo == "Lightning-AI/litgpt" and row.quant in ("nf4", "nf4-dq")
        assert (r["adjustment"] is not None) == (litgpt_bnb and not r["error"]), r["case_id"]


def test_litgpt_hub_qlora_rows_are_out_of_the_summary_with_the_reason() -> None:
    from benchmarks.accuracy.published import LITGPT_HUB_QLORA_EXCLUSION, mapping_exclusion

    hub_qlora = [r for r in ROWS if r.case_id.startswith("litgpt-hub-") and r.task == "qlora"]
    assert len(hub_qlora) == 10
    for row in hub_qlora:
        assert mapping_exclusion(row) == LITGPT_HUB_QLORA_EXCLUSION
    # the resource-table QLoRA rows (older stack, in line with their bf16 twins) stay in
    for row in ROWS:
        if row.case_id.startswith("litgpt-rt-") and row.task == "qlora":
            assert mapping_exclusion(row) is None
