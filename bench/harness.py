"""The measuring core of ``python -m bench``: interleaved variants, medians, wall and CPU time.

A comparison runs its variants in turns (A B A B …) so that a busy phase of the shared machine
slows every variant alike, and reports per variant the median wall time and the median CPU time
(of the whole process, every thread: the steadier figure when other processes load the machine;
Spark comparisons pass a clock that also counts the JVM and its Python workers). The first
variant is compared with the last (the baseline) as a ratio of medians, wall and CPU side by side.
"""

from __future__ import annotations

import os
import statistics
import time
from dataclasses import dataclass, field
from typing import Any, Callable


@dataclass
class Variant:
    """One thing to time. ``setup`` (untimed) builds the input of one run from the round number,
    ``run`` is timed on it and may return a dict of metrics (bytes, peaks) kept beside the times,
    ``cleanup`` (untimed) disposes of it."""

    name: str
    run: Callable[[Any], Any]
    setup: Callable[[int], Any] | None = None
    cleanup: Callable[[Any], None] | None = None


@dataclass
class Comparison:
    """The outcome of one comparison, as written to the JSON file."""

    name: str
    variants: dict[str, dict[str, Any]]
    target: str = ""
    note: str = ""
    ratio: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "target": self.target, "note": self.note, "ratio": self.ratio,
                "baseline": list(self.variants)[-1], "variants": self.variants}


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def compare(name: str, variants: list[Variant], repeat: int, target: str = "", note: str = "",
            cpu_clock: Callable[[], float] = time.process_time) -> Comparison:
    """Run ``variants`` in turns ``repeat`` times; medians of wall and CPU seconds per variant,
    metrics of the last run, and the ratio of the first variant to the last."""
    walls: list[list[float]] = [[] for _ in variants]
    cpus: list[list[float]] = [[] for _ in variants]
    metrics: list[dict[str, Any]] = [{} for _ in variants]
    for round_ in range(repeat):
        order = range(len(variants)) if round_ % 2 == 0 else reversed(range(len(variants)))
        for i in order:  # (A B, then B A: neither always pays for the other's page-cache churn)
            variant = variants[i]
            arg = variant.setup(round_) if variant.setup else None
            cpu, start = cpu_clock(), time.perf_counter()
            out = variant.run(arg)
            walls[i].append(time.perf_counter() - start)
            cpus[i].append(cpu_clock() - cpu)
            if isinstance(out, dict):
                metrics[i] = out
            if variant.cleanup:
                variant.cleanup(arg)
    table = {v.name: {"wall": walls[i], "cpu": cpus[i], "median_wall": median(walls[i]),
                      "median_cpu": median(cpus[i]), "metrics": metrics[i]} for i, v in enumerate(variants)}
    result = Comparison(name, table, target, note)
    first, base = table[variants[0].name], table[variants[-1].name]
    result.ratio = {"wall": _ratio(first["median_wall"], base["median_wall"]),
                    "cpu": _ratio(first["median_cpu"], base["median_cpu"])}
    return result


def single(name: str, values: dict[str, dict[str, Any]], target: str = "", note: str = "",
           ratio: dict[str, float] | None = None) -> Comparison:
    """A comparison measured elsewhere (in subprocesses: cold start, peak memory), with the same
    JSON shape: ``values`` maps each variant to its ``wall`` and ``cpu`` lists (and metrics)."""
    table = {}
    for variant, v in values.items():
        table[variant] = {"wall": v.get("wall", []), "cpu": v.get("cpu", []), "median_wall": median(v.get("wall", [])),
                          "median_cpu": median(v.get("cpu", [])), "metrics": v.get("metrics", {})}
    result = Comparison(name, table, target, note)
    names = list(table)
    result.ratio = ratio if ratio is not None else {
        "wall": _ratio(table[names[0]]["median_wall"], table[names[-1]]["median_wall"]),
        "cpu": _ratio(table[names[0]]["median_cpu"], table[names[-1]]["median_cpu"])}
    return result


def _ratio(a: float, b: float) -> float:
    return a / b if b and b == b else float("nan")


def print_comparison(c: Comparison) -> None:
    """One line per variant (medians), then the ratio with its target."""
    print(f"  {c.name}" + (f"  [{c.note}]" if c.note else ""))
    for variant, v in c.variants.items():
        extra = ", ".join(f"{k}={_fmt(x)}" for k, x in v["metrics"].items())
        print(f"    {variant:<46} wall {v['median_wall']:8.4f}s  cpu {v['median_cpu']:8.4f}s"
              f"  (n={len(v['wall'])})" + (f"  {extra}" if extra else ""))
    target = f"   target {c.target}" if c.target else ""
    ratios = ", ".join(f"{k} {v:.3f}" for k, v in c.ratio.items())
    print(f"    ratio (first / last): {ratios}{target}")


def _fmt(x: Any) -> str:
    return f"{x:.4g}" if isinstance(x, float) else str(x)


def load_average() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]
