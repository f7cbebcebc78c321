"""The realistic-question suite: questions as people type them (half Chinese), each with every field it states.

`ESTIMATES`: (question, the exact stated Scenario fields, the figure it asks for or None).
`CONCEPTS`: (question, the knowledge-base topic it must be answered with).
Covered forms: GPU counts glued to or around the card, negation of every option, GGUF/EXL2/AWQ/GPTQ and
"q8"/"8-bit" names, modifiers that belong to the KV cache or to the number of generations, "full ft",
"LoRA or QLoRA", training words without a task word, stated shapes, the figure asked for, concept questions;
and (tests/parser_suite_round2.py) LoRA rank forms, RL lengths, GPUs over nodes, layer offload, model names.
The tests (tests/test_parser_suite.py, tests/test_self_consistency.py, tests/test_llm_parser_suite.py) and the
answer-length benchmark (benchmarks/answer_length.py) read this one list.
"""

from __future__ import annotations

import re
from typing import Any

from tests.parser_suite_round2 import CASES as ROUND2

Case = tuple[str, dict[str, Any], str | None]

# (text as typed, parsed model id)
_MODELS = [
    ("Qwen2.5-7B", "qwen2.5-7b"),
    ("llama 3 8b", "llama-3-8b"),
    ("Llama-3.1-70B", "llama-3.1-70b"),
    ("mistral 7b", "mistral-7b"),
    ("Yi-34B", "yi-34b"),
    ("qwen3-14b", "qwen3-14b"),
    ("Llama-2-13B", "llama-2-13b"),
    ("gemma 2 9b", "gemma-2-9b"),
]
_ZH_MODELS = [
    ("千问2.5-7B", "qwen2.5-7b"),
    ("Qwen2.5-14B", "qwen2.5-14b"),
    ("Llama3-8B", "llama-3-8b"),
    ("Qwen3-8B", "qwen3-8b"),
    ("Yi-34B", "yi-34b"),
    ("Qwen2.5-32B", "qwen2.5-32b"),
    ("GLM-4-9B", "glm-4-9b"),
    ("Baichuan2-13B", "baichuan2-13b"),
]


def _cycle(items: list[Any], i: int) -> Any:
    return items[i % len(items)]


# --- 1. GPU counts in every form -----------------------------------------------------------------------
_EN_COUNTS = [
    ("8xH100", "h100", 8),
    ("8 x H100", "h100", 8),
    ("8*A100", "a100", 8),
    ("H100 x8", "h100", 8),
    ("an 8-GPU H100 node", "h100", 8),
    ("a pair of 4090s", "4090", 2),
    ("dual 3090", "3090", 2),
    ("4xA100 80GB", "a100-80gb", 4),
    ("2x RTX 4090", "4090", 2),
    ("4 × L40S", "l40s", 4),
    ("8xH800", "h800", 8),
    ("four A100s", "a100", 4),
    ("16xH100", "h100", 16),
    ("2*3090", "3090", 2),
    ("A800 x 4", "a800", 4),
]
_EN_COUNT_FORMS = [
    ("Full fine-tune {m} on {g}, fits?", {"task": "full_finetune"}),
    ("serve {m} with vllm on {g}", {"task": "inference"}),
    ("LoRA {m} on {g} with batch 8", {"task": "lora", "batch_size": 8}),
    ("can I run {m} inference on {g}?", {"task": "inference"}),
]
_ZH_COUNTS = [
    ("一台8卡H800", "h800", 8),
    ("三张3090", "3090", 3),
    ("两块4090", "4090", 2),
    ("8卡A100", "a100", 8),
    ("4090双卡", "4090", 2),
    ("H100*8", "h100", 8),
    ("四张A800", "a800", 4),
    ("单卡4090", "4090", 1),
    ("8xH20", "h20", 8),
    ("2张L40S", "l40s", 2),
    ("十六张H100", "h100", 16),
    ("两台8卡A800", "a800", 16),
    ("4 x 3090", "3090", 4),
    ("双卡A6000", "a6000", 2),
    ("6张4090", "4090", 6),
]
_ZH_COUNT_FORMS = [
    ("{g}能全参微调{m}吗", {"task": "full_finetune"}),
    ("用{g}部署{m}推理够不够", {"task": "inference"}),
    ("{m} LoRA 微调，{g}，batch 4", {"task": "lora", "batch_size": 4}),
    ("{g}跑{m}推理需要多少显存", {"task": "inference"}),
]


