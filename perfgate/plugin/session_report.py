"""The session's one report: built from the payloads every perf test or benchmark left on its TestReport,
written (JSON, Markdown, HTML, the GitHub step summary) and summarized in the terminal.

Stdlib and perfgate's pandas-free report, renderers and history store only, and those imported by the functions
that build and write the report at the session's end: ``--perfgate`` registers this module before any perf test
runs, and ``--perfgate --collect-only``, which writes no report, costs at most 1.10x the plugin-free collection
(tests/benchmarks/test_bench_plugin_startup.py).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Collection, Iterable, Mapping, Sequence

from perfgate.errors import ConfigError, PerfgateError
from perfgate.plugin.options import PluginOptions, report_files
from perfgate.verdict import GateStatus, UngatedStatus, compared_launches, session_verdict
from perfgate.vocabulary import UPDATE_NOTE, Verdict

if TYPE_CHECKING:
    from perfgate.report import Report

SUMMARY_REGRESSIONS = 50  # lines of regressions in the terminal summary; the report has them all
TIMELINE_PREFIX = "timeline."  # the timeline source's metrics (perfgate.metrics.TIMELINE_METRICS)


def shown_path(path: Path, base: Path) -> str:
    """``path`` as the user reads it: relative to ``base`` (pytest's invocation folder) where it can be."""
    try:
        return os.path.relpath(path, base)
    except ValueError:
        return str(path)


def launch_name(launch: Mapping[str, Any]) -> str:
    """``TEST: KERNEL [REGION]``; a benchmark, whose name is its test id, is named once."""
    test, kernel = launch.get("test") or "", str(launch.get("kernel") or "")
    where = f" [{launch['region']}]" if launch.get("region") else ""
    return f"{test}: {kernel}{where}" if test and test != kernel else f"{test or kernel}{where}"


def _launch_sources(report: Report, wanted: set[int]) -> dict[int, str]:
    """Per wanted launch, the source that measured it: ``timeline`` where a timeline metric was compared on it."""
    results, names = report["results"], report["metrics"]["metric"]
    found = dict.fromkeys(wanted, "ncu")
    for at, code in zip(results["launch"], results["metric"], strict=True):
        if at in wanted and str(names[code]).startswith(TIMELINE_PREFIX):
            found[at] = "timeline"
    return found


def regression_lines(report: Report, regressed: list[int]) -> list[str]:
    """One line per (test, source) that regressed, naming its regressed kernels and regions once each: a test
    gated by both sources, or with a kernel and its region total, is not listed once per launch. The source
    is said where a test was measured by more than one."""
    from perfgate.report import launch_row

    sources = _launch_sources(report, set(regressed))
    measured: dict[str, int] = {}
    for comparison in report["comparisons"]:
        test = comparison.get("test") or ""
        measured[test] = measured.get(test, 0) + 1
    named: dict[tuple[str, str], list[str]] = {}
    for index in regressed:
        row = launch_row(report, index)
        test, name = str(row.get("test") or ""), launch_name(row)
        what = name[len(test) + 2:] if test and name.startswith(test + ": ") else ("" if name == test else name)
        parts = named.setdefault((test, sources[index]), [])
        if what and what not in parts:
            parts.append(what)
    lines = []
    for (test, source), parts in named.items():
        who = f"{test} ({source})" if test and measured.get(test, 0) > 1 else test
        lines.append(f"  REGRESSION {': '.join(p for p in (who, ', '.join(parts)) if p)}")
    return lines


class SessionReport:
    """What the session measured: each test's payload (``{"test", "status", "report", "notes", "written",
    "cause"}``) as the controller received it, and the report files written from them."""

    def __init__(self, options: PluginOptions, here: Path) -> None:
        self.options = options
        self.here = here  # pytest's invocation folder: paths are shown relative to it
        self.payloads: list[dict[str, Any]] = []
        self.files: list[Path] = []
        self._report: Report | None = None
        self._write_error = ""
        self._history_line = ""

    def build(self) -> Report:
        """The merged report; a perf test that failed to be measured fails it, one not measured is listed."""
        from perfgate.report import empty_report, merge_reports

        reports = [p["report"] for p in self.payloads if isinstance(p.get("report"), dict)]
        merged = merge_reports(reports) if reports else empty_report()
        notes = list(merged["notes"])
        for payload in self.payloads:
            for note in payload.get("notes", []):
                if note not in notes:
                    notes.append(note)
            if payload.get("status") != UngatedStatus.FAILED and payload.get("cause"):
                merged["unmeasured"].append({"test": str(payload["test"]), "cause": str(payload["cause"])})
        if not self.payloads:
            notes.append("no perf test or gated benchmark ran in this session")
        notes.extend(n for n in self.options.history_notes if n not in notes)
        if self.options.update and self._written():
            notes.append(f"{UPDATE_NOTE}{self._written_line()}")
        merged["notes"] = notes
        failed = any(p.get("status") == UngatedStatus.FAILED for p in self.payloads)
        merged["verdict"] = session_verdict(merged, [r["verdict"] for r in reports], update=self.options.update,
                                            failed=failed)
        return merged

    def write(self) -> None:
        """Write the JSON, .md and .html reports (each atomically, ``write_file``: no partial file, no temp file left);
        a file that cannot be written becomes one line in the terminal summary, not a traceback."""
        from perfgate.files import write_file
        from perfgate.publish.context import commits_from_environment
        from perfgate.publish.summary import append_step_summary
        from perfgate.render import compared, render_markdown, render_parts

        report = self.build()
        self._report = report
        commits = commits_from_environment(os.environ)
        shape = compared(report)  # the Markdown and the page read one shape: its kernel rows are made once
        markdown: str | None = None
        try:
            markdown = render_markdown(shape, commits=commits, templates=self.options.templates)
        except ConfigError as exc:  # a team's template that compiled but failed on this report: no .md file
            self._write_error = f"perfgate: error: {exc}"
        json_file, *pages = report_files(self.options.report)
        texts: list[tuple[Path, Iterable[str | bytes]]] = [(json_file, render_parts(shape, "json"))]
        if pages:  # none beside a device or a FIFO
            md_file, html_file = pages
            texts += [*([(md_file, [markdown])] if markdown is not None else []),
                      (html_file, render_parts(shape, "html", commits=commits, templates=self.options.templates,
                                               json_report=json_file.name))]
        for path, text in texts:
            try:
                write_file(path, text)
            except OSError as exc:
                self._write_error = f"perfgate: cannot write the session report {shown_path(path, self.here)}: " + (
                    exc.strerror or str(exc))
                return
            except ConfigError as exc:  # a team's page.html.j2 that failed on this report: no such file
                self._write_error = f"perfgate: error: {exc}"
                continue
            self.files.append(path)
        if self.options.history:
            self._history_line = record_session(self.options.history, report, json_file.name,
                                                 self.options.history_max_time)
        summary = os.environ.get("GITHUB_STEP_SUMMARY")
        if summary and markdown is not None:
            try:
                append_step_summary(Path(summary), markdown, templates=self.options.templates)
            except OSError as exc:
                self._write_error = (f"perfgate: cannot append the report to $GITHUB_STEP_SUMMARY ({summary}): "
                                     + (exc.strerror or str(exc)))
            except ConfigError as exc:  # a team's cut_note.md.j2 that failed
                self._write_error = f"perfgate: error: {exc}"

    def _written(self) -> list[str]:
        return [w for p in self.payloads for w in p.get("written", [])]

    def _written_line(self) -> str:
        written = self._written()
        return (f"baselines written: {len(written)} file{'s' if len(written) != 1 else ''} under "
                f"{shown_path(self.options.baselines, self.here)}")

    def summary_lines(self) -> list[str]:
        """The terminal summary: the verdict, the regressed launches, what was not measured, the files written."""
        from perfgate.render.common import VERDICT_WORD, headline, plural
        from perfgate.report import iter_launches, kernel_summary

        report = self._report or self.build()
        counts = kernel_summary(report)  # as compare's headline: a kernel judged as one counts once
        verdict = report["verdict"]
        failed = verdict == Verdict.FAIL.value
        if self.options.update:
            # The counts compare this run with the baselines it replaced; what matters is what was written.
            updated = sum(1 for p in self.payloads if p.get("status") == GateStatus.UPDATED)
            words = {"new": "had no baseline", "regression": "regression (accepted)"}
            parts = [f"{n:,} {words.get(s, s)}" for s, n in counts.items() if n]
            head = f"{updated} test{'s' if updated != 1 else ''} measured" if updated else "no baseline updated"
            if parts:
                head += f"; launches against the previous baselines: {', '.join(parts)}"
            lines = [f"perfgate {'FAIL' if failed else 'UPDATED'}: {head}"]
            if report["unmeasured"]:  # a skipped perf test writes no baseline: say so, an update is no pass
                lines.append(f"  no baseline written for what was not measured: {headline(report)}")
        else:
            parts = [plural(n, s) for s, n in counts.items() if n]
            tests = {report["launches"]["test"][i] for i in iter_launches(report, ("regression",))}
            if counts.get("regression") and len(tests) != counts["regression"]:  # kernels of fewer tests
                parts[0] += f" in {plural(len(tests), 'test')}"
            said = ", ".join(parts) or "nothing compared"
            if counts.get("new") and not compared_launches(counts):  # a first run: "1 new" says too little
                said = headline(report, counts)
            lines = [f"perfgate {VERDICT_WORD.get(verdict, 'FAIL')}: {said}"]
            why = headline(report)
            if (report["unmeasured"] or not parts) and why != said:  # the cause, where it says more
                lines.append(f"  {why}")
        if not self.options.update:
            regressions = regression_lines(report, list(iter_launches(report, ("regression",))))
            lines += regressions[:SUMMARY_REGRESSIONS]
            if len(regressions) > SUMMARY_REGRESSIONS:
                lines.append(f"  ... and {len(regressions) - SUMMARY_REGRESSIONS:,} more (see the report)")
        new = [p["test"] for p in self.payloads if p.get("status") == GateStatus.NEW]
        if new:
            lines.append(f"  {len(new)} test{'s have' if len(new) != 1 else ' has'} no baseline yet (reported as new; "
                         "create with --perfgate-update)")
        if self._written():
            lines.append(f"  {self._written_line()}")
        shown = [note for note in report["notes"]
                 if ": skipped" in note or ": failed" in note or "not gated" in note or "carries a regression" in note]
        lines += [f"  {line}" for line in collapsed_notes(shown, {str(p["test"]) for p in self.payloads})]
        if self.files:
            lines.append("report: " + ", ".join(shown_path(p, self.here) for p in self.files))
        if self._write_error:
            lines.append(self._write_error)
        if self._history_line:
            lines.append(self._history_line)
        return lines


def collapsed_notes(notes: Sequence[str], tests: Collection[str], named: int = 3) -> list[str]:
    """Notes that say the same after their test id (one cause for a whole group of perf tests: a package missing
    in the profiled child, counters refused) as one line naming the tests; the others as they are, in order."""
    by_text: dict[str, list[str]] = {}
    for note in notes:
        test, _, text = note.partition(": ")
        if test in tests and text:
            owners = by_text.setdefault(text, [])
            owners += [test] if test not in owners else []
        else:
            by_text.setdefault(note, [])
    lines = []
    for text, owners in by_text.items():
        if len(owners) < 2:
            lines.append(f"{owners[0]}: {text}" if owners else text)
            continue
        more = f" and {len(owners) - named} more" if len(owners) > named else ""
        lines.append(f"{len(owners)} perf tests ({', '.join(owners[:named])}{more}): {text}")
    return lines


def record_session(url: str, report: Report, source: str, max_time: float) -> str:
    """Record the session's report in the history; the terminal line that says so, or why it could not (a
    history that keeps it waiting past ``max_time`` seconds among them)."""
    from perfgate.history.db import open_history, shown_url
    from perfgate.history.record import provenance, record_report, report_points

    if not report_points(report):
        return f"perfgate: history: nothing measured, nothing recorded in {shown_url(url)}"
    try:
        when = provenance(os.environ)
        with open_history(url, max_time=max_time) as history:
            recorded = record_report(history, report, source, when)
    except PerfgateError as exc:
        return f"perfgate: cannot record the session in the history: {exc}"
    state = "recorded" if recorded.added else "already recorded"
    return f"history: {state} {recorded.points} series at {when.commit[:12]} on {when.branch} in {shown_url(url)}"
