"""Load: concurrent chat streams on the offline path against a real uvicorn on 127.0.0.1.

Starts `vramwise serve` as a subprocess on a free loopback port (offline agent, SQLite in a
temp dir), opens N concurrent `POST /v1/chat` streams (a mix of English and Chinese questions,
each a new conversation, plus follow-ups in the same conversation when --follow-ups is set),
and prints p50/p99 time to the first SSE event and to `done`, errors, and the service's peak
RSS (VmHWM from /proc). Target on a 2-core machine: 200 concurrent streams,
0 errors, p99 time to first event < 250 ms. Printed figures, no asserts.

One untimed warm-up round at full concurrency comes first (pool workers, SQLAlchemy statement
caches, pydantic schemas); then `--rounds` timed rounds: the first asks new questions, later ones
ask a follow-up in each conversation (the stored scenario is loaded before `meta`).
The service's peak RSS is the serving process plus its offline-agent worker processes.

CPU: user + system time from /proc of the serving process and of its offline-agent worker processes
(the whole service) over the timed rounds, per answered stream (a stream that ended with `done`), also
as a ratio to a fixed pure-Python workload timed in the same run (`benchmarks/workload.py`), so the
figure compares across machines; the machine's `uptime` load is printed before and after (the box is
shared: latencies move with whatever else runs). Target: whole-service CPU per answered stream at 200
concurrent streams <= 0.05 x the workload.

Run: `python benchmarks/load_chat.py [--concurrency 200] [--rounds 2] [--json]`
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.workload import time_workload

TARGET_STREAMS = 200
TARGET_P99_FIRST_EVENT_MS = 250.0
TARGET_SERVICE_CPU_X_WORKLOAD = 0.05  # whole-service CPU per answered stream, in units of the workload
QUESTIONS = [
    "Can I run Llama-2-7B inference on one RTX 4090?",
    "Can I fine-tune Llama-2-7B with LoRA on one RTX 4090?",
    "Qwen2.5-7B inference with 8k context, batch 8, on an A100 80GB",
    "用一张 4090 跑 Llama-2-7B 推理需要多少显存？",
    "Full fine-tune of Llama-2-13B with AdamW on 8 A100 80GB with ZeRO-3",
    "QLoRA fine-tuning Llama-2-70B on one A100 80GB, batch 1, 2048 tokens",
]


@dataclass
class StreamResult:
    first_event_ms: float | None = None
    done_ms: float | None = None
    events: int = 0
    error: str | None = None


@dataclass
class Latencies:
    """Time to the first event and to `done` for one kind of stream."""

    kind: str
    streams: int
    errors: int
    first_event_p50_ms: float
    first_event_p99_ms: float
    done_p50_ms: float
    done_p99_ms: float


def latencies(kind: str, results: list[StreamResult]) -> Latencies:
    first = [r.first_event_ms for r in results if r.first_event_ms is not None]
    done = [r.done_ms for r in results if r.done_ms is not None]
    return Latencies(
        kind=kind,
        streams=len(results),
        errors=sum(1 for r in results if r.error),
        first_event_p50_ms=round(statistics.median(first), 1) if first else float("nan"),
        first_event_p99_ms=round(percentile(first, 99), 1),
        done_p50_ms=round(statistics.median(done), 1) if done else float("nan"),
        done_p99_ms=round(percentile(done, 99), 1),
    )


@dataclass
class Report:
    concurrency: int
    rounds: int
    streams: int
    errors: int
    first_event_p50_ms: float
    first_event_p99_ms: float
    done_p50_ms: float
    done_p99_ms: float
    wall_s: float
    streams_per_s: float
    peak_rss_mib: float
    rss_after_mib: float
    workers: int = 0
    workers_peak_rss_mib: float = 0.0
    first_event_p99_per_round_ms: list[float] = field(default_factory=list)
    by_kind: list[Latencies] = field(default_factory=list)  # new questions, follow-ups
    server_cpu_ms_per_stream: float = 0.0
    answered: int = 0  # streams that ended with `done`
    serving_cpu_ms_per_answer: float = 0.0  # the serving process
    workers_cpu_ms_per_answer: float = 0.0  # the offline-agent worker processes, summed
    service_cpu_ms_per_answer: float = 0.0  # both: the whole service
    workload_cpu_ms: float = 0.0  # the reference workload's CPU time in this run (benchmarks/workload.py)
    service_cpu_x_workload: float = 0.0  # service_cpu_ms_per_answer / workload_cpu_ms
    uptime_before: str = ""
    uptime_after: str = ""
    load_average: float = 0.0  # 1-minute load of the machine after the run (other processes skew latencies)
    error_samples: list[str] = field(default_factory=list)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100)."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(q / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]


def proc_cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process so far (/proc/<pid>/stat fields 14 and 15)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def uptime() -> str:
    """The machine's `uptime` line (load averages: the box is shared)."""
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, timeout=5).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "load average: " + ", ".join(f"{x:.2f}" for x in os.getloadavg())


