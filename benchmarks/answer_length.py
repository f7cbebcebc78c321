"""Answer length: lines and characters of the short summary (and of the full answer), per language and task.

Runs the real OfflineAgent over every estimate question of the realistic-question suite
(tests/parser_suite.py, English and Chinese) and the inverse and comparison questions (tests/inverse_suite.py,
rows max/min/compare) and prints, per (language, task), the median and maximum
number of lines and characters of `Answer.summary` (the short first part every channel shows first) and,
for comparison, of the full `Answer.answer` (summary + cited breakdown). Printed figures, not asserts;
the summary is at most 6 lines by construction (service/agent/summary.py).

Run: `python benchmarks/answer_length.py`
"""

from __future__ import annotations

import asyncio
import statistics
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


async def _answers() -> list[tuple[str, str, str, str]]:
    from service.agent.base import ConversationState
    from service.agent.events import DoneEvent
    from service.agent.offline import OfflineAgent
    from tests.inverse_suite import CASES
    from tests.parser_suite import ESTIMATES

    agent = OfflineAgent()
    out = []
    # the inverse and comparison questions (tests/inverse_suite.py) as their own rows: "max"/"min"/"compare"
    questions = [(q, None) for q, _, _ in ESTIMATES] + [(c.question, c.kind) for c in CASES]
    for question, kind in questions:
        events = [e async for e in agent.stream(question, ConversationState())]
        last = events[-1]
        if isinstance(last, DoneEvent) and last.answer.estimate is not None:
            a = last.answer
            out.append((a.language, kind or a.estimate.scenario.task or "?", a.summary, a.answer))
    return out


def _stats(values: list[int]) -> str:
    return f"{statistics.median(values):>6.0f} {max(values):>6d}"


def main() -> None:
    rows = asyncio.run(_answers())
    groups: dict[tuple[str, str], list[tuple[str, str]]] = defaultdict(list)
    for lang, task, summary, answer in rows:
        groups[(lang, task)].append((summary, answer))
        groups[(lang, "all")].append((summary, answer))
    print(
        f"{len(rows)} answers (estimate questions of tests/parser_suite.py; max/min/compare: tests/inverse_suite.py)"
    )
    print(
        f"{'lang':<4} {'task':<14} {'n':>4} | {'summary lines':>13} {'':>0}| {'summary chars':>13} "
        f"| {'full lines':>13} | {'full chars':>13}"
    )
    print(
        f"{'':<4} {'':<14} {'':>4} | {'median':>6} {'max':>6} | {'median':>6} {'max':>6} "
        f"| {'median':>6} {'max':>6} | {'median':>6} {'max':>6}"
    )
    for (lang, task), items in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1] == "all", kv[0][1])):
        s_lines = [len(s.splitlines()) for s, _ in items]
        s_chars = [len(s) for s, _ in items]
        f_lines = [len(a.splitlines()) for _, a in items]
        f_chars = [len(a) for _, a in items]
        print(
            f"{lang:<4} {task:<14} {len(items):>4} | {_stats(s_lines)} | {_stats(s_chars)} "
            f"| {_stats(f_lines)} | {_stats(f_chars)}"
        )


if __name__ == "__main__":
    main()
