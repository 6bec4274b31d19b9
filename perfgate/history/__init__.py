"""perfgate's memory of every run: a history store, change points, noise learned from history, accepted
regressions and a trend dashboard.

``db`` opens a history (``sqlite:///path`` or ``postgresql://...``) and migrates its schema, ``record``
writes the current side of perfgate's JSON reports into it, ``series`` reads a branch's series back,
``changes`` finds change points (E-divisive means with a t-test, as Apache Otava/Hunter), ``noise`` sizes
thresholds from a series' observed spread, ``accept`` keeps who accepted which change and why, and
``dashboard`` writes the static trend site. ``command`` holds the command-line parsers.

Plain SQL, not SQLAlchemy: four small tables and a dozen statements run unchanged on SQLite and PostgreSQL
(only the identity column differs), and the stdlib ``sqlite3`` default needs no dependency at all.
"""
