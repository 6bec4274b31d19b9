"""tests/benchmarks/module_paths.py, the issue-37 count of steps between perfgate's modules, runs and prints both
figures for both paths (no bound on them: they describe the code, they do not judge it)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

TOOL = Path(__file__).resolve().parents[2] / "tests" / "benchmarks" / "module_paths.py"


def test_the_tool_prints_steps_and_returns_for_compare_and_render(capsys: pytest.CaptureFixture[str]) -> None:
    spec = importlib.util.spec_from_file_location("module_paths", TOOL)
    assert spec is not None and spec.loader is not None
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    assert tool.main(["--format", "md"]) == 0
    printed = capsys.readouterr().out
    figures = re.findall(r"^(compare|render_parts\(md\)): (\d+) steps between perfgate modules, (\d+) of them returns; \d+ distinct moves, \d+ of them returns$",
                         printed, re.MULTILINE)
    assert [name for name, _, _ in figures] == ["compare", "render_parts(md)"], printed
    assert all(int(steps) > 0 and 0 <= int(returns) <= int(steps) for _, steps, returns in figures)
    assert tool.steps_and_returns(["a", "b", "a", "c", "b"]) == (4, 2)  # into a, then b: both left before
    assert tool.distinct_moves_and_returns(["a", "b", "a", "b", "a", "c"]) == (3, 1)  # a>b, b>a (a return), a>c
