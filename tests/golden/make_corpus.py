"""Golden corpus: the JSON Estimate of many scenarios, to prove a refactor changes no output.

The corpus (`tests/golden/estimates.jsonl.gz`) holds one line per scenario:
`{"scenario": {...}, "source": ..., "estimate": <Estimate JSON with the planner's suggestions, as
`vramwise estimate --json` prints it>}`, or `"error": {...}` (ScenarioError.to_dict()) for a scenario the estimator rejects.
Scenarios, in this order:
- `tests`: every scenario the test suite sends to `tools.estimator.estimate` / `tools.resolve.resolve`
  (harvested by running the suite with tests/golden/harvest_plugin.py);
- `accuracy`: the traced accuracy matrix (benchmarks/accuracy/cases.py);
- `published`: the published measurements (benchmarks/accuracy/published.py rows as Scenarios);
- `planner_bench`: the scenarios of benchmarks/estimator_speed.py;
- `hypothesis`: HYPOTHESIS_EXAMPLES scenarios drawn with a fixed seed (derandomized hypothesis) from a
  strategy over the same catalog models, tasks, GPUs and sizes as tests/test_properties.py, widened to
  parallelism, ZeRO, offload, dtypes, optimizers and LoRA settings (invalid combinations included: their
  errors are part of the corpus).
Test scenarios and hypothesis scenarios are stored in the corpus itself, so checking it needs neither the
suite nor hypothesis: tests/test_golden_corpus.py re-estimates every stored scenario and compares bytes.

    python -m tests.golden.make_corpus            # rewrite the corpus from the stored scenarios
    python -m tests.golden.make_corpus --harvest  # first re-harvest the test suite's scenarios
    python -m tests.golden.make_corpus --harvest-add tests/test_x.py  # add a new test file's scenarios
    python -m tests.golden.make_corpus --redraw   # first re-draw the hypothesis scenarios
    python -m tests.golden.make_corpus --check    # compare (what the test does), print the first difference
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
CORPUS = HERE / "estimates.jsonl.gz"
HYPOTHESIS_EXAMPLES = 500


def _dump(scenario: Any) -> dict[str, Any]:
    return scenario.model_dump(mode="json", exclude_defaults=True)


def _line(obj: dict[str, Any]) -> str:
    return json.dumps(obj, sort_keys=True, ensure_ascii=False)


# ------------------------------------------------------------------------------------------ scenarios
def accuracy_scenarios() -> list[dict[str, Any]]:
    from benchmarks.accuracy.cases import all_cases

    return [dict(c.scenario) for c in all_cases()]


def published_scenarios() -> list[dict[str, Any]]:
    from benchmarks.accuracy.published import load_rows, to_scenario
    from tools.errors import ScenarioError

    out = []
    for row in load_rows():
        try:
            out.append(_dump(to_scenario(row)))
        except (ScenarioError, ValueError):
            continue  # a row whose model the catalog lacks: not a Scenario
    return out


def planner_bench_scenarios() -> list[dict[str, Any]]:
    from benchmarks.estimator_speed import ONE, PLAN, PLAN_RL

    return [dict(ONE), dict(PLAN), dict(PLAN_RL)]


def draw_hypothesis_scenarios(n: int = HYPOTHESIS_EXAMPLES) -> list[dict[str, Any]]:
    """`n` distinct scenarios from a derandomized hypothesis run (same draws on every run)."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import strategies as st

    from tools.catalog.models import list_models
    from tools.scenario import Scenario

    models = sorted(m.id for m in list_models())
    tasks = ["inference", "full_finetune", "pretrain", "lora", "qlora", "freeze", "dpo", "grpo", "ppo"]
    gpus = ["a100-80gb", "h100", "4090", "h20", "mi300x", "t4", "v100", "a100-40gb"]
    maybe = st.sampled_from

    @st.composite
    def scenarios(draw) -> dict[str, Any]:
        task = draw(maybe(tasks))
        data: dict[str, Any] = {
            "model": draw(maybe(models)),
            "task": task,
            "gpu": draw(maybe(gpus)),
            "batch_size": draw(st.integers(1, 8)),
            "seq_len": draw(maybe([128, 512, 1024, 2048, 4096, 8192])),
            "gradient_checkpointing": draw(maybe([None, True, False])),
            "attention": draw(maybe([None, "flash", "eager"])),
            "num_gpus": draw(maybe([None, 1, 2, 4, 8])),
            "tp": draw(maybe([None, None, 1, 2, 4])),
            "pp": draw(maybe([None, None, None, 2])),
            "zero_stage": draw(maybe([None, 0, 1, 2, 3])),
            "weight_dtype": draw(maybe([None, None, "bf16", "fp16", "fp32", "int8", "int4", "nf4", "fp8"])),
            "optimizer": draw(maybe([None, None, "adamw", "adamw_8bit", "sgd", "adafactor", "adamw_torch"])),
            "precision_recipe": draw(maybe([None, None, None, "mixed", "amp", "bf16", "fp32"])),
            "offload_optimizer": draw(maybe([None, None, None, "cpu"])),
            "offload_params": draw(maybe([None, None, None, None, "cpu"])),
            "kv_dtype": draw(maybe([None, None, "fp8", "bf16"])),
            "max_new_tokens": draw(maybe([None, None, 16, 256])),
            "recompute": draw(maybe([None, None, None, "selective", "full"])),
        }
        if task in ("lora", "qlora") or (task in ("dpo", "grpo", "ppo") and draw(st.booleans())):
            data["lora_rank"] = draw(maybe([None, 8, 16, 64]))
            data["lora_targets"] = draw(maybe([None, ["q_proj", "v_proj"], ["all-linear"]]))
        if task == "freeze":
            data["trainable_layers"] = draw(maybe([None, 1, 2, 4]))
        if task == "grpo":
            data["num_generations"] = draw(maybe([None, 4, 8]))
        return {k: v for k, v in data.items() if v is not None}

    drawn: list[dict[str, Any]] = []
    seen: set[str] = set()

    @settings(
        max_examples=n * 3,
        derandomize=True,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(scenarios())
    def collect(data: dict[str, Any]) -> None:
        if len(drawn) >= n:
            return
        try:
            scenario = Scenario.model_validate(data)
        except ValueError:
            return
        key = _line(_dump(scenario))
        if key not in seen:
            seen.add(key)
            drawn.append(_dump(scenario))

    collect()
    return drawn


def harvest_test_scenarios(paths: list[str] | None = None) -> list[dict[str, Any]]:
    """Run the test suite (or the test files `paths`) with the recording plugin; the scenarios it
    estimated, in first-seen order."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "scenarios.jsonl"
        env = dict(os.environ, VRAMWISE_HARVEST_OUT=str(out))
        cmd = [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "tests.golden.harvest_plugin",
            *(paths or ["tests"]),
        ]
        cmd += ["--ignore=tests/test_golden_corpus.py"]
        subprocess.run(cmd, cwd=ROOT, env=env, check=False)
        lines = out.read_text(encoding="utf-8").splitlines()
        return [json.loads(line) for line in dict.fromkeys(lines)]  # threads may record one twice


def read_corpus(path: Path = CORPUS) -> list[dict[str, Any]]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


def stored_scenarios(source: str, path: Path = CORPUS) -> list[dict[str, Any]]:
    return [e["scenario"] for e in read_corpus(path) if e["source"] == source] if path.exists() else []


# ------------------------------------------------------------------------------------------ corpus
def entry_line(source: str, scenario_data: dict[str, Any]) -> str:
    """One corpus line: the scenario and its Estimate JSON (byte for byte what the CLI prints) or its error."""
    from service.agent.assumption_text import with_english_text  # as the CLI prints it
    from tools.errors import ScenarioError
    from tools.estimator import estimate
    from tools.scenario import Scenario

    head = _line({"scenario": scenario_data, "source": source})[:-1]
    scenario = Scenario.model_validate(scenario_data)
    try:
        result = with_english_text(estimate(scenario)).model_dump_json()
    except ScenarioError as exc:
        return head + ', "error": ' + _line(exc.to_dict()) + "}"
    return head + ', "estimate": ' + result + "}"


def corpus_lines(sources: dict[str, list[dict[str, Any]]]) -> Iterator[str]:
    for source, items in sources.items():
        for data in items:
            yield entry_line(source, data)


def all_sources(
    *, harvest: bool = False, harvest_add: list[str] | None = None, redraw: bool = False
) -> dict[str, list[dict[str, Any]]]:
    tests = harvest_test_scenarios() if harvest else stored_scenarios("tests")
    if harvest_add:  # new test files: their scenarios after the stored ones
        known = {_line(s) for s in tests}
        tests += [s for s in harvest_test_scenarios(harvest_add) if _line(s) not in known]
    return {
        "tests": tests,
        "accuracy": accuracy_scenarios(),
        "published": published_scenarios(),
        "planner_bench": planner_bench_scenarios(),
        "hypothesis": draw_hypothesis_scenarios() if redraw else stored_scenarios("hypothesis"),
    }


def stored_sources(path: Path = CORPUS) -> dict[str, list[dict[str, Any]]]:
    """The scenarios of the stored corpus, grouped by source in their stored order."""
    out: dict[str, list[dict[str, Any]]] = {}
    for e in read_corpus(path):
        out.setdefault(e["source"], []).append(e["scenario"])
    return out


def gzip_bytes(lines: list[str]) -> bytes:
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0, compresslevel=9) as gz:
        gz.write("".join(line + "\n" for line in lines).encode("utf-8"))
    return buf.getvalue()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--harvest", action="store_true", help="re-harvest the test suite's scenarios first")
    ap.add_argument(
        "--harvest-add", nargs="+", metavar="TEST_FILE", help="add the scenarios of these test files"
    )
    ap.add_argument("--redraw", action="store_true", help="re-draw the hypothesis scenarios first")
    ap.add_argument("--check", action="store_true", help="compare with the stored corpus, write nothing")
    args = ap.parse_args(argv)
    if args.check:
        stored = CORPUS.read_bytes()
        lines = list(corpus_lines(stored_sources()))
        if gzip_bytes(lines) == stored:
            print(f"{len(lines)} scenarios: identical")
            return 0
        for i, (old, new) in enumerate(zip(read_corpus(), lines, strict=False)):
            if _line(old) != _line(json.loads(new)):
                print(
                    f"first difference at line {i + 1}:\nstored:  {_line(old)[:2000]}\nnow:     {new[:2000]}"
                )
                break
        return 1
    sources = all_sources(
        harvest=args.harvest, harvest_add=args.harvest_add, redraw=args.redraw or not CORPUS.exists()
    )
    lines = list(corpus_lines(sources))
    CORPUS.write_bytes(gzip_bytes(lines))
    counts = ", ".join(f"{k} {len(v)}" for k, v in sources.items())
    print(f"wrote {CORPUS.relative_to(ROOT)}: {len(lines)} scenarios ({counts})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