def _count_cases() -> list[Case]:
    out: list[Case] = []
    for i, (g, gpu, n) in enumerate(_EN_COUNTS):
        for j in (0, 1, 2):
            form, fields = _cycle(_EN_COUNT_FORMS, i + j * 2 + j // 2)
            text, model = _cycle(_MODELS, i * 3 + j)
            out.append(
                (form.format(m=text, g=g), {**fields, "model": model, "gpu": gpu, "num_gpus": n}, None)
            )
    for i, (g, gpu, n) in enumerate(_ZH_COUNTS):
        for j in (0, 1, 2):
            form, fields = _cycle(_ZH_COUNT_FORMS, i + j * 2 + j // 2)
            text, model = _cycle(_ZH_MODELS, i * 3 + j)
            out.append(
                (form.format(m=text, g=g), {**fields, "model": model, "gpu": gpu, "num_gpus": n}, None)
            )
    return out


# --- 2. negation of every option ----------------------------------------------------------------------------
_NEGATIONS: list[Case] = [
    # offload
    (
        "Mixtral 8x7B full finetune, how many A100 80GB do I need with ZeRO-3 without offload?",
        {
            "task": "full_finetune",
            "zero_stage": 3,
            "offload_optimizer": "none",
            "model": "mixtral-8x7b",
            "gpu": "a100-80gb",
        },
        "min_gpus",
    ),
    (
        "llama 3 8b full fine-tune on 4 A100, zero 2, no offload",
        {
            "task": "full_finetune",
            "zero_stage": 2,
            "offload_optimizer": "none",
            "model": "llama-3-8b",
            "gpu": "a100",
            "num_gpus": 4,
        },
        None,
    ),
    (
        "Qwen2.5-14B full finetune ZeRO-3 on 8 H100, offload disabled",
        {
            "task": "full_finetune",
            "zero_stage": 3,
            "offload_optimizer": "none",
            "model": "qwen2.5-14b",
            "gpu": "h100",
            "num_gpus": 8,
        },
        None,
    ),
    (
        "Yi-34B full finetune on 8 A800 with zero-3 and cpu offload turned off",
        {
            "task": "full_finetune",
            "zero_stage": 3,
            "offload_optimizer": "none",
            "model": "yi-34b",
            "gpu": "a800",
            "num_gpus": 8,
        },
        None,
    ),
    (
        "llama-3-70b full finetune on 16 H100, zero3, offload: none",
        {
            "task": "full_finetune",
            "zero_stage": 3,
            "offload_optimizer": "none",
            "model": "llama-3-70b",
            "gpu": "h100",
            "num_gpus": 16,
        },
        None,
    ),
    (
        "mistral 7b full fine tune with ZeRO-2 on one 4090 with CPU offload",
        {
            "task": "full_finetune",
            "zero_stage": 2,
            "offload_optimizer": "cpu",
            "model": "mistral-7b",
            "gpu": "4090",
            "num_gpus": 1,
        },
        None,
    ),
    (
        "Yi-34B 全参微调,8张4090,不用offload,可以吗",
        {
            "task": "full_finetune",
            "offload_optimizer": "none",
            "model": "yi-34b",
            "gpu": "4090",
            "num_gpus": 8,
        },
        None,
    ),
    (
        "Qwen2.5-32B 全参微调 8卡A100 ZeRO-3 不开offload",
        {
            "task": "full_finetune",
            "zero_stage": 3,
            "offload_optimizer": "none",
            "model": "qwen2.5-32b",
            "gpu": "a100",
            "num_gpus": 8,
        },
        None,
    ),
    (
        "Llama3-8B 全参训练 单卡A100 不卸载",
        {
            "task": "full_finetune",
            "offload_optimizer": "none",
            "model": "llama-3-8b",
            "gpu": "a100",
            "num_gpus": 1,
        },
        None,
    ),
    (
        "千问2.5-7B 全量微调，4张4090，zero2，关闭offload",
        {
            "task": "full_finetune",
            "zero_stage": 2,
            "offload_optimizer": "none",
            "model": "qwen2.5-7b",
            "gpu": "4090",
            "num_gpus": 4,
        },
        None,
    ),
    (
        "Qwen2.5-7B 全参微调 两张4090 ZeRO-3 开CPU offload",
        {
            "task": "full_finetune",
            "zero_stage": 3,
            "offload_optimizer": "cpu",
            "model": "qwen2.5-7b",
            "gpu": "4090",
            "num_gpus": 2,
        },
        None,
    ),
    # written the way Chinese forum posts ask
    (
        "InternLM2.5-7B 全参微调 两张A100 80G ZeRO-2 batch 4 序列 2048",
        {
            "task": "full_finetune",
            "batch_size": 4,
            "seq_len": 2048,
            "zero_stage": 2,
            "model": "internlm2.5-7b",
            "gpu": "a100-80gb",
            "num_gpus": 2,
        },
        None,
    ),
    (
        "Baichuan2-13B QLoRA 微调 一张3090 rank 64 batch 2 序列 2048",
        {
            "task": "qlora",
            "lora_rank": 64,
            "batch_size": 2,
            "seq_len": 2048,
            "model": "baichuan2-13b",
            "gpu": "3090",
            "num_gpus": 1,
        },
        None,
    ),
    (
        "Qwen2.5-32B 全参微调 16张H800 ZeRO-3 micro batch 1 序列 8192 开梯度检查点",
        {
            "task": "full_finetune",
            "batch_size": 1,
            "seq_len": 8192,
            "gradient_checkpointing": True,
            "zero_stage": 3,
            "model": "qwen2.5-32b",
            "gpu": "h800",
            "num_gpus": 16,
        },
        None,
    ),
    (
        "GLM-4-9B 推理 一张3090 上下文 8k batch 4",
        {
            "task": "inference",
            "batch_size": 4,
            "seq_len": 8192,
            "model": "glm-4-9b",
            "gpu": "3090",
            "num_gpus": 1,
        },
        None,
    ),
    (
        "Qwen2.5-14B 用 LoRA 微调，rank 16，一张A100 80G，batch 4，序列长度 4096，够吗",
        {
            "task": "lora",
            "lora_rank": 16,
            "batch_size": 4,
            "seq_len": 4096,
            "model": "qwen2.5-14b",
            "gpu": "a100-80gb",
            "num_gpus": 1,
        },
        None,
    ),
    (
        "三张3090跑Llama-3-8B全参微调，开梯度检查点，ZeRO-3",
        {
            "task": "full_finetune",
            "gradient_checkpointing": True,
            "zero_stage": 3,
            "model": "llama-3-8b",
            "gpu": "3090",
            "num_gpus": 3,
        },
        None,
    ),
    (
        "Mixtral 8x7B 用 QLoRA 微调 两张A6000 行不行",
        {"task": "qlora", "model": "mixtral-8x7b", "gpu": "a6000", "num_gpus": 2},
        None,
    ),
    (
        "Llama-3.1-70B 部署 4张H100 vllm 并发16 上下文8k",
        {
            "task": "inference",
            "batch_size": 16,
            "seq_len": 8192,
            "model": "llama-3.1-70b",
            "gpu": "h100",
            "num_gpus": 4,
        },
        None,
    ),
    (
        "Qwen2.5-7B DPO 训练 8卡A100 batch 2 序列 2048 不用offload",
        {
            "task": "dpo",
            "batch_size": 2,
            "seq_len": 2048,
            "offload_optimizer": "none",
            "model": "qwen2.5-7b",
            "gpu": "a100",
            "num_gpus": 8,
        },
        None,
    ),
    (
        "Yi-1.5-34B LoRA 微调 四张4090 开梯度检查点 batch 1 序列 4096",
        {
            "task": "lora",
            "batch_size": 1,
            "seq_len": 4096,
            "gradient_checkpointing": True,
            "model": "yi-34b",
            "gpu": "4090",
            "num_gpus": 4,
        },
        None,
    ),
    (
        "GLM-4-9B 全参微调 8张A800 不要offload",
        {
            "task": "full_finetune",
            "offload_optimizer": "none",
            "model": "glm-4-9b",
            "gpu": "a800",
            "num_gpus": 8,
        },
        None,
    ),
    # gradient checkpointing
    (
        "llama 3 8b full ft without gradient checkpointing, bs 8 seq 2048 on one h100 — fits?",
        {
            "task": "full_finetune",
            "batch_size": 8,
            "seq_len": 2048,
            "gradient_checkpointing": False,
            "model": "llama-3-8b",
            "gpu": "h100",
            "num_gpus": 1,
        },
        None,
    ),
    (
        "Qwen2.5-7B LoRA on a 4090, no gradient checkpointing, batch 2",
        {
            "task": "lora",
            "batch_size": 2,
            "gradient_checkpointing": False,
            "model": "qwen2.5-7b",
            "gpu": "4090",
            "num_gpus": 1,
        },
        None,
    ),
    (
        "mistral 7b lora, grad ckpt off, seq 4096, one A100",
        {
            "task": "lora",
            "seq_len": 4096,
            "gradient_checkpointing": False,
            "model": "mistral-7b",
            "gpu": "a100",
            "num_gpus": 1,
        },
        None,
    ),
    (
        "Llama-2-13B full finetune on 8 A100 with gradient checkpointing disabled",
        {
            "task": "full_finetune",
            "gradient_checkpointing": False,
            "model": "llama-2-13b",
            "gpu": "a100",
            "num_gpus": 8,
        },
        None,
    ),
    (
        "Qwen2.5-14B LoRA 单卡A100 不开梯度检查点 batch 4",
        {
            "task": "lora",
            "batch_size": 4,
            "gradient_checkpointing": False,
            "model": "qwen2.5-14b",
            "gpu": "a100",
            "num_gpus": 1,
        },
        None,
    ),
    (
        "Llama3-8B 全参微调 8卡H100 关闭梯度检查点",
        {
            "task": "full_finetune",
            "gradient_checkpointing": False,
            "model": "llama-3-8b",
            "gpu": "h100",
            "num_gpus": 8,
        },
        None,
    ),
    (
        "Qwen3-8B LoRA 4090 开启梯度检查点 序列长度 4096",
        {"task": "lora", "seq_len": 4096, "gradient_checkpointing": True, "model": "qwen3-8b", "gpu": "4090"},
        None,
    ),
    (
        "Baichuan2-13B LoRA 两张3090 不用重计算",
        {
            "task": "lora",
            "gradient_checkpointing": False,
            "model": "baichuan2-13b",
            "gpu": "3090",
            "num_gpus": 2,
        },
        None,
    ),
    # flash attention
    (
        "llama 3 8b lora on a 4090 without flash attention, seq 4096",
        {
            "task": "lora",
            "seq_len": 4096,
            "attention": "eager",
            "model": "llama-3-8b",
            "gpu": "4090",
            "num_gpus": 1,
        },
        None,
    ),
    (
        "Qwen2.5-7B full finetune on 2 A100, no flash-attn",
        {"task": "full_finetune", "attention": "eager", "model": "qwen2.5-7b", "gpu": "a100", "num_gpus": 2},
        None,
    ),
    (
        "Qwen2.5-7B LoRA 单卡4090 不开flash attention",
        {"task": "lora", "attention": "eager", "model": "qwen2.5-7b", "gpu": "4090", "num_gpus": 1},
        None,
    ),
    (
        "Llama3-8B 在一张3090上做LoRA，用 flash attention 2",
        {"task": "lora", "num_gpus": 1, "attention": "flash", "model": "llama-3-8b", "gpu": "3090"},
        None,
    ),
    # ZeRO
    (
        "Qwen2.5-7B full finetune on 8 A100 without ZeRO",
        {"task": "full_finetune", "zero_stage": 0, "model": "qwen2.5-7b", "gpu": "a100", "num_gpus": 8},
        None,
    ),
    (
        "llama 3 8b full ft on 4 H100, plain DDP, no deepspeed",
        {"task": "full_finetune", "zero_stage": 0, "model": "llama-3-8b", "gpu": "h100", "num_gpus": 4},
        None,
    ),
    (
        "Qwen2.5-7B 全参微调 8卡A100 不用deepspeed",
        {"task": "full_finetune", "zero_stage": 0, "model": "qwen2.5-7b", "gpu": "a100", "num_gpus": 8},
        None,
    ),
    (
        "Llama3-8B 全参微调 4张H100 不开zero",
        {"task": "full_finetune", "zero_stage": 0, "model": "llama-3-8b", "gpu": "h100", "num_gpus": 4},
        None,
    ),
    # LoRA vs full
    (
        "qwen2.5-7b 全参不要LoRA 在A100上",
        {"task": "full_finetune", "model": "qwen2.5-7b", "gpu": "a100"},
        None,
    ),
    (
        "Qwen2.5-7B full fine-tune, not LoRA, on 8 H100",
        {"task": "full_finetune", "model": "qwen2.5-7b", "gpu": "h100", "num_gpus": 8},
        None,
    ),
    (
        "llama 3 8b full ft on one h100",
        {"task": "full_finetune", "model": "llama-3-8b", "gpu": "h100", "num_gpus": 1},
        None,
    ),
    (
        "Llama-3.1-70B full ft on 16 H100 zero3",
        {"task": "full_finetune", "zero_stage": 3, "model": "llama-3.1-70b", "gpu": "h100", "num_gpus": 16},
        None,
    ),
    (
        "Qwen2.5-14B 全参微调，不用LoRA，8卡A800",
        {"task": "full_finetune", "model": "qwen2.5-14b", "gpu": "a800", "num_gpus": 8},
        None,
    ),
    (
        "Llama3-8B 全量训练 不要lora 4张A100",
        {"task": "full_finetune", "model": "llama-3-8b", "gpu": "a100", "num_gpus": 4},
        None,
    ),
    (
        "can I LoRA llama-3-8b on a 4090 or do I have to go qlora?",
        {"task": "lora", "model": "llama-3-8b", "gpu": "4090", "num_gpus": 1},
        None,
    ),
    (
        "Qwen2.5-14B: LoRA or QLoRA on one 3090?",
        {"task": "lora", "model": "qwen2.5-14b", "gpu": "3090", "num_gpus": 1},
        None,
    ),
    (
        "Qwen2.5-14B 在一张4090上能做LoRA吗，还是只能QLoRA",
        {"task": "lora", "model": "qwen2.5-14b", "gpu": "4090", "num_gpus": 1},
        None,
    ),
    (
        "Llama3-8B 单卡3090 用QLoRA不用LoRA",
        {"task": "qlora", "model": "llama-3-8b", "gpu": "3090", "num_gpus": 1},
        None,
    ),
]

# --- 3. quantisation names people use --------------------------------------------------------------------------
_QUANT: list[Case] = [
    (
        "can my 3060 12gb run llama3 8b q8 lol",
        {"task": "inference", "weight_dtype": "q8_0", "model": "llama-3-8b", "gpu": "3060-12gb"},
        None,
    ),
    (
        "llama-3-70b Q4_K_M on two 3090",
        {"weight_dtype": "q4_k_m", "model": "llama-3-70b", "gpu": "3090", "num_gpus": 2},
        None,
    ),
    (
        "mistral 7b IQ3_XS on my 8gb card",
        {"weight_dtype": "iq3_xs", "model": "mistral-7b", "gpu": "rtx-4060"},
        None,
    ),
    (
        "llama.cpp qwen2.5-32b q5_k_m on a 4090, 8k ctx",
        {"weight_dtype": "q5_k_m", "seq_len": 8192, "model": "qwen2.5-32b", "gpu": "4090", "num_gpus": 1},
        None,
    ),
    (
        "Qwen2.5-14B-Instruct-Q6_K.gguf on a 3090",
        {"weight_dtype": "q6_k", "model": "qwen2.5-14b", "gpu": "3090", "num_gpus": 1},
        None,
    ),
    (
        "llama 3 8b q4_0 on a 4060",
        {"weight_dtype": "q4_0", "model": "llama-3-8b", "gpu": "4060", "num_gpus": 1},
        None,
    ),
    (
        "llama-3.1-70b IQ2_XXS on one 4090, will it run?",
        {
            "task": "inference",
            "weight_dtype": "iq2_xxs",
            "model": "llama-3.1-70b",
            "gpu": "4090",
            "num_gpus": 1,
        },
        None,
    ),
    (
        "Yi-34B Q3_K_M gguf on a 3090 24gb",
        {"weight_dtype": "q3_k_m", "model": "yi-34b", "gpu": "3090-24gb", "num_gpus": 1},
        None,
    ),
    (
        "Qwen2.5-72B q2_k on two 3090s",
        {"weight_dtype": "q2_k", "model": "qwen2.5-72b", "gpu": "3090", "num_gpus": 2},
        None,
    ),
    (
        "gemma 2 27b Q5_K_S on a 4090",
        {"weight_dtype": "q5_k_s", "model": "gemma-2-27b", "gpu": "4090", "num_gpus": 1},
        None,
    ),
    (
        "Llama-3.1-70B Q4_K_S across 2x 4090",
        {"weight_dtype": "q4_k_s", "model": "llama-3.1-70b", "gpu": "4090", "num_gpus": 2},
        None,
    ),
    (
        "qwen3-32b iq4_xs on a 4090 with 16k context",
        {"weight_dtype": "iq4_xs", "seq_len": 16384, "model": "qwen3-32b", "gpu": "4090", "num_gpus": 1},
        None,
    ),
    (
        "llama-3-70b exl2 4.65bpw on 2x 3090",
        {"weight_dtype": "exl2", "weight_bits": 4.65, "model": "llama-3-70b", "gpu": "3090", "num_gpus": 2},
        None,
    ),
    (
        "Qwen2.5-32B EXL2 at 5.0 bpw on one 4090",
        {"weight_dtype": "exl2", "weight_bits": 5.0, "model": "qwen2.5-32b", "gpu": "4090", "num_gpus": 1},
        None,
    ),
    (
        "exllamav2 llama 3 8b 6.0bpw on a 3060",
        {"weight_dtype": "exl2", "weight_bits": 6.0, "model": "llama-3-8b", "gpu": "3060", "num_gpus": 1},
        None,
    ),
    (
        "how much vram do i need to serve Qwen2.5-32B-Instruct-AWQ with vllm at 32k context, batch of 8 concurrent users?",
        {
            "task": "inference",
            "quant_method": "awq",
            "weight_dtype": "int4",
            "batch_size": 8,
            "seq_len": 32768,
            "model": "qwen2.5-32b",
        },
        None,
    ),
    (
        "serve Llama-3.1-70B-Instruct-GPTQ-Int4 on 2 A100",
        {
            "task": "inference",
            "quant_method": "gptq",
            "weight_dtype": "int4",
            "model": "llama-3.1-70b",
            "gpu": "a100",
            "num_gpus": 2,
        },
        None,
    ),
    (
        "Qwen2.5-7B-Instruct-GPTQ-Int8 inference on a T4",
        {
            "task": "inference",
            "quant_method": "gptq",
            "weight_dtype": "int8",
            "model": "qwen2.5-7b",
            "gpu": "t4",
            "num_gpus": 1,
        },
        None,
    ),
    (
        "llama 3 8b in 8-bit on a 3060 12gb",
        {"weight_dtype": "int8", "model": "llama-3-8b", "gpu": "3060-12gb", "num_gpus": 1},
        None,
    ),
    (
        "mistral 7b load_in_8bit on a T4",
        {
            "task": "inference",
            "quant_method": "bnb",
            "weight_dtype": "int8",
            "model": "mistral-7b",
            "gpu": "t4",
            "num_gpus": 1,
        },
        None,
    ),
    (
        "Llama3-8B 用 Q4_K_M 量化，3060 12G 能跑吗",
        {"task": "inference", "weight_dtype": "q4_k_m", "model": "llama-3-8b", "gpu": "3060-12gb"},
        None,
    ),
    (
        "Qwen2.5-32B q5_k_m 单卡4090 推理",
        {"task": "inference", "weight_dtype": "q5_k_m", "model": "qwen2.5-32b", "gpu": "4090", "num_gpus": 1},
        None,
    ),
    (
        "Qwen2.5-72B 的 IQ3_XS 两张3090 能跑吗",
        {"task": "inference", "weight_dtype": "iq3_xs", "model": "qwen2.5-72b", "gpu": "3090", "num_gpus": 2},
        None,
    ),
    (
        "Yi-34B Q8_0 两张4090 部署",
        {"task": "inference", "weight_dtype": "q8_0", "model": "yi-34b", "gpu": "4090", "num_gpus": 2},
        None,
    ),
    (
        "GLM-4-9B q6_k 在 3060 上跑",
        {"task": "inference", "weight_dtype": "q6_k", "model": "glm-4-9b", "gpu": "3060"},
        None,
    ),
    (
        "Qwen2.5-14B q4_k_s 单卡 4060 Ti 16G",
        {"weight_dtype": "q4_k_s", "model": "qwen2.5-14b", "gpu": "4060-ti-16gb", "num_gpus": 1},
        None,
    ),
    (
        "Llama3-8B q8 单卡3060能跑吗",
        {"task": "inference", "weight_dtype": "q8_0", "model": "llama-3-8b", "gpu": "3060", "num_gpus": 1},
        None,
    ),
    (
        "Qwen2.5-72B exl2 4.0bpw 两张4090",
        {"weight_dtype": "exl2", "weight_bits": 4.0, "model": "qwen2.5-72b", "gpu": "4090", "num_gpus": 2},
        None,
    ),
    (
        "部署 Qwen2.5-32B-Instruct-AWQ，vllm，4090，上下文 16k",
        {
            "task": "inference",
            "quant_method": "awq",
            "weight_dtype": "int4",
            "seq_len": 16384,
            "model": "qwen2.5-32b",
            "gpu": "4090",
        },
        None,
    ),
    (
        "Qwen2.5-72B-Instruct-GPTQ-Int4 用 vllm 部署在两张A100上",
        {
            "task": "inference",
            "quant_method": "gptq",
            "weight_dtype": "int4",
            "model": "qwen2.5-72b",
            "gpu": "a100",
            "num_gpus": 2,
        },
        None,
    ),
    (
        "Llama3-8B 8bit 量化推理 单卡 T4",
        {"task": "inference", "weight_dtype": "int8", "model": "llama-3-8b", "gpu": "t4", "num_gpus": 1},
        None,
    ),
    (
        "Qwen3-14B 的 q3_k_m 在 3060 12G 上能不能跑",
        {"task": "inference", "weight_dtype": "q3_k_m", "model": "qwen3-14b", "gpu": "3060-12gb"},
        None,
    ),
]

# --- 4. modifiers that belong to another field ------------------------------------------------------------------
_MODIFIERS: list[Case] = [
    (
        "Llama-3.1-8B 128k上下文推理,单卡4090够吗,kv cache 用 fp8",
        {
            "task": "inference",
            "kv_dtype": "fp8",
            "seq_len": 131072,
            "model": "llama-3.1-8b",
            "gpu": "4090",
            "num_gpus": 1,
        },
        None,
    ),
    (
        "Qwen2.5-7B 部署 4090，32k 上下文，KV缓存量化为int8",
        {"task": "inference", "kv_dtype": "int8", "seq_len": 32768, "model": "qwen2.5-7b", "gpu": "4090"},
        None,
    ),
    (
        "Llama3-8B 推理 单卡A10 kv cache 设为 fp8 上下文 64k",
        {
            "task": "inference",
            "kv_dtype": "fp8",
            "seq_len": 65536,
            "model": "llama-3-8b",
            "gpu": "a10",
            "num_gpus": 1,
        },
        None,
    ),
    (
        "Qwen2.5-14B fp8 的 kv cache，单卡 L40S，上下文 32k",
        {"kv_dtype": "fp8", "seq_len": 32768, "model": "qwen2.5-14b", "gpu": "l40s", "num_gpus": 1},
        None,
    ),
    (
        "llama 3 8b with fp8 kv cache at 128k context on one 4090",
        {"kv_dtype": "fp8", "seq_len": 131072, "model": "llama-3-8b", "gpu": "4090", "num_gpus": 1},
        None,
    ),
    (
        "serve Qwen2.5-7B on an L4 with --kv-cache-dtype fp8 and 32k context",
        {
            "task": "inference",
            "kv_dtype": "fp8",
            "seq_len": 32768,
            "model": "qwen2.5-7b",
            "gpu": "l4",
            "num_gpus": 1,
        },
        None,
    ),
    (
        "Llama-3.1-70B fp8 weights and kv cache in fp8 on 2 H100",
        {"weight_dtype": "fp8", "kv_dtype": "fp8", "model": "llama-3.1-70b", "gpu": "h100", "num_gpus": 2},
        None,
    ),
    (
        "mistral 7b inference, kv cache quantized to int8, 16k context, 3090",
        {"task": "inference", "kv_dtype": "int8", "seq_len": 16384, "model": "mistral-7b", "gpu": "3090"},
        None,
    ),
    (
        "Qwen2.5-7B GRPO 生成8个回答 on 8 H100",
        {"task": "grpo", "num_generations": 8, "model": "qwen2.5-7b", "gpu": "h100", "num_gpus": 8},
        None,
    ),
    (
        "Qwen2.5-7B GRPO 每个prompt生成16个回复，8卡A100",
        {"task": "grpo", "num_generations": 16, "model": "qwen2.5-7b", "gpu": "a100", "num_gpus": 8},
        None,
    ),
    (
        "Qwen3-8B 做GRPO，8个样本，4张H100",
        {"task": "grpo", "num_generations": 8, "model": "qwen3-8b", "gpu": "h100", "num_gpus": 4},
        None,
    ),
    (
        "GRPO on llama 3 8b, generate 8 responses per prompt, 8xH100",
        {"task": "grpo", "num_generations": 8, "model": "llama-3-8b", "gpu": "h100", "num_gpus": 8},
        None,
    ),
    (
        "GRPO Qwen2.5-7B with 4 completions per prompt on 4 A100",
        {"task": "grpo", "num_generations": 4, "model": "qwen2.5-7b", "gpu": "a100", "num_gpus": 4},
        None,
    ),
    (
        "Qwen2.5-7B GRPO generate 16 samples, max new tokens 1024, 8 H100",
        {
            "task": "grpo",
            "num_generations": 16,
            "max_new_tokens": 1024,
            "model": "qwen2.5-7b",
            "gpu": "h100",
            "num_gpus": 8,
        },
        None,
    ),
    (
        "Qwen2.5-7B GRPO 生成长度 2048，每个prompt采样8个，8卡H800",
        {
            "task": "grpo",
            "max_new_tokens": 2048,
            "seq_len": 2560,  # TRL's default prompt (512) + the stated completion, said as an assumption
            "num_generations": 8,
            "model": "qwen2.5-7b",
            "gpu": "h800",
            "num_gpus": 8,
        },
        None,
    ),
    (
        "Llama3-8B 推理 生成 512 个 token，单卡 4090",
        {"task": "inference", "max_new_tokens": 512, "model": "llama-3-8b", "gpu": "4090", "num_gpus": 1},
        None,
    ),
    (
        "I have a 20B model, want to do lora on a 48GB card, bs 1 seq 2048 — ok?",
        {"task": "lora", "batch_size": 1, "seq_len": 2048, "model": "20B", "gpu": "rtx-a6000"},
        None,
    ),
    (
        "fine tune qwen2.5-7b full ft on 4 A100 with bs 2",
        {"task": "full_finetune", "batch_size": 2, "model": "qwen2.5-7b", "gpu": "a100", "num_gpus": 4},
        None,
    ),
]

# --- 7. training words without a task word; stated shapes build the architecture ---------------------------------
_SEED_ARCH = {"hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32}
_TRAINING: list[Case] = [
    (
        "7B model, fp16, batch size 8, context length 1024, hidden 4096, 32 layers, 32 heads, Adam, TP=2, PP=2, DP=4. How much memory per GPU?",
        {
            "weight_dtype": "fp16",
            "optimizer": "adamw",
            "batch_size": 8,
            "seq_len": 1024,
            "tp": 2,
            "pp": 2,
            "num_gpus": 16,
            "model": "7B",
            "task": "full_finetune",
            "architecture": _SEED_ARCH,
        },
        None,
    ),
    (
        "13B model, bf16, Adam, ZeRO-3 on 8 A100, batch 4, seq 2048: memory per GPU?",
        {
            "weight_dtype": "bf16",
            "optimizer": "adamw",
            "zero_stage": 3,
            "batch_size": 4,
            "seq_len": 2048,
            "model": "13B",
            "task": "full_finetune",
            "gpu": "a100",
            "num_gpus": 8,
        },
        None,
    ),
    (
        "Llama-2-13B with AdamW and gradient checkpointing on 4 A100, how much per GPU?",
        {
            "optimizer": "adamw",
            "gradient_checkpointing": True,
            "model": "llama-2-13b",
            "task": "full_finetune",
            "gpu": "a100",
            "num_gpus": 4,
        },
        None,
    ),
    (
        "a 7B transformer, hidden 4096, 32 layers, 32 heads, vocab 32000, seq 2048, batch 1, Adam, one A100",
        {
            "optimizer": "adamw",
            "batch_size": 1,
            "seq_len": 2048,
            "model": "7B",
            "task": "full_finetune",
            "gpu": "a100",
            "num_gpus": 1,
            "architecture": {**_SEED_ARCH, "vocab_size": 32000},
        },
        None,
    ),
    (
        "Qwen2.5-7B, lr 1e-5, 3 epochs, ZeRO-2, 8 H100",
        {
            "learning_rate": 1e-05,
            "epochs": 3.0,
            "zero_stage": 2,
            "model": "qwen2.5-7b",
            "task": "full_finetune",
            "gpu": "h100",
            "num_gpus": 8,
        },
        None,
    ),
    (
        "7B 模型，fp16，batch size 8，序列长度 1024，hidden 4096，32 层，32 个头，Adam，TP=2，PP=2，DP=4，每张卡要多少显存？",
        {
            "weight_dtype": "fp16",
            "optimizer": "adamw",
            "batch_size": 8,
            "seq_len": 1024,
            "tp": 2,
            "pp": 2,
            "num_gpus": 16,
            "model": "7B",
            "task": "full_finetune",
            "architecture": _SEED_ARCH,
        },
        None,
    ),
    (
        "13B 模型 bf16 AdamW ZeRO-3 8卡A100 batch 4 每卡显存多少",
        {
            "weight_dtype": "bf16",
            "optimizer": "adamw",
            "zero_stage": 3,
            "batch_size": 4,
            "model": "13B",
            "task": "full_finetune",
            "gpu": "a100",
            "num_gpus": 8,
        },
        None,
    ),
    (
        "Llama3-8B 用 8 位 Adam，梯度检查点，单卡 A100，每卡多少",
        {
            "optimizer": "adamw_8bit",
            "gradient_checkpointing": True,
            "model": "llama-3-8b",
            "task": "full_finetune",
            "gpu": "a100",
            "num_gpus": 1,
        },
        None,
    ),
    (
        "Qwen2.5-14B 学习率 2e-5，训练 2 个 epoch，zero3，8卡H800",
        {
            "learning_rate": 2e-05,
            "epochs": 2.0,
            "zero_stage": 3,
            "model": "qwen2.5-14b",
            "task": "full_finetune",
            "gpu": "h800",
            "num_gpus": 8,
        },
        None,
    ),
    (
        "70亿参数模型，隐藏层 4096，32层，32头，Adam，DP=8，每卡显存",
        {
            "optimizer": "adamw",
            "num_gpus": 8,
            "model": "7B",
            "task": "full_finetune",
            "architecture": _SEED_ARCH,
        },
        None,
    ),
]

# --- asks: the figure the question wants -------------------------------------------------------------------
_ASKS: list[Case] = [
    (
        "deepseek v3 671b in fp8 on 8xH200 with vllm, what max context can I get?",
        {"task": "inference", "weight_dtype": "fp8", "model": "deepseek-v3", "gpu": "h200", "num_gpus": 8},
        "max_context",
    ),
    (
        "llama 3 8b on a 4090 at 32k context, how big is the kv cache?",
        {"seq_len": 32768, "model": "llama-3-8b", "gpu": "4090", "num_gpus": 1},
        "kv_cache",
    ),
    (
        "how many H100s do I need to full fine-tune Llama-3.1-70B?",
        {"task": "full_finetune", "model": "llama-3.1-70b", "gpu": "h100"},
        "min_gpus",
    ),
    (
        "Qwen2.5-7B on one L40S with vllm, how many concurrent users at 4k context?",
        {"task": "inference", "seq_len": 4096, "model": "qwen2.5-7b", "gpu": "l40s", "num_gpus": 1},
        "concurrency",
    ),
    (
        "mistral 7b inference on a 3090, longest context I can fit?",
        {"task": "inference", "model": "mistral-7b", "gpu": "3090", "num_gpus": 1},
        "max_context",
    ),
    (
        "Qwen2.5-72B LoRA, how many A100 80GB would I need?",
        {"task": "lora", "model": "qwen2.5-72b", "gpu": "a100-80gb"},
        "min_gpus",
    ),
    (
        "llama-3.1-8b 128k context on an H100: kv cache size?",
        {"seq_len": 131072, "model": "llama-3.1-8b", "gpu": "h100", "num_gpus": 1},
        "kv_cache",
    ),
    (
        "Qwen2.5-72B 全参微调需要几张H100",
        {"task": "full_finetune", "model": "qwen2.5-72b", "gpu": "h100"},
        "min_gpus",
    ),
    (
        "Llama3-8B 32k上下文 单卡4090 kv cache多大",
        {"seq_len": 32768, "model": "llama-3-8b", "gpu": "4090", "num_gpus": 1},
        "kv_cache",
    ),
    (
        "Qwen2.5-7B 部署在4090上，最多支持多少并发",
        {"task": "inference", "model": "qwen2.5-7b", "gpu": "4090"},
        "concurrency",
    ),
    (
        "DeepSeek-V3 FP8 8卡H200 最长上下文能到多少",
        {"weight_dtype": "fp8", "model": "deepseek-v3", "gpu": "h200", "num_gpus": 8},
        "max_context",
    ),
    ("部署Qwen2.5-72B需要几张A800", {"task": "inference", "model": "qwen2.5-72b", "gpu": "a800"}, "min_gpus"),
    ("Yi-34B LoRA 最少要几张 4090", {"task": "lora", "model": "yi-34b", "gpu": "4090"}, "min_gpus"),
    (
        "Qwen2.5-14B 推理 单卡A10 上下文最长能多少",
        {"task": "inference", "model": "qwen2.5-14b", "gpu": "a10", "num_gpus": 1},
        "max_context",
    ),
]

# --- a card the catalog may lack: the parser's gpu string (the size the user stated) ----------------------------
_CARDS: list[Case] = [
    (
        "llama 3 8b inference on a 22G 2080 Ti",
        {"task": "inference", "model": "llama-3-8b", "gpu": "2080-ti-22gb", "num_gpus": 1},
        None,
    ),
    ("Qwen2.5-7B LoRA on my 12GB card", {"task": "lora", "model": "qwen2.5-7b", "gpu": "rtx-3060"}, None),
    ("Qwen2.5-14B 推理，24G显存够吗", {"task": "inference", "model": "qwen2.5-14b", "gpu": "rtx-4090"}, None),
    (
        "魔改2080ti 22G 跑 Qwen2.5-14B 推理",
        {"task": "inference", "model": "qwen2.5-14b", "gpu": "2080-ti-22gb"},
        None,
    ),
]


# --- everyday questions mixing several fields -----------------------------------------------------------------
_REALISTIC: list[Case] = [
    (
        "Full fine-tune Qwen2.5-7B on 8xH100 with DeepSpeed ZeRO-3, micro batch 4 per gpu, 4096 seq len, grad ckpt on",
        {
            "task": "full_finetune",
            "batch_size": 4,
            "seq_len": 4096,
            "gradient_checkpointing": True,
            "zero_stage": 3,
            "model": "qwen2.5-7b",
            "gpu": "h100",
            "num_gpus": 8,
        },
        None,
    ),
    (
        "qlora llama 3 70b on 2x3090, rank 64, seq 2048, bs 1",
        {
            "task": "qlora",
            "lora_rank": 64,
            "seq_len": 2048,
            "batch_size": 1,
            "model": "llama-3-70b",
            "gpu": "3090",
            "num_gpus": 2,
        },
        None,
    ),
    (
        "lora r=16 all-linear on Qwen2.5-14B, 4xA100, bs 4, 8k ctx, grad ckpt",
        {
            "task": "lora",
            "lora_rank": 16,
            "lora_targets": ["all-linear"],
            "batch_size": 4,
            "seq_len": 8192,
            "gradient_checkpointing": True,
            "model": "qwen2.5-14b",
            "gpu": "a100",
            "num_gpus": 4,
        },
        None,
    ),
    (
        "DPO llama 3 8b on 8xH100 zero3 bs 2 seq 4096",
        {
            "task": "dpo",
            "zero_stage": 3,
            "batch_size": 2,
            "seq_len": 4096,
            "model": "llama-3-8b",
            "gpu": "h100",
            "num_gpus": 8,
        },
        None,
    ),
    (
        "PPO Qwen2.5-7B on 8xA100 80GB with ZeRO-3",
        {"task": "ppo", "zero_stage": 3, "model": "qwen2.5-7b", "gpu": "a100-80gb", "num_gpus": 8},
        None,
    ),
    (
        "serve Llama-3.1-70B on 4xH100 with vllm at 32k context and 64 concurrent requests",
        {
            "task": "inference",
            "seq_len": 32768,
            "batch_size": 64,
            "model": "llama-3.1-70b",
            "gpu": "h100",
            "num_gpus": 4,
        },
        None,
    ),
    (
        "mistral 7b full ft fp32 on 8 V100",
        {
            "task": "full_finetune",
            "weight_dtype": "fp32",
            "model": "mistral-7b",
            "gpu": "v100",
            "num_gpus": 8,
        },
        None,
    ),
    (
        "Qwen3-32B lora on 2 H100, tp 2, bs 1, 16k context",
        {
            "task": "lora",
            "tp": 2,
            "batch_size": 1,
            "seq_len": 16384,
            "model": "qwen3-32b",
            "gpu": "h100",
            "num_gpus": 2,
        },
        None,
    ),
    (
        "Llama-3.1-8B inference, 128k context, batch 4, on 2xL40S",
        {
            "task": "inference",
            "seq_len": 131072,
            "batch_size": 4,
            "model": "llama-3.1-8b",
            "gpu": "l40s",
            "num_gpus": 2,
        },
        None,
    ),
    (
        "Yi-34B QLoRA on one 4090, paged adamw 8bit, seq 1024",
        {
            "task": "qlora",
            "optimizer": "paged_adamw_8bit",
            "seq_len": 1024,
            "model": "yi-34b",
            "gpu": "4090",
            "num_gpus": 1,
        },
        None,
    ),
    (
        "GRPO Qwen2.5-3B with LoRA on 2x4090, 8 generations per prompt",
        {
            "task": "grpo",
            "num_generations": 8,
            "lora_rank": 8,
            "model": "qwen2.5-3b",
            "gpu": "4090",
            "num_gpus": 2,
        },
        None,
    ),
    (
        "pretrain a 1B model from scratch on 8xH100, bs 32, seq 2048",
        {"task": "pretrain", "batch_size": 32, "seq_len": 2048, "model": "1B", "gpu": "h100", "num_gpus": 8},
        None,
    ),
    (
        "Gemma 2 27B int8 inference on a single A100 40GB",
        {
            "task": "inference",
            "weight_dtype": "int8",
            "model": "gemma-2-27b",
            "gpu": "a100-40gb",
            "num_gpus": 1,
        },
        None,
    ),
    (
        "Qwen2.5-72B AWQ on 2x4090 with vllm, 8k context",
        {
            "task": "inference",
            "quant_method": "awq",
            "weight_dtype": "int4",
            "seq_len": 8192,
            "model": "qwen2.5-72b",
            "gpu": "4090",
            "num_gpus": 2,
        },
        None,
    ),
    (
        "phi-3-mini full fine-tune on a 3090, bs 4, 2k context",
        {
            "task": "full_finetune",
            "batch_size": 4,
            "seq_len": 2048,
            "model": "phi-3-mini",
            "gpu": "3090",
            "num_gpus": 1,
        },
        None,
    ),
    (
        "DeepSeek-V2-Lite LoRA on 4 A100, 8 bit adam",
        {
            "task": "lora",
            "optimizer": "adamw_8bit",
            "model": "deepseek-v2-lite",
            "gpu": "a100",
            "num_gpus": 4,
        },
        None,
    ),
    (
        "Mixtral 8x22B inference fp8 on 8xH100",
        {"task": "inference", "weight_dtype": "fp8", "model": "mixtral-8x22b", "gpu": "h100", "num_gpus": 8},
        None,
    ),
    (
        "Qwen3-30B-A3B LoRA on one H100, seq 4096, batch 2",
        {
            "task": "lora",
            "seq_len": 4096,
            "batch_size": 2,
            "model": "qwen3-30b-a3b",
            "gpu": "h100",
            "num_gpus": 1,
        },
        None,
    ),
    (
        "tinyllama full finetune on a T4, bs 8",
        {"task": "full_finetune", "batch_size": 8, "model": "tinyllama-1.1b", "gpu": "t4", "num_gpus": 1},
        None,
    ),
    (
        "llama 3 70b lora zero3 offload on 4x4090",
        {
            "task": "lora",
            "zero_stage": 3,
            "offload_optimizer": "cpu",
            "model": "llama-3-70b",
            "gpu": "4090",
            "num_gpus": 4,
        },
        None,
    ),
    (
        "Qwen2.5-7B 全参微调，8xH100，ZeRO-3，每卡 micro batch 4，序列长度 4096，开梯度检查点",
        {
            "task": "full_finetune",
            "zero_stage": 3,
            "batch_size": 4,
            "seq_len": 4096,
            "gradient_checkpointing": True,
            "model": "qwen2.5-7b",
            "gpu": "h100",
            "num_gpus": 8,
        },
        None,
    ),
    (
        "两张3090 QLoRA 微调 Llama3-70B，秩 64，上下文 2048",
        {
            "task": "qlora",
            "lora_rank": 64,
            "seq_len": 2048,
            "model": "llama-3-70b",
            "gpu": "3090",
            "num_gpus": 2,
        },
        None,
    ),
    (
        "Qwen2.5-14B LoRA，4卡A100，所有线性层，batch 4，8k上下文",
        {
            "task": "lora",
            "lora_targets": ["all-linear"],
            "batch_size": 4,
            "seq_len": 8192,
            "model": "qwen2.5-14b",
            "gpu": "a100",
            "num_gpus": 4,
        },
        None,
    ),
    (
        "Llama3-8B 做 DPO，8卡H100，zero3，batch 2，序列长度4096",
        {
            "task": "dpo",
            "zero_stage": 3,
            "batch_size": 2,
            "seq_len": 4096,
            "model": "llama-3-8b",
            "gpu": "h100",
            "num_gpus": 8,
        },
        None,
    ),
    (
        "千问2.5-7B PPO 训练，8张A100 80G，ZeRO-3",
        {"task": "ppo", "zero_stage": 3, "model": "qwen2.5-7b", "gpu": "a100-80gb", "num_gpus": 8},
        None,
    ),
    (
        "vllm 部署 Llama-3.1-70B，4张H100，上下文32k，64路并发",
        {
            "task": "inference",
            "seq_len": 32768,
            "batch_size": 64,
            "model": "llama-3.1-70b",
            "gpu": "h100",
            "num_gpus": 4,
        },
        None,
    ),
    (
        "Qwen3-32B LoRA 两张H100 张量并行2 batch 1 上下文16k",
        {
            "task": "lora",
            "tp": 2,
            "batch_size": 1,
            "seq_len": 16384,
            "model": "qwen3-32b",
            "gpu": "h100",
            "num_gpus": 2,
        },
        None,
    ),
    (
        "Yi-34B QLoRA 单卡4090 分页8位AdamW 序列长度1024",
        {
            "task": "qlora",
            "seq_len": 1024,
            "model": "yi-34b",
            "gpu": "4090",
            "num_gpus": 1,
            "optimizer": "paged_adamw_8bit",
        },
        None,
    ),
    (
        "从头预训练一个1B模型，8卡H100，batch 32，序列2048",
        {"task": "pretrain", "batch_size": 32, "seq_len": 2048, "model": "1B", "gpu": "h100", "num_gpus": 8},
        None,
    ),
    (
        "Gemma-2-27B int8 推理，单卡 A100 40G",
        {
            "task": "inference",
            "weight_dtype": "int8",
            "model": "gemma-2-27b",
            "gpu": "a100-40gb",
            "num_gpus": 1,
        },
        None,
    ),
    (
        "Qwen2.5-72B-Instruct-AWQ 两张4090 vllm 8k上下文",
        {
            "quant_method": "awq",
            "weight_dtype": "int4",
            "seq_len": 8192,
            "model": "qwen2.5-72b",
            "gpu": "4090",
            "num_gpus": 2,
            "task": "inference",
        },
        None,
    ),
    (
        "DeepSeek-V2-Lite LoRA 4卡A100 8位adam",
        {
            "task": "lora",
            "optimizer": "adamw_8bit",
            "model": "deepseek-v2-lite",
            "gpu": "a100",
            "num_gpus": 4,
        },
        None,
    ),
    (
        "Qwen3-30B-A3B LoRA 单卡H100 上下文4096 batch 2",
        {
            "task": "lora",
            "seq_len": 4096,
            "batch_size": 2,
            "model": "qwen3-30b-a3b",
            "gpu": "h100",
            "num_gpus": 1,
        },
        None,
    ),
    (
        "Llama3-70B 做 LoRA，zero3 加 offload，4张4090",
        {
            "task": "lora",
            "zero_stage": 3,
            "offload_optimizer": "cpu",
            "model": "llama-3-70b",
            "gpu": "4090",
            "num_gpus": 4,
        },
        None,
    ),
    (
        "Qwen2.5-7B 推理 单卡 T4 fp16 上下文 8k",
        {
            "task": "inference",
            "weight_dtype": "fp16",
            "seq_len": 8192,
            "model": "qwen2.5-7b",
            "gpu": "t4",
            "num_gpus": 1,
        },
        None,
    ),
    (
        "昇腾910B 8卡 全参微调 Qwen2.5-14B",
        {"task": "full_finetune", "model": "qwen2.5-14b", "gpu": "910b", "num_gpus": 8},
        None,
    ),
    (
        "H20 8卡 部署 DeepSeek-V3 fp8",
        {"task": "inference", "weight_dtype": "fp8", "model": "deepseek-v3", "gpu": "h20", "num_gpus": 8},
        None,
    ),
    (
        "GLM-4-9B LoRA 单卡3090 秩8 batch 2 上下文2048",
        {
            "task": "lora",
            "lora_rank": 8,
            "batch_size": 2,
            "seq_len": 2048,
            "model": "glm-4-9b",
            "gpu": "3090",
            "num_gpus": 1,
        },
        None,
    ),
    (
        "Baichuan2-13B 全参微调 8卡A800 zero2 梯度累积 8",
        {
            "task": "full_finetune",
            "zero_stage": 2,
            "gradient_accumulation_steps": 8,
            "model": "baichuan2-13b",
            "gpu": "a800",
            "num_gpus": 8,
        },
        None,
    ),
    (
        "Qwen2.5-32B GRPO 16卡H100 每个prompt 8个回复 zero3",
        {
            "task": "grpo",
            "num_generations": 8,
            "zero_stage": 3,
            "model": "qwen2.5-32b",
            "gpu": "h100",
            "num_gpus": 16,
        },
        None,
    ),
]


# --- generated variations: quant names, negations and KV-cache dtypes across models, cards and phrasings ---------
_GGUF = [("Q4_K_M", "q4_k_m"), ("q5_k_m", "q5_k_m"), ("Q8_0", "q8_0"), ("IQ3_XS", "iq3_xs"), ("q6_k", "q6_k"),
         ("Q5_K_S", "q5_k_s"), ("q4_k_s", "q4_k_s"), ("IQ4_XS", "iq4_xs"), ("Q3_K_M", "q3_k_m"), ("Q2_K", "q2_k")]  # fmt: skip
_GGUF_GPUS = [("4090", "4090"), ("3090", "3090"), ("3060", "3060"), ("4060 Ti", "4060-ti"), ("A10", "a10")]


def _quant_cases() -> list[Case]:
    out: list[Case] = []
    for i, (name, dtype) in enumerate(_GGUF):
        m_text, model = _cycle(_MODELS, i)
        g_text, gpu = _cycle(_GGUF_GPUS, i)
        out.append(
            (
                f"run {m_text} {name} on a {g_text}",
                {"task": "inference", "weight_dtype": dtype, "model": model, "gpu": gpu, "num_gpus": 1},
                None,
            )
        )
        out.append(
            (
                f"{m_text}-{name}.gguf on two {g_text} cards, fits?",
                {"weight_dtype": dtype, "model": model, "gpu": gpu, "num_gpus": 2},
                None,
            )
        )
        zm_text, zmodel = _cycle(_ZH_MODELS, i)
        out.append(
            (
                f"{zm_text} {name} 单卡{g_text}能跑吗",
                {"task": "inference", "weight_dtype": dtype, "model": zmodel, "gpu": gpu, "num_gpus": 1},
                None,
            )
        )
        out.append(
            (
                f"用两张{g_text}部署{zm_text}的{name}量化版",
                {"task": "inference", "weight_dtype": dtype, "model": zmodel, "gpu": gpu, "num_gpus": 2},
                None,
            )
        )
    return out


_EN_NEG = [
    ("without offload", {"offload_optimizer": "none"}),
    ("no cpu offload", {"offload_optimizer": "none"}),
    ("with offload disabled", {"offload_optimizer": "none"}),
    ("without gradient checkpointing", {"gradient_checkpointing": False}),
    ("grad ckpt off", {"gradient_checkpointing": False}),
    ("no activation checkpointing", {"gradient_checkpointing": False}),
    ("with gradient checkpointing", {"gradient_checkpointing": True}),
    ("without flash attention", {"attention": "eager"}),
    ("no ZeRO", {"zero_stage": 0}),
    ("zero-3 without offload", {"zero_stage": 3, "offload_optimizer": "none"}),
]
_ZH_NEG = [
    ("不开offload", {"offload_optimizer": "none"}),
    ("不用cpu offload", {"offload_optimizer": "none"}),
    ("不卸载", {"offload_optimizer": "none"}),
    ("不开梯度检查点", {"gradient_checkpointing": False}),
    ("关闭梯度检查点", {"gradient_checkpointing": False}),
    ("不用重计算", {"gradient_checkpointing": False}),
    ("开梯度检查点", {"gradient_checkpointing": True}),
    ("不用flash attention", {"attention": "eager"}),
    ("不用zero", {"zero_stage": 0}),
    ("zero3 不开offload", {"zero_stage": 3, "offload_optimizer": "none"}),
]
_NEG_GPUS = [
    ("A100", "a100", 8),
    ("H100", "h100", 4),
    ("A800", "a800", 8),
    ("H800", "h800", 2),
    ("4090", "4090", 4),
]


def _negation_cases() -> list[Case]:
    out: list[Case] = []
    for i, (phrase, fields) in enumerate(_EN_NEG):
        m_text, model = _cycle(_MODELS, i + 3)
        g_text, gpu, n = _cycle(_NEG_GPUS, i)
        out.append(
            (
                f"{m_text} full finetune on {n} {g_text}, {phrase}",
                {"task": "full_finetune", **fields, "model": model, "gpu": gpu, "num_gpus": n},
                None,
            )
        )
        out.append(
            (
                f"LoRA {m_text} {phrase}, one {g_text}, batch 2",
                {"task": "lora", **fields, "batch_size": 2, "model": model, "gpu": gpu, "num_gpus": 1},
                None,
            )
        )
    for i, (phrase, fields) in enumerate(_ZH_NEG):
        m_text, model = _cycle(_ZH_MODELS, i + 3)
        g_text, gpu, n = _cycle(_NEG_GPUS, i)
        out.append(
            (
                f"{m_text} 全参微调 {n}张{g_text} {phrase}",
                {"task": "full_finetune", **fields, "model": model, "gpu": gpu, "num_gpus": n},
                None,
            )
        )
        out.append(
            (
                f"单卡{g_text}上 LoRA 微调{m_text}，{phrase}，batch 2",
                {"task": "lora", **fields, "batch_size": 2, "model": model, "gpu": gpu, "num_gpus": 1},
                None,
            )
        )
    return out


_EN_KV = ["kv cache in fp8", "fp8 kv cache", "kv cache dtype fp8", "--kv-cache-dtype fp8", "int8 kv cache", "kv cache quantized to int8"]  # fmt: skip
_ZH_KV = ["kv cache 用 fp8", "KV缓存用fp8", "kv cache 量化到 int8", "fp8 的 kv cache", "kv缓存设为fp8", "kv cache 使用 int8"]  # fmt: skip


def _kv_cases() -> list[Case]:
    out: list[Case] = []
    for i, phrase in enumerate(_EN_KV):
        m_text, model = _cycle(_MODELS, i)
        kv = "int8" if "int8" in phrase else "fp8"
        out.append(
            (
                f"serve {m_text} on one H100 at 64k context, {phrase}",
                {
                    "task": "inference",
                    "kv_dtype": kv,
                    "seq_len": 65536,
                    "model": model,
                    "gpu": "h100",
                    "num_gpus": 1,
                },
                None,
            )
        )
    for i, phrase in enumerate(_ZH_KV):
        m_text, model = _cycle(_ZH_MODELS, i)
        kv = "int8" if "int8" in phrase else "fp8"
        out.append(
            (
                f"{m_text} 推理，单卡L40S，上下文32k，{phrase}",
                {
                    "task": "inference",
                    "kv_dtype": kv,
                    "seq_len": 32768,
                    "model": model,
                    "gpu": "l40s",
                    "num_gpus": 1,
                },
                None,
            )
        )
    return out


_ENGINE_WORDS = (("vllm", "vllm"), ("sglang", "sglang"), ("ollama", "ollama"), ("llama.cpp", "llama.cpp"))


def _with_engine(case: Case) -> Case:
    """The serving engine the question names is a stated field too (vLLM, SGLang, ollama, llama.cpp/GGUF)."""
    question, fields, asks = case
    low = question.lower()
    engine = next((e for word, e in _ENGINE_WORDS if word in low), None)
    if engine is None and re.search(r"(?<![a-z0-9.])gguf", low):
        engine = "llama.cpp"
    return (question, {**fields, "engine": engine} if engine else fields, asks)


def _estimates() -> list[Case]:
    return [_with_engine(c) for c in _all_cases()]


def _all_cases() -> list[Case]:
    return [
        *_count_cases(),
        *_NEGATIONS,
        *_QUANT,
        *_MODIFIERS,
        *_TRAINING,
        *_ASKS,
        *_CARDS,
        *_quant_cases(),
        *_negation_cases(),
        *_kv_cases(),
        *_REALISTIC,
        *[(question, fields, asks) for question, fields, asks, _ in ROUND2],
    ]


ESTIMATES: list[Case] = _estimates()

# --- 6. concept questions (no job named) -> a knowledge-base topic ----------------------------------------------
CONCEPTS: list[tuple[str, str]] = [
    ("why does vllm take 90% of my gpu memory even for a tiny model?", "vllm_memory_utilization"),
    ("vllm preallocates 90% of the card, why?", "vllm_memory_utilization"),
    ("为什么vLLM对很小的模型也占满90%显存", "vllm_memory_utilization"),
    ("vllm 启动就占了90%显存是怎么回事", "vllm_memory_utilization"),
    ("FSDP vs ZeRO-3", "fsdp_vs_zero3"),
    ("FSDP or DeepSpeed, which saves more memory?", "fsdp_vs_zero3"),
    ("FSDP和DeepSpeed ZeRO-3有什么区别", "fsdp_vs_zero3"),
    ("fsdp跟zero3哪个省显存", "fsdp_vs_zero3"),
    ("ZeRO-2 vs ZeRO-3 in numbers", "zero2_vs_zero3"),
    ("zero2 or zero3, what's the difference in memory?", "zero2_vs_zero3"),
    ("ZeRO-2和ZeRO-3差多少显存", "zero2_vs_zero3"),
    ("zero2还是zero3，区别是什么", "zero2_vs_zero3"),
    ("what does gradient checkpointing save?", "gradient_checkpointing"),
    ("梯度检查点能省多少显存", "gradient_checkpointing"),
    ("why does LoRA still need the base model in memory?", "lora_base_memory"),
    ("为什么LoRA也要加载整个底座", "lora_base_memory"),
    ("why is an A3B MoE not 3B of memory?", "moe_active"),
    ("A3B的MoE为什么不是3B的显存", "moe_active"),
    ("what is the CUDA context and fragmentation?", "cuda_context_fragmentation"),
    ("显存碎片是怎么回事，cuda上下文占多少", "cuda_context_fragmentation"),
    ("GiB vs GB?", "gib_vs_gb"),
    ("GiB和GB有什么区别", "gib_vs_gb"),
    ("what is PagedAttention?", "paged_attention"),
    ("什么是PagedAttention", "paged_attention"),
    ("offload trade-offs?", "offload_tradeoffs"),
    ("CPU卸载的代价是什么", "offload_tradeoffs"),
    ("what is Q4_K_M exactly, how many bits per weight?", "gguf_formats"),
    ("GGUF 的 Q5_K_M 每权重几bit", "gguf_formats"),
    ("AWQ vs GPTQ", "awq_gptq"),
    ("AWQ和GPTQ有什么区别", "awq_gptq"),
    ("does an fp8 kv cache save memory?", "kv_cache_fp8"),
    ("kv cache用fp8能省多少", "kv_cache_fp8"),
    ("what is tensor parallelism?", "tensor_parallel"),
    ("什么是张量并行", "tensor_parallel"),
    ("what is a pipeline bubble in pipeline parallelism?", "pipeline_parallel"),
    ("流水线并行的气泡是什么", "pipeline_parallel"),
    ("explain sequence parallelism and context parallelism", "sequence_context_parallel"),
    ("序列并行和上下文并行是什么", "sequence_context_parallel"),
    ("how much does 8-bit adam save?", "optimizer_8bit"),
    ("8位优化器能省多少显存", "optimizer_8bit"),
    ("bf16 vs fp16 for training memory?", "mixed_precision"),
    ("混合精度训练为什么还要fp32主权重", "mixed_precision"),
    ("does a bigger batch size increase memory?", "batch_size_memory"),
    ("batch越大显存越大吗", "batch_size_memory"),
    ("why does long context need so much memory?", "long_context"),
    ("长上下文为什么那么吃显存", "long_context"),
    ("what is grouped query attention and why is the kv cache smaller?", "gqa_mqa"),
    ("分组查询注意力为什么能减少kv cache", "gqa_mqa"),
    ("what is multi-head latent attention?", "mla_kv"),
    ("DeepSeek的多头潜在注意力是什么", "mla_kv"),
    ("why does GRPO need so much memory, reference model and all?", "rl_memory"),
    ("GRPO显存为什么这么大", "rl_memory"),
    ("does DPO need a reference model in memory?", "dpo_reference"),
    ("DPO的参考模型要占显存吗", "dpo_reference"),
    ("why does training need so much more memory than inference?", "inference_vs_training"),
    ("训练为什么比推理多要那么多显存", "inference_vs_training"),
    ("why does nvidia-smi show more than memory_allocated?", "nvidia_smi_vs_pytorch"),
    ("nvidia-smi显示的显存为什么比pytorch多", "nvidia_smi_vs_pytorch"),
    ("what is expert parallelism?", "expert_parallel"),
    ("专家并行是什么", "expert_parallel"),
    ("how does n-gpu-layers partial offload work in llama.cpp?", "llamacpp_partial_offload"),
    ("llama.cpp 一半层放cpu是什么原理", "llamacpp_partial_offload"),
    ("what does DoRA cost in memory vs LoRA?", "dora"),
    ("DoRA和LoRA显存有什么区别", "dora"),
    ("what is the KV cache?", "kv_cache"),
    ("KV cache 是什么", "kv_cache"),
    ("explain the 16 bytes per parameter rule", "rule_16x"),
    ("ZeRO stages explained", "zero_stages"),
]
