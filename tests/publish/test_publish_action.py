"""The composite action and the example workflows: permissions, injection safety, and their scripts run for real."""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers.github_server import (
    HEAD_SHA,
    PR,
    REPO,
    REPO_ROOT,
    TOKEN,
    FakeGitHub,
    actions_env,
    github,
    launch,
    make_report,
    pull_request_event,
    workflow_run_event,
    write_report,
)

__all__ = ["github"]

yaml = pytest.importorskip("yaml")

WORKFLOWS = REPO_ROOT / ".github" / "workflows"
ACTION = REPO_ROOT / "action.yml"


def load(path: Path) -> dict[str, Any]:
    document = yaml.safe_load(path.read_text())
    if True in document:  # YAML 1.1 reads the key `on` as a boolean
        document["on"] = document.pop(True)
    return document


def steps_of(document: dict[str, Any]) -> list[dict[str, Any]]:
    if "runs" in document:
        return document["runs"]["steps"]
    return [step for job in document["jobs"].values() for step in job.get("steps", [])]


def step(document: dict[str, Any], name: str) -> dict[str, Any]:
    (found,) = [s for s in steps_of(document) if s.get("name") == name]
    return found


def write_permissions(document: dict[str, Any]) -> set[str]:
    scopes = [document.get("permissions") or {}] + [job.get("permissions") or {} for job in document["jobs"].values()]
    if any(isinstance(s, str) for s in scopes):
        return {"write-all"} if "write-all" in scopes else set()
    return {k for scope in scopes for k, v in scope.items() if v == "write"}


@pytest.mark.parametrize("path", [ACTION, *sorted(WORKFLOWS.glob("perfgate-*.yml"))], ids=lambda p: p.name)
def test_no_expression_is_interpolated_into_a_script(path: Path) -> None:
    """Values reach scripts through env: only (GitHub's script-injection hardening)."""
    for s in steps_of(load(path)):
        if "run" in s:
            assert "${{" not in s["run"], (path.name, s.get("name"))
            assert "github.event" not in s["run"]


def test_the_action_is_a_composite_with_bash_steps_and_documented_inputs() -> None:
    action = load(ACTION)
    assert action["runs"]["using"] == "composite"
    for s in action["runs"]["steps"]:
        assert ("uses" in s) != ("run" in s)
        if "run" in s:
            assert s["shell"] == "bash", s.get("name")
    inputs = action["inputs"]
    for name in ("python-version", "pytest-args", "report", "baselines", "publish", "comment-mode", "github-token",
                 "working-directory"):
        assert inputs[name]["description"] and "default" in inputs[name], name
    assert inputs["github-token"]["default"] == "${{ github.token }}"
    assert inputs["report"]["default"] == "perfgate-report.json"
    uses = [s["uses"].split("@")[0] for s in action["runs"]["steps"] if "uses" in s]
    assert uses == ["actions/setup-python", "actions/upload-artifact"]
    assert step(action, "Upload the report")["if"] == "always()" and step(action, "Publish")["if"] == "always()"


def test_the_documented_inputs_and_outputs_are_the_actions() -> None:
    """docs/github-actions.md's "Action inputs" table has a row per input of action.yml, with its default, and
    the page's "Outputs:" names each output."""
    action = load(ACTION)
    page = (REPO_ROOT / "docs" / "github-actions.md").read_text(encoding="utf-8")
    table = page.split("## Action inputs", 1)[1].split("\n\n", 2)[1]
    rows = [[cell.strip().strip("`") for cell in line.strip("|").split("|")][:2] for line in table.splitlines()[2:]]
    documented = {name: default for name, default in rows}
    assert documented == {name: str(spec["default"]).lower() if isinstance(spec["default"], bool)
                          else (spec["default"] or '""') for name, spec in action["inputs"].items()}
    outputs = re.search(r"Outputs: ((?:`[a-z-]+`(?:, | \())+)", page)
    assert outputs and re.findall(r"`([a-z-]+)`", outputs.group(1)) == list(action["outputs"])


def test_same_repo_workflow_permissions() -> None:
    workflow = load(WORKFLOWS / "perfgate-pr.yml")
    assert "pull_request" in workflow["on"] and "pull_request_target" not in workflow["on"]
    (job,) = workflow["jobs"].values()
    assert job["permissions"] == {"contents": "read", "pull-requests": "write", "checks": "write"}
    assert "self-hosted" in job["runs-on"] and "gpu" in job["runs-on"]
    assert "head.repo.full_name == github.repository" in job["if"]  # forks go through the fork-safe pair


