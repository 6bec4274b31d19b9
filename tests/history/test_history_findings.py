"""ncu rule findings in the history: what a report carries of them (appeared, gone against its baseline) is kept
per run and kernel, on both engines, and the dashboard's kernel page shows them, as text."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers.history import KERNEL_TIME, commit_of, history_url, record_reports, write_report  # noqa: F401  (the fixture)

from perfgate.cli import main
from perfgate.history.db import SCHEMA_VERSION, open_history
from perfgate.history.findings import load_findings

UNCOALESCED = "Uncoalesced Global Accesses"
HOSTILE = "<img src=x onerror=alert(1)>"


def _report(path: Path, appeared: list[Any], gone: list[Any]) -> Path:
    """A report of two launches of gemm (and one of scan, whose findings are not known)."""
    write_report(path, {("gemm", KERNEL_TIME): [100.0, 101.0], ("scan", KERNEL_TIME): [5.0]})
    document = json.loads(path.read_text(encoding="utf-8"))
    document["launches"]["findings_appeared"] = [*appeared, None]
    document["launches"]["findings_gone"] = [*gone, None]
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def test_findings_are_kept_per_run_and_kernel(tmp_path: Path, history_url: str) -> None:  # noqa: F811
    assert record_reports(history_url, _report(tmp_path / "a.json", [[], []], [[], []]), 0) == 0
    assert record_reports(history_url, _report(tmp_path / "b.json", [[UNCOALESCED], [UNCOALESCED, HOSTILE]],
                                               [["Tail Effect"], []]), 1) == 0
    # not known: nothing kept
    assert record_reports(history_url, _report(tmp_path / "c.json", [None, None], [None, None]), 2) == 0
    with open_history(history_url, create=False) as history:
        found = load_findings(history, "main", [commit_of(i) for i in range(3)])
    assert list(found) == [("NVIDIA H100", "tests/test_k.py::test_k", "kernel", "gemm", "")]  # scan: not known
    (first, second) = found[("NVIDIA H100", "tests/test_k.py::test_k", "kernel", "gemm", "")]
    assert (first.commit, first.appeared, first.gone) == (commit_of(0), [], [])
    assert (second.appeared, second.gone) == ([UNCOALESCED, HOSTILE], ["Tail Effect"])  # launches merged


def test_the_kernel_page_shows_them(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    for index in range(4):
        appeared = [[UNCOALESCED, HOSTILE], []] if index == 2 else [[], []]
        assert record_reports(url, _report(tmp_path / f"r{index}.json", appeared, [[], []]), index) == 0
    site = tmp_path / "site"
    assert main(["history", "dashboard", "--db", url, "-o", str(site)]) == 0
    pages = {page.name.split("-")[0]: page.read_text(encoding="utf-8") for page in (site / "kernels").iterdir()}
    gemm, scan = pages["gemm"], pages["scan"]
    (row,) = [r for r in gemm.split("<tr>") if UNCOALESCED in r]  # the one run where findings appeared
    assert f"<code>{commit_of(2)[:12]}</code>" in row
    assert "&lt;img src=x onerror=alert(1)&gt;" in gemm and HOSTILE not in gemm  # text, never markup
    assert "No run of this kernel carried ncu rule findings" in scan


def test_a_history_of_the_previous_schema_is_migrated_by_any_command(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    assert record_reports(url, _report(tmp_path / "a.json", [[], []], [[], []]), 0) == 0
    with open_history(url, create=False) as history:  # as perfgate with schema version 1 left it
        history.execute("DROP TABLE perfgate_findings")
        history.execute("ALTER TABLE perfgate_points DROP COLUMN gate")  # added by schema version 3
        history.execute("DROP TABLE perfgate_change_cache")  # added by schema version 4
        history.execute("DROP TABLE perfgate_culprits")  # added by schema version 5
        history.execute("ALTER TABLE perfgate_points DROP COLUMN same_code_changes")  # added by schema version 6
        history.execute("ALTER TABLE perfgate_points DROP COLUMN code_id")
        history.execute("UPDATE perfgate_meta SET value = '1' WHERE name = 'schema_version'")
    assert main(["history", "changes", "--db", url]) == 0
    with open_history(url, create=False) as history:
        assert history.query("SELECT value FROM perfgate_meta WHERE name = 'schema_version'") == [
            (str(SCHEMA_VERSION),)]
        assert history.query("SELECT COUNT(*) FROM perfgate_findings") == [(0,)]
