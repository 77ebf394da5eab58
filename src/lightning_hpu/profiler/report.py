"""The summary's tables: the heaviest operators of a profile, and the device's memory."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from torch.autograd.profiler_util import EventList

#: Names of ranges that are not operators: Lightning's actions and modules, and the profiler's step markers.
_RANGE_PREFIXES = ("[pl]", "ProfilerStep#")

_MIB = 2**20


@dataclass(frozen=True)
class OperatorCost:
    """Time spent in one operator over the recorded steps (microseconds)."""

    name: str
    calls: int
    self_cpu_us: float
    cpu_total_us: float
    self_device_us: float


def _is_range(name: str, is_user_annotation: bool | None) -> bool:
    return bool(is_user_annotation) or name.startswith(_RANGE_PREFIXES)


def heaviest_operators(events: EventList, limit: int = -1) -> list[OperatorCost]:
    """Operators (no user or Lightning ranges) by self device time when the device reports any, else self CPU time."""
    costs = [
        OperatorCost(
            name=avg.key,
            calls=avg.count,
            self_cpu_us=float(avg.self_cpu_time_total),
            cpu_total_us=float(avg.cpu_time_total),
            self_device_us=float(avg.self_device_time_total),
        )
        for avg in events.key_averages()
        if not _is_range(avg.key, avg.is_user_annotation)
    ]
    by_device = any(cost.self_device_us > 0 for cost in costs)
    costs.sort(key=lambda cost: cost.self_device_us if by_device else cost.self_cpu_us, reverse=True)
    return costs if limit < 0 else costs[:limit]


def _format_rows(header: tuple[str, ...], rows: Iterable[tuple[str, ...]]) -> str:
    lines = [header, *rows]
    widths = [max(len(line[col]) for line in lines) for col in range(len(header))]

    def render(line: tuple[str, ...]) -> str:
        first, *rest = line
        cells = (cell.rjust(width) for cell, width in zip(rest, widths[1:], strict=True))
        return "  ".join([first.ljust(widths[0]), *cells])

    rule = "-" * len(render(header))
    return "\n".join([rule, render(header), rule, *(render(line) for line in lines[1:]), rule])


def operator_table(costs: list[OperatorCost]) -> str:
    """A table of ``costs`` in their order, heaviest first, with each one's share of all operators' self time."""
    by_device = any(cost.self_device_us > 0 for cost in costs)
    total = sum(cost.self_device_us if by_device else cost.self_cpu_us for cost in costs) or 1.0
    header = ("Operator", "Calls", "Self CPU (ms)", "CPU total (ms)", "Self device (ms)", "Share")
    rows = (
        (
            cost.name,
            str(cost.calls),
            f"{cost.self_cpu_us / 1e3:.3f}",
            f"{cost.cpu_total_us / 1e3:.3f}",
            f"{cost.self_device_us / 1e3:.3f}",
            f"{100 * (cost.self_device_us if by_device else cost.self_cpu_us) / total:.1f}%",
        )
        for cost in costs
    )
    return _format_rows(header, rows)


def memory_table(stats: Mapping[str, int]) -> str:
    """The device memory the backend reports: limit, in use and peak in MiB, then the allocation counters."""
    sizes = ("Limit", "InUse", "MaxInUse", "MaxAllocSize")
    rows = [(key, f"{stats[key] / _MIB:.1f} MiB") for key in sizes if key in stats]
    rows += [(key, str(value)) for key, value in stats.items() if key not in sizes]
    return _format_rows(("Device memory", "Value"), rows)
