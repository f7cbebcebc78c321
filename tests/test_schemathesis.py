"""Property-based API testing with schemathesis against a real uvicorn on loopback: every operation of the
OpenAPI document, positive and negative inputs (examples, coverage and fuzzing phases, bounded per
operation; the coach's routes and, with Slack on against a fake Slack Web API, `POST /slack/events`), and
the stateful phase following the declared links (a completion's conversation read,
continued, forgotten). Checks: no server error, status codes, content types, headers and bodies as
declared, the Server-Sent Events of `POST /v1/chat` and `POST /v1/chat/completions` included (each event
against the declared `itemSchema`)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from service.app import create_app
from service.settings import Settings
from tests.fakes.slack_api import FakeSlack
from tests.service_support import live_server, offline_settings, reset_sse_exit_flag
from tests.slack_support import BOT_TOKEN, SIGNING_SECRET

__all__ = ["reset_sse_exit_flag"]  # autouse fixture

MAX_EXAMPLES = 10  # per operation in the fuzzing and stateful phases (coverage: its own boundary cases)
CHECKS = (
    "not_a_server_error",
    "status_code_conformance",
    "content_type_conformance",
    "response_headers_conformance",
    "response_schema_conformance",
)


def test_schemathesis_finds_no_server_error_and_no_schema_violation(tmp_path: Path) -> None:
    fake_slack = FakeSlack()  # Slack on: POST /slack/events is fuzzed as a real route, not its 404
    with fake_slack.running():
        settings = offline_settings(
            tmp_path / "st.sqlite3",
            agent_processes=0,
            slack_bot_token=BOT_TOKEN,
            slack_signing_secret=SIGNING_SECRET,
            slack_api_url=fake_slack.api_url,
        )
        _run(settings, tmp_path)


def _run(settings: Settings, tmp_path: Path) -> None:
    cli = Path(sys.executable).parent / "schemathesis"
    with live_server(create_app(settings)) as url:
        run = subprocess.run(
            [str(cli), "run", f"{url}/openapi.json", "--max-examples", str(MAX_EXAMPLES), "--seed", "1",
             "--checks", ",".join(CHECKS), "--phases", "examples,coverage,fuzzing,stateful",
             "--request-timeout", "30", "--no-color", "--workers", "1"],
            capture_output=True, text=True, timeout=600, cwd=tmp_path,
        )  # fmt: skip
    out = run.stdout + run.stderr
    summary = out[out.rfind("SUMMARY") :]
    print(summary)
    assert run.returncode == 0, out[-6000:]
    paths = create_app(settings).openapi()["paths"]
    assert {
        "/slack/events",
        "/v1/coach/questions",
        "/v1/coach/answers",
        "/v1/coach/sessions/{session_id}",
    } <= set(paths)
    operations = sum(len(item) for item in paths.values())
    assert f"Selected: {operations}/{operations}" in summary and f"Tested: {operations}" in summary, summary
    for phase in ("Examples", "Coverage", "Fuzzing", "Stateful"):
        assert f"✅ {phase}" in summary, summary
    cases = re.search(r"(\d+) generated, (\d+) passed", summary)
    assert cases is not None and cases.group(1) == cases.group(2) and int(cases.group(1)) > 500, summary
