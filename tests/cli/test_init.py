"""``perfgate init``: what it writes passes the real actionlint and zizmor with no finding, pyproject.toml keeps
every byte it had, and nothing that exists is overwritten (one line, exit 2, nothing changed) without --force."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from helpers.common import run_cli
from perfgate.init import UNPINNED_SPEC, InitOptions, detected_example, installed_spec, next_steps, plan

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

BIN = Path(sys.executable).parent
WRITTEN = (".github/workflows/perfgate-pr.yml", ".github/workflows/perfgate-publish.yml",
           ".github/workflows/perfgate-main.yml", ".github/actionlint.yaml", "pyproject.toml",
           "tests/perf/test_perf_example.py")
PROJECT = b'[project]\nname = "demo"  # keep this comment\nversion = "1"\n\n[tool.ruff]\nline-length = 99\n'


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _linter(name: str) -> str:
    found = BIN / name if (BIN / name).is_file() else shutil.which(name)
    if not found:
        pytest.skip(f"{name} is not installed (requirements/lint.txt)")
    return str(found)


def test_init_writes_a_setup_the_real_linters_pass(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True, timeout=60)  # actionlint finds .github by it
    (tmp_path / "pyproject.toml").write_bytes(PROJECT)
    status, out, err = run_cli(capsys, "init", "--dir", tmp_path, "--runner-label", "h100", "--example", "cpu")
    assert (status, err) == (0, "")
    assert all((tmp_path / name).is_file() for name in WRITTEN)
    assert "Next:" in out and "git add .github pyproject.toml tests/perf" in out
    pr = yaml.safe_load((tmp_path / WRITTEN[0]).read_text())
    assert pr["jobs"]["perf"]["runs-on"] == ["self-hosted", "h100"]
    assert yaml.safe_load((tmp_path / WRITTEN[3]).read_text())["self-hosted-runner"]["labels"] == ["h100"]
    assert yaml.safe_load((tmp_path / WRITTEN[2]).read_text())[True]["push"]["branches"] == ["main"]  # `on:`
    env = {"PATH": f"{BIN}:/usr/bin:/bin"}  # actionlint runs ShellCheck on every run: script when it finds it
    lint = subprocess.run([_linter("actionlint")], cwd=tmp_path, capture_output=True, text=True, env=env, timeout=120)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    audit = subprocess.run([_linter("zizmor"), "--offline", "--persona=auditor", "--no-progress", ".github/"],
                           cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert audit.returncode == 0, audit.stdout + audit.stderr
    assert "No findings to report" in audit.stdout


@pytest.mark.parametrize("ending", [b"", b"\n\n", b"\r\n"], ids=["no final newline", "blank lines", "crlf"])
def test_pyproject_keeps_every_byte_it_had(tmp_path: Path, capsys: pytest.CaptureFixture[str], ending: bytes) -> None:
    before = PROJECT.rstrip(b"\n").replace(b"\n", b"\r\n" if ending == b"\r\n" else b"\n") + ending
    (tmp_path / "pyproject.toml").write_bytes(before)
    assert run_cli(capsys, "init", "--dir", tmp_path)[0] == 0
    after = (tmp_path / "pyproject.toml").read_bytes()
    assert after.startswith(before)
    document = tomllib.loads(after.decode())
    assert document["project"]["name"] == "demo" and document["tool"]["ruff"] == {"line-length": 99}
    assert document["tool"]["perfgate"] == {"baselines": "baselines", "history_branch": "main",
                                            "history_fallback": True}


def test_without_pyproject_one_is_made(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(capsys, "init", "--dir", tmp_path, "--branch", "trunk")[0] == 0
    document = tomllib.loads((tmp_path / "pyproject.toml").read_text())
    assert document == {"tool": {"perfgate": {"baselines": "baselines", "history_branch": "trunk",
                                              "history_fallback": True}}}
    assert "branches: [trunk]" in (tmp_path / WRITTEN[2]).read_text()


@pytest.mark.parametrize("existing", ["tests/perf/test_perf_example.py", ".github/actionlint.yaml", "pyproject.toml",
                                      "tests/perf"])
def test_nothing_that_exists_is_overwritten(tmp_path: Path, capsys: pytest.CaptureFixture[str], existing: str) -> None:
    target = tmp_path / existing
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("[tool.perfgate]\nstrict = true\n" if existing == "pyproject.toml" else "mine\n")
    before = _tree(tmp_path)
    status, out, err = run_cli(capsys, "init", "--dir", tmp_path)
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and existing in err and "--force" in err
    if existing == "pyproject.toml":  # the file is kept in any case: its table is what is in the way
        assert "init: pyproject.toml's [tool.perfgate] already exists" in err
    assert _tree(tmp_path) == before  # checked before anything was written


def test_force_replaces_the_table_and_keeps_the_rest(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "demo"\n\n[tool.perfgate]\nstrict = true\n\n'
                                             '[tool.perfgate.thresholds]\n"gpu__time_duration.sum" = "3%"\n\n'
                                             '[tool.ruff]\nline-length = 99\n')
    (tmp_path / "tests/perf").mkdir(parents=True)
    (tmp_path / "tests/perf/test_perf_example.py").write_text("mine\n")
    status, out, _ = run_cli(capsys, "init", "--dir", tmp_path, "--force")
    assert status == 0
    # It says what it did to the user's table: replaced, not appended.
    assert "  pyproject.toml                          [tool.perfgate] (replaced; every other line unchanged)\n" in out
    document = tomllib.loads((tmp_path / "pyproject.toml").read_text())
    assert document["tool"]["perfgate"]["history_fallback"] is True and "strict" not in document["tool"]["perfgate"]
    assert document["tool"]["ruff"] == {"line-length": 99} and document["project"] == {"name": "demo"}
    assert (tmp_path / "tests/perf/test_perf_example.py").read_text() != "mine\n"


def test_the_example_is_a_kernel_test_where_torch_or_cupy_imports(tmp_path: Path) -> None:
    assert detected_example(lambda name: name == "cupy") == "cupy"
    assert detected_example(lambda name: True) == "torch"
    assert detected_example(lambda name: False) == "cpu"
    for library in ("torch", "cupy"):
        example = plan(tmp_path, InitOptions(), importable=lambda name, lib=library: name == lib)[-1]
        assert f'importorskip("{library}")' in example.text and "perfgate.region(" in example.text
        compile(example.text, str(example.path), "exec")
    assert "def test_work(benchmark)" in plan(tmp_path, InitOptions(), importable=lambda name: False)[-1].text


@pytest.mark.parametrize("args", [("--runner-label", "gpu]\n  evil: 1"), ("--tests", "../outside"),
                                  ("--install", "a\nb")])
def test_values_that_would_break_the_workflows_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                           args: tuple[str, str]) -> None:
    status, _, err = run_cli(capsys, "init", "--dir", tmp_path, *args)
    assert status == 2 and err.count("\n") == 1 and args[0] in err
    assert not any(tmp_path.iterdir())


def test_the_install_step_follows_what_the_repository_is(tmp_path: Path) -> None:
    def pr_text() -> str:
        return plan(tmp_path, InitOptions())[0].text
    assert "nothing to install" in pr_text()
    (tmp_path / "requirements.txt").write_text("numpy\n")
    assert "-r requirements.txt" in pr_text()
    (tmp_path / "pyproject.toml").write_bytes(PROJECT)
    assert "pip install --disable-pip-version-check -e ." in pr_text()
    assert "make install" in plan(tmp_path, InitOptions(install="make install"))[0].text


def test_a_perf_test_not_measured_fails_the_job_but_a_new_one_does_not(tmp_path: Path) -> None:
    """The first pull requests (tests reported as new) stay green; a runner that lost ncu or its GPU does not."""
    workflow = yaml.safe_load(plan(tmp_path, InitOptions())[0].text)
    (script,) = [s["run"] for s in workflow["jobs"]["perf"]["steps"]
                 if s.get("name") == "A perf test not measured means a broken runner"]
    report = tmp_path / "perfgate-report.json"

    def run(unmeasured: list[dict[str, str]]) -> subprocess.CompletedProcess[str]:
        report.write_text(json.dumps({"verdict": "not measured", "unmeasured": unmeasured}))
        return subprocess.run(["bash", "-e", "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=60,
                              env={"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin"})
    assert run([]).returncode == 0
    broken = run([{"test": "t.py::t", "cause": "ncu not found\n::warning::forged"}])
    assert broken.returncode == 1 and broken.stdout.count("\n") == 1
    assert broken.stdout.startswith("::error::perfgate: 1 perf test(s) not measured on this runner, e.g. ncu not found")
    report.unlink()
    assert subprocess.run(["bash", "-e", "-c", script], cwd=tmp_path, timeout=60,
                          env={"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin"}).returncode == 0


def test_the_workflows_install_the_commit_perfgate_came_from_never_a_missing_tag(tmp_path: Path) -> None:
    """perfgate has no release tag yet: the workflows pin the git commit pip installed this perfgate from (PEP 610),
    and where it came from elsewhere they install main's head and the next steps say to pin a commit."""
    commit = "0123456789abcdef0123456789abcdef01234567"
    record = {"url": "https://github.com/perfgate/perfgate", "vcs_info": {"vcs": "git", "commit_id": commit}}
    assert installed_spec(json.dumps(record)) == f"perfgate @ git+https://github.com/perfgate/perfgate@{commit}"
    for other in ({"url": "file:///src/perfgate", "dir_info": {"editable": True}}, {**record, "vcs_info": {}},
                  {"url": "https://github.com/perfgate/perfgate", "vcs_info": {"vcs": "git", "commit_id": "main"}}):
        assert installed_spec(json.dumps(other)) is None
    assert installed_spec("not json") is None
    pinned = InitOptions(perfgate_spec=f"perfgate @ git+https://github.com/perfgate/perfgate@{commit}")
    texts = {str(item.path): item.text for item in plan(tmp_path, pinned)}
    assert commit in texts[".github/workflows/perfgate-pr.yml"] and "@v0" not in "".join(texts.values())
    assert "pin one" not in next_steps(pinned, plan(tmp_path, pinned))
    unpinned = InitOptions(perfgate_spec=UNPINNED_SPEC)
    steps = next_steps(unpinned, plan(tmp_path, unpinned))
    assert "perfgate has no release tag yet" in steps
    # Pinned by editing the workflows, not by init --force, which would write the user's edited files again.
    assert "in .github/workflows/perfgate-*.yml write 'perfgate @ git+" in steps and "init --force --perfgate-spec '" \
        not in steps
