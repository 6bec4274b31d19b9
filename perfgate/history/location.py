"""Where a history lives: which URL a command uses (:func:`resolve_history_url`, the one home of that choice), that URL
parsed once, the form of it that may be printed, and its secrets.

A PostgreSQL URL can carry a password in four places (``user:PASSWORD@``, ``?password=``, a key=value
``password=`` and, for a URL libpq reads differently from the user's intent, the text between the user and the
last ``@``). Every one of them is a secret: :attr:`HistoryURL.shown` holds none, and :func:`HistoryURL.scrub`
removes them from any text that leaves perfgate, libpq's and psycopg's error messages included (libpq quotes
the URI it could not parse).
"""

from __future__ import annotations

import os
import re
import urllib.parse
from typing import Mapping, NamedTuple

from perfgate.errors import InputError

DEFAULT_URL = "sqlite:///.perfgate/history.sqlite"
HISTORY_ENV = "PERFGATE_HISTORY"  # the history of a command given none
POSTGRESQL_SCHEMES = ("postgresql", "postgres")
HIDDEN = "***"

# key=value conninfo's password: everything after it (a quote or space in it ends libpq's reading early). libpq's
# own parser (psycopg.conninfo.conninfo_to_dict) reads it too, where psycopg is installed.
_CONNINFO_PASSWORD = re.compile(r"(?i)\b(?:ssl)?password\s*=\s*(.*)")
_SECRET_KEYS = ("password", "sslpassword")  # the server's password, the client key's passphrase
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


class HistoryURL(NamedTuple):
    """A parsed ``--db``: its engine, the text to open it with, what may be printed, and the secrets in it."""

    engine: str  # "sqlite", "postgresql", or "" for a URL perfgate does not open
    target: str  # sqlite: the file's path; postgresql: the URL with its scheme in lower case
    shown: str  # no password in any form
    secrets: tuple[str, ...]  # longest first

    def scrub(self, text: str) -> str:
        """``text`` with every secret of this URL replaced by ``***``."""
        for secret in self.secrets:
            text = text.replace(secret, HIDDEN)
        return text


def resolve_history_url(given: str | None, configured: str | None = None,
                env: Mapping[str, str] | None = None) -> str | None:
    """The history a command uses: the one it was given (``--db``), else ``$PERFGATE_HISTORY``, else the configured
    one (``[tool.perfgate] history``); None where there is none (``open_history`` then opens :data:`DEFAULT_URL`).
    An empty word counts as none."""
    environ = os.environ if env is None else env
    return given or environ.get(HISTORY_ENV) or configured or None


def parse_history_url(url: str) -> HistoryURL:
    """``url`` (surrounding whitespace ignored, the scheme in any case) as a :class:`HistoryURL`."""
    text = url.strip()
    found = _SCHEME.match(text)
    scheme = found.group(1).lower() if found else ""
    rest = text[found.end():] if found else text
    if scheme == "sqlite" and rest.startswith("/"):
        return HistoryURL("sqlite", rest[1:], f"sqlite://{rest}", ())
    normalized = f"{scheme}://{rest}" if found else text
    # A key=value string is no URL perfgate opens: none of it is shown (a password with a space or a quote in it
    # ends where the user did not mean it to).
    shown = _shown(scheme, rest) if found else "(a key=value connection string)" if "=" in text else text
    parsed = HistoryURL("postgresql" if scheme in POSTGRESQL_SCHEMES else "", normalized, "",
                        _secrets(text, rest if found else ""))
    return parsed._replace(shown=parsed.scrub(shown))


def shown_url(url: str) -> str:
    """``url`` without its password, in any of the forms it may take: for error lines and logs."""
    return parse_history_url(url).shown


def _secrets(text: str, rest: str) -> tuple[str, ...]:
    found: set[str] = set()
    split = _split(rest) if rest else None
    if split is not None:
        userinfo = split.netloc.rpartition("@")[0]
        if ":" in userinfo:
            found.add(userinfo.split(":", 1)[1])
        for key, value in urllib.parse.parse_qsl(split.query, keep_blank_values=True):
            if key.lower() in _SECRET_KEYS:
                found.add(value)
    if rest:
        for marker in re.finditer(r"(?i)[?&](?:ssl)?password=", rest):  # an unescaped & or = ends it early
            tail = rest[marker.end():].split("#")[0]
            found.update([tail, *tail.split("&")])
        # A password holding an unescaped / ? # or @ ends the URL's userinfo early, differently for urllib and
        # libpq: everything between the user's ':' and the last '@' is secret, and each piece of it.
        greedy = rest.rpartition("@")[0]
        if ":" in greedy:
            candidate = greedy.split(":", 1)[1]
            found.add(candidate)
            found.update(re.split(r"[/?#@]", candidate))
    for value in _CONNINFO_PASSWORD.findall(text):
        found.update([value, *re.split(r"[\s'\"]+", value)])
    found.update(_libpq_password(text))
    found.update({urllib.parse.unquote(s) for s in found})
    found.update({s.replace("\\", "\\\\") for s in found})  # as a message that repr()s it shows a backslash
    return tuple(sorted((s for s in found if s), key=len, reverse=True))


def _libpq_password(text: str) -> set[str]:
    """The password as libpq itself reads ``text``, where psycopg is installed and the text parses."""
    try:
        from psycopg.conninfo import conninfo_to_dict
    except ImportError:
        return set()
    lowered = _SCHEME.sub(lambda m: m.group(1).lower() + "://", text.strip(), count=1)
    try:
        params = conninfo_to_dict(lowered)
    except Exception:  # noqa: BLE001 - any parse error: the other readers above still found what they could
        return set()
    return {str(params[key]) for key in _SECRET_KEYS if params.get(key)}


def _split(rest: str) -> urllib.parse.SplitResult | None:
    try:
        return urllib.parse.urlsplit("x://" + rest)
    except ValueError:
        return None


def _shown(scheme: str, rest: str) -> str:
    """``scheme://user[:***]@host/path``: no query (``?password=``) and no password."""
    split = _split(rest)
    if split is None:  # not even urllib reads it (an unclosed IPv6 bracket): nothing of it is shown
        return f"{scheme}://{HIDDEN}"
    userinfo, at, host = split.netloc.rpartition("@")
    user = userinfo.split(":", 1)[0]
    credentials = f"{user}:{HIDDEN}@" if ":" in userinfo else f"{user}@" if at else ""
    query = "?…" if split.query else ""
    return f"{scheme}://{credentials}{host}{split.path}{query}"


def refuse_unknown(parsed: HistoryURL) -> InputError:
    """The error for a ``--db`` that names neither a SQLite file nor a PostgreSQL database."""
    fix = "use sqlite:///path/history.sqlite or postgresql://user@host/dbname"
    if parsed.target.lower().startswith("postgresql+"):
        fix = "write the scheme postgresql://, without a driver name"
    return InputError(parsed.shown, "is not a history URL", fix)
