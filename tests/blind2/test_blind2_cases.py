"""The committed expectations of blind set 2 are what cases.py makes (the runner refuses to run otherwise)."""
from __future__ import annotations

import importlib.util
from pathlib import Path

HERE = Path(__file__).resolve().parent


def test_cases_json_is_what_cases_py_makes() -> None:
    spec = importlib.util.spec_from_file_location("blind2_cases", HERE / "cases.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert (HERE / "cases.json").read_text() == module.cases_text()
