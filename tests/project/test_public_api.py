"""perfgate's public API: every name in ``perfgate.__all__`` imports from the package, is the object its module
defines (not a submodule of the same name), is documented in docs/api.md, and ``import perfgate`` stays free of
pandas and numpy. The examples of docs/api.md run as written."""

from __future__ import annotations

import importlib
import os
import pkgutil
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest

import perfgate
from helpers.common import REPO

API_PAGE = REPO / "docs" / "api.md"


@pytest.mark.parametrize("name", perfgate.__all__)
def test_each_public_name_imports_from_the_package(name: str) -> None:
    namespace: dict[str, object] = {}
    exec(f"from perfgate import {name}", namespace)  # the statement a user writes
    assert namespace[name] is getattr(perfgate, name)
    assert name in dir(perfgate)


def test_no_public_name_is_shadowed_by_a_submodule() -> None:
    """Importing a submodule sets the package attribute of its name: a public name that is also a submodule's
    would become the module once anything imports it."""
    for module in pkgutil.walk_packages(perfgate.__path__, "perfgate."):
        if not module.name.endswith("__main__"):  # runs the command line
            importlib.import_module(module.name)
    for name in perfgate.__all__:
        assert not isinstance(getattr(perfgate, name), types.ModuleType), name


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'read_tables'"):
        getattr(perfgate, "read_tables")
    with pytest.raises(ImportError):
        exec("from perfgate import read_tables", {})


@pytest.mark.parametrize("name", perfgate.__all__)
def test_each_public_name_is_documented(name: str) -> None:
    page = API_PAGE.read_text(encoding="utf-8")
    assert re.search(rf"`{re.escape(name)}[`(]", page), f"{name} is not described in docs/api.md"


def test_importing_perfgate_loads_no_pandas_or_numpy() -> None:
    code = "import sys, perfgate\nprint(' '.join(m for m in ('pandas', 'numpy', 'jinja2') if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True,
                          timeout=120)
    assert done.stdout.strip() == ""


def test_the_examples_of_the_api_page_run(tmp_path: Path) -> None:
    """Each Python block of docs/api.md, run in a fresh interpreter on the repository's real files."""
    blocks = re.findall(r"```python\n(.*?)```", API_PAGE.read_text(encoding="utf-8"), re.DOTALL)
    assert len(blocks) >= 2
    (tmp_path / "tests").symlink_to(REPO / "tests")
    for block in blocks:
        done = subprocess.run([sys.executable, "-c", block], capture_output=True, text=True, cwd=tmp_path,
                              env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=300, check=False)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert list((tmp_path / "perf-baselines").glob("*/vector_add.json"))


@pytest.mark.parametrize("name", ["CompareOptions", "Threshold", "Measurement", "GateResult", "Where", "PerfMarker"])
def test_the_api_page_names_every_field_of_the_types_it_lists(name: str) -> None:
    """A type's row in docs/api.md names each of its fields, so a field added to it is documented with it."""
    import dataclasses

    kind = getattr(perfgate, name)
    fields = getattr(kind, "_fields", None) or [f.name for f in dataclasses.fields(kind)]
    [row] = [line for line in API_PAGE.read_text(encoding="utf-8").splitlines() if line.startswith(f"| `{name}` |")]
    assert not [field for field in fields if f"`{field}`" not in row], row
