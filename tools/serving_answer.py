"""An inference Estimate's serving figures: vLLM's capacity beside an HF-generate answer, or the named
engine's own memory model (tools/engines/) in place of it.

One meaning for every engine (docs/reference.md "Estimate"): `per_gpu.total_bytes` is the sum of the
components (what this job needs on the most loaded GPU), `headroom_bytes = usable_bytes - total_bytes`,
`fits = total_bytes <= usable_bytes`; what the engine reserves and the KV room it makes are in `serving`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tools import calibration as cal
from tools.assumptions import assumption
from tools.result import Component, Estimate, PerGpu, PhasePeak, ServingCapacity, constructed
from tools.rules.activations import inference_transient_entry
from tools.rules.gguf import GGUF_DTYPES, output_type, row_bytes
from tools.rules.kv_cache import kv_specs
from tools.rules.overhead import engine_terms_on
from tools.serving import ENGINES, EngineInputs, serving_capacity

if TYPE_CHECKING:
    from tools.estimator import Peak
    from tools.resolve import ResolvedScenario

ENGINE_DEFAULT = "transformers"
# sglang/srt/configs/model_config.py is_hybrid_swa_model: the architectures that get the SWA pool
SGLANG_HYBRID_SWA_MODELS = ("gpt-oss", "llama-4")


def rope_scaling(rs: ResolvedScenario) -> tuple[str, float, int] | None:
    """(method, factor, tokens): the rope scaling the catalog's model card supports beyond the window."""
    from tools.catalog import get_model

    try:
        extension = get_model(rs.model.id).context_extension
    except KeyError:  # not a catalog model (a Hub config or a bare size): nothing stated
        return None
    if extension is None or extension.max_tokens <= rs.model.arch.max_position_embeddings:
        return None
    return extension.method, extension.factor, extension.max_tokens


def _with_rope(cap: ServingCapacity, rs: ResolvedScenario) -> ServingCapacity:
    scaling = rope_scaling(rs)
    if scaling is None:
        return cap
    method, factor, tokens = scaling
    return cap.model_copy(update={"rope_scaling": f"{method} x{factor}", "rope_scaled_context": tokens})


def serving_figure(rs: ResolvedScenario, phase_components, overhead) -> ServingCapacity | None:
    """vLLM-style KV capacity: reserved memory minus everything that is not KV (weights, the profile
    run's transient, CUDA context and NCCL), the longest context capped at the model's window."""
    lay = rs.layout
    stage_layers = lay.layer_split(rs.model.params.num_layers)[0]
    specs = kv_specs(rs.model.arch, layers=stage_layers, tp=lay.tp, dtype_bytes=rs.kv_dtype_bytes)
    if not specs:
        return None
    # vLLM's profile run: weights + the transient of one forward of max_num_batched_tokens tokens
    # + non-torch memory (CUDA context, NCCL); not the HF-style batched prefill of this scenario
    prefill = phase_components.get("prefill", [])
    static = sum(c.bytes for c in prefill if c.name in ("weights", "quant_metadata", "logits"))
    profile_tokens = min(cal.VLLM_PROFILE_TOKENS, rs.seq * rs.batch)
    transient, _ = inference_transient_entry(
        rs.model.arch, b=1, s=profile_tokens, act_bytes=rs.weight_format.compute_bytes, flash=True, tp=lay.tp
    )
    non_kv = static + transient + sum(c.bytes for c in overhead if c.name != "allocator_slack")
    # one sequence cannot be longer than the model's context window (vLLM max_model_len defaults to
    # max_position_embeddings), however many KV tokens fit
    cap = serving_capacity(
        gpu_memory_bytes=rs.gpu.memory_bytes,
        gpu_memory_utilization=rs.gpu_memory_utilization,
        non_kv_bytes=non_kv,
        kv_specs=specs,
        seq_len=rs.seq,
        max_num_batched_tokens=rs.scenario.max_num_batched_tokens,
        max_model_len=rs.model.arch.max_position_embeddings,
    )
    return _with_rope(cap, rs)


