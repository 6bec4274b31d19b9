"""What the documentation quotes perfgate printing is what it prints: each quoted block is the output of the
command beside it, run on the same files (the README's Quickstart is held by .ci/quickstart)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from helpers.common import NCU_REP, REPO, corpus_file, run_cli

H100 = REPO / "tests" / "data" / "h100"
RULES = ("tests/data/h100/default-metrics/vector_add.rules.ncu-rep",
         "tests/data/h100/default-metrics/vector_add.rules.regressed.ncu-rep")


def fenced_blocks(page: str) -> list[list[str]]:
    """Every fenced block of a page, as its lines (the fences left out)."""
    blocks, inside = [], None
    for line in (REPO / page).read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            if inside is None:
                inside = []
            else:
                blocks.append(inside)
                inside = None
        elif inside is not None:
            inside.append(line)
    return blocks


def quoted_output(page: str, command: str) -> list[str]:
    """The lines after ``$ COMMAND`` in the one block of ``page`` that shows it."""
    [block] = [b for b in fenced_blocks(page) if f"$ {command}" in b]
    return block[block.index(f"$ {command}") + 1:]


@pytest.mark.parametrize("page", ["README.md", "docs/index.md"])
def test_the_home_page_example(page: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    corpus_file("mlp-t4/report_v3_loop_unroll.ncu-rep")
    monkeypatch.chdir(NCU_REP / "mlp-t4")
    command = "perfgate compare report_v3_loop_unroll.ncu-rep report_v4_8_per_thread.ncu-rep"
    status, out, _ = run_cli(capsys, *command.split()[1:])
    assert status == 1
    assert out.splitlines() == quoted_output(page, command)


def test_the_rule_findings_example(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    status, out, _ = run_cli(capsys, "compare", *RULES)
    assert status == 1
    assert out.splitlines() == quoted_output("docs/pytest-plugin.md", f"perfgate compare {' '.join(RULES)}")
    # The README's Quickstart quotes two of its lines.
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    quoted = re.findall(r"`((?:regression  duration|why: ncu findings)[^`]*)`", readme)
    assert len(quoted) == 2 and all(line in out for line in quoted), quoted


def test_the_timeline_example(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO / "tests" / "data" / "h200" / "timeline")
    command = "perfgate compare mlp.torch.a.pt.trace.json.gz mlp.sync.torch.pt.trace.json.gz"
    status, out, _ = run_cli(capsys, *command.split()[1:])
    assert status == 1
    assert out.splitlines() == quoted_output("docs/timeline.md", command)


@pytest.mark.parametrize(("folder", "command", "expected"), [
    ("esmm-a10g", "perfgate compare --code-identity b644635.ncu-rep a62323b_output.ncu-rep", 0),
    ("mlp-t4", "perfgate compare --code-identity report_v3_loop_unroll.ncu-rep report_v4_8_per_thread.ncu-rep", 1),
    (None, "perfgate compare --code-identity --threshold gpu__time_duration.sum=0% tests/data/h100/vector_add.ncu-rep "
           "tests/data/h100/vector_add.rerun.ncu-rep", 0)])
def test_the_same_code_examples(folder: str | None, command: str, expected: int, capsys: pytest.CaptureFixture[str],
                                monkeypatch: pytest.MonkeyPatch) -> None:
    if folder is not None:
        corpus_file(f"{folder}/{command.split()[-1]}")
    monkeypatch.chdir(REPO if folder is None else NCU_REP / folder)
    status, out, _ = run_cli(capsys, *command.split()[1:])
    assert status == expected
    assert out.splitlines() == quoted_output("docs/same-code.md", command)


def test_gating_against_the_baselines_folder(capsys: pytest.CaptureFixture[str],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    [block] = [b for b in fenced_blocks("docs/cli.md") if b and b[0].startswith("perfgate compare baselines ")]
    status, out, _ = run_cli(capsys, *block[0].split()[1:])
    assert status == 0
    verdict = block[1].removeprefix("# ").split("   (")[0]
    assert out.splitlines()[-1] == verdict


def test_the_history_examples(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    sessions = "tests/data/h100/default-metrics/sessions"
    [recording] = [b for b in fenced_blocks("docs/history.md") if b and b[0].startswith("$ perfgate history record")]
    db = f"sqlite:///{tmp_path / 'first.sqlite'}"
    for command, said in zip(recording[::2], recording[1::2]):
        assert run_cli(capsys, *command.split()[2:], "--db", db)[1] == said + "\n"

    db = f"sqlite:///{tmp_path / 'h100.sqlite'}"
    for session in ("update", "gate1", "gate2", "gate3", "gate4", "gate5"):
        run_cli(capsys, "history", "record", f"{sessions}/{session}.json.xz", "--db", db, "--commit", session,
                "--branch", "main", "--when", "2026-11-22")
    status, out, _ = run_cli(capsys, "compare", "tests/data/h100/vector_add.rerun.raw.csv", "--history", db)
    assert status == 0
    [quoted] = [b for b in fenced_blocks("docs/history.md") if b and b[0].startswith("perfgate: history: median")]
    assert out.splitlines() == quoted

    # The dashboard of those six sessions: as many pages as the page says.
    pages = re.search(r"the six H100 sessions recorded above give (\d+) pages",
                      " ".join((REPO / "docs" / "history.md").read_text(encoding="utf-8").split()))
    _, out, _ = run_cli(capsys, "history", "dashboard", "--db", db, "-o", tmp_path / "site")
    assert pages and out.startswith(f"wrote {pages.group(1)} pages to "), out


def _holds(quoted: Any, actual: Any) -> bool:
    """``quoted`` is ``actual`` with some rows left out: a list ending in "…" quotes a prefix of its list."""
    if isinstance(quoted, dict):
        return isinstance(actual, dict) and quoted.keys() == actual.keys() and all(
            _holds(v, actual[k]) for k, v in quoted.items())
    if isinstance(quoted, list) and quoted and quoted[-1] == "…":
        return isinstance(actual, list) and all(_holds(q, a) for q, a in zip(quoted[:-1], actual, strict=False))
    return bool(quoted == actual)


def test_the_json_report_example(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    corpus_file("mlp-t4/report_v3_loop_unroll.ncu-rep")
    monkeypatch.chdir(NCU_REP / "mlp-t4")
    _, out, _ = run_cli(capsys, "compare", "report_v3_loop_unroll.ncu-rep", "report_v4_8_per_thread.ncu-rep",
                        "--format", "json")
    [quoted] = [b for b in fenced_blocks("docs/reports.md") if b[:2] == ["{", '"format": "perfgate-report",']]
    report = json.loads(out)
    report["generator"] = "perfgate 0.1.0"  # the version a release writes
    assert _holds(json.loads("\n".join(quoted)), report)


def test_the_baseline_example(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = corpus_file("mlp-t4/report_v3_loop_unroll.ncu-rep")
    run_cli(capsys, "baseline", report, "-d", tmp_path)
    [written] = tmp_path.glob("*/report_v3_loop_unroll.json")
    baseline = json.loads(written.read_text(encoding="utf-8"))
    [quoted] = [json.loads("\n".join(b)) for b in fenced_blocks("docs/baselines.md")
                if b[:2] == ["{", '  "format": "perfgate-baseline",']]
    [entry], [quoted_entry] = baseline["entries"], quoted["entries"]
    # The page shows three of the entry's metrics and leaves out its findings.
    assert {k: v for k, v in baseline.items() if k != "entries"} == {k: v for k, v in quoted.items() if k != "entries"}
    assert {k: entry[k] for k in quoted_entry if k != "metrics"} == {
        k: v for k, v in quoted_entry.items() if k != "metrics"}
    assert all(entry["metrics"][name] == value for name, value in quoted_entry["metrics"].items())
    assert len(entry["metrics"]) == 10 and len(entry["findings"]) == 8


def quickstart_commands(page: str) -> list[list[str]]:
    """The ``sh`` blocks between a page's "## Quickstart" and its next "## " heading."""
    text = (REPO / page).read_text(encoding="utf-8")
    section = text.split("\n## Quickstart\n", 1)[1].split("\n## ", 1)[0]
    return [block.split("\n```", 1)[0].splitlines() for block in section.split("```sh\n")[1:]]


