"""``perfgate history dashboard``: a static trend site (GitHub Pages ready, like asv's).

``index.html`` (and ``index-N.html`` past ``ROWS_PER_PAGE`` series) lists every series with its latest value, a
trend sparkline (inline SVG) and its last change point; ``kernels/<name>.html`` charts each metric of one kernel
or region over the commits with uPlot, change points marked and accepted ones with their reason. The charts'
data sits in a ``<script type="application/json">`` block and uPlot is bundled, so a page needs no network and
runs under a Content-Security-Policy that allows only the site's own scripts. The site is written beside
``-o DIR`` and moved into place whole: a failed run leaves the previous site as it was.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import jinja2
import numpy as np
from markupsafe import Markup

from perfgate.errors import InputError
from perfgate.history.code_change import code_note
from perfgate.history.db import History
from perfgate.history.detect import AWAITED, awaiting_note, changes_by_series, newest_runs, no_runs
from perfgate.history.findings import RunFindings, load_findings
from perfgate.history.keys import KERNEL_FIELDS, facts_key, function_name, shown_kernel
from perfgate.history.series import Branch, Series
from perfgate.metrics import label_of
from perfgate.quantities import format_value, pair_texts
from perfgate.render.kernel_names import compact_name
from perfgate.render.untrusted import shown_strings
from perfgate.vocabulary import NO_ENTRIES, Status

ROWS_PER_PAGE = 1000  # series per index page: 10,000 series stay pages well under 2 MB
SPARK_POINTS = 40  # latest commits a sparkline shows
STATIC = ("uPlot.iife.min.js", "uPlot.min.css", "uPlot.LICENSE", "dashboard.js", "dashboard.css")
_HERE = Path(__file__).resolve().parent
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def _environment() -> Any:
    return jinja2.Environment(loader=jinja2.FileSystemLoader(_HERE / "templates"), autoescape=True,
                              trim_blocks=True, lstrip_blocks=True, undefined=jinja2.StrictUndefined,
                              finalize=shown_strings)


def kernel_key(series: Series) -> tuple[str, ...]:
    return facts_key(series.facts, KERNEL_FIELDS)


def page_name(key: Sequence[str]) -> str:
    """A file name that is safe on every file system and unique per kernel: readable part, then a digest."""
    readable = _UNSAFE.sub("-", key[4] if key[2] == "region" else shown_kernel(key[3], key[2])).strip("-.")[:60] \
        or "kernel"
    return f"{readable}-{hashlib.sha256(json.dumps(list(key)).encode()).hexdigest()[:12]}.html"


def display_name(facts: dict[str, str], compact: bool = False) -> str:
    """A series' kernel (and region) as its page's title names it; ``compact``: each long template argument cut,
    as the index's row shows it (the full name is the row's tooltip)."""
    if facts["kind"] == "region":
        return f"region {facts['region'] or '(all)'}"
    shown = shown_kernel(facts["kernel"], facts["kind"])
    if compact:
        shown = compact_name(shown, function_name(facts["kernel"], facts["kind"]))
    return shown + (f" [{facts['region']}]" if facts["region"] else "")


def values_in(facts: Mapping[str, Any], *values: float) -> list[str]:
    """A series' values as the reports write them, in its metric's unit on one scale (``124.7 µs``, ``14.2 MB``;
    a bare ``124,702`` and ``4.034e+04`` side by side said neither the unit nor which was larger)."""
    if len(values) == 2:  # a before and an after
        return pair_texts(values[0], values[1], facts["unit"], facts["metric"])
    return [format_value(value, facts["unit"]) for value in values]


def sparkline(values: np.ndarray) -> str:
    """The last ``SPARK_POINTS`` values as an SVG polyline's points in a 120 x 24 box."""
    tail = values[-SPARK_POINTS:]
    if len(tail) < 2:
        return ""
    low, high = float(tail.min()), float(tail.max())
    span = high - low or 1.0
    xs = np.linspace(1, 119, len(tail))
    ys = 22 - (tail - low) / span * 20
    return " ".join(f"{x:.0f},{y:.1f}" for x, y in zip(xs, ys))


