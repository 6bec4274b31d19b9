"""Issue 33, "Done when": PostgreSQL histories fuzzed. A seeded slice of the campaign in ``helpers.pg_fuzz``
(``python tests/helpers/pg_fuzz.py`` runs all of it, docs/security.md has its figures), and the findings it made,
each fixed and pinned here. Against the real server (PERFGATE_TEST_POSTGRES_URL); skipped without one.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest
from helpers import pg_fuzz
from helpers.history import postgres_server_url

SLICE_SEED = 33
SLICE_COMMANDS = ("changes-json", "compare", "publish", "record")


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, pg_fuzz.Inputs, dict[str, pg_fuzz.Ran]]]:
    server = postgres_server_url()
    with pg_fuzz.campaign(server, tmp_path_factory.mktemp("pgfuzz"), SLICE_COMMANDS) as (base, inputs, clean):
        yield server, base, inputs, clean


def _slice() -> list[pg_fuzz.Case]:
    """One case of each family, drawn with a fixed seed: the same inputs every run."""
    draw = random.Random(SLICE_SEED)
    return [draw.choice(make()) for name, make in pg_fuzz.FAMILIES.items() if name not in ("locks", "dropped connection")]


@pytest.mark.parametrize("case", _slice(), ids=lambda case: f"{case.family}: {case.name[:40]}")
def test_a_seeded_slice_of_the_campaign_finds_nothing(case: pg_fuzz.Case, fuzzed: tuple[str, str, pg_fuzz.Inputs,
                                                                                        dict[str, pg_fuzz.Ran]]) -> None:
    server, base, inputs, clean = fuzzed
    tally = pg_fuzz.Tally()
    pg_fuzz.run_case(server, base, case, inputs, clean, tally, SLICE_COMMANDS)
    assert not tally.details, "\n".join(tally.details)


def _damaged_copy(server: str, base: str, sql: str) -> Iterator[str]:
    name = f"pgfuzz_fix_{random.randrange(1 << 40):x}"
    pg_fuzz.create_database(server, name, template=base)
    try:
        pg_fuzz.execute(pg_fuzz.plain_url(server, name), sql)
        yield pg_fuzz.with_password(server, name)
    finally:
        pg_fuzz.drop_database(server, name)


def test_values_near_a_double_s_limit_are_compared_not_crashed_on(
        fuzzed: tuple[str, str, pg_fuzz.Inputs, dict[str, pg_fuzz.Ran]]) -> None:
    """Finding: every point at 1e308 (finite, a report may carry it): the learned threshold's median overflowed
    (ValueError, "please report it") and the reference's median was inf, every launch 'unchanged'."""
    server, base, inputs, _ = fuzzed
    for url in _damaged_copy(server, base, "UPDATE perfgate_points SET value = 1e308"):
        ran = pg_fuzz.run_main(["compare", str(inputs.current), "--history", url, "--format", "md"])
        assert ran.code == 0 and "please report it" not in ran.out and "RuntimeWarning" not in ran.out, ran.out
        assert "2 improvements" in ran.out, ran.out  # 1e308 -> 180 µs: faster, not the same


@pytest.mark.parametrize("table, column", [("perfgate_runs", "commit_sha"), ("perfgate_runs", "recorded_at"),
                                           ("perfgate_series", "kernel")])
def test_a_null_where_perfgate_writes_none_is_refused_in_one_line(
        table: str, column: str, fuzzed: tuple[str, str, pg_fuzz.Inputs, dict[str, pg_fuzz.Ran]]) -> None:
    """Finding: NOT NULL dropped by hand, then NULLs: history changes, the dashboard and compare --history met them
    as a TypeError ("please report it"). The column that lost its NOT NULL is refused, as any schema edit."""
    server, base, inputs, _ = fuzzed
    for url in _damaged_copy(server, base, f"ALTER TABLE {table} ALTER COLUMN {column} DROP NOT NULL; "
                                           f"UPDATE {table} SET {column} = NULL"):
        for argv in (["history", "changes", "--db", url], ["compare", str(inputs.current), "--history", url]):
            ran = pg_fuzz.run_main(argv)
            assert ran.code == 2 and ran.out.count("\n") == 1, ran.out
            assert f"a column on {table} perfgate did not create ('{column}')" in ran.out, ran.out
            assert pg_fuzz.SECRET not in ran.out


def test_change_cache_rows_deleted_by_hand_are_searched_again(
        fuzzed: tuple[str, str, pg_fuzz.Inputs, dict[str, pg_fuzz.Ran]]) -> None:
    """Finding: the change cache's rows deleted, its entry in perfgate_meta kept: history changes answered "[]" (no
    change point) from a cache that covered nothing. The rows' count of series is kept with the entry."""
    server, base, _, clean = fuzzed
    for url in _damaged_copy(server, base, "DELETE FROM perfgate_change_cache"):
        ran = pg_fuzz.run_main(["history", "changes", "--db", url, "--branch", "main", "--format", "json"])
        assert ran.code == 0 and ran.out == clean["changes-json"].out, ran.out


def test_compare_history_gives_up_on_a_lock_after_max_time(
        fuzzed: tuple[str, str, pg_fuzz.Inputs, dict[str, pg_fuzz.Ran]]) -> None:
    """Finding: another connection holding perfgate_runs locked kept compare --history waiting 60 s (a hang: it had
    no --max-time). It takes --max-time as the history commands do, and stops in one line."""
    import psycopg

    server, base, inputs, _ = fuzzed
    for url in _damaged_copy(server, base, "SELECT 1"):
        with psycopg.connect(url) as holder:
            holder.execute("LOCK TABLE perfgate_runs IN ACCESS EXCLUSIVE MODE")
            ran = pg_fuzz.run_main(["compare", str(inputs.current), "--history", url, "--max-time", "1"])
        assert ran.code == 2 and "gave up waiting for the history database after 1 s" in ran.out, ran.out
        assert ran.seconds < 10 and pg_fuzz.SECRET not in ran.out, ran


def test_the_classifier_sees_each_kind_of_finding() -> None:
    """The campaign's zeros mean something: a run planted with each finding is classified as it."""
    clean = {"changes-json": pg_fuzz.Ran(0, "[]\n", 0.1)}
    planted = {
        "traceback": pg_fuzz.Ran(2, "perfgate: error: TypeError: x (... please report it)\n", 0.1),
        "hang": pg_fuzz.Ran(2, "perfgate: error: gave up\n", pg_fuzz.HANG_SECONDS + 1),
        "injection": pg_fuzz.Ran(0, "ok\n", 0.1, written="<td><script>alert(1)</script></td>"),
        "secret printed": pg_fuzz.Ran(2, f"perfgate: error: postgresql://u:{pg_fuzz.SECRET}@h/db\n", 0.1),
    }
    for kind, ran in planted.items():
        assert kind in [found for found, _ in pg_fuzz.findings_of(ran, "dashboard", "either", clean)], kind
    assert [kind for kind, _ in pg_fuzz.findings_of(pg_fuzz.Ran(0, "x\n##[error]forged\n", 0.1), "changes-text",
                                                    "either", clean)] == ["injection"]
    assert [kind for kind, _ in pg_fuzz.findings_of(pg_fuzz.Ran(0, "ok\n", 0.1), "compare", "refuse", clean)] == [
        "silent pass"]
    assert [kind for kind, _ in pg_fuzz.findings_of(pg_fuzz.Ran(0, "[1]\n", 0.1), "changes-json", "same changes",
                                                    clean)] == ["silent pass"]
