"""``perfgate init``: what a repository needs for a trusted pull request check, written from templates.

The templates (``perfgate/init/templates``, jinja2 with ``@{ }@`` delimiters, as GitHub's own ``${{ }}`` fills the
workflows) give: the gate on pull requests (a self-hosted GPU runner label, read-only token), the fork-safe
publisher (``workflow_run``), the workflow that records the main branch's runs into the history, actionlint's
declaration of the runner label, a ``[tool.perfgate]`` table appended to ``pyproject.toml`` (the rest of that file
kept byte for byte) and one example perf test. Nothing that exists is overwritten without ``force``; every target
is checked before the first is written.
"""

from __future__ import annotations

import importlib.metadata
import importlib.resources
import json
import importlib.util
import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, NamedTuple

from perfgate.errors import ConfigError, InputError

if sys.version_info >= (3, 11):  # the same reader as perfgate.config
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib  # type: ignore[import-not-found,unused-ignore]  # Python 3.10 only

WORKFLOWS = Path(".github/workflows")
PYPROJECT = Path("pyproject.toml")
EXAMPLES = ("torch", "cupy", "cpu")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")
_BRANCH = re.compile(r"[A-Za-z0-9][A-Za-z0-9_./-]{0,199}")
_TESTS = re.compile(r"[A-Za-z0-9_.][A-Za-z0-9_./-]{0,199}")


REPOSITORY = "https://github.com/perfgate/perfgate"
UNPINNED_SPEC = f"perfgate @ git+{REPOSITORY}@main"


def installed_spec(direct_url: str | None = None) -> str | None:
    """The requirement that installs this very perfgate again: the git commit pip installed it from (PEP 610's
    ``direct_url.json``, or ``direct_url`` given); None where it came from elsewhere (an editable checkout, a
    wheel)."""
    try:
        text = direct_url if direct_url is not None else importlib.metadata.distribution("perfgate").read_text(
            "direct_url.json")
        found = json.loads(text or "{}")
        vcs, url = found.get("vcs_info") or {}, str(found.get("url") or "")
        commit = str(vcs.get("commit_id") or "")
    except (importlib.metadata.PackageNotFoundError, ValueError, AttributeError):
        return None
    if vcs.get("vcs") != "git" or not re.fullmatch(r"[0-9a-f]{40}", commit) or not url.startswith("https://"):
        return None
    return f"perfgate @ git+{url}@{commit}"


def workflow_spec(options: InitOptions) -> str:
    """What the workflows install perfgate from: ``--perfgate-spec``, else the commit installed here, else main's
    head (which ``next_steps`` says to pin)."""
    return options.perfgate_spec or installed_spec() or UNPINNED_SPEC


@dataclass(frozen=True)
class InitOptions:
    """What ``perfgate init`` was asked for (its command-line options)."""

    runner_label: str = "gpu"
    branch: str = "main"
    tests: str = "tests/perf"
    # What the workflows pip-install perfgate from; None: the git commit this perfgate was installed from, else
    # UNPINNED_SPEC (perfgate is on no package index and has no release tag yet: docs/getting-started.md#install).
    perfgate_spec: str | None = None
    install: str | None = None  # None: from what the repository has (pyproject.toml's [project], requirements.txt)
    example: str = "auto"  # auto, torch, cupy or cpu
    force: bool = False


class Planned(NamedTuple):
    """One file ``init`` writes: its path in the repository, its whole new text, and what it is for."""

    path: Path
    text: str
    purpose: str


def _template(name: str, values: dict[str, str]) -> str:
    import jinja2

    # The templates are perfgate's own; the values are checked by _checked (no newline, a safe alphabet).
    environment = jinja2.Environment(variable_start_string="@{", variable_end_string="}@",
                                     block_start_string="@%", block_end_string="%@", comment_start_string="@#",
                                     comment_end_string="#@", keep_trailing_newline=True,
                                     undefined=jinja2.StrictUndefined, autoescape=False)
    source = (importlib.resources.files("perfgate") / "init" / "templates" / name).read_text(encoding="utf-8")
    return environment.from_string(source).render(values)


