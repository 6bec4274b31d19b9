"""Issue 33, "Done when": the fuzzing the earlier rounds left out, each family one test that tallies what it tried.

* The plugin's own outputs: ``--perfgate-report`` at paths built to hurt (devices, FIFOs with and without a
  reader, links, loops, a folder, a file as parent, hostile and overlong names).
* ``perfgate publish`` into the loopback GitHub (``helpers.github_server``): reports built to hurt (workflow
  commands and markup in every string, truncated or mistyped JSON) and a GitHub that fails.
* Truncated and damaged ``.xz`` inputs of every kind perfgate reads, through ``compare`` (both sides),
  ``baseline`` and ``history record``.

Every run counts as tried and is checked for: a traceback, a hang, a silent pass (exit 0 from a damaged input),
an injection (a line the CI runner would act on, or a raw escape character, in what perfgate printed), a file
damaged (a device, FIFO or link replaced, an input changed, a file left in ``/dev`` or TMPDIR). Each test prints
its tally (``pytest -s``) and fails on any finding.
"""

from __future__ import annotations

import hashlib
import json
import lzma
import os
import stat
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from helpers.common import REPO
from helpers.github_server import (
    PR,
    REPO as GITHUB_REPO,
    FakeGitHub,
    Fault,
    actions_env,
    github,
    launch,
    make_report,
    pull_request_event,
    run_publish,
)
from helpers.hostile import HOSTILE, WORKFLOW_COMMANDS, hostile_report, runs_workflow_command
from helpers.plugin import preload_heavy_modules

from perfgate.cli import main

pytest_plugins = ("pytester",)
preload_heavy_modules()
__all__ = ["github"]

H100 = REPO / "tests" / "data" / "h100"
HANG_SECONDS = 20.0
FINDINGS = ("traceback", "hang", "silent pass", "injection", "file damaged")


FINDING_NAMES = {"traceback": "tracebacks", "hang": "hangs", "silent pass": "silent passes",
                 "injection": "injections", "file damaged": "files damaged"}


@dataclass
class Tally:
    family: str
    tried: int = 0
    found: Counter[str] = field(default_factory=lambda: Counter({name: 0 for name in FINDINGS}))
    details: list[str] = field(default_factory=list)

    def add(self, case: str, findings: list[tuple[str, str]]) -> None:
        self.tried += 1
        for kind, detail in findings:
            self.found[kind] += 1
            self.details.append(f"{case}: {kind}: {detail[:400]}")

    def check(self) -> None:
        print(f"\n{self.family}: {self.tried} inputs tried, "
              + ", ".join(f"{n} {FINDING_NAMES[k]}" for k, n in self.found.items()))
        assert not self.details, "\n".join(self.details)


def _printed_findings(text: str, seconds: float) -> list[tuple[str, str]]:
    found = []
    if "Traceback" in text or "INTERNALERROR" in text or "please report it" in text:
        found.append(("traceback", text[-600:]))
    if runs_workflow_command(text) or "\x1b" in text:
        found.append(("injection", repr([line for line in text.splitlines()
                                         if "##[" in line or line.lstrip().startswith("::") or "\x1b" in line])))
    if seconds > HANG_SECONDS:
        found.append(("hang", f"{seconds:.1f} s"))
    return found


# ---------------------------------------------------------------- the plugin's own outputs

def _char_device(path: Path | str) -> bool:
    return stat.S_ISCHR(os.lstat(path).st_mode)


def _fifo_reader(path: Path) -> Callable[[], bytes]:
    os.mkfifo(path)
    got: list[bytes] = []

    def read() -> None:
        with open(path, "rb") as pipe:
            got.append(pipe.read())

    thread = threading.Thread(target=read, daemon=True)
    thread.start()

    def finish() -> bytes:
        thread.join(timeout=HANG_SECONDS)
        return got[0] if got else b""

    return finish


@dataclass
class Target:
    """A --perfgate-report value, what to make first, and what must hold after (an empty string when it does)."""

    id: str
    make: Callable[[Path], str]
    after: Callable[[Path], str]
    env: tuple[tuple[str, str], ...] = ()


def _json_at(path: Path) -> str:
    try:
        return "" if json.loads(path.read_text())["format"] == "perfgate-report" else "not a report"
    except (OSError, ValueError, KeyError) as exc:
        return f"no report at {path}: {exc}"


