"""rl_systems.png (given): Parts 1-3 in one figure, from the numbers run.py computed.

Top row: the memory bill and the scheduling experiment. Bottom row: the mismatch
experiment (Task 3c's masked schemes on it, once done). A part whose task is not
implemented yet is drawn as a labelled placeholder panel.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from experiments import part1_memory, part2_scheduling, part3_mismatch
from experiments.plotting import placeholder

if TYPE_CHECKING:  # (matplotlib is imported only to draw)
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

# Panel titles, left to right, per part (also on a part's placeholder panels).
TITLES = {
    "memory": ["Model state of a 7B model"],
    "scheduling": ["Throughput, and lanes busy", "Price: policy lag", "Lag distribution at k = 1"],
    "mismatch": [
        "Bias vs mismatch",
        "Noise vs mismatch",
        "Total error vs mismatch",
        "Bigger batches cut noise, not bias",
    ],
}


def draw(results: dict[str, Any], path: Path) -> None:
    """Save the 2 x 4 figure for `results` (the dict run.py writes as JSON) to `path`."""
    # 90 dpi: the saved figure costs half as much and reads the same on a screen.
    figure(results).savefig(path, dpi=90, pil_kwargs={"compress_level": 1})  # fast, bigger


def figure(results: dict[str, Any]) -> Figure:
    """The 2 x 4 figure for `results` (the dict run.py writes as JSON)."""
    import matplotlib
    from matplotlib.figure import Figure

    matplotlib.rcParams.update(
        {
            "font.size": 10,
            "axes.titlesize": 11,
            "axes.grid": True,
            "grid.alpha": 0.3,
            "axes.titley": 1.0,
        }
    )  # fixed: finding room above ticks is slow
    height = 9
    fig = Figure(figsize=(18, height))
    axes = fig.subplots(2, 4)
    # Fixed margins (in inches, whatever the height) instead of tight_layout, which lays
    # out every label a second time. Set first: the line labels measure their panels.
    fig.subplots_adjust(
        left=0.045, right=0.99, bottom=0.75 / height, top=1 - 0.75 / height, wspace=0.3, hspace=0.42
    )
    top, bottom = axes[:2]
    parts: list[tuple[ModuleType, list[Axes], Callable[..., None]]] = [
        (part1_memory, [top[0]], part1_memory.panel),
        (part2_scheduling, top[1:], part2_scheduling.panels),
        (part3_mismatch, bottom, part3_mismatch.panels),
    ]
    for part, panels, draw_part in parts:
        if results[part.KEY] is None:
            for ax in panels:
                placeholder(ax, results["unavailable"][part.LABEL])
        elif part is part3_mismatch:
            draw_part(results[part.KEY], *panels, masking=results.get("masking"))
        else:
            draw_part(results[part.KEY], *panels)
        for ax, title in zip(panels, TITLES[part.KEY]):
            ax.set_title(f"{title} (Task {part.TASK})")
    for ax in fig.axes:
        ax.minorticks_off()  # a log axis has dozens of unlabelled ticks: slow to draw, no help
    fig.suptitle(f"RL systems on a laptop. Code under test: {results['code']}", fontsize=13)
    return fig
