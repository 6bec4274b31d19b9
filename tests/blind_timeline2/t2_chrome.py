"""Edits of a real Kineto/Chrome trace (a list of events), each a change a program could have made to what it
recorded: a host stall, slower kernels, more or fewer launches, ranges dropped or renamed, interference."""
from __future__ import annotations

import copy
import gzip
import json
import math
import random
from pathlib import Path
from typing import Any

Event = dict[str, Any]
GPU_CATS = {"kernel", "Kernel", "gpu_memcpy", "Memcpy", "gpu_memset", "Memset"}
KERNEL_CATS = {"kernel", "Kernel"}
LAUNCH_CATS = {"cuda_runtime", "cuda_driver", "Runtime"}
RANGE_CATS = {"user_annotation"}
OLD_SCHEMA = {"kernel": "Kernel", "gpu_memcpy": "Memcpy", "gpu_memset": "Memset", "cuda_runtime": "Runtime",
              "cuda_driver": "Runtime", "cpu_op": "Operator", "user_annotation": "Operator"}


def load(path: Path) -> dict[str, Any]:
    opener: Any = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as f:
        doc = json.load(f)
    return doc if isinstance(doc, dict) else {"traceEvents": doc}


def write(doc: dict[str, Any], path: Path) -> None:
    text = json.dumps(doc, separators=(",", ":"))
    if path.suffix == ".gz":
        path.write_bytes(gzip.compress(text.encode(), compresslevel=1))
    else:
        path.write_text(text)


def resolution(events: list[Event]) -> float:
    """1 µs where every GPU op's time is a whole microsecond (older Kineto), else 1 ns."""
    ops = [e for e in events if e.get("cat") in GPU_CATS]
    whole = all(float(e["ts"]).is_integer() and float(e.get("dur", 0)).is_integer() for e in ops)
    return 1.0 if whole else 0.001


def _round(x: float, res: float) -> float:
    return float(round(x)) if res == 1.0 else round(x, 3)


def _corr(e: Event) -> Any:
    return e.get("args", {}).get("correlation")


def launches(events: list[Event]) -> dict[Any, Event]:
    return {_corr(e): e for e in events if e.get("cat") in LAUNCH_CATS and e.get("ph") == "X" and _corr(e) is not None}


def gpu_ops(events: list[Event]) -> list[Event]:
    return [e for e in events if e.get("cat") in GPU_CATS and e.get("ph") == "X"]


def reflow(events: list[Event], new_dur: dict[int, float]) -> None:
    """Give the chosen ops (by id) their new durations; on each stream the delay an op's end gains pushes the ops
    queued behind it, and idle time on the stream absorbs it (the GPU ran them back to back only where it did)."""
    res = resolution(events)
    streams: dict[Any, list[Event]] = {}
    for e in gpu_ops(events):
        streams.setdefault((e.get("args", {}).get("device"), e.get("args", {}).get("stream")), []).append(e)
    for ops in streams.values():
        carry, prev_end = 0.0, -math.inf
        for e in sorted(ops, key=lambda e: e["ts"]):
            start, end = e["ts"], e["ts"] + e["dur"]
            shift = max(0.0, carry - max(0.0, start - prev_end))
            e["ts"] = _round(start + shift, res)
            e["dur"] = new_dur.get(id(e), e["dur"])
            carry = e["ts"] + e["dur"] - end
            prev_end = max(prev_end, end)


def ranges(events: list[Event], prefix: str) -> list[Event]:
    return sorted((e for e in events if e.get("cat") in RANGE_CATS and e.get("ph") == "X"
                   and str(e.get("name", "")).startswith(prefix)), key=lambda e: e["ts"])


def jitter(events: list[Event], rng: random.Random, sigma: float) -> None:
    """A re-run: each GPU op's duration off by a relative error (sd sigma, at most 3 sd), at the file's resolution."""
    res = resolution(events)
    new_dur = {}
    for e in gpu_ops(events):
        if e.get("dur", 0) <= 0:
            continue
        err = max(-3 * sigma, min(3 * sigma, rng.gauss(0.0, sigma)))
        new_dur[id(e)] = max(res, _round(e["dur"] * (1 + err), res))
    reflow(events, new_dur)