def _targets() -> list[Target]:
    hostile_name = "r\x1b[31m ##[stop-commands]t0k\n::error::x.json"
    readers: dict[str, Callable[[], bytes]] = {}

    def fifo_with_reader(folder: Path) -> str:
        readers["fifo"] = _fifo_reader(folder / "out.fifo")
        return str(folder / "out.fifo")

    def fifo_read(folder: Path) -> str:
        data = readers.pop("fifo")()
        if not stat.S_ISFIFO(os.lstat(folder / "out.fifo").st_mode):
            return "the FIFO was replaced"
        return "" if data.startswith(b"{") and json.loads(data)["format"] == "perfgate-report" else "no report read"

    def fifo_alone(folder: Path) -> str:
        os.mkfifo(folder / "alone.fifo")
        return str(folder / "alone.fifo")

    def twin(folder: Path) -> str:
        os.mknod(folder / "null", stat.S_IFCHR | 0o666, os.stat("/dev/null").st_rdev)
        return str(folder / "null")

    def link_to_file(folder: Path) -> str:
        (folder / "real.json").write_text("old")
        (folder / "link.json").symlink_to("real.json")
        return str(folder / "link.json")

    def dangling(folder: Path) -> str:
        (folder / "dangling.json").symlink_to("made/by/link.json")
        return str(folder / "dangling.json")

    def loop(folder: Path) -> str:
        (folder / "a.json").symlink_to("b.json")
        (folder / "b.json").symlink_to("a.json")
        return str(folder / "a.json")

    def folder_itself(folder: Path) -> str:
        (folder / "sub").mkdir()
        return str(folder / "sub")

    def file_as_parent(folder: Path) -> str:
        (folder / "file").write_text("x")
        return str(folder / "file" / "r.json")

    def only(*names: str) -> Callable[[Path], str]:
        def check(folder: Path) -> str:
            left = sorted(p.name for p in folder.iterdir() if not p.name.startswith(("test_", ".")))
            return "" if left == sorted(names) else f"files here: {left}"
        return check

    def both(*checks: Callable[[Path], str]) -> Callable[[Path], str]:
        return lambda folder: next((problem for check in checks if (problem := check(folder))), "")

    return [
        Target("new-file", lambda f: str(f / "r.json"), both(lambda f: _json_at(f / "r.json"),
                                                             only("r.json", "r.md", "r.html"))),
        Target("new-folders", lambda f: str(f / "a" / "b" / "r.json"), lambda f: _json_at(f / "a" / "b" / "r.json")),
        Target("md-target", lambda f: str(f / "r.md"), both(lambda f: _json_at(f / "r.json"),
                                                            only("r.json", "r.md", "r.html"))),
        Target("link-to-file", link_to_file,
               both(lambda f: "" if (f / "link.json").is_symlink() else "the link was replaced",
                    lambda f: _json_at(f / "real.json"))),
        Target("dangling-link", dangling, lambda f: _json_at(f / "made" / "by" / "link.json")),
        Target("link-loop", loop, lambda f: "" if (f / "a.json").is_symlink() else "the loop was replaced"),
        Target("folder", folder_itself, lambda f: "" if (f / "sub").is_dir() else "the folder is gone"),
        Target("file-as-parent", file_as_parent, lambda f: "" if (f / "file").read_text() == "x" else "changed"),
        Target("hostile-name", lambda f: str(f / hostile_name), lambda f: _json_at(f / hostile_name)),
        Target("name-too-long", lambda f: str(f / ("n" * 300 + ".json")), only()),
        Target("fifo-with-reader", fifo_with_reader, both(fifo_read, only("out.fifo"))),
        Target("fifo-without-reader", fifo_alone,
               lambda f: "" if stat.S_ISFIFO(os.lstat(f / "alone.fifo").st_mode) else "the FIFO was replaced",
               env=(("PERFGATE_FIFO_WAIT", "0.3"),)),
        Target("own-char-device", twin, both(lambda f: "" if _char_device(f / "null") else "replaced", only("null"))),
        Target("dev-null", lambda f: "/dev/null",
               lambda f: "" if _char_device("/dev/null") and not os.path.exists("/dev/null.md") else "damaged"),
        Target("dev-full", lambda f: "/dev/full",
               lambda f: "" if _char_device("/dev/full") and not os.path.exists("/dev/full.md") else "damaged"),
    ]


