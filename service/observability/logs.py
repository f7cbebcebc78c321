"""The service's log lines: plain text (as before) or, with `VRAMWISE_LOG_FORMAT=json`, one JSON object a
line (python-json-logger), each with the `request_id` of the request it was written for.

Every request also writes one access line (logger `vramwise.access`, service/observability/requests.py)
with `request_id`, `method`, `route`, `status`, `duration_ms`, `channel`, `conversation_id` where there
is one, `owner` (the API key's SHA-256 digest, never the key) and, only with `VRAMWISE_LOG_QUESTIONS=1`,
`question`. In JSON at INFO; in text at DEBUG (off by default, as uvicorn's access log was).
"""

from __future__ import annotations

import logging
import sys

from service.observability.context import current_request

TEXT_FORMAT = "%(levelname)s %(name)s: %(message)s"
JSON_FIELDS = "%(asctime)s %(levelname)s %(name)s %(message)s"
ACCESS_LOGGER = "vramwise.access"


class RequestIdFilter(logging.Filter):
    """Adds the current request's id to every record written while handling it (None outside requests)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, "request_id"):
            current = current_request.get()
            record.request_id = current.request_id if current is not None else None
        return True


def json_formatter() -> logging.Formatter:
    from pythonjsonlogger.json import JsonFormatter

    return JsonFormatter(
        JSON_FIELDS,
        rename_fields={"asctime": "time", "levelname": "level", "name": "logger"},
        json_ensure_ascii=False,  # questions in Chinese stay readable
    )


def configure_logging(log_format: str) -> int:
    """Root logging for `vramwise serve` (text or json); the level the access lines are written at."""
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(RequestIdFilter())
    as_json = log_format == "json"
    handler.setFormatter(json_formatter() if as_json else logging.Formatter(TEXT_FORMAT))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    for name in ("uvicorn", "uvicorn.error"):  # uvicorn's own lines in the same format
        uvicorn_logger = logging.getLogger(name)
        uvicorn_logger.handlers.clear()
        uvicorn_logger.propagate = True
    return logging.INFO if as_json else logging.DEBUG
