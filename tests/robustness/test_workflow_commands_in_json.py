"""JSON that perfgate prints or writes starts no workflow command in a CI log (issue 33, item 3): a kernel name or
an accept reason holding ``##[stop-commands]`` reaches ``compare --format json``, ``history changes --format json``
and the baselines escaped, and every JSON reader reads the name back exactly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.common import REPO
from helpers.history import KERNEL_TIME, record_runs
from helpers.hostile import WORKFLOW_COMMANDS, runs_workflow_command

from perfgate.cli import main

H100 = REPO / "tests" / "data" / "h100"


def _hostile_csvs(folder: Path, name: str) -> tuple[Path, Path]:
    raw = (H100 / "vector_add.rerun.details-base.csv").read_text()
    assert '"vector_add"' in raw
    raw = raw.replace('"vector_add"', json.dumps(f"vector_add {name}"))
    (folder / "base.csv").write_text(raw)
    (folder / "cur.csv").write_text(raw.replace('"ns","79,392"', '"ns","179,392"'))
    return folder / "base.csv", folder / "cur.csv"


@pytest.mark.parametrize("name", [n for n in WORKFLOW_COMMANDS if "##[" in n])
def test_compare_json_on_stdout_runs_no_workflow_command(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                         name: str) -> None:
    base, cur = _hostile_csvs(tmp_path, name)
    assert main(["compare", str(base), str(cur), "--format", "json"]) == 1
    out = capsys.readouterr().out
    assert runs_workflow_command(out) == []
    report = json.loads(out[: out.rindex("}") + 1])
    assert any(name in str(value) for value in report["launches"]["kernel"] + report["launches"]["demangled"])


def test_baselines_hold_the_name_escaped_and_read_it_back(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base, cur = _hostile_csvs(tmp_path, WORKFLOW_COMMANDS[0])
    assert main(["baseline", str(base), "-d", str(tmp_path / "baselines")]) == 0
    [written] = list((tmp_path / "baselines").rglob("*.json"))
    assert runs_workflow_command(written.read_text()) == []
    assert main(["compare", str(written), str(base)]) == 0


def test_history_changes_json_runs_no_workflow_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    kernel = f"gemm {WORKFLOW_COMMANDS[1]}"
    record_runs(tmp_path, url, [{kernel: 100.0}] * 5 + [{kernel: 200.0}] * 5)
    reason = " ".join(WORKFLOW_COMMANDS)
    assert main(["accept", "--db", url, "--commit", f"{5:04x}".ljust(40, "c"), "--metric", KERNEL_TIME,
                 "--by", "##[stop-commands]ada", "--reason", reason]) == 0
    capsys.readouterr()
    assert main(["history", "changes", "--db", url, "--format", "json"]) == 0
    out = capsys.readouterr().out
    assert runs_workflow_command(out) == []
    [change] = json.loads(out)
    assert change["kernel"] == kernel and change["accepted"]["reason"] == reason
    for fmt in ("text", "md"):
        assert main(["history", "changes", "--db", url, "--format", fmt]) == 0
        assert runs_workflow_command(capsys.readouterr().out) == [], fmt


def test_compare_html_on_stdout_runs_no_workflow_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The HTML page printed to a CI log: ``##[`` as ``##&#91;``, which the browser shows as the name."""
    import html

    base, cur = _hostile_csvs(tmp_path, WORKFLOW_COMMANDS[0])
    assert main(["compare", str(base), str(cur), "--format", "html"]) == 1
    out = capsys.readouterr().out
    assert runs_workflow_command(out) == []
    assert WORKFLOW_COMMANDS[0] in html.unescape(out)
