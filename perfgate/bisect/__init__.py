"""``perfgate bisect``: the first bad commit of a regression, found by running a test on commits in temporary git
worktrees. ``search`` is the search (no I/O), ``measure`` a commit built, run and judged, ``run`` a whole
bisection, ``step`` one step of ``git bisect run``."""
