"""Escaping of untrusted text: the one place every output format makes a report's strings harmless.

Every string a report carries (kernel, test, region and metric names, launch labels, causes, notes,
findings, file names) comes from code perfgate does not control; in the fork-safe workflow the report
is an artifact the fork's own code wrote. So is text GitHub's API answers with (``html_url``). Each
function here is plain ``str -> str``, so a template engine can register it as a filter:

- :func:`md_inline` for one line of GitHub Markdown (a table cell, a headline, a note, a check run's
  summary): no raw HTML (so no ``<img>`` pixel and no ``<!--`` that hides what follows or forges
  perfgate's comment markers), no code span, emphasis, link or table cell break, no ``@user`` /
  ``@org/team`` mention, no newline (a forged heading or verdict line), no control character.
- :func:`html_text` for HTML text and attribute values (what jinja2's autoescape does), invisible and
  bidirectional characters shown as escapes (:func:`shown_invisible`; the templates' ``finalize`` does the same).
- :func:`terminal_text` for a terminal or a log: every control character (ESC of an ANSI sequence, CR,
  newline, bidirectional overrides) written as a visible escape (:func:`perfgate.text.inert`).

Stdlib only: the renderers and the CLI's error lines import it.
"""

from __future__ import annotations

import re
from typing import Any

from perfgate.text import inert

MAX_NAME = 160  # longer (templated) kernel names are cut in tables; the JSON keeps them whole

# '@' is followed by a zero-width space: GitHub's mention filter then sees no name after the '@'.
_MD_REPLACEMENTS = {"&": "&amp;", "<": "&lt;", ">": "&gt;", "|": "&#124;", "`": "&#96;", "@": "@&#8203;",
                    **{ch: "\\" + ch for ch in "\\*_[]~#"}}
_MD_TABLE = str.maketrans(_MD_REPLACEMENTS)
# Whitespace str.split() does not collapse but a renderer may still break a line at or hide.
_INVISIBLE = re.compile("[\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]")


def one_line(text: object) -> str:
    """``text`` on one line: every run of whitespace (newlines, CR, tabs, U+2028) becomes one space."""
    return " ".join(str(text).split())


def cut(text: str, limit: int | None) -> str:
    """``text`` cut to ``limit`` characters, the last one an ellipsis."""
    if limit is not None and len(text) > limit:
        return text[: max(limit - 1, 0)] + "…"
    return text


def md_inline(text: object, limit: int | None = MAX_NAME) -> str:
    """Untrusted text as one line of GitHub Markdown that shows exactly that text and does nothing else.

    Whitespace runs become one space (a newline would end a table row or start a heading), invisible and
    bidirectional characters are dropped, other control characters (ANSI's ESC) are written as visible
    escapes; then HTML-significant characters become entities (no tag, comment or entity of the text's own),
    a pipe cannot end a cell, a backtick cannot open a code span, emphasis, link brackets, '#' and
    backslashes are backslash-escaped, and '@' is followed by a zero-width space so that ``@octocat`` or
    ``@org/team`` notifies nobody. ``limit`` cuts the text (before escaping) to that many characters.
    """
    raw = cut(inert(_INVISIBLE.sub("", one_line(text))), limit)
    return raw.translate(_MD_TABLE)


def md_unbroken(markdown: str) -> str:
    """Markdown text (already made inert) on one rendered line: its spaces made non-breaking, so that a value and
    its unit ("8.765 ms"), or a metric's name ("wall time"), do not wrap in a narrow table column and fall out of
    line with the items of the cells beside it."""
    return markdown.replace(" ", "\u00a0")


# A run of this many characters or more with no space (a cuBLAS kernel's name) widens a GitHub table column to its
# length: the numbers beside it scroll out of view.
LONG_WORD = 32
_LONG_WORD = re.compile(r"\S{%d,}" % LONG_WORD)
_WORD_BREAKS = re.compile(r"(\\_|::|,)(?=\S)")


def md_breakable(markdown: str) -> str:
    """Markdown text (already made inert) whose long words may wrap where a name has joints: a ``<wbr>`` (which
    GitHub keeps) after each escaped underscore, ``::`` and comma of a word of :data:`LONG_WORD` characters or
    more. A copied name carries no trace of them, unlike a zero-width space."""
    return _LONG_WORD.sub(lambda word: _WORD_BREAKS.sub(r"\1<wbr>", word.group(0)), markdown)


def shown_invisible(text: str) -> str:
    """``text`` with its invisible and bidirectional characters written as visible escapes (``\\u202e``): a page
    keeps a name's other characters as they are, but an override must not reorder what a reviewer reads (Trojan
    Source), nor a zero-width character make two names look alike."""
    return text if text.isascii() else _INVISIBLE.sub(lambda found: f"\\u{ord(found.group()):04x}", text)


def shown_strings(value: Any) -> Any:
    """``value`` with the invisible and bidirectional characters of its plain strings written as visible escapes
    (:func:`shown_invisible`), in the lists and dicts it holds too (a chart's data); already escaped text (a
    markupsafe ``Markup``, a ``str`` subclass) and other values as they are. The templates' ``finalize``."""
    if type(value) is str:
        return shown_invisible(value)
    if isinstance(value, dict):
        return {key: shown_strings(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [shown_strings(item) for item in value]
    return value


def html_text(text: object) -> str:
    """markupsafe's escaping (what jinja2's autoescape does), without building a Markup object, after
    :func:`shown_invisible`."""
    return (shown_invisible(str(text)).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&#34;")
            .replace("'", "&#39;"))


def terminal_text(text: object, limit: int | None = None) -> str:
    """Untrusted text for a terminal or a CI log: control characters written as visible escapes."""
    return inert(text, limit)


def plain_line(text: object, limit: int | None = None) -> str:
    """Untrusted text for a plain-text field (a check run's title, an annotation): one line, no controls."""
    return cut(inert(_INVISIBLE.sub("", one_line(text))), limit)


__all__ = ["LONG_WORD", "MAX_NAME", "cut", "html_text", "md_breakable", "md_inline", "md_unbroken", "one_line", "plain_line", "shown_invisible", "shown_strings", "terminal_text"]
