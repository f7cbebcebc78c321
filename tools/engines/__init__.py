"""Serving engines, each with its own memory model (one small class per engine, answering the same
questions: what the job needs on the most loaded GPU, term by term, and what the engine reserves and
holds beside it: the KV pool, how many sequences of the asked length fit, the longest context).

One meaning for every engine (docs/reference.md "Estimate"): `total_bytes` is the sum of the terms (weights,
activations, KV cache for the batch x context asked, runtime overhead); the caller derives
`headroom = usable - total` and `fits = total <= usable`. What the engine takes up front (vLLM
gpu_memory_utilization, SGLang mem_fraction_static) and llama.cpp's layers left on the CPU are in the
result's serving figures and notes, never in the total.
"""

from __future__ import annotations

from tools.engines.base import EngineInputs, EngineResult, EngineTerm
from tools.engines.llama_cpp import LlamaCppEngine, OllamaEngine
from tools.engines.sglang import SglangEngine
from tools.engines.vllm import VllmEngine

ENGINES: dict[str, VllmEngine | SglangEngine | LlamaCppEngine | OllamaEngine] = {
    "vllm": VllmEngine(),
    "sglang": SglangEngine(),
    "llama.cpp": LlamaCppEngine(),
    "ollama": OllamaEngine(),
}

__all__ = ["ENGINES", "EngineInputs", "EngineResult", "EngineTerm"]
