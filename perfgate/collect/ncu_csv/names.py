"""The NVTX region of a launch, from the leading columns (a kernel's names: ``perfgate.demangled``).

NVTX: with ``--nvtx`` both pages gain, after "Host Name", the columns
``"thread Domain:Push/Pop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg"`` and
``"Id:Domain:Start/Stop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg"`` (column list printed
from a real details export in a public analysis script). A push/pop cell is the thread id, then one
quoted entry per open range, outermost first:
``1  "<default domain>:forward:none:none:none:none:none:none"  "<default domain>:attn:none:..."``.
Public parsers of real exports treat a name as able to hold ``:``, so the name is everything
between the domain and the six trailing payload/colour/message fields. Start/stop ranges are not a
stack and are ignored. ``--print-nvtx-rename kernel`` instead *renames* "Kernel Name" to the
innermost range; nothing in the file says so, so such a file has range names as kernels.
"""

from __future__ import annotations

import re

from perfgate.vocabulary import REGION_SEPARATOR
from perfgate.vocabulary import NVTX_DOMAIN


def nvtx_region(cell: str) -> str:
    """The region string for one cell of ncu's NVTX push/pop column.

    Follows ``perfgate.collect.ncu_rep``: when ranges of the ``perfgate`` domain are open, the
    region is that domain's stack; otherwise every open range of every domain, in the order ncu
    lists them (outermost first), joined by ``" > "``. ``""`` when no range is open.
    """
    stacks: dict[str, list[str]] = {}
    for entry in re.findall(r'"([^"]*)"', cell):
        parts = entry.split(":")
        if len(parts) < 2:
            continue
        domain = parts[0]
        if len(parts) >= 8:
            # Domain : name : PL_Type : PL_Value : CLR_Type : Color : Msg_Type : Msg
            name = ":".join(parts[1:-6])
            if name in ("", "none") and parts[-1] not in ("", "none"):
                name = parts[-1]  # a range pushed with only a message attribute
        else:
            name = parts[1]
        if name:
            stacks.setdefault(domain, []).append(name)
    own = stacks.get(NVTX_DOMAIN)
    names = own if own else [name for names in stacks.values() for name in names]
    return REGION_SEPARATOR.join(names)
