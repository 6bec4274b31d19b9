"""The report's JSON Schema (``perfgate/schemas/report-v2.schema.json``): made from the contract's declarations
(``perfgate.report.contract``), it holds every report perfgate writes (``compare`` of each kind of real input,
the plugin's session report, ``merge``, a gate over a baselines folder), and the reports it refuses the reader
refuses too, with one line and exit status 2.

Record the schema again (after a change of the contract) with ``PERFGATE_RECORD_SCHEMA=1``.
"""

from __future__ import annotations

import json
import lzma
import os
import typing
from importlib import resources
from pathlib import Path
from typing import Any, Optional

import pytest
from helpers.benchmark_suite import run_virtual_benchmarks
from helpers.common import REPO, run_cli
from helpers.github_server import PR, FakeGitHub, actions_env, assert_clean, github, pull_request_event, run_publish
from helpers.github_server import REPO as GITHUB_REPO
from helpers.plugin import CORPUS, preload_heavy_modules, use_stub_ncu
from helpers.timeline import OURS

from perfgate.errors import InputError
from perfgate.report import (
    GROUP_COLUMNS,
    LAUNCH_COLUMNS,
    METRIC_COLUMNS,
    RESULT_COLUMNS,
    ComparisonInfo,
    GroupTable,
    LaunchTable,
    MetricTable,
    Report,
    ResultTable,
    load_report,
    validate_report,
)
from perfgate.report.contract import OPTIONAL_LAUNCHES, OPTIONAL_REPORT_FIELDS, REPORT_FIELDS, TABLES
from perfgate.report.schema import SCHEMA_PATH, report_schema, schema_text

jsonschema = pytest.importorskip("jsonschema", reason="the test extra installs jsonschema")
__all__ = ["github"]
pytest_plugins = ("pytester",)
preload_heavy_modules()

SHIPPED = REPO / "perfgate" / SCHEMA_PATH
DATA = REPO / "tests" / "data"
H100 = DATA / "h100"
VALIDATOR = jsonschema.Draft202012Validator(report_schema())


def problems(document: Any) -> list[str]:
    """What the schema finds wrong with ``document`` (nothing: it holds)."""
    return [f"{'/'.join(map(str, error.absolute_path))}: {error.message}"[:300]
            for error in VALIDATOR.iter_errors(document)]


# ---------------------------------------------------------------- one declaration

def test_the_shipped_schema_is_made_from_the_contract() -> None:
    if os.environ.get("PERFGATE_RECORD_SCHEMA"):
        SHIPPED.write_text(schema_text(), encoding="utf-8")
    assert SHIPPED.read_text(encoding="utf-8") == schema_text(), "run with PERFGATE_RECORD_SCHEMA=1"
    assert resources.files("perfgate").joinpath(SCHEMA_PATH).read_text(encoding="utf-8") == schema_text()
    jsonschema.Draft202012Validator.check_schema(json.loads(SHIPPED.read_text(encoding="utf-8")))


_KIND_WORDS = {"str": "string", "str?": "string or null", "int": "integer", "int?": "integer or null",
               "row": "row number", "number?": "number or null", "bool?": "boolean or null",
               "strs?": "list of strings or null"}
DOCS = REPO / "docs" / "reports.md"
COLUMNS_START, COLUMNS_END = "<!-- columns -->\n", "<!-- end of columns -->\n"


def columns_markdown() -> str:
    """The reference's tables of columns (docs/reports.md), made from the contract."""
    parts = []
    for table, columns in TABLES.items():
        parts.append(f"\n**`{table}`**\n\n| column | type | meaning |\n|---|---|---|\n")
        for name, column in {**columns, **(OPTIONAL_LAUNCHES if table == "launches" else {})}.items():
            about = column.about + ("".join([" One of ", ", ".join(f"`{v}`" for v in column.values), "."])
                                    if column.values else "")
            if table == "launches" and name in OPTIONAL_LAUNCHES:
                about += " *Added within version 2.*"
            parts.append(f"| `{name}` | {_KIND_WORDS[column.kind]} | {about} |\n")
    return "".join(parts) + "\n"


def test_the_documented_columns_are_the_contracts() -> None:
    text = DOCS.read_text(encoding="utf-8")
    head, rest = text.split(COLUMNS_START)
    documented, tail = rest.split(COLUMNS_END)
    if os.environ.get("PERFGATE_RECORD_SCHEMA"):
        DOCS.write_text(head + COLUMNS_START + columns_markdown() + COLUMNS_END + tail, encoding="utf-8")
        documented = columns_markdown()
    assert documented == columns_markdown(), "run with PERFGATE_RECORD_SCHEMA=1"


