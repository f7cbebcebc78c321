"""One meaning everywhere: invariants every Estimate keeps, over the whole golden corpus and fresh engines.

docs/reference.md "Estimate": the components sum to `per_gpu.total_bytes` (tensor ones to the tensor
peak), none is negative, `headroom_bytes = usable_bytes - total_bytes`, `fits == (total_bytes <=
usable_bytes)`; the longest context never exceeds the model's window; a suggestion said to fit has a total
under the same card's budget. The corpus (tests/golden/estimates.jsonl.gz) is what the estimator outputs
today (tests/test_golden_corpus.py proves it byte for byte); the engine matrix below re-estimates the
serving engines on models with and without sliding-window layers.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.golden.make_corpus import read_corpus
from tools.catalog import get_model
from tools.estimator import estimate
from tools.scenario import Scenario


def _violations(est: dict[str, Any]) -> list[str]:
    out: list[str] = []
    total = est["per_gpu"]["total_bytes"]
    usable = est["usable_bytes"]
    parts = est["components"]
    if sum(c["bytes"] for c in parts) != total:
        out.append(f"components sum to {sum(c['bytes'] for c in parts)}, total {total}")
    tensor = sum(c["bytes"] for c in parts if c["kind"] == "tensor")
    if tensor != est["per_gpu"]["tensor_peak_bytes"]:
        out.append(f"tensor components {tensor} != tensor peak {est['per_gpu']['tensor_peak_bytes']}")
    out += [f"{c['name']} is negative ({c['bytes']})" for c in parts if c["bytes"] < 0]
    if est["headroom_bytes"] != usable - total:
        out.append(f"headroom {est['headroom_bytes']} != usable {usable} - total {total}")
    if est["fits"] != (total <= usable):
        out.append(f"fits {est['fits']} but total {total} vs usable {usable}")
    serving = est.get("serving") or {}
    if serving.get("max_model_len") and serving["max_context_at_batch_1"] > serving["max_model_len"]:
        out.append(f"longest context {serving['max_context_at_batch_1']} > window {serving['max_model_len']}")
    same_card = ("gpu", "safety_margin", "gpu_memory_bytes")
    for s in est.get("suggestions", []):
        if s["fits"] and not set(s["scenario_changes"]) & set(same_card) and s["total_bytes"] > usable:
            out.append(
                f"suggestion {s['scenario_changes']} says fits at {s['total_bytes']} > usable {usable}"
            )
    return out


def test_every_corpus_estimate_adds_up() -> None:
    rows = [r for r in read_corpus() if "estimate" in r]
    assert len(rows) > 1500
    engines = {r["estimate"]["scenario"].get("engine") for r in rows}
    assert {"vllm", "sglang", "llama.cpp", "ollama"} <= engines  # the serving engines are covered
    bad = {}
    for row in rows:
        problems = _violations(row["estimate"])
        if problems:
            bad[str(row["scenario"])[:200]] = problems
    assert not bad, f"{len(bad)} estimates break an invariant, e.g. {next(iter(bad.items()))}"


ENGINES = ("vllm", "sglang", "llama.cpp", "ollama")
# sliding-window models (Gemma-2: alternating W 4096; Gemma-3: 5 local : 1 global, W 1024; Mistral-7B-v0.1:
# W 4096 on every layer) beside full-attention ones, short and long contexts, one to many sequences
CASES = [
    ("gemma-3-27b", "h20", 131072, 1),
    ("gemma-3-27b", "h100-80gb", 8192, 8),
    ("gemma-2-9b", "4090", 8192, 4),
    ("mistral-7b-v0.1", "a100-80gb", 32768, 8),
    ("qwen2.5-7b", "h100-80gb", 4096, 1),
    ("llama-3.1-70b", "4090", 4096, 1),
    ("llama-3.1-8b", "a100-40gb", 16384, 32),
]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(("model", "gpu", "seq_len", "batch"), CASES)
def test_engine_answers_add_up(engine: str, model: str, gpu: str, seq_len: int, batch: int) -> None:
    est = estimate(
        Scenario(model=model, task="inference", gpu=gpu, engine=engine, seq_len=seq_len, batch_size=batch),
        plan=False,
    )
    assert _violations(est.model_dump(mode="json")) == []
    assert est.serving is not None and est.serving.reserved_bytes > 0


def test_gemma3_27b_at_128k_on_h20_keeps_only_the_window_in_local_layers() -> None:
    # 10 global layers keep all 131,072 tokens: 10 x 2 x 16 x 128 x 2 B x 131,072 = 10 GiB; the 52 local
    # layers keep their 1,024-token window (plus what each engine adds to it), not 52 GiB more
    global_kv = 10 * 2 * 16 * 128 * 2 * 131072
    for engine in ("vllm", "llama.cpp"):
        est = estimate(
            Scenario(model="gemma-3-27b", task="inference", gpu="h20", engine=engine, seq_len=131072),
            plan=False,
        )
        kv = est.component("kv_cache")
        assert kv is not None and global_kv < kv.bytes < global_kv + 5 * 2**30, (engine, kv.bytes)
        assert est.fits
    # vLLM: 6 groups of 10 sliding layers (52 padded to 60) x (cdiv(1024 - 1 + 8192, 16) + 1 = 577) blocks
    # + 1 group of the 10 full layers x cdiv(131072, 16) = 8192 blocks
    vllm = estimate(
        Scenario(model="gemma-3-27b", task="inference", gpu="h20", engine="vllm", seq_len=131072), plan=False
    )
    page = 16 * 2 * 16 * 128 * 2
    assert vllm.component("kv_cache").bytes == (6 * 577 + 1 * 8192) * 10 * page
    # llama.cpp: SWA layers GGML_PAD(min(n_ctx, 1024 x 1 + 512), 256) = 1,536 cells
    gguf = estimate(
        Scenario(model="gemma-3-27b", task="inference", gpu="h20", engine="llama.cpp", seq_len=131072),
        plan=False,
    )
    per_cell = 2 * 16 * 128 * 2
    assert gguf.component("kv_cache").bytes == (52 * 1536 + 10 * 131072) * per_cell


def test_longest_context_is_capped_at_the_window_and_said() -> None:
    est = estimate(Scenario(model="qwen2.5-7b", task="inference", gpu="h100-80gb"), plan=False)
    assert est.serving is not None and est.serving.max_model_len == 32768
    assert est.serving.max_context_at_batch_1 == 32768 < est.serving.max_kv_tokens
    vllm = estimate(
        Scenario(model="qwen2.5-7b", task="inference", gpu="h100-80gb", engine="vllm"), plan=False
    )
    assert vllm.serving is not None and vllm.serving.max_context_at_batch_1 == 32768
    capped = next(n for n in vllm.notes if n.code == "context_capped")
    assert capped.values["window"] == 32768 and capped.values["kv_context"] > 32768


def test_sliding_window_kv_matches_each_engines_formula() -> None:
    # benchmarks/serving_engines.py recomputes the KV of Gemma-2/3 and Mistral-7B-v0.1 from each engine's code
    from benchmarks.serving_engines import swa_rows

    rows = swa_rows()[2:]
    assert len(rows) == 16
    assert all(row.endswith("| yes |") for row in rows), [r for r in rows if not r.endswith("| yes |")]


def test_traced_sliding_window_decode_holds_the_window() -> None:
    # the traced matrix (benchmarks/accuracy/traced_cases.json, transformers' own DynamicCache on fake tensors):
    # from the second decode step the window layers hold W tokens; prefill still holds the whole prompt
    import json
    from pathlib import Path

    cases = json.loads((Path(__file__).parent.parent / "benchmarks/accuracy/traced_cases.json").read_text())
    cases = cases if isinstance(cases, list) else cases["cases"]
    checked = 0
    for case in cases:
        sc = case["scenario"]
        window = get_model(sc["model"]).architecture.sliding_window
        if sc["task"] != "inference" or not window or sc["seq_len"] <= window:
            continue
        est = estimate(Scenario.model_validate(sc), plan=False)
        phases = {p.phase: p.tensor_bytes for p in est.per_gpu.phases}
        traced_decode = [p["peak_bytes"] for p in case["phases"] if p["name"] == "decode"][-1]
        traced_prefill = next(p["peak_bytes"] for p in case["phases"] if p["name"] == "prefill")
        assert abs(phases["decode"] - traced_decode) / traced_decode < 0.01, (
            case["id"],
            phases,
            traced_decode,
        )
        assert abs(phases["prefill"] - traced_prefill) / traced_prefill < 0.03, (case["id"], phases)
        checked += 1
    assert checked >= 2  # mistral-7b-v0.1 b4 s8192 (W 4096), gemma-3-1b b4 s8192 (W 512)


def test_rope_scaling_the_model_card_supports_is_said() -> None:
    # Qwen2.5-7B ships a 32,768-token window; its card supports YaRN x4 (131,072 tokens)
    est = estimate(Scenario(model="qwen2.5-7b", task="inference", gpu="h100-80gb", engine="vllm"), plan=False)
    sv = est.serving
    assert sv is not None and sv.rope_scaling == "yarn x4.0" and sv.rope_scaled_context == 131072
    assert sv.kv_context_at_batch_1 is not None and sv.kv_context_at_batch_1 > sv.max_context_at_batch_1
    rope = next(n for n in est.notes if n.code == "context_rope_scaling")
    assert rope.values["tokens"] == 131072
    # a model whose card states none: nothing said
    llama = estimate(Scenario(model="llama-2-7b", task="inference", gpu="h100-80gb"), plan=False)
    assert llama.serving is not None and llama.serving.rope_scaling is None


def test_traced_gemma2_window_layers_against_transformers_cache() -> None:
    # Gemma-2-2B (13 local layers W 4,096 + 13 global), 2 x 8,192 tokens, traced with `vramwise trace` on
    # fake tensors (tests/fixtures/traced_gemma2_sliding_window.json): after prefill every layer still holds
    # the whole prompt (8,192 - 4 new tokens); once decoding, the local layers hold the window
    import json
    from pathlib import Path

    traced = json.loads((Path(__file__).parent / "fixtures/traced_gemma2_sliding_window.json").read_text())
    est = estimate(Scenario.model_validate(traced["scenario"]), plan=False)
    assert (
        est.component("kv_cache").bytes == traced["breakdown"]["kv_cache"] == 2 * 8188 * 26 * 2 * 4 * 256 * 2
    )
    phases = {p.phase: p.tensor_bytes for p in est.per_gpu.phases}
    decode = [p for p in traced["phases"] if p["name"] == "decode"]
    # what stays between decode steps (weights + the windowed cache) within 0.1%; the step's peak within 2.5%
    assert abs(phases["decode"] - decode[-1]["end_bytes"]) / decode[-1]["end_bytes"] < 0.001
    assert abs(phases["decode"] - decode[-1]["peak_bytes"]) / decode[-1]["peak_bytes"] < 0.025


def test_sglang_swa_pool_split_like_set_num_token_hybrid() -> None:
    # a gpt-oss-20b-like layout (12 sliding layers W 128 + 12 full, 8 KV heads x 64, bf16) under SGLang's
    # SWAKVPool: model_runner.py set_num_token_hybrid splits the pool by swa_full_tokens_ratio 0.8
    from tools.engines.base import EngineInputs
    from tools.engines.sglang import SglangEngine
    from tools.rules.kv_cache import FullAttentionKV, SlidingWindowKV

    specs = (SlidingWindowKV(12, 8, 64, 2, window=128), FullAttentionKV(12, 8, 64, 2))
    x = EngineInputs(
        card_bytes=80 * 2**30,
        usable_bytes=72 * 2**30,
        num_gpus=1,
        weights_bytes=13 * 2**30,
        output_bytes=2**30,
        num_layers=24,
        kv_specs=specs,
        seq_len=8192,
        sequences=4,
        activation_bytes=lambda tokens: tokens * 10_000,
        hidden_size=2880,
        vocab_size=201088,
        num_heads=64,
        overhead_bytes=600 * 2**20,
        hybrid_swa=True,
    )
    pool = SglangEngine().token_pool(x)
    tokens = (int(80 * 2**30 * 0.88) - 13 * 2**30) // (24 * 2 * 8 * 64 * 2)  # profile_max_num_token
    full = int(tokens * 24 / (0.8 * 12 + 12))
    assert (pool.full_tokens, pool.swa_tokens, pool.window) == (full, int(full * 0.8), 128)
    result = SglangEngine().run(x)
    kv = next(t for t in result.terms if t.name == "kv_cache")
    assert kv.bytes == 4 * (12 * 128 + 12 * 8192) * 2 * 8 * 64 * 2  # sliding layers keep their window
    assert result.max_concurrent_sequences == min(full // 8192, int(full * 0.8) // 128)
