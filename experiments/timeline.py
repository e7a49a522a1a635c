"""--timeline (Task 2): what every lane did over time, at k = 0 and k = 1."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np

import grading
from experiments.plotting import placeholder
from experiments.printing import say
from experiments.settings import Settings, Simulation
from scheduler_core import assign_lanes

if TYPE_CHECKING:  # (matplotlib is imported only to draw)
    from matplotlib.axes import Axes

KEY, LABEL, TASK, FLAG = "timeline", "Timeline", "2", "timeline"
SECONDS = 0.2


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--timeline",
        action="store_true",
        help="also draw the lanes over time at k = 0 and k = 1 (a second PNG)",
    )


def work(settings: Settings) -> float:
    return settings.simulation.work()


def run(settings: Settings, results: dict[str, Any]) -> dict[str, Any]:
    # with --drop-stale the lanes drop stale responses too: its experiment comes earlier in
    # REGISTRY, and run.py gives an experiment asked for its key in results before it runs
    return timeline(
        grading.load("scheduler"), settings.simulation, drop_stale="drop_stale" in results
    )


def timeline(
    scheduler: ModuleType,
    simulation: Simulation,
    drop_stale: bool = False,
    ks: Sequence[int] = (0, 1),
    n_updates: int = 4,
) -> dict[str, Any]:
    """What every lane did, for k in ks (ks[0] must be 0), over the same window: from 0 to
    the end of the k = 0 run's n_updates-th update.

    Each response started in the window gets a lane (scheduler_core.assign_lanes);
    busy = lane-time spent generating within the window / (n_lanes * window).
    """
    n_lanes, B, n_steps = simulation.lanes, simulation.batch, simulation.steps
    runs = [
        scheduler.simulate(
            n_lanes,
            B,
            k,
            n_steps=n_steps,
            train_time=simulation.train_time,
            sigma=simulation.sigma,
            drop_stale=drop_stale,
        )
        for k in ks
    ]
    window = runs[0]["updates"][min(n_updates, n_steps) - 1][1]
    panels = []
    for k, r in zip(ks, runs):
        shown = [s for s in r["trace"] if s["start"] < window]  # a prefix: trace is in start order
        busy = sum(min(s["end"], window) - s["start"] for s in shown)
        responses = [
            dict(
                id=s["id"],
                lane=lane,
                start=s["start"],
                end=s["end"],
                tag=s["tag"],
                dropped=s["dropped"],
            )
            for s, lane in zip(shown, assign_lanes(shown))
        ]
        panels.append(
            dict(
                k=k,
                busy=busy / (n_lanes * window),
                responses=responses,
                updates=[u for u in r["updates"] if u[0] < window],
            )
        )
    return dict(
        n_lanes=n_lanes,
        B=B,
        sigma=simulation.sigma,
        train_time=simulation.train_time,
        drop_stale=drop_stale,
        n_updates=n_updates,
        window=window,
        runs=panels,
    )


def show(t: dict[str, Any]) -> None:
    busy = ", ".join(f"{r['busy']:.0%} at k = {r['k']}" for r in t["runs"])
    say(
        f"Timeline: 0 to {t['window']:.1f} time units (the k = 0 run's first "
        f"{t['n_updates']} updates), lanes busy {busy}"
    )


def draw(results: dict[str, Any], path: Path) -> None:
    """Save the --timeline figure: one row per lane, one bar per response, the trainer below."""
    import matplotlib
    from matplotlib.figure import Figure

    t = results["timeline"]
    runs: list[Any] = t["runs"] if t else [None, None]
    fig = Figure(figsize=(15, 5.2 * len(runs)))
    axes = fig.subplots(len(runs), 1, sharex=True)
    fig.subplots_adjust(left=0.06, right=0.85, top=0.95, bottom=0.07, hspace=0.17)
    # one colour per version drawn, the same in both panels: blue the oldest, red the newest
    n_versions = 1 + max(len(run["updates"]) for run in runs) if t else 0
    colors = matplotlib.colormaps["turbo"](
        [0.05 + 0.9 * v / max(1, n_versions - 1) for v in range(n_versions)]
    )
    for k, (ax, run) in enumerate(zip(axes, runs)):  # the runs are k = 0 and k = 1
        if run is None:
            placeholder(ax, results["unavailable"][LABEL])
            ax.set_title(f"Timeline of the generation lanes at k = {k} (Task {TASK})")
        else:
            timeline_panel(t, run, ax, colors)
            caption = TIMELINE_CAPTIONS.get(run["k"], f"k = {run['k']}")
            ax.set_title(
                f"{caption}: lanes busy {run['busy']:.0%} of this window (Task {TASK})", loc="left"
            )
    if t:
        axes[-1].set_xlabel(
            f"time (mean response length = 1); {t['n_lanes']} lanes, B = {t['B']}, "
            f"train_time = {t['train_time']}, sigma = {t['sigma']}"
        )
    fig.savefig(path, dpi=100)


TIMELINE_CAPTIONS = {
    0: "k = 0, synchronous: every batch waits for its slowest response",
    1: "k = 1: the lanes start the next batch while the trainer works",
}


def timeline_panel(t: dict[str, Any], run: dict[str, Any], ax: Axes, colors: np.ndarray) -> None:
    """Bars [start, end) on each response's lane, in the colour of the version that generated
    it (colors[v] for version v); the trainer's updates on a row of their own, in the colour
    of the version they produce. Each bar wide enough for it says its version."""
    trainer_row = t["n_lanes"] + 1
    kept = [r for r in run["responses"] if not r["dropped"]]
    dropped = [r for r in run["responses"] if r["dropped"]]
    bars(
        ax,
        [(r["lane"], r["start"], r["end"]) for r in kept],
        0.8,
        edgecolor="white",
        linewidth=0.5,
        facecolor=[colors[r["tag"]] for r in kept],
    )
    if dropped:
        bars(
            ax,
            [(r["lane"], r["start"], r["end"]) for r in dropped],
            0.8,
            facecolor="lightgray",
            edgecolor="dimgray",
            hatch="////",
            label="dropped as stale",
        )
    updates = [(v + 1, start, end) for v, (start, end) in enumerate(run["updates"])]
    bars(
        ax,
        [(trainer_row, start, end) for _, start, end in updates],
        1.6,
        edgecolor="black",
        facecolor=[colors[v] for v, _, _ in updates],
    )
    ax.set_xlim(0, t["window"])
    ax.set_ylim(trainer_row + 1.2, -0.8)  # lane 0 on top, the trainer at the bottom
    # The version numbers: as large as a lane's bar allows, on the bars wide enough for them.
    box = ax.get_position()
    fig: Any = ax.get_figure()  # a Figure (matplotlib's types allow a SubFigure or None)
    bar_pt = 0.8 * 72 * box.height * fig.get_figheight() / (trainer_row + 2)
    points_per_time = 72 * box.width * fig.get_figwidth() / t["window"]
    fontsize = min(10, 0.75 * bar_pt)
    if fontsize >= 6:  # below that (many lanes) no label would be legible
        texts = [(r["lane"], r["start"], min(r["end"], t["window"]), r["tag"]) for r in kept]
        texts += [(trainer_row, start, end, v) for v, start, end in updates]
        for row, start, end, v in texts:
            label = f"v{v}"
            if (end - start) * points_per_time >= 0.65 * fontsize * len(label) + 6:
                r, g, b, _ = colors[v]
                ax.text(
                    start + 3 / points_per_time,
                    row,
                    label,
                    va="center",
                    fontsize=fontsize,
                    color="white" if 0.3 * r + 0.6 * g + 0.1 * b < 0.5 else "black",
                )
    rows = list(range(0, t["n_lanes"], max(1, t["n_lanes"] // 16)))
    ax.set_yticks(rows + [trainer_row], [f"lane {i}" for i in rows] + ["trainer"], fontsize=9)
    ax.grid(False)
    ax.text(
        1.008,
        0.5,
        "colour = policy version\nthat generated it,\nblue oldest, red newest"
        "\n(trainer: the version\nit produces)\n\nwhite = idle lane",
        transform=ax.transAxes,
        fontsize=9.5,
        va="center",
    )
    if dropped:
        ax.legend(loc="upper left", bbox_to_anchor=(1.008, 1.0), fontsize=9.5)


def bars(ax: Axes, spans: Sequence[tuple[int, float, float]], height: float, **style: Any) -> None:
    """Draw (row, start, end) spans as rectangles, all in one collection (fast for hundreds)."""
    from matplotlib.collections import PolyCollection

    boxes = [
        [
            (start, row - height / 2),
            (end, row - height / 2),
            (end, row + height / 2),
            (start, row + height / 2),
        ]
        for row, start, end in spans
    ]
    ax.add_collection(PolyCollection(boxes, **style))
