"""Offline agent end to end: question -> real parser -> real estimator -> templated, cited answer.

The figures asserted are the tool's own (`tools.estimator.estimate` run here on the same
scenario), formatted as the answer shows them (`tools.units.fmt_gib`).
"""

from __future__ import annotations

import asyncio
import io
import json
import re
import subprocess
import sys
from argparse import Namespace
from typing import Any

import pytest

from service.agent.base import ConversationState
from service.agent.events import DoneEvent, ErrorEvent, EstimateEvent, ScenarioEvent, TokenEvent
from service.agent.figures import figures_of, matches_figure
from service.agent.offline import OfflineAgent
from service.agent.offline.kb import kb_entry
from service.agent.render import change_text
from service.channels.cli_ask import run_ask
from tools.estimator import estimate
from tools.scenario import Scenario
from tools.units import fmt_count, fmt_gib


def collect(question: str, state: ConversationState | None = None, language: str | None = None) -> list[Any]:
    async def run() -> list[Any]:
        agent = OfflineAgent()
        return [e async for e in agent.stream(question, state or ConversationState(), language)]  # type: ignore[arg-type]

    return asyncio.run(run())


def done(events: list[Any]) -> DoneEvent:
    assert isinstance(events[-1], DoneEvent), events[-1]
    return events[-1]


GIB_FIGURE = re.compile(r"(-?\d+\.\d{2}) GiB")


def assert_grounded(text: str, est: Any) -> None:
    """Every GiB figure in the answer is one of the estimate's byte figures (the grounding rule)."""
    figures = figures_of(est)
    shown = [float(x) for x in GIB_FIGURE.findall(text)]
    assert shown, "no figures in the answer"
    bad = [x for x in shown if not matches_figure(abs(x), "GiB", figures)]
    assert not bad, bad


def test_english_estimate_answer_cites_every_component() -> None:
    q = "LoRA fine-tune Llama-2-7B r=16 on q_proj,v_proj on one 4090, batch 4, cutoff_len 2048, 3 epochs"
    events = collect(q)
    kinds = [e.type for e in events]
    assert kinds[0] == "scenario" and kinds[1] == "token" and "estimate" in kinds and kinds[-1] == "done"
    assert kinds.index("token") < kinds.index("estimate")  # first token before the estimator runs
    stated = events[0].scenario
    assert isinstance(events[0], ScenarioEvent)
    assert stated.stated() == {
        "model": "llama-2-7b",
        "task": "lora",
        "lora_rank": 16,
        "lora_targets": ["q_proj", "v_proj"],
        "gpu": "4090",
        "num_gpus": 1,
        "batch_size": 4,
        "seq_len": 2048,
        "epochs": 3.0,
    }
    est = next(e.estimate for e in events if isinstance(e, EstimateEvent))
    reference = estimate(Scenario.model_validate(stated.stated()), plan=True)
    assert est.per_gpu.total_bytes == reference.per_gpu.total_bytes
    answer = done(events).answer
    text = answer.answer
    assert answer.language == "en" and answer.agent == "offline"
    assert text == "".join(e.text for e in events if isinstance(e, TokenEvent))
    assert sum(isinstance(e, TokenEvent) for e in events) > 20  # streamed line by line
    assert fmt_gib(est.per_gpu.total_bytes) in text
    assert fmt_gib(est.per_gpu.tensor_peak_bytes) in text
    assert fmt_count(est.params_total) in text
    for c in est.components:
        assert fmt_gib(c.bytes) in text and f"{c.bytes:,}" in text
        assert c.substituted in text and c.source in text
    assert ("Verdict: fits" if est.fits else "Verdict: does not fit") in text
    for s in est.suggestions:  # composed from scenario_changes (prompts/en/labels.toml [change])
        assert fmt_gib(s.total_bytes) in text and change_text(s, "en", est.scenario) in text
    for a in est.assumptions:
        assert f"- {a.field} = " in text
    assert "epochs = 3" in text  # no-effect explanation
    assert est.params_trainable == 8_388_608  # 2 x 32 layers x 16 x (4096 + 4096): PEFT's count
    assert_grounded(text, est)


