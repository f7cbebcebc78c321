"""Notes: remarks about an estimate that do not stop it, as data (a code and its values).

The estimator says *what* it noticed; the words are the channels' (service/agent/render.py formats
`prompts/<lang>/notes.toml`, one template per code, in every language). `NOTE_CODES` lists every code
the estimator can emit with the values its template may use; a Note with another code is a bug, caught
where it is made, and tests/test_notes.py checks that every code has a template in each language.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

# code -> the values its templates may use
NOTE_CODES: dict[str, tuple[str, ...]] = {
    # resolve stages
    "recompute_disagrees": ("gradient_checkpointing", "recompute"),
    "fp32_gqa_math_kernel": (),
    "fp32_mem_efficient_kernel": (),
    "seq_beyond_context": ("seq_len", "max_position_embeddings"),
    "ep_does_not_divide": ("ep", "ranks"),
    "inference_params_offload": (),
    "several_macs": ("num_gpus",),  # tools/unified_memory.py
    "unified_memory_offload": (),
    "sequence_parallel_without_tp": (),
    "no_fp8_tensor_cores": ("gpu",),
    "no_native_bf16": ("gpu",),
    "no_effect_on_inference": ("field",),
    "paged_optimizer": (),
    "recipe_keeps_fp32_weights": ("recipe", "weight_dtype"),
    "params_differ_from_architecture": ("params", "model", "architecture_params"),
    "kv_heads_replicated": ("tp", "kv_heads", "copies"),
    # footprint
    "peft_kbit_fp32_upcast": (),
    "params_offloaded": ("target",),
    "optimizer_offloaded": (),
    "gradients_whole_step_zero": (),
    "gradients_whole_step_recipe": ("recipe",),
    "gradients_whole_step_model_parallel": (),
    "gradients_whole_step_accumulation": (),
    "gradients_from_backward": (),
    "images_not_modelled": (),
    # serving engines (tools/engines/)
    "vllm_pool": (
        "engine",
        "fraction",
        "card",
        "reserved",
        "non_kv",
        "pool",
        "kv_tokens",
        "sequences",
        "seq_len",
        "asked",
        "longest",
    ),
    "vllm_refuses_to_start": ("engine", "max_model_len", "needed", "pool"),
    "sglang_pool": (
        "fraction",
        "card",
        "static",
        "weights",
        "pool",
        "kv_tokens",
        "sequences",
        "seq_len",
        "asked",
        "longest",
        "other",
    ),
    "engine_pool_short": ("engine", "sequences", "asked", "seq_len"),
    "context_capped": ("kv_context", "window"),
    "context_rope_scaling": ("method", "factor", "tokens", "kv_context"),
    "sglang_step_does_not_fit": ("step",),
    "gguf_all_layers_on_gpu": ("engine", "layers", "cards", "n_ctx", "max_context"),
    "gguf_some_layers_on_gpu": ("engine", "layers", "cards", "n_ctx", "max_context", "gpu_layers", "host"),
    "gguf_offload_would_fit": ("engine", "layers", "cards", "n_ctx", "max_context", "gpu_layers", "host"),
    # memory savers (tools/components/savers.py)
    "chunked_cross_entropy": (),
    "fused_linear_cross_entropy": (),
    "optimizer_in_backward": (),
    "activation_offloading": (),
    "packing": (),
    "fp8_training": (),
    "mixed_recipe_assumed": (),
    "pipeline_schedule": ("schedule", "stage", "stages", "in_flight", "in_flight_1f1b", "microbatches"),
    "pipeline_schedule_interleaved": (
        "schedule",
        "stage",
        "stages",
        "in_flight",
        "in_flight_1f1b",
        "microbatches",
        "virtual_stages",
    ),
    # RL
    "rl_colocated": ("models", "lora_reference", "reference_offload"),
}


class Note(BaseModel):
    """One remark: `code` names the template, `values` fill it (made with `note(code, **values)`)."""

    model_config = ConfigDict(frozen=True)

    code: str
    values: dict[str, object] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _known(self) -> Note:
        if self.code not in NOTE_CODES:
            raise ValueError(f"unknown note code {self.code!r} (tools/notes.py NOTE_CODES)")
        unexpected = set(self.values) - set(NOTE_CODES[self.code])
        if unexpected:
            raise ValueError(f"note {self.code!r} takes {NOTE_CODES[self.code]}, not {sorted(unexpected)}")
        return self

    def __hash__(self) -> int:
        return hash((self.code, tuple(sorted((k, repr(v)) for k, v in self.values.items()))))


# Notes are frozen values: one object per distinct (code, values), made and checked once (an estimate makes a
# few, the planner's candidates dozens). Keyed with each value's type (1, 1.0 and True are said differently).
_MADE: dict[tuple[object, ...], Note] = {}
_MADE_MAX = 4096


def note(code: str, /, **values: object) -> Note:
    """A Note with `code` and its values, checked against NOTE_CODES."""
    key = (code, *((k, type(v), v) for k, v in values.items()))
    try:
        got = _MADE.get(key)
    except TypeError:  # a value that cannot be hashed (a list): made each time
        return Note(code=code, values=values)
    if got is None:
        if len(_MADE) >= _MADE_MAX:
            _MADE.clear()
        got = _MADE[key] = Note(code=code, values=values)
    return got
