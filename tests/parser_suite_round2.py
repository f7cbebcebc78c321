"""Understanding, round 2 (issue 26 section 5): questions in the forms people type them on forums, in issue
trackers and in Chinese interview prep, half Chinese, each with every field it states.

`CASES`: (question, the exact stated Scenario fields, the figure asked for or None, the parser's own assumption
codes `ParsedQuestion.filled` must carry: field -> code). tests/parser_suite.py adds them to its ESTIMATES, so the
suite's tests (parser, LLM parser, self-consistency) and benchmarks/answer_length.py read them too.

Forms covered: LoRA rank as r16 / r 16 / r=16 / rank16 / 秩16 / lora_r: 16; RL lengths as TRL, verl and OpenRLHF
name them and in words; GPUs over nodes (两机八卡, 2机16卡, 2 nodes x 8 GPUs, 2x8 H100); llama.cpp / Ollama layer
offload and "do I need to offload?"; distilled model names; `org/name` repo ids the catalog knows; names the
catalog lacks with a size in them; attention turned off after the name.
"""

from __future__ import annotations

from typing import Any

Case = tuple[str, dict[str, Any], str | None, dict[str, str]]

_NODES = {"num_gpus": "gpus_over_nodes"}
_RL_LEN = {"seq_len": "rl_total_length"}
_DISTILL = {"model": "model_distill"}
_SIZE_ONLY = {"model": "model_size_only"}
_OLLAMA = {"weight_dtype": "ollama_4bit"}

# --- LoRA rank in every form --------------------------------------------------------------------------------
_RANK: list[Case] = [
    ("LoRA r16 on Llama-3.1-8B, one 4090, 2k context, will it fit?",
     {"task": "lora", "lora_rank": 16, "model": "llama-3.1-8b", "gpu": "4090", "num_gpus": 1, "seq_len": 2048}, None, {}),
    ("peft lora r 16 alpha 32 on mistral 7b, single 3090, batch 4",
     {"task": "lora", "lora_rank": 16, "lora_alpha": 32.0, "model": "mistral-7b", "gpu": "3090", "num_gpus": 1, "batch_size": 4}, None, {}),
    ("QLoRA with r=64, lora_alpha=16 on Llama-2-13B, one T4 (colab), OOM?",
     {"task": "qlora", "lora_rank": 64, "lora_alpha": 16.0, "model": "llama-2-13b", "gpu": "t4", "num_gpus": 1}, None, {}),
    ("rank16 lora for qwen2.5-14b on a single a100 40gb with gradient checkpointing",
     {"task": "lora", "lora_rank": 16, "model": "qwen2.5-14b", "gpu": "a100-40gb", "num_gpus": 1, "gradient_checkpointing": True}, None, {}),
    ("lora_r: 32, lora_target: all, model Qwen2.5-7B, cutoff_len: 4096, per_device_train_batch_size: 2 on one A100 80GB",
     {"task": "lora", "lora_rank": 32, "model": "qwen2.5-7b", "seq_len": 4096, "batch_size": 2, "gpu": "a100-80gb", "num_gpus": 1}, None, {}),
    ("DoRA r: 8 on gemma 2 9b with one L4, enough memory?",
     {"task": "lora", "dora": True, "lora_rank": 8, "model": "gemma-2-9b", "gpu": "l4", "num_gpus": 1}, None, {}),
    ("LoRA rank of 128 on Yi-34B with 2x A100 80GB and ZeRO-3",
     {"task": "lora", "lora_rank": 128, "model": "yi-34b", "gpu": "a100-80gb", "num_gpus": 2, "zero_stage": 3}, None, {}),
    ("Does r 256 LoRA of Llama-3-70B fit on 4 H100s?",
     {"task": "lora", "lora_rank": 256, "model": "llama-3-70b", "gpu": "h100", "num_gpus": 4}, None, {}),
    ("LoRA 秩16 微调 Qwen2.5-7B，单卡4090，序列长度 2048",
     {"task": "lora", "lora_rank": 16, "model": "qwen2.5-7b", "gpu": "4090", "num_gpus": 1, "seq_len": 2048}, None, {}),
    ("QLoRA r16 微调 Qwen2.5-32B，一张 3090 够不够",
     {"task": "qlora", "lora_rank": 16, "model": "qwen2.5-32b", "gpu": "3090", "num_gpus": 1}, None, {}),
    ("面试题：LoRA 的秩为 8，微调 Llama3-8B，单卡 A100 80G 要多少显存",
     {"task": "lora", "lora_rank": 8, "model": "llama-3-8b", "gpu": "a100-80gb", "num_gpus": 1}, None, {}),
    ("lora r=32 微调 GLM-4-9B，两张4090，batch 2",
     {"task": "lora", "lora_rank": 32, "model": "glm-4-9b", "gpu": "4090", "num_gpus": 2, "batch_size": 2}, None, {}),
    ("LLaMA-Factory 配置 lora_rank: 64，Qwen2.5-14B，cutoff_len: 2048，单卡 A800",
     {"task": "lora", "lora_rank": 64, "model": "qwen2.5-14b", "seq_len": 2048, "gpu": "a800", "num_gpus": 1}, None, {}),
    ("用 LoRA（r 8）微调 Baichuan2-13B，单卡 4090 跑得动吗",
     {"task": "lora", "lora_rank": 8, "model": "baichuan2-13b", "gpu": "4090", "num_gpus": 1}, None, {}),
    ("LoRA 秩 = 128，全部线性层，Qwen2.5-7B，单卡 H800",
     {"task": "lora", "lora_rank": 128, "lora_targets": ["all-linear"], "model": "qwen2.5-7b", "gpu": "h800", "num_gpus": 1}, None, {}),
    ("rank16 的 DoRA 微调 Qwen3-8B，一张 4090",
     {"task": "lora", "dora": True, "lora_rank": 16, "model": "qwen3-8b", "gpu": "4090", "num_gpus": 1}, None, {}),
]  # fmt: skip

