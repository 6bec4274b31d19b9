"""perfgate's H200 capture: the examples' update, three gate runs of unchanged code, the deliberate
regression, and a run with ncu's sections (13 replay passes) against the 1-pass baselines.

Files: ``tests/data/h200`` (see its README); the committed ``baselines/nvidia-h200-sm90`` were written by
``pytest --perfgate-update`` in the same capture. No ``.ncu-rep`` came back from that machine, so these
tests read the session reports (perfgate's JSON report v2) and the ncu logs. No GPU is needed here.
"""

from __future__ import annotations

import json
import lzma
import re
import statistics
from pathlib import Path
from typing import Any

import pytest

from perfgate.report import result_rows, validate_report

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data" / "h200"
BASELINES = REPO / "baselines" / "nvidia-h200-sm90"
GATES = ("gate1", "gate2", "gate3")
DURATION, READ, WRITE = "gpu__time_duration.sum", "dram__bytes_read.sum", "dram__bytes_write.sum"
INSTRUCTIONS, L2 = "smsp__inst_executed.sum", "lts__t_sectors.sum"
MIB = 1 << 20
EXAMPLES = 28 + 8  # kernel launches (vector add, softmax, 26 of the MLP) and region totals
REPLAY_CAUSE = ("dram__bytes_write.sum not judged: ncu replayed the kernels differently than for the baseline "
                "(1 replay pass → 13)")


def _ncu_baselines() -> list[Path]:
    """The committed baselines of the ncu source (the timeline source's, ``*.timeline.json``, lie beside them)."""
    return sorted(p for p in BASELINES.glob("*.json") if not p.name.endswith(".timeline.json"))


def _session(name: str) -> Any:
    """One session report, read and checked as perfgate reads an untrusted report."""
    path = DATA / "sessions" / f"{name}.json.xz"
    return validate_report(json.loads(lzma.decompress(path.read_bytes())), str(path))


def _rows(name: str, metric: str | None = None, kind: str | None = None) -> list[dict[str, Any]]:
    return [r for r in result_rows(_session(name))
            if (metric is None or r["metric"] == metric) and (kind is None or r["kind"] == kind)]


def _key(row: dict[str, Any]) -> tuple[str, str, str, str, int]:
    return row["test"], row["kind"], row["kernel"], row["region"], row["ordinal"]


def _baseline_values() -> dict[tuple[str, str, str, str, int], dict[str, float]]:
    """(test, kind, name, region, ordinal) -> metric -> value, from the committed baseline files."""
    values = {}
    for path in _ncu_baselines():
        document = json.loads(path.read_text(encoding="utf-8"))
        for entry in document["entries"]:
            key = (document["source"], entry["kind"], entry["name"], entry["region"], entry["ordinal"])
            values[key] = {metric: fact["value"] for metric, fact in entry["metrics"].items()}
    return values


def _instructions_agree(rows: list[dict[str, Any]]) -> bool:
    """Instruction counts are exact for the same code, except cuBLAS's ``Kernel2`` (and the totals holding it),
    which moved by a few parts per million, as on the H100."""
    counts = [r for r in rows if r["metric"] == INSTRUCTIONS]
    return bool(counts) and all(r["change"] == 0 if r["kernel"] not in ("Kernel2", "backward", "total")
                                else abs(r["change"]) < 5e-6 for r in counts)


def _share_of_limit(row: dict[str, Any]) -> float:
    """The share of its threshold a gated value used (a change must exceed every part of ``5%+2000``)."""
    from perfgate.metrics import parse_threshold

    limit = parse_threshold(row["threshold"])
    allowed = max((limit.relative or 0) * abs(row["baseline"]), limit.absolute or 0)
    return abs(row["current"] - row["baseline"]) / allowed


def test_the_sessions_exited_as_recorded() -> None:
    lines = [line.split("\t") for line in (DATA / "sessions" / "times.tsv").read_text(encoding="utf-8").splitlines()]
    assert [(name, rc) for name, _, rc in lines] == [
        ("session-update", "0"), ("session-gate1", "0"), ("session-regression", "1"), ("session-gate2", "0"),
        ("session-gate3", "0"), ("session-replay", "0")]  # replay: "not measured" fails only under --perfgate-strict
    for name in ("update", *GATES, "regression", "replay"):
        assert _session(name)["comparisons"], name


