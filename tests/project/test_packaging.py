"""Packaging, for real: the sdist and the wheel built by `python -m build` (offline: --no-isolation, from a
copy of the source tree), what they contain, the metadata PyPI shows, and the sdist's own test suite run
from the unpacked sdist."""

from __future__ import annotations

import email.parser
import os
import re
import shlex
import shutil
import subprocess
import sys
import tarfile
import zipfile
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
from helpers.common import REPO
from packaging.requirements import Requirement

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
HOME = "https://github.com/perfgate/perfgate"
SCHEMAS = ("perfgate/schemas/baseline-v1.schema.json", "perfgate/schemas/report-v2.schema.json")


def _setuptools_is_new_enough() -> bool:
    try:
        major = int(metadata.version("setuptools").split(".")[0])
    except metadata.PackageNotFoundError:
        return False
    return major >= 77  # SPDX `license` and `license-files`


@pytest.fixture(scope="module")
def dists(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    pytest.importorskip("build", reason="the test extra installs `build`")
    if not _setuptools_is_new_enough():
        pytest.skip("needs setuptools>=77 in this environment (the test extra installs it)")
    if not (REPO / "pyproject.toml").is_file():
        pytest.skip("no source tree")
    root = tmp_path_factory.mktemp("packaging")
    source = root / "source"  # a copy: building never writes into the tree under test
    shutil.copytree(REPO, source, ignore=shutil.ignore_patterns(
        ".git", ".venv", "venv", "build", "dist", "*.egg-info", "__pycache__", "*.pyc", ".pytest_cache",
        ".benchmarks", "perfgate-report*", "perfgate-artifacts"))
    out = root / "dist"
    done = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(source)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (wheel,) = out.glob("perfgate-*.whl")
    (sdist,) = out.glob("perfgate-*.tar.gz")
    return {"wheel": wheel, "sdist": sdist, "root": root}


def wheel_metadata(wheel: Path) -> Any:
    with zipfile.ZipFile(wheel) as archive:
        (name,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        return email.parser.Parser().parsestr(archive.read(name).decode())


def test_the_wheel_has_the_schema_the_license_and_no_tests(dists: dict[str, Path]) -> None:
    with zipfile.ZipFile(dists["wheel"]) as archive:
        names = set(archive.namelist())
        for schema in SCHEMAS:
            assert archive.read(schema) == (REPO / schema).read_bytes()
        (license_file,) = [n for n in names if n.endswith(".dist-info/licenses/LICENSE")]
        assert archive.read(license_file) == (REPO / "LICENSE").read_bytes()
    assert {"perfgate/py.typed", "perfgate/render/html.py"} <= names
    shipped = {f"perfgate/render/templates/{p.name}" for p in (REPO / "perfgate/render/templates").glob("*.j2")}
    assert shipped and shipped <= names  # the Markdown report's templates (perfgate.render.templates)
    init = {f"perfgate/init/templates/{p.name}" for p in (REPO / "perfgate/init/templates").glob("*.j2")}
    assert len(init) == 8 and init <= names  # what perfgate init writes
    assert not [n for n in names if n.startswith(("tests/", "examples/")) or n.endswith(".pyc")]


def test_the_license_is_the_apache_2_0_text() -> None:
    text = (REPO / "LICENSE").read_text()
    assert text.split()[:4] == ["Apache", "License", "Version", "2.0,"]
    assert "TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION" in text
    assert "END OF TERMS AND CONDITIONS" in text


def test_the_metadata_pypi_shows(dists: dict[str, Path]) -> None:
    meta = wheel_metadata(dists["wheel"])
    assert meta["License-Expression"] == "Apache-2.0" and meta["License-File"] == "LICENSE"
    assert meta["Author"] == "perfgate developers"
    classifiers = meta.get_all("Classifier")
    assert "Framework :: Pytest" in classifiers
    assert not [c for c in classifiers if c.startswith("License ::")]  # superseded by License-Expression
    urls = dict(u.split(", ", 1) for u in meta.get_all("Project-URL"))
    assert urls["Source"] == HOME and all(u.startswith(HOME) for u in urls.values())
    assert meta["Description-Content-Type"] == "text/markdown"


def test_every_classifier_is_a_real_trove_classifier() -> None:
    trove = pytest.importorskip("trove_classifiers", reason="the test extra installs trove-classifiers")
    unknown = set(PYPROJECT["project"]["classifiers"]) - trove.classifiers
    assert not unknown


def test_the_python_versions_agree() -> None:
    """requires-python, the classifiers and the CI matrix name the same versions."""
    yaml = pytest.importorskip("yaml")
    classified = sorted((c.rsplit(" ", 1)[1] for c in PYPROJECT["project"]["classifiers"]
                         if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)), key=lambda v: int(v[2:]))
    assert PYPROJECT["project"]["requires-python"] == f">={classified[0]}"
    workflow = yaml.safe_load((REPO / ".github" / "workflows" / "tests.yml").read_text())
    assert workflow["jobs"]["tests"]["strategy"]["matrix"]["python-version"] == classified


def test_package_data_names_only_files_that_exist() -> None:
    """Each package-data pattern matches a file of the package: a pattern for files that are gone is a promise
    the wheel does not keep."""
    patterns = PYPROJECT["tool"]["setuptools"]["package-data"]["perfgate"]
    empty = [pattern for pattern in patterns if not list((REPO / "perfgate").glob(pattern))]
    assert not empty


def test_published_dependencies_hold_no_test_or_lint_pins() -> None:
    """What a user's install pulls in, extras included: ranges only (the development tools' exact versions live
    in requirements/), numpy declared."""
    dependencies = PYPROJECT["project"]["dependencies"]
    extras = PYPROJECT["project"]["optional-dependencies"]
    assert not [d for d in [*dependencies, *(r for e in extras.values() for r in e)] if "==" in d]
    assert set(extras) == {"nvtx", "timeline", "nvml", "history", "postgres", "test"}
    assert any(d.startswith("numpy") for d in dependencies) and any(d.startswith("nvtx") for d in dependencies)


def test_the_built_wheels_metadata_pins_nothing(dists: dict[str, Path]) -> None:
    """The METADATA a user's pip reads: no `==` in any Requires-Dist, and only the user-facing extras and test."""
    meta = wheel_metadata(dists["wheel"])
    requires = meta.get_all("Requires-Dist")
    pinned = [r for r in requires if {s.operator for s in Requirement(r).specifier} & {"==", "==="}]
    assert requires and not pinned  # `extra == "test"` is a marker, not a pin
    assert set(meta.get_all("Provides-Extra")) == {"nvtx", "timeline", "nvml", "history", "postgres", "test"}


def _installed_requirement_files(command: str) -> list[str]:
    """The files a `pip install ... -r FILE ...` command line names."""
    words = shlex.split(command)
    return [words[i + 1] for i, word in enumerate(words[:-1]) if word == "-r"]


def _pip_install_line(text: str, marker: str) -> str:
    (line,) = [l for l in text.splitlines() if "pip install" in l and marker in l]
    return line.split("run:", 1)[-1]


def test_the_development_tools_are_pinned_in_the_requirements_files_ci_installs() -> None:
    """requirements/*.txt pin every tool exactly, say why on their first line, and are what .ci/run, the lint
    job and the release job install."""
    if not (REPO / ".ci" / "run").is_file():
        pytest.skip("no .ci/ (an unpacked sdist carries neither .ci/ nor requirements/)")

    files = sorted((REPO / "requirements").glob("*.txt"))
    assert {f.name for f in files} == {"lint.txt", "docs.txt", "release.txt"}
    for file in files:
        lines = file.read_text().splitlines()
        assert lines[0].startswith("# Exact versions"), file
        for line in lines:
            text = line.split(" #", 1)[0].strip()
            if text.startswith("-r "):
                assert (file.parent / text[3:]).is_file(), line
            elif text and not text.startswith("#"):
                assert [s.operator for s in Requirement(text).specifier] == ["=="], line
    ci_run = _pip_install_line((REPO / ".ci" / "run").read_text(), "-e")
    assert _installed_requirement_files(ci_run) == ["requirements/lint.txt", "requirements/docs.txt"]
    assert "'.[test,postgres]'" in ci_run
    lint_job = _pip_install_line((REPO / ".github/workflows/tests.yml").read_text(), "requirements/")
    assert _installed_requirement_files(lint_job) == ["requirements/lint.txt", "requirements/docs.txt"]
    release_job = _pip_install_line((REPO / ".github/workflows/release.yml").read_text(), "requirements/")
    assert _installed_requirement_files(release_job) == ["requirements/release.txt"]


def test_the_sdist_carries_what_its_tests_need(dists: dict[str, Path]) -> None:
    with tarfile.open(dists["sdist"]) as archive:
        names = {n.split("/", 1)[1] for n in archive.getnames() if "/" in n}
    wanted = {"LICENSE", "README.md", "pyproject.toml", "action.yml", *SCHEMAS, "tests/conftest.py"}
    wanted |= {str(p.relative_to(REPO)) for p in (REPO / "tests").rglob("*")
               if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"}
    wanted |= {str(p.relative_to(REPO)) for p in (REPO / ".github").rglob("*.y*ml")}
    wanted |= {"mkdocs.yml", "CHANGELOG.md"} | {str(p.relative_to(REPO)) for p in (REPO / "docs").rglob("*.md")}
    assert not wanted - names
    assert not [n for n in names if n.endswith(".pyc") or "__pycache__" in n]


def test_the_sdists_test_suite_runs_from_the_unpacked_sdist(dists: dict[str, Path]) -> None:
    """What a distribution packager does: unpack, `python -m pytest`. Every module is collected, and the
    tests that read the repository's files (the schema, the README, the action, the workflows) pass."""
    safe: dict[str, Any] = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
    with tarfile.open(dists["sdist"]) as archive:
        archive.extractall(dists["root"] / "unpacked", **safe)
    (top,) = (dists["root"] / "unpacked").iterdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PERFGATE_CORPUS"))}

    def pytest_in_sdist(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *args], cwd=top,
                              env=env, capture_output=True, text=True, timeout=300)

    imported = subprocess.run([sys.executable, "-c", "import perfgate; print(perfgate.__file__)"], cwd=top,
                              env=env, capture_output=True, text=True, timeout=60)
    assert Path(imported.stdout.strip()).is_relative_to(top)  # the sdist's own copy is what runs
    collected = pytest_in_sdist("--collect-only")
    assert collected.returncode == 0, collected.stdout[-3000:]
    assert re.fullmatch(r"\d+ tests collected in [\d.]+s", collected.stdout.strip().splitlines()[-1])  # no errors
    ran = pytest_in_sdist("tests/engine/test_baseline.py", "tests/publish/test_publish_action.py",
                          "tests/engine/test_metrics_config.py", "-k", "not install")
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]


