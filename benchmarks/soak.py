"""Soak: a long mixed load on loopback, printing the service's memory over time and every server error.

Starts `vramwise serve` as a subprocess on a free loopback port (offline agent in its worker processes,
SQLite in a temp dir) and runs `--clients` concurrent clients for `--duration` seconds. Each client picks,
at random (seeded), one of:

- a new chat question (SSE, read to `done`), English or Chinese;
- a follow-up in one of the conversations it started;
- `POST /v1/estimate` on a scenario;
- an OpenAI-compatible completion (streaming or not, some with a `user` key);
- bad input: malformed JSON, NaN, a lone surrogate, an over-limit body, a form post, a boolean batch size,
  an unknown model, an impossible architecture, an empty `user`, an unknown conversation;
- a disconnect: a chat stream dropped right after its first event;
- a read of a stored conversation.

A server error is any 5xx, an SSE `error` event or completion text that says "internal error", or a
connection the server broke. Memory is the RSS of the serving process plus its worker processes
(/proc), sampled every `--sample` seconds; after `--warmup` seconds the figure that matters is the
largest RSS seen against the RSS at the end of the warm-up (flat: within 10 %). Figures only, no asserts.

Run: `python benchmarks/soak.py [--duration 600] [--clients 8] [--warmup 120] [--sample 15] [--seed 1]`
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import httpx

FLAT_WITHIN = 0.10
QUESTIONS = [
    "Can I run Llama-2-7B inference on one RTX 4090?",
    "Can I fine-tune Llama-2-7B with LoRA on one RTX 4090?",
    "Qwen2.5-7B inference with 8k context, batch 8, on an A100 80GB",
    "用一张 4090 跑 Llama-2-7B 推理需要多少显存？",
    "Full fine-tune of Llama-2-13B with AdamW on 8 A100 80GB with ZeRO-3",
    "QLoRA fine-tuning Llama-2-70B on one A100 80GB, batch 1, 2048 tokens",
    "What is gradient checkpointing?",
]
FOLLOW_UPS = ["What about an A100 80GB?", "And with batch size 8?", "换成 H100 呢？", "With 4-bit weights?"]
SCENARIOS = [
    {"model": "llama-2-7b", "task": "inference", "gpu": "4090"},
    {"model": "llama-2-13b", "task": "lora", "gpu": "a100-80gb", "batch_size": 4, "seq_len": 2048},
    {"model": "Qwen2.5-7B", "task": "full_finetune", "gpu": "h100-80gb", "num_gpus": 8, "zero_stage": 3},
    {"model": "llama-2-70b", "task": "qlora", "gpu": "a100-80gb", "lora_rank": 16},
]
ARCH = {"hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32, "intermediate_size": 11008}
JSON_HEADERS = {"content-type": "application/json"}
BAD_INPUTS: list[tuple[str, str, bytes, dict[str, str]]] = [
    ("malformed", "/v1/chat", b'{"message": "x",', JSON_HEADERS),
    ("nan", "/v1/estimate", b'{"model": "llama-2-7b", "learning_rate": NaN}', JSON_HEADERS),
    ("surrogate", "/v1/chat", b'{"message": "Llama-2-7B on a 4090 \\ud800"}', JSON_HEADERS),
    ("too-large", "/v1/estimate", b'{"model": "' + b"x" * (2 << 20) + b'"}', JSON_HEADERS),
    ("form", "/v1/chat", b"message=hello", {"content-type": "application/x-www-form-urlencoded"}),
    ("bool", "/v1/estimate", b'{"model": "llama-2-7b", "gpu": "4090", "batch_size": true}', JSON_HEADERS),
    ("unknown-model", "/v1/estimate", json.dumps({"model": "m" * 190, "gpu": "4090"}).encode(), JSON_HEADERS),
    (
        "impossible-arch",
        "/v1/estimate",
        json.dumps(
            {"architecture": {**ARCH, "vocab_size": 32000, "moe_layer_freq": 0, "num_experts": 8}}
        ).encode(),
        JSON_HEADERS,
    ),
    (
        "empty-user",
        "/v1/chat/completions",
        json.dumps(
            {"model": "vramwise", "user": "", "messages": [{"role": "user", "content": "hi"}]}
        ).encode(),
        JSON_HEADERS,
    ),
    (
        "unknown-conversation",
        "/v1/chat",
        b'{"message": "and on an A100?", "conversation_id": "nope"}',
        JSON_HEADERS,
    ),
]
ACTIONS = [
    ("chat", 25),
    ("follow_up", 15),
    ("estimate", 15),
    ("completion", 10),
    ("bad_input", 15),
    ("disconnect", 10),
    ("read", 10),
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tree_rss_bytes(pid: int) -> int:
    """RSS of `pid` and its descendants (the offline agent's worker processes), from /proc."""
    total, todo, seen = 0, [pid], set()
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
            children = Path(f"/proc/{p}/task/{p}/children").read_text().split()
        except (FileNotFoundError, ProcessLookupError):
            continue
        todo.extend(int(c) for c in children)
    return total


class Tally:
    def __init__(self) -> None:
        self.actions: Counter[str] = Counter()
        self.statuses: Counter[int] = Counter()
        self.server_errors: list[str] = []

    def error(self, what: str) -> None:
        if len(self.server_errors) < 50:
            self.server_errors.append(what)
        else:
            self.server_errors.append("...")
            self.server_errors = self.server_errors[:51]


async def read_sse(resp: httpx.Response, tally: Tally, what: str) -> str | None:
    """Read an SSE chat stream to its end; the conversation id from `meta`."""
    cid, event = None, "message"
    async for line in resp.aiter_lines():
        if line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("data:"):
            data = line[5:].strip()
            if event == "meta":
                cid = json.loads(data)["conversation_id"]
            elif event == "error" and "internal error" in data:
                tally.error(f"{what}: {data[:200]}")
    return cid


async def client_loop(base: str, deadline: float, rng: random.Random, tally: Tally) -> None:
    conversations: list[str] = []
    names, weights = zip(*ACTIONS, strict=True)
    async with httpx.AsyncClient(base_url=base, timeout=60) as http:
        while time.monotonic() < deadline:
            action = rng.choices(names, weights)[0]
            tally.actions[action] += 1
            try:
                await run_action(http, action, rng, conversations, tally)
            except (httpx.RemoteProtocolError, httpx.ReadError, httpx.ConnectError) as exc:
                tally.error(f"{action}: connection broken: {exc!r}")
            except httpx.TimeoutException as exc:
                tally.error(f"{action}: timeout: {exc!r}")


async def run_action(
    http: httpx.AsyncClient, action: str, rng: random.Random, conversations: list[str], tally: Tally
) -> None:
    if action == "follow_up" and not conversations:
        action = "chat"
    if action in ("chat", "follow_up"):
        body: dict = {"message": rng.choice(QUESTIONS if action == "chat" else FOLLOW_UPS)}
        if action == "follow_up":
            body["conversation_id"] = rng.choice(conversations)
        async with http.stream("POST", "/v1/chat", json=body) as resp:
            tally.statuses[resp.status_code] += 1
            if resp.status_code >= 500:
                tally.error(f"{action}: HTTP {resp.status_code}")
            if resp.status_code == 200:
                cid = await read_sse(resp, tally, action)
                if cid and action == "chat":
                    conversations.append(cid)
                    del conversations[:-20]
            else:
                await resp.aread()
    elif action == "estimate":
        r = await http.post("/v1/estimate", json=rng.choice(SCENARIOS))
        tally.statuses[r.status_code] += 1
        if r.status_code != 200:
            tally.error(f"estimate: HTTP {r.status_code} {r.text[:200]}")
    elif action == "completion":
        stream = rng.random() < 0.5
        body = {
            "model": "vramwise",
            "stream": stream,
            "messages": [{"role": "user", "content": rng.choice(QUESTIONS)}],
        }
        if rng.random() < 0.3:
            body["user"] = f"soak-user-{rng.randrange(50)}"
        r = await http.post("/v1/chat/completions", json=body)
        tally.statuses[r.status_code] += 1
        if r.status_code >= 500 or "internal error" in r.text:
            tally.error(f"completion: HTTP {r.status_code} {r.text[:200]}")
    elif action == "bad_input":
        name, path, raw, headers = rng.choice(BAD_INPUTS)
        r = await http.post(path, content=raw, headers=headers)
        tally.statuses[r.status_code] += 1
        if not 400 <= r.status_code < 500:
            tally.error(f"bad input {name}: HTTP {r.status_code} {r.text[:200]}")
    elif action == "disconnect":
        async with http.stream("POST", "/v1/chat", json={"message": rng.choice(QUESTIONS)}) as resp:
            tally.statuses[resp.status_code] += 1
            async for line in resp.aiter_lines():
                if line.startswith("data:"):
                    break  # drop the connection mid-stream
    elif action == "read":
        cid = rng.choice(conversations) if conversations else "none"
        r = await http.get(f"/v1/conversations/{cid}")
        tally.statuses[r.status_code] += 1
        if r.status_code >= 500:
            tally.error(f"read: HTTP {r.status_code}")


async def sampler(pid: int, start: float, deadline: float, every: float, tally: Tally, samples: list) -> None:
    while True:
        now = time.monotonic()
        rss = tree_rss_bytes(pid)
        samples.append((now - start, rss))
        done = sum(tally.actions.values())
        print(
            f"{now - start:7.0f} s  rss {rss / 2**20:8.1f} MiB  requests {done:7d}  server errors {len(tally.server_errors)}",
            flush=True,
        )
        if now >= deadline:
            return
        await asyncio.sleep(min(every, max(0.0, deadline - now)))


async def soak(base: str, pid: int, args: argparse.Namespace) -> tuple[Tally, list[tuple[float, int]]]:
    tally = Tally()
    samples: list[tuple[float, int]] = []
    start = time.monotonic()
    deadline = start + args.duration
    rng = random.Random(args.seed)
    clients = [client_loop(base, deadline, random.Random(rng.random()), tally) for _ in range(args.clients)]
    await asyncio.gather(sampler(pid, start, deadline, args.sample, tally, samples), *clients)
    samples.append((time.monotonic() - start, tree_rss_bytes(pid)))
    return tally, samples


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=600.0, help="seconds of load (default 600)")
    parser.add_argument("--clients", type=int, default=8, help="concurrent clients (default 8)")
    parser.add_argument("--warmup", type=float, default=120.0, help="seconds before memory must be flat")
    parser.add_argument("--sample", type=float, default=15.0, help="seconds between memory samples")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--agent-processes", default="", help="VRAMWISE_AGENT_PROCESSES (default: per core)")
    args = parser.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="vramwise-soak-"))
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VRAMWISE_", "OPENAI_"))}
    env.update(
        {"VRAMWISE_DATABASE_URL": f"sqlite+aiosqlite:///{tmp / 'soak.sqlite3'}", "VRAMWISE_AGENT": "offline"}
    )
    if args.agent_processes:
        env["VRAMWISE_AGENT_PROCESSES"] = args.agent_processes
    log = (tmp / "server.log").open("wb")
    cmd = [
        sys.executable,
        "-c",
        "from service.cli import main; raise SystemExit(main())",
        "serve",
        "--port",
        str(port),
    ]
    server = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{base}/readyz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if server.poll() is not None or time.monotonic() > deadline:
                print("server did not start; its log:", (tmp / "server.log").read_text()[-3000:])
                return 1
            time.sleep(0.2)
        print(
            f"soak: {args.duration:.0f} s, {args.clients} clients, seed {args.seed}, server pid {server.pid}"
        )
        tally, samples = asyncio.run(soak(base, server.pid, args))
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
        log.close()

    report(tally, samples, args, tmp / "server.log")
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