@pytest.mark.parametrize("gate", GATES)
def test_three_unchanged_runs_pass_with_every_gated_value_inside_its_limit(gate: str) -> None:
    report = _session(gate)
    assert report["verdict"] == "pass" and not report["unmeasured"]
    assert {status: n for status, n in report["summary"].items() if n} == {"unchanged": EXAMPLES}
    gated = [r for r in _rows(gate) if r["gated"]]
    assert len({_key(r) for r in gated}) == EXAMPLES
    assert {r["status"] for r in gated} == {"unchanged"}
    assert {r["metric"] for r in gated} == {DURATION, READ, WRITE, INSTRUCTIONS, L2}
    assert _instructions_agree(gated)  # Kernel2 at most 2.5e-6
    # The most any value used of its limit, either way: 53% (gate1: a 21 µs reduce_kernel, +5.05%), 50%, 43%.
    assert max(_share_of_limit(r) for r in gated) < 0.6
    # The launches that write 1 MiB or more moved less than 3% (the MLP total at most 1.5%): 1-pass runs agree.
    writes = [r for r in gated if r["metric"] == WRITE and r["kind"] == "kernel" and r["baseline"] >= MIB]
    assert len(writes) == 22 and all(abs(r["change"]) < 0.03 for r in writes)
    [total] = [r for r in gated if r["metric"] == WRITE and r["kernel"] == "total"]
    assert abs(total["change"]) < 0.015
    for comparison in report["comparisons"]:
        assert comparison["settings"]["baseline"] == comparison["settings"]["current"]  # 1 pass, no sections


def test_the_deliberate_regression_fails_on_vector_add_naming_duration_and_l2_sectors() -> None:
    """``PERFGATE_EXAMPLE_REGRESSION=1`` (uncoalesced indexing): duration ×5.3, L2 sectors ×3.7, the same
    instructions and DRAM bytes within their limits."""
    report = _session("regression")
    assert report["verdict"] == "fail"
    assert {status: n for status, n in report["summary"].items() if n} == {"regression": 2}  # the kernel and its region
    [comparison] = report["comparisons"]
    assert comparison["test"] == "examples/test_cupy_raw_kernel.py::test_vector_add"
    rows = _rows("regression")
    assert {r["kernel"] for r in rows} == {"vector_add"}
    moved = {(r["kind"], r["metric"]): r["change"] for r in rows if r["status"] == "regression"}
    assert set(moved) == {(kind, metric) for kind in ("kernel", "region") for metric in (DURATION, L2)}
    assert 4.2 < moved["kernel", DURATION] < 4.4  # 74,880 -> 397,632 ns: +431.0%
    assert 2.6 < moved["kernel", L2] < 2.8  # +268.7%
    unchanged = {r["metric"]: r["change"] for r in rows if r["kind"] == "kernel" and r["status"] == "unchanged"}
    assert set(unchanged) == {READ, WRITE, INSTRUCTIONS} and unchanged[INSTRUCTIONS] == 0


def test_sections_replayed_in_13_passes_leave_dram_writes_unjudged_and_gate_the_rest() -> None:
    """``--perfgate-sections=SpeedOfLight,SourceCounters`` against the 1-pass baselines: exit 0 (not strict),
    "not measured", DRAM write shown but not judged on every launch, every other gated metric judged and
    unchanged."""
    report = _session("replay")
    assert report["verdict"] == "not measured"
    assert {status: n for status, n in report["summary"].items() if n} == {"unchanged": EXAMPLES}
    assert sorted(entry["test"] for entry in report["unmeasured"]) == sorted(c["test"] for c in report["comparisons"])
    assert len(report["unmeasured"]) == 3
    assert all(REPLAY_CAUSE in entry["cause"] and entry["launch"] == "every launch" for entry in report["unmeasured"])
    for comparison in report["comparisons"]:
        before, now = comparison["settings"]["baseline"], comparison["settings"]["current"]
        assert (before["replay_passes"], now["replay_passes"]) == (1, 13)
        assert (before["sections"], now["sections"]) == ("", "SpeedOfLight,SourceCounters")
    rows = _rows("replay")
    writes = [r for r in rows if r["metric"] == WRITE]
    assert len(writes) == EXAMPLES and not any(r["gated"] for r in writes)
    assert {(r["threshold"], r["status"]) for r in writes} == {("off", "info")}
    gated = [r for r in rows if r["gated"]]
    assert {r["metric"] for r in gated} == {DURATION, READ, INSTRUCTIONS, L2}
    assert all(len({r["metric"] for r in gated if _key(r) == key} - {L2}) == 3 for key in {_key(r) for r in rows})
    assert {r["status"] for r in gated} == {"unchanged"}


