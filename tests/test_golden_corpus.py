"""The golden corpus: every stored scenario, estimated now, gives byte for byte the stored Estimate JSON.

The corpus (tests/golden/estimates.jsonl.gz, written by `python -m tests.golden.make_corpus`) holds the
test suite's scenarios, the accuracy matrix, the published rows, the speed benchmark's scenarios and
500 hypothesis-drawn ones, each with its Estimate JSON (planner included) or its error. A change meant
to keep every figure (a refactor, a speed-up) must pass it unchanged; a change of the memory model
rewrites the corpus in the same commit and the diff shows which estimates moved.
"""

from __future__ import annotations

import json

from tests.golden.make_corpus import CORPUS, corpus_lines, gzip_bytes, read_corpus, stored_sources


def test_corpus_covers_every_source() -> None:
    counts = {k: len(v) for k, v in stored_sources().items()}
    assert set(counts) == {"tests", "accuracy", "published", "planner_bench", "hypothesis"}
    assert counts["hypothesis"] == 500 and counts["planner_bench"] == 3
    assert counts["tests"] > 500 and counts["accuracy"] > 50 and counts["published"] > 50


def test_estimates_are_byte_identical() -> None:
    stored = read_corpus()
    lines = list(corpus_lines(stored_sources()))
    assert len(lines) == len(stored)
    for old, new in zip(stored, lines, strict=True):
        now = json.loads(new)
        if now != old:  # the first scenario whose estimate moved, with what moved
            diff = {k: (old.get(k), now.get(k)) for k in old.keys() | now.keys() if old.get(k) != now.get(k)}
            raise AssertionError(f"{old['source']} scenario {old['scenario']} changed: {str(diff)[:3000]}")
    assert gzip_bytes(lines) == CORPUS.read_bytes()
