"""Blind set 5's cases reproduce: cases.py makes the committed cases.json, and every kind of case writes
files from the committed pools (no perfgate run)."""
from __future__ import annotations

import gzip
import importlib.util
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _cases_module():
    spec = importlib.util.spec_from_file_location("blind5_cases_under_test", HERE / "cases.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_cases_py_makes_the_committed_cases_json():
    assert (HERE / "cases.json").read_text() == _cases_module().cases_text()


def test_every_kind_of_case_writes_its_files_and_reruns_are_the_same(tmp_path):
    _cases_module()
    sys.path.insert(0, str(HERE))
    from b5_generate import write_rerun

    doc = json.loads((HERE / "cases.json").read_text())
    seen: dict[str, dict] = {}
    for case in doc["cases"]:
        seen.setdefault(case["kind"] + ("+edit" if case.get("edit") else ""), case)
    assert set(seen) == {"sess", "pool", "clock", "bench", "trace", "trace+edit"}
    for kind, case in seen.items():
        a = write_rerun(case, doc["seed"], 0, tmp_path / f"{kind}-a")
        b = write_rerun(case, doc["seed"], 0, tmp_path / f"{kind}-b")
        assert a["base"].read_bytes() == b["base"].read_bytes()
        assert a["cur"].read_bytes() == b["cur"].read_bytes()
    edited = write_rerun(seen["trace+edit"], doc["seed"], 0, tmp_path / "edited")
    base = json.loads(gzip.decompress(edited["base"].read_bytes()))
    cur = json.loads(edited["cur"].read_text())
    assert len(cur["traceEvents"]) == len(json.loads(gzip.decompress(
        (HERE.parents[1] / "tests/data/h200/timeline/mlp.torch.b.pt.trace.json.gz").read_bytes()))["traceEvents"])
    assert base["traceEvents"]


def test_insert_time_shifts_what_follows_and_stretches_what_spans():
    sys.path.insert(0, str(HERE))
    from b5_generate import insert_time

    events = [{"ts": 0.0, "dur": 10.0}, {"ts": 5.0, "dur": 1.0}, {"ts": 20.0, "dur": 2.0}, {"ph": "M"}]
    insert_time(events, 5.5, 3.0)
    assert events[:3] == [{"ts": 0.0, "dur": 13.0}, {"ts": 5.0, "dur": 4.0}, {"ts": 23.0, "dur": 2.0}]