def insert_host_time(events: list[Event], at: float, amount: float) -> None:
    """The host stops for ``amount`` µs at ``at``: host events after it move, those around it grow; GPU work whose
    launch call ends after it moves with its launch (it is queued as the call returns), the rest stays where it ran."""
    by_corr = launches(events)
    for e in events:
        if "ts" not in e:
            continue
        if e.get("cat") in GPU_CATS:
            launch = by_corr.get(_corr(e))
            moved = launch["ts"] + launch.get("dur", 0) > at if launch is not None else e["ts"] >= at
            if moved:
                e["ts"] += amount
        elif e["ts"] >= at:
            e["ts"] += amount
        elif e.get("ph") == "X" and e["ts"] + e.get("dur", 0) > at:
            e["dur"] += amount


def first_launch_in(events: list[Event], rng_event: Event) -> Event | None:
    """The earliest launch call on the range's thread, inside it, that owns GPU work."""
    owned = {_corr(e) for e in gpu_ops(events)}
    end = rng_event["ts"] + rng_event["dur"]
    inside = [e for e in launches(events).values() if e["tid"] == rng_event["tid"] and e["pid"] == rng_event["pid"]
              and rng_event["ts"] <= e["ts"] <= end and _corr(e) in owned]
    return min(inside, key=lambda e: e["ts"]) if inside else None


def stall(events: list[Event], prefix: str, entries: list[int] | None, at: str, amount_us: float) -> None:
    """A host stall in each chosen entry of a range: before its first launch call, inside its end, or inside its
    first launch call (``at``: first_launch, range_end, inside_first_launch)."""
    res = resolution(events)
    points = []
    for i, r in enumerate(ranges(events, prefix)):
        if entries is not None and i not in entries:
            continue
        if at == "range_end":
            points.append(r["ts"] + r["dur"] - res / 2)
            continue
        launch = first_launch_in(events, r)
        assert launch is not None, f"no launch in {prefix} #{i}"
        points.append(launch["ts"] if at == "first_launch" else launch["ts"] + res / 2)
    for p in sorted(points, reverse=True):
        insert_host_time(events, p, amount_us)


def stall_before_launch(events: list[Event], index: int, amount_us: float) -> None:
    """A host stall just before the index-th launch call that owns GPU work (a trace without ranges)."""
    owned = {_corr(e) for e in gpu_ops(events)}
    calls = sorted((e for e in launches(events).values() if _corr(e) in owned), key=lambda e: e["ts"])
    insert_host_time(events, calls[index]["ts"], amount_us)


def _within(events: list[Event], op: Event, prefix: str | None) -> bool:
    if prefix is None:
        return True
    launch = launches(events).get(_corr(op))
    return launch is not None and any(r["ts"] <= launch["ts"] <= r["ts"] + r["dur"] for r in ranges(events, prefix))


def stretch(events: list[Event], name: str, factor: float = 0.0, add_us: float = 0.0, prefix: str | None = None,
            only: int | None = None) -> int:
    """Kernels whose name holds ``name`` last longer (by factor and/or add_us); GPU work that started after each
    ends moves by as much. ``only``: just the only-th such launch. Returns how many were stretched."""
    res = resolution(events)
    chosen = sorted((e for e in gpu_ops(events) if e.get("cat") in KERNEL_CATS and name in e["name"]
                     and _within(events, e, prefix)), key=lambda e: e["ts"])
    if only is not None:
        chosen = [chosen[only]]
    reflow(events, {id(e): max(res, _round(e["dur"] * (1 + factor) + add_us, res)) for e in chosen})
    return len(chosen)


def _next_corr(events: list[Event]) -> int:
    return max(int(c) for c in (_corr(e) for e in events) if isinstance(c, int)) + 1


