"""A whole bisection: the range checked, the history's verdicts seeded, the two ends measured, the search run.

The ends are measured first (they are the references every other commit is judged against); when the bad end
did not regress from the good one there is nothing to find and no commit is named. The outcome is a plain
dict, the JSON ``perfgate bisect --format json`` prints: ``culprit`` (a full hash) or null and ``range`` (the
good and bad commit that hold it), ``runs`` (the commits the test ran on, in order), ``verdicts`` (every commit
judged, with where its verdict came from).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, NamedTuple

from perfgate.bisect.measure import (
    AUTO_LOOKS,
    EndsCompared,
    Result,
    Runner,
    commits_between,
    ends_differ,
    judgement,
    settled_ends,
)
from perfgate.bisect.recorded import as_references, comparable, on_devices_of
from perfgate.bisect.search import FOUND, Judged, bisect
from perfgate.errors import InputError
from perfgate.vocabulary import NO_ENTRIES, Verdict

if TYPE_CHECKING:
    from perfgate.compare import CompareOptions
    from perfgate.table import Measurement

REASONS = {
    FOUND: "the first bad commit directly follows a good one",
    "budget": "the budget of runs is spent: the first bad commit is in the range",
    "skipped": "every commit left in the range was skipped: the first bad commit is one of them or the bad end",
    "no change": "the bad end did not regress from the good end",
}


class Plan(NamedTuple):
    good: str
    bad: str
    known: dict[str, Judged]  # verdicts from the history: cost nothing
    budget: int | None
    recorded: Mapping[str, Measurement] = NO_ENTRIES  # the test's points the history holds, per commit: no run


class _NotComparable(Exception):
    """A run shows that the history's measurements cannot be its references (``comparable``)."""


class _Session(NamedTuple):
    """What the runs made so far: kept across a restart without the history."""

    runs: list[str]  # the commits run, in order (a commit run again listed once per run)
    measured: dict[str, Result]
    kept: dict[str, list[Path]]  # an end's result file per run of it (pooled when its time was undecided)
    folder: Path


class _Sides(NamedTuple):
    good: Measurement
    bad: Measurement
    from_history: frozenset[str]  # the ends' commits whose measurement is the history's


def bisect_commits(runner: Runner, plan: Plan, options: CompareOptions,
                   progress: Callable[[str], None] = lambda line: None) -> dict[str, Any]:
    """Search ``plan``'s range with ``runner``; the outcome as JSON-ready data. Commits the history holds are
    judged, and serve as ends, without a run; when the first run shows the history is no reference for this
    machine's runs, the search starts again with the ends run (the runs made so far kept)."""
    commits = commits_between(runner.root, plan.good, plan.bad)
    with tempfile.TemporaryDirectory(prefix="perfgate-bisect-ends-") as folder:
        session = _Session([], {}, {}, Path(folder))
        try:
            return _search(runner, plan, options, progress, commits, session)
        except _NotComparable as exc:
            progress(f"the history is no reference for this machine's runs ({exc}): the ends are run")
            return _search(runner, plan._replace(recorded=NO_ENTRIES), options, progress, commits, session)


