"""Write the examples' baselines from kept ncu reports, exactly as ``pytest --perfgate --perfgate-update``
would have written them from the same reports (same functions: options, region placement, totals,
baseline documents). Needs no GPU: this is how ``baselines/nvidia-h100-80gb-hbm3-sm90/`` was rebuilt
from ``tests/data/h100/*.ncu-rep*`` after the reader learned to place autograd's backward launches.

    python tests/gpu/baselines_from_reports.py [BASELINES_DIR]
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from perfgate.baseline import baseline_documents, save_baselines
from perfgate.collect import read_table  # noqa: F401  (decompression of .xz inputs)
from perfgate.plugin.ncu_run import profiling_metrics
from perfgate.gate import baseline_name
from perfgate.plugin.marker import parse_marker
from perfgate.plugin.options import PluginOptions, compare_options_for
from perfgate.plugin.runner import profiled_table

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data" / "h100" / "default-metrics"  # the first run with the default metric set
# The ncu settings of the capture (tests/gpu/capture.sh on an H100, ncu 2025.3.1).
SETTINGS = {"clock_control": "base", "cache_control": "all", "sections": "", "ncu_version": "2025.3.1.0",
            "replay_passes": 1}  # ncu.log: "1 pass" for every launch
# node id -> (report, the test's marker keywords as written in examples/)
EXAMPLES = {
    "examples/test_cupy_raw_kernel.py::test_vector_add": (
        "vector_add.ncu-rep", {"kernels": "vector_add", "metrics": ["lts__t_sectors.sum"],
                               "thresholds": {"lts__t_sectors.sum": "2%"}}),
    "examples/test_torch_softmax.py::test_softmax": (
        "softmax.ncu-rep.xz", {"kernels": "regex:[Ss]oft[Mm]ax",
                               "metrics": ["gpu__time_duration.sum", "dram__bytes_read.sum"]}),
    "examples/test_torch_mlp_layers.py::test_mlp_layer_by_layer": (
        "mlp.ncu-rep.xz", {"thresholds": {"gpu__time_duration.sum": "8%+2000"}}),
}


def expanded(path: Path, folder: Path) -> Path:
    if path.suffix != ".xz":
        return path
    import lzma

    target = folder / path.stem
    target.write_bytes(lzma.decompress(path.read_bytes()))
    return target


def main(directory: Path) -> list[Path]:
    options = PluginOptions(update=True, strict=False, baselines=directory, report=Path("unused.json"), ncu="ncu",
                            clock_control=SETTINGS["clock_control"], cache_control=SETTINGS["cache_control"],
                            timeout=600.0)
    written: list[Path] = []
    with tempfile.TemporaryDirectory() as folder:
        for nodeid, (report, marker_kwargs) in EXAMPLES.items():
            compare = compare_options_for(options, parse_marker((), marker_kwargs, nodeid))
            table, unplaced = profiled_table(expanded(DATA / report, Path(folder)),
                                             profiling_metrics(compare.wanted_metrics()))
            assert unplaced == 0, f"{report}: {unplaced} launches not placed in a region"
            documents = baseline_documents(table, compare.wanted_metrics(), settings=SETTINGS, source=nodeid)
            written.extend(save_baselines(documents, directory, baseline_name(nodeid)))
    return written


if __name__ == "__main__":
    for path in main(Path(sys.argv[1]) if len(sys.argv) > 1 else REPO / "baselines"):
        print(path)
