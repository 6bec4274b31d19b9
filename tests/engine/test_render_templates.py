"""A team's templates (``[tool.perfgate] templates = "path"``): a file named like one of perfgate's replaces it,
the others stay perfgate's; a broken one (syntax, undefined name) is one line naming its file and line, exit 2,
from ``perfgate compare``, ``perfgate publish`` (before anything is posted) and the plugin (before any test)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.common import REPO, run_cli, run_perfgate
from helpers.github_server import (
    PR,
    FakeGitHub,
    actions_env,
    github,
    launch,
    make_report,
    pull_request_event,
    run_publish,
    write_report,
)
from helpers.github_server import REPO as GITHUB_REPO
from helpers.hostile import hostile_report

from perfgate.publish.body import MAX_ANNOTATIONS, check_run_requests, check_summary
from perfgate.render import render_html, render_markdown
from perfgate.render.common import report_devices
from perfgate.render.templates import environment
from perfgate.render.untrusted import html_text

__all__ = ["github"]

H100 = REPO / "tests" / "data" / "h100"
PAIR = (H100 / "vector_add.rerun.details-base.csv", H100 / "vector_add.rerun.details.csv")
SHIPPED = REPO / "perfgate" / "render" / "templates"


def project(tmp: Path, **templates: str) -> Path:
    """A project whose pyproject.toml points at ``team-templates/``, holding ``templates`` (name -> text)."""
    folder = tmp / "team-templates"
    folder.mkdir(parents=True)
    for name, text in templates.items():
        (folder / name).write_text(text)
    (tmp / "pyproject.toml").write_text('[tool.perfgate]\ntemplates = "team-templates"\n')
    return tmp / "pyproject.toml"


def test_every_shipped_template_is_in_the_package_data() -> None:
    names = sorted(p.name for p in SHIPPED.glob("*.j2"))
    assert names == ["all_clear.md.j2", "check_summary.md.j2", "cut_note.md.j2", "full_report.md.j2", "headline.md.j2", "kernel_row.md.j2",
                     "kernel_table.md.j2", "kernels.html.j2", "note.md.j2", "page.html.j2", "report.md.j2"]
    assert '"render/templates/*.j2"' in (REPO / "pyproject.toml").read_text()


def test_a_team_template_replaces_perfgates_of_that_name_only(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    row = (SHIPPED / "kernel_row.md.j2").read_text().replace('| {{ columns|join(" | ") }} |',
                                                             '| {{ columns|join(" | ") }} | team |')
    config = project(tmp_path, **{"kernel_row.md.j2": row})
    status, ours, _ = run_cli(capsys, "compare", *PAIR, "--format", "md")
    status_team, theirs, err = run_cli(capsys, "compare", *PAIR, "--format", "md", "--config", config)
    assert status == status_team == 0, err
    assert "\n| ✅ | vector\\_add<br>" in ours
    changed = [(a, b) for a, b in zip(ours.splitlines(), theirs.splitlines()) if a != b]
    assert len(changed) == 1 and changed[0][1] == changed[0][0] + " team |", changed
    assert len(ours.splitlines()) == len(theirs.splitlines())


def test_a_team_template_sees_the_report_strings_raw_and_escapes_them_with_the_md_filter(tmp_path: Path) -> None:
    project(tmp_path, **{"note.md.j2": "> NOTE {{ note|md(400) }} RAW {{ note|length > 0 }}\n"})
    markdown = render_markdown(hostile_report(True), templates=tmp_path / "team-templates")
    notes = [line for line in markdown.splitlines() if line.startswith("> NOTE ")]
    assert notes and all(line.endswith(" RAW True") for line in notes)
    assert all("<img" not in line and "@octocat" not in line for line in notes)


def test_html_templates_are_autoescaped_markdown_ones_are_not(tmp_path: Path) -> None:
    project(tmp_path, **{"page.html.j2": "<p>{{ name }}</p>\n", "line.md.j2": "{{ name }} {{ name|md }}\n"})
    env = environment(tmp_path / "team-templates")
    assert env.get_template("page.html.j2").render(name="<b>&</b>") == "<p>&lt;b&gt;&amp;&lt;/b&gt;</p>\n"
    assert env.get_template("line.md.j2").render(name="<b>") == "<b> &lt;b&gt;\n"


@pytest.mark.parametrize(("text", "line", "problem"), [
    ("{% if row %}\n| {{ row.icon }} |\n", 2, "template syntax error: Unexpected end of template"),
    ("| {{ row.icon }}\n  | {{ row.nmae|md }} |\n", 2, "template error: 'dict object' has no attribute 'nmae'"),
    ("| {{ kernel_name }} |\n", 1, "template error: 'kernel_name' is undefined"),
])
def test_a_broken_team_template_is_one_line_with_its_file_and_line_exit_2(tmp_path: Path, text: str, line: int,
                                                                           problem: str) -> None:
    project(tmp_path, **{"kernel_row.md.j2": text})
    output = tmp_path / "report.md"
    done = run_perfgate("compare", *PAIR, "-o", output, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    where = tmp_path / "team-templates" / "kernel_row.md.j2"
    assert done.stderr.startswith(f"perfgate: error: {where}:{line}: {problem}"), done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr and not done.stdout
    assert not output.exists()


def test_a_missing_templates_folder_is_one_line_exit_2(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.perfgate]\ntemplates = "nowhere"\n')
    done = run_perfgate("compare", *PAIR, "--format", "md", cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "templates:" in done.stderr and "nowhere is not a folder" in done.stderr


def test_publish_with_a_broken_template_posts_nothing_and_exits_2(github: FakeGitHub, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    project(tmp_path, **{"headline.md.j2": "### {{ verdict_icon }} {{ headline|md(400) }\n"})
    report = write_report(tmp_path, hostile_report(True))
    monkeypatch.chdir(tmp_path)
    run = run_publish(report, actions_env(github, tmp_path, event=pull_request_event(tmp_path)))
    assert run.returncode == 2, run.output
    assert f"team-templates{'/'}headline.md.j2:1: template syntax error" in run.output
    assert "Traceback" not in run.output
    assert github.comments_on(GITHUB_REPO, PR) == [] and not github.check_runs
    assert not (tmp_path / "step_summary.md").exists()


def test_the_plugin_stops_on_a_broken_team_template_before_any_test(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_nothing():\n    pass\n")
    folder = pytester.path / "team-templates"
    folder.mkdir()
    (folder / "note.md.j2").write_text("> {{ note|md(400) }\n")
    pytester.makepyprojecttoml('[tool.perfgate]\ntemplates = "team-templates"\n')
    result = pytester.runpytest_subprocess("--perfgate", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.errlines if "note.md.j2" in line]
    assert errors and f"{folder / 'note.md.j2'}:1: template syntax error" in errors[0], result.errlines
    assert "Traceback" not in result.stderr.str() and "test_nothing" not in result.stdout.str()


def test_the_documented_example_renders(tmp_path: Path) -> None:
    """docs/reports.md's ``note.md.j2``, as the page shows it."""
    page = (REPO / "docs" / "reports.md").read_text()
    example = page.split("```jinja\n", 1)[1].split("```", 1)[0]
    project(tmp_path, **{"note.md.j2": example})
    markdown = render_markdown(hostile_report(True), templates=tmp_path / "team-templates")
    assert "\n\n> [!WARNING]\n> " in markdown and "([runbook](https://wiki.example.com/perf-runbook))" in markdown
    assert "<img" not in markdown


