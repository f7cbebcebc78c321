"""`vramwise serve [--host H] [--port P]`: run the HTTP service with uvicorn.

Defaults come from Settings (VRAMWISE_HOST / VRAMWISE_PORT, else 127.0.0.1:8000).
"""

from __future__ import annotations

import argparse
import sys

EXIT_BAD_INPUT = 2


def run_serve(args: argparse.Namespace) -> int:
    from service.preflight import database_problem, load_settings

    overrides: dict[str, object] = {}
    if getattr(args, "host", None):
        overrides["host"] = args.host
    if getattr(args, "port", None) is not None:
        overrides["port"] = args.port
    settings, problem = load_settings(overrides)
    if settings is None or problem:
        print(f"serve: {problem}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if not 0 < settings.port < 65536:
        print(f"serve: port {settings.port} is out of range; accepted: 1-65535", file=sys.stderr)
        return EXIT_BAD_INPUT

    problem = database_problem(settings.database_url)  # one line naming the setting, not a traceback
    if problem:
        print(f"serve: {problem}", file=sys.stderr)
        return EXIT_BAD_INPUT

    import uvicorn

    from service.app import create_app
    from service.observability.logs import configure_logging
    from service.serving import uvicorn_options

    configure_logging(settings.log_format)  # text, or one JSON object a line (VRAMWISE_LOG_FORMAT=json)
    app = create_app(settings)
    try:
        uvicorn.run(
            app,
            **uvicorn_options(settings),
            log_level="info",
            access_log=False,  # the service writes its own access lines (service/observability/requests.py)
            log_config=None,  # uvicorn's lines go through the handler configured above
        )
    except OSError as exc:  # address in use, permission denied
        print(f"serve: cannot listen on {settings.host}:{settings.port}: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    return 0
