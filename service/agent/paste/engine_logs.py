"""Serving engines' start-up lines and errors: vLLM and llama.cpp.

vLLM: vllm/v1/worker/gpu_model_runner.py ("Model loading took X GiB"), vllm/v1/worker/gpu_worker.py
("Available KV cache memory: X GiB"), vllm/v1/core/kv_cache_utils.py ("GPU KV cache size: N tokens",
"Maximum concurrency for N tokens per request: X.XXx", and the ValueError "To serve at least one request with
the model's max seq len (N), (X GiB KV cache is needed, which is larger than the available KV cache memory
(X GiB). Based on the available memory, the estimated maximum model length is N."); V0's "# GPU blocks: N".
llama.cpp: src/llama-model.cpp ("offloaded N/M layers to GPU", "CUDA0 model buffer size = X MiB"),
src/llama-kv-cache*.cpp ("CUDA0 KV buffer size = X MiB"; older "KV self size = X MiB"), src/llama-context.cpp
("CUDA0 compute buffer size = X MiB", "n_ctx = N"), print_info ("file type = Q4_K - Medium").
"""

from __future__ import annotations

import re

from service.agent.paste.reading import Reading
from service.agent.paste.values import model_name, size_bytes

_SIZE = r"([0-9][0-9.,]*)\s*(GiB|MiB|KiB|GB|MB)"
_VLLM = {
    "weights_bytes": re.compile(r"(?:Model loading took|Loading model weights took)\s+" + _SIZE),
    "kv_available_bytes": re.compile(r"Available KV cache memory:\s*" + _SIZE),
}
_VLLM_ERROR = re.compile(
    r"max seq len \((\d+)\),\s*\("
    + _SIZE
    + r" KV cache is needed.*?available KV cache memory \("
    + _SIZE
    + r"\)(?:.*?estimated maximum model length is (\d+))?",
    re.DOTALL,
)
_KV_TOKENS = re.compile(r"GPU KV cache size:\s*([\d,]+) tokens")
_CONCURRENCY = re.compile(r"Maximum concurrency for ([\d,]+) tokens per request:\s*([\d.]+)x")
_BLOCKS = re.compile(r"# GPU blocks:\s*(\d+)")
_FREE_AT_START = re.compile(
    r"Free memory on device.*?\(([\d.]+)/([\d.]+) GiB\) on startup is less than desired GPU memory "
    r"utilization \(([\d.]+), ([\d.]+) GiB\)"
)
VLLM_MARK = re.compile(
    r"KV cache memory|GPU KV cache size|# GPU blocks|Maximum concurrency for|vllm|max seq len \(\d+\)|"
    r"Free memory on device",
    re.IGNORECASE,
)


def _number(text: str) -> int:
    return int(text.replace(",", ""))


_ENGINE_CONFIG = {  # the engine's config line: "Initializing a V1 LLM engine (v0.9.0) with config: model='...', ..."
    "model": (re.compile(r"\bmodel='([^']+)'"), "model", model_name),
    "tensor_parallel_size": (re.compile(r"\btensor_parallel_size=(\d+)"), "tp", int),
    "pipeline_parallel_size": (re.compile(r"\bpipeline_parallel_size=(\d+)"), "pp", int),
    "max_seq_len": (re.compile(r"\bmax_seq_len=(\d+)"), "seq_len", int),
}


def _engine_config(reading: Reading, text: str) -> None:
    line = next((line for line in text.splitlines() if "with config:" in line), "")
    for key, (pattern, field, convert) in _ENGINE_CONFIG.items():
        found = pattern.search(line)
        if found:
            reading.use(key, field, convert(found.group(1)))


def read_vllm_log(text: str) -> Reading:
    reading = Reading("vllm-log")
    _engine_config(reading, text)
    for name, pattern in _VLLM.items():
        found = pattern.search(text)
        if found:
            # vLLM prints GiB (format_gib: bytes / 2**30, two decimals); older releases wrote "GB" for the same
            reading.observed[name] = size_bytes(found.group(1), found.group(2).replace("GB", "GiB"))
    error = _VLLM_ERROR.search(text)
    if error:
        reading.observed["max_model_len"] = _number(error.group(1))
        reading.observed["kv_needed_bytes"] = size_bytes(error.group(2), error.group(3))
        reading.observed["kv_available_bytes"] = size_bytes(error.group(4), error.group(5))
        if error.group(6):
            reading.observed["max_model_len_estimate"] = _number(error.group(6))
        reading.use("max seq len", "seq_len", _number(error.group(1)))
    tokens = _KV_TOKENS.search(text)
    if tokens:
        reading.observed["kv_cache_tokens"] = _number(tokens.group(1))
    concurrency = _CONCURRENCY.search(text)
    if concurrency:
        reading.observed["max_model_len"] = _number(concurrency.group(1))
        reading.facts["max_concurrency"] = float(concurrency.group(2))
        reading.use("tokens per request", "seq_len", _number(concurrency.group(1)))
    blocks = _BLOCKS.search(text)
    if blocks:
        reading.observed["gpu_blocks"] = int(blocks.group(1))
    free = _FREE_AT_START.search(text)
    if free:
        reading.observed["free_bytes"] = size_bytes(free.group(1), "GiB")
        reading.observed["capacity_bytes"] = size_bytes(free.group(2), "GiB")
        reading.observed["requested_bytes"] = size_bytes(free.group(4), "GiB")
        reading.use("utilization", "gpu_memory_utilization", float(free.group(3)))
    reading.fields["task"] = "inference"
    reading.fields["engine"] = "vllm"
    reading.assume("log_serving", engine="vLLM")
    reading.facts["kind"] = "vllm-error" if error or free else "vllm-log"
    return reading


