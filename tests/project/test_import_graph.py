"""perfgate's modules import one another without circles: no import, at module level, inside a function or only
for type checking (under ``TYPE_CHECKING``), closes a circle anywhere in the package, and the readers
(``perfgate.collect``) and the baseline writer (``perfgate.baseline``) each import in a fresh interpreter. In the
suite, no test module imports another: what tests share lives in the ``tests/helpers`` package."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.common import REPO

PACKAGE = REPO / "perfgate"


def _module_name(path: Path, root: Path = REPO) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules(package: Path, root: Path = REPO) -> dict[str, Path]:
    return {_module_name(path, root): path for path in sorted(package.rglob("*.py"))}


MODULES = _modules(PACKAGE)


def _imported(name: str, path: Path, modules: dict[str, Path] = MODULES) -> set[str]:
    """The modules of ``modules`` that ``name`` imports anywhere in its code, inside functions and under
    ``TYPE_CHECKING`` too (a ``from pkg import x`` counts for pkg.x when that is a module, else for pkg)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            wanted = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the module's package, up level-1 packages
                package = name if path.name == "__init__.py" else name.rpartition(".")[0]
                for _ in range(node.level - 1):
                    package = package.rpartition(".")[0]
                base = f"{package}.{base}" if base else package
            wanted = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]
        else:
            continue
        for target in wanted:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def _circles(modules: dict[str, Path] = MODULES) -> list[set[str]]:
    """The import graph's strongly connected components of more than one module (Tarjan's, iteratively)."""
    graph = {name: _imported(name, path, modules) for name, path in modules.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[set[str]] = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, targets = work[-1]
            for target in targets:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph[target]))))
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        circles.append(component)
    return circles


def test_the_graph_holds_the_imports_made_inside_functions() -> None:
    assert "perfgate.cli.baselines" in _imported("perfgate.cli.parser", MODULES["perfgate.cli.parser"])
    assert "perfgate.collect.baseline_json" in _imported("perfgate.collect.readers", MODULES["perfgate.collect.readers"])


def test_the_package_has_no_import_circle() -> None:
    """Not one circle, whatever the modules in it: an import moved into a function or under ``TYPE_CHECKING``
    still ties the two modules together (what both need goes into a module of its own)."""
    assert _circles() == [], "import circles (move what both modules need into one they both import)"


def test_the_circle_check_sees_imports_in_functions_and_for_type_checking(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("def lazy():\n    from pkg import b\n")
    (package / "a.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.b import B\n")
    (package / "b.py").write_text("def f():\n    from pkg import a\nclass B: ...\n")
    (package / "c.py").write_text("from pkg import d\n")
    (package / "d.py").write_text("from . import c\n")
    (package / "e.py").write_text("from pkg import a\n")  # imports the circle, is not in it
    assert sorted(map(sorted, _circles(_modules(package, tmp_path)))) == [["pkg.a", "pkg.b"], ["pkg.c", "pkg.d"]]


READERS = sorted(name for name in MODULES if name == "perfgate.collect" or (
    name.startswith("perfgate.collect.") and name.count(".") == 2)) + ["perfgate.baseline", "perfgate.gate"]


@pytest.mark.parametrize("module", READERS)
def test_each_reader_imports_first_in_a_fresh_interpreter(module: str) -> None:
    done = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True, text=True, cwd=REPO,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr


def _room(name: str) -> str:
    """The shell a module belongs to (``cli``, ``plugin``), ``api`` for the package root (the public names, from
    every room, imported on first use), else ``engine``."""
    if name == "perfgate":
        return "api"
    for shell in ("cli", "plugin"):
        if name == f"perfgate.{shell}" or name.startswith(f"perfgate.{shell}."):
            return shell
    return "shell" if name == "perfgate.__main__" else "engine"


def test_the_engine_imports_neither_shell_and_the_shells_not_each_other() -> None:
    """The two shells (the command line, the pytest plugin) sit over the engine: the engine never imports either,
    and neither imports the other, nor the package root (whose public names import from every room: the version
    is ``perfgate.version``). Modules only the plugin runs (ncu's command lines, the preflight) are in it."""
    for name, path in MODULES.items():
        room = _room(name)
        for target in _imported(name, path):
            assert target != "perfgate", f"{name} imports the package root"
            if room == "engine":
                assert _room(target) == "engine", f"{name} (engine) imports {target}"
            elif room in ("cli", "plugin"):
                assert _room(target) in (room, "engine"), f"{name} ({room}) imports {target}"


def test_the_flow_runs_one_way_from_reading_to_rendering() -> None:
    """collect -> compare -> render: reading and comparing never import a renderer (the words and numbers they share
    with renderers live below all three: ``perfgate.quantities``, ``perfgate.vocabulary``)."""
    for name, path in MODULES.items():
        if name.startswith(("perfgate.collect", "perfgate.compare")):
            rendering = {t for t in _imported(name, path) if t.startswith(("perfgate.render", "perfgate.publish"))}
            assert not rendering, f"{name} imports {sorted(rendering)}"


def test_plugin_only_modules_live_in_the_plugin() -> None:
    assert "perfgate.plugin.ncu_run" in MODULES and "perfgate.plugin.preflight" in MODULES
    users = {name for name, path in MODULES.items()
             if {"perfgate.plugin.ncu_run", "perfgate.plugin.preflight"} & _imported(name, path)}
    assert users and all(_room(name) == "plugin" for name in users), users


def test_the_command_line_imports_a_command_s_machinery_only_when_it_runs() -> None:
    """Every command builds the whole parser: building it loads no numpy, pandas or history store (the history's
    modules brought numpy to every command's start-up, 0.13 s)."""
    code = ("import sys; import perfgate.cli; "
            "print(sorted(m for m in ('numpy', 'pandas', 'jinja2', 'perfgate.history.db') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120,
                          check=False)
    assert done.returncode == 0 and done.stdout.strip() == "[]", (done.stdout, done.stderr)


def _test_module_imports(tests: Path) -> list[str]:
    """``file imports test_x`` for each import, anywhere in a module under ``tests``, of a test module there."""
    files = sorted(tests.rglob("*.py"))
    test_modules = {path.stem for path in files if path.name.startswith("test_")}
    found = []
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or "", *(f"{node.module or ''}.{alias.name}" for alias in node.names)]
            else:
                continue
            found += [f"{path.relative_to(tests)} imports {name}" for name in names
                      if set(name.split(".")) & test_modules]
    return found


def test_no_test_module_imports_another() -> None:
    """A test module is run, not imported: one imported by another runs its own module-level set-up there, and
    its helpers hide where a newcomer looks for them (``tests/helpers``)."""
    assert not _test_module_imports(REPO / "tests")


def test_the_test_import_check_finds_one(tmp_path: Path) -> None:
    (tmp_path / "room").mkdir()
    (tmp_path / "room" / "test_a.py").write_text("X = 1\n")
    (tmp_path / "room" / "test_b.py").write_text("def test_b():\n    from test_a import X\n    assert X\n")
    (tmp_path / "helper.py").write_text("import os\nfrom room import test_a\n")
    assert _test_module_imports(tmp_path) == ["helper.py imports room.test_a", "room/test_b.py imports test_a",
                                              "room/test_b.py imports test_a.X"]