def child_pids(pid: int) -> list[int]:
    """Direct children of a process (the offline-agent workers of the service)."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def proc_memory_mib(pid: int) -> tuple[float, float]:
    """(peak RSS = VmHWM, current RSS = VmRSS) of a process, MiB, from /proc/<pid>/status."""
    fields: dict[str, float] = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, rest = line.partition(":")
            if key in ("VmHWM", "VmRSS"):
                fields[key] = int(rest.split()[0]) / 1024  # kB -> MiB
    return fields.get("VmHWM", float("nan")), fields.get("VmRSS", float("nan"))


async def _read_chunked(reader: asyncio.StreamReader) -> AsyncIterator[bytes]:
    """The body of a `Transfer-Encoding: chunked` response, chunk by chunk (RFC 9112 sec. 7.1)."""
    while True:
        size_line = await reader.readline()
        if not size_line:
            return
        size = int(size_line.split(b";")[0].strip() or b"0", 16)
        if size == 0:
            return
        data = await reader.readexactly(size + 2)  # chunk + CRLF
        yield data[:-2]


async def one_stream(
    host: str, port: int, body: dict[str, object], timeout_s: float
) -> tuple[StreamResult, str | None]:
    """One POST /v1/chat over a raw asyncio connection (a load generator as light as wrk, so the
    client's own CPU does not inflate the server's latencies on a 2-core box)."""
    result = StreamResult()
    conversation_id: str | None = None
    payload = json.dumps(body).encode()
    request = (
        f"POST /v1/chat HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
        f"Accept: text/event-stream\r\nContent-Length: {len(payload)}\r\nConnection: close\r\n\r\n"
    ).encode() + payload
    start = time.perf_counter()
    writer = None
    try:
        async with asyncio.timeout(timeout_s):
            reader, writer = await asyncio.open_connection(host, port)
            writer.write(request)
            status = await reader.readline()
            headers: dict[str, str] = {}
            while (line := await reader.readline()) not in (b"\r\n", b""):
                key, _, value = line.decode("latin-1").partition(":")
                headers[key.strip().lower()] = value.strip()
            if b" 200 " not in status:
                result.error = f"HTTP {status.decode().strip()}"
                return result, None
            chunks = (
                _read_chunked(reader)
                if headers.get("transfer-encoding") == "chunked"
                else _read_plain(reader)
            )
            buffer = b""
            event = None
            async for chunk in chunks:
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for raw in lines:
                    line = raw.rstrip(b"\r").decode()
                    if line.startswith("event:"):
                        event = line[6:].strip()
                    elif line.startswith("data:"):
                        result.events += 1
                        if result.first_event_ms is None:
                            result.first_event_ms = (time.perf_counter() - start) * 1000
                        if event == "meta":
                            conversation_id = json.loads(line[5:])["conversation_id"]
                        elif event == "done":
                            result.done_ms = (time.perf_counter() - start) * 1000
                        elif event == "error":
                            result.error = f"error event: {line[5:].strip()[:200]}"
                if result.done_ms is not None or result.error is not None:
                    break
        if result.done_ms is None and result.error is None:
            result.error = "stream ended without done"
    except TimeoutError:
        result.error = f"timed out after {timeout_s} s"
    except Exception as exc:
        result.error = f"{type(exc).__name__}: {exc}"
    finally:
        if writer is not None:
            writer.close()
    return result, conversation_id


async def _read_plain(reader: asyncio.StreamReader) -> AsyncIterator[bytes]:
    while chunk := await reader.read(65536):
        yield chunk


async def run_load(base_url: str, concurrency: int, rounds: int, timeout_s: float) -> list[StreamResult]:
    host, port = base_url.removeprefix("http://").split(":")
    results: list[StreamResult] = []
    conversations: list[str | None] = [None] * concurrency
    for r in range(rounds):
        bodies: list[dict[str, object]] = []
        for i in range(concurrency):
            if r == 0 or conversations[i] is None:
                bodies.append({"message": QUESTIONS[i % len(QUESTIONS)]})
            else:  # a follow-up in the same stored conversation
                bodies.append(
                    {"message": "what about with a batch of 4?", "conversation_id": conversations[i]}
                )
        outcomes = await asyncio.gather(*(one_stream(host, int(port), b, timeout_s) for b in bodies))
        for i, (res, cid) in enumerate(outcomes):
            results.append(res)
            if cid is not None and r == 0:
                conversations[i] = cid
    return results


def start_server(
    port: int, workdir: Path, *, database: str = "load.sqlite3", extra_env: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """`vramwise serve` on loopback with the offline agent and its own SQLite file, logging to workdir."""
    exe = shutil.which("vramwise") or str(Path(sys.executable).with_name("vramwise"))
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")}
    env.update(
        VRAMWISE_AGENT="offline",
        VRAMWISE_DATABASE_URL=f"sqlite+aiosqlite:///{workdir / database}",
        VRAMWISE_OPENAI_API_KEY="",
        VRAMWISE_OPENAI_BASE_URL="",
        **(extra_env or {}),
    )
    log = open(workdir / "server.log", "wb")  # noqa: SIM115 -- lives as long as the server
    return subprocess.Popen(
        [exe, "serve", "--host", "127.0.0.1", "--port", str(port)],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )


def wait_ready(base_url: str, proc: subprocess.Popen[bytes], timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        try:
            if httpx.get(f"{base_url}/readyz", timeout=1.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise RuntimeError("server did not become ready")


def summarise(
    results: list[StreamResult], concurrency: int, rounds: int, wall_s: float, mem: tuple[float, float]
) -> Report:
    ok_first = [r.first_event_ms for r in results if r.first_event_ms is not None]
    ok_done = [r.done_ms for r in results if r.done_ms is not None]
    errors = [r.error for r in results if r.error]
    return Report(
        concurrency=concurrency,
        rounds=rounds,
        streams=len(results),
        errors=len(errors),
        first_event_p50_ms=round(statistics.median(ok_first), 1) if ok_first else float("nan"),
        first_event_p99_ms=round(percentile(ok_first, 99), 1),
        done_p50_ms=round(statistics.median(ok_done), 1) if ok_done else float("nan"),
        done_p99_ms=round(percentile(ok_done, 99), 1),
        wall_s=round(wall_s, 2),
        streams_per_s=round(len(results) / wall_s, 1) if wall_s else 0.0,
        peak_rss_mib=round(mem[0], 1),
        rss_after_mib=round(mem[1], 1),
        error_samples=errors[:5],
        by_kind=[
            latencies("new questions", results[:concurrency]),
            *([latencies("follow-ups", results[concurrency:])] if len(results) > concurrency else []),
        ],
    )


def print_report(rep: Report) -> None:
    def verdict(ok: bool) -> str:
        return "ok" if ok else "MISSED"

    print(
        f"chat load: {rep.streams} streams ({rep.concurrency} concurrent x {rep.rounds} round(s)) in {rep.wall_s} s; "
        f"target: 0 errors, p99 first event < {TARGET_P99_FIRST_EVENT_MS:g} ms"
    )
    print(
        f"  {'streams':<16}{'n':>6}{'errors':>8}{'first p50':>11}{'first p99':>11}{'done p50':>10}{'done p99':>10}  (ms)"
    )
    rows = [*rep.by_kind]
    rows.append(
        Latencies(
            "all",
            rep.streams,
            rep.errors,
            rep.first_event_p50_ms,
            rep.first_event_p99_ms,
            rep.done_p50_ms,
            rep.done_p99_ms,
        )
    )
    for r in rows:
        print(
            f"  {r.kind:<16}{r.streams:>6}{r.errors:>8}{r.first_event_p50_ms:>11}{r.first_event_p99_ms:>11}"
            f"{r.done_p50_ms:>10}{r.done_p99_ms:>10}  "
            f"{verdict(r.errors == 0 and r.first_event_p99_ms < TARGET_P99_FIRST_EVENT_MS)}"
        )
    print(f"  first event p99 per round (ms): {', '.join(map(str, rep.first_event_p99_per_round_ms))}")
    print(
        f"  streams per second: {rep.streams_per_s}; serving-process CPU per stream: {rep.server_cpu_ms_per_stream} ms"
    )
    print(
        f"  CPU per answered stream ({rep.answered} answered): serving process {rep.serving_cpu_ms_per_answer} ms"
        f" + workers {rep.workers_cpu_ms_per_answer} ms = whole service {rep.service_cpu_ms_per_answer} ms"
    )
    ok = rep.service_cpu_x_workload <= TARGET_SERVICE_CPU_X_WORKLOAD
    print(
        f"  = {rep.service_cpu_x_workload} x the reference workload (sum(i*i for i in range(10**6)): "
        f"{rep.workload_cpu_ms} ms CPU in this run); target <= {TARGET_SERVICE_CPU_X_WORKLOAD:g} x   "
        f"{'ok' if ok else 'MISSED'}"
    )
    print(
        f"  peak RSS: serving process {rep.peak_rss_mib} MiB (now {rep.rss_after_mib} MiB), "
        f"{rep.workers} offline-agent worker(s) {rep.workers_peak_rss_mib} MiB summed"
    )
    print(f"  machine load average (1 min): {rep.load_average} on {os.cpu_count()} cores")
    print(f"  uptime before: {rep.uptime_before}")
    print(f"  uptime after:  {rep.uptime_after}")
    for e in rep.error_samples:
        print(f"  error: {e}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--concurrency", type=int, default=TARGET_STREAMS, help="concurrent streams (default 200)")
    p.add_argument(
        "--rounds",
        type=int,
        default=2,
        help="timed rounds; rounds after the first ask follow-ups (default 2)",
    )
    p.add_argument("--timeout", type=float, default=120.0, help="per-stream timeout, seconds")
    p.add_argument("--no-warmup", action="store_true", help="skip the untimed warm-up round")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    args = p.parse_args(argv)
    if not 1 <= args.concurrency <= 2000 or not 1 <= args.rounds <= 20:
        print("load_chat: --concurrency must be 1-2000 and --rounds 1-20", file=sys.stderr)
        return 2

    up_before = uptime()
    ref_before = time_workload()
    port = free_port()
    base_url = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory(prefix="vramwise-load-") as tmp:
        proc = start_server(port, Path(tmp))
        try:
            wait_ready(base_url, proc)
            if not args.no_warmup:
                asyncio.run(run_load(base_url, args.concurrency, 1, args.timeout))
            workers0 = child_pids(proc.pid)
            cpu0 = proc_cpu_s(proc.pid)
            wcpu0 = {w: proc_cpu_s(w) for w in workers0}
            t0 = time.perf_counter()
            results = asyncio.run(run_load(base_url, args.concurrency, args.rounds, args.timeout))
            wall = time.perf_counter() - t0
            cpu = proc_cpu_s(proc.pid) - cpu0
            workers = child_pids(proc.pid)
            # a worker that replaced a dead one counts from 0
            wcpu = sum(proc_cpu_s(w) - wcpu0.get(w, 0.0) for w in workers)
            mem = proc_memory_mib(proc.pid)
            workers_peak = sum(proc_memory_mib(w)[0] for w in workers)
            if any(r.error for r in results):  # the service's own account of what went wrong
                log_tail = (Path(tmp) / "server.log").read_text(errors="replace")[-3000:]
                print(f"--- service log (tail) ---\n{log_tail}\n---", file=sys.stderr)
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
    rep = summarise(results, args.concurrency, args.rounds, wall, mem)
    rep.server_cpu_ms_per_stream = round(cpu * 1000 / max(1, rep.streams), 2)
    ref_after = time_workload()
    workload_ms = statistics.median([ref_before.cpu_ms, ref_after.cpu_ms])
    answered = sum(1 for r in results if r.done_ms is not None and r.error is None)
    rep.answered = answered
    rep.serving_cpu_ms_per_answer = round(cpu * 1000 / max(1, answered), 2)
    rep.workers_cpu_ms_per_answer = round(wcpu * 1000 / max(1, answered), 2)
    rep.service_cpu_ms_per_answer = round((cpu + wcpu) * 1000 / max(1, answered), 2)
    rep.workload_cpu_ms = round(workload_ms, 1)
    rep.service_cpu_x_workload = round(rep.service_cpu_ms_per_answer / workload_ms, 4) if workload_ms else 0.0
    rep.uptime_before, rep.uptime_after = up_before, uptime()
    rep.workers = len(workers)
    rep.workers_peak_rss_mib = round(workers_peak, 1)
    rep.first_event_p99_per_round_ms = [
        round(
            percentile([r.first_event_ms for r in results[i : i + args.concurrency] if r.first_event_ms], 99),
            1,
        )
        for i in range(0, len(results), args.concurrency)
    ]
    rep.load_average = round(os.getloadavg()[0], 2)
    if args.json:
        print(json.dumps(asdict(rep)))
    else:
        print_report(rep)
    return 0


if __name__ == "__main__":
    sys.exit(main())
