"""One step of ``git bisect run perfgate bisect --step ...``: the commit git checked out, judged against both ends.

git starts a new process per step, so each end's result is kept in the repository's git folder
(``perfgate-bisect/``, per test, build and command) and measured once for the whole bisection. The ends default
to the bisection's first bad and good commit (``git bisect log``).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Mapping, Sequence

from perfgate.bisect.measure import Runner, git, resolve_commit
from perfgate.bisect.search import Judged
from perfgate.errors import InputError
from perfgate.vocabulary import NO_ENTRIES, Verdict

if TYPE_CHECKING:
    from perfgate.bisect.measure import Ends
    from perfgate.bisect.recorded import References
    from perfgate.compare import CompareOptions
    from perfgate.table import Measurement

Recorded = Callable[[Sequence[str]], Mapping[str, "Measurement"]]
NO_REFERENCE = "history-no-reference"  # the history's ends proved no reference for this machine's runs: why
CHECKED = "history-checked"  # a run was like one of the history's ends: later steps need not check again


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
               commit_ref: str, recorded_of: Recorded = lambda commits: NO_ENTRIES) -> Judged:
    """The verdict on ``commit_ref``: good, bad, or skip (it cannot be built or tested, or is like neither end).
    ``recorded_of``: the test's measurements the history holds at some of the given commits; where it holds both
    ends they are the references (not run), and a commit it holds is judged from it (not run)."""
    from perfgate.bisect.measure import AUTO_LOOKS, judgement, settled_ends

    good_commit, bad_commit = _bisect_end(runner, good_ref, "good"), _bisect_end(runner, bad_ref, "bad")
    commit = resolve_commit(runner.root, commit_ref, "--commit")
    held = {} if (_cache(runner) / NO_REFERENCE).is_file() else recorded_of([good_commit, bad_commit, commit])
    if good_commit in held or bad_commit in held:
        by_history = _history_step(runner, options, held, (good_commit, bad_commit), commit)
        if by_history is not None:
            return by_history

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


def _history_step(runner: Runner, options: CompareOptions, held: Mapping[str, Measurement], ends: tuple[str, str],
                  commit: str) -> Judged | None:
    """The commit judged against the ends as ``perfgate bisect`` judges between them: an end the history holds is
    its reference (not run), the other end run once (kept); a commit the history holds is judged from it (no run),
    another by a run whose first result shows the history can be its reference (``as_references``); None where
    the history's end cannot serve (the ends do not differ, or a run showed it is no reference, kept for the later
    steps): the ends are then run."""
    from perfgate.bisect.measure import AUTO_LOOKS, judgement
    from perfgate.bisect.recorded import as_references, on_devices_of

    folder = _cache(runner)
    sides = _history_ends(runner, options, held, ends)
    if sides is None:
        return None
    good, bad, compared = sides
    if commit in ends:
        return Judged.GOOD if commit == ends[0] else Judged.BAD
    if commit in held:
        return judgement(good, on_devices_of(held[commit], bad), bad, options).verdict
    from_history = (ends[0] in held, ends[1] in held)
    references: list[References | str] = []
    verdicts: list[Judged] = []

    def again(run: Measurement, looks: int) -> bool:
        if not references:
            references.append(as_references(good, bad, from_history, run, options,
                                             check_like=not (folder / CHECKED).is_file()))
        if isinstance(references[0], str):
            return False
        decided = judgement(references[0].good, run, references[0].bad, options, looks)
        verdicts.append(decided.verdict)
        return decided.undecided and not compared.counters and looks < AUTO_LOOKS

    result = runner.run(commit, again=again)
    if result.measurement is None:
        return Judged.SKIP
    if isinstance(references[0], str):
        _no_reference(runner, references[0])
        return None
    if references[0].checked:  # a run like an end the history holds: the later steps need not check again
        folder.mkdir(parents=True, exist_ok=True)
        (folder / CHECKED).touch()
    return verdicts[-1]


def _history_ends(runner: Runner, options: CompareOptions, held: Mapping[str, Measurement],
                  ends: tuple[str, str]) -> Ends | None:
    """The ends, the history's where it holds them and the other run once (kept), compared; None where they cannot
    serve: they do not differ, or the run end shows the history's is no reference (kept for the later steps)."""
    from perfgate.bisect.measure import Ends, ends_differ, pooled_result
    from perfgate.bisect.recorded import comparable, on_devices_of

    measured = {commit: held[commit] for commit in ends if commit in held}
    ran = [pooled_result(_end_files(runner, commit, which), options)
           for commit, which in zip(ends, ("good", "bad"), strict=True) if commit not in held]
    if ran:  # one end run here: it checks the history's
        (held_end,) = measured
        problem = comparable(held[held_end], ran[0], options)
        if problem:
            _no_reference(runner, problem)
            return None
        measured[held_end] = on_devices_of(held[held_end], ran[0])
        measured[ends[1] if held_end == ends[0] else ends[0]] = ran[0]
    good, bad = measured[ends[0]], measured[ends[1]]
    compared = ends_differ(good, bad, options)
    if compared.verdict != Verdict.FAIL.value:
        if ran:  # the history's end is no reference for the run one
            _no_reference(runner, f"its end compared with the run end: {compared.verdict}")
        return None
    return Ends(good, bad, compared)


def _no_reference(runner: Runner, why: str) -> None:
    folder = _cache(runner)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / NO_REFERENCE).write_text(why + "\n", encoding="utf-8")
