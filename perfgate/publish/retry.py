"""When to try a GitHub request again, and how long to wait first: a pure decision, no I/O.

GitHub's REST docs (rate limits, API version 2022-11-28): a rate-limited request gets 403 or 429; honour
``retry-after`` when present, else wait until ``x-ratelimit-reset`` (UTC epoch seconds) when
``x-ratelimit-remaining`` is 0, else wait at least one minute. What a server (or a proxy, or a skewed
clock) sends can be anything: ``Retry-After: 0``, a negative number, ``nan``, a date in the past, a reset
in the past, ``1e308``. So every wait is bounded below (no back-to-back retries), every backoff is
capped and jittered (clients that failed together do not retry together), waits are bounded above (a
wait past the deadline gives up at once) and so is the number of attempts.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from email.utils import parsedate_to_datetime

RETRY_STATUSES = frozenset({500, 502, 503, 504})
MIN_BACKOFF = 0.05  # seconds: the least wait before any retry, whatever --retry-backoff says
RATE_LIMIT_FLOOR = 1.0  # seconds: a rate limit that says "now" (0, negative, the past) still waits this
LONGEST_WAIT = 86_400.0  # seconds: a longer wait read from a header is taken as this (it gives up anyway)


@dataclass(frozen=True)
class RetryPolicy:
    max_time: float = 60.0  # seconds for all requests of one publish, waits included
    backoff: float = 0.5  # first wait after a 5xx or a network error; doubles on each retry
    max_backoff: float = 8.0
    secondary_wait: float = 60.0  # rate limited with no retry-after / reset: GitHub asks for >= 1 minute
    max_attempts: int = 12  # tries of one request, the first included
    jitter: float = 0.2  # a backoff is shortened by up to this fraction, at random


def _lower(headers: Mapping[str, str]) -> dict[str, str]:
    return {str(k).lower(): str(v) for k, v in headers.items()}


def _finite(value: float) -> float | None:
    return min(value, LONGEST_WAIT) if math.isfinite(value) or value == math.inf else None


def parse_retry_after(value: str | None, now: float) -> float | None:
    """``Retry-After`` as seconds from ``now`` (wall clock): delta-seconds or an HTTP date; None when it is
    neither (``nan`` included). Negative and past values come back as they are, huge ones as a day."""
    if value is None:
        return None
    value = value.strip()
    try:
        return _finite(float(value))
    except ValueError:
        pass
    try:
        return _finite(parsedate_to_datetime(value).timestamp() - now)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None


def is_rate_limited(status: int | None, headers: Mapping[str, str], message: str = "") -> bool:
    """A 403 is a rate limit only when the headers or message say so; otherwise it is a permission."""
    if status == 429:
        return True
    if status != 403:
        return False
    lowered = _lower(headers)
    return ("retry-after" in lowered or lowered.get("x-ratelimit-remaining") == "0"
            or "rate limit" in message.lower())


def backoff(attempt: int, policy: RetryPolicy, jitter: float = 0.0) -> float:
    """The capped exponential wait after ``attempt`` failed tries, shortened by ``jitter`` (0 to 1) of
    ``policy.jitter``; never under :data:`MIN_BACKOFF`."""
    first = max(policy.backoff, MIN_BACKOFF)
    wait = min(first * 2.0 ** min(max(attempt - 1, 0), 32), max(policy.max_backoff, first))
    return max(wait * (1.0 - policy.jitter * min(max(jitter, 0.0), 1.0)), MIN_BACKOFF)


def retry_delay(status: int | None, headers: Mapping[str, str], attempt: int, *, now: float,
                policy: RetryPolicy = RetryPolicy(), message: str = "", jitter: float = 0.0) -> float | None:
    """Seconds to wait before trying again, or None when retrying cannot help (or ``attempt`` reached
    ``policy.max_attempts``).

    ``status`` None means no response (connection error or timeout); ``attempt`` counts the failed
    tries so far (1 after the first); ``now`` is the wall clock, for ``x-ratelimit-reset``; ``jitter``
    is a random number in [0, 1) (0: no jitter).
    """
    if attempt >= policy.max_attempts:
        return None
    waited = backoff(attempt, policy, jitter)
    if status is None or status in RETRY_STATUSES:
        return waited
    if not is_rate_limited(status, headers, message):
        return None
    floor = max(waited, RATE_LIMIT_FLOOR)
    lowered = _lower(headers)
    after = parse_retry_after(lowered.get("retry-after"), now)
    if after is not None:
        return max(after, floor)
    if lowered.get("x-ratelimit-remaining") == "0":
        try:
            reset = float(lowered["x-ratelimit-reset"])
        except (KeyError, ValueError):
            reset = math.nan
        if math.isfinite(reset) or reset == math.inf:
            return max(min(reset - now, LONGEST_WAIT), floor)
    return max(policy.secondary_wait, floor)


__all__ = ["LONGEST_WAIT", "MIN_BACKOFF", "RATE_LIMIT_FLOOR", "RETRY_STATUSES", "RetryPolicy", "backoff",
           "is_rate_limited", "parse_retry_after", "retry_delay"]