def test_chinese_estimate_answer_is_fully_chinese() -> None:
    events = collect("两张4090能不能LoRA微调千问2.5-14B，batch 8，cutoff_len 2048，训练3轮")
    answer = done(events).answer
    est = answer.estimate
    assert answer.language == "zh" and est is not None
    text = answer.answer
    assert fmt_gib(est.per_gpu.total_bytes) in text
    assert ("结论：放得下" if est.fits else "结论：放不下") in text
    for label in ("权重", "梯度", "优化器状态", "激活值", "logits（输出层分数", "CUDA 上下文", "假设"):
        assert label in text, label
    for english in ("Verdict", "Assumptions", "Where the memory goes", "Cheapest changes", "does not fit"):
        assert english not in text, english
    for s in est.suggestions:  # planner changes composed from scenario_changes, not the English text
        assert fmt_gib(s.total_bytes) in text and s.change not in text
    assert "训练轮数只决定训练跑多久" in text  # no-effect explanation in Chinese
    assert len([line for line in text.splitlines() if line.startswith("- ") and "=" in line]) >= len(
        est.assumptions
    )
    assert_grounded(text, est)


def test_inference_answer_reports_serving_capacity() -> None:
    answer = done(collect("serve Llama-3-8B with vLLM on one H100, 8k context, 16 concurrent users")).answer
    est = answer.estimate
    assert est is not None and est.serving is not None
    assert est.component("kv_cache") is not None
    text = answer.answer
    assert f"{est.serving.max_kv_tokens:,}" in text
    assert f"{est.serving.max_concurrent_sequences:,}" in text
    assert fmt_gib(est.serving.kv_cache_bytes) in text
    assert est.serving.kv_bytes_per_token == 131_072  # 2 x 32 x 8 x 128 x 2 B (GQA, bf16)
    assert "128.00 KiB" in text
    assert_grounded(text, est)


def test_bare_size_is_an_assumption() -> None:
    answer = done(collect("单卡3090 推理 70亿参数模型 4k上下文")).answer
    assert answer.estimate is not None
    assert any(a.field == "model" for a in answer.estimate.assumptions)
    # the catalog's bare-size mapping, named in Chinese (not the generic per-field line)
    assert (
        "- 模型 = 7B：你只给了参数规模 7B，目录里没有相差 2% 以内的模型：按这个规模常见的结构搭一个正好 7,000,000,000 "
        "参数的稠密模型计算（32 层，hidden 4096，32 个注意力头、8 个 KV 头（每头 128 维），SwiGLU 中间层 11712，词表 "
        "128,256，Llama-3 布局）"
    ) in answer.answer
    assert answer.estimate.params_total == 7_000_000_000


@pytest.mark.parametrize(
    ("question", "field", "needle"),
    [
        ("How much memory to fine-tune Llama-5-9000B on one A100?", "model", "Did you mean"),
        ("全参微调 Qwen9-7B 需要多少显存", "model", "你是不是想找"),
        ("run llama-3.2-3b on a 2080 with load_in_4bit", "gpu", "Did you mean"),
        ("LoRA Llama-2-7B with TP=3 on 3 A100", "tp", "tp"),
    ],
)
def test_bad_input_is_one_clear_error(question: str, field: str, needle: str) -> None:
    events = collect(question)
    err = events[-1]
    assert isinstance(err, ErrorEvent), events[-1]
    assert err.field == field
    assert needle in err.message
    assert "Traceback" not in err.message
    if field in ("model", "gpu"):
        assert err.suggestions  # near names from the catalog
        assert not any(isinstance(e, TokenEvent) for e in events)  # caught before any text
    assert not any(isinstance(e, DoneEvent) for e in events)


def test_out_of_range_value_is_a_clear_error() -> None:
    err = collect("LoRA Llama-2-7B on one 4090, batch 0")[-1]
    assert isinstance(err, ErrorEvent) and err.field == "batch_size"
    assert "greater than or equal to 1" in err.message and "got 0" in err.message


def test_missing_model_asks_for_one() -> None:
    err = collect("batch 16?")[-1]
    assert isinstance(err, ErrorEvent) and err.field == "model"
    assert "7B" in err.message
    err_zh = collect("用两张卡呢？")[-1]
    assert isinstance(err_zh, ErrorEvent) and "模型" in err_zh.message


