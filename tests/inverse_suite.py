"""Inverse and comparison questions in new forms (half Chinese) with what each asks: tests/test_inverse_questions.py
runs them through the offline agent and checks every answer against the estimator itself."""

from __future__ import annotations

from typing import NamedTuple


class Case(NamedTuple):
    question: str
    kind: str  # max, min, compare
    field: str  # the asked field (max/min) or the compared one (compare)
    options: int = 0  # compare: how many options


TRAIN = [
    ("llama-3-8b", "4090", 1024),
    ("qwen2.5-7b", "a100", 4096),
    ("mistral-7b", "h100", 2048),
    ("qwen2.5-1.5b", "3090", 2048),
    ("llama-2-13b", "a100-40gb", 1024),
]
TASKS_EN = {"lora": "LoRA", "qlora": "QLoRA", "full_finetune": "full fine-tuning"}
TASKS_ZH = {"lora": "LoRA微调", "qlora": "QLoRA微调", "full_finetune": "全参微调"}
SERVE = [
    ("qwen2.5-7b", "4090", 8192),
    ("llama-3-8b", "a100", 16384),
    ("qwen2.5-14b", "l40s", 4096),
    ("mistral-7b", "3090", 4096),
    ("llama-3.1-8b", "h100", 32768),
]


def _batch() -> list[Case]:
    out = []
    for m, g, s in TRAIN:
        for task in ("lora", "qlora"):
            en, zh = TASKS_EN[task], TASKS_ZH[task]
            out += [
                Case(
                    f"What's the largest micro-batch for {m} {en} on a {g} at {s} tokens?",
                    "max",
                    "batch_size",
                ),
                Case(f"{m} {en} on one {g}, seq len {s}: how big a batch can I use?", "max", "batch_size"),
                Case(f"{g}上{zh} {m}，序列长度{s}，最大batch多少", "max", "batch_size"),
                Case(f"{m} 在一张{g}上做{zh}，{s}长度，batch size 最多能开多大", "max", "batch_size"),
            ]
    return out


def _serving() -> list[Case]:
    out = []
    for m, g, s in SERVE:
        out += [
            Case(
                f"serving {m} with vllm on a {g}: how many concurrent requests of {s} tokens?",
                "max",
                "concurrent_sequences",
            ),
            Case(f"vllm 部署 {m}，一张{g}，每条{s} tokens，最多并发多少", "max", "concurrent_sequences"),
            Case(f"{m} inference on a {g}, what's the longest context I can run?", "max", "seq_len"),
            Case(f"{g} 推理 {m}，上下文最长能开到多少", "max", "seq_len"),
            Case(f"max context length for {m} on {g} at batch 4?", "max", "seq_len"),
            Case(f"一张{g}跑{m}推理 batch 4，最长上下文是多少", "max", "seq_len"),
        ]
    return out


def _models_and_formats() -> list[Case]:
    out = []
    for g in ("4090", "3090", "a100", "h100", "l40s"):
        out += [
            Case(f"what's the largest model I can fine-tune with LoRA on a {g}?", "max", "params"),
            Case(f"一张{g}做QLoRA最大能训多大的模型", "max", "params"),
            Case(f"biggest llama I can run for inference on one {g}? say llama-3-8b family", "max", "params"),
            Case(f"{g} 推理，qwen2.5-7b 这个系列最大能跑多大的模型", "max", "params"),
        ]
    for m, g in (
        ("qwen2.5-32b", "4090"),
        ("llama-3-70b", "a100"),
        ("qwen2.5-14b", "3060-12gb"),
        ("mistral-7b", "t4"),
        ("qwen2.5-72b", "h100"),
    ):
        out += [
            Case(f"which quant is best for {m} on a {g} with ollama at 8k context?", "max", "weight_dtype"),
            Case(f"用 ollama 在{g}上跑{m}，8k上下文，选哪个量化最好", "max", "weight_dtype"),
            Case(f"{m} with vllm on {g}: highest precision format that fits?", "max", "weight_dtype"),
            Case(f"vllm 部署 {m}，{g}，用什么量化精度最高又放得下", "max", "weight_dtype"),
        ]
    return out


