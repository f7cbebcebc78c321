"""Every pasted format read with its real parser: 59 fixtures under tests/fixtures/paste/<format>/, written from
each project's own documentation and example configs (the file each fixture's keys come from is cited in its
first line, or for JSON and logs in expected.json's `source`). Each fixture asserts every field it states:
the format detected, the Scenario fields, which key became which field, every key not used and why, what was
assumed, and the figures a log states (to the byte)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from service.agent.paste import FORMATS, PasteError, read_paste
from service.agent.paste.reading import LOG_FORMATS, NOT_UNDERSTOOD
from tools.catalog import resolve_model
from tools.scenario import Scenario

ROOT = Path(__file__).resolve().parent / "fixtures" / "paste"
EXPECTED: dict[str, dict[str, Any]] = json.loads((ROOT / "expected.json").read_text(encoding="utf-8"))
# models the fixtures name that are Hub ids outside the catalog (the Hub sizes them at run time)
HUB_ONLY = {
    "OpenRLHF/Llama-3-8b-sft-mixture",
    "deepseek-ai/deepseek-llm-7b-chat",
    "Qwen3-VL-30B-A3B-Instruct",
}


def _fields(reading: Any) -> dict[str, Any]:
    return {
        k: (v.model_dump(exclude_defaults=True) if hasattr(v, "model_dump") else v)
        for k, v in reading.fields.items()
    }


def _check(name: str, reading: Any) -> None:
    expected = EXPECTED[name]
    assert reading.format == expected["format"] == name.split("/")[0]
    assert _fields(reading) == expected["fields"]
    assert reading.used == expected["used"]
    assert {item.key: item.why for item in reading.ignored} == expected["ignored"]
    assert reading.observed == expected["observed"]
    assert [code for code, _ in reading.assumed] == expected["assumed"]


def test_at_least_forty_fixtures_cover_every_format() -> None:
    files = sorted(
        str(p.relative_to(ROOT)) for p in ROOT.rglob("*") if p.is_file() and p.name != "expected.json"
    )
    assert files == sorted(EXPECTED) and len(files) >= 40
    assert {name.split("/")[0] for name in files} == set(FORMATS)
    assert all(entry["source"] for entry in EXPECTED.values())


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_fixture_is_detected_and_read(name: str) -> None:
    _check(name, read_paste((ROOT / name).read_text(encoding="utf-8")))


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_fixture_read_with_its_format_named(name: str) -> None:
    _check(name, read_paste((ROOT / name).read_text(encoding="utf-8"), name.split("/")[0]))


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_fixture_fields_are_a_valid_scenario(name: str) -> None:
    fields = read_paste((ROOT / name).read_text(encoding="utf-8")).fields
    Scenario.model_validate(fields)
    if "model" in fields and fields["model"] not in HUB_ONLY:
        resolve_model(fields["model"])  # the catalog knows the pasted model as it was written


# --- the figures of errors and logs, to the byte (each figure as printed x its unit, rounded to the byte) ---
def test_cuda_oom_figures_to_the_byte() -> None:
    seen = read_paste((ROOT / "cuda-oom/oom_other_process.txt").read_text()).observed
    assert seen["requested_bytes"] == 2_104_533_975  # 1.96 GiB = 1.96 x 2**30 = 2,104,533,975.04
    assert seen["capacity_bytes"] == 84_986_665_370  # 79.15 GiB = 84,986,665,369.6
    assert seen["free_bytes"] == 1_320_702_444  # 1.23 GiB = 1,320,702,443.52
    assert seen["in_use_bytes"] == 51_926_154_609  # 48.36 GiB ("this process has")
    assert seen["allocated_bytes"] == 44_775_034_061  # 41.70 GiB
    assert seen["reserved_unallocated_bytes"] == 6_420_976_108  # 5.98 GiB
    assert seen["other_processes_bytes"] == 31_181_462_569 + 536_870_912  # 29.04 GiB + 512.00 MiB


def test_old_cuda_oom_form_gives_reserved_less_allocated() -> None:
    seen = read_paste((ROOT / "cuda-oom/oom_old_form.txt").read_text()).observed
    assert seen["requested_bytes"] == 20 * 2**20
    assert seen["capacity_bytes"] == 16_943_645_983  # 15.78 GiB
    assert seen["free_bytes"] == 3_607_101  # 3.44 MiB = 3,607,101.44
    assert seen["reserved_unallocated_bytes"] == 15_794_742_231 - 15_633_680_957  # 14.71 GiB - 14.56 GiB
    assert read_paste((ROOT / "cuda-oom/oom_old_zero_free.txt").read_text()).observed["free_bytes"] == 0


def test_memory_summary_and_logs_to_the_byte() -> None:
    summary = read_paste((ROOT / "cuda-oom/memory_summary.txt").read_text()).observed
    assert summary["allocated_bytes"] == 14324 * 2**20 and summary["peak_reserved_bytes"] == 20480 * 2**20
    assert summary["reserved_unallocated_bytes"] == (20480 - 14324) * 2**20 and summary["malloc_retries"] == 3
    vllm = read_paste((ROOT / "vllm-log/kv_error.txt").read_text()).observed
    assert (vllm["kv_needed_bytes"], vllm["kv_available_bytes"]) == (24 * 2**30, 8_632_884_265)  # 8.04 GiB
    assert vllm["max_model_len_estimate"] == 87840 and vllm["max_model_len"] == 262144
    smi = read_paste((ROOT / "nvidia-smi/h100x2_busy.txt").read_text()).observed
    assert smi["used_bytes"] == [30123 * 2**20, 4 * 2**20] and smi["capacity_bytes"] == [81559 * 2**20] * 2
    llama = read_paste((ROOT / "llama.cpp-log/load_new.txt").read_text()).observed
    assert (
        llama["kv_buffer_bytes"] == 896 * 2**20 and llama["model_buffer_bytes"] == 4_370_559_140
    )  # 4168.09 MiB


# --- bad input ------------------------------------------------------------------------------------------
def test_malformed_yaml_says_line_and_column() -> None:
    with pytest.raises(PasteError) as caught:
        read_paste(
            "base_model: NousResearch/Llama-3.2-1B\nlora_target_modules: [q_proj, v_proj\nmicro_batch_size: 2\n",
            "axolotl-yaml",
        )
    # the unclosed [ runs into line 3, where the ":" after micro_batch_size (column 17) cannot be in it
    assert (caught.value.code, caught.value.line, caught.value.column) == ("bad_yaml", 3, 17)


def test_malformed_json_says_line_and_column() -> None:
    with pytest.raises(PasteError) as caught:
        read_paste('{\n  "zero_optimization": {"stage": 3,}\n}')
    assert (caught.value.code, caught.value.line, caught.value.column) == (
        "bad_json",
        2,
        36,
    )  # the "}" where a key was expected


def test_unknown_format_names_and_undetected_pastes_are_refused() -> None:
    with pytest.raises(PasteError) as caught:
        read_paste("a: 1", "kubernetes-yaml")
    assert caught.value.code == "unknown_format"
    with pytest.raises(PasteError) as caught:
        read_paste("just some words\nover two lines")
    assert caught.value.code == "unknown_format"


def test_a_memory_key_not_understood_is_listed_never_dropped() -> None:
    reading = read_paste(
        "base_model: Qwen/Qwen2.5-7B\nmicro_batch_size: 2\nsequence_len: 4096\nunsloth_lora_mlp: true\n"
        "tiled_mlp_num_shards: 4\nwandb_project: demo\n"
    )
    why = {item.key: item.why for item in reading.ignored}
    assert why == {
        "unsloth_lora_mlp": NOT_UNDERSTOOD,
        "tiled_mlp_num_shards": NOT_UNDERSTOOD,
        "wandb_project": "no_memory_effect",
    }
    keys = {
        "base_model",
        "micro_batch_size",
        "sequence_len",
        "unsloth_lora_mlp",
        "tiled_mlp_num_shards",
        "wandb_project",
    }
    assert set(reading.used) | set(why) == keys  # every key is either used or listed


def test_nothing_in_a_paste_is_executed(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    paste = f"TrainingArguments(output_dir=__import__('os').system('touch {marker}'), per_device_train_batch_size=4)"
    reading = read_paste(paste)
    assert not marker.exists() and reading.fields["batch_size"] == 4
    assert {item.key: item.why for item in reading.ignored}["output_dir"] == "expression_not_read"
    command = read_paste(
        f"vllm serve Qwen/Qwen2.5-7B-Instruct --max-model-len $(touch {marker}) ; touch {marker}"
    )
    assert not marker.exists() and command.format == "vllm-cli"


def test_log_formats_are_the_contracts() -> None:
    assert set(FORMATS) >= LOG_FORMATS and len(FORMATS) == 20


def test_a_yaml_bomb_and_deep_nesting_are_refused_quickly() -> None:
    import time

    bomb = (
        "base_model: x\n"
        + "a0: &a0 {k: v}\n"
        + "".join(f"a{i}: &a{i} {{{', '.join(f'k{j}: *a{i - 1}' for j in range(9))}}}\n" for i in range(1, 9))
    )
    started = time.monotonic()
    with pytest.raises(PasteError) as caught:
        read_paste(bomb, "axolotl-yaml")
    assert caught.value.code == "too_large" and time.monotonic() - started < 2
    with pytest.raises(PasteError) as caught:
        read_paste('{"zero_optimization": ' * 5000 + "1" + "}" * 5000)
    assert caught.value.code in ("too_large", "bad_json")


def test_every_text_exists_in_both_languages() -> None:
    from service.agent.prompt_files import load_toml

    english, chinese = load_toml("en", "paste.toml"), load_toml("zh", "paste.toml")
    assert {k: sorted(v) for k, v in english.items()} == {k: sorted(v) for k, v in chinese.items()}
    for name in EXPECTED:  # every reason and assumption the fixtures produce has its text
        reading = read_paste((ROOT / name).read_text(encoding="utf-8"))
        assert {item.why for item in reading.ignored} <= set(english["why"]), name
        assert {code for code, _ in reading.assumed} <= set(english["assumed"]), name


def test_every_diagnosis_and_lever_has_its_text() -> None:
    import re

    from service.agent.prompt_files import load_toml

    source = (Path(__file__).resolve().parents[1] / "service/agent/paste/diagnosis.py").read_text(
        encoding="utf-8"
    )
    used = set(re.findall(r'\(\s*"(diagnosis|lever)",\s*"(\w+)"', source)) | {
        ("diagnosis", "oom"),
        ("diagnosis", "oom_old"),
    }
    assert len(used) >= 25
    for language in ("en", "zh"):
        texts = load_toml(language, "paste.toml")
        assert {(section, code) for section, code in used if code not in texts[section]} == set(), language


def test_a_named_format_reads_with_that_formats_table() -> None:
    verl_yaml = "actor_rollout_ref:\n  model:\n    path: Qwen/Qwen2.5-7B-Instruct\n  rollout:\n    n: 8\n"
    reading = read_paste(verl_yaml + "algorithm:\n  adv_estimator: grpo\n", "verl-cli")
    assert (
        reading.format == "verl-cli"
        and reading.fields["num_generations"] == 8
        and reading.fields["task"] == "grpo"
    )
    named = read_paste("base_model: Qwen/Qwen2.5-7B\nmicro_batch_size: 2\n", "llamafactory-yaml")
    assert named.format == "llamafactory-yaml" and "model" not in named.fields  # not axolotl's keys
    assert {item.key: item.why for item in named.ignored}["micro_batch_size"] == NOT_UNDERSTOOD