@pytest.mark.parametrize(
    ("question", "topic", "language"),
    [
        ("what is the 16x rule?", "rule_16x", "en"),
        ("什么是 16 倍法则？", "rule_16x", "zh"),
        ("why is the seed's KV formula wrong for Llama-3?", "seed_kv_gqa", "en"),
        ("训练轮数会影响显存吗？", "epochs_grad_accum", "zh"),
        ("does gradient checkpointing reduce memory?", "gradient_checkpointing", "en"),
        ("为什么 A3B 的 MoE 模型不是只需要 3B 的显存？", "moe_active", "zh"),
    ],
)
def test_concept_answers_carry_tool_figures(question: str, topic: str, language: str) -> None:
    answer = done(collect(question)).answer
    assert answer.language == language and answer.scenario is None and answer.estimate is None
    entry = kb_entry(topic, language)
    assert entry is not None and entry.example
    example = estimate(Scenario.model_validate(entry.example), plan=False)
    assert fmt_gib(example.per_gpu.total_bytes) in answer.answer
    assert "n/a" not in answer.answer and "${" not in answer.answer
    if entry.compare:
        compare = estimate(Scenario.model_validate(entry.compare), plan=False)
        assert fmt_gib(compare.per_gpu.total_bytes) in answer.answer


def test_sixteen_x_rule_shows_sixteen_bytes_per_parameter() -> None:
    text = done(collect("what is the 16x rule?")).answer.answer
    assert "7B x 16 B = 112 GB" in text
    assert "16.0 B per parameter" in text  # model states / trainable params from the tool


def test_epochs_do_not_change_the_tool_figure() -> None:
    """The KB example (3 epochs, 4 accumulation steps) vs its comparison (100 epochs, 1 step): Qwen2.5-1.5B
    full fine-tuning under HF Trainer (amp, no DeepSpeed). Epochs change nothing; accumulating at all
    keeps the fp32 gradients alive between micro-batches: 1,543,714,304 x 4 B = 6,174,857,216 B."""
    text = done(collect("does num_epochs change memory?")).answer.answer
    entry = kb_entry("epochs_grad_accum", "en")
    assert entry is not None
    a = estimate(Scenario.model_validate(entry.example), plan=False)
    b = estimate(Scenario.model_validate(entry.compare), plan=False)
    grads = next(c.bytes for c in a.components if c.name == "gradients")
    assert grads == 1_543_714_304 * 4
    assert a.per_gpu.tensor_peak_bytes - b.per_gpu.tensor_peak_bytes == grads
    # epochs alone: identical totals; more accumulation steps (4 -> 16): identical totals
    for changed in ({"epochs": 100}, {"epochs": 1}, {"gradient_accumulation_steps": 16}):
        c = estimate(Scenario.model_validate({**entry.example, **changed}), plan=False)
        assert c.per_gpu.total_bytes == a.per_gpu.total_bytes, changed
    same_ga = estimate(Scenario.model_validate({**entry.compare, "epochs": 3}), plan=False)
    assert same_ga.per_gpu.total_bytes == b.per_gpu.total_bytes
    for shown in (a.per_gpu.total_bytes, b.per_gpu.total_bytes):
        assert text.count(fmt_gib(shown)) >= 2, fmt_gib(shown)  # in the text and in the figure block
    flat = " ".join(text.split())  # the KB text is wrapped
    for peak in (a, b):
        assert f"tensor peak **{fmt_gib(peak.per_gpu.tensor_peak_bytes)}**" in flat
    assert f"The tensor-peak difference is exactly the gradients, **{fmt_gib(grads)}**" in flat
    zh = done(collect("训练轮数会影响显存吗？")).answer.answer
    assert f"张量峰值的差值正好是累积时一直保留的梯度 **{fmt_gib(grads)}**" in zh
    assert f"每卡 **{fmt_gib(b.per_gpu.total_bytes)}**" in zh


def test_lists_and_help() -> None:
    gpus = done(collect("which GPUs do you support?")).answer.answer
    assert "h100-80gb" in gpus and "GiB" in gpus
    models = done(collect("支持哪些模型")).answer.answer
    assert "qwen3-30b-a3b" in models and "参数" in models
    assert "QLoRA" in done(collect("hello")).answer.answer


def test_cli_ask_json_prints_one_answer_object() -> None:
    out, err = io.StringIO(), io.StringIO()
    code = run_ask(
        Namespace(question="QLoRA Llama-2-7B on one T4", json=True, offline=True, language=None), out, err
    )
    assert code == 0, err.getvalue()
    data = json.loads(out.getvalue())
    assert set(data) >= {"question", "language", "scenario", "estimate", "answer", "summary"}
    assert data["answer"].startswith(data["answer"].split("\n\n")[0]) and data["summary"] in data["answer"]
    assert data["language"] == "en" and data["scenario"]["task"] == "qlora"
    assert fmt_gib(data["estimate"]["per_gpu"]["total_bytes"]) in data["answer"]


