"""``perfgate compare --history`` on ncu CSV details pages (issue 35, item 5; docs/history.md): a details page does
not name its GPU, which the history records as ``unknown`` and the thresholds must look up the same way; a kernel
launched repeatedly learns its threshold from its launches' spread, which it is judged by; and a run whose
thresholds could not be learned says why. Real SQLite and PostgreSQL histories, runs from the verdict families
(tests/verdicts/history_thresholds.py)."""

from __future__ import annotations

import json
import math
import random
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "verdicts"))
from helpers.history import history_url  # noqa: E402,F401  (a fixture)
from history_thresholds import PROGRAMS, judged, record_history, run, write_details  # noqa: E402

from perfgate.collect import read_table  # noqa: E402
from perfgate.history.db import open_history  # noqa: E402
from perfgate.history.keys import UNKNOWN_GPU, gpu_key  # noqa: E402
from perfgate.history.noise import MAD_TO_SIGMA, launch_values, learn, small_sample_sigmas  # noqa: E402
from perfgate.history.series import Series, load_branch  # noqa: E402
from perfgate.metrics import Threshold  # noqa: E402

TIME = "gpu__time_duration.sum"
STEADY_X40 = PROGRAMS[1]


def test_a_details_page_names_no_gpu_and_both_sides_of_the_history_key_it_unknown(tmp_path: Path) -> None:
    write_details(tmp_path / "run.csv", STEADY_X40, random.Random(1))
    assert set(read_table(tmp_path / "run.csv").table["device"].tolist()) == {""}
    assert gpu_key("") == gpu_key(None) == UNKNOWN_GPU and gpu_key("NVIDIA H100") == "NVIDIA H100"


def test_compare_with_history_learns_thresholds_for_details_pages(history_url: str, tmp_path: Path) -> None:  # noqa: F811
    rng = random.Random(7)
    record_history(tmp_path, history_url, STEADY_X40, rng)
    with open_history(history_url, create=False) as history:
        assert {s.facts["gpu"] for s in load_branch(history, "main").series} == {UNKNOWN_GPU}
    unchanged = judged(tmp_path, history_url, STEADY_X40, rng, 1.0)
    assert unchanged.learned and unchanged.verdict == "pass", unchanged.notes
    assert any(note.startswith(f"history: {TIME} gated at ") and "in 1 series of kernels launched repeatedly (each "
               "learned from the spread of its launches on the base branch" in note for note in unchanged.notes)
    slower = judged(tmp_path, history_url, STEADY_X40, rng, 1.08)
    assert slower.verdict == "fail"


def test_a_repeated_kernel_learns_from_its_launches_spread(history_url: str, tmp_path: Path) -> None:  # noqa: F811
    record_history(tmp_path, history_url, STEADY_X40, random.Random(3))
    with open_history(history_url, create=False) as history:
        branch = load_branch(history, "main")
        pooled = launch_values(history, branch)
    [kernel] = [s for s in branch.series if s.facts["kind"] == "kernel" and s.facts["metric"] == TIME]
    [total] = [s for s in branch.series if s.facts["kind"] == "region" and s.facts["metric"] == TIME]
    assert len(pooled[kernel.id]) == 8 * 40 and total.id not in pooled  # a total is one value a run
    hand_set = {TIME: Threshold(relative=0.05, absolute=2000.0)}
    learned = learn(branch.series, hand_set, launches=pooled).series
    values = pooled[kernel.id]
    spread = MAD_TO_SIGMA * float(np.median(np.abs(values - np.median(values)))) / float(np.median(values))
    by_kind = {key[2]: threshold.relative for key, threshold in learned.items() if key[-1] == TIME}
    assert by_kind["kernel"] == math.ceil(small_sample_sigmas(len(values)) * spread * 1000) / 1000
    from_medians = learn(branch.series, hand_set).series  # the run medians' spread: tighter than a launch's
    medians = kernel.values / np.median(kernel.values)
    assert MAD_TO_SIGMA * np.median(np.abs(medians - 1)) < spread
    assert [t.relative for k, t in from_medians.items() if k[2] == "kernel" and k[-1] == TIME][0] != by_kind["kernel"]


def test_learning_from_launches_needs_the_base_branch_runs_of_the_window(tmp_path: Path) -> None:
    facts = {"gpu": "unknown", "test": "", "kind": "kernel", "kernel": "k", "region": "step", "metric": TIME,
             "unit": "ns", "direction": "lower"}
    few = Series(1, facts, np.arange(3), np.full(3, 100.0))
    notes = learn([few], {TIME: Threshold(relative=0.05)}, launches={1: np.full(120, 100.0)}).notes
    assert notes == [f"history: insufficient data for 1 series of {TIME} (fewer than 5 base-branch runs): its "
                     "hand-set threshold 5% applies"]


def test_no_threshold_learned_is_said_with_its_reason(tmp_path: Path) -> None:
    from helpers.history import record_runs

    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    record_runs(tmp_path, url, [{"gemm_kernel": 100_000.0 + i} for i in range(6)])  # recorded on an H100
    rng = random.Random(2)
    write_details(tmp_path / "base.csv", STEADY_X40, rng)
    write_details(tmp_path / "cur.csv", STEADY_X40, rng)
    out = tmp_path / "cur.json"
    from perfgate.cli import main

    assert main(["compare", str(tmp_path / "base.csv"), str(tmp_path / "cur.csv"), "--history", url, "--format",
                 "json", "-o", str(out)]) == 0
    notes = json.loads(out.read_text(encoding="utf-8"))["notes"]
    assert any(note.startswith("history: no threshold learned: none of the 2 kernels and regions this run measured ") and
               "(the branch records GPU NVIDIA H100, this run unknown); the hand-set thresholds apply" in note
               for note in notes), notes


def test_a_threshold_without_a_relative_part_is_said_to_be_kept() -> None:
    facts = {"gpu": "unknown", "test": "", "kind": "kernel", "kernel": "k", "region": "", "metric": TIME,
             "unit": "ns", "direction": "lower"}
    learned = learn([Series(1, facts, np.arange(8), np.full(8, 100.0))], {TIME: Threshold(absolute=2000.0)})
    assert learned.series == {}
    assert learned.notes == [f"history: {TIME} keeps its hand-set threshold 2000: only a relative part is learned "
                             "from the history"]


@pytest.mark.parametrize("program", [PROGRAMS[1], PROGRAMS[3]], ids=["x40 steady", "x20 two kernels"])
def test_the_repeated_kernel_families_learn_and_hold(program: object, monkeypatch: pytest.MonkeyPatch) -> None:
    import history_thresholds

    monkeypatch.setattr(history_thresholds, "PROGRAMS", (program,))
    outcomes = run(seeds=1, unchanged=2, regressed=1)
    assert all(o.learned for o in outcomes)
    assert [o.verdict for o in outcomes] == ["pass", "pass", "fail"], [o.notes for o in outcomes]