# ---------------------------------------------------------------- the README on PyPI

README = (REPO / "README.md").read_text()


def test_readme_links_are_absolute_so_they_work_on_pypi() -> None:
    """PyPI renders the README away from the repository: a relative link there is a dead link."""
    targets = re.findall(r"\]\(([^)\s]+)\)", README) + re.findall(r"^\[[^\]]+\]:\s*(\S+)", README, re.MULTILINE)
    targets += re.findall(r"""(?:src|href)=["']([^"']+)["']""", README)
    relative = [t for t in targets if not re.match(r"(https?:|mailto:)", t)]
    assert not relative
    homes = set(re.findall(r"https://github\.com/([\w.-]+/perfgate)\b", README))
    assert homes <= {"perfgate/perfgate"}


def test_readme_is_an_introduction_the_docs_hold_the_rest() -> None:
    """What and why, install, the Quickstart and links: a page a newcomer reads in ten minutes."""
    assert len(README.splitlines()) <= 300
    assert "## Quickstart" in README  # .ci/quickstart runs its sh blocks
    pages = {p.name for p in (REPO / "docs").glob("*.md")}
    linked = set(re.findall(r"https://github\.com/perfgate/perfgate/blob/main/docs/([\w-]+\.md)", README))
    assert linked and linked <= pages


def test_readme_tells_users_what_to_gitignore() -> None:
    """The names perfgate writes by default, in the README's .gitignore block and in this repository's."""
    from perfgate.config import Settings
    from perfgate.plugin.run_folders import ARTIFACTS

    report_stem = Path(Settings().report).stem
    (block,) = re.findall(r"```gitignore\n(.*?)```", README, re.DOTALL)
    assert block.split() == [f"{report_stem}.*", f"{ARTIFACTS}/"]
    ours = (REPO / ".gitignore").read_text().split()
    assert f"/{report_stem}*" in ours and f"/{ARTIFACTS}/" in ours