def _checked(options: InitOptions) -> None:
    for label, value, pattern in (("--runner-label", options.runner_label, _NAME), ("--branch", options.branch, _BRANCH),
                                  ("--tests", options.tests, _TESTS)):
        if not pattern.fullmatch(value) or ".." in value.split("/"):
            allowed = "letters, digits, _ . -" + (" /" if label != "--runner-label" else "")
            raise ConfigError(f"perfgate init: {label} {value!r} is not a plain name ({allowed})")
    for label, text in (("--perfgate-spec", options.perfgate_spec or "x"), ("--install", options.install or "x")):
        if not text.strip() or any(c in text for c in "\r\n\0"):
            raise ConfigError(f"perfgate init: {label} must be one non-empty line")
    if options.example not in ("auto", *EXAMPLES):
        raise ConfigError(f"perfgate init: --example must be one of auto, {', '.join(EXAMPLES)}")


def detected_example(importable: Callable[[str], bool] | None = None) -> str:
    """``torch`` or ``cupy`` where that imports here (a kernel test), else ``cpu`` (a pytest-benchmark test)."""
    def found(name: str) -> bool:
        try:
            return importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):
            return False
    check = importable or found
    return next((name for name in ("torch", "cupy") if check(name)), "cpu")


def install_command(root: Path) -> str:
    """How the workflows install the project under test: pip's editable install where the repository is a
    package, its requirements.txt where it has one, else nothing (``--install`` says otherwise)."""
    pyproject = root / PYPROJECT
    if (root / "setup.py").is_file() or (pyproject.is_file() and "project" in _toml(pyproject)):
        return "python -m pip install --disable-pip-version-check -e ."
    if (root / "requirements.txt").is_file():
        return "python -m pip install --disable-pip-version-check -r requirements.txt"
    return "true  # nothing to install: perfgate init --install CMD names the project's install command"


def _toml(path: Path) -> dict[str, Any]:
    try:
        document: dict[str, Any] = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise InputError(path, f"cannot be read as TOML ({exc})", "fix it, then run perfgate init again") from exc
    except RecursionError:  # tomllib parses nested arrays by recursion
        raise InputError(path, "cannot be read as TOML (nested too deeply)", "fix it, then run perfgate init again") \
            from None
    return document


def plan(root: Path, options: InitOptions, importable: Callable[[str], bool] | None = None) -> list[Planned]:
    """Every file ``init`` would write in ``root``, with its text; nothing is written."""
    _checked(options)
    example = detected_example(importable) if options.example == "auto" else options.example
    values = {"runner_label": options.runner_label, "branch": options.branch, "tests": options.tests,
              "perfgate_spec": shlex.quote(workflow_spec(options)),
              "install": options.install if options.install is not None else install_command(root)}
    test_file = Path(options.tests) / "test_perf_example.py"
    return [
        Planned(WORKFLOWS / "perfgate-pr.yml", _template("perfgate-pr.yml.j2", values),
                f"the gate on pull requests (runs-on: [self-hosted, {options.runner_label}], read-only token)"),
        Planned(WORKFLOWS / "perfgate-publish.yml", _template("perfgate-publish.yml.j2", values),
                "posts the comment and the check run (workflow_run: fork-safe)"),
        Planned(WORKFLOWS / "perfgate-main.yml", _template("perfgate-main.yml.j2", values),
                f"records each push to {options.branch} into the history (kept in the Actions cache)"),
        Planned(Path(".github/actionlint.yaml"), _template("actionlint.yaml.j2", values),
                f"tells actionlint the runner label {options.runner_label!r} is yours"),
        Planned(PYPROJECT, _pyproject_text(root, _template("pyproject-table.toml.j2", values), options.force),
                "[tool.perfgate] (replaced; every other line unchanged)" if (root / PYPROJECT).is_file()
                and _has_table(root / PYPROJECT) else "[tool.perfgate] (appended; the rest of the file is unchanged)"),
        Planned(test_file, _template(f"test_perf_{example}.py.j2", values),
                "an example perf test" + (" (pytest-benchmark: runs anywhere)" if example == "cpu"
                                          else f" ({example} kernel)")),
    ]


def _pyproject_text(root: Path, table: str, force: bool) -> str:
    """pyproject.toml with the ``[tool.perfgate]`` table: appended to the file's exact bytes (``force``: an existing
    table replaced, every other line kept), or a new file of that table alone."""
    path = root / PYPROJECT
    if not path.is_file():
        return table.lstrip("\n")
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(path, "is not UTF-8", "fix it, then run perfgate init again") from exc
    newline = "\r\n" if "\r\n" in text else "\n"
    if _has_table(path):
        if not force:
            return text  # the conflict is reported by conflicts()
        text = _without_table(text)
    if text and not text.endswith("\n"):
        text += newline
    result = text + table.replace("\n", newline)
    expected = tomllib.loads(table)["tool"]["perfgate"]
    if tomllib.loads(result).get("tool", {}).get("perfgate") != expected:
        raise InputError(path, "its [tool.perfgate] table could not be replaced as a whole (dotted keys?)",
                         "remove the table by hand, then run perfgate init again")
    return result


