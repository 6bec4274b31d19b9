"""The option table (``perfgate.option_table``) is the one declaration of perfgate's options: every setting has an
option, both shells' parsers are built from it, and the documentation's table of options is the table's.

Run this file as a script to print the documentation's table (docs/configuration.md, "Every option").
"""

from __future__ import annotations

import argparse
import re
import sys
import tomllib
from pathlib import Path

import pytest

from perfgate.cli import build_parser
from perfgate.config import Settings, settings_from_table
from perfgate.metrics import (CATALOG_BY_NAME, DEFAULT_BENCHMARK_METRICS, DEFAULT_KERNEL_METRICS, Threshold,
                              default_thresholds)
from perfgate.option_table import COMMAND, OPTIONS, PLUGIN, PLUGIN_OPTIONS, Option, resolve

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs" / "configuration.md"
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
SECTION = "## Every option"


def _row(option: Option) -> str:
    """The documentation's row of ``option``: key, pytest flag, perfgate flags and commands, meaning, default."""
    key = f"`{option.key}`" if option.key else "—"
    plugin = f"`{option.plugin}`" if option.plugin else "—"
    cli = f"{', '.join(f'`{flag}`' for flag in option.cli)} ({', '.join(option.commands)})" if option.cli else "—"
    meaning = option.help
    if option.plugin_note:
        meaning += f"; `pytest`: {option.plugin_note}"
    if option.cli_help:
        meaning += f"; `perfgate`: {option.cli_help}"
    cells = [key, plugin, cli, meaning.replace("%%", "%"), option.default_phrase().replace("%%", "%")]
    return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"


def docs_table() -> str:
    return "\n".join(["| `[tool.perfgate]` key | `pytest` option | `perfgate` option (commands) | meaning | default |",
                      "|---|---|---|---|---|", *(_row(option) for option in OPTIONS)])


def _documented_rows() -> list[str]:
    text = DOCS.read_text(encoding="utf-8")
    assert SECTION in text, f"{DOCS} has no '{SECTION}' section"
    section = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    return [line for line in section.splitlines() if line.startswith("|")]


def test_every_setting_has_one_option_and_every_option_key_is_a_setting() -> None:
    keys = [option.key for option in OPTIONS if option.key]
    assert sorted(keys) == sorted(Settings._fields)


def test_the_documentation_lists_every_option_with_its_key_as_the_table_declares_it() -> None:
    documented = _documented_rows()
    for option in OPTIONS:
        assert _row(option) in documented, (f"docs/configuration.md lacks or misstates this row (python "
                                            f"tests/project/test_option_table.py prints the table):\n{_row(option)}")
    assert len(documented) == len(OPTIONS) + 2, "docs/configuration.md lists an option the table does not have"


def _command_parsers(parser: argparse.ArgumentParser, prefix: str = "") -> dict[str, argparse.ArgumentParser]:
    found = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found[f"{prefix}{name}"] = sub
                found.update(_command_parsers(sub, f"{prefix}{name} "))
    return found


def test_each_command_takes_the_table_s_options_with_the_table_s_help() -> None:
    parsers = _command_parsers(build_parser())
    for option in OPTIONS:
        for command in option.commands:
            names = [name for name in parsers if name == command or name.startswith(command + " ")]
            leaves = [name for name in names if not any(other.startswith(name + " ") for other in names)]
            assert leaves, (option, command)
            for name in leaves:
                action = next(a for a in parsers[name]._actions if a.option_strings == list(option.cli))
                assert action.help == option.help_for(COMMAND) and action.dest == option.dest, (name, option.cli)


def _code_lines(page: Path) -> list[str]:
    """What a reader copies from ``page``: each line of its shell and text blocks (a line that only continues a
    command, indented or after a trailing backslash, joined to it) and each inline code span of its prose."""
    lines: list[str] = []
    fence: str | None = None
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fence = line[3:].strip() if fence is None else None
        elif fence is not None and fence not in ("python", "toml", "yaml", "json", "gitignore", "jinja", "html"):
            continued = lines and (lines[-1].endswith("\\") or (line[:1].isspace() and "perfgate " in lines[-1]))
            lines.append(lines.pop().rstrip("\\") + " " + line.strip() if continued else line)
        elif fence is None:
            lines += re.findall(r"`([^`]+)`", line)
    return lines