def _search(runner: Runner, plan: Plan, options: CompareOptions, progress: Callable[[str], None],
            commits: list[str], session: _Session) -> dict[str, Any]:
    runs, measured = session.runs, session.measured
    low, high = _narrowed(commits, plan.known)
    sides = _ends(runner, commits[low], commits[high], plan, session, progress)
    verdicts = _end_verdicts(plan, commits, (commits[low], commits[high]), sides)
    sides, ends = _settled(runner, sides, (commits[low], commits[high]), plan, session, progress)
    if ends.looks > 1:
        for verdict in verdicts[-2:]:
            verdict["note"] += f"; after {ends.looks} runs, timings pooled"
    if ends.verdict != Verdict.FAIL.value and sides.from_history:  # not checked against a run yet: runs decide
        raise _NotComparable(f"its ends compared: {ends.verdict}")
    if ends.verdict != Verdict.FAIL.value:
        verdicts[-1].update(verdict="good", note=f"the bad end; compared with the good end: {ends.verdict}")
        return _outcome(None, commits[low], commits[high], runs, verdicts, "no change", len(commits) - 1)
    if ends.counters:  # deterministic counters moved: exact, one run a commit (--repeat is for time)
        runner = runner._replace(repeat=1)
    known = _judged_by_history(commits[low + 1:high], plan.recorded, sides, options, verdicts)
    checked = {"done": not sides.from_history}  # an end the history's: the runs between check it
    held = (commits[low] in sides.from_history, commits[high] in sides.from_history)

    def judged(commit: str) -> Judged:
        nonlocal sides
        last: dict[str, Any] = {}

        def again(run: Measurement, looks: int) -> bool:
            ends_now = _references(sides, held, dict(checked), run, options)
            if isinstance(ends_now, str):
                return False
            decided = judgement(ends_now.good, run, ends_now.bad, options, looks)
            last.update(looks=looks, judged=decided)
            room = plan.budget is None or len(runs) + looks < plan.budget
            return decided.undecided and not ends.counters and looks < AUTO_LOOKS and room

        result = measured.get(commit)
        if result is None:
            result = measured[commit] = runner.run(commit, again=again)
            runs.extend([commit] * result.looks)
        elif result.measurement is not None:
            again(result.measurement, result.looks)
        if result.measurement is None:
            verdict, note = Judged.SKIP, result.problem
        else:
            ends_now = _references(sides, held, checked, result.measurement, options)
            if isinstance(ends_now, str):
                raise _NotComparable(ends_now)
            sides = ends_now
            verdict = last["judged"].verdict
            looked = f" after {last['looks']} runs, timings pooled" if last["looks"] > 1 else ""
            note = ("" if verdict is not Judged.SKIP else "neither like the good end nor like the bad end") + looked
        verdicts.append({"commit": commit, "verdict": verdict.value, "by": "run", "note": note.strip()})
        progress(f"{commit[:12]}: {verdict.value}{f' ({note.strip()})' if note.strip() else ''}")
        return verdict

    outcome = bisect(commits[low:high + 1], judged, known=known, budget=plan.budget, spent=lambda: len(runs))
    found = _outcome(outcome.culprit, outcome.good, outcome.bad, runs, verdicts, outcome.reason, len(commits) - 1)
    found["judged_on"] = "counters" if ends.counters else "time"
    found["runs_per_commit"] = runner.repeat
    found["from_history"] = [c for c in (commits[low], commits[high]) if c in sides.from_history]
    return found


def _end_verdicts(plan: Plan, commits: list[str], ends: tuple[str, str], sides: _Sides) -> list[dict[str, Any]]:
    """The verdicts known before any commit between the ends runs: the history's, then the ends'."""
    verdicts: list[dict[str, Any]] = [{"commit": c, "verdict": v.value, "by": "history", "note": ""}
                                      for c, v in plan.known.items() if c in commits]
    for commit, which in zip(ends, ("good", "bad"), strict=True):
        by = "history" if commit in sides.from_history else "run"
        if by == "run" or commit not in plan.known:
            verdicts.append({"commit": commit, "verdict": which, "by": by, "note": f"the {which} end"})
    return verdicts


def _references(sides: _Sides, held: tuple[bool, bool], checked: dict[str, bool], run: Measurement,
                options: CompareOptions) -> _Sides | str:
    """The ends to judge ``run`` against, or why the history's cannot be; ``held``: whether the good end, the bad
    end is the history's. Each run is checked until one is like an end the history holds (``checked``)."""
    if checked["done"]:
        return sides
    references = as_references(sides.good, sides.bad, held, run, options)
    if isinstance(references, str):
        return references
    checked["done"] = references.checked
    return sides._replace(good=references.good, bad=references.bad)


def _narrowed(commits: list[str], known: Mapping[str, Judged]) -> tuple[int, int]:
    """The newest commit the history calls good and the oldest after it that it calls bad."""
    low = max((at for at, c in enumerate(commits[:-1]) if known.get(c) is Judged.GOOD), default=0)
    high = min((at for at, c in enumerate(commits) if at > low and known.get(c) is Judged.BAD),
               default=len(commits) - 1)
    return low, high


def _settled(runner: Runner, sides: _Sides, ends: tuple[str, str], plan: Plan, session: _Session,
             progress: Callable[[str], None]) -> tuple[_Sides, EndsCompared]:
    """The ends compared; when both were run here and their time is inconclusive, each is run again and its
    timings pooled (``settled_ends``), within the budget."""
    if sides.from_history:
        return sides, ends_differ(sides.good, sides.bad, runner.options)

    def again(looks: int) -> tuple[Path, Path] | None:
        if plan.budget is not None and len(session.runs) + 2 > plan.budget:
            return None
        progress(f"the ends' time is undecided: each is run again ({looks + 1} of {AUTO_LOOKS})")
        good, bad = (_end_file(runner, commit, option, session, progress)
                     for commit, option in zip(ends, ("--good", "--bad"), strict=True))
        return good, bad

    settled = settled_ends(session.kept[ends[0]], session.kept[ends[1]], runner.options, again)
    return sides._replace(good=settled.good, bad=settled.bad), settled.compared


