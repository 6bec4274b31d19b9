"""A team's templates are code (issue 33, item 9): they render in jinja2's immutable sandbox, so a template that
reaches for Python's internals (``''.__class__.__mro__``, a function's ``__globals__`` to ``os``) or changes what
it is given is one line and exit 2, and runs nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.common import REPO, run_cli

H100 = REPO / "tests" / "data" / "h100"
PAIR = (H100 / "vector_add.rerun.details-base.csv", H100 / "vector_add.rerun.details.csv")

HOSTILE_TEMPLATES = {
    "mro": "{{ ''.__class__.__mro__[1].__subclasses__() }}",
    "globals": "{{ cycler.__init__.__globals__.os.system('touch {pwned}') }}",
    "lipsum": "{{ lipsum.__globals__['os'].system('touch {pwned}') }}",
    "format": "{{ '{0.__class__}'.format(headline) }}",
    "mutate": "{{ summary.append('forged') }}{{ summary.clear() }}",
}


@pytest.mark.parametrize("attack", sorted(HOSTILE_TEMPLATES))
def test_a_team_template_cannot_reach_python(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                             monkeypatch: pytest.MonkeyPatch, attack: str) -> None:
    pwned = tmp_path / "pwned"
    folder = tmp_path / "team-templates"
    folder.mkdir()
    (folder / "headline.md.j2").write_text("### {{ verdict_icon }}\n" +
                                           HOSTILE_TEMPLATES[attack].replace("{pwned}", str(pwned)) + "\n")
    (tmp_path / "pyproject.toml").write_text('[tool.perfgate]\ntemplates = "team-templates"\n')
    monkeypatch.chdir(tmp_path)
    status, out, err = run_cli(capsys, "compare", *PAIR, "--format", "md")
    assert status == 2, out
    assert err.count("\n") == 1 and err.startswith(f"perfgate: error: {folder / 'headline.md.j2'}:2: template error: ")
    assert "unsafe" in err or "immutable" in err or "not safely callable" in err, err
    assert not pwned.exists()


def test_a_plain_team_template_still_renders(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "team-templates"
    folder.mkdir()
    (folder / "headline.md.j2").write_text("### {{ verdict_icon }} team: {{ headline|md(400) }}\n"
                                           "{{ summary|join(' / ')|md }}\n")
    (tmp_path / "pyproject.toml").write_text('[tool.perfgate]\ntemplates = "team-templates"\n')
    monkeypatch.chdir(tmp_path)
    status, out, err = run_cli(capsys, "compare", *PAIR, "--format", "md")
    assert status in (0, 1) and err == ""
    assert " team: " in out
