"""Component labels as data: a code (and values) naming what a component holds, said by the channels.

`Component.label_code` names the label, `Component.label_values` fill it; the words are in
`prompts/<lang>/components.toml` (service/agent/component_text.py; the English one also fills
`Component.label` in the JSON users see). `LABEL_CODES` lists every code the estimator can emit with the
values its template may use; tests/test_component_labels.py checks each has a template in every language.
`Component.note_code` likewise names a remark on a component (`NOTE_CODES`, templates in the same file's
[notes]; the English one fills `Component.note`).
"""

from __future__ import annotations

# code -> the values its templates may use
LABEL_CODES: dict[str, tuple[str, ...]] = {
    # weights (tools/components/weights.py)
    "weights.bits": ("bits",),
    "weights.format": ("format",),
    "weights.gguf": ("file_type", "base", "base_bpw", "mix"),
    "weights.exl2": ("bpw",),
    "weights.frozen_base": ("format",),
    "weights.offloaded": ("format",),
    "quant_metadata": (),
    # gradients and optimizer (tools/components/gradients.py, optimizer.py, savers.py)
    "gradients.bits": ("bits",),
    "gradients.in_backward": (),
    "fp32_gradient_buffer": (),
    "master_weights": (),
    "optimizer_states": ("optimizer",),
    "optimizer_step_temporaries": (),
    "optimizer_step_temporaries.fp16_optimizer": (),
    "autocast_weight_copies": (),
    "dequant_workspace": (),
    "zero3_gathered_params": (),
    "end_of_backward_temporaries": (),
    # activations and logits (tools/components/activations.py, logits.py, savers.py)
    "activations.kind": ("recompute", "kernel"),
    "activations.offloaded": ("recompute", "kernel"),
    "forward_transient": (),
    "logits.training": (),
    "logits.chunked": (),
    "logits.fused_linear": (),
    "logits.sampling": (),
    "logits.all_positions": (),
    "logits.logps": ("scored",),
    "kv_cache": (),
    # runtime overhead (tools/rules/overhead.py)
    "cuda_context": (),
    "hip_runtime": (),
    "allocator_slack": (),
    "nccl_buffers": (),
    # serving engines (tools/serving.py)
    "weights.engine": (),
    "weights.gguf_layers": (),
    "activations.profile_run": ("step",),
    "activations.prefill_chunk": ("step",),
    "kv_cache.vllm_pool": (),
    "kv_cache.sglang_pool": (),
    "kv_cache.gguf": ("n_ctx",),
    "cuda_graphs": (),
    "compute_buffer": (),
    # RL (tools/rl.py)
    "vllm_reservation": (),
}

# a remark on a component (no values)
NOTE_CODES: tuple[str, ...] = (
    "optimizer.paged",  # paged optimizer states (tools/components/optimizer.py)
    "zero3.gathered_layer",  # the layer gathered during a ZeRO-3 scoring forward (tools/rl.py)
    "rl.generation_gathers_weights",  # TRL gathers the ZeRO-3 weights to generate (tools/rl.py)
    "rl.reference_adapters_disabled",  # PEFT reference = the policy with adapters off (tools/rl.py)
    "kv_cache.window_after_prefill",  # window layers still hold the prompt after prefill (components/kv_cache.py)
)

# the most loaded GPU's place in the layout (tools/rules/parallel.py Layout.gpu_role): code -> its values
GPU_ROLE_CODES: dict[str, tuple[str, ...]] = {
    "single_gpu": (),
    "pp_stage": ("index", "of", "where", "layers"),
    "tp_rank": ("of",),
    "cp_rank": ("of",),
    "ep_rank": ("of",),
    "dp_rank": ("of",),
    "dp_rank_zero": ("of", "zero"),
}
