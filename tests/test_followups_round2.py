"""Follow-ups of issue 26 section 5, as multi-turn conversations through the real OfflineAgent and state.

"what's the max context then?" keeps the job and asks its longest context; "and with flash attention off?" is the
negation; "改成 LoRA r=64" inside a GRPO conversation is GRPO with a LoRA policy; a Chinese follow-up of an English
conversation is answered in Chinese; GPUs over nodes, RL lengths and Hub repo ids carry through follow-ups. Every
turn's figures are the estimator's for the merged scenario.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from service.agent.events import Answer
from service.hub import estimate_any_model
from tests.fakes.hub_server import FakeHub, FakeRepo, fake_hub
from tests.test_followups import Conversation, assert_tool_figures, stated
from tools.estimator import estimate
from tools.scenario import Scenario
from tools.units import fmt_gib

FIXTURES = Path(__file__).parent / "fixtures" / "hub"


def assert_edge_figures(answer: Answer) -> None:
    """An inverse answer's estimate is the job at the edge (asked.at), estimated again here."""
    assert answer.asked is not None and answer.asked.at is not None and answer.estimate is not None
    reference = estimate(Scenario.model_validate(answer.asked.at.scenario.stated()), plan=False)
    assert answer.estimate.per_gpu.total_bytes == reference.per_gpu.total_bytes
    assert fmt_gib(reference.per_gpu.total_bytes) in answer.answer


def test_max_context_follow_up_keeps_the_job_in_both_languages() -> None:
    c = Conversation()
    first = c.ask("Qwen2.5-7B inference on one 4090 with vllm, 8k context")
    then = c.ask("what's the max context then?")
    assert stated(then) == stated(first)  # the previous job, nothing changed
    assert then.language == "en" and "Follow-up of the previous question" in then.answer
    # the asked figure leads the summary (issue 26): the inverse search's edge, capped by the model's window
    assert then.summary.splitlines()[0].startswith("**Longest context: 32,768 tokens**")
    assert then.asked is not None and (then.asked.kind, then.asked.field, then.asked.value) == (
        "max",
        "seq_len",
        32_768,
    )
    assert_edge_figures(then)
    zh = c.ask("那最长上下文能到多少？")
    assert stated(zh) == stated(first) and zh.language == "zh"
    assert zh.summary.splitlines()[0].startswith("**最长上下文：32,768 tokens**")
    assert_edge_figures(zh)


def test_flash_attention_off_is_the_negation() -> None:
    c = Conversation()
    first = c.ask("Full fine-tune Llama-2-7B on one A100 80GB, batch 4, 4k context")
    assert "attention" not in stated(first)
    flash = c.ask("with flash attention?")
    assert stated(flash) == {**stated(first), "attention": "flash"}
    off = c.ask("and with flash attention off?")
    assert stated(off) == {**stated(first), "attention": "eager"}
    assert off.estimate is not None and flash.estimate is not None
    assert off.estimate.component("activations").bytes > flash.estimate.component("activations").bytes  # type: ignore[union-attr]
    assert_tool_figures(off)
    zh = Conversation()
    zh.ask("LoRA 微调 Qwen2.5-7B，单卡 A100，序列 4096，开 flash attention")
    closed = zh.ask("那关掉 flash attention 呢")
    assert stated(closed)["attention"] == "eager" and closed.language == "zh"
    assert_tool_figures(closed)


def test_lora_inside_a_grpo_conversation_is_grpo_with_a_lora_policy() -> None:
    c = Conversation()
    first = c.ask("GRPO Qwen2.5-7B on 8xH100, max_prompt_length 512, max_completion_length 1024")
    assert stated(first)["task"] == "grpo" and stated(first)["seq_len"] == 1536
    lora = c.ask("改成 LoRA r=64")
    assert stated(lora) == {**stated(first), "lora_rank": 64}  # still GRPO: the policy gets adapters
    assert lora.language == "zh" and "任务 = GRPO" in lora.answer
    assert lora.estimate is not None and first.estimate is not None
    assert lora.estimate.per_gpu.total_bytes < first.estimate.per_gpu.total_bytes
    assert_tool_figures(lora)
    qlora = c.ask("what about QLoRA?")
    assert stated(qlora) == {**stated(lora), "weight_dtype": "nf4"}  # the rank stated before is kept
    assert qlora.language == "en"
    assert_tool_figures(qlora)
    full = c.ask("改成全参呢")  # still GRPO, now without adapters: the first job again
    assert stated(full) == stated(first)
    assert (
        full.estimate is not None and full.estimate.per_gpu.total_bytes == first.estimate.per_gpu.total_bytes
    )


def test_qlora_follow_up_of_a_chinese_grpo_job_takes_the_default_rank() -> None:
    c = Conversation()
    first = c.ask("GRPO Qwen2.5-7B，8卡H100，每个 prompt 采样 16 条，回复长度 4096")
    assert stated(first)["num_generations"] == 16 and stated(first)["max_new_tokens"] == 4096
    assert stated(first)["seq_len"] == 512 + 4096  # TRL's default prompt, said as an assumption
    assert first.estimate is not None
    assert any(a.code == "rl_total_length" for a in first.estimate.assumptions)
    q = c.ask("换成 QLoRA 呢")
    assert stated(q) == {**stated(first), "weight_dtype": "nf4", "lora_rank": 8}
    assert "LoRA 秩 = 8" in q.answer
    assert_tool_figures(q)


