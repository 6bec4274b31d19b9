"""Issue 14, class 1, reader side: a value that is no measurement never vanishes, and never becomes a number.

ncu prints ``n/a`` for a metric it could not collect; broken or hostile files hold ``nan``, ``inf``, ``1e400``,
text, hex or a negative duration. Every reader keeps such a cell as a row with value NaN ("no value") and
records why in the measurement's ``unusable`` (``perfgate.table.Measurement``), for the compare stage to show. The
compare-side verdict on them (a gated metric with a value on one side only must not pass) is in
``test_issue14_other_branches.py``. Inputs are perfgate's own H100 captures with one cell changed.
"""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path
from types import SimpleNamespace

import pytest
from helpers.common import REPO

from perfgate.cli import main
from perfgate.collect import read_table
from perfgate.collect.screen import is_no_value, screen_values, value_problem
from perfgate.table import Measurement, make_table, restrict_metrics, unusable_notes, unusable_records

H100 = REPO / "tests" / "data" / "h100"
DETAILS = H100 / "vector_add.rerun.details-base.csv"
RAW = H100 / "vector_add.rerun.raw-base.csv"
DURATION = "gpu__time_duration.sum"

# (cell as written, words of the reason)
BAD_CELLS = [
    ("n/a", "'n/a': no value was recorded"),
    ("nan", "'nan': no value was recorded"),
    ("-nan", "'-nan': no value was recorded"),
    ("inf", "infinite"),
    ("-inf", "infinite"),
    ("1e400", "infinite"),
    ("fast", "'fast' is not a number"),
    ("0x1F", "'0x1F' is not a number"),
    ("1.2.3", "'1.2.3' is not a number"),
    ("79,392 ns", "'79,392 ns' is not a number"),
    ("-119,088", "-119088 ns is not a time anything ran for"),
    ("0", "0 ns is not a time anything ran for"),
]


def _details_with(tmp_path: Path, cell: str, metric: str = DURATION, unit: str = "ns") -> Path:
    rows = list(csv.reader(DETAILS.open(newline="")))
    header = rows[0]
    name, value = header.index("Metric Name"), header.index("Metric Value")
    [row] = [r for r in rows[1:] if r[name] == metric]
    row[value] = cell
    row[header.index("Metric Unit")] = unit
    out = io.StringIO()
    csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(rows)
    path = tmp_path / "cur.csv"
    path.write_text(out.getvalue())
    return path


def _raw_with(tmp_path: Path, cell: str, metric: str = DURATION) -> Path:
    header, units, *rows = list(csv.reader(RAW.open(newline="")))
    rows[0][header.index(metric)] = cell
    out = io.StringIO()
    csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows([header, units, *rows])
    path = tmp_path / "cur-raw.csv"
    path.write_text(out.getvalue())
    return path


def _the(measurement: Measurement, metric: str = DURATION) -> tuple[float, str]:
    """The one value of ``metric`` in the measurement's table and its unusable reason ("" when none)."""
    table = measurement.table
    [value] = table["value"][table["metric"] == metric].tolist()
    reasons = [r["reason"] for r in unusable_records(measurement) if r["metric"] == metric and r["kind"] != "region"]
    return value, (reasons[0] if reasons else "")


@pytest.mark.parametrize(("cell", "words"), BAD_CELLS, ids=[c for c, _ in BAD_CELLS])
@pytest.mark.parametrize("page", ["details", "raw"])
def test_csv_cell_that_is_no_measurement_is_kept_as_no_value_with_its_reason(tmp_path: Path, page: str, cell: str,
                                                                             words: str) -> None:
    path = _details_with(tmp_path, cell) if page == "details" else _raw_with(tmp_path, cell)
    for metrics in (None, ["gpu__time_duration.sum", "dram__bytes_read.sum"]):  # compare passes its metrics
        table = read_table(path, metrics)
        value, reason = _the(table)
        assert math.isnan(value), f"{cell!r} became {value}"
        assert words in reason, reason
    assert _the(read_table(DETAILS if page == "details" else RAW))[1] == ""  # the untouched file has none


def test_a_good_value_has_no_reason_and_the_others_are_untouched(tmp_path: Path) -> None:
    table = read_table(_details_with(tmp_path, "n/a"))
    assert [r["metric"] for r in unusable_records(table)] == [DURATION]
    good = read_table(DETAILS).table.to_frame()
    merged = table.table.to_frame().merge(good, on=["launch", "metric"], suffixes=("", "_good"))
    others = merged[merged["metric"] != DURATION]
    assert (others["value"].fillna(-1) == others["value_good"].fillna(-1)).all()