def _has_table(path: Path) -> bool:
    tool = _toml(path).get("tool")
    return isinstance(tool, dict) and "perfgate" in tool


_HEADER = re.compile(r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")


def _without_table(text: str) -> str:
    """``text`` without the lines of ``[tool.perfgate]`` and its sub-tables (to the next other table)."""
    kept: list[str] = []
    inside = False
    for line in text.splitlines(keepends=True):
        header = _HEADER.match(line)
        if header:
            name = header.group(1).replace('"', "").replace(" ", "")
            inside = name == "tool.perfgate" or name.startswith("tool.perfgate.")
        if not inside:
            kept.append(line)
    return "".join(kept)


def refuse_folders_in_the_way(root: Path, planned: list[Planned]) -> None:
    """InputError for a planned file whose path is a folder: no --force replaces one, and the files before it
    would be written before the write of it failed."""
    for item in planned:
        target = root / item.path
        if target.is_dir():
            raise InputError(target, "is a folder where perfgate init writes a file (nothing written)",
                             "move the folder away, then run perfgate init again")


def conflicts(root: Path, planned: list[Planned]) -> list[Path]:
    """The planned files that exist already (pyproject.toml: when it has a ``[tool.perfgate]`` table)."""
    found = []
    for item in planned:
        target = root / item.path
        if item.path == PYPROJECT:
            if target.is_file() and _has_table(target):
                found.append(item.path)
        elif target.exists() or target.is_symlink():
            found.append(item.path)
        # A folder on the way that is a file would stop the writing half-way: refused before anything is written.
        found += [parent for parent in item.path.parents if parent != Path(".") and (root / parent).exists()
                  and not (root / parent).is_dir() and parent not in found]
    return found


def write(root: Path, planned: list[Planned]) -> None:
    """Write every planned file (each atomically); pyproject.toml's existing bytes are checked to be kept."""
    from perfgate.files import write_atomically

    for item in planned:
        target = root / item.path
        if item.path == PYPROJECT and target.is_file():
            before = target.read_bytes()
            if not _has_table(target) and not item.text.encode("utf-8").startswith(before):
                raise InputError(target, "would not be kept byte for byte", "please report it")
        write_atomically(target, item.text)


def next_steps(options: InitOptions, planned: list[Planned]) -> str:
    """What to do after ``init``, in order: the lines it prints."""
    files = " ".join(sorted({str(p.path.parts[0]) if p.path.parts[0] != "tests" else options.tests
                             for p in planned}))
    return "\n".join([
        "Next:",
        f"  1. pytest {options.tests} --perfgate                # try it here (GPU tests skip without a GPU and ncu)",
        f"  2. register a self-hosted runner labelled {options.runner_label!r} with a GPU, Nsight Compute and counter "
        "permission (Settings > Actions > Runners; docs/pytest-plugin.md#preflight)",
        f"  3. git add {files} && git commit -m 'perfgate' && git push     # to {options.branch}",
        f"     each push to {options.branch} records its run (perfgate-main.yml); pull requests are judged against "
        f"{options.branch}'s recent runs once 5 are recorded, and get a neutral check saying so until then",
        "  4. optional, to gate at once: on the GPU runner, pytest "
        f"{options.tests} --perfgate --perfgate-update, then commit baselines/ (committed baselines win)",
        "  5. add perfgate-report.* perfgate-artifacts/ .perfgate/ to .gitignore",
        *([f"  !  the workflows install perfgate from its main branch ({UNPINNED_SPEC}): perfgate has no release tag "
           "yet and this one was not installed from a git commit; pin one so that CI installs what you tried: in "
           f".github/workflows/perfgate-*.yml write 'perfgate @ git+{REPOSITORY}@<commit-sha>' in its place "
           "(init --force --perfgate-spec would write every file again, your edits to them lost)"]
          if workflow_spec(options) == UNPINNED_SPEC else []),
    ])