def _change_view(change: dict[str, Any], facts: Mapping[str, Any]) -> dict[str, Any]:
    before, after = values_in(facts, change["before"], change["after"])
    return {"commit": change["commit"][:12], "direction": change["direction"], "text": f"{change['change']:+.1%}",
            "before": before, "after": after,
            "confidence": f"{change['confidence']:.1%}", "creep": change["creep"],
            "cumulative": f"{change['cumulative']:+.1%}", "accepted": change["accepted"], "gate": False,
            "culprit": (change.get("culprit") or {}).get("commit"), "code": code_note(change.get("code"))}


def script_json(value: Any) -> Any:
    """JSON for a ``<script type="application/json">`` block: no '<', '>' or '&' can end or open an element."""
    text = json.dumps(shown_strings(value), separators=(",", ":"), allow_nan=False)
    return Markup(text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026"))


def _gate_view(verdict: dict[str, Any], facts: Mapping[str, Any]) -> dict[str, Any]:
    """The gate's verdict on a series' newest run, in the place of a change point's row."""
    before, after = values_in(facts, verdict["before"], verdict["after"])
    return {"commit": verdict["commit"][:12], "direction": verdict["status"], "text": f"{verdict['change']:+.1%}",
            "before": before, "after": after, "gate": True,
            "accepted": verdict.get("accepted"), "note": newest_note(verdict["status"])}


def newest_note(status: str) -> str:
    """The note under the gate's verdict on a newest run: as ``history changes`` words it where it lists it."""
    if status in AWAITED:
        return awaiting_note(status)
    return f"the gate judged the newest run {status}; later runs will tell whether the series changed"


def kernel_page(env: Any, branch: Branch, group: Sequence[Series], changes: dict[int, list[dict[str, Any]]],
                findings: Sequence[RunFindings] = (), newest: Mapping[int, dict[str, Any]] = NO_ENTRIES) -> str:
    """``findings``: the ncu rule findings the kernel's runs carried (none: no run knew them); ``newest``: per
    series, the gate's verdict on its newest run where no change point covers it (``perfgate.history.verdicts``)."""
    facts = group[0].facts
    metrics, data = [], []
    position = {commit: index for index, commit in enumerate(branch.commits)}
    for number_, series in enumerate(sorted(group, key=lambda s: s.facts["metric"])):
        element = f"chart-{number_}"
        marks = [{"x": position[c["commit"]], "direction": c["direction"], "gate": False} for c in changes[series.id]]
        gate = newest.get(series.id)
        if gate is not None:
            marks.append({"x": gate["x"], "direction": gate["status"], "gate": True})
        label, unit = label_of(series.facts["metric"]), series.facts["unit"]
        data.append({"element": element, "metric": series.facts["metric"], "unit": unit,
                     "y_label": f"{label} ({unit})" if unit else label,  # the axis says what and in which unit
                     "x": series.commits.tolist(), "y": series.values.tolist(), "changes": marks})
        metrics.append({"metric": series.facts["metric"], "element": element, "anchor": f"m{number_}",
                        "gate": _gate_view(gate, series.facts) if gate is not None else None,
                        "changes": [_change_view(c, series.facts) for c in reversed(changes[series.id])]})
    payload = {"commits": branch.commits, "metrics": data}
    return str(env.get_template("kernel.html.j2").render(
        root="../", back="../index.html", name=display_name(facts), test=facts["test"], gpu=facts["gpu"],
        branch=branch.name, metrics=metrics, data=script_json(payload), findings_known=bool(findings),
        findings=[{"commit": f.commit[:12], "appeared": f.appeared, "gone": f.gone}
                  for f in reversed(findings) if f.appeared or f.gone]))


def _index_rows(branch: Branch, changes: dict[int, list[dict[str, Any]]],
                newest: Mapping[int, dict[str, Any]]) -> list[dict[str, Any]]:
    rows = []
    for series in sorted(branch.series, key=lambda s: (kernel_key(s), s.facts["metric"])):
        last = changes[series.id][-1] if changes[series.id] else None
        gate = newest.get(series.id)  # the newest run: later than any change point
        rows.append({"gpu": series.facts["gpu"], "test": series.facts["test"],
                     "name": display_name(series.facts, compact=True), "full_name": display_name(series.facts),
                     "metric": series.facts["metric"], "latest": values_in(series.facts, float(series.values[-1]))[0],
                     "spark": sparkline(series.values), "href": "kernels/" + page_name(kernel_key(series)),
                     "change": (_gate_view(gate, series.facts) if gate else
                                _change_view(last, series.facts) if last else None)})
    return rows


def index_pages(env: Any, branch: Branch, changes: dict[int, list[dict[str, Any]]], kernels: int,
                newest: Mapping[int, dict[str, Any]] = NO_ENTRIES, notes: Sequence[str] = ()) -> Iterable[tuple[str, str]]:
    """The index pages; ``notes``: the runner spells that explained change points (``runner_spells``), on each."""
    rows = _index_rows(branch, changes, newest)
    count = max((len(rows) + ROWS_PER_PAGE - 1) // ROWS_PER_PAGE, 1)
    names = ["index.html", *(f"index-{n}.html" for n in range(2, count + 1))]
    written = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    for number_, name in enumerate(names):
        pages = [{"number": n + 1, "href": other, "current": n == number_} for n, other in enumerate(names)]
        yield name, str(env.get_template("index.html.j2").render(
            root="", branch=branch.name, commits=len(branch.commits), total=kernels, series=len(branch.series),
            changes=sum(len(c) for c in changes.values()), written=written, pages=pages,
            flagged=sum(1 for v in newest.values() if v["status"] == Status.REGRESSION.value), notes=notes,
            rows=rows[number_ * ROWS_PER_PAGE:(number_ + 1) * ROWS_PER_PAGE]))


def write_dashboard(history: History, branch_name: str, output: Path) -> int:
    """Write the site for ``branch_name`` to ``output``; returns how many HTML pages it has."""
    branch, changes, notes = changes_by_series(history, branch_name)
    if not branch.series:
        raise no_runs(history, branch_name)
    findings = load_findings(history, branch_name, branch.commits)
    newest = newest_runs(history, branch, changes)
    groups: dict[tuple[str, ...], list[Series]] = {}
    for series in branch.series:
        groups.setdefault(kernel_key(series), []).append(series)
    env = _environment()
    output = output.resolve()
    _check_replaceable(output)
    try:
        output.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{output.name}.", dir=output.parent))
    except OSError as exc:
        raise InputError(output, f"cannot write the dashboard ({exc.strerror})", "check the folder is writable") from None
    try:
        pages = _write_site(staging, env, branch, changes, groups, findings, newest, notes)
        _swap(staging, output)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return pages


def _write_site(staging: Path, env: Any, branch: Branch, changes: dict[int, list[dict[str, Any]]],
                groups: dict[tuple[str, ...], list[Series]],
                findings: Mapping[tuple[str, ...], list[RunFindings]], newest: Mapping[int, dict[str, Any]],
                notes: Sequence[str] = ()) -> int:
    (staging / "static").mkdir()
    (staging / "kernels").mkdir()
    for name in STATIC:
        shutil.copyfile(_HERE / "static" / name, staging / "static" / name)
    (staging / ".nojekyll").write_text("", encoding="utf-8")  # GitHub Pages: serve the files as they are
    pages = 0
    for key, group in groups.items():
        page = kernel_page(env, branch, group, changes, findings.get(key, []), newest)
        (staging / "kernels" / page_name(key)).write_text(page, encoding="utf-8")
        pages += 1
    for name, text in index_pages(env, branch, changes, len(groups), newest, notes):
        (staging / name).write_text(text, encoding="utf-8")
        pages += 1
    return pages


def _check_replaceable(output: Path) -> None:
    """The site replaces ``output`` whole: only an empty folder or an earlier dashboard may be there."""
    if output.exists() and not output.is_dir():
        raise InputError(output, "is a file, not a folder", "pass a folder for the site with -o")
    if output.is_dir() and any(output.iterdir()) and not (output / "static" / "dashboard.js").is_file():
        raise InputError(output, "is a folder that holds something other than a perfgate dashboard",
                         "pass a new or empty folder with -o: the site replaces it whole")


def _swap(staging: Path, output: Path) -> None:
    """Put the new site at ``output``; an earlier one is moved aside first and removed after."""
    old = None
    if output.exists():
        old = output.with_name(f".{output.name}.old-{os.getpid()}")
        output.rename(old)
    staging.rename(output)
    output.chmod(0o755)  # mkdtemp made it private
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
