"""A commit measured: checked out in a temporary ``git worktree`` (always removed), built, its test run, its result
read by perfgate's readers, and judged against the good and the bad end with perfgate's own comparison.

The test writes its result to the file named by ``$PERFGATE_BISECT_OUTPUT``: by default pytest runs NODEID with
pytest-benchmark's ``--benchmark-json`` there (its raw timings kept, so the comparison's Mann-Whitney test judges
time); with ``--perfgate`` under ``pytest --perfgate``, its baseline written there (ncu's counters); ``--command``
gives any other command that writes a file perfgate reads (a pytest-benchmark JSON, an ncu report, a baseline).
pytest runs with the Python perfgate runs in. A commit whose build or test fails, or whose result is missing, is
skipped, never judged.
"""

from __future__ import annotations

import json
import math
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Callable, NamedTuple, Sequence

from perfgate.bisect.search import Judged
from perfgate.errors import InputError, PerfgateError
from perfgate.vocabulary import Status, Verdict

if TYPE_CHECKING:
    from perfgate.compare import CompareOptions
    from perfgate.table import Measurement

OUTPUT_VARIABLE = "PERFGATE_BISECT_OUTPUT"
TEST_VARIABLE = "PERFGATE_BISECT_TEST"
STEP_SECONDS = 3600.0  # a build or a test that runs longer is stuck: its commit is skipped
# A commit whose time could not be told from either end is run again, its timings pooled, up to this many times
# in all before it is skipped; each look tests at the significance divided by the looks taken (Bonferroni), so
# looking again does not make a chance difference more likely to pass for a change.
AUTO_LOOKS = 3


def default_command(test: str) -> str:
    """pytest running ``test`` with its timings written where bisect reads them (raw data: the statistics)."""
    return (f"{shlex.quote(sys.executable)} -m pytest {shlex.quote(test)} -q -p no:cacheprovider "
            f"--benchmark-only --benchmark-json=\"${OUTPUT_VARIABLE}\" --benchmark-save-data")


def perfgate_command(test: str) -> str:
    """pytest --perfgate measuring ``test`` (ncu's counters, or the configured source), its baseline written to a
    folder of its own and copied where bisect reads it: one GPU, one baseline file."""
    folder = f"\"${OUTPUT_VARIABLE}.d\""
    return (f"{shlex.quote(sys.executable)} -m pytest {shlex.quote(test)} -q -p no:cacheprovider --perfgate "
            f"--perfgate-update --perfgate-baselines {folder} && cp {folder}/*/*.json \"${OUTPUT_VARIABLE}\"")


def git(root: Path, *args: str) -> str:
    """Run git in ``root``; its failure is an InputError quoting git's first line."""
    try:
        done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=300, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise InputError("git", f"cannot run ({exc})", "install git and run perfgate bisect in a repository") from None
    if done.returncode != 0:
        first = (done.stderr.strip().splitlines() or ["failed"])[0]
        raise InputError(f"git {args[0]}", first, "run perfgate bisect inside the repository, with refs it holds")
    return done.stdout.strip()


def repository_root(here: Path) -> Path:
    try:
        return Path(git(here, "rev-parse", "--show-toplevel"))
    except InputError:
        raise InputError(here, "is not inside a git repository",
                         "run perfgate bisect in the repository whose commits to search") from None


def resolve_commit(root: Path, ref: str, option: str) -> str:
    """The full hash of ``ref``, or an InputError naming the option that gave it."""
    try:
        return git(root, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}")
    except InputError:
        raise InputError(option, f"{ref!r} is not a commit of this repository",
                         "give a commit hash, branch or tag that 'git rev-parse' resolves") from None


def commits_between(root: Path, good: str, bad: str) -> list[str]:
    """``good``, then the first-parent commits up to ``bad``, oldest first; ``good`` must be an ancestor of ``bad``."""
    if good == bad:
        raise InputError("--good", "is the same commit as --bad", "give a good commit older than the bad one")
    if not is_ancestor(root, good, bad):
        raise InputError("--good", f"{good[:12]} is not an ancestor of --bad {bad[:12]}",
                         "give the older, good commit as --good and the newer, bad one as --bad")
    listed = git(root, "rev-list", "--reverse", "--first-parent", "--ancestry-path", f"{good}..{bad}").split()
    if not listed or listed[-1] != bad:
        raise InputError("--good", f"{good[:12]} is not on the first-parent line of --bad {bad[:12]}",
                         "give a good commit that 'git log --first-parent BAD' lists")
    return [good, *listed]


