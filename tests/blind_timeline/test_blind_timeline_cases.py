"""The committed expectations of the blind timeline set are what cases.py makes (run.py refuses to run otherwise)."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def test_cases_json_is_what_cases_py_makes() -> None:
    sys.path.insert(0, str(HERE))
    try:
        spec = importlib.util.spec_from_file_location("blind_timeline_cases", HERE / "cases.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        assert (HERE / "cases.json").read_text() == module.cases_text()
    finally:
        sys.path.remove(str(HERE))
