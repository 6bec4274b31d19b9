"""What the structure-aware fuzz of every reader (``tests/robustness/fuzz_inputs.py``) found: each case once ended in
the last-resort "please report it" line, or wrote a character a terminal acts on raw into a JSON report. Each is now
one line naming the file, exit 2, or JSON whose strings show what they hold. Real files made from perfgate's own
fixtures, real CLI runs in this process."""

from __future__ import annotations

import gzip
import json
import lzma
import random
import sqlite3
from pathlib import Path
from typing import Any

import orjson
import pytest
from helpers.common import REPO, run_cli
from helpers.nsys_export import write_nsys_export
from helpers.timeline import OURS

from perfgate.text import inert_json, inert_json_bytes

BASELINE = (REPO / "baselines" / "nvidia-h200-sm90" /
            "examples.test_cupy_raw_kernel__test_vector_add.timeline.json")
# What a terminal or a CI log acts on that JSON may hold raw: DEL, a C1 control (0x9b is a one-byte CSI), the
# bidirectional override of Trojan Source, a zero-width space, a byte order mark, a line separator.
ACTING = "\x7f\x9b\u202e\u200b\ufeff\u2028"


def _one_line(status: int, err: str, path: Path, problem: str) -> None:
    assert status == 2, err
    assert err.count("\n") == 1 and err.startswith(f"perfgate: error: {path}: {problem}"), err
    assert "please report it" not in err


