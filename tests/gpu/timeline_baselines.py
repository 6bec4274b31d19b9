"""Rebuild a test's timeline baseline from its kept trace, as ``pytest --perfgate --perfgate-source=timeline
--perfgate-update`` writes it from the same trace (the same functions: the trace read with its launches outside every
region dropped, the test's marker, the gate's update), then gate the trace against it: it must pass. Needs no GPU:
when the region metrics change meaning, the baselines in ``baselines/`` are rebuilt from the traces that
``tests/gpu/device_session.sh`` keeps (``--perfgate-keep-artifacts``: ``perfgate-artifacts/<name>.timeline/``).
``perfgate baseline TRACE`` is not the same: it keeps the launches outside the regions, which the plugin drops.

    python tests/gpu/timeline_baselines.py BASELINES_DIR NODEID=TRACE...
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

# The examples' markers as written in examples/ (what the plugin's options are made from).
MARKERS: dict[str, dict[str, Any]] = {
    "examples/test_cupy_raw_kernel.py::test_vector_add": {
        "kernels": "vector_add", "metrics": ["lts__t_sectors.sum"], "thresholds": {"lts__t_sectors.sum": "2%"}},
    "examples/test_torch_softmax.py::test_softmax": {},
    "examples/test_torch_mlp_layers.py::test_mlp_layer_by_layer": {
        "thresholds": {"gpu__time_duration.sum": "8%+2000"}},
}


def rebuild(directory: Path, nodeid: str, trace: Path) -> tuple[list[Path], dict[str, Any]]:
    """The baseline written for ``nodeid`` from ``trace``, and the session-report summary of the trace gated
    against it (its verdict and the count of each status)."""
    from perfgate.collect import read_table
    from perfgate.compare.sources import for_measurement
    from perfgate.gate import Where, baseline_name, gate
    from perfgate.plugin.marker import parse_marker
    from perfgate.plugin.options import PluginOptions, compare_options_for
    from perfgate.plugin.sources import TIMELINE_SUFFIX
    from perfgate.prepare import prepare

    measured = prepare(read_table(trace), scoped=True, totals=False).measurement
    measured = measured._replace(source=f"{nodeid} (timeline)")
    plugin = PluginOptions(update=True, strict=False, baselines=directory, report=Path("unused.json"), ncu="ncu",
                           clock_control="base", cache_control="all", timeout=600.0)
    options = for_measurement(compare_options_for(plugin, parse_marker((), MARKERS.get(nodeid, {}), nodeid)), measured)
    where = Where(name=baseline_name(nodeid) + TIMELINE_SUFFIX, test=nodeid)
    written = gate(measured, baselines=directory, options=options, settings=dict(measured.settings), where=where,
                   update=True).written
    again = gate(measured, baselines=directory, options=options, settings=dict(measured.settings), where=where)
    return written, {"verdict": again.report["verdict"], **again.report["summary"]}


def main(arguments: list[str]) -> int:
    if len(arguments) < 2 or any("=" not in pair for pair in arguments[1:]):
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    failed = 0
    for pair in arguments[1:]:
        nodeid, trace = pair.split("=", 1)
        written, judged = rebuild(Path(arguments[0]), nodeid, Path(trace))
        moved = {status: count for status, count in judged.items() if status != "verdict" and count}
        print(f"{', '.join(map(str, written))}: the trace against it: {judged['verdict']} {moved}")
        failed += judged["verdict"] != "pass" or set(moved) != {"unchanged"}
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
