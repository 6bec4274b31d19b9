"""The first GPU example a newcomer copies (issue 25, part 4): its kernel filter, in the README, the docs and
the example file alike, matches the kernels PyTorch launched for it on our H100 and H200 (their committed
baselines), and the suite does not depend on what the Quickstart leaves in the checkout."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.common import REPO

FILTER = re.compile(r'@pytest\.mark\.perfgate\(kernels="regex:([^"]+)"[^\n]*\)\ndef test_softmax')
PAGES = ["README.md", "docs/getting-started.md", "docs/pytest-plugin.md", "examples/test_torch_softmax.py"]


def _softmax_kernels() -> set[str]:
    names = set()
    for gpu in ("nvidia-h100-80gb-hbm3-sm90", "nvidia-h200-sm90"):
        baseline = json.loads((REPO / "baselines" / gpu / "examples.test_torch_softmax__test_softmax.json").read_text(
            encoding="utf-8"))
        names |= {e["name"] for e in baseline["entries"] if e["kind"] == "kernel"}
    return names


@pytest.mark.parametrize("page", PAGES)
def test_the_softmax_example_filter_matches_pytorchs_kernel(page: str) -> None:
    found = FILTER.findall((REPO / page).read_text(encoding="utf-8"))
    assert found, f"{page}: no softmax example with a regex kernel filter"
    kernels = _softmax_kernels()
    assert "cunn_SoftMaxForwardReg" in kernels  # what the H100 and H200 ran
    for expression in found:
        # ncu's --kernel-name regex: matches anywhere in the function name (the committed baselines were
        # recorded with this filter)
        assert all(re.search(expression, name) for name in kernels), (page, expression)
        assert not re.fullmatch("softmax", expression), "a lowercase literal matched nothing on the H100"


def test_the_suite_does_not_read_what_the_quickstart_leaves(tmp_path: Path) -> None:
    """The Quickstart records baselines/cpu-<your CPU>/ in the checkout; the tests that once listed the checkout's
    baselines pass with such a folder there (a copy of the checkout's tests and baselines, run in a child)."""
    copy = tmp_path / "checkout"
    shutil.copytree(REPO / "tests", copy / "tests", ignore=shutil.ignore_patterns("__pycache__", "data"))
    (copy / "tests" / "data").symlink_to(REPO / "tests" / "data")
    shutil.copytree(REPO / "baselines", copy / "baselines", ignore=shutil.ignore_patterns("cpu-*"))
    shutil.copytree(REPO / "examples", copy / "examples", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", copy / "pyproject.toml")
    leftover = copy / "baselines" / "cpu-amd-epyc-7b13"
    leftover.mkdir()
    (leftover / "examples.cpu.test_host_code__test_tokenize.json").write_text(json.dumps({
        "format": "perfgate-baseline", "version": 2, "device": "CPU: AMD EPYC 7B13", "settings": {},
        "source": "pytest-benchmark", "entries": []}), encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
                           "tests/cli/test_store.py"], cwd=copy, capture_output=True, text=True, timeout=600,
                          env={**_environment(), "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]


def _environment() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PERFGATE_"))}


def test_getting_started_names_every_command_and_configuration_every_exit_status() -> None:
    # A newcomer reads the command list of Getting started and the exit statuses of Configuration: each command
    # `perfgate --help` offers is in both.
    from perfgate.cli.parser import build_parser

    parser = build_parser()
    commands = next(a for a in parser._actions if a.dest == "command").choices  # noqa: SLF001  (argparse's own list)
    started = (REPO / "docs" / "getting-started.md").read_text(encoding="utf-8")
    listed = re.search(r"That one install gives the `perfgate` command \(([^)]*)\)", started)
    assert listed, "docs/getting-started.md: no command list"
    assert set(re.findall(r"`([a-z]+)`", listed.group(1))) == set(commands)
    statuses = (REPO / "docs" / "configuration.md").read_text(encoding="utf-8").split("## Exit statuses")[1]
    statuses = statuses.split("\n## ")[0]
    missing = [name for name in commands if f"`{name}`" not in statuses and f"perfgate {name}" not in statuses]
    assert not missing, f"docs/configuration.md's exit statuses say nothing of {missing}"


def test_the_documented_exit_statuses_are_the_ones_the_code_returns() -> None:
    """docs/configuration.md's table of exit statuses, and its bisect --step and signal statuses, are the code's."""
    from perfgate.cli.bisect import STEP_BAD_INPUT, STEP_EXIT
    from perfgate.cli.init import EXIT_EXISTS
    from perfgate.errors import EXIT_OK, EXIT_REGRESSION, EXIT_USAGE
    from perfgate.publish import EXIT_PUBLISH_FAILED

    text = (REPO / "docs" / "configuration.md").read_text(encoding="utf-8").split("## Exit statuses")[1]
    text = text.split("\n## ")[0]
    rows = {int(status): cells for status, *cells in (
        [cell.strip().strip("`") for cell in line.strip("|").split("|")] for line in text.splitlines()
        if re.match(r"\| `\d+` \|", line))}
    compare, _, publish = zip(*(rows[status] for status in sorted(rows)), strict=True)
    said = {status: compare[index] for index, status in enumerate(sorted(rows))}
    assert said[EXIT_OK].startswith("no regression") and said[EXIT_REGRESSION].startswith("a regression")
    assert said[EXIT_USAGE].startswith("unusable input or usage")
    assert rows[EXIT_PUBLISH_FAILED][2].startswith("GitHub refused") and rows[EXIT_REGRESSION][2].startswith(
        "only with `--fail-on-regression`")
    assert len(publish) == len(rows)
    flat = " ".join(text.split())
    assert "`init`: also a file it would overwrite without `--force`" in flat and EXIT_EXISTS == EXIT_USAGE
    step = ", ".join(f"`{code}` {verdict}" for verdict, code in STEP_EXIT.items())
    assert f"`git bisect run`: {step}, `{STEP_BAD_INPUT}` bad input" in flat
    assert "exits `130` when interrupted (Ctrl-C) and `128 + N` when terminated by signal `N` (SIGTERM: `143`)" in flat
