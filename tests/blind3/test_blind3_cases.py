"""Blind set 3's expectations are committed: cases.py must still make the committed cases.json (README.md)."""
from __future__ import annotations

import importlib.util
from pathlib import Path

HERE = Path(__file__).resolve().parent


def test_cases_py_still_makes_the_committed_cases_json() -> None:
    spec = importlib.util.spec_from_file_location("blind3_cases", HERE / "cases.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert (HERE / "cases.json").read_text() == module.cases_text(), \
        "tests/blind3/cases.json is not what cases.py makes: the expectations must not change after the first run"
