"""The PNG of a run: one panel per comparison, median wall time per variant (CPU beside it).

matplotlib is optional (``pip install .[bench]``); without it the plot is skipped with a message
and the JSON still holds every figure.
"""

from __future__ import annotations

import importlib.util
from typing import Any

MISSING = "plot skipped: matplotlib is not installed (pip install '.[bench]' installs it)"


def available() -> bool:
    return importlib.util.find_spec("matplotlib") is not None


def write_png(report: dict[str, Any], path: str) -> bool:
    """Draw ``report`` (the JSON document) to ``path``; False (and a message) without matplotlib."""
    if not available():
        print(MISSING)
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [(name, c) for name, s in report["scenarios"].items() for c in s["comparisons"]]
    if not panels:
        print("plot skipped: no comparisons were measured")
        return False
    cols = 2
    rows = -(-len(panels) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(13, 2.2 * rows + 0.6), squeeze=False)
    for ax, (scenario, c) in zip(axes.flat, panels):
        names = list(c["variants"])
        walls = [c["variants"][n]["median_wall"] for n in names]
        cpus = [c["variants"][n]["median_cpu"] for n in names]
        y = range(len(names))
        ax.barh([i + 0.2 for i in y], walls, height=0.4, label="wall (median)", color="#3a6ea5")
        ax.barh([i - 0.2 for i in y], [x if x == x else 0 for x in cpus], height=0.4, label="CPU (median)",
                color="#c0c0c0")
        ax.set_yticks(list(y), [n[:44] for n in names], fontsize=7)
        ax.invert_yaxis()
        ratio = ", ".join(f"{k} {v:.2f}" for k, v in c["ratio"].items())
        ax.set_title(f"{scenario}: {c['name']}\nratio {ratio}" + (f" (target {c['target']})" if c["target"] else ""),
                     fontsize=8)
        ax.tick_params(axis="x", labelsize=7)
        ax.set_xlabel("seconds", fontsize=7)
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=7)
    fig.suptitle(f"python -m bench {report['command']}  (load {report['load_before']} -> {report['load_after']})",
                 fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return True
