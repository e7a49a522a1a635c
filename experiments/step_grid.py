"""--step-grid (Tasks 2 and 3): the learning curves' step sensitivity, each cell at its best step.

Every cell of --learning-curves' trainer-bound set-up at one common step for every update,
on a grid of scales that grows until each cell's least mean time to the target has a
larger one on both sides (training.best_step); fewer seeds than the headline, with their
standard errors. A best picked from noisy means is biased low (docs/staleness_maths.md).
"""

import argparse
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

import grading
import toy
from experiments import staleness_maths, training
from experiments.learning_curves import (
    LEARNING_MISMATCHES,
    LEARNING_SEED,
    LEARNING_TARGET,
    TRAINER_LANES,
    cell_row,
    learning_settings,
    mean_se,
    rows_key,
    set_up_tables,
    time_cell,
    train_cells,
)
from experiments.plotting import COLORS, MARKERS, placeholder
from experiments.printing import row_name, say
from experiments.settings import Settings, Simulation, Toy
from experiments.staleness import STALENESS_SCHEMES

KEY, LABEL, TASK, FLAG = "step_grid", "Step grid", "3", "step_grid"
SECONDS = 80.0
NEEDS = "scheduling"  # it trains on Part 2's traces: run.py checks Part 2 ran first
GRID_SEEDS = 50  # seeds of the step-grid sensitivity (--step-grid)
GRID_HORIZON = 400  # updates simulated for the grid (its small steps need more)
GRID_SCALES = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0)  # where the grid starts; it grows upward


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--step-grid",
        action="store_true",
        help="the learning curves' step sensitivity: every cell at a grid of "
        "common steps, each at its best (fewer seeds)",
    )


def work(settings: Settings) -> float:
    return settings.simulation.work()


def run(settings: Settings, results: dict[str, Any]) -> dict[str, Any]:
    return step_grid(
        grading.load("scheduler"), grading.load("tis"), settings.simulation, settings.toy
    )


def step_grid(
    scheduler: ModuleType,
    tis: ModuleType,
    simulation: Simulation,
    toy_settings: Toy,
    lanes: Sequence[int] = (TRAINER_LANES,),
) -> dict[str, Any]:
    """The step sensitivity of learning_curves: every cell (set-up, setting, scheme,
    mismatch; the set-ups of `lanes`, by default the trainer-bound one) at step
    scale x staleness_maths.step_for_kl(TARGET_KL) for every update, for scales from
    GRID_SCALES, the grid growing (training.best_step) until every cell's least mean time to
    target has a larger one on both sides; GRID_SEEDS seeds (the first of learning_curves'
    draws), GRID_HORIZON updates; simulation's B, train_time and sigma, toy_settings' C and
    noise. Returns each cell's times at every scale and its best scale, as rows like
    learning_curves' (step = the best scale)."""
    n_lanes, trainer_lanes, B = simulation.lanes, TRAINER_LANES, simulation.batch
    horizon, n_seeds, target = GRID_HORIZON, GRID_SEEDS, LEARNING_TARGET
    mismatches, scales = LEARNING_MISMATCHES, GRID_SCALES
    how = training.Training(toy_settings.C, toy_settings.noise, target)
    settings, tags, times = learning_settings(
        scheduler, lanes, B, horizon, simulation.train_time, simulation.sigma
    )
    step = staleness_maths.step_for_kl(staleness_maths.TARGET_KL)
    draws = np.random.default_rng(LEARNING_SEED).random((n_seeds, horizon, B, toy.T))
    runs = {}

    def evaluate(new):  # every new scale in one pass
        out = train_cells(tis, tags, times, [step * scale for scale in new], draws, mismatches, how)
        for i, scale in enumerate(new):
            runs[scale] = out.pick(i)
        return [runs[scale].time.mean(axis=-1).ravel() for scale in new]

    grid, _means, best = training.best_step(evaluate, scales)
    best = best.reshape(runs[grid[0]].time.shape[:-1])
    cells = []
    for m, mismatch in enumerate(mismatches):
        for s in settings:
            for j, scheme in enumerate(STALENESS_SCHEMES):
                cell = (m, s["trace"], j)
                b = grid[best[cell]]
                at = {g: runs[g].pick(cell) for g in grid}
                cells.append(
                    dict(
                        cell_row(s, scheme, mismatch, float(b), float(b), target, at[b]),
                        grid=[
                            dict(
                                scale=float(g),
                                **mean_se(at[g].time),
                                reached=int(at[g].reached.sum()),
                            )
                            for g in grid
                        ],
                    )
                )
    return dict(
        n_lanes=n_lanes,
        trainer_lanes=trainer_lanes,
        B=B,
        horizon=horizon,
        n_seeds=n_seeds,
        target=target,
        step=step,
        scales=[float(g) for g in grid],
        schemes=list(STALENESS_SCHEMES),
        mismatches=list(mismatches),
        settings=[{key: v for key, v in s.items() if key != "trace"} for s in settings],
        trainer_bound=[c for c in cells if c["lanes"] == trainer_lanes],
        generation_bound=[c for c in cells if c["lanes"] == n_lanes],
    )