# --- RL lengths and sampling ------------------------------------------------------------------------------------
_RL: list[Case] = [
    ("GRPO Qwen2.5-7B on 8xH100 with max_prompt_length 1024, max_completion_length 4096, num_generations 16",
     {"task": "grpo", "model": "qwen2.5-7b", "gpu": "h100", "num_gpus": 8, "seq_len": 5120, "max_new_tokens": 4096, "num_generations": 16}, None, {}),
    ("trl GRPOTrainer, qwen2.5-1.5b, --max_completion_length 2048, one 4090: will it OOM?",
     {"task": "grpo", "model": "qwen2.5-1.5b", "gpu": "4090", "num_gpus": 1, "seq_len": 2560, "max_new_tokens": 2048}, None, _RL_LEN),
    ("verl GRPO Qwen2.5-7B data.max_prompt_length=512 data.max_response_length=2048 actor_rollout_ref.rollout.n=8 on 8 A100 80GB",
     {"task": "grpo", "model": "qwen2.5-7b", "seq_len": 2560, "max_new_tokens": 2048, "num_generations": 8, "gpu": "a100-80gb", "num_gpus": 8}, None, {}),
    ("verl ppo: qwen2.5-3b, actor_rollout_ref.rollout.n=5, data.max_response_length=1024, actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4, 4 H100",
     {"task": "ppo", "model": "qwen2.5-3b", "num_generations": 5, "max_new_tokens": 1024, "seq_len": 1536, "batch_size": 4, "gpu": "h100", "num_gpus": 4}, None, _RL_LEN),
    ("OpenRLHF PPO llama 3 8b --prompt_max_len 1024 --generate_max_len 1024 --micro_train_batch_size 2 on 8xA100",
     {"task": "ppo", "model": "llama-3-8b", "seq_len": 2048, "max_new_tokens": 1024, "batch_size": 2, "gpu": "a100", "num_gpus": 8}, None, {}),
    ("GRPO on Llama-3.1-8B with 1024-token prompts and 4096-token completions, 8 H100s",
     {"task": "grpo", "model": "llama-3.1-8b", "seq_len": 5120, "max_new_tokens": 4096, "gpu": "h100", "num_gpus": 8}, None, {}),
    ("GRPO Qwen3-4B, num_generations=8, max_prompt_length=256, on two 4090s",
     {"task": "grpo", "model": "qwen3-4b", "num_generations": 8, "seq_len": 512, "max_new_tokens": 256, "gpu": "4090", "num_gpus": 2}, None, _RL_LEN),
    ("DPO Qwen2.5-7B with LoRA, max_prompt_length 512, max_completion_length 512, one A100 80GB",
     {"task": "dpo", "lora_rank": 8, "model": "qwen2.5-7b", "seq_len": 1024, "max_new_tokens": 512, "gpu": "a100-80gb", "num_gpus": 1}, None, {"lora_rank": "rl_lora_rank"}),
    ("GRPO Qwen2.5-7B，每个 prompt 采样 16 条，回复长度 4096，8卡H100",
     {"task": "grpo", "model": "qwen2.5-7b", "num_generations": 16, "max_new_tokens": 4096, "seq_len": 4608, "gpu": "h100", "num_gpus": 8}, None, _RL_LEN),
    ("用 verl 跑 GRPO，Qwen2.5-32B，rollout.n=8，data.max_response_length=8192，两机八卡 H800",
     {"task": "grpo", "model": "qwen2.5-32b", "num_generations": 8, "max_new_tokens": 8192, "seq_len": 8704, "gpu": "h800", "num_gpus": 16}, None, {**_RL_LEN, **_NODES}),
    ("GRPO 训练 Qwen2.5-Math-7B，prompt 长度 1024，回答长度 3072，每个问题采样 8 个，8张A100",
     {"task": "grpo", "model": "qwen2.5-7b", "seq_len": 4096, "max_new_tokens": 3072, "num_generations": 8, "gpu": "a100", "num_gpus": 8}, None, {"model": "model_variant"}),
    ("PPO 微调 Llama3-8B，提示长度 512，生成长度 512，四张 A800 够吗",
     {"task": "ppo", "model": "llama-3-8b", "seq_len": 1024, "max_new_tokens": 512, "gpu": "a800", "num_gpus": 4}, None, {}),
    ("GRPO Qwen3-8B 单卡 H200，max_completion_length 设为 8192",
     {"task": "grpo", "model": "qwen3-8b", "gpu": "h200", "num_gpus": 1, "max_new_tokens": 8192, "seq_len": 8704}, None, _RL_LEN),
    ("OpenRLHF 的 GRPO：Qwen2.5-7B，--n_samples_per_prompt 16，--generate_max_len 2048，8卡 H20",
     {"task": "grpo", "model": "qwen2.5-7b", "num_generations": 16, "max_new_tokens": 2048, "seq_len": 2560, "gpu": "h20", "num_gpus": 8}, None, _RL_LEN),
    ("DPO Qwen2.5-14B 全参，max_prompt_length 1024，max_completion_length 1024，8卡A100 80G，ZeRO-3",
     {"task": "dpo", "model": "qwen2.5-14b", "seq_len": 2048, "max_new_tokens": 1024, "gpu": "a100-80gb", "num_gpus": 8, "zero_stage": 3}, None, {}),
    ("GRPO 训 Qwen2.5-1.5B，回复长度 1024，每个 prompt 生成 8 条回答，单卡 4090",
     {"task": "grpo", "model": "qwen2.5-1.5b", "max_new_tokens": 1024, "seq_len": 1536, "num_generations": 8, "gpu": "4090", "num_gpus": 1}, None, _RL_LEN),
]  # fmt: skip