def test_replayed_runs_read_more_dram_writes_while_the_other_metrics_stay_put() -> None:
    """What the H200 confirms of the H100's finding: the same code replayed in 13 passes reads more DRAM writes
    on most launches (median +14% over those writing at least 1 MiB, +16.2% for the whole MLP), while
    duration, DRAM reads, instructions and L2 sectors move no more than in the 1-pass gates."""
    kernels = _rows("replay", kind="kernel")
    writes = [r for r in kernels if r["metric"] == WRITE and r["baseline"] >= MIB]
    assert len(writes) == 22
    assert statistics.median(r["change"] for r in writes) > 0.10  # +14.1%
    assert all(r["change"] > 0 for r in writes) and sum(r["change"] > 0.10 for r in writes) == 19
    assert max(r["change"] for r in writes) < 0.35  # +30.8%, a vectorized_elementwise_kernel of the MLP
    [total] = [r for r in _rows("replay", WRITE) if r["kernel"] == "total"]
    assert 0.16 < total["change"] < 0.165 and total["baseline"] < total["current"]  # 309.7 MB -> 359.8 MB
    small = [r for r in kernels if r["metric"] == WRITE and 0 < r["baseline"] < MIB]  # the five reduce_kernel
    assert len(small) == 5 and all(r["current"] > 500_000 > 20 * r["baseline"] for r in small)
    assert all(abs(r["change"]) < 0.05 for r in kernels if r["metric"] == DURATION)  # at most 4.03%
    assert all(abs(r["change"]) < 0.005 for r in kernels if r["metric"] == READ)  # at most 0.44%
    assert _instructions_agree(_rows("replay"))
    assert all(abs(r["change"]) < 0.005 for r in _rows("replay", L2))  # +0.29%


def test_ncu_logs_say_13_passes_per_launch_under_sections_and_1_without() -> None:
    passes = []
    for test in ("vector_add", "mlp", "softmax"):
        log = (DATA / f"replay.{test}.ncu.log").read_text(encoding="utf-8")
        passes += re.findall(r'^==PROF== Profiling "[^"]+".* - (\d+) pass(?:es)?$', log, flags=re.M)
    assert passes == ["13"] * 28
    command = (DATA / "replay.vector_add.ncu-command.txt").read_text(encoding="utf-8")
    assert "--section SpeedOfLight --section SourceCounters" in command and "--clock-control base" in command
    lines = [line.split("\t") for line in (DATA / "replay-passes.tsv").read_text(encoding="utf-8").splitlines()]
    assert lines[0] == ["session", "test", "launches", "passes per launch"]
    assert sum(int(launches) for session, _, launches, _ in lines[1:] if session == "replay") == 28
    assert {(session == "replay", per_launch) for session, _, _, per_launch in lines[1:]} == {(True, "13"),
                                                                                             (False, "1")}


def test_the_committed_baselines_are_what_the_update_session_wrote() -> None:
    """Every value the update session measured is in the committed files, and nothing else is (the files
    also keep the two shared-memory launch facts, which the report does not show); the gate sessions
    compared against exactly these values."""
    stored = _baseline_values()
    report = _session("update")
    assert {status: n for status, n in report["summary"].items() if n} == {"new": EXAMPLES}
    assert sorted(REPO / c["baseline"] for c in report["comparisons"]) == _ncu_baselines()
    measured = _rows("update")
    assert {_key(r) for r in measured} == set(stored)
    for row in measured:
        assert stored[_key(row)][row["metric"]] == row["current"], row
    for gate in (*GATES, "regression", "replay"):
        for row in _rows(gate):
            assert stored[_key(row)][row["metric"]] == row["baseline"], (gate, row)
    for comparison in report["comparisons"]:
        document = json.loads((REPO / comparison["baseline"]).read_text(encoding="utf-8"))
        assert document["settings"] == comparison["settings"]["current"]
        assert document["source"] == comparison["test"]
        assert document["device"] == {"name": "NVIDIA H200", "cc": "9.0"}
        assert comparison["current_devices"] == ["NVIDIA H200 (CC 9.0)"]


def test_the_committed_baselines_pass_perfgates_own_validation() -> None:
    from perfgate.collect.baseline_json import read_baseline

    for path in sorted(BASELINES.glob("*.json")):
        read_baseline(path)
    assert len(_ncu_baselines()) == 3 and len(list(BASELINES.glob("*.timeline.json"))) == 3
