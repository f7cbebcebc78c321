"""A paste in every channel: the offline agent's answer (what was read, the estimate of the pasted job with
the sentence's card, the diagnosis of an error with its observed figures), the message splitter, the CLI
(`vramwise estimate --from`, `vramwise ask` with a file on stdin) and the OpenAI-compatible API on a real
uvicorn. Figures are checked against the estimator run on the same scenario."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest

from service.agent.base import ConversationState
from service.agent.events import Answer
from service.agent.offline.agent import OfflineAgent
from service.agent.paste import split_message
from service.app import create_app
from service.cli import main
from service.hub import estimate_any_model
from tests.service_support import live_server, offline_settings, reset_sse_exit_flag
from tools.errors import ScenarioError
from tools.scenario import Scenario
from tools.units import fmt_gib

__all__ = ["reset_sse_exit_flag"]  # autouse fixture

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "paste"
LORA_YAML = (FIXTURES / "llamafactory-yaml/llama3_lora_sft.yaml").read_text(encoding="utf-8")
OOM = (FIXTURES / "cuda-oom/oom_other_process.txt").read_text(encoding="utf-8")
AGENT = OfflineAgent(preload=False)


def ask(message: str) -> Answer:
    return asyncio.run(AGENT.answer(message, ConversationState()))


def total_of(scenario: Scenario) -> str:
    return fmt_gib(estimate_any_model(scenario, plan=False).per_gpu.total_bytes)


# --- the splitter -------------------------------------------------------------------------------------------
def test_a_fenced_block_is_a_paste_and_the_rest_the_sentence() -> None:
    found = split_message(f"on 4x 4090, will it fit?\n```yaml\n{LORA_YAML}```")
    assert found is not None and found.sentence == "on 4x 4090, will it fit?" and found.pastes == [LORA_YAML]


def test_unfenced_pastes_are_found_and_questions_are_not() -> None:
    found = split_message("will this fit on a 4090?\n" + LORA_YAML)
    assert found is not None and found.sentence == "will this fit on a 4090?"
    assert split_message("vllm serve Qwen/Qwen2.5-7B-Instruct --max-model-len 32768") is not None
    assert split_message(OOM.splitlines()[-1]) is not None
    inline = split_message("will `vllm serve Qwen/Qwen2.5-7B-Instruct --max-model-len 32768` fit on an L40S?")
    assert inline is not None and inline.sentence == "will fit on an L40S?"
    for question in (
        "From 7B to 13B, how much more memory?",  # not an Ollama FROM line
        "accelerate launch with 4 GPUs: how much memory for llama-2-7b?",  # a launcher word, no flag read
        "trl grpo with qwen2.5-7b on 8 H100s?",
        "I get CUDA out of memory with llama 7b on a 4090, why?",  # an error named, none pasted
        "llama-2-7b: lora\nbatch: 4\ngpu: 4090",  # key: value lines no format knows
        "Can I fine-tune Llama-2-7B with LoRA on one RTX 4090?",
        "LoRA Llama-2-7B 两张4090 batch 4 4k上下文 ZeRO-3",
        "Llama-2-7B\non a 4090: model: fits?",
        "what is the KV cache of qwen2.5-7b at 32k?",
    ):
        assert split_message(question) is None, question


def test_words_after_a_one_line_command_are_the_question() -> None:
    found = split_message("vllm serve Qwen/Qwen2.5-7B-Instruct --max-model-len 16384 on a 4090?")
    assert found is not None and found.sentence == "on a 4090?"
    answer = ask("vllm serve Qwen/Qwen2.5-7B-Instruct --max-model-len 16384 on a 4090?")
    assert answer.scenario is not None and (answer.scenario.gpu, answer.scenario.seq_len) == ("4090", 16384)
    assert (
        answer.source is not None and {i.key: i.why for i in answer.source.ignored}["4090?"] == "not_a_flag"
    )


# --- the offline agent --------------------------------------------------------------------------------------
def test_a_config_and_a_sentence_combine() -> None:
    answer = ask(f"on 4x 4090, will it fit?\n```yaml\n{LORA_YAML}```")
    assert answer.source is not None and answer.source.format == "llamafactory-yaml"
    assert answer.source.used["cutoff_len"] == "seq_len" and answer.source.used["lora_rank"] == "lora_rank"
    assert {item.key for item in answer.source.ignored} >= {"dataset", "template", "output_dir"}
    assert answer.asked is not None and answer.asked.kind == "fit"
    scenario = answer.scenario
    assert scenario is not None and (scenario.gpu, scenario.num_gpus) == ("4090", 4)
    assert (scenario.model, scenario.task, scenario.seq_len, scenario.lora_rank) == (
        "meta-llama/Meta-Llama-3-8B-Instruct",
        "lora",
        2048,
        8,
    )
    assert answer.estimate is not None and total_of(scenario) in answer.summary
    assert (
        "Read your paste as **llamafactory-yaml**" in answer.answer
        and "`dataset`: no effect" in answer.answer
    )


def test_an_oom_alone_is_diagnosed_with_its_figures() -> None:
    answer = ask(f"```\n{OOM}```")
    assert answer.asked is not None and answer.asked.kind == "diagnose"
    assert answer.asked.observed["requested_bytes"] == 2_104_533_975
    assert answer.asked.observed["reserved_unallocated_bytes"] == 6_420_976_108
    assert answer.source is not None and answer.source.format == "cuda-oom"
    assert answer.estimate is None
    assert "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True`: 5.98 GiB" in answer.answer
    assert "Another process holds 29.54 GiB" in answer.answer  # 29.04 GiB + 512 MiB
    assert answer.summary.startswith("PyTorch asked for 1.96 GiB on a 79.15 GiB card")


def test_an_oom_with_its_config_is_reconciled_with_our_estimate() -> None:
    config = (FIXTURES / "llamafactory-yaml/llama3_full_sft_ds3.yaml").read_text(encoding="utf-8")
    answer = ask(f"my run died:\n```yaml\n{config}```\n```\n{OOM}```")
    assert answer.asked is not None and answer.asked.kind == "diagnose"
    scenario = answer.scenario
    assert (
        scenario is not None and scenario.task == "full_finetune" and scenario.gpu == "79gb"
    )  # 79.15 GiB card
    assert answer.estimate is not None
    peak = fmt_gib(answer.estimate.per_gpu.tensor_peak_bytes)
    assert f"Our estimate of this job: tensor peak {peak}" in answer.answer
    assert "It failed at 43.66 GiB (41.70 GiB held + 1.96 GiB asked)" in answer.answer


def test_a_vllm_error_gets_the_length_its_pool_holds() -> None:
    log = (FIXTURES / "vllm-log/kv_error.txt").read_text(encoding="utf-8")
    answer = ask(f"```\n{log}```")
    assert answer.asked is not None and answer.asked.observed["max_model_len_estimate"] == 87840
    assert "Start vLLM with `--max-model-len 87840`" in answer.answer
    assert (
        "vLLM needs 24.00 GiB of KV cache for one sequence of 262144 tokens but has 8.04 GiB" in answer.answer
    )


def test_nvidia_smi_names_the_busy_card() -> None:
    table = (FIXTURES / "nvidia-smi/h100x2_busy.txt").read_text(encoding="utf-8")
    answer = ask(f"Llama-3.1-8B inference, will it fit?\n```\n{table}```")
    assert answer.asked is not None and answer.asked.observed["used_bytes"] == [30123 * 2**20, 4 * 2**20]
    assert answer.scenario is not None and (answer.scenario.gpu, answer.scenario.num_gpus) == ("h100-80gb", 2)
    assert "Processes already hold 29.42 GiB on GPU 0" in answer.answer
    assert "PID 41237 (python3) holds 29.40 GiB on GPU 0" in answer.answer


def test_malformed_yaml_in_a_code_block_says_where() -> None:
    with pytest.raises(ScenarioError) as caught:
        ask(
            "```yaml\nbase_model: NousResearch/Llama-3.2-1B\nlora_target_modules: [q_proj, v_proj\nmicro_batch_size: 2\n```"
        )
    assert "line 3, column 17" in str(caught.value)


def test_an_unknown_paste_lists_the_accepted_formats() -> None:
    with pytest.raises(ScenarioError) as caught:
        ask("```\nsome: thing\nelse: entirely\n```")
    assert "Accepted formats: llamafactory-yaml, llamafactory-cli, axolotl-yaml" in str(caught.value)


def test_chinese_sentence_gets_chinese_paste_texts() -> None:
    answer = ask(f"两张4090能跑吗？\n```yaml\n{LORA_YAML}```")
    assert answer.language == "zh" and "已按 **llamafactory-yaml** 读取" in answer.answer
    assert answer.scenario is not None and answer.scenario.num_gpus == 2


# --- the command line ---------------------------------------------------------------------------------------
def test_estimate_from_a_file_prints_what_was_read_and_the_estimate(
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = FIXTURES / "axolotl-yaml/qlora-1b.yml"
    assert main(["estimate", "--from", str(path), "--json", "--no-plan"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert (
        document["source"]["format"] == "axolotl-yaml" and document["source"]["used"]["lora_r"] == "lora_rank"
    )
    scenario = Scenario.model_validate(document["scenario"])
    assert (
        document["estimate"]["per_gpu"]["total_bytes"]
        == estimate_any_model(scenario, plan=False).per_gpu.total_bytes
    )
    assert main(["estimate", "--from", str(FIXTURES / "cuda-oom/oom_single.txt")]) == 0
    assert "PyTorch asked for 4.00 GiB on a 23.53 GiB card" in capsys.readouterr().out


def test_estimate_from_bad_input_exits_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "train.yaml"
    bad.write_text(
        "base_model: x\nlora_target_modules: [q_proj, v_proj\nmicro_batch_size: 2\n", encoding="utf-8"
    )
    assert main(["estimate", "--from", str(bad), "--format", "axolotl-yaml"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "line 3, column 17" in err
    assert main(["estimate", "--from", str(bad), "--format", "helm-chart"]) == 2
    assert "Accepted formats: llamafactory-yaml" in capsys.readouterr().err


def test_ask_reads_a_paste_from_standard_input() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "VRAMWISE_AGENT": "offline"}
    with open(FIXTURES / "axolotl-yaml/qlora-1b.yml", encoding="utf-8") as stdin:
        done = subprocess.run(
            [sys.executable, "-m", "service.cli", "ask", "will it fit on a T4?", "--json"],
            stdin=stdin,
            capture_output=True,
            text=True,
            timeout=120,
            cwd=ROOT,
            env=env,
            check=False,
        )
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["source"]["format"] == "axolotl-yaml" and answer["scenario"]["gpu"] == "t4"
    assert answer["scenario"]["task"] == "qlora" and answer["scenario"]["seq_len"] == 2048


# --- the OpenAI-compatible API ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def base_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with live_server(create_app(offline_settings(tmp_path_factory.mktemp("paste") / "db.sqlite3"))) as url:
        yield url


def test_openai_api_reads_a_paste(base_url: str) -> None:
    command = (FIXTURES / "vllm-cli/vllm_serve_tp2.sh").read_text(encoding="utf-8")
    with openai.OpenAI(base_url=f"{base_url}/v1", api_key="unused", max_retries=0, timeout=60) as client:
        resp = client.chat.completions.create(
            model="vramwise", messages=[{"role": "user", "content": f"on 4x A100 80GB?\n```\n{command}```"}]
        )
    text = resp.choices[0].message.content or ""
    assert "Read your paste as **vllm-cli**" in text and "`max_num_seqs`: sequences share" in text
    scenario = Scenario(
        model="meta-llama/Llama-3.1-70B-Instruct",
        task="inference",
        engine="vllm",
        tp=4,
        num_gpus=4,
        seq_len=32768,
        gpu_memory_utilization=0.92,
        gpu="a100-80gb",
    )
    assert total_of(scenario) in text


# --- the LLM agent: a paste is read by the parsers, not guessed by the model ------------------------------
def test_the_llm_agent_hands_a_paste_to_the_parsers() -> None:
    from service.agent.factory import build_agent
    from service.settings import Settings
    from tests.fakes.chat_model import say, scripted

    model = scripted(say("a guess that must not be used"))
    agent = build_agent(Settings(openai_api_key=None, openai_base_url=None, agent="auto"), chat_model=model)
    from service.agent.events import DoneEvent

    async def last() -> Answer:  # the LLM agent streams: its done event holds the answer
        events = [e async for e in agent.stream(f"```\n{OOM}```", ConversationState())]
        assert isinstance(events[-1], DoneEvent)
        return events[-1].answer

    answer = asyncio.run(last())
    assert model.calls == []  # the chat model was never asked
    assert answer.asked is not None and answer.asked.kind == "diagnose" and answer.source is not None
    assert answer.asked.observed["free_bytes"] == 1_320_702_444


# --- the web chat's event stream ----------------------------------------------------------------------------
def test_chat_stream_sends_the_asked_event_with_the_source(tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from tests.service_support import parse_sse

    # a training log that ends in the error: longer than the old 4,000-character limit, within 32,000
    progress = "\n".join(
        f"{{'loss': 1.{i:03d}, 'grad_norm': 0.51, 'learning_rate': 2e-05}}" for i in range(90)
    )
    message = f"```\n{progress}\n{OOM}```"
    assert 4000 < len(message) < 32000
    app = create_app(offline_settings(tmp_path / "db.sqlite3"))
    with TestClient(app) as client, client.stream("POST", "/v1/chat", json={"message": message}) as resp:
        assert resp.status_code == 200
        events = parse_sse(resp.iter_lines())
    asked = [e.data for e in events if e.event == "asked"]
    assert len(asked) == 1 and asked[0]["asked"]["kind"] == "diagnose"
    assert asked[0]["asked"]["observed"]["in_use_bytes"] == 51_926_154_609
    assert asked[0]["source"]["format"] == "cuda-oom"
    done = next(e.data for e in events if e.event == "done")
    assert done["source"]["format"] == "cuda-oom" and done["asked"]["kind"] == "diagnose"  # the Answer


def test_a_pasted_deepspeed_file_wins_over_the_name_in_the_command() -> None:
    command = (FIXTURES / "deepspeed-cli/deepspeed_launcher.sh").read_text(
        encoding="utf-8"
    )  # ds_config_zero3.json
    ds = (FIXTURES / "deepspeed-json/zero2_fp16.json").read_text(encoding="utf-8")  # the file: stage 2, fp16
    answer = ask(f"on 8x A100 80GB\n```\n{command}```\n```json\n{ds}```")
    assert (
        answer.scenario is not None
        and answer.scenario.zero_stage == 2
        and answer.scenario.weight_dtype == "fp16"
    )
    assert answer.scenario.batch_size == 8  # the file's train_micro_batch_size_per_gpu, not the command's 1
    why = {item.key: item.why for item in answer.source.ignored} if answer.source else {}
    assert why["per_device_train_batch_size"] == why["deepspeed"] == "overridden_by_paste"
    assert answer.source is not None and answer.source.used["zero_optimization.stage"] == "zero_stage"


def test_memory_summary_peak_is_set_beside_our_tensor_peak() -> None:
    summary = (FIXTURES / "cuda-oom/memory_summary.txt").read_text(encoding="utf-8")
    answer = ask(f"llama-2-7b lora on a 4090, batch 4\n```\n{summary}```")
    assert answer.estimate is not None and answer.asked is not None and answer.asked.kind == "diagnose"
    ours = answer.estimate.per_gpu.tensor_peak_bytes
    share = f"{(ours - 18911 * 2**20) / (18911 * 2**20):+.1%}"  # the summary's Peak Usage of Allocated memory
    assert (
        f"The summary's peak allocated, 18.47 GiB, is torch.cuda.max_memory_allocated(); our tensor peak for this job is {fmt_gib(ours)} ({share})"
        in answer.answer
    )


def test_estimate_from_a_log_of_an_unknown_model_still_diagnoses(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["estimate", "--from", str(FIXTURES / "vllm-log/kv_error.txt")]) == 0
    out = capsys.readouterr().out
    assert (
        "Start vLLM with `--max-model-len 87840`" in out
        and "unknown model 'Qwen3-VL-30B-A3B-Instruct'" in out
    )