def _kineto(tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    good = tmp_path / "good.pt.trace.json"
    good.write_bytes(gzip.decompress((OURS / "vector_add.torch.pt.trace.json.gz").read_bytes()))
    return good, json.loads(good.read_text())


def _launch_calls(trace: dict[str, Any]) -> list[dict[str, Any]]:
    return [event for event in trace["traceEvents"] if event.get("cat") == "cuda_runtime"
            and isinstance(event.get("args"), dict) and "correlation" in event["args"]]


@pytest.mark.parametrize("trace_format", ["kineto", "cupti"])
def test_a_launch_calls_correlation_id_past_int64_is_one_line(trace_format: str, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """A launch call's correlation id of 1e308 (a GPU op's was already refused): OverflowError once the launches
    became int64 columns."""
    if trace_format == "kineto":
        good, trace = _kineto(tmp_path)
        _launch_calls(trace)[0]["args"]["correlation"] = -1e308
    else:
        good = tmp_path / "good.cupti.json"
        good.write_bytes(gzip.decompress((OURS / "vector_add.cupti.a.cupti.json.gz").read_bytes()))
        trace = json.loads(good.read_text())
        next(r for r in trace["records"] if "correlation_id" in r and "thread_id" in r)["correlation_id"] = 1e308
    bad = tmp_path / f"bad.{trace_format}.json"
    bad.write_text(json.dumps(trace))
    status, _, err = run_cli(capsys, "compare", good, bad)
    _one_line(status, err, bad, "a device, stream or correlation id out of any profiler's range")


@pytest.mark.parametrize("where", ["kernel name", "top-level value"])
def test_a_lone_surrogate_escape_is_one_line(where: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """JSON's "\\ud800" decodes to half a UTF-16 pair, which no UTF-8 output can hold: every format of compare
    ended in UnicodeEncodeError, after reading both inputs."""
    good, trace = _kineto(tmp_path)
    if where == "kernel name":  # read one event at a time
        kernel = next(event for event in trace["traceEvents"] if event.get("cat") == "kernel")
        kernel["name"] += "\ud800"
    else:  # read with the document's other fields, whole
        trace["deviceProperties"][0]["name"] = "\udfff GPU"
    bad = tmp_path / "bad.pt.trace.json"
    bad.write_text(json.dumps(trace))  # ASCII-only: the surrogate is written as its escape
    for output in ("text", "json", "md", "html"):
        status, _, err = run_cli(capsys, "compare", good, bad, "--format", output)
        _one_line(status, err, bad, "a string holds a lone UTF-16 surrogate")


def test_a_pytest_benchmark_file_with_a_lone_surrogate_is_one_line(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    stats = {"min": 0.001, "max": 0.002, "mean": 0.0015, "stddev": 0.0001, "median": 0.0015, "rounds": 5}
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_text(json.dumps({"benchmarks": [{"name": "test_a", "fullname": "t.py::test_a", "stats": stats}]}))
    bad.write_text(json.dumps({"benchmarks": [{"name": "test_a\udc00", "fullname": "t.py::test_a", "stats": stats}]}))
    status, _, err = run_cli(capsys, "compare", good, bad)
    _one_line(status, err, bad, "a string holds a lone UTF-16 surrogate")


def test_a_surrogate_pair_escape_is_a_character(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An emoji written ASCII-only (json.dumps' default) is a pair of escapes: one character, read as it is."""
    good, trace = _kineto(tmp_path)
    for event in trace["traceEvents"]:
        if event.get("cat") == "kernel":
            event["name"] += "\U0001f642"
    emoji = tmp_path / "emoji.pt.trace.json"
    emoji.write_text(json.dumps(trace))
    assert "\\ud83d\\ude42" in emoji.read_text()
    status, out, err = run_cli(capsys, "compare", good, emoji, "--format", "json")
    assert status == 0, err
    assert any("\U0001f642" in name for name in json.loads(out)["launches"]["kernel"])


def test_an_nsys_export_without_kernel_end_times_is_one_line(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """A kernel table without its ``end`` column (or with NULL there): int(None) was the TypeError nobody caught."""
    good, bad = write_nsys_export(tmp_path / "good.sqlite", 12, per_step=4), tmp_path / "bad.sqlite"
    write_nsys_export(bad, 12, per_step=4)
    with sqlite3.connect(bad) as connection:
        connection.execute('ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL DROP COLUMN "end"')
    status, _, err = run_cli(capsys, "compare", good, bad)
    _one_line(status, err, bad, "a broken Nsight Systems export (a GPU op without its start or end time)")


@pytest.mark.parametrize("pull_requests", [-1e-300, 7, True, "7", {"number": 7}])
def test_a_workflow_run_payload_whose_pull_requests_is_no_list_publishes(
        pull_requests: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """``workflow_run.pull_requests`` of another type than a list: a number ended publish (and the head commit read
    from the payload) in TypeError; now the payload names no pull request, and the job summary is written."""
    report = tmp_path / "report.json"
    report.write_bytes(lzma.decompress((REPO / "tests" / "data" / "h100" / "sessions" / "gate1.json.xz").read_bytes()))
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"workflow_run": {"head_sha": "c" * 40, "pull_requests": pull_requests},
                                 "repository": {"full_name": "o/r"}}))
    summary = tmp_path / "summary.md"
    for name, value in {"GITHUB_EVENT_PATH": event, "GITHUB_STEP_SUMMARY": summary, "GITHUB_REPOSITORY": "o/r",
                        "GITHUB_API_URL": "http://127.0.0.1:9", "GITHUB_TOKEN": "unused-token"}.items():
        monkeypatch.setenv(name, str(value))
    status, _, err = run_cli(capsys, "publish", report, "--no-comment", "--no-check")
    assert status == 0, err
    assert "please report it" not in err
    assert summary.stat().st_size > 0


@pytest.mark.parametrize("command", ["merge", "history", "publish"])
def test_a_reports_verdict_of_another_type_is_one_line(command: str, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """A report whose "verdict" is a list or an object: TypeError (unhashable) in the check meant to refuse it."""
    document = json.loads(lzma.decompress((REPO / "tests" / "data" / "h100" / "sessions" / "gate1.json.xz").read_bytes()))
    document["verdict"] = ["pass"]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(document))
    args: dict[str, list[object]] = {
        "merge": ["merge", bad, bad, "-o", tmp_path / "merged.json"],
        "history": ["history", "record", bad, "--db", f"sqlite:///{tmp_path / 'h.sqlite'}", "--commit", "a" * 40,
                    "--branch", "main"],
        "publish": ["publish", bad, "--no-comment", "--no-check", "--no-summary"]}
    status, _, err = run_cli(capsys, *args[command])
    _one_line(status, err, bad, "report \"verdict\" must be one of")
    assert not (tmp_path / "merged.json").exists()


@pytest.mark.parametrize("ordinal", [2**63, 10**30])
def test_a_baseline_entrys_ordinal_past_int64_is_one_line(ordinal: int, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """A non-negative integer the check let through, then OverflowError filling the int64 ordinal column."""
    document = json.loads(BASELINE.read_text())
    document["entries"][0]["ordinal"] = ordinal
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(document))
    status, _, err = run_cli(capsys, "compare", bad, BASELINE)
    _one_line(status, err, bad, "not a valid perfgate baseline: entries[0].ordinal must be a non-negative integer "
                                "below 2**63")


def test_json_output_escapes_what_a_terminal_acts_on(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A baseline's region name holding a bidirectional override was written raw into ``compare --format json`` and
    into the baseline ``baseline`` writes; now as its ``\\u`` escape, which every JSON reader reads back as it was."""
    document = json.loads(BASELINE.read_text())
    hostile = "vector_add" + ACTING + "evil"
    for entry in document["entries"]:
        entry["region"] = hostile
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(document, ensure_ascii=False))
    status, out, err = run_cli(capsys, "compare", edited, edited, "--format", "json")
    assert status == 0, err
    assert not set(ACTING) & set(out), [c for c in ACTING if c in out]
    assert hostile in json.loads(out)["launches"]["region"]
    status, _, err = run_cli(capsys, "baseline", edited, "-d", tmp_path / "baselines", "--name", "edited")
    assert status == 0, err
    [written] = (tmp_path / "baselines").glob("*/edited.json")
    assert not set(ACTING) & set(written.read_text()), [c for c in ACTING if c in written.read_text()]
    assert {entry["region"] for entry in json.loads(written.read_text())["entries"]} == {hostile}


def _texts(count: int) -> list[str]:
    """Strings of what JSON writers meet: ASCII, every C0 and C1 control, DEL, bidirectional, zero-width and line
    separator characters, '#' and '[' (workflow commands), quotes, backslashes, accents and emoji; the same every run."""
    alphabet = ([chr(c) for c in range(0xA0)] + list(ACTING) + list("\u061c\u200c\u202a\u2066\u2069\u2029\"\\#[µé")
                + ["\U0001f642", "##[", "::"])
    pick = random.Random(51)
    return [ACTING, ""] + ["".join(pick.choices(alphabet, k=pick.randrange(1, 40))) for _ in range(count)]


def test_inert_json_leaves_no_acting_character_and_reads_back_the_same() -> None:
    """The JSON writers' last step (report: bytes from orjson; baseline, history: str from json), over 300 strings:
    what the reader gets back is the string, and nothing a terminal acts on is left raw."""
    for text in _texts(300):
        for written in (inert_json_bytes(orjson.dumps(text)).decode(),
                        inert_json(json.dumps(text, ensure_ascii=False))):
            assert json.loads(written) == text, ascii(text)
            assert not set(ACTING) & set(written), ascii(text)
            assert "##[" not in written, ascii(text)
