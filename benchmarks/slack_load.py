"""Load: concurrent `/vram` slash commands against `vramwise serve` with Slack on, all on loopback.

Starts the fake Slack Web API (tests/fakes/slack_api.py: a real HTTP server on 127.0.0.1, port 0,
recording every call, with a response_url sink) in this process, then `vramwise serve` as a
subprocess on a free port with VRAMWISE_SLACK_SIGNING_SECRET / VRAMWISE_SLACK_BOT_TOKEN set and
VRAMWISE_SLACK_API_URL pointing at the fake (offline agent, SQLite in a temp dir). One untimed
warm-up command, then N correctly signed slash commands at once (a mix of English and Chinese
questions, each from its own user and channel). Prints the time to Slack's ack (the HTTP response
of `POST /slack/events`, which Slack wants within 3 s), the time until each answer reached its
response_url, how many answers were posted, and the per-GPU figure each question got next to the
estimator's own figure for the same scenario. Printed figures, no asserts.

Run: `python benchmarks/slack_load.py [--concurrency 100] [--json]`
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import load_chat  # noqa: E402
from tests.fakes.slack_api import FakeSlack  # noqa: E402
from tests.slack_support import BOT_TOKEN, SIGNING_SECRET, command_form, shows, signed_headers  # noqa: E402
from tools.estimator import estimate  # noqa: E402
from tools.scenario import Scenario  # noqa: E402
from tools.units import fmt_gib  # noqa: E402

ACK_TARGET_S = 3.0
QUESTIONS: list[tuple[str, dict[str, object]]] = [
    (
        "Can I fine-tune llama-2-7b with QLoRA on one 4090?",
        {"model": "llama-2-7b", "task": "qlora", "gpu": "4090"},
    ),
    ("serve llama-2-7b on an L4", {"model": "llama-2-7b", "task": "inference", "gpu": "L4"}),
    (
        "full fine-tune llama-2-7b on one 4090",
        {"model": "llama-2-7b", "task": "full_finetune", "gpu": "4090"},
    ),
    (
        "在一张 4090 上全参微调 llama-2-7b 需要多少显存？",
        {"model": "llama-2-7b", "task": "full_finetune", "gpu": "4090"},
    ),
]


@dataclass
class Report:
    commands: int
    acked: int
    acked_under_3s: int
    ack_p50_ms: float
    ack_p95_ms: float
    ack_max_ms: float
    answers_posted: int
    answer_p50_s: float
    answer_p95_s: float
    answer_max_s: float
    figures_right: int
    figures: dict[str, dict[str, object]]
    web_api_calls: dict[str, int]
    wall_s: float


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def start_server(port: int, workdir: Path, api_url: str) -> subprocess.Popen[bytes]:
    """The load benchmark's server, with Slack switched on against the fake Web API."""
    slack = {
        "VRAMWISE_SLACK_SIGNING_SECRET": SIGNING_SECRET,
        "VRAMWISE_SLACK_BOT_TOKEN": BOT_TOKEN,
        "VRAMWISE_SLACK_API_URL": api_url,
    }
    return load_chat.start_server(port, workdir, database="slack.sqlite3", extra_env=slack)


def wait_ready(base_url: str, proc: subprocess.Popen[bytes], timeout_s: float = 60.0) -> None:
    load_chat.wait_ready(base_url, proc, timeout_s)


async def one_command(client: httpx.AsyncClient, base: str, fake: FakeSlack, i: int) -> tuple[int, float]:
    question = QUESTIONS[i % len(QUESTIONS)][0]
    raw = command_form(
        question, fake.response_url(f"load-{i}"), channel=f"CLOAD{i:03d}", user=f"ULOAD{i:03d}"
    )
    started = time.monotonic()
    r = await client.post(
        f"{base}/slack/events",
        content=raw,
        headers={"Content-Type": "application/x-www-form-urlencoded", **signed_headers(raw)},
    )
    return r.status_code, time.monotonic() - started


