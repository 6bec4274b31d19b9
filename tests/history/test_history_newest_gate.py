"""A regression in a series' newest run is no change point yet (E-divisive places none at a series' end): the
history keeps the gate's verdict per point, and the dashboard shows the newest run's verdict on the chart (in a
real headless Chromium), in the kernel's list of changes and on the index."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from helpers.browser import dump_dom
from helpers.history import KERNEL_TIME, commit_of, record_reports, write_report
from perfgate.cli import main
from perfgate.history.db import MIGRATIONS, open_history

H100 = Path(__file__).resolve().parents[1] / "data" / "h100" / "default-metrics" / "sessions"
CANVAS_CHECK = """
setTimeout(function () {
  const counts = [];
  for (const canvas of document.querySelectorAll("canvas")) {
    const pixels = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height).data;
    let red = 0;
    for (let i = 0; i < pixels.length; i += 4) {
      if (pixels[i] === 0xb3 && pixels[i + 1] === 0x26 && pixels[i + 2] === 0x1e && pixels[i + 3] === 255) { red++; }
    }
    counts.push(red);
  }
  document.body.setAttribute("data-red", counts.join(","));
}, 300);
"""


def _data(page: str) -> dict[str, object]:
    block = re.search(r'<script type="application/json" id="perfgate-data">(.*?)</script>', page, re.S)
    assert block is not None
    return json.loads(block.group(1))  # type: ignore[no-any-return]


def test_the_h100_regression_in_the_newest_run_is_shown(tmp_path: Path) -> None:
    """perfgate's own H100 sessions: five gated runs of the examples, then the deliberate regression (the
    committed .json.xz files, recorded as they are)."""
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    for index, name in enumerate(["gate1", "gate2", "gate3", "gate4", "gate5", "regression"]):
        assert record_reports(url, H100 / f"{name}.json.xz", index) == 0
    site = tmp_path / "site"
    assert main(["history", "dashboard", "--db", url, "-o", str(site)]) == 0
    index = (site / "index.html").read_text(encoding="utf-8")
    # duration and L2 sectors, of the kernel and of its region's total: what the regression report failed on
    assert "0 change points, 4 series whose newest run the gate judged a regression" in index
    rows = [r for r in re.findall(r"<tr>.*?</tr>", index, re.S) if "(gate, newest run)" in r]
    assert len(rows) == 4 and all("vector_add" in r and commit_of(5)[:12] in r for r in rows)
    assert sorted(re.search(r"<code>([a-z_.]+)</code>", r).group(1) for r in rows) == [  # type: ignore[union-attr]
        "gpu__time_duration.sum", "gpu__time_duration.sum", "lts__t_sectors.sum", "lts__t_sectors.sum"]

    page_path = site / re.search(r'href="(kernels/vector_add[^"]+)"', index).group(1)  # type: ignore[union-attr]
    page = page_path.read_text(encoding="utf-8")
    duration = page.split("<code>gpu__time_duration.sum</code>", 1)[1].split("<h2", 1)[0]
    gate_row = re.search(r'<tr class="gate">(.*?)</tr>', duration, re.S).group(1)  # type: ignore[union-attr]
    assert commit_of(5)[:12] in gate_row and ">regression<" in gate_row and ">gate<" in gate_row
    assert re.search(r"\+\d{3}\.\d%", gate_row), gate_row  # about 80 µs -> 381 µs
    # E-divisive found none yet: the page says the gate's regression awaits confirmation, never "No change point."
    assert "No change point." not in duration
    assert "No change point yet: the newest run&#39;s regression awaits confirmation" in duration
    assert "the newest run&#39;s regression awaits confirmation" in gate_row
    marks = {m["metric"]: m["changes"] for m in _data(page)["metrics"]}  # type: ignore[attr-defined]
    assert marks["gpu__time_duration.sum"] == [{"x": 5, "direction": "regression", "gate": True}]

    (site / "check.js").write_text(CANVAS_CHECK, encoding="utf-8")
    checked = page_path.with_name("checked.html")
    checked.write_text(page.replace("</body>", '<script src="../check.js"></script></body>'), encoding="utf-8")
    dom = dump_dom(checked)
    red = dict(zip(sorted(marks), (int(n) for n in re.search(r'data-red="([0-9,]*)"', dom).group(1).split(","))))  # type: ignore[union-attr]
    assert red["gpu__time_duration.sum"] > 50, red  # the dotted red line and its label are drawn
    assert all(red[m] == 0 for m, found in marks.items() if not found), red  # no mark where the gate passed


def test_an_accepted_regression_in_the_newest_run_says_who_and_why(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    for index in range(5):
        assert record_reports(url, write_report(tmp_path / f"r{index}.json", {("gemm", KERNEL_TIME): [100.0]}),
                              index) == 0
    slow = write_report(tmp_path / "slow.json", {("gemm", KERNEL_TIME): [150.0]}, status="regression")
    assert record_reports(url, slow, 5) == 0
    assert main(["accept", "--db", url, "--commit", commit_of(5), "--kernel", "gemm", "--by", "ada",
                 "--reason", "<b>bigger</b> tiles"]) == 0
    site = tmp_path / "site"
    assert main(["history", "dashboard", "--db", url, "-o", str(site)]) == 0
    index = (site / "index.html").read_text(encoding="utf-8")
    assert "(gate, newest run)" in index and '<span class="accepted">(accepted)</span>' in index
    page = next((site / "kernels").iterdir()).read_text(encoding="utf-8")
    gate_row = re.search(r'<tr class="gate">(.*?)</tr>', page, re.S).group(1)  # type: ignore[union-attr]
    assert "+50.0%" in gate_row and "accepted by ada: &lt;b&gt;bigger&lt;/b&gt; tiles" in gate_row


def test_a_later_run_without_a_regression_clears_it(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    for index, (value, status) in enumerate([(100.0, "unchanged")] * 6 + [(150.0, "regression"), (100.0, "unchanged")]):
        report = write_report(tmp_path / f"r{index}.json", {("gemm", KERNEL_TIME): [value]}, status=status)
        assert record_reports(url, report, index) == 0
    site = tmp_path / "site"
    assert main(["history", "dashboard", "--db", url, "-o", str(site)]) == 0
    index = (site / "index.html").read_text(encoding="utf-8")
    assert "(gate, newest run)" not in index and "judged a regression" not in index


def test_a_rerun_of_the_newest_commit_replaces_its_verdict(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    for index in range(5):
        assert record_reports(url, write_report(tmp_path / f"r{index}.json", {("gemm", KERNEL_TIME): [100.0]}),
                              index) == 0
    slow = write_report(tmp_path / "slow.json", {("gemm", KERNEL_TIME): [150.0]}, status="regression")
    assert record_reports(url, slow, 5) == 0
    site = tmp_path / "site"
    assert main(["history", "dashboard", "--db", url, "-o", str(site)]) == 0
    assert "(gate, newest run)" in (site / "index.html").read_text(encoding="utf-8")
    rerun = write_report(tmp_path / "rerun.json", {("gemm", KERNEL_TIME): [101.0]})
    assert record_reports(url, rerun, 5) == 0  # same commit
    assert main(["history", "dashboard", "--db", url, "-o", str(site)]) == 0
    assert "(gate, newest run)" not in (site / "index.html").read_text(encoding="utf-8")


def test_a_history_of_schema_2_is_migrated_and_its_points_have_no_verdict(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    with open_history(f"sqlite:///{path}") as history:  # rebuilt as schema 2 left it
        for table in ("perfgate_culprits", "perfgate_change_cache", "perfgate_findings", "perfgate_points", "perfgate_acceptances", "perfgate_series",
                      "perfgate_runs"):
            history.execute(f"DROP TABLE {table}")
        for statement in (*MIGRATIONS[1], *MIGRATIONS[2]):
            history.execute(statement.format(id="INTEGER PRIMARY KEY"))
        history.execute("UPDATE perfgate_meta SET value = '2' WHERE name = 'schema_version'")
        history.execute("INSERT INTO perfgate_runs (run_key, commit_sha, branch, recorded_at, source, settings) "
                        "VALUES ('k', 'c0', 'main', '2026-01-01T00:00:00.000000Z', 'old.json', '{}')")
        history.execute("INSERT INTO perfgate_series (gpu, test, kind, kernel, region, metric, unit, direction) "
                        f"VALUES ('NVIDIA H100', 't', 'kernel', 'gemm', '', '{KERNEL_TIME}', 'ns', 'lower')")
        history.execute("INSERT INTO perfgate_points (series_id, run_id, n, value, low, high) VALUES (1, 1, 1, 100, "
                        "100, 100)")
    url = f"sqlite:///{path}"
    slow = write_report(tmp_path / "slow.json", {("gemm", KERNEL_TIME): [150.0]}, device="NVIDIA H100", test="t",
                        status="regression")
    assert record_reports(url, slow, 1) == 0
    with open_history(url) as history:
        assert history.query("SELECT run_id, gate FROM perfgate_points ORDER BY run_id") == [
            (1, None), (2, "regression")]
    site = tmp_path / "site"
    assert main(["history", "dashboard", "--db", url, "-o", str(site)]) == 0
    assert "(gate, newest run)" in (site / "index.html").read_text(encoding="utf-8")


@pytest.mark.parametrize(("statuses", "expected"), [
    (["unchanged", "regression", "improvement"], "regression"), (["improvement", "inconclusive"], "inconclusive"),
    (["improvement", "unchanged"], "improvement"), (["unchanged", "new", "info"], None)])
def test_a_point_keeps_the_worst_gate_status_of_its_launches(statuses: list[str], expected: str | None) -> None:
    from perfgate.history.verdicts import point_gate

    assert point_gate(statuses) == expected