def _documented_command_flags() -> list[tuple[str, str, str]]:
    """(page, command, flag) for every ``--flag`` the pages give a ``perfgate COMMAND``, up to the end of that
    command (a comment, a pipe or the next command)."""
    commands = _command_parsers(build_parser())
    found = []
    for page in PAGES:
        for line in _code_lines(page):
            for match in re.finditer(r"(?:^|[\s/$(])perfgate ((?:[a-z]+)(?: [a-z|]+)?)(?=\s|$)(.*)", line):
                words, rest = match.group(1).split(), re.split(r" #|;| \| |&&|\bperfgate ", match.group(2))[0]
                if words[0] not in commands:
                    continue  # prose: "perfgate is ..."
                command = " ".join(words) if " ".join(words) in commands else words[0]
                rest = re.sub(r"\"[^\"]*\"|'[^']*'", "", rest)  # a quoted value: --build "make -j"
                found += [(page.name, command, flag) for flag in re.findall(r"(?<![\w-])(--?[a-z][a-z-]*)", rest)
                          if not flag.startswith("--perfgate-")]  # --perfgate-*: the plugin's, checked below
    return found


def _flags_of(parser: argparse.ArgumentParser) -> set[str]:
    flags = {flag for action in parser._actions for flag in action.option_strings}
    for sub in _command_parsers(parser).values():  # a command's subcommands (history record, changes …)
        flags |= _flags_of(sub)
    return flags


def test_every_flag_the_pages_give_a_command_is_one_it_takes() -> None:
    commands = _command_parsers(build_parser())
    documented = _documented_command_flags()
    assert len(documented) > 100, "the pages' commands were not found"
    wrong = [(page, command, flag) for page, command, flag in documented
             if flag not in _flags_of(commands[command]) and flag != "--"]
    assert not wrong, f"these pages give a perfgate command a flag it does not take: {wrong}"


# Where each command's every option is listed: its synopsis (the lines of the page that start with the command),
# or for publish the options table of its section.
SYNOPSES = {"compare": "cli.md", "baseline": "cli.md", "merge": "cli.md", "baselines list": "cli.md",
            "baselines stale": "cli.md", "codes": "cli.md", "init": "cli.md", "bisect": "bisect.md",
            "history record": "history.md", "history changes": "history.md", "accept": "history.md",
            "publish": "github-actions.md"}


def _synopsis(command: str) -> str:
    page = REPO / "docs" / SYNOPSES[command]
    if command == "publish":
        return page.read_text(encoding="utf-8").split("## `perfgate publish REPORT.json`", 1)[1].split("\n## ")[0]
    return " ".join(line for line in (line.removeprefix("$ ") for line in _code_lines(page))
                    if line.startswith(f"perfgate {command} "))


@pytest.mark.parametrize("command", sorted(SYNOPSES))
def test_each_command_s_synopsis_lists_every_option_it_takes(command: str) -> None:
    parser = _command_parsers(build_parser())[command]
    text = _synopsis(command)
    unlisted = [action.option_strings for action in parser._actions if action.option_strings
                and action.dest != "help" and not any(re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", text)
                                                      for flag in action.option_strings)]
    assert not unlisted, f"docs/{SYNOPSES[command]}: perfgate {command}'s synopsis leaves out {unlisted}"


def test_every_perfgate_flag_the_pages_name_exists() -> None:
    """``--perfgate-…`` anywhere in the pages is the plugin's option, or a command's (``init --perfgate-spec``)."""
    known = {option.plugin for option in PLUGIN_OPTIONS} | _flags_of(build_parser())
    named = {(page.name, flag) for page in PAGES
             for flag in re.findall(r"(?<![\w-])(--perfgate(?:-[a-z]+)*)", page.read_text(encoding="utf-8"))}
    assert not [(page, flag) for page, flag in sorted(named) if flag not in known]