def test_fork_safe_pair() -> None:
    test = load(WORKFLOWS / "perfgate-fork-test.yml")
    publish = load(WORKFLOWS / "perfgate-fork-publish.yml")
    assert list(test["on"]) == ["pull_request"] and write_permissions(test) == set()
    assert publish["on"]["workflow_run"]["workflows"] == [test["name"]]
    assert publish["on"]["workflow_run"]["types"] == ["completed"]
    assert write_permissions(publish) == {"pull-requests", "checks"}
    (publish_job,) = publish["jobs"].values()
    assert publish_job["permissions"]["actions"] == "read"  # to download another run's artifact
    download = next(s for s in steps_of(publish) if s.get("uses", "").startswith("actions/download-artifact"))
    assert download["with"]["run-id"] == "${{ github.event.workflow_run.id }}"
    assert download["with"]["github-token"] == "${{ github.token }}"
    assert download["with"]["name"] == "perfgate-report"
    for s in steps_of(publish):  # never check out or run the pull request's code with a write token
        if s.get("uses", "").startswith("actions/checkout"):
            assert "ref" not in (s.get("with") or {})
    (job,) = publish["jobs"].values()
    assert "head_repository.full_name != github.repository" in job["if"]  # only runs the fork test ran for
    fork_step = next(s for s in steps_of(test) if s.get("uses") == "./")
    assert fork_step["with"]["publish"] == "false"


# Current (node24) majors, each pinned to the commit of its release tag; the tag is the comment beside it.
PINNED = re.compile(r"uses: (actions/[\w-]+)@([0-9a-f]{40}) # (v\d+\.\d+\.\d+)$", re.MULTILINE)
DOCS = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]


def test_every_action_is_pinned_to_a_commit_with_its_tag_and_one_version_everywhere() -> None:
    files = [ACTION, *sorted(WORKFLOWS.glob("*.yml")), *DOCS]
    pins: dict[str, set[tuple[str, str]]] = {}
    for path in files:
        text = path.read_text()
        for line in re.findall(r"uses: actions/\S+.*", text):
            assert PINNED.fullmatch(line), f"{path.name}: {line!r} is not pinned as actions/NAME@<sha> # vX.Y.Z"
        for action, sha, tag in PINNED.findall(text):
            pins.setdefault(action, set()).add((sha, tag))
    assert set(pins) == {"actions/checkout", "actions/setup-python", "actions/upload-artifact",
                         "actions/download-artifact", "actions/upload-pages-artifact", "actions/deploy-pages"}
    for action, versions in pins.items():
        assert len(versions) == 1, (action, versions)  # the docs' examples show what the workflows use


@pytest.mark.parametrize("path", sorted(WORKFLOWS.glob("*.yml")), ids=lambda p: p.name)
def test_workflows_grant_permissions_per_job_and_keep_no_credentials(path: Path) -> None:
    workflow = load(path)
    assert workflow["permissions"] == {}, "the workflow level grants nothing; each job names its scopes"
    for name, job in workflow["jobs"].items():
        assert "permissions" in job and "timeout-minutes" in job, name
        for s in job["steps"]:
            if s.get("uses", "").startswith("actions/checkout@"):
                assert s["with"]["persist-credentials"] is False, name


def test_actionlint_knows_the_gpu_runner_label() -> None:
    config = yaml.safe_load((REPO_ROOT / ".github" / "actionlint.yaml").read_text())
    labels = {label for path in WORKFLOWS.glob("*.yml") for job in load(path)["jobs"].values()
              for label in ([job["runs-on"]] if isinstance(job["runs-on"], str) else job["runs-on"])}
    assert labels - {"ubuntu-latest", "self-hosted"} == set(config["self-hosted-runner"]["labels"]) == {"gpu"}


# ---------------------------------------------------------------- the scripts themselves, run with bash