# --- GPUs over nodes ---------------------------------------------------------------------------------------------
_COUNTS: list[Case] = [
    ("Full fine-tune Llama-3-70B on 2 nodes x 8 GPUs H100 with ZeRO-3, does it fit?",
     {"task": "full_finetune", "model": "llama-3-70b", "gpu": "h100", "num_gpus": 16, "zero_stage": 3}, None, _NODES),
    ("pretraining llama 2 13b on 2x8 A100 80GB with FSDP",
     {"task": "pretrain", "model": "llama-2-13b", "gpu": "a100-80gb", "num_gpus": 16, "zero_stage": 3}, None, _NODES),
    ("two 8-GPU nodes of H800, full finetune Qwen2.5-72B with ZeRO-3 offload",
     {"task": "full_finetune", "model": "qwen2.5-72b", "gpu": "h800", "num_gpus": 16, "zero_stage": 3, "offload_optimizer": "cpu"}, None, _NODES),
    ("Mixtral 8x7B full fine-tune on 32 H100s across 4 nodes, ZeRO-3",
     {"task": "full_finetune", "model": "mixtral-8x7b", "gpu": "h100", "num_gpus": 32, "zero_stage": 3}, None, _NODES),
    ("4 nodes with 8 A100 80GB each, full fine-tune Llama-3.1-70B, tp=8 pp=4",
     {"task": "full_finetune", "model": "llama-3.1-70b", "gpu": "a100-80gb", "num_gpus": 32, "tp": 8, "pp": 4}, None, _NODES),
    ("16 GPUs in total over 2 machines (A800), full fine-tuning Qwen2.5-32B with ZeRO-3",
     {"task": "full_finetune", "model": "qwen2.5-32b", "gpu": "a800", "num_gpus": 16, "zero_stage": 3}, None, _NODES),
    ("LoRA Llama-3-70B on 2 servers with 4 A100 40GB apiece",
     {"task": "lora", "model": "llama-3-70b", "gpu": "a100-40gb", "num_gpus": 8}, None, _NODES),
    ("serve DeepSeek-V3 with vllm on 2 nodes of 8xH200, tp 8 pp 2",
     {"task": "inference", "engine": "vllm", "model": "deepseek-v3", "gpu": "h200", "num_gpus": 16, "tp": 8, "pp": 2}, None, _NODES),
    ("两机八卡 A100 全参微调 Qwen2.5-72B，ZeRO-3 够不够",
     {"task": "full_finetune", "model": "qwen2.5-72b", "gpu": "a100", "num_gpus": 16, "zero_stage": 3}, None, _NODES),
    ("2机16卡 H800 全参微调 Qwen2.5-72B，ZeRO-3",
     {"task": "full_finetune", "model": "qwen2.5-72b", "gpu": "h800", "num_gpus": 16, "zero_stage": 3}, None, _NODES),
    ("4机32卡 A800 预训练 Llama-2-70B，TP=8，PP=4",
     {"task": "pretrain", "model": "llama-2-70b", "gpu": "a800", "num_gpus": 32, "tp": 8, "pp": 4}, None, _NODES),
    ("两台服务器每台 4 张 4090，LoRA 微调 Qwen2.5-32B",
     {"task": "lora", "model": "qwen2.5-32b", "gpu": "4090", "num_gpus": 8}, None, _NODES),
    ("三机二十四卡 H100 全量微调 Llama-3-70B 需要 ZeRO-3 吗",
     {"task": "full_finetune", "model": "llama-3-70b", "gpu": "h100", "num_gpus": 24, "zero_stage": 3}, None, _NODES),
    ("2 台 8 卡 H20 部署 DeepSeek-R1，vllm，tp 8 pp 2",
     {"task": "inference", "engine": "vllm", "model": "deepseek-r1", "gpu": "h20", "num_gpus": 16, "tp": 8, "pp": 2}, None, _NODES),
    ("一共 16 张 A800 分布在两个节点上，全参微调 Qwen2.5-14B",
     {"task": "full_finetune", "model": "qwen2.5-14b", "gpu": "a800", "num_gpus": 16}, None, _NODES),
    ("双机 8 卡 4090（每台 4 张）能不能 LoRA 微调 Llama3-70B",
     {"task": "lora", "model": "llama-3-70b", "gpu": "4090", "num_gpus": 8}, None, _NODES),
]  # fmt: skip