def test_the_page_lists_every_template_a_team_can_replace() -> None:
    """docs/reports.md's table of templates has a row for each of perfgate's templates, and no other."""
    import perfgate.render

    shipped = {path.name for path in (Path(perfgate.render.__file__).parent / "templates").glob("*.j2")}
    page = (REPO / "docs" / "reports.md").read_text(encoding="utf-8")
    rows = {line.split("`")[1] for line in page.splitlines() if line.startswith("| `") and ".j2` |" in line}
    assert rows == shipped


def test_the_plugin_says_in_one_line_when_a_team_template_fails_on_the_report(pytester: pytest.Pytester) -> None:
    """A template that compiles but names what it is not given fails when the session report is written: one
    line in the perfgate section, no .md file, no traceback."""
    pytester.makepyfile("def test_nothing():\n    pass\n")
    folder = pytester.path / "team-templates"
    folder.mkdir()
    (folder / "headline.md.j2").write_text("### {{ verdict_icon }}\n{{ no_such_name }}\n")
    pytester.makepyprojecttoml('[tool.perfgate]\ntemplates = "team-templates"\n')
    result = pytester.runpytest_subprocess("--perfgate", "-p", "no:cacheprovider")
    errors = [line for line in result.outlines if "headline.md.j2" in line]
    assert errors == [f"perfgate: error: {folder / 'headline.md.j2'}:2: template error: 'no_such_name' is undefined "
                      "(fix the template, or remove it from the templates folder to use perfgate's)"], result.outlines
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
    assert not (pytester.path / "perfgate-report.md").exists()
    assert (pytester.path / "perfgate-report.json").is_file() and (pytester.path / "perfgate-report.html").is_file()


def test_a_team_html_page_is_autoescaped_and_gets_every_row(tmp_path: Path) -> None:
    page = (SHIPPED / "page.html.j2").read_text().replace("<body>\n", '<body>\n<div class="team">{{ devices|join(", ") }}</div>\n')
    project(tmp_path, **{"page.html.j2": page})
    report = hostile_report(True)
    ours, theirs = render_html(report), render_html(report, templates=tmp_path / "team-templates")
    team = f'<div class="team">{html_text(", ".join(report_devices(report)))}</div>\n'
    assert "<img" not in team and "&lt;img" in team
    assert team in theirs and theirs.replace(team, "", 1) == ours