# Each column kind and the type its TypedDict declares for its values.
KIND_TYPES = {"str": str, "str?": Optional[str], "int": int, "int?": Optional[int], "row": int,
              "number?": Optional[float], "bool?": Optional[bool], "strs?": Optional[list[str]]}


@pytest.mark.parametrize(("table", "typed"), [("launches", LaunchTable), ("metrics", MetricTable),
                                              ("results", ResultTable), ("groups", GroupTable)])
def test_the_typed_dicts_agree_with_the_declared_columns(table: str, typed: Any) -> None:
    hints = typing.get_type_hints(typed)
    declared = {**TABLES[table], **(OPTIONAL_LAUNCHES if table == "launches" else {})}
    assert list(hints) == list(declared)
    assert {name: hints[name] for name in hints} == {name: list[KIND_TYPES[c.kind]] for name, c in declared.items()}


def test_the_report_typed_dict_has_the_declared_fields() -> None:
    hints = list(typing.get_type_hints(Report))  # a Report is a ReportView and its file format's fields
    assert sorted(hints) == sorted(REPORT_FIELDS) and len(hints) == len(REPORT_FIELDS)
    schema = report_schema()
    assert list(schema["properties"]) == list(REPORT_FIELDS)
    assert set(schema["required"]) == set(REPORT_FIELDS) - set(OPTIONAL_REPORT_FIELDS)
    assert list(typing.get_type_hints(ComparisonInfo)) == list(schema["$defs"]["comparison"]["properties"])
    assert (LAUNCH_COLUMNS, METRIC_COLUMNS, RESULT_COLUMNS, GROUP_COLUMNS) == tuple(
        tuple(schema["$defs"][name]["required"]) for name in ("launches", "metrics", "results", "groups"))


# ---------------------------------------------------------------- every report perfgate writes holds

def _compared(tmp: Path, capsys: pytest.CaptureFixture[str], name: str, *args: object) -> dict[str, Any]:
    out = tmp / f"{name}.json"
    status, _, err = run_cli(capsys, "compare", *args, "--format", "json", "-o", out)
    assert status in (0, 1, 2) and out.is_file(), err  # 2: written, and it says "not measured"
    document: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    return document


COMPARED = {
    **{f"h100 {kernel} {page}": (H100 / f"{kernel}.rerun.{page}-base.csv", H100 / f"{kernel}.rerun.{page}.csv")
       for kernel in ("vector_add", "mlp") for page in ("details", "raw")},
    "h100 ncu-rep": (H100 / "vector_add.ncu-rep", H100 / "vector_add.rerun.ncu-rep"),
    "h100 nested regions": (H100 / "nested-regions.ncu-rep", H100 / "nested-regions.ncu-rep"),
    "ncu-csv rules": (DATA / "ncu-csv" / "details_rules.csv", DATA / "ncu-csv" / "details_rules.csv"),
    "ncu-csv nvtx": (DATA / "ncu-csv" / "details_nvtx.csv", DATA / "ncu-csv" / "raw_nvtx.csv"),
    "h200 triton raw": (DATA / "ncu-csv" / "triton_add_h200.raw.csv", DATA / "ncu-csv" / "triton_add_h200.raw.csv"),
    "h200 timeline cupti": (OURS / "mlp.cupti.a.cupti.json.gz", OURS / "mlp.cupti.b.cupti.json.gz"),
    "h200 timeline torch regressed": (OURS / "mlp.torch.a.pt.trace.json.gz", OURS / "mlp.sync.torch.pt.trace.json.gz"),
    "h200 timeline nvtx": (OURS / "mlp.cupti-nvtx.cupti.json.gz", OURS / "mlp.cupti-nvtx.cupti.json.gz"),
}


@pytest.mark.parametrize("name", sorted(COMPARED))
def test_compare_reports_hold(tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str) -> None:
    document = _compared(tmp_path, capsys, name.replace(" ", "-"), *COMPARED[name])
    assert document["launches"]["kernel"], "a report of nothing proves little"
    assert not problems(document)