def bash(script: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**env, "PATH": os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")}
    return subprocess.run(["bash", "-e", "-c", script], env=env, cwd=cwd, capture_output=True, text=True, timeout=60)


def test_the_actions_publish_step(github: FakeGitHub, tmp_path: Path) -> None:
    script = step(load(ACTION), "Publish")["run"]
    report = write_report(tmp_path, make_report([launch("k")]))
    env = {**actions_env(github, tmp_path, event=pull_request_event(tmp_path)), "REPORT": str(report),
           "PERFGATE_PYTHON": sys.executable, "PUBLISH": "true", "COMMENT_MODE": "on-regression",
           "CHECK_NAME": "perfgate (T4)"}
    done = bash(script, env, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(github.comments_on(REPO, PR)) == 1
    assert [(r["name"], r["head_sha"]) for r in github.check_runs.values()] == [("perfgate (T4)", HEAD_SHA)]

    refused = bash(script, {**env, "GITHUB_TOKEN": "ghp_bad"}, tmp_path)  # publishing fails: warn, don't fail
    assert refused.returncode == 0 and "::warning::perfgate publish exited 3" in refused.stdout
    summary_only = bash(script, {**env, "PUBLISH": "false"}, tmp_path)
    assert summary_only.returncode == 0 and len(github.check_runs) == 1
    missing = bash(script, {**env, "REPORT": str(tmp_path / "none.json")}, tmp_path)
    assert missing.returncode == 0 and "::warning::perfgate: no report" in missing.stdout


def test_the_verdict_step_fails_an_unmeasured_suite_when_strict(github: FakeGitHub, tmp_path: Path) -> None:
    """pytest exits 0 when its perf tests were skipped (no ncu on the runner): the strict action fails the job."""
    script = step(load(ACTION), "Verdict")["run"]
    unmeasured = make_report([])
    unmeasured["unmeasured"] = [{"test": "tests/gpu/test_gemm.py::test_gemm", "cause": "ncu not found"}]
    env = {"PATH": os.environ.get("PATH", ""), "EXIT_CODE": "0", "PERFGATE_PYTHON": sys.executable,
           "REPORT": str(write_report(tmp_path, unmeasured)), "STRICT": "true"}
    strict = bash(script, env, tmp_path)
    assert strict.returncode == 1
    assert "::error::perfgate: not measured: 1 perf test not measured: ncu not found" in strict.stdout
    assert bash(script, {**env, "STRICT": "false"}, tmp_path).returncode == 0
    measured = write_report(tmp_path, make_report([launch("k", status="unchanged")]), "measured.json")
    assert bash(script, {**env, "REPORT": str(measured)}, tmp_path).returncode == 0
    failed = bash(script, {**env, "EXIT_CODE": "1"}, tmp_path)  # pytest's own failure stands, strict or not
    assert failed.returncode == 1 and "::error::pytest --perfgate exited 1" in failed.stdout


def test_the_pytest_steps_arguments_are_not_shell_code(tmp_path: Path) -> None:
    script = step(load(ACTION), "pytest --perfgate")["run"]
    script = script.replace('"$PERFGATE_PYTHON" -m pytest', 'printf "<%s>" ')  # show the argv pytest would get
    env = {"PATH": os.environ.get("PATH", ""), "GITHUB_OUTPUT": str(tmp_path / "out"), "REPORT": "/r/report.json",
           "BASELINES": "", "PYTEST_ARGS": "tests/gpu -k 'a b' $(touch pwned) ;touch pwned2"}
    done = bash(script, env, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("<--perfgate><--perfgate-report=/r/report.json><tests/gpu><-k><'a><b'>")
    assert "<$(touch><pwned)>" in done.stdout
    assert not (tmp_path / "pwned").exists() and not (tmp_path / "pwned2").exists()
    assert (tmp_path / "out").read_text() == "exit-code=0\n"


def test_the_fork_publish_step(github: FakeGitHub, tmp_path: Path) -> None:
    script = step(load(WORKFLOWS / "perfgate-fork-publish.yml"), "Publish")["run"]
    artifact = tmp_path / "artifact"
    artifact.mkdir()
    write_report(artifact, make_report([launch("k")]), "perfgate-report.json")
    env = {**actions_env(github, tmp_path, event=workflow_run_event(tmp_path, pulls=[]), event_name="workflow_run"),
           "ARTIFACT": str(artifact)}
    (artifact / "pr-number").write_text("7; touch pwned\n")  # a hostile artifact
    hostile = bash(script, env, tmp_path)
    assert hostile.returncode == 1 and "not a number" in hostile.stdout
    assert not (tmp_path / "pwned").exists() and github.requests == []

    (artifact / "pr-number").write_text(f"{PR}\n")
    done = bash(script, env, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert TOKEN not in done.stdout + done.stderr
    (comment,) = github.comments_on(REPO, PR)
    assert "All clear" not in comment["body"] and [r["head_sha"] for r in github.check_runs.values()] == [HEAD_SHA]


def test_every_publish_option_states_its_default() -> None:
    from perfgate.cli import build_parser

    commands = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    publish = commands.choices["publish"]
    for action in publish._actions:
        if action.option_strings and action.dest != "help":
            assert re.search(r"\(default: [^)]+\)", action.help or ""), action.option_strings


# ---------------------------------------------------------------- the install step: into a virtual environment

def tiny_wheel(directory: Path) -> Path:
    """A real (hand-made) wheel: pip installs it offline, so the install step runs for real."""
    import base64
    import hashlib
    import zipfile

    files = {"perfgate_probe.py": "VALUE = 1\n",
             "perfgate_probe-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: perfgate-probe\nVersion: 1.0\n",
             "perfgate_probe-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\n"
                                                   "Tag: py3-none-any\n"}
    record = []
    for name, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(text.encode())}")
    files["perfgate_probe-1.0.dist-info/RECORD"] = "\n".join([*record, "perfgate_probe-1.0.dist-info/RECORD,,"]) + "\n"
    wheel = directory / "perfgate_probe-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return wheel


def python_on_path(directory: Path, interpreter: str) -> str:
    """A PATH whose `python` is ``interpreter`` (as on a runner: whatever `python` resolves to)."""
    directory.mkdir()
    wrapper = directory / "python"
    wrapper.write_text(f'#!/bin/sh\nexec "{interpreter}" "$@"\n')
    wrapper.chmod(0o755)
    return f"{directory}{os.pathsep}{os.environ.get('PATH', '')}"


def imports_probe(python: str) -> bool:
    return subprocess.run([python, "-c", "import perfgate_probe"], capture_output=True).returncode == 0


def test_the_install_step_installs_into_a_virtual_environment_not_the_runners_python(tmp_path: Path) -> None:
    """Debian/Ubuntu refuse `pip install` into the system Python (externally-managed-environment): the
    action makes a virtual environment that still sees the runner's packages, and later steps use it."""
    base = sys.executable if sys.prefix == sys.base_prefix else str(Path(sys.base_prefix) / "bin" / "python3")
    if subprocess.run([base, "-c", "import ensurepip, venv"], capture_output=True).returncode != 0:
        pytest.skip(f"{base} cannot create virtual environments (no ensurepip)")
    script = step(load(ACTION), "Install perfgate")["run"]
    wheel = tiny_wheel(tmp_path)
    runner_temp = tmp_path / "runner-temp"
    runner_temp.mkdir()
    env = {"PATH": python_on_path(tmp_path / "bin", base), "RUNNER_TEMP": str(runner_temp),
           "GITHUB_OUTPUT": str(tmp_path / "out"), "PERFGATE_SPEC": str(wheel), "ACTION_PATH": str(REPO_ROOT),
           "HOME": str(tmp_path), "PIP_NO_INDEX": "1"}
    done = subprocess.run(["bash", "-e", "-c", script], env=env, cwd=tmp_path, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    venv = runner_temp / "perfgate-venv"
    python = str(venv / "bin" / "python")
    assert (tmp_path / "out").read_text() == f"python={python}\n"  # what the later steps run
    assert imports_probe(python) and not imports_probe(base)
    assert "include-system-site-packages = true" in (venv / "pyvenv.cfg").read_text()  # the project's packages

    # A job whose `python` already is a virtual environment (its own): perfgate goes there, no second one.
    (tmp_path / "out").unlink()
    other_temp = tmp_path / "other-temp"
    other_temp.mkdir()
    env = {**env, "PATH": f"{venv / 'bin'}{os.pathsep}{env['PATH']}", "RUNNER_TEMP": str(other_temp)}
    again = subprocess.run(["bash", "-e", "-c", script], env=env, cwd=tmp_path, capture_output=True, text=True,
                           timeout=300)
    assert again.returncode == 0, again.stdout + again.stderr
    assert (tmp_path / "out").read_text() == f"python={python}\n" and list(other_temp.iterdir()) == []


@pytest.mark.parametrize("name", ["pytest --perfgate", "Publish"])
def test_later_steps_run_the_python_that_has_perfgate(name: str) -> None:
    s = step(load(ACTION), name)
    assert s["env"]["PERFGATE_PYTHON"] == "${{ steps.install.outputs.python }}"
    assert '"$PERFGATE_PYTHON" -m ' in s["run"] and "command -v python" not in s["run"]


def test_the_modes_give_pytest_the_history_or_the_update(tmp_path: Path) -> None:
    script = step(load(ACTION), "pytest --perfgate")["run"]
    script = script.replace('"$PERFGATE_PYTHON" -m pytest', 'printf "<%s>" ')
    env = {"PATH": os.environ.get("PATH", ""), "GITHUB_OUTPUT": str(tmp_path / "out"), "REPORT": "/r/report.json",
           "BASELINES": "", "PYTEST_ARGS": "tests", "HISTORY": "sqlite:///h.sqlite"}
    argv = {mode: bash(script, {**env, "MODE": mode}, tmp_path).stdout for mode in ("gate", "record", "update")}
    assert argv["gate"] == ("<--perfgate><--perfgate-report=/r/report.json><--perfgate-history=sqlite:///h.sqlite>"
                            "<--perfgate-history-fallback><tests>")
    assert argv["record"] == "<--perfgate><--perfgate-report=/r/report.json><--perfgate-history=sqlite:///h.sqlite><tests>"
    assert argv["update"] == "<--perfgate><--perfgate-report=/r/report.json><--perfgate-update><tests>"
    no_history = bash(script, {**env, "MODE": "gate", "HISTORY": ""}, tmp_path).stdout
    assert no_history == "<--perfgate><--perfgate-report=/r/report.json><tests>"


@pytest.mark.parametrize(("mode", "history", "strict", "expected"), [
    ("gate", "", "auto", "strict=true"), ("gate", "sqlite:///h", "auto", "strict=unmeasured"),
    ("update", "", "auto", "strict=false"), ("gate", "sqlite:///h", "true", "strict=true"),
    ("record", "", "auto", "::error::perfgate: mode record needs the history input"),
    ("publish", "", "auto", "::error::perfgate: mode must be gate, record or update")])
def test_the_locate_step_checks_the_mode_and_resolves_strict(tmp_path: Path, mode: str, history: str, strict: str,
                                                             expected: str) -> None:
    script = step(load(ACTION), "Locate the report")["run"]
    out = tmp_path / "out"
    env = {"PATH": os.environ.get("PATH", ""), "GITHUB_OUTPUT": str(out), "REPORT": "r.json", "MODE": mode,
           "HISTORY": history, "STRICT": strict, "BASELINES": ""}
    done = bash(script, env, tmp_path)
    if expected.startswith("::error::"):
        assert done.returncode == 1 and expected in done.stdout
    else:
        assert done.returncode == 0 and expected in out.read_text().splitlines()
        kept = dict(line.split("=", 1) for line in out.read_text().splitlines())["kept"]
        assert kept == (str(tmp_path / "baselines") if mode == "update" else str(tmp_path / "r.json"))


def test_with_a_history_nothing_compared_yet_is_neutral_but_a_broken_runner_fails(tmp_path: Path) -> None:
    """strict auto with a history: the first pull requests (no baseline, too few runs of main) are not red."""
    script = step(load(ACTION), "Verdict")["run"]
    env = {"PATH": os.environ.get("PATH", ""), "EXIT_CODE": "0", "PERFGATE_PYTHON": sys.executable,
           "STRICT": "unmeasured"}
    new_only = write_report(tmp_path, make_report([launch("k", status="new")]), "new.json")
    assert bash(script, {**env, "REPORT": str(new_only)}, tmp_path).returncode == 0
    assert bash(script, {**env, "REPORT": str(new_only), "STRICT": "true"}, tmp_path).returncode == 1
    broken = make_report([])
    broken["unmeasured"] = [{"test": "tests/gpu/test_gemm.py::test_gemm", "cause": "ncu not found"}]
    assert bash(script, {**env, "REPORT": str(write_report(tmp_path, broken))}, tmp_path).returncode == 1


def test_the_install_input_runs_with_perfgates_python_first_on_path(tmp_path: Path) -> None:
    script = step(load(ACTION), "Install the project under test")["run"]
    venv = tmp_path / "venv" / "bin"
    venv.mkdir(parents=True)
    (venv / "python").write_text("#!/bin/sh\necho venv-python \"$@\"\n")
    (venv / "python").chmod(0o755)
    env = {"PATH": os.environ.get("PATH", ""), "PERFGATE_PYTHON": str(venv / "python"),
           "INSTALL": "python -m pip install -e . && echo done"}
    done = bash(script, env, tmp_path)
    assert done.returncode == 0 and done.stdout == "venv-python -m pip install -e .\ndone\n"
    assert bash(script, {**env, "INSTALL": "false"}, tmp_path).returncode == 1  # a failed install fails the step
