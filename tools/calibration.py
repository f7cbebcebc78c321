"""Every per-implementation constant of the estimator, in one place, with its provenance.

The formulas (tools/rules/activations.py, logits.py, overhead.py, ...) are structural; the numbers
here are what a given implementation (HF transformers modeling_llama.py, PyTorch's AdamW,
the CUDA driver, NCCL) actually allocates. Calibration against traced truth (benchmarks/accuracy,
issue "accuracy") may change the VALUES and the provenance comments; names are an interface.

Convention: "bytes per element" constants multiply a tensor's element count; "B" below means
the activation dtype's bytes (2 for bf16/fp16, 4 for fp32).
"""

from __future__ import annotations

from tools.units import GiB, MiB

# ---------------------------------------------------------------------------------------------
# Activations saved for backward: HF Llama-style decoder layer (RMSNorm + SwiGLU + GQA, no dropout)
# Derived from the autograd graph of transformers/models/llama/modeling_llama.py (v4.5x):
# LlamaRMSNorm.forward upcasts its input to fp32 (`hidden_states.to(torch.float32)`): pow() and
# mul(rsqrt) save the fp32 copy (4 B/elem); `weight * hidden.to(input_dtype)` saves the B-byte
# normalised tensor when the norm weight trains; q_proj/k_proj/v_proj save their (shared) input, the
# norm output, when any of them trains. Frozen linears (LoRA, freeze tuning) save no input.
# ---------------------------------------------------------------------------------------------
RMSNORM_FP32_UPCAST_BYTES = 4  # per element of h: fp32 copy saved by pow()/mul() in LlamaRMSNorm (always)
RMSNORM_NORMALIZED_SAVED_COPIES = 1  # x B x h: saved by `weight * hidden` only when the norm weight trains
RMSNORM_RSQRT_BYTES = 4  # per token per norm: the fp32 rsqrt(variance) saved by `hidden * rsqrt` (traced)
RMSNORM_OUTPUT_SAVED_COPIES = 1  # x B x h: the norm output, saved by the next linears when any of them trains
# Attention (per element): RoPE outputs q_embed (h) and k_embed (g*d) plus v (g*d) are saved by SDPA
# (always: the residual stream requires grad); SDPA's output is saved by SDPA. SDPA (flash and
# memory-efficient, CPU and CUDA) returns a (b, s, a, d) memory layout, so o_proj's input
# `transpose(1, 2).reshape(...)` is a view of that same storage: no second tensor (traced op by op,
# real CPU tensors, transformers 5.24 modeling_llama; benchmarks/accuracy traced cases).
ATTN_Q_SAVED_COPIES = 1  # x B x (a*d)
ATTN_KV_SAVED_COPIES = 2  # x B x (g*d): k_embed and v (flash/SDPA with enable_gqa: no repeat_kv copy)
ATTN_OUT_SAVED_COPIES = 1  # x B x (a*d): SDPA output
ATTN_O_PROJ_INPUT_COPIES = 0  # x B x (a*d): o_proj input is a view of the SDPA output (traced)
FLASH_LSE_BYTES_PER_HEAD = 4  # fp32 log-sum-exp per head per token (FlashAttention-2 softmax_lse)
# Eager attention (modeling_llama.eager_attention_forward): matmul scores (B), fp32 softmax output
# (softmax(dtype=float32) is saved: 4), cast probs saved by matmul(probs, v) (B). Scores themselves
# are not saved by matmul (q, k are). Net saved per score element: 4 + B.
EAGER_SOFTMAX_FP32_BYTES = 4
# A no-grad forward's eager softmax moment (tools/rules/activations.py inference_transient_entry), per token
# besides the scores: the residual stream's 16-bit copies (h each) and q plus repeat_kv's K and V at a heads
# (a*d each). Traced llama-3-8b b8 s4096 bf16: 4 h-sized (two residual adds, the embedding output, a mul) and
# 2 a*d-sized (repeat_kv clones); gemma-2-2b b4 s4096: 3 h-sized and 3 a*d-sized; the larger of each is taken.
EAGER_MOMENT_H_COPIES = 4
EAGER_MOMENT_HEAD_COPIES = 3
EAGER_PROBS_SAVED_COPIES = 1  # x B per score element (a*s*s per sequence)
# SDPA math kernel (GPU: fp32 with GQA, where transformers passes enable_gqa): q and k scaled copies,
# k and v expanded to a heads, the output; per score the softmax output. Traced tinyllama-1.1b fp32
# at s = 256/512/1024: 4 B x a per token per s, and 4 x B x a x d per token (benchmarks/accuracy).
MATH_SDPA_AD_SAVED_COPIES = 4
EAGER_KV_REPEAT = True  # eager path calls repeat_kv: k and v saved at a*d width, not g*d
# SwiGLU MLP: gate output (saved by act_fn), act output and up output (saved by mul): 3 tensors of i,
# always; the product is saved by down_proj only when down_proj trains. Non-gated (GELU) MLP: fc1
# output (saved by the activation) always, activation output when fc2 trains.
MLP_GATED_SAVED_COPIES = 3  # x B x i
MLP_PLAIN_SAVED_COPIES = 1  # x B x i
MLP_DOWN_INPUT_COPIES = 1  # x B x i, when down_proj / fc2 trains
DROPOUT_MASK_BYTES = 1  # aten native_dropout's bool mask, saved for backward (per element)
DORA_SAVED_OUTPUT_COPIES = 2  # x B x out_features of each DoRA-targeted linear (base + LoRA outputs)
MOE_ROUTER_FP32_BYTES_PER_EXPERT = 4  # router logits softmax in fp32 (modeling_mixtral: F.softmax(float))
MOE_DISPATCH_SAVED_COPIES = 2  # x B x h per routed copy of a token (gathered input + weighted output)

