"""``perfgate bisect``: the first bad commit between a good and a bad one, for one test.

Exit status: 0 = the search ran (a culprit, or a range when it could not name one: see ``culprit`` and ``range``),
2 = bad input (not in a repository, a ref that does not resolve, good not an ancestor of bad, a test that cannot
run at an end). With ``--step`` it is one step of ``git bisect run``, judging the checked-out HEAD (or
``--commit``): 0 good, 1 bad, 125 skip (build or test failed, or the result is like neither end), and 128 for bad
input, which makes git stop the bisection.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from perfgate.cli.common import settings_for
from perfgate.errors import EXIT_OK, InputError, PerfgateError
from perfgate.history.location import resolve_history_url
from perfgate.option_table import add_arguments
from perfgate.process import print_out
from perfgate.text import inert, inert_json

if TYPE_CHECKING:
    from perfgate.bisect.run import Plan
    from perfgate.cli.common import SubParsers

STEP_EXIT = {"good": 0, "bad": 1, "skip": 125}
STEP_BAD_INPUT = 128  # git bisect run stops on an exit status over 127


def add_parser(sub: SubParsers) -> None:
    parser = sub.add_parser(
        "bisect", help="find the first bad commit of a regression",
        description="Find the first commit between --good and --bad at which --test regressed: each commit is "
                    "checked out in a temporary git worktree, built (--build), its test run and judged against "
                    "both ends by perfgate's comparison. Commits the history judged cost nothing. See "
                    "docs/bisect.md.")
    parser.add_argument("--good", metavar="REF", help="a commit without the regression (default: the change point's "
                                                      "previous commit in the history)")
    parser.add_argument("--bad", metavar="REF", help="a commit with it (default: the change point's commit)")
    parser.add_argument("--test", required=True, metavar="NODEID", help="the test to run (a pytest node id)")
    parser.add_argument("--build", metavar="CMD", help="shell command that builds a commit (its failure: skip)")
    parser.add_argument("--command", metavar="CMD",
                        help="shell command that runs the test and writes its result (pytest-benchmark JSON, ncu "
                             "report) to $PERFGATE_BISECT_OUTPUT (default: pytest NODEID --benchmark-json)")
    parser.add_argument("--perfgate", action="store_true",
                        help="the test is a perf test: run it under pytest --perfgate (its baseline is the result)")
    parser.add_argument("--repeat", type=int, default=1, metavar="N",
                        help="runs of the test per commit, timings pooled (default: 1)")
    parser.add_argument("--budget", type=int, metavar="N", help="at most N runs of the test, both ends included; "
                                                                "then the narrowed range is reported")
    parser.add_argument("--change", metavar="SHA", help="the history's change point at this commit gives --good "
                                                        "and --bad")
    parser.add_argument("--record", action="store_true", help="write the culprit onto its change point in the "
                                                              "history (shown by history changes)")
    parser.add_argument("--step", action="store_true", help="one step of 'git bisect run': judge HEAD (or --commit) "
                                                            "and exit 0 good, 1 bad, 125 skip, 128 bad input")
    parser.add_argument("--commit", metavar="REF", help="with --step: the commit to judge (default: HEAD)")
    parser.add_argument("--format", choices=("text", "json"), default="text", help="output (default: text)")
    add_arguments(parser, "bisect")
    parser.set_defaults(func=cmd_bisect)


def cmd_bisect(args: argparse.Namespace) -> int:
    if not args.step:
        return _search(args)
    try:
        return _step(args)
    except PerfgateError as exc:  # git bisect run reads 2 as "bad": bad input must stop it instead
        sys.stderr.write(f"perfgate: error: {inert(exc)}\n")
        return STEP_BAD_INPUT
    except Exception as exc:  # nor may anything unforeseen pass for a verdict
        if os.environ.get("PERFGATE_DEBUG"):
            raise
        sys.stderr.write(f"perfgate: error: {type(exc).__name__}: {inert(exc, max_chars=300)}\n")
        return STEP_BAD_INPUT


def _runner(args: argparse.Namespace) -> tuple[Any, Any, Any]:
    from perfgate.bisect.measure import Runner, default_command, perfgate_command, repository_root
    from perfgate.options import selection

    root = repository_root(Path.cwd())
    settings = settings_for(args, "bisect")
    options = selection(metrics=settings.metrics, thresholds=settings.thresholds, significance=settings.significance,
                        allow_device_mismatch=False, kernel_aliases=settings.kernel_aliases,
                        kernel_thresholds=settings.kernel_thresholds,
                        accept_unpaired_kernels=settings.accept_unpaired_kernels)
    if args.repeat < 1 or (args.budget is not None and args.budget < 2):
        raise InputError("--repeat/--budget", "must be at least 1 (--repeat) and 2 (--budget: both ends)",
                         "give larger numbers")
    command = args.command or (perfgate_command if args.perfgate else default_command)(args.test)
    runner = Runner(root, args.test, args.build, command,
                    options, args.repeat)
    return runner, options, settings


def _search(args: argparse.Namespace) -> int:
    from perfgate.bisect.run import bisect_commits

    runner, options, settings = _runner(args)
    url, branch = _history_of(args, settings)
    plan = _plan(args, runner.root, url, branch, options)
    outcome = bisect_commits(runner, plan, options, progress=_progress)
    if args.record and outcome["culprit"] is None:
        sys.stderr.write("perfgate bisect: nothing recorded: no culprit was named\n")
    elif args.record:
        try:
            outcome["recorded"] = _record(args, runner.root, url, branch, outcome)
        except PerfgateError:
            _print(args.format, outcome)  # what the runs found is shown before the error line
            raise
    _print(args.format, outcome)
    return EXIT_OK


def _print(fmt: str, outcome: dict[str, Any]) -> None:
    from perfgate.bisect.run import render_text

    text = render_text(outcome)
    print_out(inert_json(_json(outcome)) if fmt == "json" else
              "".join(inert(line, 400) + "\n" for line in text.splitlines()))


def _progress(line: str) -> None:
    sys.stderr.write(inert(line) + "\n")


def _json(outcome: dict[str, Any]) -> str:
    import json

    return json.dumps(outcome, indent=1) + "\n"


def _history_of(args: argparse.Namespace, settings: Any) -> tuple[str | None, str]:
    """The history URL to seed from (None: none given or configured) and its branch."""
    return resolve_history_url(args.db, settings.history), args.branch or settings.history_branch


def _plan(args: argparse.Namespace, root: Path, url: str | None, branch: str, options: Any) -> Plan:
    """The range to search: --good/--bad, else the change point (--change, else the test's newest regression);
    the history's verdicts on the change point's two commits, where they lie in the range, cost nothing, and so
    do the test's points it holds for any commit of the range."""
    from perfgate.bisect.measure import resolve_commit
    from perfgate.bisect.run import Plan
    from perfgate.bisect.search import Judged

    given = {name: resolve_commit(root, ref, f"--{name}") for name, ref in (("good", args.good), ("bad", args.bad))
             if ref}
    change = _change_point(args, root, url, branch, given) if url is not None else None
    if change is None and args.change:
        raise InputError("--change", f"the history holds no change point of {args.test!r} at {args.change!r}",
                         "pick one that 'perfgate history changes' lists for the test")
    if change is None and len(given) < 2:
        raise InputError("perfgate bisect", "needs --good and --bad, or a history with a change point of the test",
                         "give --good REF --bad REF, or --db with the history that found the change")
    if change is None:
        plan = Plan(given["good"], given["bad"], {}, args.budget)
    else:
        known = {change["previous"]: Judged.GOOD, change["bad"]: Judged.BAD}
        plan = Plan(given.get("good", change["previous"]), given.get("bad", change["bad"]), known, args.budget)
    if url is None:
        return plan
    return plan._replace(recorded=_recorded(args, root, url, branch, plan, options))


def _recorded(args: argparse.Namespace, root: Path, url: str, branch: str, plan: Plan,
              options: Any) -> dict[str, Any]:
    """The test's measurements the history holds for the commits of the plan's range."""
    from perfgate.bisect.measure import commits_between

    return _recorded_at(args, url, branch, commits_between(root, plan.good, plan.bad), options)


def _recorded_at(args: argparse.Namespace, url: str, branch: str, commits: Sequence[str],
                 options: Any) -> dict[str, Any]:
    """The test's measurements the history holds at ``commits``; none where the history does not exist."""
    from perfgate.bisect.recorded import recorded_measurements
    from perfgate.history.db import open_history, sqlite_path

    path = sqlite_path(url)
    if path is not None and not path.exists():
        return {}
    with open_history(url, create=False, max_time=args.max_time) as history:
        return recorded_measurements(history, branch, args.test, commits, options)


def _change_point(args: argparse.Namespace, root: Path, url: str, branch: str,
                  given: dict[str, str]) -> dict[str, Any] | None:
    """The test's regression change point in the history that lies within the given ends (at --change, else the
    newest), with its two commits as this repository resolves them (``previous``, ``bad``); None where there is
    none, or the history does not exist."""
    from perfgate.bisect.measure import is_ancestor, resolve_commit
    from perfgate.history.culprits import of_test
    from perfgate.history.db import open_history, sqlite_path
    from perfgate.history.detect import find_changes

    path = sqlite_path(url)
    if path is not None and not path.exists():
        return None
    with open_history(url, create=False, max_time=args.max_time) as history:
        found = [c for c in find_changes(history, branch) if of_test(c, args.test) and not c["awaiting"]
                 and c["direction"] == "regression"]
    for change in found:
        if args.change and not change["commit"].startswith(args.change.lower()):
            continue
        try:  # a commit of the history this clone does not hold is no help
            previous = resolve_commit(root, change["previous_commit"], "--db")
            bad = resolve_commit(root, change["commit"], "--db")
        except InputError:
            continue
        if is_ancestor(root, given.get("good", previous), previous) and is_ancestor(root, bad, given.get("bad", bad)):
            return {**change, "previous": previous, "bad": bad}
    return None


def _holds(root: Path, change: dict[str, Any], culprit: str) -> bool:
    """Whether the change point's commits are around ``culprit`` (previous before it, the change at or after)."""
    from perfgate.bisect.measure import is_ancestor

    return (is_ancestor(root, change["previous_commit"], culprit) and change["previous_commit"] != culprit
            and is_ancestor(root, culprit, change["commit"]))


def _record(args: argparse.Namespace, root: Path, url: str | None, branch: str, outcome: dict[str, Any]) -> str:
    """The culprit written onto the test's change point that holds it; returns the change point's commit."""
    from perfgate.history.culprits import Culprit, of_test, record_culprit
    from perfgate.history.db import open_history
    from perfgate.history.detect import find_changes
    from perfgate.history.record import iso_time

    if url is None:
        raise InputError("--record", "no history is given", "pass --db URL or set [tool.perfgate] history")
    with open_history(url, create=False, max_time=args.max_time) as history:
        changes = [c for c in find_changes(history, branch) if of_test(c, args.test) and not c["awaiting"]]
        at = [c for c in changes if _holds(root, c, outcome["culprit"])]
        if args.change:
            at = [c for c in at if c["commit"].startswith(args.change.lower())]
        if not at:
            raise InputError("--record", f"the history holds no change point of {args.test!r} at the bad end",
                             "bisect the range of a change point that 'perfgate history changes' lists")
        record_culprit(history, Culprit(branch, args.test, at[0]["commit"], outcome["culprit"], outcome["range"][0],
                                        len(outcome["runs"]), iso_time(None)))
    return str(at[0]["commit"])


def _step(args: argparse.Namespace) -> int:
    """One ``git bisect run`` step: HEAD judged against both ends (each end's result kept for the next step)."""
    from perfgate.bisect.step import judge_step

    runner, options, settings = _runner(args)
    url, branch = _history_of(args, settings)

    def recorded_of(commits: Sequence[str]) -> Mapping[str, Any]:
        return {} if url is None else _recorded_at(args, url, branch, commits, options)

    verdict = judge_step(runner, options, args.good, args.bad, args.commit or "HEAD", recorded_of)
    sys.stderr.write(f"perfgate bisect: {verdict.value}\n")
    return STEP_EXIT[verdict.value]
