"""Thresholds learned from history: the documented rule, the hand-set ceiling, "insufficient data" said out
loud, and ``perfgate compare --history`` on the real H100 reruns."""

from __future__ import annotations

import json
import lzma
import math
from pathlib import Path

import numpy as np
import pytest

from perfgate.cli import main
from perfgate.history.noise import FLOOR, learn, series_threshold, series_thresholds, small_sample_sigmas
from perfgate.history.series import Series
from perfgate.metrics import Threshold

REPO = Path(__file__).resolve().parents[2]
H100 = REPO / "tests" / "data" / "h100"
TIME = "gpu__time_duration.sum"


def _series(kernel: str, values: np.ndarray, metric: str = TIME) -> Series:
    facts = {"gpu": "H100", "test": "t", "kind": "kernel", "kernel": kernel, "region": "", "metric": metric,
             "unit": "ns", "direction": "lower"}
    return Series(hash(kernel) % 1000, facts, np.arange(len(values)), values)


def test_the_rule() -> None:
    rng = np.random.default_rng(1)
    steady = 100 + rng.normal(0, 0.4, 20)
    sigmas = small_sample_sigmas(20)  # 4 robust sigmas, widened for a spread estimated from 20 values
    assert 5.0 < sigmas < 5.2
    assert series_threshold(steady) == pytest.approx(sigmas * 1.4826 * np.median(np.abs(steady - np.median(steady)))
                                                     / np.median(steady))
    assert series_threshold(np.full(20, 7.0)) == FLOOR  # an exact counter: the floor
    hand_set = {TIME: Threshold(relative=0.05, absolute=2000.0)}
    noisier = 100 + rng.normal(0, 0.5, 20)
    learned = series_thresholds(learn([_series("a", steady), _series("b", noisier)], hand_set).series)
    assert set(learned) == {("a", "", TIME), ("b", "", TIME)}  # each series its own
    for kernel, values in (("a", steady), ("b", noisier)):
        assert learned[(kernel, "", TIME)] == Threshold(relative=math.ceil(series_threshold(values) * 1000) / 1000,
                                                        absolute=2000.0)  # the hand-set absolute part is kept
    assert learned[("a", "", TIME)].relative < learned[("b", "", TIME)].relative < 0.05
    noisy = learn([_series("c", 100 + rng.normal(0, 5, 20))], hand_set)
    assert list(noisy.series.values()) == [hand_set[TIME]]  # never above the hand-set threshold


def test_insufficient_data_is_said() -> None:
    hand_set = {TIME: Threshold(relative=0.05)}
    learned = learn([_series("a", np.full(20, 100.0)), _series("b", np.full(3, 100.0))], hand_set)
    assert series_thresholds(learned.series) == {("a", "", TIME): Threshold(relative=FLOOR)}  # b keeps the 5%
    assert learned.notes == ["history: gpu__time_duration.sum gated at 0.5% in 1 series (each learned from its own "
                             "spread on the base branch; hand-set 5%)",
                             "history: insufficient data for 1 series of gpu__time_duration.sum (fewer than 5 "
                             "base-branch runs): its hand-set threshold 5% applies"]
    unseen = learn([_series("a", np.full(20, 100.0))], hand_set, wanted={("H100", "kernel", "new", "")})
    assert unseen.series == {}  # no series of the current run: nothing learned, and said with why
    assert unseen.notes == ["history: no threshold learned: none of the 1 kernel and regions this run measured has a "
                            "series on the base branch (its kernels and regions were never recorded on it); the "
                            "hand-set thresholds apply"]
    elsewhere = learn([_series("new", np.full(20, 100.0))], hand_set, wanted={("unknown", "kernel", "new", "")})
    assert elsewhere.notes[-1].startswith("history: no threshold learned: none of the 1 kernel and regions this run "
                                          "measured has a series on the base branch (the branch records GPU H100, "
                                          "this run unknown)")


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


def test_a_threshold_learned_from_few_runs_keeps_its_false_alarm_rate() -> None:
    """4 robust sigmas of a spread measured on 6 runs fail about 1 unchanged run in 18 (the spread is often half the
    true one); widened by Student's t for 5 degrees of freedom, about 1 in 300."""
    rng = np.random.default_rng(35)
    runs = 1 + 0.01 * rng.standard_normal((4000, 7))  # 4,000 series of 6 recorded runs and one more, unchanged
    learned = np.array([series_threshold(values[:6]) for values in runs])
    change = np.abs(runs[:, 6] / np.median(runs[:, :6], axis=1) - 1)
    assert np.mean(change > learned) < 1 / 150
    assert np.mean(change > np.maximum(learned * 4.0 / small_sample_sigmas(6), FLOOR)) > 1 / 30  # 4 sigmas
    assert small_sample_sigmas(6) > 3 * small_sample_sigmas(1000) > 3 * 4.0 * 0.99


def test_each_series_is_gated_at_its_own_learned_threshold(tmp_path: Path) -> None:
    from helpers.history import baseline_file, compare_json, record_runs

    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    rng = np.random.default_rng(26)
    # a steady kernel (0.1% noise) and a noisy one (2%) on the base branch, both around 100 us
    record_runs(tmp_path, url, [{"steady": 100_000 * (1 + 0.001 * a), "noisy": 100_000 * (1 + 0.02 * b)}
                            for a, b in rng.standard_normal((12, 2))])
    current = baseline_file(tmp_path / "cur.json", {"steady": 103_000.0, "noisy": 103_000.0})  # both +3%
    status, report = compare_json(tmp_path, str(current), "--history", url, "--threshold", f"{TIME}=10%")
    assert status == 1
    statuses = dict(zip(report["launches"]["kernel"], report["launches"]["status"]))
    assert statuses == {"steady": "regression", "noisy": "unchanged"}
    metrics = report["metrics"]
    shown = {report["launches"]["kernel"][launch]: metrics["threshold"][m]
             for launch, m in zip(report["results"]["launch"], report["results"]["metric"])
             if metrics["metric"][m] == TIME}
    assert float(shown["steady"].rstrip("%")) < 1.5 < 3 < float(shown["noisy"].rstrip("%")) <= 10
