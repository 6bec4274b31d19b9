"""Blind timeline set: every case and its expected verdict, written before perfgate ran on any of them.

`python tests/blind_timeline/cases.py --write` writes cases.json; `--check` exits 1 when cases.json is not what
this file makes (run.py refuses to run then). See README.md for the protocol.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from tl_cases import (_nsys, case, multistream_program, scale_kernel, tiny_program,  # noqa: E402
                      with_layers)
from tl_model import default_program, kernel, op, variant  # noqa: E402

SEED = 20261207
DEFAULT_RERUNS = 2
RERUNS = {"rerun": 3}
EXPECTS = ("pass", "fail", "any")
NOT_REGIONS = ("aten::", "Backward", "evaluate_function", "seq =", "enumerate(DataLoader)")
SGEMM = "ampere_sgemm_128x64_tn"


def _fmts(prog: dict[str, Any], fmt: str) -> dict[str, Any]:
    return _nsys(prog) if fmt.startswith("nsys") else prog


def reruns() -> list[dict[str, Any]]:
    out = []
    progs = {"mlp": default_program(), "streams": multistream_program(), "tiny": tiny_program(),
             "noranges": variant(default_program(), ranges=False)}
    for fmt in ("kineto", "kineto-us", "kineto-old", "nsys"):
        for name, p in progs.items():
            if name == "tiny" and fmt == "nsys":
                continue
            q = _fmts(p, fmt)
            out.append(case(f"rerun-{name}-{fmt}", "rerun", fmt, q, q, "the same program run again: noise only",
                            forbid=NOT_REGIONS))
    return out


def starved() -> list[dict[str, Any]]:
    out = []
    for fmt in ("kineto", "kineto-old", "nsys"):
        base = _fmts(default_program(), fmt)
        for ms in (3.0, 8.0):
            cur = variant(base, loader_us=900.0 + ms * 1000)
            out.append(case(f"starved-{ms:g}ms-{fmt}", "starved", fmt, base, cur,
                            f"the data loader waits {ms:g} ms more before each step's first launch",
                            forbid=NOT_REGIONS))
    base = default_program()
    out.append(case("starved-small-0.05ms", "starved", "kineto", base, variant(base, loader_us=950.0),
                    "the loader 0.05 ms slower: under every limit"))
    out.append(case("starved-one-step", "starved", "kineto", base, variant(base, slow_step=(3, 20000.0)),
                    "one of 8 steps waits 20 ms for its batch: the median step does not move"))
    return out


def stalls() -> list[dict[str, Any]]:
    out = []
    for fmt in ("kineto", "kineto-us", "nsys"):
        base = _fmts(default_program(), fmt)

        def between(ls: list[dict[str, Any]]) -> None:
            ls[2]["stall_before_us"] = 2500.0

        def inside(ls: list[dict[str, Any]]) -> None:
            ls[1]["pre_us"] = 30.0 + 2500.0
        out.append(case(f"stall-between-layers-{fmt}", "stall", fmt, base, with_layers(base, between),
                        "2.5 ms of host work between layer1 and layer2 (inside the step, outside any layer)"))
        out.append(case(f"stall-inside-layer-{fmt}", "stall", fmt, base, with_layers(base, inside),
                        "2.5 ms of host work at the start of layer1, before its first launch"))
    return out


def launch_overhead() -> list[dict[str, Any]]:
    out = []
    for fmt in ("kineto", "kineto-old", "nsys"):
        base = _fmts(default_program(), fmt)

        def many(ls: list[dict[str, Any]]) -> None:
            ls[1]["ops"] += [op("aten::mul", [kernel("elementwise_small_kernel", 2.0, (4, 1, 1))], host_us=8.0)
                             for _ in range(150)]

        def few(ls: list[dict[str, Any]]) -> None:
            ls[1]["ops"] += [op("aten::mul", [kernel("elementwise_small_kernel", 2.0, (4, 1, 1))], host_us=8.0)
                             for _ in range(3)]
        out.append(case(f"launch-overhead-150-{fmt}", "launch_overhead", fmt, base, with_layers(base, many),
                        "layer1 launches 150 more small kernels (a fused op split up): host-bound"))
        out.append(case(f"launch-overhead-3-{fmt}", "launch_overhead", fmt, base, with_layers(base, few),
                        "layer1 launches 3 more small kernels: under the limits",
                        override=("any", ["R:*"], "new kernels alone: the docs do not say whether kernels new in "
                                                  "one trace (none missing) leave the verdict pass")))
    return out


def kernel_slower() -> list[dict[str, Any]]:
    out = []
    for fmt in ("kineto", "kineto-us", "kineto-old", "nsys"):
        base = _fmts(default_program(), fmt)
        for pct in (30, 4):
            cur = scale_kernel(base, SGEMM, 1 + pct / 100)
            c = case(f"kernel-slower-{pct}pct-{fmt}", "kernel", fmt, base, cur,
                     f"{SGEMM} {pct}% slower in every launch")
            if c["expect"] == "fail":
                c["blame"] = sorted(set(c["blame"]) | {f"K:{SGEMM}", "R:*"})
            out.append(c)
    tiny = tiny_program()
    for fmt in ("kineto-us", "kineto-old", "kineto"):
        out.append(case(f"tiny-kernel-slower-{fmt}", "kernel", fmt, tiny, scale_kernel(tiny, "tiny_kernel_0", 2.5),
                        "a 2.4 µs kernel now 6 µs in whole-µs or ns traces"))
    return out


def replaced() -> list[dict[str, Any]]:
    out = []
    for fmt in ("kineto", "nsys"):
        base = _fmts(default_program(), fmt)

        def slower(ls: list[dict[str, Any]]) -> None:
            for ly in ls[:4]:
                ly["ops"][0]["kernels"][0] = kernel("sm80_xmma_gemm_f32f32_tn_n", 420.0, (64, 8, 1))

        def same(ls: list[dict[str, Any]]) -> None:
            for ly in ls[:4]:
                ly["ops"][0]["kernels"][0] = kernel("sm80_xmma_gemm_f32f32_tn_n", 180.0, (64, 8, 1))
        out.append(case(f"replaced-slower-{fmt}", "replaced", fmt, base, with_layers(base, slower),
                        "cuBLAS picks another GEMM kernel, 420 µs where the old one took 180 µs"))
        out.append(case(f"replaced-same-{fmt}", "replaced", fmt, base, with_layers(base, same),
                        "cuBLAS picks another GEMM kernel of the same speed",
                        override=("any", ["R:*"], "a kernel missing and one new in the same region: 'not measured' "
                                                  "(exit 2) or pass, docs/cli.md accept_unpaired_kernels")))
    return out


def syncs() -> list[dict[str, Any]]:
    out = []
    for fmt in ("kineto", "kineto-old", "nsys"):
        base = _fmts(default_program(), fmt)

        def sync_all(ls: list[dict[str, Any]]) -> None:
            for ly in ls[:4]:
                ly["sync_after"] = True
                ly["pre_us"] = 200.0
            for ly in ls[4:]:
                ly["pre_us"] = 200.0

        def pre_only(ls: list[dict[str, Any]]) -> None:
            for ly in ls:
                ly["pre_us"] = 200.0
        b2 = with_layers(base, pre_only)
        out.append(case(f"sync-each-layer-{fmt}", "sync", fmt, b2, with_layers(base, sync_all),
                        ".item() after each forward layer: the GPU idles while the host prepares the next layer"))
        out.append(case(f"sync-removed-{fmt}", "improvement", fmt, with_layers(base, sync_all), b2,
                        "the syncs removed again: an improvement"))
    return out


def improvements() -> list[dict[str, Any]]:
    out = []
    for fmt in ("kineto", "kineto-us", "nsys"):
        base = _fmts(default_program(), fmt)
        out.append(case(f"faster-kernel-{fmt}", "improvement", fmt, base, scale_kernel(base, SGEMM, 0.6),
                        f"{SGEMM} 40% faster"))
        out.append(case(f"faster-loader-{fmt}", "improvement", fmt, variant(base, loader_us=5000.0), base,
                        "the loader waits 4.1 ms less"))
    ms = multistream_program()
    out.append(case("streams-overlap-gained", "improvement", "kineto", ms_single(ms), ms,
                    "the side kernels move to their own stream and overlap"))
    return out


def ms_single(ms: dict[str, Any]) -> dict[str, Any]:
    def one(ls: list[dict[str, Any]]) -> None:
        for ly in ls:
            for o in ly["ops"]:
                for k in o["kernels"]:
                    k["stream"] = 7
    return with_layers(ms, one)


def streams() -> list[dict[str, Any]]:
    out = []
    for fmt in ("kineto", "nsys"):
        ms = _fmts(multistream_program(), fmt)
        out.append(case(f"streams-overlap-lost-{fmt}", "streams", fmt, ms, ms_single(ms),
                        "the side stream's kernels now queue behind the main stream's: overlap lost"))

        def reorder(ls: list[dict[str, Any]]) -> None:
            for ly in ls[:4]:
                ly["ops"].insert(0, ly["ops"].pop())
        out.append(case(f"streams-reordered-{fmt}", "streams", fmt, ms, with_layers(ms, reorder),
                        "the side-stream kernel is launched first in each layer: the same overlap"))
    return out


def autograd() -> list[dict[str, Any]]:
    out = []
    for fmt in ("kineto", "kineto-old", "kineto-us", "nsys"):
        base = _fmts(default_program(), fmt)

        def slow_nodes(ls: list[dict[str, Any]]) -> None:
            for o in ls[4]["ops"]:
                o["autograd_tail_us"] = 100.0
        out.append(case(f"autograd-node-host-{fmt}", "autograd", fmt, base, with_layers(base, slow_nodes),
                        "each autograd node spends 0.1 ms more on the host after its launch, while the GPU is "
                        "still busy (no region moves); no autograd node may become a region row", forbid=NOT_REGIONS))
    return out


def renamed() -> list[dict[str, Any]]:
    out = []
    for fmt in ("kineto", "kineto-old", "nsys"):
        base = _fmts(default_program(), fmt)

        def rename(ls: list[dict[str, Any]]) -> None:
            ls[2]["name"] = "block2"

        def drop(ls: list[dict[str, Any]]) -> None:
            ls[2]["annotate"] = False
        out.append(case(f"range-renamed-{fmt}", "renamed", fmt, base, with_layers(base, rename),
                        "record_function('layer2') renamed 'block2'; nothing else changed"))
        out.append(case(f"range-dropped-{fmt}", "renamed", fmt, base, with_layers(base, drop),
                        "the layer2 range removed; its kernels now run in the step only"))
    base = default_program()

    def drop_slow(ls: list[dict[str, Any]]) -> None:
        ls[2]["annotate"] = False
        for o in ls[2]["ops"]:
            for k in o["kernels"]:
                if k["name"] == SGEMM:
                    k["dur_us"] = 300.0
    out.append(case("range-dropped-kernel-slower", "renamed", "kineto", base, with_layers(base, drop_slow),
                    "layer2's range removed and its GEMM 67% slower (its other launches unchanged)",
                    override=("fail", [f"K:{SGEMM}", "R:*"], "")))
    return out


def no_ranges() -> list[dict[str, Any]]:
    out = []
    for fmt in ("kineto", "kineto-old", "nsys"):
        base = variant(_fmts(default_program(), fmt), ranges=False)

        def stall(ls: list[dict[str, Any]]) -> None:
            ls[2]["stall_before_us"] = 2000.0
        out.append(case(f"noranges-stall-{fmt}", "no_ranges", fmt, base, with_layers(base, stall),
                        "no ranges: 2 ms of host stall in every iteration"))
        c = case(f"noranges-kernel-slower-{fmt}", "no_ranges", fmt, base, scale_kernel(base, SGEMM, 1.4),
                 f"no ranges: {SGEMM} 40% slower")
        out.append(c)
    return out


def cold() -> list[dict[str, Any]]:
    """Captures from the process start: each kernel's first launch call loads its module (lazy loading)."""
    out = []
    one_shot = variant(default_program(), ranges=False, steps=3, loader_us=0.0, cold_us=2500.0)
    out.append(case("cold-kineto-noranges", "cold", "kineto", one_shot, variant(one_shot, cold_us=5000.0),
                    "one-shot run from the process start: first launch calls 2.5-4 ms, then 5-8 ms; nothing else"))
    out.append(case("cold-kineto-us-noranges", "cold", "kineto-us", one_shot, variant(one_shot, cold_us=1500.0),
                    "as above, whole µs, first launch calls shorter in the current run"))
    ranged = variant(default_program(), steps=3, cold_us=2500.0)
    out.append(case("cold-kineto-steps", "cold", "kineto", ranged, variant(ranged, cold_us=5000.0),
                    "3 profiler steps from the process start, the first holding every module load"))
    single = _nsys(variant(default_program(), steps=1, cold_us=2500.0))
    out.append(case("cold-nsys-start", "cold", "nsys-start", single, variant(single, cold_us=5000.0),
                    "nsys from the process start (Immediate, delay 0), one step: module loads 2.5 → 5 ms"))
    out.append(case("cold-nsys-delayed", "cold", "nsys", single, variant(single, cold_us=5000.0),
                    "the same exports marked as captured after a delay: judged as host time"))

    def stall(ls: list[dict[str, Any]]) -> None:
        ls[1]["stall_before_us"] = 3000.0
    out.append(case("cold-nsys-start-stall", "cold", "nsys-start", single, with_layers(single, stall),
                    "from the process start, same module loads, 3 ms host stall before layer1 (outside launches)"))
    nr = variant(one_shot, steps=3)
    out.append(case("cold-kineto-noranges-stall", "cold", "kineto", nr, with_layers(nr, stall),
                    "one-shot from the process start, 3 ms host stall in each iteration outside launch calls"))
    return out