def test_cli_ask_streams_text_and_honours_language() -> None:
    out, err = io.StringIO(), io.StringIO()
    code = run_ask(
        Namespace(question="Llama-3-8B inference on one 4090", json=False, offline=True, language="zh"),
        out,
        err,
    )
    assert code == 0
    text = out.getvalue()
    assert "放得下" in text and "--detail" in text and "公式：" not in text  # the summary by default
    assert len(text.strip().splitlines()) <= 7
    out = io.StringIO()
    code = run_ask(
        Namespace(
            question="Llama-3-8B inference on one 4090", json=False, offline=True, language="zh", detail=True
        ),
        out,
        err,
    )
    assert code == 0 and "结论" in out.getvalue() and "公式：" in out.getvalue()


def test_cli_ask_bad_input_exits_2_with_one_line() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "service.cli", "ask", "--offline", "LoRA Llama-5-9000B on one 4090"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1
    assert "model" in proc.stderr and "Did you mean" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_the_accuracy_bound_is_said_once_briefly_in_each_language() -> None:
    from tools.accuracy import accuracy_bound

    b = accuracy_bound()
    zh = done(collect("一张4090推理Llama-3-8B，batch 1，上下文4096")).answer
    en = done(collect("Llama-3-8B inference on one 4090, batch 1, context 4096")).answer
    assert zh.estimate is not None and zh.estimate.accuracy == b  # the figures are data; the words are ours
    zh_line = f"准确度：通常与实测（trace）峰值相差 {b.typical_pct}% 以内（最差 {b.worst_abs_error_pct:.1f}%）；公式和来源见下文。"
    en_line = (
        f"Accuracy: typically within {b.typical_pct}% of the traced peak (worst {b.worst_abs_error_pct:.1f}%); "
        "formulas and sources below."
    )
    assert zh.answer.count("准确度") == 1 and zh_line in zh.summary.splitlines()
    assert en.answer.count("Accuracy:") == 1 and en_line in en.summary.splitlines()
    assert "Tensor-peak estimates" not in zh.answer and "准确度" not in en.answer


@pytest.mark.parametrize("language", ["en", "zh"])
def test_accumulation_note_figures_pass_the_grounding_checker(language: str) -> None:
    """The no-effect note for gradient_accumulation_steps cites the tool's 1-step figures; the LLM
    agent's real checker (allow_tool_run over the estimate tool's output) accepts every figure the
    templated answer prints."""
    from service.agent.llm.agent import allow_tool_run
    from service.agent.llm.grounding import AllowedFigures, find_figures, ungrounded_figures
    from service.agent.llm.tools import ToolRun, estimate_view
    from service.agent.render import render_answer

    stated = dict(
        model="qwen2.5-1.5b",
        task="full_finetune",
        precision_recipe="amp",
        gpu="a100-80gb",
        batch_size=4,
        seq_len=2048,
        gradient_checkpointing=True,
        gradient_accumulation_steps=4,
    )
    est = estimate(Scenario.model_validate(stated), plan=True)
    one = estimate(Scenario.model_validate({**stated, "gradient_accumulation_steps": 1}), plan=False)
    text = render_answer(est, language)
    delta = est.per_gpu.tensor_peak_bytes - one.per_gpu.tensor_peak_bytes
    assert delta == 1_543_714_304 * 4  # fp32 gradients kept between micro-batches
    for shown in (delta, one.per_gpu.tensor_peak_bytes, one.per_gpu.total_bytes):
        assert fmt_gib(shown) in text
    allowed = AllowedFigures()
    allow_tool_run(
        allowed,
        ToolRun(tool="estimate_memory", args=stated, output=json.dumps(estimate_view(est)), estimate=est),
    )
    assert find_figures(text)
    assert ungrounded_figures(text, allowed) == []
    # the 1-step figures are grounded by the tool output's no-effect text, not by the estimate's own bytes
    bare = AllowedFigures()
    bare.add_bytes(figures_of(est))
    assert {f.text for f in ungrounded_figures(text, bare)} >= {fmt_gib(one.per_gpu.total_bytes)}
