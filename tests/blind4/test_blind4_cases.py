"""Blind set 4's expectations are committed: cases.py must still make the committed cases.json (README.md)."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def test_cases_py_still_makes_the_committed_cases_json() -> None:
    spec = importlib.util.spec_from_file_location("blind4_cases", HERE / "cases.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
        text = module.cases_text()
    finally:
        sys.path.remove(str(HERE))
    assert (HERE / "cases.json").read_text() == text, \
        "tests/blind4/cases.json is not what cases.py makes: the expectations must not change after the first run"
