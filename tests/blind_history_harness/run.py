"""The harness shared by the blind change-point sets 3 onwards (issue 35; each set's README.md: the protocol).

A set's own ``run.py`` describes the set (``BlindSet``) and calls ``main``, which regenerates the series and
refuses to score (exit 2) when they no longer match truth.json; writes them into a throwaway SQLite history (one
run per commit on main, one series per kernel); runs ``perfgate history changes --format json --min-change 0`` at
perfgate's default p-value and at 0.001, and Otava's ``compute_change_points(values, window_len=50,
max_pvalue=P, min_magnitude=0)`` at 0.001 (its default) and 0.0001.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path
from dataclasses import dataclass
from typing import Any, Callable, NoReturn, Sequence

from tests.blind_history_harness.score import Detections, Score, score

REPO = Path(__file__).resolve().parents[2]
PERFGATE_P = (None, 0.001)  # None: perfgate's default
OTAVA_P = (0.001, 0.0001)
NOWHERE = -1_000  # the position given to a change at a commit where the series has no value: it finds nothing


Series = Any  # each set's own generated series: ``name``, ``commits`` and ``values`` are what the harness reads
SeriesRow = tuple[str, str, str, str, str, str]  # gpu, test, kind, kernel, metric, unit


@dataclass(frozen=True)
class BlindSet:
    number: int
    truth: Path
    generate: Callable[[], list[Series]]
    truth_document: Callable[[list[Series]], dict[str, Any]]
    commits: int  # commits of main, a run each
    series_row: Callable[[Series], SeriesRow]  # how the set files a series in the history


def fail(message: str) -> NoReturn:
    print(f"run.py: error: {message}", file=sys.stderr)
    raise SystemExit(2)


def checked_series(blind: BlindSet) -> tuple[list[Series], dict[str, Any]]:
    made = blind.generate()
    truth = json.loads(blind.truth.read_text(encoding="utf-8"))
    if blind.truth_document(made) != truth:
        fail(f"the generator no longer reproduces {blind.truth}: the set was committed before its first run; restore "
             "model.py, families.py and generate.py")
    return made, truth


def write_history(url: str, blind: BlindSet, made: list[Series]) -> None:
    from perfgate.history.db import open_history

    with open_history(url) as history, history.transaction():
        history.executemany(
            "INSERT INTO perfgate_runs (id, run_key, commit_sha, branch, recorded_at, source, generator, settings) "
            "VALUES (?, ?, ?, 'main', ?, ?, ?, '{}')",
            [(c + 1, f"blind{blind.number}-{c}", f"{c:040x}", f"2026-02-01T{c // 3600:02d}:{c // 60 % 60:02d}:{c % 60:02d}.000000Z",
              f"blind{blind.number}.json", f"perfgate blind set {blind.number}") for c in range(blind.commits)])
        history.executemany(
            "INSERT INTO perfgate_series (id, gpu, test, kind, kernel, region, metric, unit, direction) "
            "VALUES (?, ?, ?, ?, ?, '', ?, ?, 'lower')",
            [(i + 1, *blind.series_row(s)) for i, s in enumerate(made)])
        history.executemany(
            "INSERT INTO perfgate_points (series_id, run_id, n, value, low, high, samples) "
            "VALUES (?, ?, 1, ?, ?, ?, NULL)",
            [(i + 1, c + 1, v, v, v) for i, s in enumerate(made) for c, v in zip(s.commits, s.values.tolist())])


def child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_perfgate(url: str, p: float | None, made: list[Series]) -> tuple[Detections, list[str], float]:
    """perfgate's change points as positions per series, its outputs that name no value, and its CPU seconds."""
    command = [sys.executable, "-m", "perfgate", "history", "changes", "--db", url, "--format", "json",
               "--min-change", "0"] + ([] if p is None else ["--p-value", str(p)])
    before = child_cpu()
    done = subprocess.run(command, capture_output=True, text=True, cwd=tempfile.gettempdir(),
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    cpu = child_cpu() - before
    if done.returncode != 0:
        fail(f"perfgate exited {done.returncode}: {done.stderr.strip()[-2000:]}")
    by_name = {s.name: s for s in made}
    found: Detections = {}
    bad = []
    for change in json.loads(done.stdout):
        s = by_name.get(change["kernel"])
        if s is None:
            bad.append(f"a change on a series the set does not have: {change['kernel']}")
            continue
        commit = int(change["commit"], 16)
        if commit not in s.commits:
            bad.append(f"{s.name}: a change at commit {commit}, where the series has no value")
        found.setdefault(s.name, []).append(s.commits.index(commit) if commit in s.commits else NOWHERE)
    return found, bad, cpu


def run_otava(python: str, made: list[Series]) -> tuple[dict[float, Detections], float]:
    request = {"p_values": list(OTAVA_P), "series": {s.name: s.values.tolist() for s in made}}
    before = child_cpu()
    done = subprocess.run([python, str(Path(__file__).with_name("otava_side.py"))], input=json.dumps(request),
                          capture_output=True, text=True)
    if done.returncode != 0:
        fail(f"Otava ({python}) exited {done.returncode}: {done.stderr.strip()[-2000:]}")
    answer = json.loads(done.stdout)
    return {p: answer[str(p)] for p in OTAVA_P}, child_cpu() - before


def summary(scores: dict[str, tuple[Score, dict[str, tuple[int, int]]]], cpu: dict[str, float]) -> list[str]:
    lines = ["| detector | recall | precision | false per 100 flat | flickering-counter false | reverted edges "
             "| detections | creep series with a point | CPU s |", "|---|---|---|---|---|---|---|---|---|"]
    for name, (s, unscored) in scores.items():
        found, edges = s.reverted_edges()
        creep = ", ".join(f"{a} of {b}" for a, b in unscored.values())
        lines.append(f"| {name} | {s.recall:.3f} ({s.total.found}/{s.total.changes}) | {s.precision:.3f} | "
                     f"{s.flat_per_100():.1f} | {s.flicker_false()} | {found} of {edges} | {s.total.detections} | "
                     f"{creep} | {cpu[name]:.1f} |")
    return lines


def goals(ours: Score, theirs: Score, names: tuple[str, str]) -> list[str]:
    checks = [(f"recall >= 0.93 at precision >= 0.95: {ours.recall:.3f} at {ours.precision:.3f}",
               ours.recall >= 0.93 and ours.precision >= 0.95),
              (f"flickering-counter false points <= Otava's: {ours.flicker_false()} vs {theirs.flicker_false()}",
               ours.flicker_false() <= theirs.flicker_false()),
              (f"reverted edges >= Otava's: {ours.reverted_edges()[0]} vs {theirs.reverted_edges()[0]}",
               ours.reverted_edges()[0] >= theirs.reverted_edges()[0]),
              (f"<= 1 false point per 100 flat series: {ours.flat_per_100():.1f}", ours.flat_per_100() <= 1)]
    return [f"- {'met' if ok else 'NOT met'}: {text} ({names[0]} against {names[1]})" for text, ok in checks]


def families(scores: dict[str, tuple[Score, dict[str, tuple[int, int]]]]) -> list[str]:
    names = list(scores)
    first = scores[names[0]][0]
    lines = ["| family | series | planted | " + " | ".join(f"{n}: found / false" for n in names) + " |",
             "|---|---|---|" + "---|" * len(names)]
    for family, tally in first.families.items():
        cells = [scores[n][0].families[family] for n in names]
        lines.append(f"| {family} | {tally.series} | {tally.changes} | "
                     + " | ".join(f"{t.found} / {t.false}" for t in cells) + " |")
    return lines


def main(blind: BlindSet, description: str | None, argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--otava-python", default="/tmp/otava3-venv/bin/python", help="a Python with apache-otava")
    parser.add_argument("--json", action="store_true", help="the detections and errors as JSON, not tables")
    args = parser.parse_args(argv)
    made, truth = checked_series(blind)
    found: dict[str, Detections] = {}
    cpu: dict[str, float] = {}
    bad: dict[str, list[str]] = {}
    with tempfile.TemporaryDirectory(prefix=f"blind-history{blind.number}-") as folder:
        url = f"sqlite:///{folder}/history.sqlite"
        write_history(url, blind, made)
        for p in PERFGATE_P:
            name = "perfgate (default p)" if p is None else f"perfgate p {p}"
            found[name], bad[name], cpu[name] = run_perfgate(url, p, made)
    otava, otava_cpu = run_otava(args.otava_python, made)
    for p in OTAVA_P:
        name = f"Otava p {p}" + (" (default)" if p == 0.001 else "")
        found[name], cpu[name] = otava[p], otava_cpu / len(OTAVA_P)
    scores = {name: score(truth, detections) for name, detections in found.items()}
    if args.json:
        json.dump({name: {"found": found[name], "misses": s.misses, "false_points": s.false_points,
                          "bad_outputs": bad.get(name, [])} for name, (s, _) in scores.items()}, sys.stdout)
        return 0
    print("\n".join(summary(scores, cpu) + [""]
                    + goals(scores["perfgate (default p)"][0], scores["Otava p 0.001 (default)"][0],
                            ("perfgate (default p)", "Otava p 0.001 (default)")) + [""] + families(scores)))
    for name, problems in bad.items():
        print(f"\n{name}: {len(problems)} changes at no value" + "".join(f"\n  - {b}" for b in problems[:10]))
    return 0

