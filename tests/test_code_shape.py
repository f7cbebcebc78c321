"""Shape of the estimator's code: every function in tools/ fits on a screen (80 lines at most), so each
step of the memory model can be read, tested and changed alone."""

from __future__ import annotations

import ast
from pathlib import Path

TOOLS = Path(__file__).resolve().parents[1] / "tools"
MAX_LINES = 80
ALLOWED: set[tuple[str, str]] = set()  # functions still over the limit (none)


def long_functions(root: Path = TOOLS, limit: int = MAX_LINES) -> list[tuple[str, str, int]]:
    """(file relative to tools/, function name, lines incl. decorators and docstring) over `limit`."""
    out = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                lines = (node.end_lineno or node.lineno) - first + 1
                if lines > limit:
                    out.append((str(path.relative_to(root)), node.name, lines))
    return out


def test_no_function_in_tools_over_80_lines() -> None:
    found = long_functions()
    assert [f for f in found if f[:2] not in ALLOWED] == []
    assert {f[:2] for f in found} == ALLOWED  # an allowed one split: take it off the list


def test_the_check_sees_a_long_function(tmp_path: Path) -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_LINES))
    (tmp_path / "m.py").write_text(f"def short():\n    return 1\n\n\ndef long():\n{body}\n", encoding="utf-8")
    assert long_functions(tmp_path) == [("m.py", "long", MAX_LINES + 1)]


def dataclasses_without_docstring(root: Path = TOOLS) -> list[tuple[str, str]]:
    out = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            dataclass = isinstance(node, ast.ClassDef) and any(
                "dataclass" in ast.unparse(d) for d in node.decorator_list
            )
            if dataclass and ast.get_docstring(node) is None:
                out.append((str(path.relative_to(root)), node.name))
    return out


def test_every_dataclass_in_tools_has_a_docstring() -> None:
    # besides saying what it holds: a dataclass without a docstring has one made from
    # inspect.signature when its module is imported (dataclasses._process_class), ~0.2 ms each, and
    # `vramwise estimate` imports some sixty of them (benchmarks/estimator_speed.py, process start)
    assert dataclasses_without_docstring() == []


def test_the_docstring_check_sees_a_bare_dataclass(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(
        '@dataclass(frozen=True)\nclass A:\n    """Doc."""\n\n    x: int\n\n\n@dataclass\nclass B:\n    x: int\n',
        encoding="utf-8",
    )
    assert dataclasses_without_docstring(tmp_path) == [("m.py", "B")]
