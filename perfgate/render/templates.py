"""The jinja2 environment the Markdown report is laid out with: perfgate's templates, shipped in the wheel
(``perfgate/render/templates/*.j2``, read through ``importlib.resources``), and a team's own.

A team overrides any template by giving a folder (``[tool.perfgate] templates = "path"``): a file there named
like one of perfgate's replaces it. Every string from a report reaches a template raw and goes through one of
the filters of :mod:`perfgate.render.untrusted` (``md``, ``html``, ``plain``); HTML templates (``*.html.j2``)
are autoescaped. ``StrictUndefined`` turns a misspelt name into an error, and a broken template (syntax or
name) is one :class:`~perfgate.errors.ConfigError` line naming its file and line.

A team's templates are code from a folder perfgate does not own, so with a team folder every template renders in
jinja2's immutable sandbox: no attribute starting with ``_`` (no ``''.__class__.__mro__`` to reach ``os``), no
call that changes the report, and an attempt is that same one line (docs/security.md says what stays trusted).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2
import jinja2.sandbox

from perfgate.errors import ConfigError
from perfgate.render.untrusted import html_text, md_breakable, md_inline, md_unbroken, one_line, plain_line, shown_strings

_PACKAGE = "perfgate.render"
_FOLDER = "templates"


def _packaged(name: str) -> tuple[str, str, Callable[[], bool]] | None:
    """A template shipped in the wheel, read with importlib.resources (works from a zip too)."""
    from importlib import resources

    source = resources.files(_PACKAGE).joinpath(_FOLDER, *name.split("/"))
    if not source.is_file():
        return None
    return source.read_text(encoding="utf-8"), f"perfgate/render/templates/{name}", lambda: True


def _loader(folder: Path | None) -> jinja2.BaseLoader:
    shipped = jinja2.FunctionLoader(_packaged)
    if folder is None:
        return shipped
    return jinja2.ChoiceLoader([jinja2.FileSystemLoader(str(folder)), shipped])


@lru_cache(maxsize=8)
def environment(folder: Path | None = None) -> jinja2.Environment:
    """The environment for perfgate's templates, with ``folder``'s files (a team's) taking precedence."""
    if folder is not None and not folder.is_dir():
        raise ConfigError(f"[tool.perfgate] templates: {folder} is not a folder (give the folder of your "
                          f"*.j2 files, relative to pyproject.toml)")
    # perfgate's own templates alone run unsandboxed: the sandbox checks every attribute and call (the HTML page's).
    kind = jinja2.Environment if folder is None else jinja2.sandbox.ImmutableSandboxedEnvironment
    env = kind(loader=_loader(folder), undefined=jinja2.StrictUndefined, keep_trailing_newline=True,
               trim_blocks=True, lstrip_blocks=True, finalize=shown_strings,
               autoescape=jinja2.select_autoescape(enabled_extensions=("html", "html.j2"), default_for_string=False))
    env.filters.update(md=md_inline, html=html_text, plain=plain_line, unbroken=md_unbroken, breakable=md_breakable)
    return env


def _where(error: Exception, name: str) -> str:
    """``file:line`` of a template error: the syntax error's own, else the last template frame of the traceback
    (jinja2 rewrites a rendering error's traceback to the template's file and line)."""
    if isinstance(error, jinja2.TemplateSyntaxError):
        return f"{error.filename or error.name or name}:{error.lineno}"
    found = name
    trace = error.__traceback__
    while trace is not None:
        if trace.tb_frame.f_code.co_filename.endswith(".j2"):
            found = f"{trace.tb_frame.f_code.co_filename}:{trace.tb_lineno}"
        trace = trace.tb_next
    return found


def _problem(error: jinja2.TemplateError, name: str) -> str:
    """The one line a broken template gives: its file and line, what is wrong, and the fix."""
    what = f"syntax error: {error.message}" if isinstance(error, jinja2.TemplateSyntaxError) else f"error: {error}"
    return one_line(f"{_where(error, name)}: template {what} (fix the template, or remove it from the templates folder to "
            f"use perfgate's)")


def check_templates(folder: Path) -> Path:
    """``folder``, after compiling each of its templates: a syntax error is one line naming the file and line."""
    env = environment(folder)
    for path in sorted(folder.glob("*.j2")):
        try:
            env.get_template(path.name)
        except jinja2.TemplateSyntaxError as error:
            raise ConfigError(_problem(error, path.name)) from None
    return folder


def team_templates(folder: str) -> Path | None:
    """The folder ``[tool.perfgate] templates`` names (None where none is set), each of its templates compiled
    now: a broken one stops a command or a pytest session before any work, whether or not it would be rendered."""
    return check_templates(Path(folder)) if folder else None


def render_template(name: str, folder: Path | None = None, **context: Any) -> str:
    """``name`` rendered with ``context``; a broken template is one line naming its file and line."""
    try:
        return environment(folder).get_template(name).render(**context)
    except jinja2.TemplateError as error:
        raise ConfigError(_problem(error, name)) from None


def render_block(name: str, folder: Path | None = None, **context: Any) -> str:
    """A template that lays out one line or block, without the newline its file ends with."""
    text = render_template(name, folder, **context)
    return text[:-1] if text.endswith("\n") else text


class Macros:
    """The macros of one template, called from Python one row or section at a time (a caller that keeps them to a
    room); a broken template, or an error while a macro renders, is one line naming its file and line."""

    def __init__(self, name: str, folder: Path | None = None) -> None:
        self._name = name
        try:
            self._module = environment(folder).get_template(name).module
        except jinja2.TemplateError as error:
            raise ConfigError(_problem(error, name)) from None

    def __call__(self, macro: str, *args: Any) -> str:
        found = getattr(self._module, macro, None)
        if found is None:
            raise ConfigError(f"{self._name}: the template must define the macro {macro!r} (fix the template, or "
                              "remove it from the templates folder to use perfgate's)")
        try:
            return str(found(*args))
        except jinja2.TemplateError as error:
            raise ConfigError(_problem(error, self._name)) from None


__all__ = ["Macros", "check_templates", "environment", "render_block", "render_template", "team_templates"]