class Result(NamedTuple):
    """A commit's run: its measurement, or None and why it cannot be judged."""

    measurement: Measurement | None
    problem: str
    looks: int = 1  # times the test ran ``repeat`` times on the commit, pooled (more when time was undecided)


class Runner(NamedTuple):
    """How a commit is built and tested."""

    root: Path
    test: str
    build: str | None
    command: str
    options: CompareOptions  # what the comparison wants read (its metrics, the inputs of its derived ones)
    repeat: int = 1  # runs of the test per commit whose samples are pooled (time: more samples, more power)

    def run(self, commit: str, keep: Path | None = None,
            again: Callable[[Measurement, int], bool] | None = None) -> Result:
        """Check ``commit`` out in a temporary worktree, build it, run its test; the worktree is always removed.
        ``keep``: where to copy the result file (read back by a later ``git bisect run`` step). ``again``: given
        the measurement so far and the looks taken, whether to run the test ``repeat`` times more in the same
        worktree (no second build) and pool the timings."""
        scratch = Path(tempfile.mkdtemp(prefix="perfgate-bisect-"))
        tree = scratch / "tree"
        try:
            git(self.root, "worktree", "add", "--detach", "--quiet", str(tree), commit)
            if self.build:
                failed = _shell(self.build, tree, {})
                if failed:
                    return Result(None, f"build failed ({failed})")
            outputs: list[Path] = []
            looks = 0
            while True:
                for _ in range(self.repeat):
                    output = scratch / f"result-{len(outputs)}.json"
                    failed = _shell(self.command, tree, {OUTPUT_VARIABLE: str(output), TEST_VARIABLE: self.test})
                    if failed:
                        return Result(None, f"test failed ({failed})", looks + 1)
                    if not output.is_file():
                        return Result(None, "the test wrote no result", looks + 1)
                    outputs.append(output)
                looks += 1
                result = outputs[0] if len(outputs) == 1 else _pooled(outputs, scratch / f"pooled-{looks}.json")
                measurement = read_result(result, self.options)
                if measurement.table.empty:
                    return Result(None, "its result holds no measurement (a benchmark test takes the benchmark "
                                        "fixture; a perf test needs --perfgate)", looks)
                if again is None or not again(measurement, looks):
                    break
            if keep is not None:
                keep.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(result, keep)
            return Result(measurement, "", looks)
        except PerfgateError as exc:
            return Result(None, str(exc))
        finally:
            removed = subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=self.root,
                                     capture_output=True, timeout=300, check=False)
            shutil.rmtree(scratch, ignore_errors=True)
            if removed.returncode != 0:  # never added, or removed half-way: git's record of it goes too
                subprocess.run(["git", "worktree", "prune"], cwd=self.root, capture_output=True, timeout=300,
                               check=False)


def _shell(command: str, cwd: Path, extra: dict[str, str]) -> str:
    """Run ``command`` with the shell in ``cwd``; "" when it succeeded, else what went wrong."""
    env = {**os.environ, **extra}
    try:
        done = subprocess.run(command, shell=True, cwd=cwd, env=env, capture_output=True, timeout=STEP_SECONDS,
                              check=False)
    except subprocess.TimeoutExpired:
        return f"still running after {STEP_SECONDS:.0f} s"
    if done.returncode == 0:
        return ""
    tail = (done.stderr or done.stdout).decode(errors="replace").strip().splitlines()
    return f"exit {done.returncode}" + (f": {tail[-1][:200]}" if tail else "")


def read_result(path: Path, options: CompareOptions) -> Measurement:
    """A commit's result read and prepared as ``perfgate compare`` reads its inputs (region totals added)."""
    from perfgate.prepare import read_prepared

    return read_prepared(path, options)


def is_ancestor(root: Path, older: str, newer: str) -> bool:
    """Whether ``older`` is ``newer`` or one of its ancestors."""
    return subprocess.run(["git", "merge-base", "--is-ancestor", older, newer], cwd=root, capture_output=True,
                          timeout=300, check=False).returncode == 0


def _pooled(outputs: list[Path], path: Path) -> Path:
    """pytest-benchmark results of repeated runs as one: each benchmark's raw timings put together."""
    documents = [json.loads(output.read_text(encoding="utf-8")) for output in outputs]
    first = documents[0]
    for document in documents[1:]:
        for into, more in zip(first.get("benchmarks", []), document.get("benchmarks", []), strict=False):
            data = into.get("stats", {}).get("data")
            if isinstance(data, list) and isinstance(more.get("stats", {}).get("data"), list):
                data.extend(more["stats"]["data"])
    path.write_text(json.dumps(first), encoding="utf-8")
    return path


