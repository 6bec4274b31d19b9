"""Issue 14, class 6: names from the code under test reach a terminal visible and inert (``perfgate.text``).

A kernel, benchmark, region or file name can hold ESC sequences (clear the screen, OSC 8 links, OSC 52
clipboard writes), a CR that overwrites the ``REGRESSION`` label, or a newline that forges a ``PASS:`` line.
``inert`` writes each such character as a visible escape. The CLI's own lines use it here; the terminal
report (``perfgate.render.render_text``) and the plugin's summary are call sites for their owners, tested in
``test_issue14_other_branches.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.common import REPO

from perfgate.cli import main
from perfgate.text import inert, inert_lines

H100 = REPO / "tests" / "data" / "h100"

HOSTILE = {
    "clear screen": ("k\x1b[2J\x1b[H", "k\\x1b[2J\\x1b[H"),
    "OSC 8 link": ("\x1b]8;;https://evil.example\x07click\x1b]8;;\x07", "\\x1b]8;;https://evil.example\\x07click"
                                                                          "\\x1b]8;;\\x07"),
    "OSC 52 clipboard": ("\x1b]52;c;Y3VybCBldmlsLnNo\x07", "\\x1b]52;c;Y3VybCBldmlsLnNo\\x07"),
    "CR over the label": ("kernel\rREGRESSION", "kernel\\rREGRESSION"),
    "forged line": ("kernel\nPASS: no regression", "kernel\\nPASS: no regression"),
    "C1 CSI": ("k\x9b2J", "k\\x9b2J"),
    "bidi override": ("abc\u202edcb", "abc\\u202edcb"),
    "zero width": ("ma\u200btrix", "ma\\u200btrix"),
    "NUL and DEL": ("a\x00b\x7f", "a\\x00b\\x7f"),
    "backslash with escape": ("C:\\k\x1b", "C:\\\\k\\x1b"),
    # GitHub Actions' workflow commands: '##[' anywhere in a log line, '::' at its start after whitespace.
    "legacy workflow command": ("k ##[set-output name=verdict;]pass", "k ##\\x5bset-output name=verdict;]pass"),
    "stop-commands": ("##[stop-commands]t0k", "##\\x5bstop-commands]t0k"),
    "workflow command": ("::error file=a.py,line=1::forged", "\\x3a:error file=a.py,line=1::forged"),
    "indented workflow command": (" \u00a0::warning::x", " \u00a0\\x3a:warning::x"),
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_control_characters_become_visible_escapes(name: str) -> None:
    raw, shown = HOSTILE[name]
    text = inert(raw)
    assert text == shown
    assert text.replace("\u00a0", " ").isprintable()


@pytest.mark.parametrize("plain", ["matrix_addition2D", "void gemm<float, 128>(const float *, int)", "µs → 151.3",
                                   "C:\\kernels\\gemm", "layer1 > attention", "日本語カーネル", "",
                                   "at::native::k<4>", "{lambda()#1}", "#[x] ## [y]"])
def test_ordinary_names_are_unchanged(plain: str) -> None:
    assert inert(plain) == plain


def test_long_text_is_cut_with_a_count() -> None:
    assert inert("k" * 1000, max_chars=10) == "kkkkkkkkkk… (990 more characters)"
    assert inert("\x1b" * 5, max_chars=2) == "\\x1b\\x1b… (3 more characters)"
    assert inert(123) == "123"


def test_inert_lines_keeps_line_breaks_but_escapes_each_line() -> None:
    assert inert_lines("a\x1b\nb\r") == "a\\x1b\nb\\r"


def test_error_lines_of_the_cli_are_inert(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A file name is part of the one error line: it must not clear the screen or add a line."""
    evil = tmp_path / "cur\x1b[2J\nPASS: forged.csv"
    evil.write_text("not a report\n")
    assert main(["compare", str(H100 / "vector_add.ncu-rep"), str(evil)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "\x1b" not in err and "\\x1b[2J\\nPASS: forged.csv" in err


def test_baseline_names_no_path_raw(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    directory = tmp_path / "b\x1b]52;c;eA==\x07"
    assert main(["baseline", str(H100 / "vector_add.ncu-rep"), "-d", str(directory)]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and "\x1b" not in out and "\x07" not in out and "\\x1b]52;c;eA==\\x07" in out


def test_a_kernel_name_in_an_error_line_is_inert(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    raw = (H100 / "vector_add.rerun.raw-base.csv").read_text()
    path = tmp_path / "evil.csv"
    path.write_text(raw.replace('"vector_add","1","7"', '"vector_add\x1b[31m\rOK","1","7"', 1)
                    .replace('"79392"', '"fast"').replace('"79,392"', '"fast"'))
    status = main(["baseline", str(path), "-d", str(tmp_path / "b")])
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1 and "\x1b" not in err and "\r" not in err, err
    assert "vector_add\\x1b[31m\\rOK" in err
    assert json.dumps(inert("\x1b")) == '"\\\\x1b"'


def test_a_kernel_name_cannot_run_a_workflow_command_in_the_ci_log(capsys: pytest.CaptureFixture[str],
                                                                    tmp_path: Path) -> None:
    """The runner acts on '##[set-output name=x;]v' or '##[stop-commands]token' anywhere in a line of a step's
    output: a fork's kernel name in compare's text report must not reach the log as one."""
    raw = (H100 / "vector_add.rerun.details-base.csv").read_text().replace('"vector_add"',
                                                                         '"vector_add ##[stop-commands]t0k"')
    (tmp_path / "base.csv").write_text(raw)
    (tmp_path / "cur.csv").write_text(raw.replace('"ns","79,392"', '"ns","179,392"'))
    assert main(["compare", str(tmp_path / "base.csv"), str(tmp_path / "cur.csv")]) == 1
    out = capsys.readouterr().out
    assert "##\\x5bstop-commands]t0k" in out and "##[" not in out
