"""Serving command lines: `vllm serve`, SGLang's `launch_server`, llama.cpp's `llama-server` / `llama-cli`.

Flag names: vllm/engine/arg_utils.py (EngineArgs) and docs/serving; sglang/srt/server_args.py;
llama.cpp tools/server/README.md and common/arg.cpp.
"""

from __future__ import annotations

import re
from typing import Any

from service.agent.paste.reading import NOT_UNDERSTOOD, Reading
from service.agent.paste.tables import SKIP, To
from service.agent.paste.values import as_dtype, as_float, as_int, model_name

POOL_SHARED = "pool_shared"  # sequences share the engine's one KV pool: the answer says how many fit
ALL_LAYERS_ASSUMED = "all_layers_on_gpu"  # -ngl 99: every layer on the GPU, as the estimate counts


def human_int(value: Any) -> int:
    """vLLM's human-readable ints (vllm/engine/arg_utils.py human_readable_int): 32k = 32000, 32K = 32768."""
    text = str(value).strip()
    found = re.fullmatch(r"(\d+(?:\.\d+)?)([kKmM]?)", text)
    if not found:
        raise ValueError(text)
    scale = {"": 1, "k": 1000, "K": 1024, "m": 1000**2, "M": 1024**2}[found.group(2)]
    number = float(found.group(1)) * scale
    if not number.is_integer():
        raise ValueError(text)
    return int(number)


def _kv_dtype(value: Any) -> str:
    text = str(value).strip().lower()
    if text.startswith("fp8"):
        return "fp8"
    # llama.cpp cache types: q8_0 (8.5 bits a value) is taken as int8
    known = {"bf16": "bf16", "f16": "fp16", "fp16": "fp16", "f32": "fp32", "q8_0": "int8", "int8": "int8"}
    return known[text]


def _quantization(reading: Reading, key: str, value: Any) -> None:
    text = str(value).strip().lower().replace("_marlin", "")
    if text in ("awq", "gptq"):
        reading.use(key, "weight_dtype", "int4")
        reading.use(key, "quant_method", text)
    elif text in ("fp8", "modelopt", "fbgemm_fp8"):
        reading.use(key, "weight_dtype", "fp8")
    elif text in ("bitsandbytes",):
        reading.use(key, "weight_dtype", "nf4")
        reading.use(key, "quant_method", "bnb")
    else:
        raise ValueError(text)


def _weight_dtype(reading: Reading, key: str, value: Any) -> None:
    """--dtype: the weights' dtype, unless --quantization names the weights' storage (then it is the compute
    dtype); settled in finish_serving, whatever the flags' order."""
    if str(value).strip().lower() == "auto":
        reading.ignore(key, "auto_value")
    else:
        reading.facts["dtype"] = (key, as_dtype(value))


def _pool(reading: Reading, key: str, value: Any) -> None:
    reading.ignore(key, POOL_SHARED)


def _not_modelled(reading: Reading, key: str, value: Any) -> None:
    reading.ignore(key, NOT_UNDERSTOOD)


def _data_parallel(reading: Reading, key: str, value: Any) -> None:
    reading.facts["data_parallel"] = as_int(value)
    reading.used[key] = "num_gpus"


_SERVER_SKIP = {
    name: SKIP
    for name in (
        "host",
        "port",
        "served_model_name",
        "api_key",
        "trust_remote_code",
        "download_dir",
        "disable_log_requests",
        "disable_log_stats",
        "uvicorn_log_level",
        "enable_prefix_caching",
        "chat_template",
        "tokenizer",
        "seed",
        "swap_space",
        "log_level",
        "tool_call_parser",
        "enable_auto_tool_choice",
        "reasoning_parser",
        "generation_config",
        "revision",
    )
}

VLLM: dict[str, Any] = {
    **_SERVER_SKIP,
    "model": To("model", model_name),
    "tensor_parallel_size": To("tp", as_int),
    "tp": To("tp", as_int),
    "pipeline_parallel_size": To("pp", as_int),
    "pp": To("pp", as_int),
    "data_parallel_size": _data_parallel,
    "dp": _data_parallel,
    "max_model_len": To("seq_len", human_int),
    "gpu_memory_utilization": To("gpu_memory_utilization", as_float),
    "max_num_seqs": _pool,
    "max_num_batched_tokens": To("max_num_batched_tokens", human_int),
    "kv_cache_dtype": To("kv_dtype", _kv_dtype),
    "quantization": _quantization,
    "q": _quantization,
    "dtype": _weight_dtype,
    "enforce_eager": _not_modelled,
    "cpu_offload_gb": _not_modelled,
    "enable_chunked_prefill": SKIP,
    "block_size": _not_modelled,
}