async def run(
    base: str, fake: FakeSlack, n: int, timeout_s: float
) -> tuple[list[tuple[int, float]], float, float]:
    limits = httpx.Limits(max_connections=n + 10, max_keepalive_connections=n + 10)
    async with httpx.AsyncClient(timeout=30, limits=limits) as client:
        await one_command(client, base, fake, -1)  # warm-up (auth.test, first imports), untimed
        await asyncio.to_thread(
            fake.wait_for, lambda f: [c for c in f.of("response_url") if c.path.endswith("load--1")], 60
        )
        fake.reset()
        started = time.monotonic()
        acks = await asyncio.gather(*(one_command(client, base, fake, i) for i in range(n)))

    def all_posted(f: FakeSlack) -> bool:
        return len(f.of("response_url")) >= n

    with contextlib.suppress(AssertionError):  # the report says how many were posted
        await asyncio.to_thread(fake.wait_for, all_posted, timeout_s)
    return acks, started, time.monotonic() - started


def summarise(acks: list[tuple[int, float]], fake: FakeSlack, started: float, wall_s: float) -> Report:
    ack_s = [s for status, s in acks if status == 200]
    posted = {c.path.rsplit("-", 1)[-1]: c for c in fake.of("response_url")}
    answer_s = [c.at - started for c in posted.values()]
    figures: dict[str, dict[str, object]] = {}
    right = 0
    for key, call in posted.items():
        question, scenario = QUESTIONS[int(key) % len(QUESTIONS)]
        expected = fmt_gib(estimate(Scenario(**scenario, num_gpus=1)).per_gpu.total_bytes)
        head = str((call.body.get("blocks") or [{}])[0].get("text", ""))
        ok = shows(head, expected)
        right += ok
        seen = figures.setdefault(question, {"estimator": expected, "answers": 0, "with_that_figure": 0})
        seen["answers"] = int(seen["answers"]) + 1  # type: ignore[call-overload]
        seen["with_that_figure"] = int(seen["with_that_figure"]) + ok  # type: ignore[call-overload]
    methods: dict[str, int] = {}
    for m in fake.methods():
        methods[m] = methods.get(m, 0) + 1
    return Report(
        commands=len(acks),
        acked=len(ack_s),
        acked_under_3s=sum(s < ACK_TARGET_S for s in ack_s),
        ack_p50_ms=round(statistics.median(ack_s) * 1000, 1) if ack_s else float("nan"),
        ack_p95_ms=round(percentile(ack_s, 95) * 1000, 1),
        ack_max_ms=round(max(ack_s) * 1000, 1) if ack_s else float("nan"),
        answers_posted=len(posted),
        answer_p50_s=round(statistics.median(answer_s), 2) if answer_s else float("nan"),
        answer_p95_s=round(percentile(answer_s, 95), 2),
        answer_max_s=round(max(answer_s), 2) if answer_s else float("nan"),
        figures_right=right,
        figures=figures,
        web_api_calls=methods,
        wall_s=round(wall_s, 2),
    )


def print_report(rep: Report) -> None:
    ok = rep.acked_under_3s == rep.commands and rep.answers_posted == rep.commands
    print(f"slash commands: {rep.commands} at once ({'OK' if ok else 'MISSED'})")
    print(
        f"  ack (HTTP response to Slack): p50 {rep.ack_p50_ms} ms, p95 {rep.ack_p95_ms} ms, max {rep.ack_max_ms} ms;"
        f" {rep.acked_under_3s}/{rep.commands} under {ACK_TARGET_S:.0f} s"
    )
    print(
        f"  answers posted to response_url: {rep.answers_posted}/{rep.commands};"
        f" time from the burst: p50 {rep.answer_p50_s} s, p95 {rep.answer_p95_s} s, max {rep.answer_max_s} s"
    )
    print(f"  answers whose per-GPU total equals the estimator's: {rep.figures_right}/{rep.answers_posted}")
    for question, seen in rep.figures.items():
        print(
            f"    {question!r}: estimator {seen['estimator']}, {seen['with_that_figure']}/{seen['answers']} answers show it"
        )
    print(f"  Web API calls: {rep.web_api_calls}; wall {rep.wall_s} s")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--concurrency", type=int, default=100)
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for every answer")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    fake = FakeSlack()
    with fake.running(), tempfile.TemporaryDirectory() as tmp:
        port = free_port()
        proc = start_server(port, Path(tmp), fake.api_url)
        base = f"http://127.0.0.1:{port}"
        try:
            wait_ready(base, proc)
            acks, started, wall = asyncio.run(run(base, fake, args.concurrency, args.timeout))
            rep = summarise(acks, fake, started, wall)
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
    if args.json:
        print(json.dumps(asdict(rep), ensure_ascii=False, indent=2))
    else:
        print_report(rep)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
