"""The loop blind comparison sets 3, 4, 5 and timeline 2 share: refuse to run when a set's cases.py no longer makes its
committed cases.json, run every case and rerun (``run_one``, the set's own) in a scratch folder with no
pyproject.toml above it, count the outcomes (``classify``, ``figures``, ``wrong_lines``: blind set 2's or a set's
own), print them with the time and CPU spent, and write every run's outcome as TSV on request. Each set keeps what
makes it its own: its generator, how one case runs, how it is counted and which columns its TSV adds."""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import shutil
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

Result = dict[str, Any]


def load_module(name: str, path: Path) -> ModuleType:
    """A module of a set by its file (a set's cases.py, blind set 2's run.py), registered as ``name``: the sets'
    files share names (cases.py, run.py) that a plain import would confuse."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def perfgate_env(root: Path) -> dict[str, str]:
    """The environment a case's perfgate runs in: the checkout at ``root``, none of the caller's GitHub or perfgate
    settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "PERFGATE_"))}
    env["PYTHONPATH"] = str(root)
    return env


def no_pyproject_above(folder: Path) -> bool:
    """Whether perfgate run in ``folder`` finds no configuration above it (every threshold the documented default)."""
    return not any((p / "pyproject.toml").exists() for p in [folder, *folder.parents])


def write_tsv(path: str, results: list[Result]) -> None:
    """Every run's outcome, a line each (the columns sets 3 and 5 write)."""
    with open(path, "w") as f:
        f.write("id\trerun\tfamily\texpect\tambiguous\tclass\tverdict\trc\tnotes\tblamed\n")
        for r in results:
            f.write(f"{r['id']}\t{r['rerun']}\t{r['family']}\t{r['expect']}\t{int(r['ambiguous'])}\t"
                    f"{r['class']}\t{r['verdict']}\t{r['rc']}\t{r['notes']}\t{blamed_text(r)}\n")


def blamed_text(result: Result) -> str:
    return " ; ".join(b.split("|")[0] + "@" + b.split("|")[2] for b in result["blamed"])


@dataclass(frozen=True)
class BlindSet:
    """One set: its folder, the text its cases.py makes now, how a case runs and how outcomes are counted."""

    name: str  # "blind3": the scratch folder's prefix
    here: Path
    cases_text: Callable[[], str]
    run_one: Callable[[dict[str, Any], int, int, Path], Result]
    classify: Callable[[dict[str, Any], Result], str]
    figures: Callable[[list[Result]], str]
    wrong_lines: Callable[[list[Result]], str]
    case_fields: tuple[str, ...] = ()  # more of a case's fields its results carry (set 4: blame_metrics)
    tsv: Callable[[str, list[Result]], None] = field(default=write_tsv)


def main(blind: BlindSet, argv: list[str], description: str | None = None) -> int:
    ap = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default="", help="run only cases whose id starts with this")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", default="", help="write every run's outcome here (TSV)")
    a = ap.parse_args(argv)
    committed = (blind.here / "cases.json").read_text()
    if committed != blind.cases_text():
        print("refusing to run: cases.py no longer makes the committed cases.json (the expectations changed)")
        return 2
    doc = json.loads(committed)
    todo = [(c, r) for c in doc["cases"] if c["id"].startswith(a.only) for r in range(c["reruns"])]
    scratch = Path(tempfile.mkdtemp(prefix=f"perfgate-{blind.name}-"))
    if not no_pyproject_above(scratch):
        print(f"refusing to run: a pyproject.toml lies above {scratch}; set TMPDIR to a folder without one")
        return 2
    start, cpu0 = time.monotonic(), resource.getrusage(resource.RUSAGE_CHILDREN)
    with ThreadPoolExecutor(max_workers=a.jobs) as pool:
        outs = list(pool.map(lambda cr: blind.run_one(cr[0], doc["seed"], cr[1], scratch), todo))
    shutil.rmtree(scratch, ignore_errors=True)
    results = [{**o, "id": c["id"], "rerun": r, "family": c["family"], "expect": c["expect"],
                **{name: c[name] for name in blind.case_fields}, "ambiguous": bool(c["ambiguous"]),
                "class": blind.classify(c, o)} for (c, r), o in zip(todo, outs)]
    cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(blind.figures(results))
    print()
    print(blind.wrong_lines(results) or "(no run counted wrong)")
    print(f"\n{len(results)} runs of {len({c['id'] for c, _ in todo})} cases in {time.monotonic() - start:.0f} s "
          f"wall; perfgate processes {cpu.ru_utime + cpu.ru_stime - cpu0.ru_utime - cpu0.ru_stime:.0f} s CPU; "
          f"load {os.getloadavg()[0]:.2f}")
    if a.out:
        blind.tsv(a.out, results)
    return 0
