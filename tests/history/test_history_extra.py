"""scipy (143 MB installed) is an extra, ``perfgate[history]``: only the change points' t-test needs it, and a
command that needs it without it says how to install it in one line."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from helpers.history import record_runs

from perfgate.cli import main

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[2]


def test_scipy_is_the_history_extra_not_a_dependency() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert not [d for d in project["dependencies"] if d.startswith("scipy")]
    assert project["optional-dependencies"]["history"] == ["scipy>=1.12"]


def test_without_scipy_history_changes_says_how_to_install_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    noisy = [100.0, 101.5, 99.2, 100.7, 98.9, 100.3, 120.4, 121.1, 119.6, 120.8, 119.9, 121.3]
    record_runs(tmp_path, url, [{"gemm": v} for v in noisy])
    assert main(["history", "changes", "--db", url]) == 0  # with scipy: the change is found
    assert "REGRESSION" in capsys.readouterr().out
    monkeypatch.setitem(sys.modules, "scipy", None)  # as if it were not installed
    monkeypatch.setitem(sys.modules, "scipy.special", None)
    assert main(["history", "changes", "--db", url]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pip install 'perfgate[history]'" in err and "Traceback" not in err
