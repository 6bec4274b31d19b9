"""One step of ``git bisect run perfgate bisect --step ...``: the commit git checked out, judged against both ends.

git starts a new process per step, so each end's result is kept in the repository's git folder
(``perfgate-bisect/``, per test, build and command) and measured once for the whole bisection. The ends default
to the bisection's first bad and good commit (``git bisect log``).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING

from perfgate.bisect.measure import Runner, git, resolve_commit
from perfgate.bisect.search import Judged
from perfgate.errors import InputError
from perfgate.vocabulary import Verdict

if TYPE_CHECKING:
    from perfgate.compare import CompareOptions
    from perfgate.table import Measurement


def _cache(runner: Runner) -> Path:
    common = Path(git(runner.root, "rev-parse", "--git-common-dir"))
    folder = common if common.is_absolute() else runner.root / common
    key = hashlib.sha256("\0".join([runner.test, runner.build or "", runner.command, str(runner.repeat)]).encode())
    return folder / "perfgate-bisect" / key.hexdigest()[:16]


def _bisect_end(runner: Runner, given: str | None, which: str) -> str:
    """--good/--bad, else the bisection's first good or bad commit as ``git bisect log`` has it: git moves its
    refs as the bisection narrows, and every step must judge against the same two ends (measured once)."""
    if given:
        return resolve_commit(runner.root, given, f"--{which}")
    try:
        log = git(runner.root, "bisect", "log").splitlines()
    except InputError:
        log = []
    # "# bad: [SHA] subject", "# good: [SHA] subject": the first of each is where the bisection started
    marked = [line.split("[", 1)[1].split("]", 1)[0] for line in log if line.startswith(f"# {which}: [")]
    if not marked:
        raise InputError(f"--{which}", "is not given and git bisect has no such commit",
                         f"give --{which} REF, or start with 'git bisect start BAD GOOD'")
    return resolve_commit(runner.root, marked[0], f"--{which}")


def _end_files(runner: Runner, commit: str, which: str) -> list[Path]:
    """The end's kept result files, one per run (more when the ends' time was undecided); run once if none."""
    folder = _cache(runner)
    files = sorted(folder.glob(f"{commit}-*.json"), key=lambda path: int(path.stem.rsplit("-", 1)[1]))
    return files or [_run_end(runner, commit, which, 1)]


def _run_end(runner: Runner, commit: str, which: str, run: int) -> Path:
    kept = _cache(runner) / f"{commit}-{run}.json"
    result = runner.run(commit, keep=kept)
    if result.measurement is None:
        raise InputError(f"--{which}", f"commit {commit[:12]} cannot be measured: {result.problem}",
                         "check --test (the test must exist and pass at both ends) and --build")
    return kept


def judge_step(runner: Runner, options: CompareOptions, good_ref: str | None, bad_ref: str | None,
               commit_ref: str) -> Judged:
    """The verdict on ``commit_ref``: good, bad, or skip (it cannot be built or tested, or is like neither end)."""
    from perfgate.bisect.measure import AUTO_LOOKS, judgement, settled_ends

    good_commit, bad_commit = _bisect_end(runner, good_ref, "good"), _bisect_end(runner, bad_ref, "bad")
    commit = resolve_commit(runner.root, commit_ref, "--commit")

    def ends_again(looks: int) -> tuple[Path, Path]:
        """The ends' time undecided: each run once more (kept: the next steps read the pooled runs)."""
        return _run_end(runner, good_commit, "good", looks + 1), _run_end(runner, bad_commit, "bad", looks + 1)

    ends = settled_ends(_end_files(runner, good_commit, "good"), _end_files(runner, bad_commit, "bad"), options,
                        ends_again)
    good, bad, compared = ends
    if compared.verdict != Verdict.FAIL.value:
        raise InputError("--bad", f"{bad_commit[:12]} did not regress from --good {good_commit[:12]}",
                         "there is nothing to bisect for this test; check --test and the two ends")
    if commit in (good_commit, bad_commit):
        return Judged.GOOD if commit == good_commit else Judged.BAD
    verdicts: list[Judged] = []

    def again(run: Measurement, looks: int) -> bool:
        """Undecided time: run the test again in the same worktree, as ``perfgate bisect`` does."""
        decided = judgement(good, run, bad, options, looks)
        verdicts.append(decided.verdict)
        return decided.undecided and not compared.counters and looks < AUTO_LOOKS

    result = runner.run(commit, again=again)
    if result.measurement is None:
        return Judged.SKIP
    return verdicts[-1]
