"""Thirty multi-turn conversations (English and Chinese) through the real OfflineAgent and ConversationState.

Each turn lists what it changes; the test checks the whole scenario after every turn (the rest of the previous
scenario is kept), that the answer's figures are the estimator's for that scenario, and that the answer leads
with its summary.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from service.agent.base import ConversationState
from service.agent.events import DoneEvent
from service.agent.offline import OfflineAgent
from tools.estimator import estimate
from tools.scenario import Scenario
from tools.units import fmt_gib

Turn = tuple[str, dict[str, Any]]  # question, fields it sets (None: the field is dropped)

_L8 = {"model": "llama-3-8b", "task": "lora", "gpu": "4090", "num_gpus": 1, "batch_size": 4}
_Q7 = {"model": "qwen2.5-7b", "task": "full_finetune", "gpu": "a100", "num_gpus": 1}

CONVERSATIONS: list[list[Turn]] = [
    # English
    [
        ("LoRA llama-3-8b on a 4090, batch 4", _L8),
        ("and on two of them?", {"num_gpus": 2}),
        ("what if I had 4 of those", {"num_gpus": 4}),
        ("same but 8k context", {"seq_len": 8192}),
    ],
    [
        ("Full fine-tune Qwen2.5-7B on one A100", _Q7),
        ("and with ZeRO-3 on 8 GPUs?", {"zero_stage": 3, "num_gpus": 8}),
        ("without offload", {"offload_optimizer": "none"}),
    ],
    [
        (
            "serve llama 3 70b on 2xH100 at 8k context",
            {"model": "llama-3-70b", "task": "inference", "gpu": "h100", "num_gpus": 2, "seq_len": 8192},
        ),
        ("what about in fp8?", {"weight_dtype": "fp8"}),
        ("and 32k context instead", {"seq_len": 32768}),
    ],
    [
        (
            "mistral 7b lora on a 3090, bs 2",
            {"model": "mistral-7b", "task": "lora", "gpu": "3090", "num_gpus": 1, "batch_size": 2},
        ),
        ("what about qlora?", {"task": "qlora"}),
        ("and batch 8?", {"batch_size": 8}),
    ],
    [
        (
            "Qwen2.5-14B inference on one 4090",
            {"model": "qwen2.5-14b", "task": "inference", "gpu": "4090", "num_gpus": 1},
        ),
        ("what about Q4_K_M?", {"weight_dtype": "q4_k_m"}),
        ("and on a 3060 instead", {"gpu": "3060"}),
    ],
    [
        (
            "llama 3 8b full ft on 8xH100",
            {"model": "llama-3-8b", "task": "full_finetune", "gpu": "h100", "num_gpus": 8},
        ),
        ("with gradient checkpointing?", {"gradient_checkpointing": True}),
        ("and micro batch 8", {"batch_size": 8}),
    ],
    [
        (
            "Yi-34B LoRA on 2 A100, seq 4096",
            {"model": "yi-34b", "task": "lora", "gpu": "a100", "num_gpus": 2, "seq_len": 4096},
        ),
        ("what if I use rank 64 on all linear layers?", {"lora_rank": 64, "lora_targets": ["all-linear"]}),
        ("and on 4 of them?", {"num_gpus": 4}),
    ],
    [
        ("Qwen2.5-7B GRPO on 8 H100", {"model": "qwen2.5-7b", "task": "grpo", "gpu": "h100", "num_gpus": 8}),
        ("what about 16 generations per prompt?", {"num_generations": 16}),
        ("and with zero stage 3", {"zero_stage": 3}),
    ],
    [
        (
            "Llama-3.1-8B inference at 128k context on an H100",
            {"model": "llama-3.1-8b", "task": "inference", "gpu": "h100", "num_gpus": 1, "seq_len": 131072},
        ),
        ("and with an fp8 kv cache?", {"kv_dtype": "fp8"}),
        ("what about batch 4", {"batch_size": 4}),
    ],
    [
        ("gemma 2 9b lora on a T4", {"model": "gemma-2-9b", "task": "lora", "gpu": "t4", "num_gpus": 1}),
        ("what about Qwen2.5-7B instead?", {"model": "qwen2.5-7b"}),
        ("and 2k context", {"seq_len": 2048}),
    ],
    [
        (
            "DPO llama 3 8b on 4 A100 80GB",
            {"model": "llama-3-8b", "task": "dpo", "gpu": "a100-80gb", "num_gpus": 4},
        ),
        ("and on 8 of those?", {"num_gpus": 8}),
        ("with ZeRO-3", {"zero_stage": 3}),
    ],
    [
        (
            "Qwen3-14B inference on one L40S, 16k context",
            {"model": "qwen3-14b", "task": "inference", "gpu": "l40s", "num_gpus": 1, "seq_len": 16384},
        ),
        ("how about 64 concurrent users?", {"batch_size": 64}),
        ("and on two of them?", {"num_gpus": 2}),
    ],
    [
        (
            "llama-2-13b full finetune on 4 A100, zero 2",
            {"model": "llama-2-13b", "task": "full_finetune", "gpu": "a100", "num_gpus": 4, "zero_stage": 2},
        ),
        ("with 8-bit adam?", {"optimizer": "adamw_8bit"}),
        ("and without gradient checkpointing", {"gradient_checkpointing": False}),
    ],
    [
        (
            "Qwen2.5-32B AWQ on one 4090 with vllm",
            {
                "model": "qwen2.5-32b",
                "task": "inference",
                "gpu": "4090",
                "num_gpus": 1,
                "quant_method": "awq",
                "weight_dtype": "int4",
                "engine": "vllm",
            },
        ),
        ("same but 16k context", {"seq_len": 16384}),
        ("and batch of 4", {"batch_size": 4}),
    ],
    [
        ("LoRA Llama-2-7B on a 4090", {"model": "llama-2-7b", "task": "lora", "gpu": "4090", "num_gpus": 1}),
        ("what is the KV cache?", {}),
        ("and with batch 2?", {"batch_size": 2}),
    ],
    # Chinese
    [
        ("Qwen2.5-7B 全参微调 单卡A100", _Q7),
        ("那用两张呢", {"num_gpus": 2}),
        ("换成H100呢", {"gpu": "h100"}),
        ("上下文改成8k呢", {"seq_len": 8192}),
    ],
    [
        ("Llama3-8B LoRA 单卡4090 batch 4", _L8),
        ("那四张呢", {"num_gpus": 4}),
        ("不开梯度检查点呢", {"gradient_checkpointing": False}),
    ],
    [
        (
            "两张4090推理Qwen2.5-32B",
            {"model": "qwen2.5-32b", "task": "inference", "gpu": "4090", "num_gpus": 2},
        ),
        ("换成int4呢", {"weight_dtype": "int4"}),
        ("上下文32k呢", {"seq_len": 32768}),
    ],
    [
        (
            "Qwen2.5-14B QLoRA 单卡3090",
            {"model": "qwen2.5-14b", "task": "qlora", "gpu": "3090", "num_gpus": 1},
        ),
        ("那改成LoRA呢", {"task": "lora"}),
        ("用两张呢", {"num_gpus": 2}),
    ],
    [
        (
            "Yi-34B 全参微调 8张A800 zero3",
            {"model": "yi-34b", "task": "full_finetune", "gpu": "a800", "num_gpus": 8, "zero_stage": 3},
        ),
        ("不开offload呢", {"offload_optimizer": "none"}),
        ("那用16张呢", {"num_gpus": 16}),
    ],
    [
        ("GLM-4-9B 推理 单卡3060", {"model": "glm-4-9b", "task": "inference", "gpu": "3060", "num_gpus": 1}),
        ("用q4_k_m呢", {"weight_dtype": "q4_k_m"}),
        ("上下文改成16k呢", {"seq_len": 16384}),
    ],
    [
        ("千问2.5-7B GRPO 8卡H100", {"model": "qwen2.5-7b", "task": "grpo", "gpu": "h100", "num_gpus": 8}),
        ("每个prompt生成16个回答呢", {"num_generations": 16}),
        ("换成A100呢", {"gpu": "a100"}),
    ],
    [
        (
            "Llama3-8B 推理 单卡4090 上下文128k",
            {"model": "llama-3-8b", "task": "inference", "gpu": "4090", "num_gpus": 1, "seq_len": 131072},
        ),
        ("kv cache 用 fp8 呢", {"kv_dtype": "fp8"}),
        ("那两张呢", {"num_gpus": 2}),
    ],
    [
        (
            "Qwen2.5-72B 部署 8卡A800",
            {"model": "qwen2.5-72b", "task": "inference", "gpu": "a800", "num_gpus": 8},
        ),
        ("换成4张呢", {"num_gpus": 4}),
        ("用fp8呢", {"weight_dtype": "fp8"}),
    ],
    [
        (
            "Baichuan2-13B LoRA 两张3090",
            {"model": "baichuan2-13b", "task": "lora", "gpu": "3090", "num_gpus": 2},
        ),
        ("秩改成64呢", {"lora_rank": 64}),
        ("batch 8 呢", {"batch_size": 8}),
    ],
    [
        (
            "Qwen3-8B 全参微调 4卡H100 zero2",
            {"model": "qwen3-8b", "task": "full_finetune", "gpu": "h100", "num_gpus": 4, "zero_stage": 2},
        ),
        ("改用zero3呢", {"zero_stage": 3}),
        ("用8位adam呢", {"optimizer": "adamw_8bit"}),
    ],
    [
        ("Qwen2.5-7B DPO 8卡A100", {"model": "qwen2.5-7b", "task": "dpo", "gpu": "a100", "num_gpus": 8}),
        ("序列长度4096呢", {"seq_len": 4096}),
        ("那用H800呢", {"gpu": "h800"}),
    ],
    [
        ("Llama3-8B LoRA 单卡A10", {"model": "llama-3-8b", "task": "lora", "gpu": "a10", "num_gpus": 1}),
        ("什么是梯度检查点", {}),
        ("开梯度检查点呢", {"gradient_checkpointing": True}),
    ],
    [
        (
            "Qwen2.5-14B 推理 单卡L40S",
            {"model": "qwen2.5-14b", "task": "inference", "gpu": "l40s", "num_gpus": 1},
        ),
        ("64路并发呢", {"batch_size": 64}),
        ("换成Qwen2.5-7B呢", {"model": "qwen2.5-7b"}),
    ],
    [
        (
            "Llama3-70B QLoRA 两张3090",
            {"model": "llama-3-70b", "task": "qlora", "gpu": "3090", "num_gpus": 2},
        ),
        ("上下文4096呢", {"seq_len": 4096}),
        ("换成单卡A100 80G呢", {"gpu": "a100-80gb", "num_gpus": 1}),
    ],
]


def _ask(agent: OfflineAgent, state: ConversationState, question: str) -> DoneEvent:
    async def run() -> list[Any]:
        return [e async for e in agent.stream(question, state)]

    last = asyncio.run(run())[-1]
    assert isinstance(last, DoneEvent), getattr(last, "message", last)
    state.record_turn(question, last.answer)
    return last


def test_thirty_conversations_half_chinese() -> None:
    assert len(CONVERSATIONS) == 30
    zh = sum(any("\u4e00" <= ch <= "\u9fff" for ch in conv[0][0]) for conv in CONVERSATIONS)
    assert zh == 15


@pytest.mark.parametrize("conversation", CONVERSATIONS, ids=lambda c: c[0][0][:40])
def test_conversation(conversation: list[Turn]) -> None:
    agent, state = OfflineAgent(preload=False), ConversationState(conversation_id="suite")
    expected: dict[str, Any] = {}
    for question, changes in conversation:
        done = _ask(agent, state, question)
        answer = done.answer
        if not changes and expected:  # a concept question in the middle: answered, scenario kept
            assert answer.scenario is None and state.scenario is not None
            assert state.scenario.stated() == expected
            continue
        expected = {**expected, **changes}
        assert answer.scenario is not None, question
        assert answer.scenario.stated() == expected, question
        reference = estimate(Scenario.model_validate(expected), plan=False)
        assert answer.estimate is not None
        assert answer.estimate.per_gpu.total_bytes == reference.per_gpu.total_bytes
        assert fmt_gib(reference.per_gpu.total_bytes) in answer.summary
        assert answer.answer.split("\n\n", 1)[1].startswith(answer.summary)
