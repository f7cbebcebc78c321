"""Offline answer latency, in-process: time to first token and to the complete answer.

Targets: first token < 50 ms, full answer < 200 ms. Printed figures, not asserts.

For each question the real OfflineAgent streams an answer (parser, estimator with the planner's
suggestions, templates). Timed from the call to `agent.stream(...)` to the first TokenEvent and to
the DoneEvent. The first (cold) answer includes imports and catalog loading and is shown apart.

Run: `python benchmarks/answer_latency.py [--runs N]`
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

TARGET_FIRST_TOKEN_MS = 50.0
TARGET_FULL_MS = 200.0

QUESTIONS: tuple[tuple[str, str], ...] = (
    (
        "estimate, en, does not fit (planner)",
        "LoRA Llama-2-7B on one 4090, batch 4, cutoff_len 2048, 3 epochs",
    ),
    ("estimate, zh, does not fit (planner)", "两张4090能不能LoRA微调千问2.5-14B，batch 8，cutoff_len 2048"),
    ("estimate, en, fits", "QLoRA Llama-3-8B on one A100 80GB, batch 1, 2k context"),
    ("serving, en", "serve Llama-3-70B on 2x H100 with vLLM, 8k context, 32 concurrent users"),
    ("estimate, zh, MoE", "8卡H800 全量微调 Qwen3-30B-A3B，ZeRO-3，32K上下文"),
    ("concept, en (2 estimates)", "does num_epochs change memory?"),
    ("concept, zh (1 estimate)", "什么是 16 倍法则？"),
)


async def one_answer(agent: object, question: str) -> tuple[float, float, int]:
    from service.agent.base import ConversationState
    from service.agent.events import DoneEvent, ErrorEvent, TokenEvent

    start = time.perf_counter()
    first: float | None = None
    chars = 0
    async for event in agent.stream(question, ConversationState()):  # type: ignore[attr-defined]
        if isinstance(event, TokenEvent) and first is None:
            first = time.perf_counter()
        if isinstance(event, ErrorEvent):
            raise RuntimeError(f"{question!r}: {event.message}")
        if isinstance(event, DoneEvent):
            chars = len(event.answer.answer)
    end = time.perf_counter()
    assert first is not None
    return (first - start) * 1000, (end - start) * 1000, chars


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def main(runs: int) -> None:
    t0 = time.perf_counter()
    from service.agent.offline import OfflineAgent

    import_ms = (time.perf_counter() - t0) * 1000
    t1 = time.perf_counter()
    agent = OfflineAgent()  # loads templates, knowledge base and catalogs (cached for the process)
    construct_ms = (time.perf_counter() - t1) * 1000
    cold_first, cold_full, _ = await one_answer(agent, QUESTIONS[0][1])
    print(
        f"cold: imports {import_ms:.0f} ms, agent construction {construct_ms:.0f} ms; "
        f"first answer: first token {cold_first:.1f} ms, full {cold_full:.1f} ms"
    )
    print()
    print(f"warm, {runs} runs per question (median / p95 / max, ms)")
    print(f"{'question':40} {'first token':>24} {'full answer':>24} {'chars':>6}")
    all_first: list[float] = []
    all_full: list[float] = []
    for label, question in QUESTIONS:
        firsts: list[float] = []
        fulls: list[float] = []
        chars = 0
        for _ in range(runs):
            f, t, chars = await one_answer(agent, question)
            firsts.append(f)
            fulls.append(t)
        all_first += firsts
        all_full += fulls
        print(
            f"{label:40} {statistics.median(firsts):8.2f} {_pct(firsts, 0.95):7.2f} {max(firsts):7.2f}"
            f" {statistics.median(fulls):8.2f} {_pct(fulls, 0.95):7.2f} {max(fulls):7.2f} {chars:6d}"
        )
    print()
    med_first, p95_first = statistics.median(all_first), _pct(all_first, 0.95)
    med_full, p95_full = statistics.median(all_full), _pct(all_full, 0.95)
    ok_first = "OK" if p95_first < TARGET_FIRST_TOKEN_MS else "OVER"
    ok_full = "OK" if p95_full < TARGET_FULL_MS else "OVER"
    print(f"all questions: first token median {med_first:.2f} ms, p95 {p95_first:.2f} ms "
          f"(target < {TARGET_FIRST_TOKEN_MS:.0f} ms: {ok_first})")  # fmt: skip
    print(f"all questions: full answer median {med_full:.2f} ms, p95 {p95_full:.2f} ms "
          f"(target < {TARGET_FULL_MS:.0f} ms: {ok_full})")  # fmt: skip


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20, help="answers per question (warm)")
    args = parser.parse_args()
    asyncio.run(main(args.runs))
