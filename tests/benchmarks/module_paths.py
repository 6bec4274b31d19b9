"""How often the compare and render paths step between perfgate's modules, and how often they step back.

Runs, in this process, a real ``perfgate compare`` of a repository fixture (perfgate's own H100 report of
``vector_add``, ``tests/data/h100/default-metrics/vector_add.rerun.ncu-rep``) against its stored baseline
(``baselines/nvidia-h100-80gb-hbm3-sm90/examples.test_cupy_raw_kernel__test_vector_add.json``), then
``perfgate.render.render_parts`` of that comparison's JSON report, and prints for each path::

    compare: 813 steps between perfgate modules, 753 of them returns; 188 distinct moves, 127 of them returns

How it counts (the figures of issue 37):

- Each path is run once untraced first, so that imports and first-use set-ups are not counted; then again under
  ``sys.setprofile``.
- Every Python function entered (a ``call`` event: a function called, or a generator resumed) whose code lives in
  a ``perfgate`` module is noted with that module's name, in order; calls into anything else (the stdlib,
  numpy, jinja2) are skipped, but perfgate code they call back is noted. Functions that merely return are not
  noted: the path is where control is handed, not where it falls back to.
- Consecutive notes of one module are collapsed into one visit. A **step** is the move from one visit to the next
  (so ``steps`` = visits - 1), and a **return** is a step into a module that was visited before and left, somewhere
  earlier on the same path. A path that walks the flow one way (collect → table → compare → render) has no
  returns; each return is a place where the data goes back to a module it had already left.
- A loop over rows that calls into another module counts once per row in ``steps``; the **distinct moves** count
  each from-module → to-module pair once (and a distinct return is a pair that was a return when first taken), so
  they describe the code's shape rather than the input's size.

Usage (the tree on ``PYTHONPATH`` is the one measured)::

    PYTHONPATH=/path/to/perfgate python tests/benchmarks/module_paths.py [--format html|md|json|text]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
CURRENT = ROOT / "tests" / "data" / "h100" / "default-metrics" / "vector_add.rerun.ncu-rep"
BASELINE = ROOT / "baselines" / "nvidia-h100-80gb-hbm3-sm90" / "examples.test_cupy_raw_kernel__test_vector_add.json"


def modules_entered(run: Callable[[], Any]) -> list[str]:
    """The perfgate modules ``run`` enters, in order, one name per visit (consecutive calls collapsed)."""
    visits: list[str] = []

    def note(frame: FrameType, event: str, arg: Any) -> None:
        if event != "call":
            return
        module = frame.f_globals.get("__name__", "")
        if (module == "perfgate" or module.startswith("perfgate.")) and (not visits or visits[-1] != module):
            visits.append(module)

    sys.setprofile(note)
    try:
        run()
    finally:
        sys.setprofile(None)
    return visits


def steps_and_returns(visits: list[str]) -> tuple[int, int]:
    """Steps between visits, and how many of them enter a module visited (and left) before."""
    seen: set[str] = set(visits[:1])
    returns = 0
    for module in visits[1:]:
        returns += module in seen
        seen.add(module)
    return max(len(visits) - 1, 0), returns


def distinct_moves_and_returns(visits: list[str]) -> tuple[int, int]:
    """Distinct (from, to) module pairs among the steps, and how many of them were returns when first taken."""
    seen: set[str] = set(visits[:1])
    moves: dict[tuple[str, str], bool] = {}
    for before, module in zip(visits, visits[1:]):
        moves.setdefault((before, module), module in seen)
        seen.add(module)
    return len(moves), sum(moves.values())


def _compare(argv: list[str]) -> Callable[[], Any]:
    from perfgate.cli.shell import main

    def run() -> int:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            return main(argv)

    return run


def _render(report: Any, fmt: str) -> Callable[[], Any]:
    from perfgate.render import render_parts

    def run() -> int:
        return sum(len(part) for part in render_parts(report, fmt))

    return run


def measure(fmt: str = "html") -> dict[str, list[str]]:
    """``{path: the modules it visits}`` for the CLI compare and for ``render_parts`` in ``fmt``."""
    from perfgate.report.validate import load_report

    with tempfile.TemporaryDirectory(prefix="module-paths-") as folder:
        written = Path(folder) / "report.json"
        status = _compare(["compare", str(BASELINE), str(CURRENT), "--format", "json", "-o", str(written)])()
        if not written.is_file():
            raise SystemExit(f"perfgate compare wrote no report (exit status {status})")
        report = load_report(written)
    paths = {"compare": _compare(["compare", str(BASELINE), str(CURRENT)]), f"render_parts({fmt})": _render(report, fmt)}
    visits = {}
    for name, run in paths.items():
        run()  # imports and first-use set-ups, not counted
        visits[name] = modules_entered(run)
    return visits


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--format", default="html", choices=("html", "md", "json", "text"),
                        help="the format render_parts makes (default: html)")
    parser.add_argument("--modules", action="store_true", help="also print each path's modules, in order")
    args = parser.parse_args(argv)
    for name, visits in measure(args.format).items():
        steps, returns = steps_and_returns(visits)
        moves, move_returns = distinct_moves_and_returns(visits)
        print(f"{name}: {steps} steps between perfgate modules, {returns} of them returns; "
              f"{moves} distinct moves, {move_returns} of them returns")
        if args.modules:
            print("  " + " > ".join(module.removeprefix("perfgate.") for module in visits))
    return 0


if __name__ == "__main__":
    sys.exit(main())