def _ends(runner: Runner, good: str, bad: str, plan: Plan, session: _Session,
          progress: Callable[[str], None]) -> _Sides:
    """The two ends: the history's measurements where it holds them, else runs; when one end is run and the other
    the history's, the run checks the history (not comparable: that end is run too)."""
    from_history = {commit for commit in (good, bad) if commit in plan.recorded}
    got = {commit: plan.recorded[commit] for commit in from_history}
    for commit, option in ((good, "--good"), (bad, "--bad")):
        if commit not in got:
            got[commit] = _end(runner, commit, option, session, progress)
    if len(from_history) == 1:
        (held,) = from_history
        ran = got[bad if held == good else good]
        if comparable(got[held], ran, runner.options):
            from_history = set()
            got[held] = _end(runner, held, "--good" if held == good else "--bad", session, progress)
        else:
            got[held] = on_devices_of(got[held], ran)
    for commit in sorted(from_history, key=lambda c: c != good):
        progress(f"{commit[:12]}: from the history ({'good' if commit == good else 'bad'} end)")
    return _Sides(got[good], got[bad], frozenset(from_history))


def _judged_by_history(between: list[str], recorded: Mapping[str, Measurement], sides: _Sides,
                       options: CompareOptions, verdicts: list[dict[str, Any]]) -> dict[str, Judged]:
    """The commits between the ends that the history holds, judged from it when an end is the history's (one end
    run: the history's on its devices, as that end checked it)."""
    if not sides.from_history:
        return {}
    known = {}
    for commit in between:
        if commit in recorded:
            held = on_devices_of(recorded[commit], sides.bad)  # the run end's, or the history's: the same devices
            known[commit] = judgement(sides.good, held, sides.bad, options).verdict
            verdicts.append({"commit": commit, "verdict": known[commit].value, "by": "history", "note": ""})
    return known


def _end(runner: Runner, commit: str, option: str, session: _Session,
         progress: Callable[[str], None]) -> Measurement:
    """An end of the range measured: it must build and its test must run, or there is nothing to judge against."""
    if commit in session.kept:  # run before the search started again without the history
        progress(f"{commit[:12]}: measured ({option[2:]} end)")
    else:
        _end_file(runner, commit, option, session, progress)
    measurement = session.measured[commit].measurement
    assert measurement is not None  # _end_file keeps only a run that measured
    return measurement


def _end_file(runner: Runner, commit: str, option: str, session: _Session, progress: Callable[[str], None]) -> Path:
    """One more run of an end, its result file kept (its runs are pooled when their time is undecided)."""
    files = session.kept.setdefault(commit, [])
    path = session.folder / f"{commit}-{len(files) + 1}.json"
    session.runs.append(commit)
    result = runner.run(commit, keep=path)
    if result.measurement is None:
        raise InputError(option, f"commit {commit[:12]} cannot be measured: {result.problem}",
                         "check --test (the test must exist and pass at both ends) and --build")
    if not files:  # the first run of it as an end: the measurement it is shown by
        session.measured[commit] = result
    files.append(path)
    progress(f"{commit[:12]}: measured ({option[2:]} end{f', run {len(files)}' if len(files) > 1 else ''})")
    return path


def _outcome(culprit: str | None, good: str, bad: str, runs: list[str], verdicts: list[dict[str, Any]],
             reason: str, span: int) -> dict[str, Any]:
    return {"culprit": culprit, "range": [good, bad], "runs": runs, "commits": span, "stopped": reason,
            "reason": REASONS.get(reason, reason), "verdicts": verdicts}


def render_text(outcome: dict[str, Any]) -> str:
    """One short summary a person reads."""
    runs = len(outcome["runs"])
    held = outcome.get("from_history") or []
    history_note = f"; the history's: {', '.join(c[:12] for c in held)} (no run)" if held else ""
    skipped = [v["commit"][:12] for v in outcome["verdicts"] if v["verdict"] == "skip" and v["by"] == "run"]
    skip_note = f"; skipped: {', '.join(skipped)}" if skipped else ""
    if outcome["culprit"]:
        head = f"first bad commit: {outcome['culprit']}"
    else:
        good, bad = outcome["range"]
        head = f"no culprit named: {outcome['reason']}; range {good[:12]}..{bad[:12]}"
    recorded = f"\nrecorded on the change point at {outcome['recorded'][:12]}" if outcome.get("recorded") else ""
    return f"{head}\n{runs} runs of the test over {outcome['commits']} commits{history_note}{skip_note}{recorded}\n"