SGLANG: dict[str, Any] = {
    **_SERVER_SKIP,
    "model_path": To("model", model_name),
    "model": To("model", model_name),
    "tp": To("tp", as_int),
    "tp_size": To("tp", as_int),
    "tensor_parallel_size": To("tp", as_int),
    "dp": _data_parallel,
    "dp_size": _data_parallel,
    "mem_fraction_static": To("gpu_memory_utilization", as_float),
    "context_length": To("seq_len", as_int),
    "max_running_requests": _pool,
    "chunked_prefill_size": To("max_num_batched_tokens", as_int),
    "kv_cache_dtype": To("kv_dtype", _kv_dtype),
    "quantization": _quantization,
    "dtype": _weight_dtype,
    "disable_cuda_graph": _not_modelled,
    "cuda_graph_max_bs": _not_modelled,
    "max_total_tokens": _not_modelled,
}

# GGUF file types as file names spell them (llama.cpp ggml/include/ggml.h, llama_ftype names)
_GGUF_QUANT = re.compile(
    r"[-_.](i?q\d(?:_[a-z0-9]+)*|f16|bf16|f32)(?=$|[-_.])",
    re.IGNORECASE,
)


def gguf_name(value: str) -> tuple[str, str | None]:
    """`models/Qwen2.5-7B-Instruct-Q4_K_M.gguf` -> (`Qwen2.5-7B-Instruct`, `q4_k_m`)."""
    base = re.split(r"[/\\]", value)[-1]
    base = re.sub(r"\.gguf$", "", base, flags=re.IGNORECASE)
    base = re.sub(r"-\d{5}-of-\d{5}$", "", base)
    quant = None
    matches = list(_GGUF_QUANT.finditer(base))
    if matches:  # the last quant-looking part of the name (`Llama-3-8B-Q4_K_M`)
        quant = matches[-1].group(1).lower()
        base = base[: matches[-1].start()]
    return base.removesuffix("-GGUF").removesuffix("-gguf"), quant


def _gguf_dtype(quant: str | None) -> str | None:
    from tools.scenario import WEIGHT_DTYPES

    if quant is None:
        return None
    named = {"f16": "fp16", "bf16": "bf16", "f32": "fp32"}.get(quant, quant)
    return named if named in WEIGHT_DTYPES else None


def _gguf_file(reading: Reading, key: str, value: Any) -> None:
    name, quant = gguf_name(str(value))
    reading.use(key, "model", name)
    dtype = _gguf_dtype(quant)
    if dtype is not None:
        reading.use(key, "weight_dtype", dtype)
    elif quant is not None:
        reading.assume("gguf_quant_unknown", quant=quant)


def _hf_repo(reading: Reading, key: str, value: Any) -> None:
    """`-hf bartowski/Llama-3.2-3B-Instruct-GGUF:Q4_K_M`: the repository and the quant after the colon."""
    repo, _, tag = str(value).partition(":")
    name = repo.rsplit("/", 1)[-1].removesuffix("-GGUF").removesuffix("-gguf")
    reading.use(key, "model", name)
    dtype = _gguf_dtype(tag.lower() or "q4_k_m")  # llama.cpp's -hf default tag is Q4_K_M (common/arg.cpp)
    if dtype:
        reading.use(key, "weight_dtype", dtype)


def _gpu_layers(reading: Reading, key: str, value: Any) -> None:
    text = str(value).strip().lower()
    if text in ("all", "auto") or as_int(text) >= 99:
        reading.ignore(key, ALL_LAYERS_ASSUMED)
    else:
        reading.ignore(key, NOT_UNDERSTOOD)  # a partial offload: the estimate counts every layer on the GPU


def _flash(reading: Reading, key: str, value: Any) -> None:
    text = str(value).strip().lower()
    reading.use(key, "attention", "eager" if text in ("off", "false", "0") else "flash")