def _gpus_and_rl() -> list[Case]:
    out = []
    for m, g in (
        ("llama-2-13b", "a100"),
        ("llama-3-70b", "h100"),
        ("qwen2.5-7b", "4090"),
        ("qwen2.5-32b", "a100-40gb"),
        ("mistral-7b", "3090"),
    ):
        out += [
            Case(f"how many {g} GPUs do I need to full fine-tune {m}?", "min", "num_gpus"),
            Case(f"最少几张{g}能全参微调{m}", "min", "num_gpus"),
            Case(f"minimum number of {g} cards to serve {m} at 32k context", "min", "num_gpus"),
            Case(f"{m} 推理 32k 上下文，至少需要几张{g}", "min", "num_gpus"),
        ]
    for m, g in (
        ("llama-3-8b", "4090"),
        ("qwen2.5-7b", "a100"),
        ("mistral-7b", "3090"),
        ("qwen2.5-14b", "h100"),
        ("llama-2-7b", "l40s"),
    ):
        out += [
            Case(f"QLoRA {m} on a {g}: what's the max lora rank I can use?", "max", "lora_rank"),
            Case(f"{g} 上 LoRA 微调 {m}，rank 最大能开到多少", "max", "lora_rank"),
        ]
    for m, g in (
        ("qwen2.5-7b", "h100"),
        ("qwen2.5-1.5b", "4090"),
        ("llama-3-8b", "a100"),
        ("qwen2.5-3b", "a100-40gb"),
        ("qwen2.5-0.5b", "3090"),
    ):
        out += [
            Case(f"GRPO {m} with LoRA on one {g}: longest completion length?", "max", "max_new_tokens"),
            Case(f"单卡{g} 用 GRPO + LoRA 训 {m}，回复长度最长能设多少", "max", "max_new_tokens"),
            Case(
                f"GRPO {m} LoRA on a {g}, how many generations per prompt at most?", "max", "num_generations"
            ),
            Case(f"{g} 上 GRPO LoRA 训 {m}，每个 prompt 最多采样几条", "max", "num_generations"),
        ]
    return out


def _comparisons() -> list[Case]:
    out = []
    for m, g, _ in TRAIN:
        out += [
            Case(f"LoRA vs QLoRA for {m} on a {g}?", "compare", "task", 2),
            Case(f"{m} 在 {g} 上用 LoRA 还是 QLoRA 好", "compare", "task", 2),
            Case(f"full fine-tune vs LoRA vs QLoRA: {m}, 8x {g}", "compare", "task", 3),
            Case(f"8张{g} 训 {m}：全参、LoRA、QLoRA 对比一下显存", "compare", "task", 3),
            Case(f"{m} full fine-tuning on 8 {g}: ZeRO-2 vs ZeRO-3?", "compare", "zero_stage", 2),
            Case(f"8卡{g}全参{m}，ZeRO-2 还是 ZeRO-3 还是 FSDP", "compare", "zero_stage", 2),
            Case(
                f"{m} LoRA on a {g}, with vs without gradient checkpointing?",
                "compare",
                "gradient_checkpointing",
                2,
            ),
            Case(f"{g} 上 LoRA 微调 {m}，开不开梯度检查点差多少", "compare", "gradient_checkpointing", 2),
        ]
    for m, g, s in SERVE:
        out += [
            Case(f"{m} on a {g} with ollama: q4_k_m or q5_k_m?", "compare", "weight_dtype", 2),
            Case(f"ollama 跑 {m}，{g}，q4_k_m 和 q8_0 选哪个", "compare", "weight_dtype", 2),
            Case(f"{m} inference {s} context: 3090 vs l40s vs h200", "compare", "gpu", 3),
            Case(f"推理 {m} {s} 上下文，a6000 和 h20 对比", "compare", "gpu", 2),
            Case(f"serve {m} on a {g}: vllm or sglang?", "compare", "engine", 2),
            Case(f"{g} 部署 {m}，用 vllm 还是 llama.cpp", "compare", "engine", 2),
            Case(f"fp8 vs int4 for serving {m} on a {g} with vllm", "compare", "weight_dtype", 2),
            Case(f"{g} 上推理，llama-3-8b 和 qwen2.5-7b 哪个更省显存", "compare", "model", 2),
        ]
    return out


CASES: list[Case] = _batch() + _serving() + _models_and_formats() + _gpus_and_rl() + _comparisons()


