"""Nsight Compute rule findings in the history: what a report carries of them, kept per run and kernel, and read
back for the dashboard's kernel pages.

A report carries, per launch, the findings that **appeared** and those that were **gone** against its baseline
(``findings_appeared``/``findings_gone``; null where a side had no rule results: not known). They are kept per
run and (GPU, test, kind, kernel, region), the launches of a kernel merged in order; a kernel none of whose
launches knew its findings keeps nothing (not known is not "none").
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple, Sequence

from perfgate.history.db import History, damaged
from perfgate.history.keys import KERNEL_FIELDS, KernelKey, kernel_key, launch_kernels
from perfgate.limits import parse_json_or_none
from perfgate.report import Report

COLUMNS = ("run_id", *KERNEL_FIELDS, "appeared", "gone")


class RunFindings(NamedTuple):
    commit: str
    appeared: list[str]
    gone: list[str]


def report_findings(report: Report) -> dict[KernelKey, tuple[list[str], list[str]]]:
    """Per kernel of the report's current side, the findings that appeared and were gone (known ones only)."""
    launches: Any = report["launches"]
    count = len(launches["kernel"])
    appeared_of = launches.get("findings_appeared") or [None] * count
    gone_of = launches.get("findings_gone") or [None] * count
    found: dict[KernelKey, tuple[list[str], list[str]]] = {}
    if appeared_of.count(None) == count and gone_of.count(None) == count:
        return found  # a run without ncu sections: nothing known (a list count, no per-launch loop)
    kernels = launch_kernels(launches)
    for at in range(count):
        appeared, gone = appeared_of[at], gone_of[at]
        if appeared is None and gone is None:
            continue
        key = kernel_key(launches["device"][at], launches["test"][at], launches["kind"][at], kernels[at],
                         launches["region"][at])
        into = found.setdefault(key, ([], []))
        for target, names in zip(into, (appeared or [], gone or [])):
            target.extend(name for name in names if name not in target)
    return found


def finding_rows(run_id: int, report: Report) -> list[tuple[Any, ...]]:
    return [(run_id, *key, json.dumps(appeared), json.dumps(gone))
            for key, (appeared, gone) in sorted(report_findings(report).items())]


def write_findings(history: History, run_id: int, report: Report) -> None:
    history.insert_rows("perfgate_findings", COLUMNS, finding_rows(run_id, report))


def _names(history: History, text: Any) -> list[str]:
    """A stored JSON list of finding names; SQLite keeps whatever a hand or a damaged page put there."""
    names = parse_json_or_none(text) if isinstance(text, str) else None
    if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
        raise damaged(history, "perfgate_findings holds findings that are no JSON list of names")
    return names


def load_findings(history: History, branch: str, commits: Sequence[str]) -> dict[tuple[str, ...], list[RunFindings]]:
    """Per kernel of ``branch``, the findings its runs carried, in the order of ``commits`` (the branch's)."""
    position = {commit: index for index, commit in enumerate(commits)}
    rows = history.query(
        "SELECT r.commit_sha, r.recorded_at, r.id, f.gpu, f.test, f.kind, f.kernel, f.region, f.appeared, f.gone "
        "FROM perfgate_findings f JOIN perfgate_runs r ON r.id = f.run_id WHERE r.branch = ?", (branch,))
    found: dict[tuple[str, ...], list[tuple[int, str, int, RunFindings]]] = {}
    for commit, when, run_id, gpu, test, kind, kernel, region, appeared, gone in rows:
        entry = RunFindings(commit, _names(history, appeared), _names(history, gone))
        found.setdefault((gpu, test, kind, kernel, region), []).append(
            (position.get(commit, len(position)), str(when), int(run_id), entry))
    return {key: [entry for *_, entry in sorted(items)] for key, items in found.items()}