def tiny() -> list[dict[str, Any]]:
    out = []
    t = tiny_program()
    for fmt in ("kineto-us", "kineto-old"):
        def more_host(ls: list[dict[str, Any]]) -> None:
            for o in ls[0]["ops"]:
                o["host_us"] = 9.0 + 60.0
        out.append(case(f"tiny-host-slower-{fmt}", "tiny", fmt, t, with_layers(t, more_host),
                        "whole-µs tiny kernels, the Python between launches 60 µs slower each (1.8 ms a step)"))
    return out


def all_cases() -> list[dict[str, Any]]:
    cases = []
    for family in (reruns, starved, stalls, launch_overhead, kernel_slower, replaced, syncs, improvements,
                   streams, autograd, renamed, no_ranges, cold, tiny):
        cases += family()
    ids = set()
    for c in cases:
        assert c["id"] not in ids, c["id"]
        assert c["expect"] in EXPECTS, c
        assert c["expect"] != "fail" or c["blame"], c["id"]
        ids.add(c["id"])
        c["forbid"] = list(NOT_REGIONS)
        c["reruns"] = RERUNS.get(c["family"], DEFAULT_RERUNS)
    return cases


def cases_text() -> str:
    """One case a line, so a diff shows which case changed."""
    lines = [json.dumps(c, sort_keys=True, separators=(",", ":")) for c in all_cases()]
    return '{"seed": %d, "cases": [\n' % SEED + ",\n".join(lines) + "\n]}\n"


def main(argv: list[str]) -> int:
    path = HERE / "cases.json"
    if argv[1:] == ["--write"]:
        path.write_text(cases_text())
        return 0
    if argv[1:] == ["--check"]:
        same = path.exists() and path.read_text() == cases_text()
        print("cases.json matches cases.py" if same else "cases.json is not what cases.py makes")
        return 0 if same else 1
    print("usage: cases.py --write | --check")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