# GPT-style block (LayerNorm + GELU MLP 4h + dropout): Korthikanti et al. 2022, Table 2 / eq. (1):
# per layer s*b*h*(34 + 5*a*s/h) bytes for 16-bit activations with 1-byte dropout masks.
KORTHIKANTI_SBH = 34  # bytes per s*b*h (16-bit activations, no recompute, no TP)
KORTHIKANTI_SCORES = 5  # bytes per a*s*s*b: QK^T (2) + softmax out (2) + dropout mask (1)
KORTHIKANTI_TP_REPLICATED_SBH = 10  # eq. (2): LayerNorms, dropout masks, inputs: not split by TP
KORTHIKANTI_TP_SHARDED_SBH = 24  # eq. (2): split by t
# HF GPT-2 (transformers modeling_gpt2.py, gelu_new composite GELU, dropout 0.1): traced per token per
# layer 46,136 B in bf16 and 92,224 B in fp32 at h = 768 (60 h x B/2 + 4a LSE), 49,216 B under amp
# (64 h: LayerNorm runs in fp32 under autocast, each Conv1D casts its input). benchmarks/accuracy probes.
HF_GPT2_SBH_16BIT = 60
HF_GPT2_AMP_EXTRA_SBH = 4

# Full recomputation (HF gradient_checkpointing / Megatron full): each layer keeps its input
# (s*b*h x B), and during backward one layer's activations are live again (recomputed).
RECOMPUTE_LIVE_LAYERS = 1

# ---------------------------------------------------------------------------------------------
# Logits and loss: LlamaForCausalLM + transformers/loss/loss_utils.py ForCausalLMLoss
# (logits = lm_head(h) in B bytes, `logits.float()`, cross_entropy -> log_softmax output saved, fp32).
# Bytes per element of s*b*V at three moments:
# ---------------------------------------------------------------------------------------------

LOGITS_LOSS_PEAK_BYTES = 10  # during the loss forward: bf16 logits + fp32 copy + fp32 log_softmax
# loss backward: saved fp32 log_softmax + fp32 grad of it + fp32 grad of the upcast logits. The bf16
# logits are not alive then (`logits.float()` saves nothing for backward and the Trainer drops the
# model output before backward). Traced: llama-3-8b amp b1 s2048 backward temporaries = 8 B x s x V
# beside the 4 B saved log_softmax (benchmarks/accuracy/traced_cases.json).
LOGITS_BACKWARD_PEAK_BYTES = 12
# Inference: HF generate / vLLM compute logits for the last position only (logits_to_keep=1) and
# upcast them to fp32 for sampling: B + 4 bytes per element of b*V.
INFERENCE_LOGITS_BYTES = 6

# Inference forward transient (no autograd): the largest live set inside one layer:
# residual + normed hidden (2 x h) and the MLP's gate, up and act/product (3 x i), in B bytes.
INFERENCE_TRANSIENT_H_COPIES = 2
INFERENCE_TRANSIENT_I_COPIES = 3
# 2-matrix MLP: HF GPT-2's composite tanh GELU (activations.NewGELUActivation) keeps the fc output and
# up to 4 elementwise intermediates alive at once (traced gpt2 b8 s1024 prefill: 4.3 x B x i; rounded up)
INFERENCE_TRANSIENT_I_COPIES_PLAIN = 5
INFERENCE_FP32_NORM_BYTES = 4  # fp32 RMSNorm upcast of the layer input (per element of h)

