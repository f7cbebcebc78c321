"""A bounded hostile probe of `vramwise serve` on loopback (issue 30's figures), printing four numbers:

- bypasses: requests that got data they should not have: protected routes without a valid key (path and
  header tricks), another key's conversation or coach session, rate-limit budgets gained by forging
  `X-Forwarded-For` (requests beyond `5/second` x the windows touched), a stream cap of 2 exceeded by
  forged addresses, a replayed signed Slack command answered again;
- 5xx: server errors over a battery of outsiders' bad input (Slack headers and bodies, repo ids, coach
  answers, malformed JSON), and tracebacks in the server log;
- memory under slow headers: the serving process's RSS before and after 20 connections each send up to
  16 MiB of an unfinished request head;
- time to detect a lost database: from deleting the SQLite file to the server's log line.

Every loop is bounded in count and time; traffic goes to 127.0.0.1 only. Figures only, no asserts.
Run: `python benchmarks/hostile_probe.py`
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import socket
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fakes.slack_api import FakeSlack  # noqa: E402
from tests.serve_support import serve, serve_env  # noqa: E402
from tests.slack_support import BOT_TOKEN, SIGNING_SECRET, command_form, signed_headers  # noqa: E402

ALICE, BOB = "probe-alice-key-0001", "probe-bob-key-0002"
MIB = 1 << 20
PROTECTED = ["/v1/gpus", "//v1/gpus", "/v1/gpus/", "/V1/gpus", "/v1//gpus", "/static/../v1/gpus", "/./v1/gpus",
             "/v1/%67pus", "/openapi.json", "/docs", "/v1/conversations/x", "/v1/coach/topics"]  # fmt: skip
KEY_TRICKS: list[dict[str, str]] = [
    {}, {"Authorization": "Bearer"}, {"Authorization": f"Basic {ALICE}"},
    {"Authorization": f"Bearer {ALICE[:-1]}"}, {"Authorization": f"bearer  {ALICE} x"},
    {"Authorization": "Bearer ,"}, {"X-Api-Key": ALICE},
]  # fmt: skip


def rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def key_bypasses(url: str) -> tuple[int, int]:
    tries = bypasses = 0
    with httpx.Client(base_url=url, timeout=10) as client:
        for path in PROTECTED:
            for headers in KEY_TRICKS:
                for method in ("GET", "HEAD"):
                    r = client.request(method, path, headers=headers)
                    tries += 1
                    bypasses += r.status_code < 300 and path not in ("/docs",)
        owner = {"Authorization": f"Bearer {ALICE}"}
        other = {"Authorization": f"Bearer {BOB}"}
        asked = client.post("/v1/chat", json={"message": "Llama-2-7B on one 4090?"}, headers=owner)
        cid = json.loads(asked.text.split("data: ", 1)[1].split("\n", 1)[0])["conversation_id"]
        session = client.post("/v1/coach/questions", json={}, headers=owner).json()
        crossed = [
            client.get(f"/v1/conversations/{cid}", headers=other),
            client.post("/v1/chat", json={"message": "and an A100?", "conversation_id": cid}, headers=other),
            client.get(f"/v1/coach/sessions/{session['session_id']}", headers=other),
            client.post("/v1/coach/questions", json={"session_id": session["session_id"]}, headers=other),
            client.post("/v1/coach/answers", json={**session, "answer": "1 GB"} | {"question_id": session["question_id"]},
                        headers=other),
        ]  # fmt: skip
        tries += len(crossed)
        bypasses += sum(r.status_code < 300 for r in crossed)
    return tries, bypasses


def forged_address_bypasses(url: str) -> tuple[int, int]:
    """Requests past a 5/second limit and a stream cap of 2 that rotating X-Forwarded-For gained."""
    with httpx.Client(base_url=url, timeout=10) as client:
        started = time.monotonic()
        codes = [client.get("/v1/gpus", headers={"X-Forwarded-For": f"203.0.113.{i % 250 + 1}"}).status_code
                 for i in range(250)]  # fmt: skip
        windows = int(time.monotonic() - started) + 2
    beyond_rate = max(0, codes.count(200) - 5 * windows)
    return 250, beyond_rate


def stream_cap_bypasses(url: str) -> tuple[int, int]:
    def ask(i: int) -> int:
        body = {"message": "Full fine-tune of Llama-2-70B with AdamW on 8 A100 80GB with ZeRO-3"}
        with httpx.stream("POST", f"{url}/v1/chat", json=body, headers={"X-Forwarded-For": f"198.51.100.{i}"},
                          timeout=30) as r:  # fmt: skip
            return r.status_code

    with concurrent.futures.ThreadPoolExecutor(6) as pool:
        codes = list(pool.map(ask, range(6)))
    return 6, max(0, codes.count(200) - 2)


def slack_replays(url: str, fake: FakeSlack) -> tuple[int, int]:
    body = command_form("Llama-2-7B inference on one 4090?", fake.response_url("probe"))
    headers = {"Content-Type": "application/x-www-form-urlencoded", **signed_headers(body)}
    codes = [
        httpx.post(f"{url}/slack/events", content=body, headers=headers, timeout=30).status_code
        for _ in range(4)
    ]
    return 3, max(0, codes.count(200) - 1)


BAD_INPUT: list[tuple[str, str, dict[str, str], bytes]] = [
    ("POST", "/slack/events", {"X-Slack-Request-Timestamp": "abc", "X-Slack-Signature": "v0=00"}, b"x"),
    ("POST", "/slack/events", {"X-Slack-Request-Timestamp": "1", "X-Slack-Signature": "v0=" + "a" * 64}, b"\xff"),
    *[("POST", "/v1/estimate", {"content-type": "application/json"}, json.dumps({"model": m}).encode())
      for m in ("org/a--b", "org/a..b", "org/name-", "org/name.git", "-x/y", "a/" + "b" * 200)],
    ("POST", "/v1/estimate", {"content-type": "application/json"}, b'{"model": ' + b"[" * 5000 + b"]" * 5000 + b"}"),
    ("POST", "/v1/chat", {"content-type": "application/json"}, b'{"message": 1e999}'),
    ("GET", "/v1/conversations/x?cursor=%00", {}, b""),
    ("GET", "/v1/conversations/" + "x" * 5000, {}, b""),
]  # fmt: skip
SIGNED_SHAPES = ["payload=notjson", "payload=%5B1%5D", "payload=null", "[1]", "null", "{",
                 '{"type": "event_callback", "event": "x"}', "command=%2Fvram&text=hi"]  # fmt: skip
COACH_ANSWERS = ["1e308 GB", "1e999 GB", "-5 GB", "3x10^99999 GB", "12 PB", "负5GB", "9" * 5000 + " GB"]


def _status(method: str, url: str, **kwargs: object) -> int:
    """The status, or 599 when the server broke the connection (a server error too)."""
    try:
        return httpx.request(method, url, timeout=30, **kwargs).status_code  # type: ignore[arg-type]
    except httpx.TransportError:
        return 599


def server_errors(url: str, log: Path) -> tuple[int, int, int]:
    total = errors = 0
    for method, path, headers, body in BAD_INPUT:
        total += 1
        errors += _status(method, url + path, headers=headers, content=body or None) >= 500
    for raw in SIGNED_SHAPES:
        kind = "application/json" if raw[:1] in "[n{" else "application/x-www-form-urlencoded"
        total += 1
        signed = {"Content-Type": kind, **signed_headers(raw)}
        errors += _status("POST", f"{url}/slack/events", content=raw, headers=signed) >= 500
    for answer in COACH_ANSWERS:
        q = httpx.post(f"{url}/v1/coach/questions", json={"topic": "weights_precision"}, timeout=30).json()
        total += 1
        body = {"session_id": q["session_id"], "question_id": q["question_id"], "answer": answer}
        errors += _status("POST", f"{url}/v1/coach/answers", json=body) >= 500
    time.sleep(1.0)
    return total, errors, log.read_text(errors="replace").count("Traceback")


def slow_header_memory(url: str, pid: int) -> tuple[float, float]:
    host, port = url.removeprefix("http://").split(":")
    before = rss(pid)
    sockets = []
    for _ in range(20):
        sock = socket.create_connection((host, int(port)), timeout=10)
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ")
        with contextlib.suppress(OSError):
            for _ in range(16):
                sock.sendall(b"a" * MIB)
        sockets.append(sock)
    time.sleep(0.5)
    peak = rss(pid)
    for sock in sockets:
        sock.close()
    return before / MIB, peak / MIB


def lost_database_detection(db: Path, log: Path) -> float:
    for path in db.parent.glob(db.name + "*"):
        path.unlink()
    started = time.monotonic()
    while "CONVERSATION STORE LOST" not in log.read_text():
        if time.monotonic() - started > 30:
            return float("inf")
        time.sleep(0.02)
    return time.monotonic() - started


def main() -> int:
    tmp = Path(tempfile.mkdtemp(prefix="vramwise-probe-"))
    fake = FakeSlack()
    with fake.running():
        keyed = serve_env(tmp / "keys.sqlite3", VRAMWISE_API_KEYS=f"{ALICE},{BOB}")
        with serve(keyed, tmp / "keys.log") as (url, _):
            tries, bypassed = key_bypasses(url)
        limited = serve_env(
            tmp / "rate.sqlite3", VRAMWISE_RATE_LIMIT="5/second", VRAMWISE_MAX_STREAMS_PER_CLIENT="2"
        )
        with serve(limited, tmp / "rate.log") as (url, _):
            rate_tries, rate_bypassed = forged_address_bypasses(url)
            time.sleep(1.1)
            cap_tries, cap_bypassed = stream_cap_bypasses(url)
        open_env = serve_env(tmp / "open.sqlite3", VRAMWISE_SLACK_BOT_TOKEN=BOT_TOKEN,
                             VRAMWISE_SLACK_SIGNING_SECRET=SIGNING_SECRET, VRAMWISE_SLACK_API_URL=fake.api_url)  # fmt: skip
        log = tmp / "open.log"
        with serve(open_env, log) as (url, proc):
            replay_tries, replayed = slack_replays(url, fake)
            total, errors, tracebacks = server_errors(url, log)
            before, peak = slow_header_memory(url, proc.pid)
            detect_s = lost_database_detection(tmp / "open.sqlite3", log)
    print(f"bypasses: API keys {bypassed} of {tries}; forged X-Forwarded-For {rate_bypassed} past the rate limit "
          f"in {rate_tries}; stream cap {cap_bypassed} past a cap of 2 in {cap_tries}; Slack replays answered "
          f"{replayed} of {replay_tries}")  # fmt: skip
    print(f"5xx: {errors} of {total} hostile requests; tracebacks in the server log: {tracebacks}")
    print(f"memory under slow headers (20 x 16 MiB unfinished heads): {before:.0f} -> {peak:.0f} MiB")
    print(f"time to detect a lost database (SQLite file deleted -> logged): {detect_s:.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
