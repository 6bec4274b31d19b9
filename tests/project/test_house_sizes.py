"""The house rule a newcomer relies on: no module in perfgate/ over 400 lines and no function over 60, so each
reads in one sitting. Counted with ast (a function from its ``def`` line to its last line, docstring and
comments included)."""

from __future__ import annotations

import ast
from pathlib import Path

from helpers.common import REPO

PACKAGE = REPO / "perfgate"
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60

def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _long_functions(path: Path, root: Path = REPO) -> dict[str, int]:
    """``file:qualified.name`` -> lines, of each function (methods and nested ones too) over the limit."""
    found: dict[str, int] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    lines = (child.end_lineno or child.lineno) - child.lineno + 1
                    if lines > MAX_FUNCTION_LINES:
                        found[f"{path.relative_to(root).as_posix()}:{name}"] = lines
                visit(child, f"{name}.")
            else:
                visit(child, prefix)

    visit(ast.parse(path.read_text(encoding="utf-8")), "")
    return found


def test_no_module_is_over_400_lines() -> None:
    long = {path.relative_to(REPO).as_posix(): n for path in _modules()
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES}
    assert not long, f"split these modules along a seam (over {MAX_MODULE_LINES} lines): {long}"


def test_no_function_is_over_60_lines() -> None:
    long: dict[str, int] = {}
    for path in _modules():
        long.update(_long_functions(path))
    assert not long, f"split these functions (over {MAX_FUNCTION_LINES} lines): {long}"


def test_the_function_count_sees_methods_and_nested_functions(tmp_path: Path) -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    source = tmp_path / "module.py"
    source.write_text(f"class Outer:\n    def method(self):\n    {body.replace(chr(10), chr(10) + '    ')}\n"
                      f"def short():\n    def inner():\n    {body.replace(chr(10), chr(10) + '    ')}\n",
                      encoding="utf-8")
    assert set(_long_functions(source, tmp_path)) == {"module.py:Outer.method", "module.py:short",
                                                      "module.py:short.inner"}
