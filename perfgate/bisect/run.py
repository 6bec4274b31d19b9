"""A whole bisection: the range checked, the history's verdicts seeded, the two ends measured, the search run.

The ends are measured first (they are the references every other commit is judged against); when the bad end
did not regress from the good one there is nothing to find and no commit is named. The outcome is a plain
dict, the JSON ``perfgate bisect --format json`` prints: ``culprit`` (a full hash) or null and ``range`` (the
good and bad commit that hold it), ``runs`` (the commits the test ran on, in order), ``verdicts`` (every commit
judged, with where its verdict came from).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, NamedTuple

from perfgate.bisect.measure import Runner, commits_between, ends_differ, judge
from perfgate.bisect.search import FOUND, Judged, bisect
from perfgate.errors import InputError
from perfgate.vocabulary import Verdict

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


def bisect_commits(runner: Runner, plan: Plan, options: CompareOptions,
                   progress: Callable[[str], None] = lambda line: None) -> dict[str, Any]:
    """Search ``plan``'s range with ``runner``; the outcome as JSON-ready data."""
    commits = commits_between(runner.root, plan.good, plan.bad)
    runs: list[str] = []
    verdicts: list[dict[str, Any]] = [{"commit": c, "verdict": v.value, "by": "history", "note": ""}
                                      for c, v in plan.known.items() if c in commits]
    low, high = _narrowed(commits, plan.known)
    good = _end(runner, commits[low], "--good", runs, progress)
    bad = _end(runner, commits[high], "--bad", runs, progress)
    verdicts += [{"commit": commits[low], "verdict": "good", "by": "run", "note": "the good end"},
                 {"commit": commits[high], "verdict": "bad", "by": "run", "note": "the bad end"}]
    ends = ends_differ(good, bad, options)
    if ends.verdict != Verdict.FAIL.value:
        verdicts[-1].update(verdict="good", note=f"the bad end; compared with the good end: {ends.verdict}")
        return _outcome(None, commits[low], commits[high], runs, verdicts, "no change", len(commits) - 1)
    if ends.counters:  # deterministic counters moved: exact, one run a commit (--repeat is for time)
        runner = runner._replace(repeat=1)

    def judged(commit: str) -> Judged:
        runs.append(commit)
        result = runner.run(commit)
        if result.measurement is None:
            verdict, note = Judged.SKIP, result.problem
        else:
            verdict = judge(good, result.measurement, bad, options)
            note = "" if verdict is not Judged.SKIP else "neither like the good end nor like the bad end"
        verdicts.append({"commit": commit, "verdict": verdict.value, "by": "run", "note": note})
        progress(f"{commit[:12]}: {verdict.value}{f' ({note})' if note else ''}")
        return verdict

    outcome = bisect(commits[low:high + 1], judged, budget=None if plan.budget is None else max(plan.budget - 2, 0))
    found = _outcome(outcome.culprit, outcome.good, outcome.bad, runs, verdicts, outcome.reason, len(commits) - 1)
    found["judged_on"] = "counters" if ends.counters else "time"
    found["runs_per_commit"] = runner.repeat
    return found


def _narrowed(commits: list[str], known: dict[str, Judged]) -> tuple[int, int]:
    """The newest commit the history calls good and the oldest after it that it calls bad."""
    low = max((at for at, c in enumerate(commits[:-1]) if known.get(c) is Judged.GOOD), default=0)
    high = min((at for at, c in enumerate(commits) if at > low and known.get(c) is Judged.BAD),
               default=len(commits) - 1)
    return low, high


def _end(runner: Runner, commit: str, option: str, runs: list[str],
         progress: Callable[[str], None]) -> Measurement:
    """An end of the range measured: it must build and its test must run, or there is nothing to judge against."""
    runs.append(commit)
    result = runner.run(commit)
    if result.measurement is None:
        raise InputError(option, f"commit {commit[:12]} cannot be measured: {result.problem}",
                         "check --test (the test must exist and pass at both ends) and --build")
    progress(f"{commit[:12]}: measured ({option[2:]} end)")
    return result.measurement


def _outcome(culprit: str | None, good: str, bad: str, runs: list[str], verdicts: list[dict[str, Any]],
             reason: str, span: int) -> dict[str, Any]:
    return {"culprit": culprit, "range": [good, bad], "runs": runs, "commits": span, "stopped": reason,
            "reason": REASONS.get(reason, reason), "verdicts": verdicts}


def render_text(outcome: dict[str, Any]) -> str:
    """One short summary a person reads."""
    runs = len(outcome["runs"])
    skipped = [v["commit"][:12] for v in outcome["verdicts"] if v["verdict"] == "skip" and v["by"] == "run"]
    skip_note = f"; skipped: {', '.join(skipped)}" if skipped else ""
    if outcome["culprit"]:
        head = f"first bad commit: {outcome['culprit']}"
    else:
        good, bad = outcome["range"]
        head = f"no culprit named: {outcome['reason']}; range {good[:12]}..{bad[:12]}"
    recorded = f"\nrecorded on the change point at {outcome['recorded'][:12]}" if outcome.get("recorded") else ""
    return f"{head}\n{runs} runs of the test over {outcome['commits']} commits{skip_note}{recorded}\n"