# Hand-written, as people post them (forums, issue trackers, interview prep), half Chinese.
VARIED: list[Case] = [
    Case(
        "Got a single 3090 here. Whats the biggest batch I can push for qlora on mistral-7b w/ 2k seqs?",
        "max",
        "batch_size",
    ),
    Case(
        "fitcheck-style advise: qwen2.5-3b full finetune, one A100 80GB, 4096 ctx -> max micro batch?",
        "max",
        "batch_size",
    ),
    Case("ollama on my 4090: how long can the context go with qwen2.5-14b?", "max", "seq_len"),
    Case("What is the max num_ctx I can set for llama-3.1-8b in ollama on a 3060 12GB?", "max", "seq_len"),
    Case(
        "I want to serve llama-3.1-8b on an L40S via vllm -- max concurrency at 16k prompts?",
        "max",
        "concurrent_sequences",
    ),
    Case(
        "Which gguf quant fits best for llama-3-70b on 2x 4090 with llama.cpp at 4k?", "max", "weight_dtype"
    ),
    Case(
        "best quantization for qwen2.5-32b that still fits a single A100 40GB in vllm?", "max", "weight_dtype"
    ),
    Case("What's the largest model I could QLoRA on a T4 (colab)?", "max", "params"),
    Case("biggest qwen I can run for inference on a 4090? say qwen2.5-7b family", "max", "params"),
    Case("How many H100s do we need to pretrain a 13B llama-2 from scratch at 4k seq?", "min", "num_gpus"),
    Case("minimum number of 4090s to serve qwen2.5-72b in vllm?", "min", "num_gpus"),
    Case(
        "LoRA on llama-3-8b with an A100 80GB: what's the highest rank that still fits?", "max", "lora_rank"
    ),
    Case("GRPO on qwen2.5-1.5b with LoRA, one A100 80GB: longest response length?", "max", "max_new_tokens"),
    Case("GRPO qwen2.5-3b lora, single H100 -- max num_generations?", "max", "num_generations"),
    Case("Is QLoRA or LoRA better for qwen2.5-14b on an A100 40GB?", "compare", "task", 2),
    Case("q4_k_m vs q5_k_m vs q6_k for llama-3.1-8b in ollama on a 3060 12GB", "compare", "weight_dtype", 3),
    Case("ZeRO-2 or ZeRO-3 for llama-2-7b full finetune on 4x A100 40GB?", "compare", "zero_stage", 2),
    Case("vLLM vs SGLang for qwen2.5-7b on one L40S, 8k context", "compare", "engine", 2),
    Case(
        "llama-3-8b lora on a 4090: gradient checkpointing on vs off?", "compare", "gradient_checkpointing", 2
    ),
    Case("mistral-7b vs llama-3-8b for qlora on a 3090?", "compare", "model", 2),
    Case("手上只有一张3090，QLoRA 微调 mistral-7b，2k长度，batch最大能开多少？", "max", "batch_size"),
    Case("面试题：单卡A100 80G全参微调qwen2.5-3b，4096长度，最大micro batch是多少", "max", "batch_size"),
    Case("ollama 在4090上跑 qwen2.5-14b，上下文最长能开到多少？", "max", "seq_len"),
    Case("3060 12G 用 ollama 跑 llama-3.1-8b，num_ctx 最大能设多少", "max", "seq_len"),
    Case("L40S 用 vllm 部署 llama-3.1-8b，16k 的请求最多并发多少", "max", "concurrent_sequences"),
    Case("两张4090 用 llama.cpp 跑 llama-3-70b 4k 上下文，选哪个量化最好", "max", "weight_dtype"),
    Case("一张A100 40G 用 vllm 部署 qwen2.5-32b，什么量化精度最高又放得下", "max", "weight_dtype"),
    Case("colab 的 T4 上 QLoRA 最大能训多大的模型", "max", "params"),
    Case("4090 推理，qwen2.5-7b 这个系列最大能跑多大的模型？", "max", "params"),
    Case("从头预训练 llama-2-13b，4k 序列，最少需要几张H100", "min", "num_gpus"),
    Case("用 vllm 部署 qwen2.5-72b 至少需要几张4090", "min", "num_gpus"),
    Case("A100 80G 上 LoRA 微调 llama-3-8b，rank 最大能开到多少", "max", "lora_rank"),
    Case("单卡A100 80G 用 GRPO + LoRA 训 qwen2.5-1.5b，回复长度最长能设多少", "max", "max_new_tokens"),
    Case("单卡H100 GRPO lora 训 qwen2.5-3b，每个 prompt 最多采样几条？", "max", "num_generations"),
    Case("A100 40G 上微调 qwen2.5-14b，用 QLoRA 还是 LoRA 好？", "compare", "task", 2),
    Case("3060 12G 用 ollama 跑 llama-3.1-8b：q4_k_m、q5_k_m 和 q6_k 对比一下", "compare", "weight_dtype", 3),
    Case("4张A100 40G 全参微调 llama-2-7b，ZeRO-2 和 ZeRO-3 哪个好", "compare", "zero_stage", 2),
    Case("一张L40S 部署 qwen2.5-7b 8k 上下文，vllm 和 sglang 对比", "compare", "engine", 2),
    Case(
        "4090 上 LoRA 微调 llama-3-8b，梯度检查点开和不开差多少显存", "compare", "gradient_checkpointing", 2
    ),
    Case("3090 上 QLoRA，mistral-7b 和 llama-3-8b 哪个更省显存", "compare", "model", 2),
]
CASES += VARIED
