"""Nsight Compute's own rule findings of a launch, as short labels perfgate can compare.

A ``.ncu-rep`` profiled with sections (ncu's default set, ``--set full``, ``--section ...``) carries the
results of Nsight Compute's rules (NvRules): the "Bottleneck", "Uncoalesced Global Accesses", "Long
Scoreboard Stalls" advice its UI shows. ``ncu_report`` exposes them as ``action.rule_results_as_dicts()``:
each has a ``name``, a ``rule_message`` with a ``title``, a ``message`` and a ``type`` (0 none, 1 ok/info,
2 optimization, 3 warning, 4 error), and an estimated speedup. A finding, for perfgate, is a message of
type optimization or warning-or-worse that is about the kernel (not "metric could not be found"): its label is
the rule's name and, when it has one, the message's title (``Bottleneck: Latency Issue``).

A report profiled with ``--metrics`` only (what ``pytest --perfgate`` runs) carries no rule results: ncu
runs rules only for the sections it collects.
"""

from __future__ import annotations

from typing import Any

_FINDING_TYPES = (2,)  # optimization advice; 3 (warning) is about the profile itself ("could not be found")
MAX_LABEL = 200


def finding_labels(results: Any) -> list[str]:
    """Labels of the findings among ``rule_results_as_dicts()``'s entries, in order, each once."""
    labels: list[str] = []
    for result in results if isinstance(results, list) else []:
        if not isinstance(result, dict):
            continue
        message = result.get("rule_message")
        if not isinstance(message, dict) or message.get("type") not in _FINDING_TYPES:
            continue
        name = str(result.get("name") or result.get("rule_identifier") or "").strip()
        title = str(message.get("title") or "").strip()
        label = f"{name}: {title}" if name and title and title != name else (title or name)
        label = " ".join(label.split())[:MAX_LABEL]
        if label and label not in labels:
            labels.append(label)
    return labels


def action_findings(action: Any) -> list[str] | None:
    """The findings of one launch; None when this ``ncu_report`` cannot give rule results."""
    reader = getattr(action, "rule_results_as_dicts", None)
    if reader is None:
        return None
    try:
        return finding_labels(reader())
    except Exception:  # an older ncu_report, or a report whose rule data it cannot read: not known
        return None