_OFFLOADED = re.compile(r"offloaded (\d+)/(\d+) layers to GPU")
_MODEL_BUFFER = re.compile(r"(CUDA\d+|ROCm\d+|Metal|Vulkan\d+)\s+(?:model\s+)?buffer size\s*=\s*" + _SIZE)
_KV_BUFFER = re.compile(r"(CUDA\d+|ROCm\d+|Metal|Vulkan\d+)\s+KV buffer size\s*=\s*" + _SIZE)
_KV_SELF = re.compile(r"KV self size\s*=\s*" + _SIZE)
_COMPUTE = re.compile(r"(CUDA\d+|ROCm\d+|Metal|Vulkan\d+)\s+compute buffer size\s*=\s*" + _SIZE)
_N_CTX = re.compile(r"\bn_ctx\s*=\s*(\d+)")
_FILE_TYPE = re.compile(r"(?:file type|model ftype)\s*=\s*([A-Z0-9_]+)(?:\s*-\s*(Small|Medium|Large))?")
_CUDA_MALLOC = re.compile(r"allocating ([\d.]+) MiB on device (\d+): cudaMalloc failed: out of memory")
LLAMA_CPP_MARK = re.compile(
    r"llama_model_loader|load_tensors|llm_load_tensors|llama_kv_cache|llama_new_context_with_model|"
    r"llama_context|KV self size|print_info:"
)


def _gguf_type(name: str, size: str | None) -> str | None:
    from tools.scenario import WEIGHT_DTYPES

    text = name.lower() + (f"_{size[0].lower()}" if size else "")
    text = {"f16": "fp16", "bf16": "bf16", "f32": "fp32"}.get(text, text)
    return text if text in WEIGHT_DTYPES else None


def _sum(pattern: re.Pattern[str], text: str) -> int | None:
    sizes = [size_bytes(m.group(2), m.group(3)) for m in pattern.finditer(text) if "CPU" not in m.group(1)]
    return sum(sizes) if sizes else None


def read_llama_cpp_log(text: str) -> Reading:
    reading = Reading("llama.cpp-log")
    offloaded = _OFFLOADED.search(text)
    if offloaded:
        reading.observed["layers_offloaded"] = int(offloaded.group(1))
        reading.observed["layers_total"] = int(offloaded.group(2))
    model = _sum(
        _MODEL_BUFFER,
        "\n".join(line for line in text.splitlines() if "KV" not in line and "compute" not in line),
    )
    if model is not None:
        reading.observed["model_buffer_bytes"] = model
    kv = _sum(_KV_BUFFER, text)
    if kv is None:
        found = _KV_SELF.search(text)
        kv = size_bytes(found.group(1), found.group(2)) if found else None
    if kv is not None:
        reading.observed["kv_buffer_bytes"] = kv
    compute = _sum(_COMPUTE, text)
    if compute is not None:
        reading.observed["compute_buffer_bytes"] = compute
    malloc = _CUDA_MALLOC.search(text)
    if malloc:
        reading.observed["requested_bytes"] = size_bytes(malloc.group(1), "MiB")
    _llama_model(reading, text)
    n_ctx = _N_CTX.search(text)
    if n_ctx:
        reading.use("n_ctx", "seq_len", int(n_ctx.group(1)))
    file_type = _FILE_TYPE.search(text)
    if file_type:
        dtype = _gguf_type(file_type.group(1), file_type.group(2))
        if dtype:
            reading.use("file type", "weight_dtype", dtype)
    reading.fields["task"] = "inference"
    reading.fields["engine"] = "llama.cpp"
    reading.assume("log_serving", engine="llama.cpp")
    reading.facts["kind"] = "llama.cpp-log"
    return reading


_LOADED_FROM = re.compile(r"llama_model_loader: loaded meta data .*? from (\S+\.gguf)")
_GENERAL_NAME = re.compile(r"general\.name\s+str\s*=\s*(.+)$", re.MULTILINE)


def _llama_model(reading: Reading, text: str) -> None:
    """The model: the GGUF file the loader names, else `general.name` when the catalog knows it."""
    from service.agent.paste.serving_flags import gguf_name
    from tools.catalog import resolve_model
    from tools.errors import ScenarioError

    loaded = _LOADED_FROM.search(text)
    if loaded:
        reading.use("loaded meta data from", "model", gguf_name(loaded.group(1))[0])
        return
    named = _GENERAL_NAME.search(text)
    if named:
        name = "-".join(named.group(1).split())
        try:
            resolve_model(name)
        except ScenarioError:
            reading.ignore("general.name", "value_not_understood")
            return
        reading.use("general.name", "model", name)
