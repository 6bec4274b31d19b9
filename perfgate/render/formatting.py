"""Escaping every renderer shares (the numbers are ``perfgate.quantities``'). Stdlib only."""

from __future__ import annotations

from typing import Any

from perfgate.render.untrusted import MAX_NAME, html_text, md_inline


# ---------------------------------------------------------------- escaping (perfgate.render.untrusted)

def md_escape(text: Any, limit: int = MAX_NAME) -> str:
    """Untrusted text as one line of GitHub Markdown: :func:`perfgate.render.untrusted.md_inline`."""
    return md_inline(text, limit)


def html_escape(text: object) -> str:
    """Untrusted text in HTML: :func:`perfgate.render.untrusted.html_text`."""
    return html_text(text)


def text_length(text: str) -> int:
    """Length in UTF-16 code units, as GitHub counts a comment's characters."""
    return len(text.encode("utf-16-le")) // 2