def show(g: dict[str, Any]) -> None:
    say(
        f"Step grid: each cell at eta = scale x {g['step']:.4g} for every update, scales "
        f"{', '.join(f'{s:g}' for s in g['scales'])} (grown until every cell's least time has "
        f"a larger one on both sides);\n  time to J >= {g['target']:g}, mean +- SE over "
        f"{g['n_seeds']} seeds (up to {g['horizon']} updates); best scale of each cell in "
        f"brackets"
    )
    for title, rows in set_up_tables(g):
        print(f"  {title}:")
        print(f"  {'k':>8}" + "".join(f"{n:>28}" for n in g["schemes"]))
        for i in range(0, len(rows), len(g["schemes"])):
            cells = [f"{time_cell(r)} [{r['scale']:g}x]" for r in rows[i : i + len(g["schemes"])]]
            print(f"  {row_name(rows[i]):>8}" + "".join(f"{cell:>28}" for cell in cells))


def draw(results: dict[str, Any], path: Path) -> None:
    """Save the --step-grid figure: each cell's mean time to target against the step scale,
    one panel per set-up and mismatch, one line per scheme and setting."""
    from matplotlib.figure import Figure

    g = results["step_grid"]
    n_rows = len({s["lanes"] for s in g["settings"]}) if g else 1
    fig = Figure(figsize=(16, 4.5 * n_rows))
    axes = fig.subplots(n_rows, 2, squeeze=False).ravel()
    if g is None:
        for ax in axes:
            placeholder(ax, results["unavailable"][LABEL])
            ax.set_title("Time to target against the step (Tasks 2 and 3)", fontsize=10)
    panels = (
        [
            (lanes, m)
            for lanes in sorted({s["lanes"] for s in g["settings"]})
            for m in g["mismatches"]
        ]
        if g
        else []
    )
    for ax, panel in zip(axes, panels):
        lanes, mismatch = panel
        for row in g[rows_key(g, lanes)]:
            if row["mismatch"] != mismatch:
                continue
            scales = [p["scale"] for p in row["grid"]]
            ax.plot(
                scales,
                [p["mean"] for p in row["grid"]],
                MARKERS[row["scheme"]] + "-",
                color=COLORS[row["scheme"]],
                alpha=0.3 + 0.7 * (row["k"] == 8),
                linewidth=1,
                markersize=3,
            )
            ax.plot(
                [row["scale"]],
                [row["mean"]],
                MARKERS[row["scheme"]],
                color=COLORS[row["scheme"]],
                markersize=8,
            )
        for scheme in g["schemes"]:
            ax.plot([], [], MARKERS[scheme] + "-", color=COLORS[scheme], label=scheme)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("step scale (x the common step); large marker: a setting's best")
        ax.set_ylabel(f"mean time to J >= {g['target']:g} (log)")
        ax.set_title(
            f"{lanes} lanes, mismatch {mismatch:g}: one line per setting (k = 8 darkest)",
            fontsize=10,
        )
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
