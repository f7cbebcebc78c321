"""The observability settings at their edges: traces asked for without the `otel` extra (a warning, the
service runs), a log format the service does not know (exit code 2 and one line), and the request ids it
keeps or replaces."""

from __future__ import annotations

import logging
import subprocess
import sys

import pytest

from service.observability.context import channel_of, request_id_from
from service.observability.tracing import install_tracing
from tests.test_crash_restart import ROOT


def test_traces_without_the_otel_extra_warn_and_the_service_runs(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry.sdk.trace", None)  # as if the extra were not installed
    with caplog.at_level(logging.WARNING, logger="service.observability.tracing"):
        assert install_tracing("http://127.0.0.1:4318") is None
    assert "pip install 'vramwise[otel]'" in caplog.text
    assert install_tracing(None) is None  # no endpoint: nothing asked, nothing said


def test_an_unknown_log_format_is_refused_with_one_line() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", "from service.cli import main; raise SystemExit(main())", "serve"],
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "VRAMWISE_LOG_FORMAT": "xml"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [proc.stderr.strip()]
    assert "VRAMWISE_LOG_FORMAT" in proc.stderr and "'text' or 'json'" in proc.stderr  # the setting, by name


@pytest.mark.parametrize(
    ("header", "kept"),
    [
        (b"lb-7f3a-0001", True),
        (b"01HZX8M4W3B6Q7Z9:span/1+a=b", True),
        (b"two words", False),
        (b"x" * 129, False),
        (b"", False),
        (None, False),
        ("\u00e9t\u00e9".encode("latin-1"), False),
    ],
)
def test_request_ids_are_kept_only_when_plain(header: bytes | None, kept: bool) -> None:
    made = request_id_from(header)
    if kept:
        assert header is not None and made == header.decode()
    else:
        assert len(made) == 32 and int(made, 16) >= 0


def test_channels_by_route() -> None:
    assert channel_of("/v1/chat") == "web"
    assert channel_of("/v1/chat/completions") == "openai"
    assert channel_of("/slack/events") == "slack"
    assert channel_of("/v1/coach/answers") == "coach"
    assert channel_of("/v1/estimate") is None
    assert channel_of("/v1/chats") is None