def insert_launches(events: list[Event], name: str, prefix: str, total_us: float) -> None:
    """In each entry of the range, after the last launch of the kernel there, as many more launches of it as make
    ``total_us`` of GPU time: the host spends each launch call's time again, the GPU runs the copies back to back."""
    for r in reversed(ranges(events, prefix)):
        by_corr = launches(events)
        mine = [e for e in gpu_ops(events) if name in e["name"] and e.get("cat") in KERNEL_CATS
                and by_corr.get(_corr(e)) is not None and r["ts"] <= by_corr[_corr(e)]["ts"] <= r["ts"] + r["dur"]
                and by_corr[_corr(e)]["tid"] == r["tid"]]
        assert mine, f"no {name} in {prefix}"
        kernel = max(mine, key=lambda e: by_corr[_corr(e)]["ts"])
        call = by_corr[_corr(kernel)]
        count = max(1, math.ceil(total_us / kernel["dur"]))
        after = call["ts"] + call["dur"]
        insert_host_time(events, after, call["dur"] * count)
        reflow(events, {id(kernel): kernel["dur"] * (count + 1)})
        kernel["dur"] /= count + 1
        gpu_end = kernel["ts"] + kernel["dur"]
        corr = _next_corr(events)
        for j in range(count):
            new_call, new_kernel = copy.deepcopy(call), copy.deepcopy(kernel)
            new_call["ts"] = after + j * call["dur"]
            new_kernel["ts"] = gpu_end + j * kernel["dur"]
            for e in (new_call, new_kernel):
                e["args"]["correlation"] = corr + j
                for key in ("External id", "external id"):
                    e["args"].pop(key, None)
            events.extend([new_call, new_kernel])


def remove_launch(events: list[Event], name: str, index: int) -> None:
    """The index-th launch of a kernel (by start) is gone: its kernel and its launch call."""
    chosen = sorted((e for e in gpu_ops(events) if name in e["name"] and e.get("cat") in KERNEL_CATS),
                    key=lambda e: e["ts"])[index]
    corr = _corr(chosen)
    events[:] = [e for e in events if not (e is chosen or (e.get("cat") in LAUNCH_CATS and _corr(e) == corr))]


def drop_range(events: list[Event], name: str) -> None:
    events[:] = [e for e in events if not (e.get("cat") in RANGE_CATS | {"gpu_user_annotation"} and e["name"] == name)]


def rename_range(events: list[Event], name: str, new: str) -> None:
    for e in events:
        if e.get("cat") in RANGE_CATS | {"gpu_user_annotation"} and e["name"] == name:
            e["name"] = new


def strip_ranges(events: list[Event]) -> None:
    events[:] = [e for e in events if e.get("cat") not in RANGE_CATS | {"gpu_user_annotation"}]


def old_schema(events: list[Event]) -> None:
    """The categories older Kineto wrote (record_function ranges and ProfilerStep as ``Operator``)."""
    events[:] = [e for e in events if e.get("cat") != "gpu_user_annotation"]
    for e in events:
        if e.get("cat") in OLD_SCHEMA:
            e["cat"] = OLD_SCHEMA[e["cat"]]


def interfere(events: list[Event], prefix: str, entry: int, dur_us: float) -> None:
    """Another process's kernel (no launch call in this trace) on a stream of its own, starting where the entry's
    first kernel starts."""
    r = ranges(events, prefix)[entry]
    launch = first_launch_in(events, r)
    assert launch is not None
    op = next(e for e in gpu_ops(events) if _corr(e) == _corr(launch))
    other = copy.deepcopy(op)
    other.update({"name": "interfering_kernel_of_another_process", "ts": op["ts"], "dur": dur_us})
    other["args"] = {**op["args"], "correlation": _next_corr(events), "stream": 4242}
    for key in ("External id", "external id"):
        other["args"].pop(key, None)
    events.append(other)
