"""Blind timeline set 2 reproduces: cases.py makes the committed cases.json (run.py refuses to run otherwise), and
the edits written from the corpus are the same each time and do what their case says (no perfgate run)."""
from __future__ import annotations

import importlib.util
import json
import sqlite3
import sys
from pathlib import Path
from types import ModuleType

import pytest

HERE = Path(__file__).resolve().parent


def _load(name: str, path: Path) -> ModuleType:
    sys.path.insert(0, str(HERE))
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_cases_json_is_what_cases_py_makes() -> None:
    assert (HERE / "cases.json").read_text() == _load("blind_timeline2_cases", HERE / "cases.py").cases_text()


@pytest.fixture
def generate() -> ModuleType:
    module = _load("blind_timeline2_generate", HERE / "t2_generate.py")
    if not module.corpus_dir().is_dir():
        pytest.skip(f"corpus {module.corpus_dir()} not available (set PERFGATE_CORPUS to ../shared/corpus)")
    return module


def _case(cid: str) -> dict:
    return next(c for c in json.loads((HERE / "cases.json").read_text())["cases"] if c["id"] == cid)


def test_a_starved_step_moves_each_steps_first_gpu_work_and_reruns_are_the_same(generate: ModuleType,
                                                                               tmp_path: Path) -> None:
    chrome = _load("t2_chrome", HERE / "t2_chrome.py")
    case = _case("starved-amp-fp32-20ms-each-step")
    a = generate.write_rerun(case, 2, 0, tmp_path / "a")
    b = generate.write_rerun(case, 2, 0, tmp_path / "b")
    assert a["cur"].read_bytes() == b["cur"].read_bytes()
    leads = []
    for path in (a["base"], a["cur"]):
        events = chrome.load(path)["traceEvents"]
        by_corr = chrome.launches(events)
        ops = [e for e in chrome.gpu_ops(events) if chrome._corr(e) in by_corr]
        leads.append([min(e["ts"] for e in ops if r["ts"] <= by_corr[chrome._corr(e)]["ts"] <= r["ts"] + r["dur"])
                      - r["ts"] for r in chrome.ranges(events, "ProfilerStep#")])
    assert [round(c - b, 3) for b, c in zip(*leads)] == [20000.0] * 3


def test_a_jittered_rerun_moves_kernel_times_only_by_its_draw(generate: ModuleType, tmp_path: Path) -> None:
    chrome = _load("t2_chrome", HERE / "t2_chrome.py")
    files = generate.write_rerun(_case("rerun-jitter-hta-step"), 2, 1, tmp_path)
    base, cur = (chrome.gpu_ops(chrome.load(p)["traceEvents"]) for p in (files["base"], files["cur"]))
    assert len(base) == len(cur)
    assert all(float(e["dur"]).is_integer() for e in cur)  # the file's own resolution: whole microseconds
    assert sum(e["dur"] for e in cur) == pytest.approx(sum(e["dur"] for e in base), rel=0.05)


def test_a_stall_in_an_nsys_export_lengthens_the_range_around_it(generate: ModuleType, tmp_path: Path) -> None:
    files = generate.write_rerun(_case("procstart-nvfuser-stall-before-alloc"), 2, 0, tmp_path)
    spans = []
    for path in (files["base"], files["cur"]):
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        spans.append(con.execute("SELECT end - start FROM NVTX_EVENTS WHERE text = 'KernelExecutor::runFusion'")
                     .fetchone()[0])
        con.close()
    assert spans[1] - spans[0] == 50_000_000