# ---------------------------------------------------------------------------------------------
# Weights in flight and optimizer step
# ---------------------------------------------------------------------------------------------
# torch.autocast keeps a 16-bit copy of each fp32 weight used by a matmul from its use in forward
# until its backward (autocast weight cache + autograd saved tensor): DOMAIN.md sec. 3 trace.
AUTOCAST_COPY_BYTES = 2
# torch.optim.AdamW(foreach=True) (default on CUDA; HF Trainer "adamw_torch") computes
# `exp_avg_sq.sqrt()` etc. with torch._foreach_* over a whole param group: a transient the size of
# the parameters in the state dtype. fused=True (and DeepSpeed FusedAdam, Megatron) has none.
ADAMW_FOREACH_TRANSIENT_FACTOR = 1.0  # x trainable params x state-dtype bytes
# DeepSpeed ZeRO-1/2 (stage_1_and_2.py) builds an fp32 gradient for its partition at the step
# (single_partition_of_fp32_groups[i].grad): 4 B per locally owned trainable parameter.
ZERO_FP32_GRAD_PARTITION_BYTES = 4
# Gradients stay allocated across the whole step (DeepSpeed/Megatron contiguous grad buffers; HF
# with gradient accumulation keeps .grad between micro-batches). False: HF GA=1, grads appear
# only during backward.
GRADS_RESIDENT_ALL_STEP = True
# ZeRO-3 / FSDP: one gathered layer in use plus the prefetch bucket (DeepSpeed default
# stage3_prefetch_bucket_size = 5e7 elements, deepspeed/runtime/zero/config.py).
ZERO3_PREFETCH_BUCKET_ELEMENTS = 50_000_000
# PEFT prepare_model_for_kbit_training (peft/utils/other.py) casts every non-quantised parameter
# (embeddings, LM head, norms) to fp32 for QLoRA training.
QLORA_UPCAST_NON_QUANTIZED_TO_FP32 = True
# bitsandbytes 8-bit optimizers keep 32-bit state for tensors with fewer than min_8bit_size elements
# (bitsandbytes/optim/optimizer.py Optimizer8bit, min_8bit_size=4096) and one fp32 absmax per block
# of 256 values per state (blockwise quantisation, optimizer_update_8bit_blockwise).
BNB_OPTIM_MIN_8BIT_SIZE = 4096
BNB_OPTIM_BLOCK = 256

# ---------------------------------------------------------------------------------------------
# Runtime overhead (not tensors): what nvidia-smi shows on top of max_memory_allocated()
# ---------------------------------------------------------------------------------------------
# CUDA context + cuBLAS/cuDNN handles and workspaces loaded by the first kernel launch. vLLM's
# profiler reports ~0.5-1 GiB non-torch memory on Hopper; llm-d capacity planner uses a fixed
# per-GPU overhead. Value: inside that reported range, not yet measured here (no GPU has been lent;
# benchmarks/gpu_measure.py records nvidia-smi minus max_memory_reserved when one is).
CUDA_CONTEXT_BYTES = 600 * MiB
# AMD GPUs under ROCm: no CUDA context; the HIP runtime's device state, the rocBLAS/hipBLASLt and MIOpen kernel
# code objects loaded by the first launches and the hipBLASLt workspace (PyTorch aten/src/ATen/cuda/CUDABlas.cpp
# _parseChosenWorkspaceSize, HIPBLASLT_WORKSPACE_SIZE) in its place. vLLM's profiler measures this non-torch
# memory the same way on ROCm (vllm/utils MemorySnapshot); no ROCm card has been lent here to measure it, so
# the figure is the CUDA context's order of magnitude, kept separate to be calibrated on its own
# (benchmarks/gpu_measure.py records rocm-smi minus max_memory_reserved when one is).
ROCM_RUNTIME_BYTES = 600 * MiB
# PyTorch caching allocator: reserved - allocated at peak (block rounding to 512 B / 2 MiB segments,
# fragmentation). Expressed as a fraction of the tensor peak; measured ratios of
# max_memory_reserved / max_memory_allocated on HF training runs are typically 1.02-1.10.
ALLOCATOR_SLACK_FRACTION = 0.05
ALLOCATOR_SLACK_MAX_BYTES = 4 * GiB
# NCCL: per communicator, channels x (NCCL_BUFFSIZE 4 MiB) for send and receive, plus proxy buffers.
# nccl docs "NCCL_BUFFSIZE" default 4 MiB; typical 8-32 channels on NVLink systems.
NCCL_BYTES_PER_COMMUNICATOR = 256 * MiB

# vLLM's start-up profile run: one dummy forward of max_num_batched_tokens tokens (vLLM V1
# EngineArgs default for the OpenAI server on datacenter GPUs: 8192; vllm/engine/arg_utils.py).
VLLM_PROFILE_TOKENS = 8192