def engine_inputs(rs: ResolvedScenario, pk: Peak, engine: str, usable: int) -> EngineInputs:
    """The per-GPU quantities an engine's memory model needs (tools.engines.EngineInputs)."""
    arch, lay = rs.model.arch, rs.layout
    layer_split = engine in ("llama.cpp", "ollama")  # llama.cpp splits layers, not tensors
    offload_asked = rs.scenario.offload_params not in (None, "none")
    if offload_asked and layer_split:  # the engine places the layers itself: start from the whole model
        from tools.estimator import peak_for
        from tools.resolve import resolve

        pk = peak_for(resolve(rs.scenario.model_copy(update={"offload_params": None})))
    prefill = pk.phase_components.get("prefill", [])
    weights = sum(c.bytes for c in prefill if c.name in ("weights", "quant_metadata"))
    tp = 1 if layer_split else lay.tp
    if layer_split:
        weights *= lay.tp  # the whole model: llama.cpp holds each layer on one card
    out_bytes = arch.vocab_size * arch.hidden_size * rs.weight_format.compute_bytes
    if rs.weight_dtype in GGUF_DTYPES:  # llama.cpp: the output matrix in its own GGUF type
        out_bytes = arch.vocab_size * row_bytes(output_type(rs.weight_dtype), arch.hidden_size)
    layers = rs.model.params.num_layers if layer_split else lay.layer_split(rs.model.params.num_layers)[0]
    kv_dtype = 2 if layer_split else rs.kv_dtype_bytes  # llama.cpp / ollama KV cache: f16
    overhead = sum(c.bytes for c in pk.overhead if c.name != "allocator_slack")

    def activation(tokens: int) -> int:
        return inference_transient_entry(
            arch, b=1, s=tokens, act_bytes=rs.weight_format.compute_bytes, flash=True, tp=tp
        )[0]

    return EngineInputs(
        card_bytes=rs.gpu.memory_bytes,
        usable_bytes=usable,
        num_gpus=lay.num_gpus if layer_split else lay.tp,
        weights_bytes=weights,
        output_bytes=min(out_bytes, weights),
        num_layers=rs.model.params.num_layers,
        kv_specs=tuple(kv_specs(arch, layers=layers, tp=tp, dtype_bytes=kv_dtype)),
        seq_len=rs.seq,
        sequences=rs.batch,
        activation_bytes=activation,
        hidden_size=arch.hidden_size,
        vocab_size=arch.vocab_size,
        num_heads=arch.num_attention_heads,
        overhead_bytes=overhead,
        gpu_memory_utilization=rs.gpu_memory_utilization,
        fraction_stated=not rs.assumed("gpu_memory_utilization"),
        max_num_batched_tokens=rs.scenario.max_num_batched_tokens,
        max_model_len=arch.max_position_embeddings,
        offload_asked=offload_asked,
        rope_scaling=rope_scaling(rs),
        hybrid_swa=str(getattr(rs.model, "id", "")).startswith(SGLANG_HYBRID_SWA_MODELS),
        # llama.cpp's SWA cache is for interleaved patterns (src/llama-model.cpp set_swa_pattern)
        interleaved_swa=bool(arch.sliding_window)
        and arch.sliding_window_layers not in (None, arch.num_hidden_layers),
    )


def with_engine(est: Estimate, rs: ResolvedScenario, pk: Peak) -> Estimate:
    """Inference under a serving engine's own memory model (tools.engines.ENGINES); transformers keeps
    the HF generate model. The engine in use is always stated."""
    engine = rs.scenario.engine
    if engine is None:
        est.assumptions = [*est.assumptions, assumption("engine", ENGINE_DEFAULT, "engine.default")]
        return est
    if engine not in ENGINES:
        return est
    x = engine_inputs(rs, pk, engine, est.usable_bytes)
    result = ENGINES[engine].run(x)
    components = [
        constructed(
            Component,
            name=t.name,
            bytes=t.bytes,
            kind=t.kind,
            formula=t.formula,
            substituted=t.substituted,
            source=t.source,
            label=None,
            label_code=t.label,
            label_values=dict(t.label_values),
            model_role=None,
            note_code=None,
            note=None,
        )
        for t in engine_terms_on(result.terms, rs.layout.runtime)  # a ROCm or Mac card's own runtime term
    ]
    tensor = sum(c.bytes for c in components if c.kind == "tensor")
    total = result.total_bytes
    # the engine's defaults replace the generic ones (SGLang's mem_fraction_static is not vLLM's 0.9);
    # what the user stated is never overridden
    defaulted = {a.field for a in est.assumptions}
    engine_defaults = {
        f: assumption(f, v, code, **values)
        for f, v, code, values in result.assumptions
        if f in defaulted or getattr(rs.scenario, f, None) is None
    }
    kept = [a for a in est.assumptions if a.field not in engine_defaults]
    est.components = components
    est.per_gpu = constructed(
        PerGpu,
        tensor_peak_bytes=tensor,
        total_bytes=total,
        peak_phase="serving",
        phases=[constructed(PhasePeak, phase="serving", tensor_bytes=tensor)],
        gpu_role=est.per_gpu.gpu_role,
        gpu_role_parts=est.per_gpu.gpu_role_parts,
    )
    # docs/reference.md: one meaning for every engine
    est.fits = total <= est.usable_bytes
    est.headroom_bytes = est.usable_bytes - total
    est.min_gpus = rs.layout.num_gpus if est.fits else None
    est.serving = constructed(
        ServingCapacity,
        gpu_memory_utilization=rs.gpu_memory_utilization,
        reserved_bytes=result.reserved_bytes,
        kv_cache_bytes=result.kv_pool_bytes,
        kv_bytes_per_token=x.kv_bytes_per_token,
        max_kv_tokens=result.max_kv_tokens,
        max_concurrent_sequences=result.max_concurrent_sequences,
        max_context_at_batch_1=result.max_context_tokens,
        max_model_len=rs.model.arch.max_position_embeddings,
        gpu_layers=result.gpu_layers,
        host_bytes=result.host_bytes,
        kv_context_at_batch_1=result.kv_context_tokens,
        rope_scaling=None,
        rope_scaled_context=None,
    )
    est.serving = _with_rope(est.serving, rs)
    est.assumptions = [*kept, *engine_defaults.values()]
    est.notes = [*est.notes, *result.notes]
    return est