def test_the_getting_started_quickstart_is_the_readmes() -> None:
    """.ci/quickstart runs the README's blocks; the documentation site shows the same commands."""
    readme, site = quickstart_commands("README.md"), quickstart_commands("docs/getting-started.md")
    assert site[0] == ["git clone https://github.com/perfgate/perfgate && cd perfgate"]
    assert site[1:] == readme[:3]


def test_the_command_lines_error_examples(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    t4, rtx = corpus_file("mlp-t4/report_v3_loop_unroll.ncu-rep"), corpus_file("kernelAC-2080ti/profile.ncu-rep")
    monkeypatch.chdir(tmp_path)
    Path("cut.ncu-rep").write_bytes(t4.read_bytes()[:60_000])
    Path("a.ncu-rep").write_bytes(t4.read_bytes())
    Path("b.ncu-rep").write_bytes(rtx.read_bytes())
    [quoted] = [b for b in fenced_blocks("docs/cli.md") if b and b[0].startswith("perfgate: error: cut.ncu-rep")]
    said = [run_cli(capsys, "compare", "cut.ncu-rep", "cut.ncu-rep"), run_cli(capsys, "compare", "a.ncu-rep", "b.ncu-rep")]
    assert [status for status, _, _ in said] == [2, 2]
    assert [err for _, _, err in said] == [line + "\n" for line in quoted]


def test_the_verdict_line_with_an_output_file(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    v3, v4 = (corpus_file(f"mlp-t4/{name}.ncu-rep") for name in ("report_v3_loop_unroll", "report_v4_8_per_thread"))
    monkeypatch.chdir(tmp_path)
    status, out, _ = run_cli(capsys, "compare", v3, v4, "-o", "report.md")
    quoted = re.search(r"With `-o`, `compare` prints only the verdict line \(`([^`]*)`\)",
                       " ".join((REPO / "docs" / "reports.md").read_text(encoding="utf-8").split()))
    assert status == 1 and quoted and out == quoted.group(1) + "\n"


def test_the_history_pages_name_the_schema_version_this_perfgate_reads() -> None:
    """The Bad input table's newer-schema line quotes this perfgate's schema version, and no page names a schema
    version past it."""
    from perfgate.history.schema import SCHEMA_VERSION

    pages = {page: (REPO / "docs" / page).read_text(encoding="utf-8") for page in ("history.md", "same-code.md",
                                                                                  "bisect.md")}
    assert (f"history schema version {SCHEMA_VERSION + 1} is newer than this perfgate reads ({SCHEMA_VERSION})"
            in pages["history.md"])
    named = [int(n) for text in pages.values() for n in re.findall(r"schema version (\d+)", text)]
    assert named and max(named) == SCHEMA_VERSION + 1


def test_the_input_limits_table_is_perfgate_limits() -> None:
    """docs/cli.md's Input limits table quotes the limits perfgate.limits and the JSON reader define."""
    from perfgate import limits
    from perfgate.collect.json_input import MAX_VALUE_CHARS

    section = (REPO / "docs" / "cli.md").read_text(encoding="utf-8").split("## Input limits", 1)[1]
    column = [line.split(" | ")[1] for line in section.splitlines() if line.startswith("| ") and " | " in line][1:]
    assert column == [f"{limits.MAX_INPUT_BYTES >> 30} GiB", f"{limits.MAX_NAME_CHARS:,} characters",
                      f"{limits.MAX_JSON_DEPTH} levels", f"{MAX_VALUE_CHARS >> 20} Mi characters",
                      f"{limits.MAX_OPEN_RANGES}",
                      f"{limits.MAX_NAME_CHARS:,}; {limits.MAX_REGION_PATHS_CHARS:,} characters",
                      f"{limits.MAX_LAUNCH_TEXT_CHARS:,} characters", f"{limits.FIFO_WAIT_SECONDS:g} s"]