def judge(good: Measurement, candidate: Measurement, bad: Measurement, options: CompareOptions) -> Judged:
    """Bad when the candidate regressed from the good end and the bad end did not regress from it; good when the
    bad end regressed from it and it did not regress from the good end; anything else (both, neither, an
    inconclusive change) is skipped: under noise no commit is called either way."""
    return judgement(good, candidate, bad, options).verdict


class Judgement(NamedTuple):
    verdict: Judged
    undecided: bool  # skipped because a comparison could not tell (inconclusive, or like both ends): more samples
    # of its time may decide it, unlike a commit that regressed from the good end and still from it to the bad one


def judgement(good: Measurement, candidate: Measurement, bad: Measurement, options: CompareOptions,
              looks: int = 1) -> Judgement:
    """``judge``'s verdict, and whether a skip is for want of evidence; ``looks``: the runs of the candidate so far,
    each a test of the same question: the significance is divided among them."""
    from perfgate.compare import compare_tables

    options = options._replace(significance=options.significance / looks)

    from_good = compare_tables(good, candidate, options)
    to_bad = compare_tables(candidate, bad, options)
    if from_good.inconclusive or to_bad.inconclusive:
        return Judgement(Judged.SKIP, True)
    if from_good.verdict == Verdict.FAIL.value and to_bad.verdict == Verdict.PASS.value:
        return Judgement(Judged.BAD, False)
    if to_bad.verdict == Verdict.FAIL.value and from_good.verdict == Verdict.PASS.value:
        return Judgement(Judged.GOOD, False)
    return Judgement(Judged.SKIP, from_good.verdict == to_bad.verdict == Verdict.PASS.value)


class EndsCompared(NamedTuple):
    verdict: str  # the comparison's: "fail" when the bad end regressed from the good end
    counters: bool  # a work counter (not time) regressed: judged exactly, one run a commit is enough
    looks: int = 1  # runs of each end pooled (more when their comparison was inconclusive)
    # Not a regression, yet not told apart: inconclusive, or a time past its limit that the significance test did
    # not confirm (noise, or too few rounds): more rounds may decide it either way.
    undecided: bool = False


def ends_differ(good: Measurement, bad: Measurement, options: CompareOptions, looks: int = 1) -> EndsCompared:
    """The bad end compared with the good end, and whether a deterministic counter is among what regressed;
    ``looks``: the runs of each end so far, each a test of the same question: the significance is divided."""
    from perfgate.compare import compare_tables
    from perfgate.metrics import is_time_like

    compared = compare_tables(good, bad, options._replace(significance=options.significance / looks))
    results = compared.results
    regressed = results["metric"][results.equals("status", Status.REGRESSION.value)].tolist()
    counters = any(not (is_time_like(m) or m.startswith("time.")) for m in regressed)
    undecided = compared.verdict == Verdict.INCONCLUSIVE.value or (
        compared.verdict == Verdict.PASS.value and bool(good.samples) and bool(bad.samples)
        and compare_tables(good, bad, options._replace(significance=math.inf)).verdict == Verdict.FAIL.value)
    return EndsCompared(compared.verdict, counters, looks, undecided)


class Ends(NamedTuple):
    """The two ends as judged: each one's runs pooled, and their comparison."""

    good: Measurement
    bad: Measurement
    compared: EndsCompared


def settled_ends(good: Sequence[Path], bad: Sequence[Path], options: CompareOptions,
                 again: Callable[[int], tuple[Path, Path] | None]) -> Ends:
    """The ends' result files (a file per run) pooled and compared. While their comparison is undecided (time:
    noise), each end is run once more (``again``, given the looks taken: the two new result files, or None when
    no run may be made) and its timings pooled, up to ``AUTO_LOOKS`` runs each, each look at the significance
    divided by the looks taken: as a commit between is run again, so that noise at an end is no "no change"."""
    goods, bads = list(good), list(bad)
    while True:
        looks = min(len(goods), len(bads))
        ends = Ends(pooled_result(goods, options), pooled_result(bads, options), EndsCompared("", False))
        ends = ends._replace(compared=ends_differ(ends.good, ends.bad, options, looks))
        if not ends.compared.undecided or looks >= AUTO_LOOKS:
            return ends
        more = again(looks)
        if more is None:
            return ends
        goods.append(more[0])
        bads.append(more[1])


def pooled_result(paths: Sequence[Path], options: CompareOptions) -> Measurement:
    """Result files of runs of one commit read as one: a pytest-benchmark's raw timings pooled."""
    if len(paths) == 1:
        return read_result(paths[0], options)
    with tempfile.TemporaryDirectory(prefix="perfgate-bisect-") as scratch:
        return read_result(_pooled(list(paths), Path(scratch) / "pooled.json"), options)