def _tensor_split(reading: Reading, key: str, value: Any) -> None:
    parts = [float(part) for part in re.split(r"[,/]", str(value)) if part.strip()]
    reading.use(key, "num_gpus", max(1, sum(1 for part in parts if part > 0)))


def _cache_type(reading: Reading, key: str, value: Any) -> None:
    dtype = _kv_dtype(value)
    previous = reading.fields.get("kv_dtype")
    if previous is not None and previous != dtype:
        reading.ignore(key, NOT_UNDERSTOOD)  # K and V in different types: one kv_dtype is kept
        return
    reading.use(key, "kv_dtype", dtype)


LLAMA_CPP: dict[str, Any] = {
    **_SERVER_SKIP,
    "m": _gguf_file,
    "model": _gguf_file,
    "hf": _hf_repo,
    "hf_repo": _hf_repo,
    "c": To("seq_len", as_int),
    "ctx_size": To("seq_len", as_int),
    "np": _pool,
    "parallel": _pool,
    "ngl": _gpu_layers,
    "n_gpu_layers": _gpu_layers,
    "gpu_layers": _gpu_layers,
    "fa": _flash,
    "flash_attn": _flash,
    "ctk": _cache_type,
    "cache_type_k": _cache_type,
    "ctv": _cache_type,
    "cache_type_v": _cache_type,
    "ts": _tensor_split,
    "tensor_split": _tensor_split,
    "t": SKIP,
    "threads": SKIP,
    "cb": SKIP,
    "cont_batching": SKIP,
    "mlock": SKIP,
    "no_mmap": SKIP,
    "jinja": SKIP,
    "n": SKIP,
    "n_predict": SKIP,
    "p": SKIP,
    "prompt": SKIP,
    "sm": SKIP,
    "split_mode": SKIP,
    "b": _not_modelled,
    "batch_size": _not_modelled,
    "ub": _not_modelled,
    "ubatch_size": _not_modelled,
}

# flags that take no value in these tools (a following word is the next flag or positional)
BOOLEAN_FLAGS = frozenset(
    {
        "enforce_eager",
        "trust_remote_code",
        "enable_prefix_caching",
        "disable_log_requests",
        "disable_log_stats",
        "enable_auto_tool_choice",
        "disable_cuda_graph",
        "cb",
        "cont_batching",
        "mlock",
        "no_mmap",
        "jinja",
        "fa",
        "flash_attn",
    }
)


# checkpoints that carry their quantization in the name (vLLM and SGLang read it from the checkpoint's
# quantization_config without a flag): Qwen2.5-7B-Instruct-AWQ, ...-GPTQ-Int4, ...-FP8
_NAMED_QUANT = (
    (re.compile(r"[-_]awq\b", re.IGNORECASE), "int4", "awq"),
    (re.compile(r"[-_]gptq(?:[-_]int4)?\b", re.IGNORECASE), "int4", "gptq"),
    (re.compile(r"[-_]fp8\b", re.IGNORECASE), "fp8", None),
)


def quant_from_name(reading: Reading) -> None:
    model = str(reading.fields.get("model", ""))
    for pattern, dtype, method in _NAMED_QUANT:
        if pattern.search(model):
            reading.fields["weight_dtype"] = dtype
            if method:
                reading.fields["quant_method"] = method
            reading.assume("quant_from_name", model=model, dtype=dtype)
            return


def finish_serving(reading: Reading, engine: str) -> None:
    if engine in ("vllm", "sglang") and "weight_dtype" not in reading.fields:
        quant_from_name(reading)
    if "dtype" in reading.facts:
        key, dtype = reading.facts["dtype"]
        if "weight_dtype" in reading.fields:
            reading.ignore(key, "compute_dtype")
        else:
            reading.use(key, "weight_dtype", dtype)
    reading.fields["task"] = "inference"
    reading.fields["engine"] = engine
    if engine in ("vllm", "sglang") and "num_gpus" not in reading.fields:
        gpus = int(reading.fields.get("tp", 1)) * int(reading.fields.get("pp", 1))
        if gpus > 1:
            reading.fields["num_gpus"] = gpus
            reading.assume("gpus_from_parallel", gpus=gpus)
    if reading.facts.get("data_parallel"):
        reading.assume("data_parallel_replicas", replicas=reading.facts["data_parallel"])