def test_fuzz_the_plugin_s_own_outputs(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    tally = Tally("plugin outputs (--perfgate-report)")
    pytester.makepyfile(test_nothing="def test_nothing():\n    pass\n")
    for target in _targets():
        if target.id == "own-char-device" and not hasattr(os, "mknod"):
            continue
        with monkeypatch.context() as env:
            for name, value in target.env:
                env.setenv(name, value)
            findings: list[tuple[str, str]] = []
            try:
                value = target.make(pytester.path)
            except OSError as exc:  # a device node this machine does not let us make
                if target.id == "own-char-device":
                    continue
                raise AssertionError(f"{target.id}: {exc}") from None
            if target.id.startswith("dev-") and any(d.startswith("own-char-device:") for d in tally.details):
                pytest.fail("the throwaway device was replaced: not trying the machine's own\n" +
                            "\n".join(tally.details))
            started = time.monotonic()
            result = pytester.runpytest("--perfgate", "-p", "no:cacheprovider", f"--perfgate-report={value}")
            seconds = time.monotonic() - started
            findings += _printed_findings("\n".join(result.outlines + result.errlines), seconds)
            problem = target.after(pytester.path)
            if problem:
                findings.append(("file damaged", problem))
            tally.add(target.id, findings)
        for made in pytester.path.iterdir():  # the next target starts from an empty folder
            if made.name != "test_nothing.py":
                if made.is_dir() and not made.is_symlink():
                    import shutil

                    shutil.rmtree(made)
                else:
                    made.unlink()
    tally.check()


# ---------------------------------------------------------------- publish into the loopback GitHub

def _reports() -> dict[str, Callable[[], bytes]]:
    def report_with(names: list[str], fail: bool) -> Callable[[], bytes]:
        def build() -> bytes:
            rows = [launch(f"k{i} {name}", status="regression" if fail and not i else "unchanged", test=name,
                           region=name, label=name, path=name, line=1) for i, name in enumerate(names)]
            return json.dumps(make_report(rows, notes=tuple(names), device=names[0])).encode()
        return build

    hostile = json.dumps(hostile_report(True)).encode()
    reports: dict[str, Callable[[], bytes]] = {
        "hostile-fail": lambda: hostile,
        "hostile-pass": lambda: json.dumps(hostile_report(False)).encode(),
        "workflow-commands-fail": report_with(WORKFLOW_COMMANDS, True),
        "workflow-commands-pass": report_with(WORKFLOW_COMMANDS, False),
        "markup-and-commands": report_with([h + w for h, w in zip(HOSTILE, WORKFLOW_COMMANDS * 2)], True),
        "empty": lambda: b"",
        "not-json": lambda: b"##[stop-commands]t0k\n::error::not a report\n",
        "json-list": lambda: b"[1, 2, 3]",
        "version-99": lambda: json.dumps({**hostile_report(True), "version": 99}).encode(),
        "launches-a-string": lambda: json.dumps({**hostile_report(True), "launches": "##[x]"}).encode(),
        "verdict-hostile": lambda: json.dumps({**hostile_report(True), "verdict": "##[stop-commands]x"}).encode(),
        "deep": lambda: b"[" * 5000 + b"]" * 5000,
        "nan": lambda: hostile.replace(b'"notes": [', b'"notes": [NaN, ', 1),
        "long-note": lambda: json.dumps({**hostile_report(True), "notes": ["##[" * 200_000]}).encode(),
    }
    for fraction in (0.1, 0.5, 0.9, 0.999):
        reports[f"cut-{fraction}"] = lambda f=fraction: hostile[: int(len(hostile) * f)]
    return reports


FAULTS: dict[str, list[Fault]] = {
    "none": [],
    "500-then-fine": [Fault(500, body={"message": "##[stop-commands]server"})],
    "502-html": [Fault(502, body="<html>\x1b[31m##[error]bad gateway</html>")],
    # The waits GitHub asks for are 0 s here: the fuzzing is about what is printed, the waits have their own tests.
    "rate-limited": [Fault(403, headers={"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(time.time()))},
                           body={"message": "API rate limit exceeded ::error::x"})],
    "429-retry": [Fault(429, headers={"Retry-After": "0"}, body={"message": "slow down"})],
    "422-hostile": [Fault(422, body={"message": "##[set-output name=x;]y\n::error::forged", "errors": ["\x1b]8;;"]})],
}


def test_fuzz_publish_into_the_loopback_github(github: FakeGitHub, tmp_path: Path) -> None:
    tally = Tally("publish (loopback GitHub)")
    env = actions_env(github, tmp_path, event=pull_request_event(tmp_path))
    for report_id, build in _reports().items():
        for fault_id, faults in FAULTS.items():
            if fault_id != "none" and (report_id not in ("hostile-fail", "workflow-commands-pass") or
                                       report_id != "hostile-fail" and fault_id in ("rate-limited", "429-retry")):
                continue  # the server's faults with reports that get as far as it (a wait costs a second)
            github.faults.clear()
            github.faults.extend(faults)
            path = tmp_path / f"{report_id}.json"
            path.write_bytes(build())
            before = hashlib.sha256(path.read_bytes()).hexdigest()
            run = run_publish(path, env, "--max-time", "10", "--retry-backoff", "0.05")
            findings = _printed_findings(run.output, run.seconds)
            if run.returncode not in (0, 1, 2, 3):
                findings.append(("traceback", f"exit {run.returncode}: {run.output[-300:]}"))
            if run.returncode == 0 and report_id in ("empty", "not-json", "json-list", "version-99", "deep") or \
                    run.returncode == 0 and report_id.startswith("cut-"):
                findings.append(("silent pass", f"exit 0 for {report_id}"))
            if run.returncode in (2, 3) and run.stderr.count("\n") < 1:
                findings.append(("traceback", f"exit {run.returncode} with no line saying why: {run.output!r}"))
            if env["GITHUB_TOKEN"] in run.output:
                findings.append(("injection", "the token was printed"))
            if hashlib.sha256(path.read_bytes()).hexdigest() != before:
                findings.append(("file damaged", "the report changed"))
            tally.add(f"{report_id}/{fault_id}", findings)
    for comment in github.comments_on(GITHUB_REPO, PR):
        if "\x1b" in comment["body"]:
            tally.add("posted comment", [("injection", "a raw ESC in the comment")])
    tally.check()


# ---------------------------------------------------------------- truncated and damaged .xz inputs

def _xz_sources() -> dict[str, tuple[bytes, str, str]]:
    """name -> (xz bytes, file name, the command family: compare or history); the .ncu-rep's is its first 60 KB,
    so every case of it is cut."""
    return {
        "ncu-csv": (lzma.compress((H100 / "vector_add.rerun.raw-base.csv").read_bytes()), "k.csv.xz", "compare"),
        "trace": (lzma.compress((H100 / "mlp.torch-profiler-kernels.json").read_bytes()), "t.json.xz", "compare"),
        "session": ((H100 / "sessions" / "gate1.json.xz").read_bytes(), "s.json.xz", "history"),
        "ncu-rep": ((H100 / "softmax.ncu-rep.xz").read_bytes()[:60_000], "r.ncu-rep.xz", "compare"),
    }


def _damaged(data: bytes) -> dict[str, bytes]:
    cuts = {f"cut-{n}": data[:n] for n in (1, 6, 13, 100) if n < len(data)}  # in the magic, the header, a block
    cuts.update({f"cut-{f}": data[: int(len(data) * f)] for f in (0.5, 0.99)})
    cuts["last-byte"] = data[:-1]
    cuts["footer-gone"] = data[:-12]
    middle = len(data) // 2
    cuts["flipped-middle"] = data[:middle] + bytes([data[middle] ^ 0xFF]) + data[middle + 1:]
    cuts["flipped-crc"] = data[:-13] + bytes([data[-13] ^ 0x01]) + data[-12:]
    cuts["zeros-after-header"] = data[:12] + bytes(len(data) - 12)
    cuts["magic-only"] = data[:6]
    cuts["garbage-after"] = data + b"##[stop-commands]trailing"
    return cuts


def test_fuzz_truncated_and_damaged_xz_inputs(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    import tempfile

    tally = Tally("truncated and damaged .xz inputs")
    spool = tmp_path / "tmp"
    spool.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(spool))
    good = H100 / "vector_add.rerun.raw-base.csv"
    for source, (data, name, family) in _xz_sources().items():
        for damage, bad_bytes in _damaged(data).items():
            folder = tmp_path / f"{source}-{damage}"
            folder.mkdir()
            bad = folder / name
            bad.write_bytes(bad_bytes)
            before = hashlib.sha256(bad_bytes).hexdigest()
            if family == "history":
                runs = [["history", "record", str(bad), "--db", f"sqlite:///{folder / 'h.sqlite'}", "--commit",
                         "a" * 40, "--branch", "main"]]
            else:
                runs = [["compare", str(good), str(bad), "--format", "json", "-o", str(folder / "r.json")],
                        ["compare", str(bad), str(good)], ["baseline", str(bad), "-d", str(folder / "b")]]
            for args in runs:
                started = time.monotonic()
                try:
                    status = main(args)
                except SystemExit as exc:
                    status = int(exc.code or 0)
                except BaseException as exc:  # noqa: BLE001 - a traceback is what this looks for
                    status = -1
                    capsys.readouterr()
                    tally.add(f"{source}/{damage}/{args[0]}", [("traceback", repr(exc))])
                    continue
                out, err = capsys.readouterr()
                findings = _printed_findings(out + err, time.monotonic() - started)
                intact = damage == "garbage-after" and source != "ncu-rep"  # xz ignores nothing after: refused
                if status in (0, 1) and not intact:
                    findings.append(("silent pass", f"exit {status}: {out[-200:]}"))
                if status == 2 and (err.count("\n") != 1 or not err.startswith("perfgate: error: ")):
                    findings.append(("traceback", f"exit 2 without one error line: {err!r}"))
                if hashlib.sha256(bad.read_bytes()).hexdigest() != before:
                    findings.append(("file damaged", "the input changed"))
                if list(spool.iterdir()):
                    findings.append(("file damaged", f"left in TMPDIR: {sorted(p.name for p in spool.iterdir())}"))
                    for left in spool.iterdir():
                        if left.is_file():
                            left.unlink()
                tally.add(f"{source}/{damage}/{args[0]}", findings)
    tally.check()
