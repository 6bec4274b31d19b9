"""The verdict rules have one home, ``perfgate.verdict``: elsewhere a verdict is read, or set from its functions
(``perfgate.vocabulary`` has the words and their order).

Read from the source (``ast``): a module that derives a verdict itself (returns ``Verdict.FAIL.value``,
writes a literal into a report's "verdict") or compares a plugin payload's status with a bare string has
a rule of its own, which drifts from the one home.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import perfgate
from perfgate import verdict
from perfgate.verdict import GateStatus, UngatedStatus

PACKAGE = Path(perfgate.__file__).parent
HOMES = (PACKAGE / "verdict.py", PACKAGE / "vocabulary.py")
RULES = {name for name, value in vars(verdict).items()
         if inspect.isfunction(value) and value.__module__ == verdict.__name__}
PER_TEST_STATUSES = {s.value for s in GateStatus} | {s.value for s in UngatedStatus}


def _modules() -> list[tuple[str, ast.Module]]:
    return [(str(path.relative_to(PACKAGE.parent)), ast.parse(path.read_text(encoding="utf-8")))
            for path in sorted(PACKAGE.rglob("*.py")) if path not in HOMES]


def _is_verdict_member(node: ast.AST) -> bool:
    """``Verdict.X.value`` or ``Verdict.X``."""
    if isinstance(node, ast.Attribute) and node.attr == "value":
        node = node.value
    return (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
            and node.value.id == "Verdict")


def _derives(value: ast.AST | None) -> bool:
    """A verdict member chosen here: returned as such or as one arm of a conditional."""
    if value is None:
        return False
    if isinstance(value, ast.IfExp):
        return _derives(value.body) or _derives(value.orelse)
    return _is_verdict_member(value)


def _called_rule(value: ast.AST) -> str | None:
    if isinstance(value, ast.Call):
        func = value.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
        return name if name in RULES else None
    return None


def test_no_module_outside_the_verdict_module_returns_a_verdict_it_chose() -> None:
    found = [f"{name}:{node.lineno}" for name, tree in _modules() for node in ast.walk(tree)
             if isinstance(node, ast.Return) and _derives(node.value)]
    assert not found, f"verdict rules outside perfgate/verdict.py: {found}"


def test_a_report_s_verdict_is_set_only_from_the_verdict_module_s_rules() -> None:
    found = []
    for name, tree in _modules():
        for node in ast.walk(tree):
            if not isinstance(node, ast.Assign):
                continue
            writes_verdict = any(isinstance(t, ast.Subscript) and isinstance(t.slice, ast.Constant)
                                 and t.slice.value == "verdict" for t in node.targets)
            if writes_verdict and _called_rule(node.value) is None:
                found.append(f"{name}:{node.lineno}")
    assert not found, f"a report's verdict set by a rule of its own: {found}"


def _is_status_read(node: ast.AST) -> bool:
    """``payload["status"]`` or ``payload.get("status")``."""
    if isinstance(node, ast.Subscript):
        return isinstance(node.slice, ast.Constant) and node.slice.value == "status"
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
            and bool(node.args) and isinstance(node.args[0], ast.Constant) and node.args[0].value == "status")


def test_the_plugin_compares_a_test_s_status_with_the_enums_not_their_strings() -> None:
    found = []
    for name, tree in _modules():
        if not name.startswith("perfgate/plugin/"):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Compare) and _is_status_read(node.left):
                literal = [c.value for c in node.comparators if isinstance(c, ast.Constant)]
                found += [f"{name}:{node.lineno}: {v!r}" for v in literal if v in PER_TEST_STATUSES]
    assert not found, f"a per-test status as a bare string: {found}"


def test_the_checks_see_what_they_look_for() -> None:
    """The checks above find the rules they forbid (a check that sees nothing would pass anything)."""
    rule = ast.parse('def verdict(x):\n    return Verdict.FAIL.value if x else Verdict.PASS.value\n'
                     'report["verdict"] = Verdict.FAIL.value\nok = p.get("status") == "failed"\n')
    returned, assigned, compared = (next(n for n in ast.walk(rule) if isinstance(n, kind))
                                    for kind in (ast.Return, ast.Assign, ast.Compare))
    assert _derives(returned.value) and _called_rule(assigned.value) is None and _is_status_read(compared.left)
    assert {"session_verdict", "gated_verdict", "verdict_of", "merged_verdict"} <= RULES
