"""Offline parser: realistic questions (half Chinese) -> the exact Scenario fields the user stated.

Each case asserts the whole stated-fields dict, so a missing field and a spurious one both fail.
Names are the normalised mentions the catalog resolves (checked in `test_mentions_resolve_in_catalog`).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from service.agent.base import ConversationState
from service.agent.events import DoneEvent
from service.agent.offline import OfflineAgent
from service.agent.offline.followup import merge_followup
from service.agent.offline.language import detect_language
from service.agent.offline.numbers import count_word, param_count, size_label, token_count, zh_numeral
from service.agent.offline.parser import parse_question
from tests.answer_support import ask
from tools.errors import ScenarioError
from tools.estimator import estimate
from tools.scenario import Scenario
from tools.units import fmt_gib

# fmt: off
EN_ESTIMATE: list[tuple[str, dict[str, Any]]] = [
    ('How much VRAM to full fine-tune Llama-2-7B on one A100?', {'task': 'full_finetune', 'model': 'llama-2-7b', 'gpu': 'a100', 'num_gpus': 1}),
    ('Can I run llama3 70b inference on 2x H100 80GB with int4?', {'task': 'inference', 'weight_dtype': 'int4', 'model': 'llama-3-70b', 'gpu': 'h100-80gb', 'num_gpus': 2}),
    ('QLoRA a 7B model on a free Colab T4?', {'task': 'qlora', 'model': '7B', 'gpu': 't4'}),
    ('Mixtral 8x7B serving with vLLM on 4x A100 40GB, 128k context', {'engine': 'vllm', 'task': 'inference', 'seq_len': 131072, 'model': 'mixtral-8x7b', 'gpu': 'a100-40gb', 'num_gpus': 4}),
    ('8x7B inference fp16 on 8 A100s', {'task': 'inference', 'weight_dtype': 'fp16', 'model': 'mixtral-8x7b', 'gpu': 'a100', 'num_gpus': 8}),
    ('DPO Llama-3-8B, bs=4, seq len 4096, gradient checkpointing, flash attention, 2 x A100', {'task': 'dpo', 'batch_size': 4, 'seq_len': 4096, 'gradient_checkpointing': True, 'attention': 'flash', 'model': 'llama-3-8b', 'gpu': 'a100', 'num_gpus': 2}),
    ('GRPO qwen2.5-7b 8 generations per prompt on 8 H100, zero stage 3', {'task': 'grpo', 'num_generations': 8, 'zero_stage': 3, 'model': 'qwen2.5-7b', 'gpu': 'h100', 'num_gpus': 8}),
    ('PPO llama-2-7b TP=2 PP=2 DP=4 on 16 A100', {'task': 'ppo', 'tp': 2, 'pp': 2, 'num_gpus': 16, 'model': 'llama-2-7b', 'gpu': 'a100'}),
    ('Llama-2-7B LoRA r=16 on q_proj,v_proj, alpha 32, lr 2e-4, 3 epochs, grad accumulation 8, on a 4090', {'task': 'lora', 'lora_rank': 16, 'lora_targets': ['q_proj', 'v_proj'], 'lora_alpha': 32.0, 'epochs': 3.0, 'learning_rate': 0.0002, 'gradient_accumulation_steps': 8, 'model': 'llama-2-7b', 'gpu': '4090', 'num_gpus': 1}),
    ('deepseek v3 FP8 inference on 8 H200', {'task': 'inference', 'weight_dtype': 'fp8', 'model': 'deepseek-v3', 'gpu': 'h200', 'num_gpus': 8}),
    ('LoRA fine-tune Qwen2.5-14B with rank 64 on all linear layers, batch 2, cutoff_len 4096, one H100', {'task': 'lora', 'lora_rank': 64, 'lora_targets': ['all-linear'], 'batch_size': 2, 'seq_len': 4096, 'model': 'qwen2.5-14b', 'gpu': 'h100', 'num_gpus': 1}),
    ('Will Qwen3-30B-A3B fit on a single RTX 4090 for inference in 4-bit?', {'task': 'inference', 'weight_dtype': 'int4', 'model': 'qwen3-30b-a3b', 'gpu': '4090', 'num_gpus': 1}),
    ('pretrain a 1.5B model from scratch on 8 A100 80GB, batch size 16, sequence length 2048, bf16', {'task': 'pretrain', 'weight_dtype': 'bf16', 'batch_size': 16, 'seq_len': 2048, 'model': '1.5B', 'gpu': 'a100-80gb', 'num_gpus': 8}),
    ('Full fine-tuning Mistral 7B with DeepSpeed ZeRO-2 on 4 A100 40GB, micro batch 4, 4k context', {'task': 'full_finetune', 'batch_size': 4, 'seq_len': 4096, 'zero_stage': 2, 'model': 'mistral-7b', 'gpu': 'a100-40gb', 'num_gpus': 4}),
    ('How much memory does Llama 3.1 8B need for inference at 128k context?', {'task': 'inference', 'seq_len': 131072, 'model': 'llama-3.1-8b'}),
    ('serve Llama-3-70B on 2x H100 with vLLM, gpu_memory_utilization 0.9, 32 concurrent users, 8k context', {'engine': 'vllm', 'task': 'inference', 'batch_size': 32, 'seq_len': 8192, 'gpu_memory_utilization': 0.9, 'model': 'llama-3-70b', 'gpu': 'h100', 'num_gpus': 2}),
    ('Can I QLoRA Llama-2-70B on a single A100 80GB with batch 1 and 2048 tokens?', {'task': 'qlora', 'batch_size': 1, 'seq_len': 2048, 'model': 'llama-2-70b', 'gpu': 'a100-80gb', 'num_gpus': 1}),
    ('Gemma 2 9B LoRA with 8-bit adam and gradient checkpointing on a 3090', {'task': 'lora', 'optimizer': 'adamw_8bit', 'gradient_checkpointing': True, 'model': 'gemma-2-9b', 'gpu': '3090', 'num_gpus': 1}),
    ('phi-3-mini inference on a T4 in fp16', {'task': 'inference', 'weight_dtype': 'fp16', 'model': 'phi-3-mini', 'gpu': 't4', 'num_gpus': 1}),
    ('full finetune tinyllama on one 3060 12GB, bs 8, seq 1024', {'task': 'full_finetune', 'batch_size': 8, 'seq_len': 1024, 'model': 'tinyllama-1.1b', 'gpu': '3060-12gb', 'num_gpus': 1}),
    ('Qwen2.5-72B inference with AWQ on 2 x A100 80GB, 32k context', {'task': 'inference', 'quant_method': 'awq', 'weight_dtype': 'int4', 'seq_len': 32768, 'model': 'qwen2.5-72b', 'gpu': 'a100-80gb', 'num_gpus': 2}),
    ('Yi-34B LoRA on 2x 4090, ZeRO-3, offload optimizer to CPU', {'task': 'lora', 'zero_stage': 3, 'offload_optimizer': 'cpu', 'model': 'yi-34b', 'gpu': '4090', 'num_gpus': 2}),
    ('fine-tune Baichuan2-13B with full parameters on 8 A800 using FSDP, batch 2, cutoff_len 2048', {'task': 'full_finetune', 'batch_size': 2, 'seq_len': 2048, 'zero_stage': 3, 'model': 'baichuan2-13b', 'gpu': 'a800', 'num_gpus': 8}),
    ('InternLM2.5-7B QLoRA on a 4090 with paged_adamw_8bit, seq 2048, batch 4', {'task': 'qlora', 'optimizer': 'paged_adamw_8bit', 'batch_size': 4, 'seq_len': 2048, 'model': 'internlm2.5-7b', 'gpu': '4090', 'num_gpus': 1}),
    ('GPT-2 full fine-tuning on a T4, batch size 32, 1024 tokens, fp32', {'task': 'full_finetune', 'weight_dtype': 'fp32', 'batch_size': 32, 'seq_len': 1024, 'model': 'gpt2', 'gpu': 't4', 'num_gpus': 1}),
    ('Falcon-40B inference in int8 on 2 A100s', {'task': 'inference', 'weight_dtype': 'int8', 'model': 'falcon-40b', 'gpu': 'a100', 'num_gpus': 2}),
    ('DeepSeek-V2-Lite LoRA r=8 on 4 H800, 4k context', {'task': 'lora', 'lora_rank': 8, 'seq_len': 4096, 'model': 'deepseek-v2-lite', 'gpu': 'h800', 'num_gpus': 4}),
    ('llama 3 8b full fine-tune with pure bf16 and adamw on one H100, batch 8, seq 2048', {'task': 'full_finetune', 'weight_dtype': 'bf16', 'precision_recipe': 'bf16', 'optimizer': 'adamw', 'batch_size': 8, 'seq_len': 2048, 'model': 'llama-3-8b', 'gpu': 'h100', 'num_gpus': 1}),
    ('Llama-3.1-70B full PPO on 64 H100, TP=8, zero 3', {'task': 'ppo', 'zero_stage': 3, 'tp': 8, 'model': 'llama-3.1-70b', 'gpu': 'h100', 'num_gpus': 64}),
    ('Qwen3-8B GRPO, 16 generations, 1024 new tokens, on 8 H20', {'task': 'grpo', 'max_new_tokens': 1024, 'num_generations': 16, 'model': 'qwen3-8b', 'gpu': 'h20', 'num_gpus': 8}),
    ('DPO of mistral-7b with LoRA rank 16 on a single A6000', {'task': 'dpo', 'lora_rank': 16, 'model': 'mistral-7b', 'gpu': 'a6000', 'num_gpus': 1}),
    ('Llama-2-13B inference on 2 L40S in bf16, batch 16, context 4096', {'task': 'inference', 'weight_dtype': 'bf16', 'batch_size': 16, 'seq_len': 4096, 'model': 'llama-2-13b', 'gpu': 'l40s', 'num_gpus': 2}),
    ('run llama-3.2-3b on a 4060 with load_in_4bit', {'task': 'inference', 'quant_method': 'bnb', 'weight_dtype': 'nf4', 'model': 'llama-3.2-3b', 'gpu': '4060', 'num_gpus': 1}),
    ('Gemma-3-27B inference on one H100 with fp8 kv cache and 64k context', {'task': 'inference', 'kv_dtype': 'fp8', 'seq_len': 65536, 'model': 'gemma-3-27b', 'gpu': 'h100', 'num_gpus': 1}),
    ('Qwen3-235B-A22B FP8 serving on 8 H200, 32k tokens, max_num_seqs 64', {'task': 'inference', 'weight_dtype': 'fp8', 'batch_size': 64, 'seq_len': 32768, 'model': 'qwen3-235b-a22b', 'gpu': 'h200', 'num_gpus': 8}),
    ('Llama-2-7B full fine-tune, megatron, TP=2 PP=2 DP=4, batch 8, seq 1024', {'task': 'full_finetune', 'precision_recipe': 'megatron', 'batch_size': 8, 'seq_len': 1024, 'tp': 2, 'pp': 2, 'num_gpus': 16, 'model': 'llama-2-7b'}),
    ('Mixtral 8x22B full fine-tuning on 64 H100 with expert parallel 8 and ZeRO-1', {'task': 'full_finetune', 'zero_stage': 1, 'ep': 8, 'model': 'mixtral-8x22b', 'gpu': 'h100', 'num_gpus': 64}),
    ('llama-3-8b LoRA with eager attention, batch 1, 8192 tokens, on 1 A100 40GB', {'task': 'lora', 'batch_size': 1, 'seq_len': 8192, 'attention': 'eager', 'model': 'llama-3-8b', 'gpu': 'a100-40gb', 'num_gpus': 1}),
    ('Qwen2.5-7B SFT with selective recompute, 8x H100, sequence parallel, TP=4', {'task': 'full_finetune', 'recompute': 'selective', 'tp': 4, 'sequence_parallel': True, 'model': 'qwen2.5-7b', 'gpu': 'h100', 'num_gpus': 8}),
    ('GLM-4-9B inference in int4 GPTQ on a 4090D', {'task': 'inference', 'quant_method': 'gptq', 'weight_dtype': 'int4', 'model': 'glm-4-9b', 'gpu': '4090d', 'num_gpus': 1}),
    ('Does Llama-2-7B LoRA with 3 epochs and learning rate 1e-4 fit on a 4090?', {'task': 'lora', 'epochs': 3.0, 'learning_rate': 0.0001, 'model': 'llama-2-7b', 'gpu': '4090', 'num_gpus': 1}),
    ('Qwen2.5-1.5B full fine-tuning on an RTX 5090 with adamw, gradient checkpointing off, batch 16', {'task': 'full_finetune', 'optimizer': 'adamw', 'batch_size': 16, 'gradient_checkpointing': False, 'model': 'qwen2.5-1.5b', 'gpu': '5090', 'num_gpus': 1}),
    ('llama2 7b inference fp32 on a V100 32GB', {'task': 'inference', 'weight_dtype': 'fp32', 'model': 'llama-2-7b', 'gpu': 'v100-32gb', 'num_gpus': 1}),
    ('Phi-4 LoRA on one L4, rank 8, targets q_proj k_proj v_proj o_proj', {'task': 'lora', 'lora_rank': 8, 'lora_targets': ['q_proj', 'k_proj', 'v_proj', 'o_proj'], 'model': 'phi-4', 'gpu': 'l4', 'num_gpus': 1}),
    ('Qwen2.5-32B QLoRA with double quantization on a single 4090, batch 1, 2k', {'task': 'qlora', 'double_quant': True, 'batch_size': 1, 'seq_len': 2048, 'model': 'qwen2.5-32b', 'gpu': '4090', 'num_gpus': 1}),
    ('8 GPUs of H100 for Llama-3-70B full fine-tune with zero3, bs 1, 4096 tokens', {'task': 'full_finetune', 'batch_size': 1, 'seq_len': 4096, 'zero_stage': 3, 'model': 'llama-3-70b', 'gpu': 'h100', 'num_gpus': 8}),
    ('Can two RTX 3090s fine-tune llama 2 13b with LoRA?', {'task': 'lora', 'model': 'llama-2-13b', 'gpu': '3090', 'num_gpus': 2}),
    ('inference of a 70B model on an MI300X', {'task': 'inference', 'model': '70B', 'gpu': 'mi300x', 'num_gpus': 1}),
    ('Llama 3 70B with tensor parallel 4 on four A100 80GB, inference at 16k context', {'task': 'inference', 'seq_len': 16384, 'tp': 4, 'model': 'llama-3-70b', 'gpu': 'a100-80gb', 'num_gpus': 4}),
    ('freeze tuning Qwen2.5-7B, last 4 layers, on one A10G', {'task': 'freeze', 'trainable_layers': 4, 'model': 'qwen2.5-7b', 'gpu': 'a10g', 'num_gpus': 1}),
    ('Mistral-7B full fine-tune with Adafactor on a single A100', {'task': 'full_finetune', 'optimizer': 'adafactor', 'model': 'mistral-7b', 'gpu': 'a100', 'num_gpus': 1}),
    ('LoRA Llama-3.1-8B with lora_dropout 0.05 and alpha 16, global batch 128, bs 4, one 4090', {'task': 'lora', 'lora_alpha': 16.0, 'lora_dropout': 0.05, 'global_batch_size': 128, 'batch_size': 4, 'model': 'llama-3.1-8b', 'gpu': '4090', 'num_gpus': 1}),
    ('qwen2.5-0.5b full fine-tune on a 2080, batch 8, 512 tokens', {'task': 'full_finetune', 'batch_size': 8, 'seq_len': 512, 'model': 'qwen2.5-0.5b', 'gpu': '2080', 'num_gpus': 1}),
    ('DoRA on Llama-2-7B with r=16, one A100 40GB', {'task': 'lora', 'dora': True, 'lora_rank': 16, 'model': 'llama-2-7b', 'gpu': 'a100-40gb', 'num_gpus': 1}),
    ('fine tune Llama-2-7B on 2 nodes of 8 A100', {'task': 'full_finetune', 'model': 'llama-2-7b', 'gpu': 'a100', 'num_gpus': 16}),
    ('Qwen2.5-14B-Instruct inference in bf16 on a single H20, 32k context, batch 4', {'task': 'inference', 'weight_dtype': 'bf16', 'batch_size': 4, 'seq_len': 32768, 'model': 'qwen2.5-14b', 'gpu': 'h20', 'num_gpus': 1}),
]
# fmt: on

# fmt: off
ZH_ESTIMATE: list[tuple[str, dict[str, Any]]] = [
    ('Qwen2.5-7B 全参微调需要多少显存？', {'task': 'full_finetune', 'model': 'qwen2.5-7b'}),
    ('两张4090能不能LoRA微调千问2.5-14B，batch 8，cutoff_len 2048', {'task': 'lora', 'batch_size': 8, 'seq_len': 2048, 'model': 'qwen2.5-14b', 'gpu': '4090', 'num_gpus': 2}),
    ('8卡H800 全量微调 Qwen3-30B-A3B，ZeRO-3，32K上下文', {'task': 'full_finetune', 'seq_len': 32768, 'zero_stage': 3, 'model': 'qwen3-30b-a3b', 'gpu': 'h800', 'num_gpus': 8}),
    ('单卡3090 推理 70亿参数模型 4k上下文', {'task': 'inference', 'seq_len': 4096, 'model': '7B', 'gpu': '3090', 'num_gpus': 1}),
    ('预训练一个 70亿 模型，8卡A800，梯度检查点，bf16', {'task': 'pretrain', 'weight_dtype': 'bf16', 'gradient_checkpointing': True, 'model': '7B', 'gpu': 'a800', 'num_gpus': 8}),
    ('glm-4-9b 部署 8192 tokens int8 单卡 L40S', {'task': 'inference', 'weight_dtype': 'int8', 'seq_len': 8192, 'model': 'glm-4-9b', 'gpu': 'l40s', 'num_gpus': 1}),
    ('单卡4090 QLoRA 微调 Llama-2-13B，批大小 4，序列长度 2048', {'task': 'qlora', 'batch_size': 4, 'seq_len': 2048, 'model': 'llama-2-13b', 'gpu': '4090', 'num_gpus': 1}),
    ('用两张A100 80GB 部署 Llama-3-70B，int4 量化，上下文 32k', {'task': 'inference', 'weight_dtype': 'int4', 'seq_len': 32768, 'model': 'llama-3-70b', 'gpu': 'a100-80gb', 'num_gpus': 2}),
    ('Qwen2.5-72B 全参微调，64卡H100，ZeRO-3，梯度检查点，batch 1，4k上下文', {'task': 'full_finetune', 'batch_size': 1, 'seq_len': 4096, 'gradient_checkpointing': True, 'zero_stage': 3, 'model': 'qwen2.5-72b', 'gpu': 'h100', 'num_gpus': 64}),
    ('千问2.5-7B LoRA 秩 64，所有线性层，单卡 A10，序列长度 1024', {'task': 'lora', 'lora_rank': 64, 'lora_targets': ['all-linear'], 'seq_len': 1024, 'model': 'qwen2.5-7b', 'gpu': 'a10', 'num_gpus': 1}),
    ('Llama-3-8B 推理，fp16，单卡 T4，8192 tokens', {'task': 'inference', 'weight_dtype': 'fp16', 'seq_len': 8192, 'model': 'llama-3-8b', 'gpu': 't4', 'num_gpus': 1}),
    ('8卡A100 用 DeepSpeed ZeRO-2 全参微调 Llama-2-13B，每卡batch 4', {'task': 'full_finetune', 'batch_size': 4, 'zero_stage': 2, 'model': 'llama-2-13b', 'gpu': 'a100', 'num_gpus': 8}),
    ('700亿参数的模型推理需要几张H100？', {'task': 'inference', 'model': '70B', 'gpu': 'h100'}),
    ('DeepSeek-V3 FP8 部署，8卡H200，128k上下文', {'task': 'inference', 'weight_dtype': 'fp8', 'seq_len': 131072, 'model': 'deepseek-v3', 'gpu': 'h200', 'num_gpus': 8}),
    ('Qwen3-30B-A3B 推理需要多少显存？用一张4090', {'task': 'inference', 'model': 'qwen3-30b-a3b', 'gpu': '4090', 'num_gpus': 1}),
    ('两张3090 LoRA 微调 Yi-34B，开启梯度检查点和flash attention', {'task': 'lora', 'gradient_checkpointing': True, 'attention': 'flash', 'model': 'yi-34b', 'gpu': '3090', 'num_gpus': 2}),
    ('Baichuan2-7B 全量微调，4卡A800，混合精度，AdamW，序列长度 4096', {'task': 'full_finetune', 'precision_recipe': 'mixed', 'optimizer': 'adamw', 'seq_len': 4096, 'model': 'baichuan2-7b', 'gpu': 'a800', 'num_gpus': 4}),
    ('书生浦语2.5-7B QLoRA，单卡 4060，batch 2', {'task': 'qlora', 'batch_size': 2, 'model': 'internlm2.5-7b', 'gpu': '4060', 'num_gpus': 1}),
    ('四卡4090 DPO 训练 Llama-3-8B，LoRA，上下文 4096', {'task': 'dpo', 'seq_len': 4096, 'model': 'llama-3-8b', 'gpu': '4090', 'num_gpus': 4, 'lora_rank': 8}),
    ('GRPO 训练 Qwen2.5-7B，每个prompt 采样 8，8卡H800，生成长度 1024', {'task': 'grpo', 'max_new_tokens': 1024, 'seq_len': 1536, 'num_generations': 8, 'model': 'qwen2.5-7b', 'gpu': 'h800', 'num_gpus': 8}),
    ('PPO 训练 70亿 模型，16卡A100，TP=2，ZeRO-3', {'task': 'ppo', 'zero_stage': 3, 'tp': 2, 'model': '7B', 'gpu': 'a100', 'num_gpus': 16}),
    ('Mixtral 8x7B 推理，int4 量化，单卡 A100 80GB', {'task': 'inference', 'weight_dtype': 'int4', 'model': 'mixtral-8x7b', 'gpu': 'a100-80gb', 'num_gpus': 1}),
    ('单卡H20 部署 千问2.5-32B，bf16，32k上下文，并发 16', {'task': 'inference', 'weight_dtype': 'bf16', 'batch_size': 16, 'seq_len': 32768, 'model': 'qwen2.5-32b', 'gpu': 'h20', 'num_gpus': 1}),
    ('Gemma-2-27B 全参微调，8卡H100，FSDP，batch 2，上下文 8k', {'task': 'full_finetune', 'batch_size': 2, 'seq_len': 8192, 'zero_stage': 3, 'model': 'gemma-2-27b', 'gpu': 'h100', 'num_gpus': 8}),
    ('Phi-3-mini 推理，单卡3060，4位量化', {'task': 'inference', 'weight_dtype': 'int4', 'model': 'phi-3-mini', 'gpu': '3060', 'num_gpus': 1}),
    ('gpt2 全参微调 单卡 T4 batch 16 长度 1024 单精度', {'task': 'full_finetune', 'weight_dtype': 'fp32', 'batch_size': 16, 'seq_len': 1024, 'model': 'gpt2', 'gpu': 't4', 'num_gpus': 1}),
    ('Llama-3.1-8B 全参微调，纯bf16，8位adam，单卡 H100，batch 4', {'task': 'full_finetune', 'weight_dtype': 'bf16', 'precision_recipe': 'bf16', 'optimizer': 'adamw_8bit', 'batch_size': 4, 'model': 'llama-3.1-8b', 'gpu': 'h100', 'num_gpus': 1}),
    ('Qwen2.5-14B 推理，张量并行 2，两张4090D，上下文 16k', {'task': 'inference', 'seq_len': 16384, 'tp': 2, 'model': 'qwen2.5-14b', 'gpu': '4090d', 'num_gpus': 2}),
    ('Llama-2-70B QLoRA，双重量化，单卡 A100 80GB，序列长度 2048，batch 1', {'task': 'qlora', 'double_quant': True, 'batch_size': 1, 'seq_len': 2048, 'model': 'llama-2-70b', 'gpu': 'a100-80gb', 'num_gpus': 1}),
    ('DeepSeek-V2-Lite 全参微调，8卡A800，专家并行 4，ZeRO-1', {'task': 'full_finetune', 'zero_stage': 1, 'ep': 4, 'model': 'deepseek-v2-lite', 'gpu': 'a800', 'num_gpus': 8}),
    ('Qwen3-8B LoRA，学习率 1e-4，训练3轮，梯度累积 8，单卡4090', {'task': 'lora', 'epochs': 3.0, 'learning_rate': 0.0001, 'gradient_accumulation_steps': 8, 'model': 'qwen3-8b', 'gpu': '4090', 'num_gpus': 1}),
    ('Falcon-7B 推理 单卡 L20 fp16 批大小 8', {'task': 'inference', 'weight_dtype': 'fp16', 'batch_size': 8, 'model': 'falcon-7b', 'gpu': 'l20', 'num_gpus': 1}),
    ('Llama-3-8B 全参微调 不开梯度检查点 单卡 H100 batch 2 序列长度 4096', {'task': 'full_finetune', 'batch_size': 2, 'seq_len': 4096, 'gradient_checkpointing': False, 'model': 'llama-3-8b', 'gpu': 'h100', 'num_gpus': 1}),
    ('910B 上 全参微调 Qwen2.5-7B，8卡，ZeRO-3，序列长度 2048', {'task': 'full_finetune', 'seq_len': 2048, 'zero_stage': 3, 'model': 'qwen2.5-7b', 'gpu': '910b', 'num_gpus': 8}),
    ('单卡 5090 跑 Qwen2.5-32B 推理，int4，上下文 8k', {'task': 'inference', 'weight_dtype': 'int4', 'seq_len': 8192, 'model': 'qwen2.5-32b', 'gpu': '5090', 'num_gpus': 1}),
    ('两台8卡A100 全参微调 Llama-3-70B，ZeRO-3，梯度检查点', {'task': 'full_finetune', 'gradient_checkpointing': True, 'zero_stage': 3, 'model': 'llama-3-70b', 'gpu': 'a100', 'num_gpus': 16}),
    ('用 load_in_4bit 加载 Llama-2-7B 在单卡 T4 上推理', {'task': 'inference', 'quant_method': 'bnb', 'weight_dtype': 'nf4', 'model': 'llama-2-7b', 'gpu': 't4', 'num_gpus': 1}),
    ('Qwen2.5-7B 冻结微调，最后 2 层，单卡 4090', {'task': 'freeze', 'trainable_layers': 2, 'model': 'qwen2.5-7b', 'gpu': '4090', 'num_gpus': 1}),
    ('Llama-3-8B 预训练，流水线并行 4，张量并行 2，64卡H100，序列长度 8192', {'task': 'pretrain', 'seq_len': 8192, 'tp': 2, 'pp': 4, 'model': 'llama-3-8b', 'gpu': 'h100', 'num_gpus': 64}),
    ('TinyLlama 全参微调 单卡 3060 batch 4', {'task': 'full_finetune', 'batch_size': 4, 'model': 'tinyllama-1.1b', 'gpu': '3060', 'num_gpus': 1}),
    ('DeepSeek-R1 部署需要多少张 H20？', {'task': 'inference', 'model': 'deepseek-r1', 'gpu': 'h20'}),
    ('Qwen2.5-3B 全参微调，单卡 V100 32GB，fp16，batch 8，上下文 2048', {'task': 'full_finetune', 'weight_dtype': 'fp16', 'batch_size': 8, 'seq_len': 2048, 'model': 'qwen2.5-3b', 'gpu': 'v100-32gb', 'num_gpus': 1}),
    ('两张A6000 上 Gemma-3-12B LoRA，rank 32，q_proj 和 v_proj', {'task': 'lora', 'lora_rank': 32, 'lora_targets': ['q_proj', 'v_proj'], 'model': 'gemma-3-12b', 'gpu': 'a6000', 'num_gpus': 2}),
    ('InternLM2.5-7B 推理，fp8 KV cache，单卡 L40S，上下文 32k', {'task': 'inference', 'kv_dtype': 'fp8', 'seq_len': 32768, 'model': 'internlm2.5-7b', 'gpu': 'l40s', 'num_gpus': 1}),
    ('Llama-2-7B 全参微调，单卡 A100，优化器卸载到 CPU，ZeRO-2', {'task': 'full_finetune', 'zero_stage': 2, 'offload_optimizer': 'cpu', 'model': 'llama-2-7b', 'gpu': 'a100', 'num_gpus': 1}),
    ('千问3-14B QLoRA，单卡3090，序列长度 4k，batch 2，梯度检查点', {'task': 'qlora', 'batch_size': 2, 'seq_len': 4096, 'gradient_checkpointing': True, 'model': 'qwen3-14b', 'gpu': '3090', 'num_gpus': 1}),
    ('Mistral-7B 推理，显存利用率 0.9，单卡4090，上下文 8k', {'task': 'inference', 'seq_len': 8192, 'gpu_memory_utilization': 0.9, 'model': 'mistral-7b', 'gpu': '4090', 'num_gpus': 1}),
    ('Llama-3-70B 全参微调 最少要几张 H100？ZeRO-3，batch 1，2048 tokens', {'task': 'full_finetune', 'batch_size': 1, 'seq_len': 2048, 'zero_stage': 3, 'model': 'llama-3-70b', 'gpu': 'h100'}),
    ('Qwen2.5-7B DPO，全参，8卡 A100，序列长度 2048，ZeRO-3', {'task': 'dpo', 'seq_len': 2048, 'zero_stage': 3, 'model': 'qwen2.5-7b', 'gpu': 'a100', 'num_gpus': 8}),
    ('单卡4090 能不能全参微调 1.5B 模型，batch 8，长度 2048', {'task': 'full_finetune', 'batch_size': 8, 'seq_len': 2048, 'model': '1.5B', 'gpu': '4090', 'num_gpus': 1}),
    ('Llama-3.2-1B 推理 单卡 T4', {'task': 'inference', 'model': 'llama-3.2-1b', 'gpu': 't4', 'num_gpus': 1}),
    ('两张H100 80GB LoRA 微调 Qwen2.5-72B，4位，ZeRO-3', {'task': 'qlora', 'weight_dtype': 'nf4', 'zero_stage': 3, 'model': 'qwen2.5-72b', 'gpu': 'h100-80gb', 'num_gpus': 2}),
    ('Qwen2.5-7B 全参微调，AdamW，bf16，8卡A800，ZeRO-2，全局batch 512，每卡batch 4', {'task': 'full_finetune', 'weight_dtype': 'bf16', 'optimizer': 'adamw', 'global_batch_size': 512, 'batch_size': 4, 'zero_stage': 2, 'model': 'qwen2.5-7b', 'gpu': 'a800', 'num_gpus': 8}),
    ('GLM-4-9B LoRA，单卡 A10G，学习率 2e-5，lora_alpha 32', {'task': 'lora', 'lora_alpha': 32.0, 'learning_rate': 2e-05, 'model': 'glm-4-9b', 'gpu': 'a10g', 'num_gpus': 1}),
]
# fmt: on

# fmt: off
EN_CONCEPT: list[tuple[str, str]] = [
    ('does num_epochs change memory?', 'epochs_grad_accum'),
    ("why doesn't an A3B MoE need only 3B of memory?", 'moe_active'),
    ('what is the 16x rule?', 'rule_16x'),
    ("why is the seed's KV formula wrong for Llama-3?", 'seed_kv_gqa'),
    ('Does gradient accumulation increase GPU memory?', 'epochs_grad_accum'),
    ('Why is the activation formula already in bytes?', 'seed_activation_bytes'),
    ('Does data parallelism shrink activations?', 'dp_activations'),
    ('What is gradient checkpointing?', 'gradient_checkpointing'),
    ('explain ZeRO stages', 'zero_stages'),
    ('What is the difference between LoRA and QLoRA memory?', 'lora_vs_qlora'),
    ('how does flash attention save memory?', 'flash_attention'),
    ('what is the KV cache?', 'kv_cache'),
    ('why do logits matter for a 152k vocabulary?', 'logits_vocab'),
    ('GiB vs GB?', 'gib_vs_gb'),
]
# fmt: on

# fmt: off
ZH_CONCEPT: list[tuple[str, str]] = [
    ('训练轮数会影响显存吗？', 'epochs_grad_accum'),
    ('为什么 A3B 的 MoE 模型不是只需要 3B 的显存？', 'moe_active'),
    ('什么是 16 倍法则？', 'rule_16x'),
    ('梯度累积会增加显存吗？', 'epochs_grad_accum'),
    ('数据并行会减少每张卡的激活吗？', 'dp_activations'),
    ('什么是梯度检查点？', 'gradient_checkpointing'),
    ('ZeRO 各个阶段有什么区别？', 'zero_stages'),
    ('LoRA 和 QLoRA 的显存有什么区别？', 'lora_vs_qlora'),
    ('flash attention 为什么省显存？', 'flash_attention'),
    ('什么是 KV 缓存？', 'kv_cache'),
    ('为什么大词表的 logits 很占显存？', 'logits_vocab'),
    ('GiB 和 GB 有什么区别？', 'gib_vs_gb'),
    ('为什么种子材料的 KV 公式对 Llama-3 是错的？', 'seed_kv_gqa'),
    ('学习率会影响显存吗？', 'epochs_grad_accum'),
]
# fmt: on

# Follow-up fragments: only the changed fields (merged into the previous scenario by followup.py).
# fmt: off
EN_FRAGMENTS: list[tuple[str, dict[str, Any]]] = [
    ('what about with LoRA?', {'task': 'lora'}),
    ('and at 32k context?', {'seq_len': 32768}),
    ('batch 16?', {'batch_size': 16}),
    ('what about QLoRA instead?', {'task': 'qlora'}),
    ('and with ZeRO-3 on 8 GPUs?', {'zero_stage': 3, 'num_gpus': 8}),
    ('how about an H100?', {'gpu': 'h100', 'num_gpus': 1}),
    ('with gradient checkpointing?', {'gradient_checkpointing': True}),
    ('and in int4?', {'weight_dtype': 'int4'}),
    ('what if I use 8-bit adam?', {'optimizer': 'adamw_8bit'}),
    ('and for inference at 128k context?', {'task': 'inference', 'seq_len': 131072}),
    ('rank 64 on all linear layers?', {'lora_rank': 64, 'lora_targets': ['all-linear']}),
    ('what about 3 epochs?', {'epochs': 3.0}),
]
# fmt: on
# fmt: off
ZH_FRAGMENTS: list[tuple[str, dict[str, Any]]] = [
    ('那如果用两张卡呢?', {'num_gpus': 2}),
    ('换成4090呢', {'gpu': '4090'}),
    ('用QLoRA呢', {'task': 'qlora'}),
    ('改成全参微调呢？', {'task': 'full_finetune'}),
    ('上下文改成 32K 呢', {'seq_len': 32768}),
    ('batch 改成 2 呢', {'batch_size': 2}),
    ('开启梯度检查点呢？', {'gradient_checkpointing': True}),
    ('那用8卡H800呢', {'gpu': 'h800', 'num_gpus': 8}),
    ('换成 int8 推理呢', {'task': 'inference', 'weight_dtype': 'int8'}),
    ('用 ZeRO-2 呢', {'zero_stage': 2}),
    ('如果不开 flash attention 呢', {'attention': 'eager'}),
    ('梯度累积改成 16 呢', {'gradient_accumulation_steps': 16}),
]
# fmt: on


def _check(question: str, expected: dict[str, Any], language: str) -> None:
    parsed = parse_question(question)
    assert parsed.language == language, question
    assert parsed.intent == "estimate", (question, parsed.intent, parsed.topic)
    assert parsed.scenario == expected, question
    Scenario.model_validate(parsed.scenario)  # every parsed dict is a valid (partial) Scenario


@pytest.mark.parametrize(("question", "expected"), EN_ESTIMATE + EN_FRAGMENTS)
def test_english_questions(question: str, expected: dict[str, Any]) -> None:
    _check(question, expected, "en")


@pytest.mark.parametrize(("question", "expected"), ZH_ESTIMATE + ZH_FRAGMENTS)
def test_chinese_questions(question: str, expected: dict[str, Any]) -> None:
    _check(question, expected, "zh")


@pytest.mark.parametrize(("question", "topic"), EN_CONCEPT + ZH_CONCEPT)
def test_concept_questions(question: str, topic: str) -> None:
    parsed = parse_question(question)
    assert parsed.intent == "concept", question
    assert parsed.topic == topic
    assert parsed.scenario == {}


def test_corpus_is_large_and_half_chinese() -> None:
    english = len(EN_ESTIMATE) + len(EN_FRAGMENTS) + len(EN_CONCEPT)
    chinese = len(ZH_ESTIMATE) + len(ZH_FRAGMENTS) + len(ZH_CONCEPT)
    assert english + chinese >= 120
    assert abs(english - chinese) <= 10


@pytest.mark.parametrize(
    ("question", "intent"),
    [
        ("hi", "greeting"),
        ("你好", "greeting"),
        ("which GPUs do you support?", "list_gpus"),
        ("支持哪些显卡？", "list_gpus"),
        ("list models", "list_models"),
        ("支持哪些模型", "list_models"),
        ("what is the weather today?", "unknown"),
    ],
)
def test_other_intents(question: str, intent: str) -> None:
    assert parse_question(question).intent == intent


def test_mentions_resolve_in_catalog() -> None:
    """Every normalised model and GPU name of the corpus is one the catalog knows."""
    from tools.catalog import find_gpu, resolve_model

    not_in_catalog = {"2080"}  # answered with near names (see test_offline_answers)
    for question, expected in EN_ESTIMATE + ZH_ESTIMATE:
        if "model" in expected:  # a catalog model, or a bare size built to its exact count
            resolved = resolve_model(expected["model"])
            assert resolved.spec is not None or resolved.assumed_code == "model.built_for_size", question
        if expected.get("gpu") in not_in_catalog:
            with pytest.raises(ScenarioError) as err:
                find_gpu(expected["gpu"])
            assert err.value.field == "gpu" and err.value.suggestions
        elif "gpu" in expected:
            assert find_gpu(expected["gpu"])[0].memory_bytes > 0, question


def test_rl_with_lora_records_the_default_rank() -> None:
    parsed = parse_question("DPO Llama-3-8B with LoRA on one 4090")
    assert parsed.scenario["task"] == "dpo"
    assert parsed.scenario["lora_rank"] == 8
    assert parsed.filled["lora_rank"].code == "rl_lora_rank"
    assert parsed.filled["lora_rank"].values == {"method": "DPO", "rank": 8}


@pytest.mark.parametrize(
    ("text", "value"),
    [("4k", 4096), ("32K", 32768), ("128k", 131072), ("8192", 8192), ("1.5k", 1536), ("abc", None)],
)
def test_token_count(text: str, value: int | None) -> None:
    assert token_count(text) == value


@pytest.mark.parametrize(
    ("text", "value"),
    [("7B", 7_000_000_000), ("1.5b", 1_500_000_000), ("70亿", 7_000_000_000), ("700亿", 70_000_000_000),
     ("350M", 350_000_000), ("1.8万亿", 1_800_000_000_000), ("seven", None)],
)  # fmt: skip
def test_param_count(text: str, value: int | None) -> None:
    assert param_count(text) == value


def test_size_label_and_counts() -> None:
    assert size_label(7_000_000_000) == "7B"
    assert size_label(1_500_000_000) == "1.5B"
    assert size_label(500_000_000) == "0.5B"
    assert size_label(350_000_000) == "350M"
    assert [zh_numeral(t) for t in ("两", "单", "八", "十六", "三十二", "一百")] == [2, 1, 8, 16, 32, 100]
    assert [count_word(t) for t in ("two", "8", "four", "两")] == [2, 8, 4, 2]


@pytest.mark.parametrize(
    ("text", "default", "language"),
    [
        ("How much memory for Llama-2-7B?", "zh", "en"),
        ("Qwen2.5-7B 全参微调需要多少显存", "en", "zh"),
        ("batch 16?", "zh", "zh"),
        ("bs=4", "en", "en"),
        ("4090呢", "en", "zh"),
    ],
)
def test_detect_language(text: str, default: str, language: str) -> None:
    assert detect_language(text, default=default) == language  # type: ignore[arg-type]


def test_followup_merges_into_previous_and_new_question_replaces() -> None:
    previous = Scenario(model="llama-2-7b", task="qlora", gpu="4090", num_gpus=1, batch_size=4, seq_len=2048)
    lora = merge_followup(previous, parse_question("what about with LoRA?"))
    assert lora == {"model": "llama-2-7b", "task": "lora", "gpu": "4090", "num_gpus": 1, "batch_size": 4,
                    "seq_len": 2048}  # fmt: skip
    two = merge_followup(previous, parse_question("那如果用两张卡呢?"))
    assert two["num_gpus"] == 2 and two["task"] == "qlora" and two["gpu"] == "4090"
    new = merge_followup(previous, parse_question("Full fine-tune Qwen2.5-7B on 8 H100"))
    assert new == {"task": "full_finetune", "model": "qwen2.5-7b", "gpu": "h100", "num_gpus": 8}
    switched = merge_followup(previous, parse_question("what about Llama-3-8B?"))
    assert switched["model"] == "llama-3-8b" and switched["task"] == "qlora" and switched["seq_len"] == 2048


def test_followup_drops_what_the_new_task_cannot_use() -> None:
    previous = Scenario(
        model="llama-2-7b",
        task="qlora",
        weight_dtype="nf4",
        lora_rank=16,
        gpu="4090",
        gradient_checkpointing=True,
    )
    full = merge_followup(previous, parse_question("改成全参微调呢？"))
    assert "weight_dtype" not in full and "lora_rank" not in full
    assert full["gradient_checkpointing"] is True
    inference = merge_followup(previous, parse_question("and for inference at 128k context?"))
    assert inference["task"] == "inference" and "gradient_checkpointing" not in inference


_WORDS = st.sampled_from(
    ["LoRA", "Llama-2-7B", "两张", "4090", "batch", "8", "32K上下文", "bs=", "ZeRO-3", "TP=", "epochs", "70亿",
     "推理", "A100 80GB", "x", "呢", "?", "rank", "q_proj", "4-bit", "FSDP", "梯度检查点", "k", "0", "-1"]
)  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(_WORDS, st.text(max_size=6)), max_size=12))
def test_parser_never_crashes_and_stays_valid(words: list[str]) -> None:
    """Any text parses without an exception, into known Scenario fields only (values are checked later)."""
    parsed = parse_question(" ".join(words))
    assert parsed.intent in ("estimate", "concept", "list_gpus", "list_models", "greeting", "unknown")
    assert set(parsed.scenario) <= set(Scenario.model_fields)


# --- realistic questions: concrete scenarios that name a knowledge-base keyword, precision
# wording, card sizes without a card name, ollama / llama.cpp / LLaMA-Factory / unsloth phrasing.
# (question, the whole stated-fields dict, the fields the parser itself filled in as assumptions)
# fmt: off
EN_REALISTIC: list[tuple[str, dict[str, Any], list[str]]] = [
    ('Llama-3-8B LoRA with amp on one A100', {'task': 'lora', 'precision_recipe': 'amp', 'model': 'llama-3-8b', 'gpu': 'a100', 'num_gpus': 1}, []),
    ('Llama-3-8B full fine-tune with AMP on one A100', {'task': 'full_finetune', 'precision_recipe': 'amp', 'model': 'llama-3-8b', 'gpu': 'a100', 'num_gpus': 1}, []),
    ('Qwen2.5-7B full fine-tune, fp32 weights with bf16 autocast, one H100', {'task': 'full_finetune', 'weight_dtype': 'bf16', 'precision_recipe': 'amp', 'model': 'qwen2.5-7b', 'gpu': 'h100', 'num_gpus': 1}, []),
    ('Qwen2.5-7B full fine-tune with HF Trainer bf16=True on one H100', {'task': 'full_finetune', 'weight_dtype': 'bf16', 'precision_recipe': 'amp', 'model': 'qwen2.5-7b', 'gpu': 'h100', 'num_gpus': 1}, []),
    ('Llama-3-8B full fine-tune with DeepSpeed bf16 on 8 A100', {'task': 'full_finetune', 'weight_dtype': 'bf16', 'precision_recipe': 'mixed', 'model': 'llama-3-8b', 'gpu': 'a100', 'num_gpus': 8}, []),
    ('Llama-3-8B full fine-tune in bf16 on one H100', {'task': 'full_finetune', 'weight_dtype': 'bf16', 'model': 'llama-3-8b', 'gpu': 'h100', 'num_gpus': 1}, []),
    ('Llama-3-8B full fine-tune in pure bf16 on one H100', {'task': 'full_finetune', 'weight_dtype': 'bf16', 'precision_recipe': 'bf16', 'model': 'llama-3-8b', 'gpu': 'h100', 'num_gpus': 1}, []),
    ('is 24GB enough to fine-tune 7B with LoRA?', {'task': 'lora', 'model': '7B', 'gpu': 'rtx-4090'}, ['gpu']),
    ('Can I run Llama-3-8B on 8GB VRAM?', {'task': 'inference', 'model': 'llama-3-8b', 'gpu': 'rtx-4060'}, ['gpu']),
    ('Llama-3-70B inference on 80GB', {'task': 'inference', 'model': 'llama-3-70b', 'gpu': 'a100-80gb'}, ['gpu']),
    ('12GB card, Qwen2.5-7B QLoRA?', {'task': 'qlora', 'model': 'qwen2.5-7b', 'gpu': 'rtx-3060'}, ['gpu']),
    ('Mixtral 8x7B int4 on a single 4090?', {'weight_dtype': 'int4', 'model': 'mixtral-8x7b', 'gpu': '4090', 'num_gpus': 1}, []),
    ('ollama run llama3:70b on 2x 3090', {'engine': 'ollama', 'task': 'inference', 'model': 'llama-3-70b', 'gpu': '3090', 'num_gpus': 2, 'weight_dtype': 'q4_k_m'}, ['weight_dtype']),
    ('Can a Mac M2 with 32GB run 70B?', {'task': 'inference', 'model': '70B', 'gpu': 'apple-32gb'}, ['gpu']),
    ('ZeRO-3 full fine-tune of Llama-2-13B on 8 A100, how much memory?', {'task': 'full_finetune', 'zero_stage': 3, 'model': 'llama-2-13b', 'gpu': 'a100', 'num_gpus': 8}, []),
    ('Can I QLoRA Llama-3-8B on a 4090 with nf4?', {'task': 'qlora', 'weight_dtype': 'nf4', 'model': 'llama-3-8b', 'gpu': '4090', 'num_gpus': 1}, []),
    ('Does flash attention help Llama-3-8B on a 4090?', {'attention': 'flash', 'model': 'llama-3-8b', 'gpu': '4090', 'num_gpus': 1}, []),
    ('llama.cpp Q4_K_M llama-3-70b on a 3090 with 64GB RAM', {'engine': 'llama.cpp', 'weight_dtype': 'q4_k_m', 'model': 'llama-3-70b', 'gpu': '3090', 'num_gpus': 1}, []),
    ('How much VRAM does Qwen2.5-7B need for GRPO with vLLM on 4 H100?', {'engine': 'vllm', 'task': 'grpo', 'model': 'qwen2.5-7b', 'gpu': 'h100', 'num_gpus': 4}, []),
    ('fine-tune mistral 7b with lora rank 16 on a 3060 12gb, batch size 1, max_seq_length 512', {'task': 'lora', 'lora_rank': 16, 'batch_size': 1, 'seq_len': 512, 'model': 'mistral-7b', 'gpu': '3060-12gb', 'num_gpus': 1}, []),
    ('Deploy Llama-3.1-405B FP8 on 8 H100, how many GPUs do I need?', {'task': 'inference', 'weight_dtype': 'fp8', 'model': 'llama-3.1-405b', 'gpu': 'h100', 'num_gpus': 8}, []),
    ('Gemma 2 27B serving on 2 L4 in int8', {'task': 'inference', 'weight_dtype': 'int8', 'model': 'gemma-2-27b', 'gpu': 'l4', 'num_gpus': 2}, []),
    ('RTX 4070 12GB Phi-3-mini fine tuning full', {'task': 'full_finetune', 'model': 'phi-3-mini', 'gpu': '4070-12gb'}, []),
    ('Qwen3-32B QLoRA on an A6000, seq 8k, gradient checkpointing on', {'task': 'qlora', 'seq_len': 8192, 'gradient_checkpointing': True, 'model': 'qwen3-32b', 'gpu': 'a6000', 'num_gpus': 1}, []),
    ('Will a 3090 handle llama-2-13b inference in 8bit?', {'task': 'inference', 'weight_dtype': 'int8', 'model': 'llama-2-13b', 'gpu': '3090', 'num_gpus': 1}, []),
    ('DeepSeek-V2-Lite inference bf16 on 1 A100 80G, 32 concurrent requests', {'task': 'inference', 'weight_dtype': 'bf16', 'batch_size': 32, 'model': 'deepseek-v2-lite', 'gpu': 'a100-80gb', 'num_gpus': 1}, []),
    ('SFT Qwen2.5-14B with ZeRO-2 offload, 4x 4090, bs 1, 2048 tokens', {'task': 'full_finetune', 'batch_size': 1, 'seq_len': 2048, 'zero_stage': 2, 'offload_optimizer': 'cpu', 'model': 'qwen2.5-14b', 'gpu': '4090', 'num_gpus': 4}, []),
    ('ollama run deepseek-r1:32b on a 4090', {'engine': 'ollama', 'task': 'inference', 'model': 'deepseek-r1-distill-qwen-32b', 'gpu': '4090', 'num_gpus': 1, 'weight_dtype': 'q4_k_m'}, ['model', 'weight_dtype']),
    ('Why does Qwen3-30B-A3B not fit on a 4090?', {'model': 'qwen3-30b-a3b', 'gpu': '4090', 'num_gpus': 1}, []),
    ('Llama-3-8B full fine-tune, mixed precision with fp32 master weights, 8 A100', {'task': 'full_finetune', 'precision_recipe': 'mixed', 'model': 'llama-3-8b', 'gpu': 'a100', 'num_gpus': 8}, []),
]
ZH_REALISTIC: list[tuple[str, dict[str, Any], list[str]]] = [
    ('一张24G的4090能推理Qwen2.5-14B吗，用nf4量化', {'task': 'inference', 'weight_dtype': 'nf4', 'model': 'qwen2.5-14b', 'gpu': '4090', 'num_gpus': 1}, []),
    ('Qwen2.5-7B 全参微调 amp混合精度 单卡A100', {'task': 'full_finetune', 'precision_recipe': 'amp', 'model': 'qwen2.5-7b', 'gpu': 'a100', 'num_gpus': 1}, []),
    ('Llama-3-8B 全参微调，混合精度，fp32 主权重，8卡A100', {'task': 'full_finetune', 'precision_recipe': 'mixed', 'model': 'llama-3-8b', 'gpu': 'a100', 'num_gpus': 8}, []),
    ('Llama-3-8B 全参微调 纯bf16 单卡H100', {'task': 'full_finetune', 'weight_dtype': 'bf16', 'precision_recipe': 'bf16', 'model': 'llama-3-8b', 'gpu': 'h100', 'num_gpus': 1}, []),
    ('Qwen2.5-7B 全参微调 bf16 单卡H100', {'task': 'full_finetune', 'weight_dtype': 'bf16', 'model': 'qwen2.5-7b', 'gpu': 'h100', 'num_gpus': 1}, []),
    ('我只有16G显存能跑Qwen2.5-7B推理吗', {'task': 'inference', 'model': 'qwen2.5-7b', 'gpu': 'rtx-4060-ti'}, ['gpu']),
    ('48G显存能LoRA微调Qwen2.5-32B吗', {'task': 'lora', 'model': 'qwen2.5-32b', 'gpu': 'rtx-a6000'}, ['gpu']),
    ('用LLaMA-Factory在单卡A800上全参微调Qwen2.5-7B，cutoff_len 4096, per_device_train_batch_size 2，开deepspeed zero3', {'task': 'full_finetune', 'batch_size': 2, 'seq_len': 4096, 'zero_stage': 3, 'model': 'qwen2.5-7b', 'gpu': 'a800', 'num_gpus': 1}, []),
    ('vllm部署Qwen2.5-32B-Instruct-AWQ 需要多大显存', {'engine': 'vllm', 'task': 'inference', 'quant_method': 'awq', 'weight_dtype': 'int4', 'model': 'qwen2.5-32b'}, []),
    ('Qwen2.5-72B-Instruct-GPTQ-Int4 用vllm部署在两张A100 40G上，max_model_len 8192', {'engine': 'vllm', 'task': 'inference', 'quant_method': 'gptq', 'weight_dtype': 'int4', 'seq_len': 8192, 'model': 'qwen2.5-72b', 'gpu': 'a100-40gb', 'num_gpus': 2}, []),
    ('DeepSeek-R1-Distill-Qwen-32B 单卡4090能跑吗', {'task': 'inference', 'model': 'deepseek-r1-distill-qwen-32b', 'gpu': '4090', 'num_gpus': 1}, ['model']),
    ('用 unsloth 在 colab 免费T4上微调 llama-3.1-8b，4bit', {'task': 'qlora', 'weight_dtype': 'nf4', 'model': 'llama-3.1-8b', 'gpu': 't4'}, ['task']),
    ('ChatGLM3-6B P-Tuning 单卡 3060 12G', {'model': 'chatglm3-6b', 'gpu': '3060-12gb', 'num_gpus': 1, 'task': 'lora'}, ['task']),
    ('两张3090 NVLink 跑 Llama-2-70B int4 推理，上下文8k', {'task': 'inference', 'weight_dtype': 'int4', 'seq_len': 8192, 'model': 'llama-2-70b', 'gpu': '3090', 'num_gpus': 2}, []),
    ('百川2-13B 量化到 int8 部署在 T4 上', {'task': 'inference', 'weight_dtype': 'int8', 'model': 'baichuan2-13b', 'gpu': 't4'}, []),
    ('Qwen1.5-MoE-A2.7B 推理 单卡 4090', {'task': 'inference', 'model': 'qwen1.5-moe-a2.7b', 'gpu': '4090', 'num_gpus': 1}, []),
    ('Yi-1.5-34B-Chat 4bit 推理 单卡 4090 能行吗', {'task': 'inference', 'weight_dtype': 'int4', 'model': 'yi-34b', 'gpu': '4090', 'num_gpus': 1}, []),
    ('8张H100训练Llama-3-70B, TP 8, 全参, 序列长度 8k, 用 Megatron', {'task': 'full_finetune', 'precision_recipe': 'megatron', 'seq_len': 8192, 'tp': 8, 'model': 'llama-3-70b', 'gpu': 'h100', 'num_gpus': 8}, []),
    ('Qwen2.5-Coder-32B 推理显存需要多少？fp16', {'task': 'inference', 'weight_dtype': 'fp16', 'model': 'qwen2.5-coder-32b'}, []),
    ('GLM-4-9B-Chat 128k 上下文推理 需要几张 A100', {'task': 'inference', 'seq_len': 131072, 'model': 'glm-4-9b', 'gpu': 'a100'}, []),
    ('用4张4090 做 DPO 训练 Qwen2.5-7B，lora rank 64', {'task': 'dpo', 'lora_rank': 64, 'model': 'qwen2.5-7b', 'gpu': '4090', 'num_gpus': 4}, []),
    ('Qwen2.5-0.5B 预训练 单卡 4090 batch 32 上下文 1024', {'task': 'pretrain', 'batch_size': 32, 'seq_len': 1024, 'model': 'qwen2.5-0.5b', 'gpu': '4090', 'num_gpus': 1}, []),
    ('A10 24G 部署 qwen2.5-7b-instruct 需要量化吗', {'task': 'inference', 'model': 'qwen2.5-7b', 'gpu': 'a10-24gb'}, []),
    ('Mixtral-8x7B-Instruct 4bit QLoRA 单卡 A100 80G', {'task': 'qlora', 'weight_dtype': 'nf4', 'model': 'mixtral-8x7b', 'gpu': 'a100-80gb', 'num_gpus': 1}, []),
    ('ollama 跑 qwen2.5:14b 单卡 3060 12G 够吗', {'engine': 'ollama', 'task': 'inference', 'model': 'qwen2.5-14b', 'gpu': '3060-12gb', 'num_gpus': 1, 'weight_dtype': 'q4_k_m'}, ['weight_dtype']),
    ('苹果 M2 Max 32G 能跑 Qwen2.5-32B 吗', {'task': 'inference', 'model': 'qwen2.5-32b', 'gpu': 'apple-32gb'}, ['gpu']),
    ('12G显存 QLoRA 微调 Qwen2.5-7B 够不够', {'task': 'qlora', 'model': 'qwen2.5-7b', 'gpu': 'rtx-3060'}, ['gpu']),
    ('Llama-3-8B 全参微调 HF Trainer bf16=True 单卡 H100', {'task': 'full_finetune', 'weight_dtype': 'bf16', 'precision_recipe': 'amp', 'model': 'llama-3-8b', 'gpu': 'h100', 'num_gpus': 1}, []),
    ('单卡4090 开 flash attention 跑 Llama-3-8B 推理 32k上下文', {'task': 'inference', 'seq_len': 32768, 'attention': 'flash', 'model': 'llama-3-8b', 'gpu': '4090', 'num_gpus': 1}, []),
    ('8卡A100 DeepSpeed bf16 全参微调 Qwen2.5-14B，ZeRO-3', {'task': 'full_finetune', 'weight_dtype': 'bf16', 'precision_recipe': 'mixed', 'zero_stage': 3, 'model': 'qwen2.5-14b', 'gpu': 'a100', 'num_gpus': 8}, []),
]
# fmt: on


@pytest.mark.parametrize(("question", "expected", "filled"), EN_REALISTIC + ZH_REALISTIC)
def test_realistic_questions(question: str, expected: dict[str, Any], filled: list[str]) -> None:
    language = "zh" if (question, expected, filled) in ZH_REALISTIC else "en"
    _check(question, expected, language)
    parsed = parse_question(question)
    assert sorted(parsed.filled) == filled, (question, parsed.filled)


def test_realistic_corpus_is_half_chinese() -> None:
    assert len(EN_REALISTIC) == len(ZH_REALISTIC) == 30


def test_realistic_mentions_resolve_in_catalog() -> None:
    from tools.catalog import find_gpu, resolve_model

    for question, expected, _ in EN_REALISTIC + ZH_REALISTIC:
        if "model" in expected:  # a catalog model, or a bare size built to its exact count
            resolved = resolve_model(expected["model"])
            assert resolved.spec is not None or resolved.assumed_code == "model.built_for_size", question
        if "gpu" in expected:
            assert find_gpu(expected["gpu"])[0].memory_bytes > 0, question


@pytest.mark.parametrize(
    ("question", "topic"),
    [
        ("ZeRO-3是什么", "zero_stages"),
        ("what is the difference between LoRA and QLoRA?", "lora_vs_qlora"),
        ("what is nf4?", "lora_vs_qlora"),
        ("flash attention 是什么原理？", "flash_attention"),
        ("QLoRA 和 LoRA 对 Llama-3-8B 有什么区别", "lora_vs_qlora"),  # keyword matched without spaces
    ],
)
def test_concepts_without_a_scenario_still_route_to_the_knowledge_base(question: str, topic: str) -> None:
    parsed = parse_question(question)
    assert (parsed.intent, parsed.topic, parsed.scenario) == ("concept", topic, {})


def test_card_for_memory_names_catalog_cards_of_exactly_that_memory() -> None:
    from service.agent.offline.mentions import CARD_FOR_MEMORY
    from tools.catalog import find_gpu

    for gb, card in CARD_FOR_MEMORY.items():
        spec = find_gpu(card)[0]
        assert spec.id == card
        assert spec.marketed.startswith(f"{gb} GB"), (gb, spec.marketed)


@pytest.mark.parametrize(
    "question",
    [
        "Llama-3-70B on a 3090 with 64GB RAM",
        "Qwen2.5-7B inference, 32G内存",
        "Llama-3-8B inference with 20GB",
    ],
)
def test_host_memory_and_odd_sizes_are_not_a_card(question: str) -> None:
    parsed = parse_question(question)
    assert parsed.scenario.get("gpu") in (None, "3090") and "gpu" not in parsed.filled


@pytest.mark.parametrize(
    ("question", "recipe"),
    [
        ("Qwen2.5-7B full fine-tune in bf16 on one H100", "mixed"),  # plain bf16: the estimator's default
        ("Qwen2.5-7B LoRA in bf16 on one H100", "amp"),
        ("Qwen2.5-7B full fine-tune with HF Trainer bf16=True on one H100", "amp"),
        ("Qwen2.5-7B 全参微调 amp混合精度 单卡A100", "amp"),
        ("Llama-3-8B full fine-tune with DeepSpeed bf16 on 8 A100", "mixed"),
        ("Llama-3-8B 全参微调 纯bf16 单卡H100", "bf16"),
    ],
)
def test_precision_wording_reaches_the_estimator(question: str, recipe: str) -> None:

    est = estimate(Scenario.model_validate(parse_question(question).scenario), plan=False)
    assert est.scenario.precision_recipe == recipe


def _answer(question: str) -> Any:

    return asyncio.run(OfflineAgent().answer(question, ConversationState()))


@pytest.mark.parametrize(
    ("question", "gpu", "assumed"),
    [
        ("一张24G的4090能推理Qwen2.5-14B吗，用nf4量化", "rtx-4090", None),
        ("is 24GB enough to fine-tune 7B with LoRA?", "rtx-4090", "a 24 GB card without a name"),
        ("我只有16G显存能跑Qwen2.5-7B推理吗", "rtx-4060-ti", None),
        ("Can I run Llama-3-8B on 8GB VRAM?", "rtx-4060", "taken as rtx-4060"),
        (
            "Can a Mac M2 with 32GB run 70B?",
            "apple-32gb",
            "an Apple silicon Mac with 32 GB of unified memory",
        ),
        ("ollama run llama3:70b on 2x 3090", "rtx-3090", "4-bit GGUF"),
        ("Qwen2.5-7B 全参微调 amp混合精度 单卡A100", "a100-80gb", None),
    ],
)
def test_answers_carry_the_tool_figures(question: str, gpu: str, assumed: str | None) -> None:
    from tools.catalog import find_gpu

    answer = _answer(question)
    assert answer.estimate is not None and answer.estimate.scenario.gpu is not None
    assert find_gpu(answer.estimate.scenario.gpu)[0].id == gpu
    reference = estimate(Scenario.model_validate(parse_question(question).scenario), plan=False)
    assert answer.estimate.per_gpu.total_bytes == reference.per_gpu.total_bytes
    assert fmt_gib(reference.per_gpu.total_bytes) in answer.answer
    if assumed:
        assert assumed in answer.answer
    for field in parse_question(question).filled:
        assert any(a.field == field for a in answer.estimate.assumptions), field


def test_nf4_inference_on_a_named_card_is_estimated_not_explained() -> None:
    answer = _answer("一张24G的4090能推理Qwen2.5-14B吗，用nf4量化")
    assert answer.estimate is not None
    assert answer.estimate.scenario.weight_dtype == "nf4" and answer.estimate.scenario.task == "inference"
    assert "放得下" in answer.answer


def test_mac_70b_does_not_fit_in_32_gb() -> None:
    answer = _answer("Can a Mac M2 with 32GB run 70B?")
    assert answer.estimate is not None
    assert answer.estimate.per_gpu.total_bytes > 32 * 10**9
    assert "does not fit" in answer.answer


@pytest.mark.parametrize(
    "question",
    [
        "A 7B model is 14GB in bf16, will it fit my 12GB card?",
        "Llama-3-8B is 16GB, can I run it on 12GB VRAM?",
        "显存只有12G，Qwen2.5-7B 需要 16G 吗",
    ],
)
def test_the_size_next_to_a_vram_word_is_the_card(question: str) -> None:
    parsed = parse_question(question)
    assert parsed.scenario["gpu"] == "rtx-3060"
    assert parsed.filled["gpu"].code == "card_from_memory"
    assert parsed.filled["gpu"].values == {"gb": 12, "card": "rtx-3060"}


@pytest.mark.parametrize(
    ("question", "model"),
    [
        ("serve CodeLlama-34B on 2 4090s in int4", "codellama-34b"),  # was read as 'llama-3-4b'
        ("codellama-7b LoRA 一张4090", "codellama-7b"),
        ("phi-2 LoRA on a 4090", "phi-2"),
    ],
)
def test_codellama_and_phi_are_read_and_known(question: str, model: str) -> None:
    from service.agent.offline.parser import parse_question

    assert parse_question(question).scenario["model"] == model
    assert isinstance(ask(question), DoneEvent)


def test_an_ollama_q8_0_tag_is_8_bit_not_the_4_bit_default() -> None:
    """The ollama note tells users to name a tag such as q8_0: that tag must be read."""
    from service.agent.offline.parser import parse_question

    parsed = parse_question("ollama run qwen2.5:14b-instruct-q8_0 on a 4090")
    assert parsed.scenario["weight_dtype"] == "q8_0" and "weight_dtype" not in parsed.filled
