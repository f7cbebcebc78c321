"""`vramwise models`, `vramwise gpus`, `vramwise quiz --list-topics`: what the estimator and the coach know,
one line each (or `--json`: one JSON array, the same objects as GET /v1/catalog/models, GET /v1/gpus and
GET /v1/coach/topics)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TextIO

EXIT_OK = 0
GIB = 2**30  # GiB, what nvidia-smi and PyTorch report


def _write_json(out: TextIO, items: list[dict[str, object]]) -> int:
    out.write(json.dumps(items, ensure_ascii=False, indent=2) + "\n")
    return EXIT_OK


def run_models(args: argparse.Namespace, out: TextIO | None = None) -> int:
    from tools.catalog.models import list_models

    stream = out or sys.stdout
    models = list_models()
    if args.json:
        return _write_json(stream, [m.model_dump(mode="json") for m in models])
    width = max(len(m.id) for m in models)
    for m in models:
        aliases = f"  (also: {', '.join(m.aliases)})" if m.aliases else ""
        stream.write(f"{m.id:<{width}}  {m.published_params / 1e9:8.2f}B  {m.name}{aliases}\n")
    return EXIT_OK


def run_gpus(args: argparse.Namespace, out: TextIO | None = None) -> int:
    from tools.catalog.gpus import list_gpus

    stream = out or sys.stdout
    gpus = list_gpus()
    if args.json:
        return _write_json(stream, [g.model_dump(mode="json") for g in gpus])
    width = max(len(g.id) for g in gpus)
    for g in gpus:
        stream.write(f"{g.id:<{width}}  {g.memory_bytes / GIB:8.2f} GiB  {g.name}\n")
    return EXIT_OK


def run_topics(args: argparse.Namespace, out: TextIO | None = None) -> int:
    from service.coach.coach import Coach

    stream = out or sys.stdout
    topics = Coach.topics(args.language or "en")
    if args.json:
        return _write_json(stream, [t.model_dump(mode="json") for t in topics])
    width = max(len(t.id) for t in topics)
    for t in topics:
        stream.write(f"{t.id:<{width}}  {t.title}\n")
    return EXIT_OK