# --- offload: GPU layers in llama.cpp / Ollama, and "do I need to offload?" ----------------------------------------
_OFFLOAD: list[Case] = [
    ("ollama run llama3 70b on a 4090, offload layers to CPU, how slow and how much VRAM?",
     {"task": "inference", "engine": "ollama", "model": "llama-3-70b", "gpu": "4090", "num_gpus": 1, "weight_dtype": "q4_k_m"}, None, _OLLAMA),
    ("llama.cpp Qwen2.5-32B Q4_K_M on a 3090, do I need to offload?",
     {"engine": "llama.cpp", "weight_dtype": "q4_k_m", "model": "qwen2.5-32b", "gpu": "3090", "num_gpus": 1}, None, {}),
    ("llama-server with -ngl 40, Llama-3.1-70B Q4_K_M gguf, two 3090s",
     {"engine": "llama.cpp", "weight_dtype": "q4_k_m", "model": "llama-3.1-70b", "gpu": "3090", "num_gpus": 2}, None, {}),
    ("Mixtral 8x7B q5_k_m in llama.cpp on a 4070, offloading some layers to the CPU",
     {"engine": "llama.cpp", "weight_dtype": "q5_k_m", "model": "mixtral-8x7b", "gpu": "4070", "num_gpus": 1}, None, {}),
    ("Full fine-tune Llama-3-8B on one 4090: do I need to offload?",
     {"task": "full_finetune", "model": "llama-3-8b", "gpu": "4090", "num_gpus": 1}, None, {}),
    ("should I use CPU offload to LoRA Qwen2.5-14B on a single 3090?",
     {"task": "lora", "model": "qwen2.5-14b", "gpu": "3090", "num_gpus": 1}, None, {}),
    ("Full fine-tune Qwen2.5-7B on 2 4090 with ZeRO-3 and CPU offload",
     {"task": "full_finetune", "model": "qwen2.5-7b", "gpu": "4090", "num_gpus": 2, "zero_stage": 3, "offload_optimizer": "cpu"}, None, {}),
    ("ollama 跑 Qwen2.5-72B，单卡 4090，部分层卸载到 CPU",
     {"task": "inference", "engine": "ollama", "model": "qwen2.5-72b", "gpu": "4090", "num_gpus": 1, "weight_dtype": "q4_k_m"}, None, _OLLAMA),
    ("llama.cpp 推理 Llama3-70B Q4_K_M，两张 3090，一部分层 offload 到内存",
     {"task": "inference", "engine": "llama.cpp", "weight_dtype": "q4_k_m", "model": "llama-3-70b", "gpu": "3090", "num_gpus": 2}, None, {}),
    ("全参微调 Qwen2.5-7B，两张4090，要不要开 offload？",
     {"task": "full_finetune", "model": "qwen2.5-7b", "gpu": "4090", "num_gpus": 2}, None, {}),
    ("单卡 A100 40G 全参微调 Llama3-8B 需要 CPU 卸载吗",
     {"task": "full_finetune", "model": "llama-3-8b", "gpu": "a100-40gb", "num_gpus": 1}, None, {}),
    ("DeepSpeed ZeRO-3 + CPU offload 全参微调 Qwen2.5-14B，两张 A800",
     {"task": "full_finetune", "model": "qwen2.5-14b", "gpu": "a800", "num_gpus": 2, "zero_stage": 3, "offload_optimizer": "cpu"}, None, {}),
    ("gguf 的 Qwen2.5-32B q4_k_m 在 4060 Ti 16G 上放不下的层放到 CPU 会怎样",
     {"engine": "llama.cpp", "weight_dtype": "q4_k_m", "model": "qwen2.5-32b", "gpu": "4060-ti-16gb"}, None, {}),
    ("ollama 部署 deepseek-r1:32b，3090 显存不够要不要 offload",
     {"task": "inference", "engine": "ollama", "model": "deepseek-r1-distill-qwen-32b", "gpu": "3090", "weight_dtype": "q4_k_m"}, None, {**_DISTILL, **_OLLAMA}),
]  # fmt: skip

