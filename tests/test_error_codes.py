"""Every error the estimator raises carries a code, and every code is said in Chinese from its template
(prompts/zh/answer.toml [error_code]); English says the estimator's own message."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from service.agent.prompt_files import load_toml
from service.agent.render import render_error
from tools.errors import ScenarioError
from tools.estimator import estimate
from tools.scenario import Scenario

PLACEHOLDER = re.compile(r"\$\{(\w+)\}")
# tools/trace is the developer's measuring tool (run on a GPU by hand), not an estimator path
ESTIMATOR_SOURCES = [p for p in Path("tools").rglob("*.py") if "trace" not in p.parts]


def _raise_sites() -> list[tuple[str, ast.Call]]:
    sites = []
    for path in ESTIMATOR_SOURCES:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "ScenarioError":
                sites.append((f"{path}:{node.lineno}", node))
    return sites


def _codes() -> dict[str, set[str]]:
    """code literal -> the value names its raise sites give."""
    out: dict[str, set[str]] = {}
    for where, call in _raise_sites():
        kw = {k.arg: k.value for k in call.keywords}
        code = kw.get("code")
        assert code is not None, f"{where}: ScenarioError without a code"
        if not isinstance(code, ast.Constant):  # a re-raise passing the caught error's code on
            assert ast.unparse(code) == "err.code", where
            continue
        values = kw.get("values")
        names = {k.value for k in values.keys} if isinstance(values, ast.Dict) else set()
        out.setdefault(code.value, set()).update(names)
    return out


def test_every_estimator_error_has_a_code() -> None:
    assert len(_raise_sites()) >= 35
    assert len(_codes()) >= 30


def test_every_code_has_a_chinese_template_using_only_its_values() -> None:
    table = load_toml("zh", "answer.toml")["error_code"]
    for code, names in _codes().items():
        assert code in table, code
        for key in (code, f"{code}_accepted"):
            assert set(PLACEHOLDER.findall(str(table.get(key, "")))) <= names, key
            if key in table:
                assert re.search(r"[\u4e00-\u9fff]", str(table[key])) or key.endswith("_accepted"), key


@pytest.mark.parametrize(
    ("stated", "code", "zh"),
    [
        (
            {"model": "llama-2-7b", "task": "freeze", "trainable_layers": 40},
            "trainable_layers_count",
            "可训练层数 40 超过了模型的 32 层",
        ),
        (
            {"model": "llama-2-7b", "task": "inference", "max_new_tokens": 9000, "seq_len": 4096},
            "max_new_tokens_context",
            "生成长度 max_new_tokens 9,000 超过了上下文长度 seq_len 4,096",
        ),
        (
            {"model": "mixtral-8x7b", "task": "inference", "ep": 3, "num_gpus": 3},
            "ep_experts",
            "专家并行 EP=3 不能整除模型的 8 个专家",
        ),
        (
            {"model": "llama-2-7b", "task": "lora", "lora_targets": ["qq_proj"]},
            "lora_target_unknown",
            "这个模型没有名为「qq_proj」的线性层",
        ),
    ],
)
def test_errors_read_in_chinese_and_english(stated: dict, code: str, zh: str) -> None:
    with pytest.raises(ScenarioError) as info:
        estimate(Scenario(**stated), plan=False)
    err = info.value
    assert err.code == code
    text = render_error(err, "zh")
    assert zh in text and err.message not in text
    assert err.message in render_error(err, "en")


def test_a_card_given_only_by_its_size_is_named_by_figures() -> None:
    from service.agent.render import render_answer

    est = estimate(Scenario(model="llama-2-7b", task="inference", gpu="24GB"), plan=False)
    assert (est.gpu.id, est.gpu.name) == ("24gb", "24 GB GPU")
    assert "1 张 24 GB GPU" in render_answer(est, "zh")
    assert "1 x 24 GB GPU" in render_answer(est, "en")
