"""Publishing a report to GitHub: a sticky PR comment, a check run, the job summary.

``perfgate publish REPORT.json`` (see :mod:`perfgate.cli.publish` and :mod:`perfgate.publish.publisher`). The modules split
computing from I/O: ``context`` resolves where to publish from the environment and event
payload, ``body`` builds every text and request payload, ``summary`` and ``github`` are the
only ones that write a file or touch the network.

Exit statuses of ``publish``: 0 published (or nothing to publish) whatever the verdict;
1 only with ``--fail-on-regression`` and a failing report; 2 unusable report or usage;
3 publishing failed (GitHub refused or was unreachable, or the job summary could not be written).
"""

from __future__ import annotations

EXIT_PUBLISH_FAILED = 3

__all__ = ["EXIT_PUBLISH_FAILED"]

DEFAULT_API_URL = "https://api.github.com"
