"""The option table (``perfgate.option_table``) is the one declaration of perfgate's options: every setting has an
option, both shells' parsers are built from it, and the documentation's table of options is the table's.

Run this file as a script to print the documentation's table (docs/configuration.md, "Every option").
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pytest

from perfgate.cli import build_parser
from perfgate.config import Settings, settings_from_table
from perfgate.option_table import COMMAND, OPTIONS, PLUGIN, PLUGIN_OPTIONS, Option, resolve

DOCS = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"
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
