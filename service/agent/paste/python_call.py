"""A Python call's keyword arguments (`TrainingArguments(...)`, `SFTConfig(...)`, `GRPOConfig(...)`), read with
`ast`: only literals are taken (ast.literal_eval); a name or an expression is listed as not read. Nothing is
executed."""

from __future__ import annotations

import ast
import re
from typing import Any

from service.agent.paste.reading import PasteError, Reading
from service.agent.paste.tables import apply

CALLS = re.compile(
    r"\b(TrainingArguments|Seq2SeqTrainingArguments|SFTConfig|DPOConfig|GRPOConfig|RLOOConfig)\("
)
EXPRESSION = "expression_not_read"  # a variable or an expression: only literals are read


def _call_node(tree: ast.AST) -> ast.Call | None:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if CALLS.match(f"{name}("):
                return node
    return None


def read_python_call(text: str) -> Reading:
    from service.agent.paste.hf_args import finish_hf
    from service.agent.paste.rl_flags import TRL, finish_trl

    try:
        tree = ast.parse(text)
    except SyntaxError as err:
        raise PasteError(
            "bad_python", f"the Python code does not parse: {err.msg}", line=err.lineno, column=err.offset
        ) from err
    call = _call_node(tree)
    if call is None:
        raise PasteError("unknown_format", "no TrainingArguments/SFTConfig/DPOConfig/GRPOConfig call")
    name = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", "")
    reading = Reading("hf-trainer-args")
    items: list[tuple[str, Any]] = []
    for keyword in call.keywords:
        if keyword.arg is None:
            reading.ignore("**kwargs", EXPRESSION)
            continue
        try:
            items.append((keyword.arg, ast.literal_eval(keyword.value)))
        except (ValueError, SyntaxError, TypeError):
            reading.ignore(keyword.arg, EXPRESSION)
    apply(reading, items, TRL)
    command = {"DPOConfig": "dpo", "GRPOConfig": "grpo", "RLOOConfig": "rloo"}.get(name)
    if command:
        finish_trl(reading, command)
    else:
        finish_hf(reading)
    return reading