def test_every_tool_perfgate_table_and_key_the_pages_show_is_valid() -> None:
    """Each ``[tool.perfgate]`` TOML block of the pages loads as it is written (an unknown key or a bad value
    would stop the user's run), and each key a page names (``[tool.perfgate] KEY``, ``KEY = value``) exists."""
    tables, keys = 0, set()
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for block in re.findall(r"```toml\n(.*?)```", text, re.S):
            table = tomllib.loads(block).get("tool", {}).get("perfgate")
            if table is not None:
                settings_from_table(table, f"{page.name}'s block")
                tables += 1
        keys |= {(page.name, key) for key in re.findall(r"\[tool\.perfgate\]`? `?([a-z_]+)`", text)}
        for span in re.findall(r"`([a-z_]+ = [^`]+)`", text):
            try:
                keys |= {(page.name, key) for key in tomllib.loads(span)}
            except tomllib.TOMLDecodeError:
                continue  # a formula, not a setting
    assert tables >= 7
    assert not [(page, key) for page, key in sorted(keys) if key not in Settings._fields]


def _spec(threshold: Threshold) -> str:
    if not threshold.gating:
        return "off"
    parts = ([f"{threshold.relative * 100:g}%"] if threshold.relative is not None else []) + (
        [f"{threshold.absolute:g}"] if threshold.absolute is not None else [])
    return "+".join(parts)


def test_the_default_metrics_table_is_the_catalog_s() -> None:
    """docs/configuration.md's "The default metrics": the default set, in its order, each with its label and its
    default threshold."""
    section = DOCS.read_text(encoding="utf-8").split("## The default metrics", 1)[1].split("\n## ", 1)[0]
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in section.splitlines()
            if line.startswith("| `")]
    documented = [(metric.split("`")[1], label, spec.split("`")[1]) for metric, label, spec in rows]
    thresholds = default_thresholds()
    assert documented == [(name, CATALOG_BY_NAME[name].label, _spec(thresholds[name]))
                          for name in (*DEFAULT_KERNEL_METRICS, *DEFAULT_BENCHMARK_METRICS)]


def test_the_marker_table_lists_every_marker_argument() -> None:
    """docs/pytest-plugin.md's table of ``@pytest.mark.perfgate(...)`` keys is the marker's arguments."""
    from perfgate.plugin.marker import PerfMarker

    page = (REPO / "docs" / "pytest-plugin.md").read_text(encoding="utf-8")
    section = page.split("## The marker: `@pytest.mark.perfgate(...)`", 1)[1].split("\n## ", 1)[0]
    keys = [line.split("`")[1] for line in section.splitlines() if line.startswith("| `")]
    assert sorted(keys) == sorted(PerfMarker._fields)


def test_pytest_s_help_lists_the_plugin_s_options_from_the_table(pytester: pytest.Pytester) -> None:
    text = " ".join(pytester.runpytest("--help").stdout.str().split())
    for option in PLUGIN_OPTIONS:
        assert option.plugin in text
        assert " ".join(option.help_for(PLUGIN).replace("%%", "%").split()) in text, option.plugin


def test_the_command_line_wins_over_the_configuration_which_wins_over_the_default(tmp_path: Path) -> None:
    configured = settings_from_table({"baselines": "perf/baselines", "significance": 0.05, "strict": True,
                                      "history": "sqlite:///runs.sqlite", "metrics": ["a"],
                                      "thresholds": {"a": "3%"}})
    here = tmp_path / "cwd"
    settings = resolve(configured, {"significance": 0.2, "strict": None, "metrics": ["+b"], "baselines": None,
                                    "thresholds": [("b", configured.thresholds["a"])]}, tmp_path, here)
    assert settings.significance == 0.2 and settings.strict is True and settings.timeout == Settings().timeout
    assert settings.metrics == ("a", "b") and set(settings.thresholds) == {"a", "b"}
    assert settings.baselines == str(tmp_path / "perf" / "baselines")
    assert settings.history == f"sqlite:///{tmp_path / 'runs.sqlite'}"
    assert settings.report == str(tmp_path / Settings().report)  # a default path too is the project's
    given = resolve(configured, {"baselines": "mine", "history": "sqlite:///x.sqlite"}, tmp_path, here)
    assert given.baselines == str(here / "mine") and given.history == "sqlite:///x.sqlite"
    assert resolve(configured, {"baselines": "mine"}, tmp_path).baselines == "mine"  # no ``here``: as given


def test_sections_none_on_the_command_line_overrides_configured_sections() -> None:
    configured = settings_from_table({"sections": ["SpeedOfLight"]})
    assert resolve(configured, {"sections": ()}, None).sections == ()
    assert resolve(configured, {"sections": None}, None).sections == ("SpeedOfLight",)


if __name__ == "__main__":
    sys.stdout.write(docs_table() + "\n")
