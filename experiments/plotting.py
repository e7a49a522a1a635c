"""Plotting helpers that several experiments' figures share (given).

Each panel reads on its own: its lines are named at their right ends (no legend to look up
elsewhere), and its settings are under its x-axis. Figures are drawn with Figure, not
pyplot: a figure saved to a file needs no window, and no pyplot (0.1 s to import).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from lab import SCHEME_TABLE

if TYPE_CHECKING:  # (matplotlib is imported only to draw)
    from matplotlib.axes import Axes
    from matplotlib.axis import Axis
    from matplotlib.figure import Figure

# Each scheme's colour, marker and label, by name, from lab's SCHEME_TABLE.
COLORS = {s.name: s.color for s in SCHEME_TABLE}
MARKERS = {s.name: s.marker for s in SCHEME_TABLE}
LABELS = {s.name: s.label for s in SCHEME_TABLE}


def placeholder(ax: Axes, text: str) -> None:
    ax.text(
        0.5, 0.5, text, ha="center", va="center", fontsize=13, color="gray", transform=ax.transAxes
    )
    ax.set_xticks([])
    ax.set_yticks([])


def label_ends(ax: Axes, lines: Sequence[Any], fontsize: float = 8.5) -> None:
    """Name each line at its right end, in its colour, inside the frame.

    The x-axis is widened so the names fit right of the data; names that would overlap
    are moved apart vertically, each joined to its line's end by a thin stroke.
    (Call it once the panel's data, scales and x-ticks are set.) `lines`: Line2D, whose
    data and labels matplotlib's types leave loose (as it does the figure, below)."""
    from matplotlib.collections import LineCollection

    fig: Any = ax.get_figure()
    box = ax.get_position()
    width_pt, height_pt = 72 * box.width * fig.get_figwidth(), 72 * box.height * fig.get_figheight()
    name_pt = 0.58 * fontsize * max(len(line.get_label()) for line in lines) + 22
    widen_x(ax, min(0.45, name_pt / width_pt))
    ax.set_ylim(ax.get_ylim())  # freeze the y-range: the names are placed against it
    to_axes: Any = ax.transData + ax.transAxes.inverted()
    ends = [
        (line, to_axes.transform((line.get_xdata()[-1], line.get_ydata()[-1]))) for line in lines
    ]
    ends = [(line, end) for line, end in ends if all(map(math.isfinite, end))]
    if not ends:  # nothing finite to name (a log axis of zeros, say)
        return
    gap = 1.5 * fontsize / height_pt  # a line of text and a little air, as a share of the panel
    heights = spread([end[1] for _, end in ends], gap, low=gap / 2, high=1 - gap / 2)
    x_text = max(end[0] for _, end in ends) + 16 / width_pt
    for (line, _end), y in zip(ends, heights):
        ax.text(
            x_text + 2 / width_pt,
            y,
            line.get_label(),
            transform=ax.transAxes,
            va="center",
            fontsize=fontsize,
            color=line.get_color(),
            alpha=line.get_alpha(),
            fontweight="bold" if line.get_linewidth() > 2 else "normal",
        )
    # the strokes, in one collection: far cheaper to draw than an arrow per name
    ax.add_collection(
        LineCollection(
            [[end, (x_text, y)] for (_, end), y in zip(ends, heights)],
            transform=ax.transAxes,
            colors=[line.get_color() for line, _ in ends],
            linewidths=0.6,
            alpha=min(line.get_alpha() or 1 for line, _ in ends),
        ),
        autolim=False,
    )


def widen_x(ax: Axes, share: float) -> None:
    """Widen the x-axis on the right so the data fill the left (1 - share) of the frame.
    (Set the ticks first: ticks chosen after this would run on under the names.)"""
    x0, x1 = ax.get_xlim()
    if ax.get_xscale() == "log":
        ax.set_xlim(x0, x0 * (x1 / x0) ** (1 / (1 - share)))
    else:
        ax.set_xlim(x0, x0 + (x1 - x0) / (1 - share))


def spread(ys: Sequence[float], gap: float, low: float, high: float) -> list[float]:
    """Positions near ys (any order), at least `gap` apart, kept within [low, high] where
    there is room. Example: spread([0.5, 0.52], 0.1, 0, 1) = [0.5, 0.6]."""
    order = sorted(range(len(ys)), key=ys.__getitem__)
    placed: list[float] = []
    for i in order:  # upwards: each at least a gap above the one below
        placed.append(max(min(max(ys[i], low), high), placed[-1] + gap if placed else low))
    for j in range(len(placed) - 1, -1, -1):  # downwards: back under the top
        placed[j] = min(placed[j], high if j == len(placed) - 1 else placed[j + 1] - gap)
    out = [0.0] * len(ys)
    for i, y in zip(order, placed):
        out[i] = y
    return out


def log_ticks(axis: Axis, percent: bool = False) -> None:
    """Label a log axis in plain numbers: 1, 2 and 5 times each power of ten over a short
    range (by default only the powers of ten are labelled, often just two of them)."""
    from matplotlib.ticker import FuncFormatter, LogLocator

    low, high = axis.get_view_interval()
    short = math.log10(high / low) <= 2.5
    axis.set_major_locator(LogLocator(subs=(1, 2, 5) if short else (1,)))
    axis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}" + "%" * percent))


def extra_figure(
    results: dict[str, Any],
    key: str,
    label: str,
    task: str,
    titles: Sequence[str],
    figsize: tuple[float, float],
) -> tuple[Figure, Any, dict[str, Any] | None]:
    """A figure of its own for the experiment `key` (named `label`, needing Task `task`):
    (fig, its panels, the result or None). Each panel gets its title; an experiment that
    did not run leaves placeholders."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize)
    axes = list(fig.subplots(1, len(titles))) if len(titles) > 1 else [fig.subplots()]
    for ax, title in zip(axes, titles):
        if results.get(key) is None:
            placeholder(ax, results["unavailable"].get(label, "not run"))
        ax.set_title(f"{title} (Task {task})")
    return fig, axes, results.get(key)