def test_a_compare_of_corpus_reports_holds(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pair = (CORPUS / "ncu-rep" / "mlp-t4" / "report.ncu-rep", CORPUS / "ncu-rep" / "mlp-t4" / "report_v2.ncu-rep")
    if not all(path.is_file() for path in pair):
        pytest.skip(f"corpus {CORPUS} not available")
    assert not problems(_compared(tmp_path, capsys, "corpus", *pair))


def test_benchmark_reports_hold(pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]) -> None:
    base, cur = pytester.path / "base.json", pytester.path / "cur.json"
    run_virtual_benchmarks(pytester, base, 2000)
    run_virtual_benchmarks(pytester, cur, 6000)
    document = _compared(pytester.path, capsys, "benchmarks", base, cur)
    assert "benchmark" in document["launches"]["kind"] and not problems(document)


def test_a_gate_over_a_baselines_folder_and_merge_hold(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base, cur = H100 / "mlp.rerun.details-base.csv", H100 / "mlp.rerun.details.csv"
    status, _, err = run_cli(capsys, "baseline", base, "--dir", tmp_path / "baselines", "--name", "mlp")
    assert status == 0, err
    gated = _compared(tmp_path, capsys, "gated", tmp_path / "baselines", cur, "--name", "mlp")
    assert not problems(gated)
    timeline = _compared(tmp_path, capsys, "timeline", OURS / "mlp.torch.a.pt.trace.json.gz",
                         OURS / "mlp.sync.torch.pt.trace.json.gz")
    merged = tmp_path / "merged.json"
    status, _, err = run_cli(capsys, "merge", tmp_path / "gated.json", tmp_path / "timeline.json", "-o", merged)
    assert status in (0, 1), err
    document = json.loads(merged.read_text(encoding="utf-8"))
    assert len(document["launches"]["kernel"]) == len(gated["launches"]["kernel"]) + len(timeline["launches"]["kernel"])
    assert not problems(document)


def test_recorded_session_reports_and_what_the_reader_makes_of_them_hold() -> None:
    """Session reports the plugin wrote on the H100 and the H200 (older perfgates among them)."""
    paths = [path for path in sorted(DATA.glob("h*/**/sessions/*.json.xz")) if ".trace." not in path.name]
    assert len(paths) >= 20
    for path in paths:
        document = json.loads(lzma.decompress(path.read_bytes()))
        assert document["version"] == 1 or not problems(document), path
        assert not problems(validate_report(document, path.name)), path


PERF_TEST = """
def test_mlp(perfgate):
    for name in ("layer0", "layer1"):
        with perfgate.region(name):
            pass
"""


def test_the_plugins_session_report_holds(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """A real session under both sources (the stub ncu, a trace recorded on an H200), updated then regressed."""
    pytester.makepyfile(test_perf=PERF_TEST)
    ncu, _ = use_stub_ncu(pytester, monkeypatch, also_clear=("PERFGATE_TIMELINE",))
    monkeypatch.setenv("PERFGATE_STUB_REPORT", "regions")
    documents = []
    for nanoseconds, trace, args, outcome in ((10_000, "mlp.torch.a.pt.trace.json.gz", ["--perfgate-update"], "passed"),
                                              (20_000, "mlp.sync.torch.pt.trace.json.gz", [], "failed")):
        monkeypatch.setenv("PERFGATE_STUB_NS", f"test_mlp={nanoseconds}")
        monkeypatch.setenv("PERFGATE_TIMELINE_REPLAY", str(OURS / trace))
        result = pytester.runpytest("--perfgate", f"--perfgate-ncu={ncu}", "--perfgate-source=both", *args)
        result.assert_outcomes(**{outcome: 1})
        documents.append(json.loads((pytester.path / "perfgate-report.json").read_text(encoding="utf-8")))
    assert documents[1]["verdict"] == "fail" and {"kernel", "region"} <= set(documents[1]["launches"]["kind"])
    for document in documents:
        assert not problems(document)


# ---------------------------------------------------------------- what the schema refuses, the reader refuses

def _written() -> dict[str, Any]:
    """A real report (the H100's vector_add, compared with its baseline), as perfgate wrote it."""
    path = H100 / "sessions" / "gate1.json.xz"
    document: dict[str, Any] = json.loads(json.dumps(validate_report(json.loads(lzma.decompress(path.read_bytes())),
                                                                     path.name)))
    return document


GARBAGE: dict[str, Any] = {
    "not an object": lambda r: [r],
    "another format": lambda r: {**r, "format": "perfgate-baseline"},
    "version 3": lambda r: {**r, "version": 3},
    "version true": lambda r: {**r, "version": True},
    "verdict maybe": lambda r: {**r, "verdict": "maybe"},
    "launches a list": lambda r: {**r, "launches": [r["launches"]]},
    "results missing": lambda r: {k: v for k, v in r.items() if k != "results"},
    "a column not a list": lambda r: {**r, "metrics": {**r["metrics"], "unit": "ns"}},
    "a kernel null": lambda r: {**r, "launches": {**r["launches"], "kernel": [None] * len(r["launches"]["kernel"])}},
    "a status unknown": lambda r: {**r, "results": {**r["results"], "status": ["fine"] * len(r["results"]["status"])}},
    "a launch status info": lambda r: {**r, "launches": {**r["launches"],
                                                         "status": ["info"] * len(r["launches"]["status"])}},
    "a kind unknown": lambda r: {**r, "launches": {**r["launches"], "kind": ["<img>"] * len(r["launches"]["kind"])}},
    "a value a string": lambda r: {**r, "results": {**r["results"],
                                                    "current": ["<img src=x>"] * len(r["results"]["current"])}},
    "gated a string": lambda r: {**r, "results": {**r["results"], "gated": ["yes"] * len(r["results"]["gated"])}},
    "a line a string": lambda r: {**r, "launches": {**r["launches"], "line": ["3"] * len(r["launches"]["line"])}},
    "a metric row negative": lambda r: {**r, "results": {**r["results"], "metric": [-1] * len(r["results"]["metric"])}},
    "findings not strings": lambda r: {**r, "launches": {**r["launches"],
                                                         "findings_gone": [[1]] * len(r["launches"]["kernel"])}},
    "notes not strings": lambda r: {**r, "notes": [{"x": 1}]},
    "devices a string": lambda r: {**r, "comparisons": [{**r["comparisons"][0], "current_devices": "H100"}]},
    "unmeasured without a cause": lambda r: {**r, "unmeasured": [{"test": "t.py::x"}]},
}


@pytest.mark.parametrize("name", sorted(GARBAGE))
def test_garbage_is_refused_by_the_schema_and_by_every_reader(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                              name: str) -> None:
    written = _written()
    assert not problems(written) and written["results"]["status"]
    document = GARBAGE[name](written)
    assert problems(document)
    with pytest.raises(InputError) as refused:
        validate_report(document, "artifact.json")
    assert "\n" not in str(refused.value) and "artifact.json" in str(refused.value)
    path = tmp_path / "artifact.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    status, out, err = run_cli(capsys, "merge", path, "-o", tmp_path / "merged.json")
    assert status == 2 and out == "" and len(err.strip().splitlines()) == 1 and str(path) in err, err
    assert "Traceback" not in err and not (tmp_path / "merged.json").exists()


@pytest.mark.parametrize("name", ["a kind unknown", "a value a string", "verdict maybe", "findings not strings"])
def test_publish_refuses_garbage_in_one_line_and_posts_nothing(github: FakeGitHub, tmp_path: Path, name: str) -> None:
    path = tmp_path / "artifact.json"
    path.write_text(json.dumps(GARBAGE[name](_written())), encoding="utf-8")
    run = run_publish(path, actions_env(github, tmp_path, event=pull_request_event(tmp_path)))
    assert run.returncode == 2 and len(run.output.strip().splitlines()) == 1 and str(path) in run.output, run.output
    assert_clean(run)
    assert github.comments_on(GITHUB_REPO, PR) == [] and not github.check_runs


def test_files_that_are_no_json_report_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cases = {"empty.json": b"", "binary.json": bytes(range(256)), "cut.json": b'{"format": "perfgate-report", "ve',
             "nan.json": b'{"format": "perfgate-report", "version": 2, "verdict": NaN}', "deep.json": b"[" * 100_000}
    for name, data in cases.items():
        path = tmp_path / name
        path.write_bytes(data)
        with pytest.raises(InputError) as refused:
            load_report(path)
        assert "\n" not in str(refused.value) and name in str(refused.value)
        status, _, err = run_cli(capsys, "merge", path, "-o", tmp_path / "merged.json")
        assert status == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, (name, err)


def test_what_the_reader_accepts_it_returns_as_a_report_the_schema_holds() -> None:
    """The reader's repairs (an older report's missing columns and fields, a non-finite number, a summary that
    lies) give a report that keeps the contract."""
    document = _written()
    for name in ("baseline_kernel", "group", "findings_appeared", "findings_gone"):
        del document["launches"][name]
    del document["groups"], document["unmeasured"]
    assert not problems(document)  # an older version 2 report
    document["summary"] = {"regression": 0}
    document["generator"] = 7
    document["extra"] = {"ignored": True}
    assert problems(document)
    assert not problems(validate_report(document, "older.json"))
