"""``history changes`` of two checkouts on copies of one history (``--format json``, then ``md`` and ``text`` from
the cache the JSON run left), from scratch and then after each of a few more commits, to show that a change to its
speed changed none of its output, and what each costs::

    python tests/benchmarks/changes_compare.py --old /path/to/main --new . --db /tmp/h.sqlite --work /tmp/w \
        --commits 3

``--db`` is a SQLite history that ``history_data.py`` wrote (``fill_history``); each checkout gets its own copy
in ``--work``, so each keeps its own change cache. Each step runs the two checkouts one after the other (their
order alternating from step to step, so both see the same minutes of a shared machine), each in its own process
with its checkout first on the path, and prints each one's CPU time (``time.process_time`` around the JSON run,
interpreter start and imports not counted), wall time, the load average, the process's peak memory (the JSON run
and the two renders), the number of entries and whether the two checkouts wrote the same bytes in all three
formats. ``add_commit`` records the same commit into both copies between steps. Exit status 1 where any step's
outputs differ.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Sequence

HERE = Path(__file__).resolve().parent

# Run in a checkout's own process: its perfgate, the command timed around the CLI's main.
_RUN = """
import json, resource, sys, time
from perfgate.cli.shell import main
cpu, wall = time.process_time(), time.perf_counter()
status = main(["history", "changes", "--db", sys.argv[1], "--branch", "main", "--format", "json", "-o", sys.argv[2]])
cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
for fmt in ("md", "text"):  # the cache is current now: these only render
    status = status or main(["history", "changes", "--db", sys.argv[1], "--branch", "main", "--format", fmt, "-o",
                             sys.argv[2] + "." + fmt])
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"status": status, "cpu": cpu, "wall": wall, "peak": peak}))
"""

_ADD = """
import sys
sys.path.insert(0, sys.argv[1])
from history_data import add_commit
from perfgate.history.db import open_history
with open_history(sys.argv[2], create=False) as history:
    series = int(history.query("SELECT count(*) FROM perfgate_series")[0][0])
    add_commit(history, series, int(history.query("SELECT count(*) FROM perfgate_runs")[0][0]))
"""


def _run(checkout: Path, url: str, out: Path) -> dict[str, float]:
    done = subprocess.run([sys.executable, "-c", _RUN, url, str(out)], env={"PYTHONPATH": str(checkout), "PATH": ""},
                          check=True, capture_output=True, text=True, cwd=checkout)
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _load() -> str:
    return " ".join(Path("/proc/loadavg").read_text(encoding="ascii").split()[:3])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--old", type=Path, required=True)
    parser.add_argument("--new", type=Path, required=True)
    parser.add_argument("--db", type=Path, required=True, help="a history_data.py SQLite history")
    parser.add_argument("--work", type=Path, required=True, help="a folder for the copies and outputs")
    parser.add_argument("--commits", type=int, default=3, help="commits added after the search from scratch")
    parser.add_argument("--keep", action="store_true", help="the copies in --work as they are (caches included)")
    args = parser.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    checkouts = {"old": args.old.resolve(), "new": args.new.resolve()}
    urls = {}
    for name in checkouts:
        copy = args.work / f"{name}.sqlite"
        if not (args.keep and copy.exists()):
            shutil.copyfile(args.db, copy)
        urls[name] = f"sqlite:///{copy}"
    same = True
    for step in range(args.commits + 1):
        if step:
            for name in checkouts:
                subprocess.run([sys.executable, "-c", _ADD, str(HERE), urls[name]], check=True,
                               env={"PYTHONPATH": str(checkouts["new"]), "PATH": ""})
        digests = {}
        for name in (("old", "new") if step % 2 == 0 else ("new", "old")):
            out = args.work / f"{name}-{step}.json"
            load = _load()
            result = _run(checkouts[name], urls[name], out)
            text = out.read_bytes()
            digests[name] = hashlib.sha256(b"".join(path.read_bytes() for path in (out, out.with_name(
                out.name + ".md"), out.with_name(out.name + ".text")))).hexdigest()
            print(f"step {step} {name}: cpu {result['cpu']:.2f} s, wall {result['wall']:.2f} s, load {load}, "
                  f"peak {result['peak']:.0f} MB, {len(json.loads(text))} entries, sha256 {digests[name][:16]}",
                  flush=True)
        same = same and digests["old"] == digests["new"]
        print(f"step {step}: {'same output' if digests['old'] == digests['new'] else 'OUTPUTS DIFFER'}", flush=True)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