# --- model names: distills, repo ids the catalog knows, names it lacks with a size -----------------------------------
_MODELS: list[Case] = [
    ("R1-distill-qwen-32b on a 4090 in q4_k_m with llama.cpp",
     {"model": "deepseek-r1-distill-qwen-32b", "weight_dtype": "q4_k_m", "engine": "llama.cpp", "gpu": "4090", "num_gpus": 1}, None, _DISTILL),
    ("DeepSeek-R1-Distill-Llama-8B inference on a single 3060 12GB",
     {"task": "inference", "model": "deepseek-r1-distill-llama-8b", "gpu": "3060-12gb", "num_gpus": 1}, None, _DISTILL),
    ("vllm serve deepseek-ai/DeepSeek-R1-Distill-Qwen-14B on one L40S, 32k context",
     {"task": "inference", "engine": "vllm", "model": "qwen2.5-14b", "gpu": "l40s", "num_gpus": 1, "seq_len": 32768}, None, {}),
    ("LoRA fine-tune DeepSeek-R1-Distill-Qwen-1.5B on a T4",
     {"task": "lora", "model": "deepseek-r1-distill-qwen-1.5b", "gpu": "t4", "num_gpus": 1}, None, _DISTILL),
    ("deepseek-r1 1.5b 蒸馏版 推理，3060 够不够",
     {"task": "inference", "model": "deepseek-r1-distill-qwen-1.5b", "gpu": "3060"}, None, _DISTILL),
    ("DeepSeek R1 蒸馏版 32B 用 vllm 部署，两张 4090",
     {"task": "inference", "engine": "vllm", "model": "deepseek-r1-distill-qwen-32b", "gpu": "4090", "num_gpus": 2}, None, _DISTILL),
    ("r1蒸馏 llama 70b 推理，四张 A100 80G",
     {"task": "inference", "model": "deepseek-r1-distill-llama-70b", "gpu": "a100-80gb", "num_gpus": 4}, None, _DISTILL),
    ("ollama 跑 deepseek-r1:7b，单卡 3060 行不行",
     {"task": "inference", "engine": "ollama", "model": "deepseek-r1-distill-qwen-7b", "gpu": "3060", "num_gpus": 1, "weight_dtype": "q4_k_m"}, None, {**_DISTILL, **_OLLAMA}),
    ("meta-llama/Llama-3.1-8B-Instruct full fine-tune on 4 A100 80GB with ZeRO-2",
     {"task": "full_finetune", "model": "llama-3.1-8b", "gpu": "a100-80gb", "num_gpus": 4, "zero_stage": 2}, None, {}),
    ("Qwen/Qwen2.5-7B-Instruct with vLLM on a 4090, 8k context: how many concurrent requests?",
     {"task": "inference", "engine": "vllm", "model": "qwen2.5-7b", "gpu": "4090", "num_gpus": 1, "seq_len": 8192}, "concurrency", {}),
    ("用 Qwen/Qwen2.5-14B-Instruct 做 LoRA 微调，单卡 A800",
     {"task": "lora", "model": "qwen2.5-14b", "gpu": "a800", "num_gpus": 1}, None, {}),
    ("mistralai/Mistral-7B-Instruct-v0.3 推理，T4 够吗",
     {"task": "inference", "model": "mistral-7b-v0.3", "gpu": "t4"}, None, {}),
    ("InternLM2-20B LoRA on one A100 80GB, batch 2",
     {"task": "lora", "model": "20B", "gpu": "a100-80gb", "num_gpus": 1, "batch_size": 2}, None, _SIZE_ONLY),
    ("Skywork-13B full fine-tune on 8 A100 with ZeRO-2",
     {"task": "full_finetune", "model": "13B", "gpu": "a100", "num_gpus": 8, "zero_stage": 2}, None, _SIZE_ONLY),
    ("can I run XVERSE-65B inference on 4x A100 80GB?",
     {"task": "inference", "model": "65B", "gpu": "a100-80gb", "num_gpus": 4}, None, _SIZE_ONLY),
    ("书生 InternLM2-20B 全参微调，8卡A800，ZeRO-3",
     {"task": "full_finetune", "model": "20B", "gpu": "a800", "num_gpus": 8, "zero_stage": 3}, None, _SIZE_ONLY),
    ("Aquila2-34B 推理，两张 A100 80G",
     {"task": "inference", "model": "34B", "gpu": "a100-80gb", "num_gpus": 2}, None, _SIZE_ONLY),
    ("TeleChat-12B LoRA 微调，单卡 4090 能跑吗",
     {"task": "lora", "model": "12B", "gpu": "4090", "num_gpus": 1}, None, _SIZE_ONLY),
]  # fmt: skip

