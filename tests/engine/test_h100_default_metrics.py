"""perfgate's second H100 capture: the examples with today's default metric set (1 replay pass), a
deliberate regression, and the same pair profiled with ncu's ``detailed`` sections so its rules ran.

Files: ``tests/data/h100/default-metrics`` (see its README section in ``tests/data/h100/README.md``);
the committed ``baselines/nvidia-h100-80gb-hbm3-sm90`` were written by ``pytest --perfgate-update`` in the
same capture. No GPU is needed here; ``tests/gpu`` repeats the live checks on a GPU machine.
"""

from __future__ import annotations

import json
import lzma
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from helpers.common import run_perfgate

from perfgate.collect.baseline_json import read_baseline
from perfgate.errors import InputError
from perfgate.report import launch_rows, listed_summary, repeated_totals, result_rows

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data" / "h100" / "default-metrics"
VECTOR_ADD = "examples.test_cupy_raw_kernel__test_vector_add"
UNCOALESCED = "Uncoalesced Global Accesses"  # the rule's name and its message's title are the same


def _json(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def test_the_deliberate_regression_fails_against_the_committed_baseline_naming_kernel_and_metrics(
        tmp_path: Path) -> None:
    """The CuPy example with uncoalesced indexing (PERFGATE_EXAMPLE_REGRESSION=1), profiled by the plugin on
    the H100: duration ×4.7, L2 sectors ×3.6, same instructions and DRAM bytes within their limits."""
    done = run_perfgate("compare", "baselines", str(DATA / "vector_add.regressed.ncu-rep"), "--name", VECTOR_ADD,
                     "--metrics", "+lts__t_sectors.sum", "--threshold", "lts__t_sectors.sum=2%",  # as the test's marker
                     "--format", "json", "-o", str(tmp_path / "r.json"))
    assert done.returncode == 1, done.stderr
    report = _json(tmp_path / "r.json")
    moved = {(r["kind"], r["metric"]): r["change"] for r in result_rows(report) if r["status"] == "regression"}
    assert set(moved) == {(kind, metric) for kind in ("kernel", "region")
                          for metric in ("gpu__time_duration.sum", "lts__t_sectors.sum")}
    assert 3.5 < moved["kernel", "gpu__time_duration.sum"] < 4.0  # +374.6%
    assert 2.5 < moved["kernel", "lts__t_sectors.sum"] < 2.8  # +264.4%
    unchanged = {r["metric"] for r in result_rows(report) if r["status"] == "unchanged" and r["kind"] == "kernel"}
    assert {"smsp__inst_executed.sum", "dram__bytes_read.sum", "dram__bytes_write.sum"} <= unchanged


def test_one_kernel_in_its_region_is_listed_once_though_its_total_is_compared_too(tmp_path: Path) -> None:
    """The region ``vector_add`` holds one launch: its total repeats the kernel. Both are compared (a later
    split of the kernel still has a total to gate); the human formats list and count the change once."""
    done = run_perfgate("compare", str(DATA / "vector_add.ncu-rep"), str(DATA / "vector_add.regressed.ncu-rep"),
                     "--format", "json", "-o", str(tmp_path / "r.json"))
    assert done.returncode == 1
    report = _json(tmp_path / "r.json")
    assert report["summary"]["regression"] == 2 and Counter(r["kind"] for r in launch_rows(report)) == {
        "kernel": 1, "region": 1}
    assert repeated_totals(report) == {1} and listed_summary(report)["regression"] == 1
    text = run_perfgate("compare", str(DATA / "vector_add.ncu-rep"), str(DATA / "vector_add.regressed.ncu-rep")).stdout
    assert text.count("REGRESSION") == 1 and text.rstrip().endswith("FAIL: 1 regression in 1 compared (1 regression)")
    markdown = run_perfgate("compare", str(DATA / "vector_add.ncu-rep"), str(DATA / "vector_add.regressed.ncu-rep"),
                         "--format", "md").stdout
    assert markdown.startswith("### ❌ perfgate: 1 regression in 1 compared") and markdown.count("| ❌ |") == 1


def test_a_region_of_several_kernels_keeps_its_total_listed(tmp_path: Path) -> None:
    """The MLP's layers hold 2 launches each and backward 18: every total is its own row."""
    done = run_perfgate("compare", str(DATA / "mlp.ncu-rep.xz"), str(DATA / "mlp.rerun.ncu-rep.xz"),
                     "--format", "json", "-o", str(tmp_path / "r.json"))
    assert done.returncode == 0, done.stderr
    report = _json(tmp_path / "r.json")
    assert repeated_totals(report) == frozenset()
    assert listed_summary(report) == report["summary"] and sum(report["summary"].values()) == 26 + 6


def test_rule_findings_from_ncu_sections_explain_the_regression(tmp_path: Path) -> None:
    """The same pair profiled with ``--set detailed`` added: ncu's rules ran, and the one that names the
    cause appeared: uncoalesced global accesses."""
    done = run_perfgate("compare", str(DATA / "vector_add.rules.ncu-rep"), str(DATA / "vector_add.rules.regressed.ncu-rep"),
                     "--format", "json", "-o", str(tmp_path / "r.json"))
    assert done.returncode == 1
    [kernel] = [launch for launch in _json(tmp_path / "r.json")["launches"]["findings_appeared"] if launch]
    assert UNCOALESCED in kernel
    text = run_perfgate("compare", str(DATA / "vector_add.rules.ncu-rep"),
                     str(DATA / "vector_add.rules.regressed.ncu-rep")).stdout
    assert "why: ncu findings appeared: " in text and "Uncoalesced Global Accesses" in text
    html = run_perfgate("compare", str(DATA / "vector_add.rules.ncu-rep"), str(DATA / "vector_add.rules.regressed.ncu-rep"),
                     "--format", "html").stdout
    kernel_table = html[html.index('<table id="kernel-table"'):]
    kernel_table = kernel_table[:kernel_table.index("</table>")]
    assert "bound: memory" in kernel_table and "Uncoalesced Global Accesses" in kernel_table  # the first table's Why


def test_a_baseline_keeps_the_findings_so_the_plugin_can_say_what_appeared(tmp_path: Path) -> None:
    """``perfgate baseline`` (and ``--perfgate-update``) store each kernel's findings when the run collected
    sections; comparing that baseline with the regressed run names the new finding."""
    assert run_perfgate("baseline", str(DATA / "vector_add.rules.ncu-rep"), "-d", str(tmp_path), "--name", "v").returncode == 0
    [path] = tmp_path.rglob("v.json")
    assert _json(path)["settings"] == {"replay_passes": 20}  # the report's profiler__replayer_passes
    entries = _json(path)["entries"]
    kernels = [e for e in entries if e["kind"] == "kernel"]
    assert kernels and all("findings" in e for e in kernels)
    assert not any("findings" in e for e in entries if e["kind"] != "kernel")
    assert UNCOALESCED not in kernels[0]["findings"]
    assert read_baseline(path).findings == {0: tuple(kernels[0]["findings"])}
    done = run_perfgate("compare", str(tmp_path), str(DATA / "vector_add.rules.regressed.ncu-rep"), "--name", "v")
    assert done.returncode == 1 and "ncu findings appeared: " in done.stdout
    assert "Uncoalesced Global Accesses" in done.stdout


def test_without_sections_no_finding_is_stored_and_none_is_claimed(tmp_path: Path) -> None:
    """A metrics-only run carries no rule results: the baseline has no ``findings`` key (not known), and a
    comparison with a run that has them says nothing about findings rather than "all appeared"."""
    assert run_perfgate("baseline", str(DATA / "vector_add.ncu-rep"), "-d", str(tmp_path), "--name", "v").returncode == 0
    [path] = tmp_path.rglob("v.json")
    assert not any("findings" in entry for entry in _json(path)["entries"])
    assert read_baseline(path).findings is None
    done = run_perfgate("compare", str(tmp_path), str(DATA / "vector_add.rules.regressed.ncu-rep"), "--name", "v")
    assert done.returncode == 1 and "findings" not in done.stdout


@pytest.mark.parametrize("findings", ['"Uncoalesced"', "[1]", '[""]', "[" + ",".join(['"x"'] * 201) + "]",
                                      '["' + "x" * 501 + '"]'])
def test_a_bad_findings_value_in_a_baseline_is_one_clear_error(tmp_path: Path, findings: str) -> None:
    text = (REPO / "baselines" / "nvidia-h100-80gb-hbm3-sm90" / f"{VECTOR_ADD}.json").read_text(encoding="utf-8")
    path = tmp_path / "b.json"
    path.write_text(text.replace('"metrics": {', f'"findings": {findings}, "metrics": {{', 1), encoding="utf-8")
    with pytest.raises(InputError, match=r"entries\[0\]\.findings must be a list of at most 200 ncu rule findings"):
        read_baseline(path)


def test_the_committed_baselines_gate_the_runs_they_were_recorded_beside() -> None:
    for name, rerun in ((VECTOR_ADD, "vector_add.rerun.ncu-rep"),
                        ("examples.test_torch_mlp_layers__test_mlp_layer_by_layer", "mlp.rerun.ncu-rep.xz")):
        done = run_perfgate("compare", "baselines", str(DATA / rerun), "--name", name)
        assert done.returncode == 0, done.stdout + done.stderr


def test_dram_write_depends_on_the_replay_passes_the_metric_set_needs(tmp_path: Path) -> None:
    """What real ncu overturned: the same MLP, same code, same GPU, profiled with the former 10-pass metric set
    (``mlp.rerun.ncu-rep.xz``) against baselines from the 1-pass default set: most kernels read 12-31% more DRAM
    writes (small reductions 12 KB -> 1.4 MB), 16% for the whole model, while duration, instructions and DRAM
    reads agree. The report says how ncu replayed (``profiler__replayer_passes``), so DRAM write is shown but
    not judged: "not measured", exit 2, instead of 27 false alarms."""
    done = run_perfgate("compare", "baselines", "tests/data/h100/mlp.rerun.ncu-rep.xz", "--name",
                     "examples.test_torch_mlp_layers__test_mlp_layer_by_layer", "--format", "json", "-o", str(tmp_path / "r.json"))
    assert done.returncode == 2, done.stdout + done.stderr
    report = _json(tmp_path / "r.json")
    assert report["verdict"] == "not measured" and report["summary"]["regression"] == 0
    [entry] = report["unmeasured"]
    assert "ncu replayed the kernels differently than for the baseline (1 replay pass → 10)" in entry["cause"]
    write = [r for r in result_rows(report) if r["metric"] == "dram__bytes_write.sum"]
    assert write and not any(r["gated"] for r in write)
    assert sum(1 for r in write if r["change"] is not None and r["change"] > 0.10) == 27  # what would have failed
    [total] = [r["change"] for r in write if r["kernel"] == "total"]
    assert 0.15 < total < 0.17  # 319 MB -> 370 MB written by the whole MLP
    others = [r for r in result_rows(report) if r["gated"]]
    assert others and all(r["status"] == "unchanged" for r in others)
    assert all(abs(r["change"]) < 0.01 for r in others if r["metric"] != "gpu__time_duration.sum")
    assert run_perfgate("compare", "baselines", "tests/data/h100/mlp.rerun.ncu-rep.xz", "--name",
                     "examples.test_torch_mlp_layers__test_mlp_layer_by_layer").stdout.count("regression ") == 0


def test_five_unchanged_runs_with_the_default_metric_set_stay_well_inside_the_limits() -> None:
    """The five ``pytest --perfgate`` sessions of this capture (backward launches included): no regression,
    and no gated value used more than half of its limit."""
    from perfgate.metrics import parse_threshold

    worst = 0.0
    for number in range(1, 6):
        report = json.loads(lzma.decompress((DATA / "sessions" / f"gate{number}.json.xz").read_bytes()))
        assert report["summary"]["regression"] == 0
        rows = [r for r in result_rows(report) if r["gated"] and r["baseline"] is not None]
        assert len({(r["test"], r["kind"], r["kernel"], r["region"], r["ordinal"]) for r in rows}) == 28 + 8
        for row in rows:
            limit = parse_threshold(row["threshold"])
            allowed = (limit.relative or 0) * abs(row["baseline"]) + (limit.absolute or 0)
            if allowed:
                worst = max(worst, abs(row["current"] - row["baseline"]) / allowed)
    assert worst < 0.5, worst
    regression = json.loads(lzma.decompress((DATA / "sessions" / "regression.json.xz").read_bytes()))
    assert regression["verdict"] == "fail"


@pytest.mark.parametrize(("before", "now", "said"), [
    ({"replay_passes": 1}, {"replay_passes": 13}, "1 replay pass → 13"),
    ({"replay_passes": 10}, {"replay_passes": 1}, "10 replay passes → 1"),
    ({"replay_passes": 10}, {"replay_passes": 13}, None),  # several and several: measured alike (within 4%)
    ({"replay_passes": 1}, {"replay_passes": 1}, None),
    ({}, {"replay_passes": 13}, None),  # a CSV export does not say
    ({"replay_passes": "1"}, {"replay_passes": 13}, None),  # not a count: not trusted
    ({"replay_passes": True}, {"replay_passes": 13}, None),
])
def test_replay_change_is_one_pass_against_several(before: dict[str, Any], now: dict[str, Any],
                                                   said: str | None) -> None:
    from perfgate.compare.replay import replay_change

    assert replay_change(before, now) == said


def test_reports_say_how_ncu_replayed_them() -> None:
    from perfgate.collect.ncu_rep import read_ncu_rep

    assert read_ncu_rep(DATA / "vector_add.ncu-rep").settings == {"replay_passes": 1}
    assert read_ncu_rep(DATA / "vector_add.rules.ncu-rep").settings == {"replay_passes": 20}
    assert read_ncu_rep(DATA.parent / "vector_add.ncu-rep").settings == {"replay_passes": 10}