def test_a_team_html_page_without_the_rows_is_one_line_exit_2(tmp_path: Path) -> None:
    page = (SHIPPED / "page.html.j2").read_text().replace("{{ rows }}", "")
    project(tmp_path, **{"page.html.j2": page})
    output = tmp_path / "report.html"
    done = run_perfgate("compare", *PAIR, "-o", output, cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "page.html.j2: the page must write {{ rows }}" in done.stderr and "Traceback" not in done.stderr
    assert not output.exists() and not list(tmp_path.glob(".perfgate-*"))


def test_the_check_run_summary_says_how_many_regressions_are_annotated() -> None:
    """More regressions than a check run takes annotations: the summary says how many of them it shows."""
    many = make_report([launch(f"k{i}", test=f"t.py::test_{i}", path="t.py", line=i + 1)
                        for i in range(MAX_ANNOTATIONS + 2)])
    create, updates = check_run_requests(many, "", name="perfgate", head_sha="0" * 40)
    summary = create["output"]["summary"]
    assert f"\n\n{MAX_ANNOTATIONS} of {MAX_ANNOTATIONS + 2} regressions annotated on the test files.\n\n" in summary
    assert len(updates) == MAX_ANNOTATIONS // 50 - 1
    one = make_report([launch("k", test="t.py::test", path="t.py", line=3)])
    assert "\n\n1 regression annotated on the test files.\n\n" in check_summary(one, None, 1, 1)
    assert "annotated" not in check_summary(make_report([launch("k", status="unchanged")]), None, 0, 0)


def test_the_check_run_says_the_headline_once() -> None:
    """GitHub shows the title (the headline), then the summary, then the text: the summary gives the verdict and the
    annotations, the text the report without the heading that would repeat the title."""
    report = make_report([launch("k", test="t.py::test", path="t.py", line=3), launch("j", status="unchanged")])
    markdown = render_markdown(report)
    create, _ = check_run_requests(report, markdown, name="perfgate", head_sha="0" * 40)
    output = create["output"]
    assert output["title"] == "1 regression in 2 compared" and markdown.startswith("### ❌ perfgate: 1 regression")
    assert output["summary"].startswith("**FAIL**\n\n1 regression annotated") and "compared" not in output["summary"]
    assert output["title"] not in output["text"] and output["text"] == markdown.split("\n", 2)[2]


def test_a_team_check_summary_template_replaces_perfgates(tmp_path: Path) -> None:
    project(tmp_path, **{"check_summary.md.j2": "{{ verdict }} / {{ headline|md(400) }} / {{ annotated }}\n"})
    report = make_report([launch("k<img>", test="t.py::test", path="t.py", line=3)])
    assert check_summary(report, None, 1, 1, tmp_path / "team-templates") == \
        "FAIL / 1 regression in 1 compared / 1"


def test_a_team_kernel_view_lays_out_the_kernel_table_and_sections_escaped(tmp_path: Path) -> None:
    kernels = (SHIPPED / "kernels.html.j2").read_text()
    team = kernels.replace('<td class="why">{{ lines(row.why) }}</td></tr>',
                           '<td class="why">{{ lines(row.why) }}</td><td class="team">{{ row.name }}</td></tr>')
    team = team.replace("<h4>Gated metrics against their limits</h4>", "<h4>Against the limits</h4>")
    assert team.count('class="team"') == 1 and "Against the limits" in team
    project(tmp_path, **{"kernels.html.j2": team})
    report = hostile_report(True)
    ours, theirs = render_html(report), render_html(report, templates=tmp_path / "team-templates")
    cells = [part.split("</td>", 1)[0] for part in theirs.split('<td class="team">')[1:]]
    assert cells and all("<" not in cell for cell in cells)  # the kernels' names, escaped
    assert ours.count("Gated metrics against their limits") == theirs.count("Against the limits") > 0


def test_a_team_kernel_view_without_a_macro_is_one_line_exit_2(tmp_path: Path) -> None:
    kernels = (SHIPPED / "kernels.html.j2").read_text().replace("{% macro table_row(row) -%}",
                                                                "{% macro table_line(row) -%}")
    project(tmp_path, **{"kernels.html.j2": kernels})
    output = tmp_path / "report.html"
    done = run_perfgate("compare", *PAIR, "-o", output, cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "kernels.html.j2: the template must define the macro 'table_row'" in done.stderr
    assert not output.exists()


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_compare_checks_every_team_template_even_one_it_would_not_render(tmp_path: Path, fmt: str) -> None:
    project(tmp_path, **{"check_summary.md.j2": "{% if %}\n"})  # publish's only: no compare renders it
    done = run_perfgate("compare", *PAIR, "--format", fmt, cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "check_summary.md.j2:1: template syntax error" in done.stderr and not done.stdout
