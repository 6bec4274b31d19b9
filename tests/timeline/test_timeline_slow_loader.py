"""The MLP example's slow data loader (``PERFGATE_EXAMPLE_SLOW_LOADER=1``) and the live source's ``perfgate.step()``,
without a GPU: the loader's iterator itself, the step region the live tracer records, and the verdict a starved
step gets, on the live H200 trace of the MLP test (``tests/data/h200/timeline-live``) with 20 ms of host time put
before its first layer. ``tests/gpu/device_session.sh`` (step ``loader``) checks the same on a GPU.
"""

from __future__ import annotations

import importlib.util
import json
import lzma
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from perfgate.plugin.tracer import _Regions
from perfgate.report import result_rows

REPO = Path(__file__).resolve().parents[2]
TRACE = REPO / "tests" / "data" / "h200" / "timeline-live" / "sessions" / "tl-sync.trace.cupti.json.xz"
WAIT_NS = 20_000_000


def _example() -> ModuleType:
    """The MLP example as far as it imports: where torch is missing its import skips after the loader's class."""
    spec = importlib.util.spec_from_file_location("mlp_example", REPO / "examples" / "test_torch_mlp_layers.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except pytest.skip.Exception:
        pass
    return module


@pytest.mark.parametrize(("switch", "slow"), [(None, False), ("0", False), ("1", True)])
def test_the_examples_loader_waits_only_when_asked(monkeypatch: pytest.MonkeyPatch, switch: str | None,
                                                    slow: bool) -> None:
    example = _example()
    if switch is None:
        monkeypatch.delenv("PERFGATE_EXAMPLE_SLOW_LOADER", raising=False)
    else:
        monkeypatch.setenv("PERFGATE_EXAMPLE_SLOW_LOADER", switch)
    batch = object()
    batches = example.Batches(batch)
    begin = time.perf_counter()
    assert [next(batches), next(iter(batches))] == [batch, batch]
    spent = time.perf_counter() - begin
    assert (spent >= 2 * example.SLOW_LOADER_S) if slow else (spent < example.SLOW_LOADER_S)


def test_a_step_is_a_region_outside_the_paths_of_those_inside_it() -> None:
    regions = _Regions()
    clock = iter(range(100, 200, 10))
    with regions.step(lambda: next(clock)), regions.entered("layer0", lambda: next(clock)):
        pass
    inner, step = regions.found
    assert (inner["name"], inner["path"], inner.get("step", False)) == ("layer0", "layer0", False)
    assert (step["name"], step["path"], step["step"], step["start"], step["end"]) == ("step", "step", True, 100, 130)


def _trace(tmp_path: Path, name: str, wait: int) -> Path:
    """The recorded trace with a step around its regions that opens 0.1 ms before the first, and ``wait`` ns of
    host time inside the step before it: every time stamp from the step's start on moves ``wait`` later."""
    document = json.loads(lzma.decompress(TRACE.read_bytes()))
    begin, last = document["regions"][0]["start"] - 100_000, document["regions"][-1]["end"]

    def moved(item: dict[str, Any]) -> dict[str, Any]:
        return {key: value + wait if key in ("start", "end", "timestamp") and isinstance(value, int)
                and value >= begin else value for key, value in item.items()}

    regions = _Regions()
    clock = iter((begin, last + wait))
    with regions.step(lambda: next(clock)):
        pass
    document.update(records=[moved(r) for r in document["records"]],
                    regions=[moved(r) for r in document["regions"]] + regions.found)
    path = tmp_path / f"{name}.cupti.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def test_a_starved_step_fails_on_its_wall_time_and_host_lead_with_no_kernel_blamed(tmp_path: Path) -> None:
    from perfgate.cli import main

    base, slow = _trace(tmp_path, "base", 0), _trace(tmp_path, "slow", WAIT_NS)
    report = tmp_path / "report.json"
    assert main(["compare", str(base), str(slow), "--format", "json", "--output", str(report)]) == 1
    rows = result_rows(json.loads(report.read_text(encoding="utf-8")))
    regressed = {(r["kind"], r["kernel"], r["metric"]) for r in rows if r["status"] == "regression"}
    assert regressed == {("region", "step", "timeline.wall_time"), ("region", "step", "timeline.host_lead"),
                         ("region", "step", "timeline.gpu_idle")}
    lead = next(r for r in rows if r["kernel"] == "step" and r["metric"] == "timeline.host_lead")
    assert lead["current"] - lead["baseline"] == WAIT_NS
    assert {r["status"] for r in rows if r["kind"] == "kernel"} == {"unchanged"}
    assert main(["compare", str(base), str(base)]) == 0
