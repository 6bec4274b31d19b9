"""A stand-in for Nsight Compute's ``ncu`` so ``pytest --perfgate`` can be tested with no GPU.

It parses the real command line perfgate built, really runs the profiled program it was given
(so the test body runs in a child process, with the child's environment), then does what ncu
would: writes a real ``.ncu-rep`` from the corpus to the ``--export`` path and ncu-style
``==PROF==`` lines to ``--log-file``. Environment variables pick the behaviour:

- ``PERFGATE_STUB_MODE``: ``ok`` (default), ``noperm`` (ERR_NVGPUCTRPERM), ``error`` (an ncu
  error, the program never runs), ``nokernels`` (the NVTX/kernel filter matched nothing),
  ``hang`` (never returns), ``version-fails``
- ``PERFGATE_STUB_REPORT``: the ``.ncu-rep`` to export (a corpus file), or ``regions``: export an ncu raw-page
  CSV with one launch of ``stub_kernel`` per region the child entered, NVTX stacks as real ncu prints them
  (a group's test tag outermost), duration ``PERFGATE_STUB_NS`` ns (``name=ns,...`` per test function name)
- ``PERFGATE_STUB_LOG``: a JSON-lines file receiving each invocation's argv, child environment and process id

Stdlib only; started through a small executable wrapper written by ``plugin_helpers``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time

FLAGS = {"--nvtx", "--force-overwrite", "-f", "--csv", "--quiet", "--verbose"}  # options without a value
VERSION = """NVIDIA (R) Nsight Compute Command Line Profiler
Copyright (c) 2018-2025 NVIDIA Corporation
Version 2025.3.1.0 (build 36398880) (public-release)"""
PERMISSION = ("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance "
              "Counters on the target device 0. For instructions on enabling permissions and to get more "
              "information see https://developer.nvidia.com/ERR_NVGPUCTRPERM")


def parse(argv: list[str]) -> tuple[dict[str, list[str]], list[str]]:
    options: dict[str, list[str]] = {}
    index = 0
    while index < len(argv):
        arg = argv[index]
        if not arg.startswith("-"):
            break
        if arg in FLAGS:
            options.setdefault(arg, []).append("")
            index += 1
        else:
            options.setdefault(arg, []).append(argv[index + 1])
            index += 2
    return options, argv[index:]


def main() -> int:
    argv = sys.argv[1:]
    mode = os.environ.get("PERFGATE_STUB_MODE", "ok")
    if argv == ["--version"]:
        if mode == "version-fails":
            print("==ERROR== stub: cannot start", file=sys.stderr)
            return 1
        print(VERSION)
        return 0
    options, program = parse(argv)
    record = os.environ.get("PERFGATE_STUB_LOG")
    if record:
        env = {k: os.environ.get(k) for k in ("PERFGATE_CHILD", "PERFGATE_CHILD_RESULT", "CUDA_VISIBLE_DEVICES")}
        with open(record, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"argv": argv, "env": env, "cwd": os.getcwd(), "pid": os.getpid()}) + "\n")
    log_path = options.get("--log-file", [""])[-1]
    log = open(log_path, "w", encoding="utf-8") if log_path else sys.stdout

    def say(line: str) -> None:
        log.write(line + "\n")
        log.flush()

    if mode == "hang":
        say("==PROF== Connected to process 4242 (python3)")
        time.sleep(3600)
        return 0
    if mode == "error":
        say('==ERROR== Failed to find metric regex:^nosuch$')
        return 1
    say(f"==PROF== Connected to process {os.getpid()} ({os.path.basename(program[0]) if program else '?'})")
    if mode == "noperm":
        say(PERMISSION)
        return 1
    returncode = subprocess.call(program)
    if returncode != 0:
        say(f"==ERROR== The application returned an error code ({abs(returncode)}).")
        return returncode if returncode > 0 else 1
    if mode == "nokernels":
        say(f"==PROF== Disconnected from process {os.getpid()}")
        say("==WARNING== No kernels were profiled.")
        return 0
    export = options.get("--export", options.get("-o", [""]))[-1]
    source = os.environ.get("PERFGATE_STUB_REPORT", "")
    page = regions_csv(os.environ.get("PERFGATE_CHILD_RESULT", ""), os.environ.get("PERFGATE_STUB_NS", "")) \
        if source == "regions" else ""
    for index in range(max(1, page.count("\n") - 2)):
        say(f'==PROF== Profiling "matrix_addition2D" - {index}: 0%....50%....100% - 1 pass')
    say(f"==PROF== Disconnected from process {os.getpid()}")
    if export and source == "regions":
        with open(export, "w", encoding="utf-8") as fh:
            fh.write(page)
        say(f"==PROF== Report: {export}")
    elif export and source:
        shutil.copyfile(source, export)
        say(f"==PROF== Report: {export}")
    return 0


def regions_csv(child_result: str, durations: str) -> str:
    """An ncu ``--csv --page raw`` page: a launch per region entered, as the profiled child recorded them."""
    with open(child_result, encoding="utf-8") as fh:
        document = json.load(fh)
    by_test = document.get("regions_by_test") or {"": document.get("regions", [])}
    group = json.loads(os.environ.get("PERFGATE_CHILD_GROUP") or "[]")
    tags = {nodeid: f"t{i}" for i, nodeid in enumerate(group)} if len(group) > 1 else {}
    per_name = dict(item.split("=") for item in durations.split(",") if "=" in item)
    head = ["ID", "Process ID", "Process Name", "Host Name",
            "thread Domain:Push/Pop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg",
            "Id:Domain:Start/Stop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg", "Kernel Name", "Context",
            "Stream", "Block Size", "Grid Size", "Device", "CC", "device__attribute_display_name",
            "gpu__time_duration.sum", "smsp__inst_executed.sum"]
    units = [""] * 14 + ["ns", "inst"]
    rows = []
    for nodeid, regions in by_test.items():
        ns = per_name.get(nodeid.rsplit("::", 1)[-1], per_name.get("", "100000"))
        for region in regions:
            stack = [tags[nodeid]] if nodeid in tags else []
            cell = "4242  " + "  ".join(f'"perfgate:{name}:none:none:none:none:none:none"' for name in [*stack, region])
            rows.append([str(len(rows)), "4242", "python3", "127.0.0.1", cell, "", "stub_kernel", "1", "7",
                         "(256, 1, 1)", "(1024, 1, 1)", "0", "9.0", "NVIDIA H100 80GB HBM3", ns, "1000000"])
    quote = lambda values: ",".join('"' + v.replace('"', '""') + '"' for v in values)  # noqa: E731
    return "\n".join(quote(r) for r in [head, units, *rows]) + "\n"


if __name__ == "__main__":
    sys.exit(main())
