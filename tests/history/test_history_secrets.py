"""A password in ``--db`` never reaches perfgate's output, in any form the URL takes (``user:PASSWORD@``,
``?password=``, a key=value conninfo, the scheme in capitals, a leading space, a driver in the scheme, a
percent-encoded password) and whatever says the URL: perfgate's own lines, libpq's error quoting the URI, the
plugin's "history: recorded … in …" line. Checked against the real PostgreSQL (which trusts the test user, so
any password is accepted) and a host where nothing listens."""

from __future__ import annotations

import random
import string
import urllib.parse
from typing import Iterator

import pytest
from helpers.benchmark_suite import BENCH_OPTIONS
from helpers.common import run_cli
from helpers.history import fresh_postgres_database

from perfgate.errors import PerfgateError
from perfgate.history.db import open_history
from perfgate.history.location import parse_history_url, shown_url
from perfgate import gate  # noqa: F401 - the in-process pytest runs below share its modules' one copy

pytest_plugins = ("pytester",)

SECRET = "S3CRET"
FORMS = {
    "userinfo": "postgresql://{user}:S3CRET@{host}/{db}",
    "query": "postgresql://{user}@{host}/{db}?sslmode=disable&password=S3CRET",
    "capitals": "PostgreSQL://{user}:S3CRET@{host}/{db}",
    "leading space": " postgresql://{user}:S3CRET@{host}/{db}",
    "encoded": "postgresql://{user}:S3%2FCRET%40x@{host}/{db}",
    "postgres scheme": "postgres://{user}:S3CRET@{host}/{db}",
}


def _with_password(form: str, server: str) -> str:
    split = urllib.parse.urlsplit(server)
    return FORMS[form].format(user=split.username, host=split.hostname + (f":{split.port}" if split.port else ""),
                              db=split.path.lstrip("/"))


def _assert_no_secret(text: str) -> None:
    for secret in (SECRET, "S3/CRET", "S3%2FCRET", "CRET@x", "CRET%40x"):
        assert secret not in text, text


@pytest.fixture
def database() -> Iterator[str]:
    yield from fresh_postgres_database()


@pytest.mark.parametrize("form", FORMS)
def test_no_form_of_the_password_is_printed_by_the_real_server_s_commands(
        form: str, database: str, capsys: pytest.CaptureFixture[str]) -> None:
    url = _with_password(form, database)
    status, out, err = run_cli(capsys, "history", "changes", "--db", url)  # a new database: "holds no history"
    assert status == 2 and err.count("\n") == 1 and "holds no perfgate history" in err, err
    _assert_no_secret(out + err)
    assert urllib.parse.urlsplit(database).hostname in err  # the line still says which database


@pytest.mark.parametrize("form", FORMS)
def test_no_form_of_the_password_is_printed_when_the_host_is_unreachable(
        form: str, capsys: pytest.CaptureFixture[str]) -> None:
    url = _with_password(form, "postgresql://ci@127.0.0.1:1/db")
    status, out, err = run_cli(capsys, "history", "changes", "--db", url, "--max-time", "5")
    assert status == 2 and err.count("\n") == 1 and "cannot connect" in err, err
    _assert_no_secret(out + err)


@pytest.mark.parametrize("url", [
    "postgresql://ci:S3CRET@[127.0.0.1/db",  # libpq's error quotes the whole URI
    "postgresql://ci:S3CRET@127.0.0.1:99999999999/db",
    "postgresql://ci:S3/CRET@127.0.0.1/db",  # an unescaped / ends the userinfo early: libpq reads a port "S3"
    "postgresql://127.0.0.1/db?password=S3CRET&sslmode=bogus",
    "postgresql+psycopg://ci:S3CRET@127.0.0.1/db",
    "host=127.0.0.1 password=S3CRET dbname=db",
    "host=127.0.0.1 password='S3CRET and more' dbname=db",
])
def test_no_error_of_libpq_or_perfgate_prints_the_password(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run_cli(capsys, "history", "changes", "--db", url, "--max-time", "5")
    assert status == 2 and err.count("\n") == 1 and "please report" not in err, err
    _assert_no_secret(out + err)


def test_the_shown_url_keeps_what_names_the_database() -> None:
    assert shown_url("postgresql://ci:S3CRET@h:5432/db?password=x") == "postgresql://ci:***@h:5432/db?…"
    assert shown_url(" PostgreSQL://ci@h/db") == "postgresql://ci@h/db"
    assert shown_url("sqlite:///runs/h.sqlite") == "sqlite:///runs/h.sqlite"
    assert parse_history_url("PostgreSQL://ci:S3CRET@h/db").engine == "postgresql"


def test_the_plugin_s_recorded_line_holds_no_password(suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
                                                      database: str) -> None:
    monkeypatch.setenv("GITHUB_SHA", "1" * 40)
    monkeypatch.setenv("GITHUB_REF_NAME", "main")
    for name in ("GITHUB_HEAD_REF", "GITHUB_EVENT_PATH"):
        monkeypatch.delenv(name, raising=False)
    suite.runpytest("--perfgate", "--perfgate-update", *BENCH_OPTIONS).assert_outcomes(passed=2)
    result = suite.runpytest("--perfgate", *BENCH_OPTIONS, "--perfgate-history", _with_password("query", database))
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["history: recorded * series at 111111111111 on main in postgresql://*"])
    _assert_no_secret(result.stdout.str() + result.stderr.str())
    result = suite.runpytest("--perfgate", *BENCH_OPTIONS, "--perfgate-history", "postgresql://ci:S3CRET@127.0.0.1:1/x")
    result.stdout.fnmatch_lines(["perfgate: cannot record the session in the history: *cannot connect*"])
    _assert_no_secret(result.stdout.str() + result.stderr.str())


def test_the_shown_url_of_every_form_holds_no_password() -> None:
    for form in FORMS:
        _assert_no_secret(shown_url(_with_password(form, "postgresql://ci@h:5432/db")))


def test_no_window_of_a_password_with_url_syntax_in_it_is_printed() -> None:
    """Passwords holding / ? # @ : ' & = \\ [ ] and spaces, escaped or not, in each form: libpq reads many of them
    differently from the user's intent (a port, a host, another parameter) and quotes that piece in its error."""
    rng = random.Random(3)
    alphabet = string.ascii_letters + string.digits + "/?#@:'% &=\\\"[]"
    for _ in range(120):
        password = "Z" + "".join(rng.choice(alphabet) for _ in range(rng.randint(3, 10))) + "Q"
        given = urllib.parse.quote(password, safe="") if rng.random() < 0.5 else password
        url = rng.choice([f"postgresql://ci:{given}@127.0.0.1:1/db", f"POSTGRES://ci:{given}@127.0.0.1:1/db",
                          f" postgresql://ci@127.0.0.1:1/db?sslmode=disable&password={given}",
                          f"host=127.0.0.1 port=1 password='{password}' dbname=db",
                          f"postgresql+psycopg://ci:{given}@127.0.0.1:1/db"])
        with pytest.raises(PerfgateError) as info:
            open_history(url, max_time=2)
        text = str(info.value)
        windows = {word[at:at + 5] for word in (password, given) for at in range(len(word) - 4)}
        assert not [window for window in windows if window in text], (url, text)
