"""scipy (143 MB installed) is an extra, ``perfgate[history]``: only the change points' t-test needs it, and a
command that needs it without it says how to install it in one line."""

from __future__ import annotations

import os
import subprocess
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


def test_without_scipy_compare_with_a_history_learns_its_thresholds(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """Only the change points need scipy: judging against a history and learning thresholds from it (Student's t
    quantile for a spread measured on few runs) work without it, in a fresh process (every import made without
    scipy), and learn the same thresholds."""
    from helpers.history import baseline_file

    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    record_runs(tmp_path, url, [{"gemm": 100_000 * (1 + 0.002 * d)} for d in (0, 1, -1, 2, -2, 1, 0, -1)])
    current = baseline_file(tmp_path / "cur.json", {"gemm": 100_400.0})
    capsys.readouterr()
    assert main(["compare", str(current), "--history", url]) == 0
    with_scipy = capsys.readouterr().out
    blocked = ("import sys; sys.modules.update(dict.fromkeys(('scipy', 'scipy.special', 'scipy.stats')));"
               "from perfgate.cli import main; sys.exit(main(sys.argv[1:]))")
    done = subprocess.run([sys.executable, "-c", blocked, "compare", str(current), "--history", url],
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=120)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == with_scipy and "gated at" in with_scipy


def test_the_t_quantile_without_scipy_is_scipys() -> None:
    from scipy import stats

    from perfgate.history.stats import t_quantile_upper

    tail = stats.norm.sf(4.0)
    for df in (1, 2, 3, 5, 8, 19, 40, 199, 1000):
        assert t_quantile_upper(tail, df) == pytest.approx(stats.t.isf(tail, df), rel=1e-9)
    assert t_quantile_upper(tail, 5000) == pytest.approx(stats.t.isf(tail, 5000), rel=1e-4)
    assert t_quantile_upper(0.025, 10) == pytest.approx(stats.t.isf(0.025, 10), rel=1e-9)