# --- attention switched off after its name ---------------------------------------------------------------------------
_ATTENTION: list[Case] = [
    ("Full fine-tune Llama-2-7B on one A100 80GB, flash attention off, 4k context",
     {"task": "full_finetune", "model": "llama-2-7b", "gpu": "a100-80gb", "num_gpus": 1, "attention": "eager", "seq_len": 4096}, None, {}),
    ("LoRA Qwen2.5-7B on a 4090 with flash_attn=false, batch 4",
     {"task": "lora", "model": "qwen2.5-7b", "gpu": "4090", "num_gpus": 1, "attention": "eager", "batch_size": 4}, None, {}),
    ("Qwen2.5-7B 全参微调，8卡A100，flash attention 关闭，序列 8k",
     {"task": "full_finetune", "model": "qwen2.5-7b", "gpu": "a100", "num_gpus": 8, "attention": "eager", "seq_len": 8192}, None, {}),
    ("V100 不支持 flash attention 2，LoRA 微调 Llama3-8B，单卡 V100",
     {"task": "lora", "model": "llama-3-8b", "gpu": "v100", "num_gpus": 1, "attention": "eager"}, None, {}),
    ("LoRA 微调 Qwen2.5-7B，单卡 4090，FA2 禁用，上下文 4096",
     {"task": "lora", "model": "qwen2.5-7b", "gpu": "4090", "num_gpus": 1, "attention": "eager", "seq_len": 4096}, None, {}),
]  # fmt: skip