def test_text_in_a_string_metric_is_still_no_row(tmp_path: Path) -> None:
    """ncu's string-valued metrics (the device's name, a cache configuration) are no numbers, not broken ones."""
    table = read_table(DETAILS)
    assert "device__attribute_display_name" not in set(table.table["metric"])
    assert not unusable_records(table)


def test_text_in_a_metric_without_unit_is_unusable_only_when_it_is_known_or_asked_for(tmp_path: Path) -> None:
    path = _details_with(tmp_path, "lots", metric="launch__registers_per_thread", unit="")
    table = read_table(path)  # a catalog metric: kept as no value
    assert _the(table, "launch__registers_per_thread")[1] == "'lots' is not a number"
    path = _details_with(tmp_path, "lots", metric="launch__grid_dim_y", unit="")
    assert "launch__grid_dim_y" not in set(read_table(path).table["metric"])  # an unknown text metric: no row
    asked = read_table(path, ["launch__grid_dim_y", DURATION])  # asked for by name: it is meant as a number
    assert _the(asked, "launch__grid_dim_y")[1] == "'lots' is not a number"


def test_section_labels_carry_their_reason_to_the_metric_name(tmp_path: Path) -> None:
    """The details page's default "Duration" label, mapped to gpu__time_duration.sum, keeps the cell's reason."""
    rows = list(csv.reader(DETAILS.open(newline="")))
    header = rows[0]
    name, section, unit, value = (header.index(c) for c in ("Metric Name", "Section Name", "Metric Unit",
                                                               "Metric Value"))
    for row in rows[1:]:
        if row[name] == DURATION:
            row[name], row[section], row[unit], row[value] = "Duration", "GPU Speed Of Light Throughput", "usecond", \
                "n/a"
    path = tmp_path / "labels.csv"
    with path.open("w", newline="") as fh:
        csv.writer(fh, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(rows)
    value, reason = _the(read_table(path))
    assert math.isnan(value) and reason == "'n/a': no value was recorded"


BENCH_STATS = {"min": 0.001, "max": 0.002, "mean": 0.0015, "stddev": 0.0001, "median": 0.0015, "iqr": 0.0002,
               "q1": 0.0012, "q3": 0.0017, "rounds": 10, "ops": 666.0}


def _bench(tmp_path: Path, **stats: object) -> Path:
    document = {"machine_info": {"cpu": {"brand_raw": "Test CPU"}}, "version": "5.1.0",
                "benchmarks": [{"name": "test_x", "fullname": "t.py::test_x", "group": None,
                                "stats": {**BENCH_STATS, **stats}}]}
    path = tmp_path / "bench.json"
    path.write_text(json.dumps(document).replace('"BIG"', "1e400"))
    return path


@pytest.mark.parametrize(("value", "words"), [
    ("fast", "'fast' is not a number"), (True, "true is not a number"), ([0.1], "a list is not a number"),
    ({"s": 1}, "an object is not a number"), ("BIG", "infinite"), (-0.001, "is not a time anything ran for"),
    (0, "0 s is not a time anything ran for"),
])
def test_benchmark_statistic_that_is_no_time_is_kept_as_no_value(tmp_path: Path, value: object, words: str) -> None:
    table = read_table(_bench(tmp_path, min=value))
    got, reason = _the(table, "time.min")
    assert math.isnan(got) and words in reason, reason
    assert _the(table, "time.median") == (0.0015, "")


def test_a_zero_spread_is_a_measurement(tmp_path: Path) -> None:
    table = read_table(_bench(tmp_path, stddev=0, iqr=0))
    assert _the(table, "time.stddev") == (0.0, "") and _the(table, "time.iqr") == (0.0, "")


def test_a_null_statistic_is_not_measured(tmp_path: Path) -> None:
    table = read_table(_bench(tmp_path, median=None))
    assert "time.median" not in set(table.table["metric"]) and not unusable_records(table)


@pytest.mark.parametrize("data", [[True, 0.001, 0.001], [0.001, -0.001, 0.001], [0.001, 0, 0.001], ["0.001"], "x",
                                  ["BIG"]])
def test_raw_timings_that_are_no_times_refuse_the_file(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                       data: object) -> None:
    path = _bench(tmp_path, data=data)
    assert main(["compare", str(path), str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "benchmarks[0].stats.data must be a list of raw timings" in err


class _Metric(SimpleNamespace):
    def value(self) -> object:
        return self.raw

    def metric_type(self) -> int:
        return self.kind

    def unit(self) -> str:
        return "ns"


@pytest.mark.parametrize(("raw", "kind", "expected", "words"), [
    (79392, 1, 79392.0, None), (None, 1, math.nan, "'n/a': no value was recorded"),
    (float("nan"), 1, math.nan, "'nan': no value was recorded"), ("fast", 1, math.nan, "'fast' is not a number"),
    (10**400, 1, math.nan, "beyond float range"), ("CachePreferNone", 0, None, None), (None, 0, None, None),
])
def test_ncu_report_values(raw: object, kind: int, expected: float | None, words: str | None) -> None:
    from perfgate.collect.ncu_rep import _number

    value, reason = _number(_Metric(raw=raw, kind=kind))
    assert (value is None and expected is None) or (value is not None and expected is not None and (
        value == expected or (math.isnan(value) and math.isnan(expected))))
    assert (reason is None) == (words is None) and (words is None or words in str(reason))


def _table(rows: list[tuple[str, str, float]]) -> Measurement:
    return Measurement(make_table([{"kind": "kernel", "kernel": f"k{i}", "demangled": "", "region": "", "ordinal": 0,
                        "launch": i, "device": "GPU", "cc": "9.0", "grid": "", "block": "", "metric": metric,
                        "unit": unit, "value": value} for i, (metric, unit, value) in enumerate(rows)]))


def test_screen_values_judges_by_unit_and_metric() -> None:
    rows = [(DURATION, "ns", 0.0), (DURATION, "ns", -1.0), ("dram__bytes_read.sum", "byte", 0.0),
            ("dram__bytes_read.sum", "byte", -5.0), ("sm__throughput.avg.pct_of_peak_sustained_elapsed", "%", -0.1),
            ("some__signed_thing", "", -3.0), ("lts__t_sectors.sum", "sector", math.inf),
            ("time.stddev", "s", 0.0), ("time.min", "s", 0.0)]
    screened = screen_values(_table(rows))
    kept = screened.table["value"].tolist()
    assert math.isnan(kept[0]) and math.isnan(kept[1])  # a duration of 0 or less
    assert kept[2] == 0.0 and math.isnan(kept[3])  # no bytes is fine, negative bytes are not
    assert math.isnan(kept[4]) and kept[5] == -3.0  # a percentage has a unit; a unitless metric may be signed
    assert math.isnan(kept[6]) and kept[7] == 0.0 and math.isnan(kept[8])
    assert [r["launch"] for r in screened.unusable] == [0, 1, 3, 4, 6, 8]
    assert value_problem(DURATION, "ns", 5.0) is None


def test_records_follow_restrict_metrics_and_notes_say_where() -> None:
    table = screen_values(_table([(DURATION, "ns", -1.0), ("dram__bytes_read.sum", "byte", -5.0)]))._replace(
        source="cur.csv")
    assert unusable_notes(table) == [
        "cur.csv: k0 #0: gpu__time_duration.sum has no usable value (-1 ns is not a time anything ran for)",
        "cur.csv: k1 #0: dram__bytes_read.sum has no usable value (-5 byte is negative)"]
    kept = restrict_metrics(table, [DURATION])
    assert [r["metric"] for r in kept.unusable] == [DURATION]
    assert unusable_notes(table, [DURATION], limit=0) == ["cur.csv: 1 more value without a usable value"]
    assert is_no_value("'n/a': no value was recorded") and not is_no_value("'x' is not a number")


def test_a_region_total_over_a_launch_without_value_is_no_value_with_a_reason(tmp_path: Path) -> None:
    from perfgate.regions import with_region_totals

    measurement = with_region_totals(read_table(_raw_with(tmp_path, "n/a")))
    table = measurement.table.to_frame()
    totals = table[(table["kind"] == "region") & (table["metric"] == DURATION)]
    assert totals["value"].isna().all()
    reasons = {r["kernel"]: r["reason"] for r in unusable_records(measurement) if r["kind"] == "region"}
    assert reasons == {"vector_add": "1 of the 1 launch in it has no usable value"}


@pytest.mark.parametrize("column", ["Metric Value", "Metric Name"])
def test_details_csv_without_its_value_or_name_column_is_unusable_input(capsys: pytest.CaptureFixture[str],
                                                                        tmp_path: Path, column: str) -> None:
    """It used to read as a raw page with no metric: every launch "no data", and compare passed or said missing."""
    rows = list(csv.reader(DETAILS.open(newline="")))
    drop = rows[0].index(column)
    path = tmp_path / "cut.csv"
    with path.open("w", newline="") as fh:
        csv.writer(fh, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(r[:drop] + r[drop + 1:] for r in rows)
    for args in (["compare", DETAILS, path], ["compare", path, DETAILS], ["baseline", path, "-d", tmp_path / "b"]):
        assert main([str(a) for a in args]) == 2
        err = capsys.readouterr().err
        assert err == f'perfgate: error: {path}: the details CSV has no "{column}" column (the file is truncated or ' \
                      "was edited: export it again with 'ncu -i REPORT --csv --page raw')\n"
    assert not (tmp_path / "b").exists()


# ---------------------------------------------------------------- baselines

def _baseline(tmp_path: Path, capsys: pytest.CaptureFixture[str], source: Path = H100 / "vector_add.ncu-rep") -> Path:
    assert main(["baseline", str(source), "-d", str(tmp_path / "b"), "--name", "v"]) == 0
    capsys.readouterr()
    [path] = (tmp_path / "b").glob("*/v.json")
    return path


def _edit(path: Path, change) -> None:
    document = json.loads(path.read_text())
    change(document)
    path.write_text(json.dumps(document))


@pytest.mark.parametrize(("change", "words"), [
    (lambda d: d.update(entries=[]), "it has no entries, so it would gate nothing"),
    (lambda d: d["entries"][0]["metrics"][DURATION].update(value=-79392), "value -79392 ns is not a time"),
    (lambda d: d["entries"][0]["metrics"][DURATION].update(value=0), "value 0 ns is not a time"),
    (lambda d: d["entries"][0]["metrics"]["dram__bytes_read.sum"].update(value=-1), "value -1 byte is negative"),
    (lambda d: d["entries"][0]["metrics"][DURATION].update(unit=["ns"]), "unit must be a string"),
    (lambda d: d["entries"][0]["metrics"][DURATION].update(note="x"), 'must be an object with "value" and "unit"'),
    (lambda d: d.update(settings={"clock_control": {"nested": [1]}}), '"settings" must be an object of plain values'),
    (lambda d: d.update(source=5), '"source" must be a string'),
    (lambda d: d["entries"][0].update(name="k" * 70_000), "a kernel name of 70,000 characters"),
])
def test_a_baseline_that_gates_nothing_or_holds_no_measurement_is_refused(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, change, words: str) -> None:
    path = _baseline(tmp_path, capsys)
    _edit(path, change)
    assert main(["compare", str(path), str(H100 / "vector_add.rerun.ncu-rep")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(path) in err and words in err, err


@pytest.mark.parametrize(("change", "words"), [
    (lambda e: e["metrics"]["time.min"].update(value=-0.001), "value -0.001 s is not a time anything ran for"),
    (lambda e: e["metrics"]["time.min"].update(value=0), "value 0 s is not a time anything ran for"),
    (lambda e: e.update(samples=[True, 0.001, 0.002]), "samples must be a list of raw timings"),
    (lambda e: e.update(samples=[0.001, -0.002]), "samples must be a list of raw timings"),
    (lambda e: e.update(samples=[0.001, 0]), "samples must be a list of raw timings"),
])
def test_benchmark_baselines_with_impossible_times_are_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                               change, words: str) -> None:
    bench = _bench(tmp_path, data=[0.001, 0.0011, 0.0012])
    path = _baseline(tmp_path, capsys, bench)
    _edit(path, lambda d: change(d["entries"][0]))
    assert main(["compare", str(path), str(bench)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and words in err, err


def test_baseline_refuses_a_report_whose_gated_value_is_broken(capsys: pytest.CaptureFixture[str],
                                                               tmp_path: Path) -> None:
    """It would keep null for it: that launch would never be gated again."""
    raw = _raw_with(tmp_path, "fast")
    assert main(["baseline", str(raw), "-d", str(tmp_path / "b")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "vector_add [vector_add] #0: gpu__time_duration.sum has no usable value " \
                                    "('fast' is not a number)" in err and "--metrics" in err
    assert not (tmp_path / "b").exists()


def test_baseline_keeps_a_value_ncu_did_not_record_as_null(capsys: pytest.CaptureFixture[str],
                                                           tmp_path: Path) -> None:
    """ncu's n/a is what ncu said (real reports have launches without data): stored as null, as before."""
    raw = _raw_with(tmp_path, "n/a")
    assert main(["baseline", str(raw), "-d", str(tmp_path / "b"), "--name", "v"]) == 0
    capsys.readouterr()
    [path] = (tmp_path / "b").glob("*/v.json")
    [kernel] = [e for e in json.loads(path.read_text())["entries"] if e["kind"] == "kernel"]
    assert kernel["metrics"][DURATION]["value"] is None
    assert kernel["metrics"]["dram__bytes_read.sum"]["value"] > 0