def test_chinese_follow_up_of_an_english_conversation_is_answered_in_chinese() -> None:
    c = Conversation()
    first = c.ask("LoRA Llama-3-8B on one 4090, batch 4, 2k context")
    assert first.language == "en"
    zh = c.ask("换成两张 A100 呢")
    assert stated(zh) == {**stated(first), "gpu": "a100", "num_gpus": 2}
    assert zh.language == "zh" and "在上一个问题的基础上修改" in zh.answer and "结论" in zh.summary
    assert_tool_figures(zh)
    back = c.ask("and batch 8?")
    assert back.language == "en" and stated(back)["batch_size"] == 8


def test_nodes_in_a_follow_up() -> None:
    c = Conversation()
    first = c.ask("Full fine-tune Llama-3-70B on 8 H100 with ZeRO-3")
    nodes = c.ask("what about 2 nodes x 8 GPUs?")
    assert stated(nodes) == {**stated(first), "num_gpus": 16}
    assert nodes.estimate is not None
    said = next(a for a in nodes.estimate.assumptions if a.field == "num_gpus")
    assert said.code == "gpus_over_nodes" and said.values == {"nodes": 2, "per_node": 8, "total": 16}
    assert "2 nodes x 8 GPUs per node = 16 GPUs" in nodes.answer
    assert_tool_figures(nodes)
    zh = Conversation()
    base = zh.ask("全参微调 Qwen2.5-72B，8卡 A800，ZeRO-3")
    more = zh.ask("那两机十六卡呢")
    assert stated(more) == {**stated(base), "num_gpus": 16}  # 16 in all, not 32
    assert "2 台机器 × 每台 8 张卡 = 共 16 张卡" in more.answer
    assert_tool_figures(more)


def test_completion_length_follow_up_keeps_the_prompt() -> None:
    c = Conversation()
    first = c.ask("GRPO Qwen2.5-1.5B on one 4090, max_prompt_length 768, max_completion_length 1024")
    assert stated(first)["seq_len"] == 1792
    longer = c.ask("max_completion_length 2048?")
    assert stated(longer) == {**stated(first), "max_new_tokens": 2048, "seq_len": 768 + 2048}
    assert_tool_figures(longer)
    zh = c.ask("回复长度改成 4096 呢")
    assert stated(zh)["max_new_tokens"] == 4096 and stated(zh)["seq_len"] == 768 + 4096
    assert zh.language == "zh"
    assert_tool_figures(zh)


def test_layer_offload_follow_up_sets_no_optimizer_offload() -> None:
    c = Conversation()
    first = c.ask("ollama run llama3 70b on a 4090")
    assert stated(first)["weight_dtype"] == "q4_k_m" and stated(first)["engine"] == "ollama"
    layers = c.ask("and if I offload layers to CPU with 2 4090s?")
    assert stated(layers) == {**stated(first), "num_gpus": 2}
    assert "offload_optimizer" not in stated(layers) and "offload_params" not in stated(layers)
    assert_tool_figures(layers)


def test_distilled_model_follow_up() -> None:
    c = Conversation()
    first = c.ask("deepseek-r1 1.5b 蒸馏版 推理，单卡 3060")
    assert stated(first)["model"] == "deepseek-r1-distill-qwen-1.5b"
    assert first.estimate is not None
    qwen = estimate(Scenario(model="qwen2.5-1.5b", task="inference", gpu="3060", num_gpus=1), plan=False)
    # the distill's LM head is not tied (Qwen2.5-Math-1.5B shapes): more weights than Qwen2.5-1.5B
    assert first.estimate.component("weights").bytes > qwen.component("weights").bytes  # type: ignore[union-attr]
    bigger = c.ask("换成 R1-distill-qwen-32b 呢，用 q4_k_m")
    assert (
        stated(bigger)["model"] == "deepseek-r1-distill-qwen-32b"
        and stated(bigger)["weight_dtype"] == "q4_k_m"
    )
    assert_tool_figures(bigger)


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[FakeHub]:
    qwen = (FIXTURES / "Qwen--Qwen2.5-0.5B-Instruct.config.json").read_bytes()
    gptq = (FIXTURES / "Qwen--Qwen2.5-7B-Instruct-GPTQ-Int4.config.json").read_bytes()
    repos = {
        "acme/qwen-mini-sft": FakeRepo({"config.json": qwen}),
        "Qwen/Qwen2.5-7B-Instruct-GPTQ-Int4": FakeRepo({"config.json": gptq}),
    }
    with fake_hub(repos) as server:
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
        monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
        yield server


def test_repo_ids_in_the_chat_go_through_the_hub(hub: FakeHub) -> None:
    c = Conversation()
    first = c.ask("LoRA acme/qwen-mini-sft on one 4090, batch 4")
    assert stated(first) == {
        "model": "acme/qwen-mini-sft",
        "task": "lora",
        "gpu": "4090",
        "num_gpus": 1,
        "batch_size": 4,
    }
    assert first.estimate is not None
    assert first.estimate.assumptions[0].code == "model.hub"
    same = estimate_any_model(Scenario.model_validate(stated(first)))
    assert first.estimate.per_gpu.total_bytes == same.per_gpu.total_bytes
    more = c.ask("and batch 8?")
    assert stated(more) == {**stated(first), "batch_size": 8}
    zh = Conversation()
    gptq = zh.ask("单卡 4090 部署 Qwen/Qwen2.5-7B-Instruct-GPTQ-Int4，上下文 8k")
    assert stated(gptq)["model"] == "Qwen/Qwen2.5-7B-Instruct-GPTQ-Int4"  # the id as typed, letter case kept
    assert gptq.estimate is not None and gptq.estimate.scenario.quant_method == "gptq"
    assert any("/Qwen/Qwen2.5-7B-Instruct-GPTQ-Int4/" in request for request in hub.requests)