# --- more forms, as seen in issue threads and interview prep ----------------------------------------------------------
_MORE: list[Case] = [
    ("[Bug] OOM when training Qwen2.5-7B GRPO with G=16, max_completion_length=1024, per_device_train_batch_size=4 on 8 H800",
     {"task": "grpo", "model": "qwen2.5-7b", "num_generations": 16, "max_new_tokens": 1024, "seq_len": 1536, "batch_size": 4, "gpu": "h800", "num_gpus": 8}, None, _RL_LEN),
    ("8 GPUs per node, 2 nodes, A800 80GB: full fine-tuning Llama-2-70B with ZeRO-3",
     {"gpu": "a800-80gb", "num_gpus": 16, "task": "full_finetune", "model": "llama-2-70b", "zero_stage": 3}, None, _NODES),
    ("peft LoraConfig(r=16, lora_alpha=32, lora_dropout=0.05) on Llama-2-7B, a single 3060",
     {"task": "lora", "lora_rank": 16, "lora_alpha": 32.0, "lora_dropout": 0.05, "model": "llama-2-7b", "gpu": "3060", "num_gpus": 1}, None, {}),
    ("GRPO with LoRA r 32 on Qwen2.5-3B, 4 completions per prompt, one 4090",
     {"task": "grpo", "lora_rank": 32, "num_generations": 4, "model": "qwen2.5-3b", "gpu": "4090", "num_gpus": 1}, None, {}),
    ("how many 8xH100 nodes do I need to full fine-tune Llama-3.1-405B with ZeRO-3?",
     {"task": "full_finetune", "model": "llama-3.1-405b", "gpu": "h100", "num_gpus": 8, "zero_stage": 3}, "min_gpus", {}),
    ("Llama-3-8B LoRA r=8 on an M2 Max with 32GB, will it train?",
     {"task": "lora", "lora_rank": 8, "model": "llama-3-8b", "gpu": "apple-32gb"}, None, {"gpu": "card_apple_memory"}),
    ("lmstudio qwen2.5-14b q4_k_m gguf on an 8GB card: offload layers or not?",
     {"engine": "llama.cpp", "weight_dtype": "q4_k_m", "model": "qwen2.5-14b", "gpu": "rtx-4060"}, None, {"gpu": "card_from_memory"}),
    ("Qwen2.5-Coder-32B-Instruct-AWQ on one 4090 via vllm, 16k context",
     {"task": "inference", "engine": "vllm", "quant_method": "awq", "weight_dtype": "int4", "model": "qwen2.5-coder-32b", "gpu": "4090", "num_gpus": 1, "seq_len": 16384}, None, {}),
    ("面试：7B 模型 LoRA r=8，bf16，单卡 A100 40G，batch 8，序列 1024，显存怎么算",
     {"task": "lora", "lora_rank": 8, "weight_dtype": "bf16", "model": "7B", "gpu": "a100-40gb", "num_gpus": 1, "batch_size": 8, "seq_len": 1024}, None, {}),
    ("八机六十四卡 H800 预训练 Llama-3-70B，TP 8，PP 8",
     {"task": "pretrain", "model": "llama-3-70b", "gpu": "h800", "num_gpus": 64, "tp": 8, "pp": 8}, None, _NODES),
    ("单机 8 卡 A100 80G 跑 GRPO，Qwen2.5-14B，每个 prompt 采样 8 条，最大回复长度 2048",
     {"task": "grpo", "model": "qwen2.5-14b", "gpu": "a100-80gb", "num_gpus": 8, "num_generations": 8, "max_new_tokens": 2048, "seq_len": 2560}, None, _RL_LEN),
    ("Qwen3-32B QLoRA，秩 64，单卡 A6000 48G 能不能训",
     {"task": "qlora", "lora_rank": 64, "model": "qwen3-32b", "gpu": "a6000-48gb", "num_gpus": 1}, None, {}),
    ("llama.cpp 跑 Qwen2.5-72B 的 q4_k_m，两张 4090 放不下，-ngl 60 要多少显存",
     {"task": "inference", "engine": "llama.cpp", "weight_dtype": "q4_k_m", "model": "qwen2.5-72b", "gpu": "4090", "num_gpus": 2}, None, {}),
    ("ollama 跑 R1 蒸馏 14B，一张 4060 Ti，显存不够会自动 offload 吗",
     {"task": "inference", "engine": "ollama", "model": "deepseek-r1-distill-qwen-14b", "gpu": "4060-ti", "num_gpus": 1, "weight_dtype": "q4_k_m"}, None, {**_DISTILL, **_OLLAMA}),
    ("两台机器、每台 8 张 H20，部署 DeepSeek-V3，vllm tp 8 pp 2",
     {"task": "inference", "engine": "vllm", "model": "deepseek-v3", "gpu": "h20", "num_gpus": 16, "tp": 8, "pp": 2}, None, _NODES),
    ("DPO 训练 Llama3-8B，LoRA r16，prompt 最大长度 512，单卡 4090",
     {"task": "dpo", "lora_rank": 16, "model": "llama-3-8b", "gpu": "4090", "num_gpus": 1, "seq_len": 768, "max_new_tokens": 256}, None, _RL_LEN),
    ("两机十六卡 A800，LoRA 微调 Qwen2.5-72B，lora_r=16",
     {"gpu": "a800", "num_gpus": 16, "task": "lora", "model": "qwen2.5-72b", "lora_rank": 16}, None, _NODES),
    ("PPOTrainer 训练 Qwen2.5-1.5B，回复长度 512，单卡 A100 40G",
     {"task": "ppo", "model": "qwen2.5-1.5b", "max_new_tokens": 512, "seq_len": 1024, "gpu": "a100-40gb", "num_gpus": 1}, None, _RL_LEN),
]  # fmt: skip

CASES: list[Case] = [*_RANK, *_RL, *_COUNTS, *_OFFLOAD, *_MODELS, *_ATTENTION, *_MORE]