def report(tally: Tally, samples: list[tuple[float, int]], args: argparse.Namespace, log: Path) -> None:
    total = sum(tally.actions.values())
    print()
    print(f"requests: {total} in {args.duration:.0f} s ({total / args.duration:.1f}/s)")
    print("actions:  " + ", ".join(f"{k} {v}" for k, v in sorted(tally.actions.items())))
    print("statuses: " + ", ".join(f"{k}: {v}" for k, v in sorted(tally.statuses.items())))
    tracebacks = log.read_text(errors="replace").count("Traceback") if log.exists() else -1
    print(f"server errors: {len(tally.server_errors)}; tracebacks in the server log: {tracebacks}")
    for line in tally.server_errors[:10]:
        print(f"  {line}")
    after = [(t, rss) for t, rss in samples if t >= args.warmup]
    before = [(t, rss) for t, rss in samples if t < args.warmup]
    if not after or not before:
        print("memory: too short a run to judge (increase --duration or lower --warmup)")
        return
    base = before[-1][1]
    peak = max(rss for _, rss in after)
    last = after[-1][1]
    growth = (peak - base) / base
    print(
        f"memory (serving process + workers): {base / 2**20:.1f} MiB at the end of the warm-up "
        f"({before[-1][0]:.0f} s), peak after it {peak / 2**20:.1f} MiB ({growth:+.1%}), "
        f"last {last / 2**20:.1f} MiB ({(last - base) / base:+.1%}); "
        f"{'flat' if growth <= FLAT_WITHIN else 'NOT flat'} within {FLAT_WITHIN:.0%}"
    )


if __name__ == "__main__":
    sys.exit(main())
