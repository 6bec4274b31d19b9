"""Thresholds learned from history: the documented rule, the hand-set ceiling, "insufficient data" said out
loud, and ``perfgate compare --history`` on the real H100 reruns."""

from __future__ import annotations

import json
import lzma
from pathlib import Path

import numpy as np
import pytest

from perfgate.cli import main
from perfgate.history.noise import FLOOR, learn, series_threshold
from perfgate.history.series import Series
from perfgate.metrics import Threshold

REPO = Path(__file__).resolve().parents[1]
H100 = REPO / "tests" / "data" / "h100"
TIME = "gpu__time_duration.sum"


def _series(kernel: str, values: np.ndarray, metric: str = TIME) -> Series:
    facts = {"gpu": "H100", "test": "t", "kind": "kernel", "kernel": kernel, "region": "", "metric": metric,
             "unit": "ns", "direction": "lower"}
    return Series(hash(kernel) % 1000, facts, np.arange(len(values)), values)


def test_the_rule() -> None:
    rng = np.random.default_rng(1)
    steady = 100 + rng.normal(0, 0.4, 20)
    assert series_threshold(steady) == pytest.approx(4 * 1.4826 * np.median(np.abs(steady - np.median(steady)))
                                                     / np.median(steady))
    assert series_threshold(np.full(20, 7.0)) == FLOOR  # an exact counter: the floor
    hand_set = {TIME: Threshold(relative=0.05, absolute=2000.0)}
    learned = learn([_series("a", steady), _series("b", 100 + rng.normal(0, 0.5, 20))], hand_set)
    (spec,) = [t.spec for t in learned.thresholds.values()]
    assert 0.01 < learned.thresholds[TIME].relative < 0.05 and spec.endswith("+2000")  # the noisier one decides
    noisy = learn([_series("c", 100 + rng.normal(0, 5, 20))], hand_set)
    assert noisy.thresholds[TIME] == hand_set[TIME]  # never above the hand-set threshold


def test_insufficient_data_is_said() -> None:
    hand_set = {TIME: Threshold(relative=0.05)}
    learned = learn([_series("a", np.full(20, 100.0)), _series("b", np.full(3, 100.0))], hand_set)
    assert learned.thresholds == {}
    assert learned.notes == ["history: insufficient data for 1 series of gpu__time_duration.sum (fewer than 5 "
                             "base-branch runs): its hand-set threshold 5% applies"]
    unseen = learn([_series("a", np.full(20, 100.0))], hand_set, wanted={("H100", "kernel", "new", "")})
    assert unseen.thresholds == {} and unseen.notes == []  # no series of the current run: nothing learned


def test_compare_with_history_on_the_h100_reruns(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    sessions = H100 / "default-metrics" / "sessions"
    for index, name in enumerate(("update", "gate1", "gate2", "gate3", "gate4", "gate5")):
        report = tmp_path / f"{name}.json"
        report.write_bytes(lzma.decompress((sessions / f"{name}.json.xz").read_bytes()))
        assert main(["history", "record", str(report), "--db", url, "--commit", f"c{index}", "--branch", "main",
                     "--when", f"2026-11-22T0{index}:00:00Z"]) == 0
    out = tmp_path / "compare.json"
    pair = [str(H100 / "vector_add.rerun.raw-base.csv"), str(H100 / "vector_add.rerun.raw.csv")]
    assert main(["compare", *pair, "--history", url, "-o", str(out)]) == 0
    report = json.loads(out.read_text(encoding="utf-8"))
    thresholds = dict(zip(report["metrics"]["metric"], report["metrics"]["threshold"]))
    assert thresholds[TIME] != "5%+2000" and thresholds[TIME].endswith("%+2000")
    assert float(thresholds[TIME].split("%")[0]) < 5
    assert any(n.startswith(f"history: {TIME} gated at ") for n in report["notes"])

    assert main(["compare", *pair, "--history", url, "--history-branch", "nope", "-o", str(out)]) == 0
    report = json.loads(out.read_text(encoding="utf-8"))
    assert "history: insufficient data: no run of branch 'nope' is recorded; the hand-set thresholds apply" in \
        report["notes"]
    assert dict(zip(report["metrics"]["metric"], report["metrics"]["threshold"]))[TIME] == "5%+2000"
