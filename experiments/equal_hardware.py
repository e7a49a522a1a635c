"""--equal-hardware (Tasks 2 and 1): synchronous against asynchronous RL on the same GPUs."""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import grading
from experiments.model_shapes import ROUND_7B
from experiments.options import bounded
from experiments.plotting import placeholder
from experiments.printing import say
from experiments.settings import Settings, Simulation
from lab import GPU_GB

if TYPE_CHECKING:  # (matplotlib is imported only to draw)
    from matplotlib.axes import Axes

KEY, LABEL, TASK, FLAG = "equal_hardware", "Equal hardware", "2", "equal_hardware"
SECONDS = 1.6
GPUS = 16  # --gpus's default


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--equal-hardware",
        action="store_true",
        help="also compare sync and async RL on the same GPUs (with --gpus, "
        "--lanes-per-gpu, --train-work)",
    )
    p.add_argument(
        "--gpus",
        type=bounded(int, 2, 24),
        default=GPUS,
        help="GPUs shared by generation and training, for --equal-hardware",
    )
    p.add_argument(
        "--lanes-per-gpu",
        type=bounded(int, 1, 128),
        default=1,
        help="lanes (concurrent responses) per generating GPU, for --equal-hardware",
    )
    p.add_argument(
        "--train-work",
        type=bounded(float, 0, 1000),
        default=None,
        help="GPU-time units one update costs, for --equal-hardware "
        "(default: --gpus x --train-time)",
    )


def work(settings: Settings) -> float:
    """A simulation per split of the GPUs, of more lanes."""
    mine = settings.options
    return settings.simulation.work() * max(1.0, mine.gpus / GPUS) * mine.lanes_per_gpu


def run(settings: Settings, results: dict[str, Any]) -> dict[str, Any]:
    mine, simulation = settings.options, settings.simulation
    train_work = mine.gpus * simulation.train_time if mine.train_work is None else mine.train_work
    return equal_hardware(
        grading.load("scheduler"),
        grading.load("memory"),
        simulation,
        mine.gpus,
        mine.lanes_per_gpu,
        train_work,
    )


def equal_hardware(
    scheduler: ModuleType,
    memory: ModuleType,
    simulation: Simulation,
    gpus: int = 16,
    lanes_per_gpu: int = 1,
    train_work: float = 16.0,
    k: int = 1,
) -> dict[str, Any]:
    """Synchronous vs asynchronous RL on the same `gpus` GPUs (G below), from the Task 2
    module `scheduler` (and Task 1's `memory` for which splits can hold the model).

    One update costs train_work GPU-time units, shared by the GPUs that train.
      sync, colocated: all G GPUs generate (G * lanes_per_gpu lanes), then all G train:
          simulate(G * lanes_per_gpu, B, 0, train_time=train_work / G)
      async, disaggregated: g GPUs generate and G - g train, for g = 1 .. G - 1:
          simulate(g * lanes_per_gpu, B, k, train_time=train_work / (G - g))
    A split is feasible if its G - g trainer GPUs hold the model state of GRPO on the
    lab's 7B (126 GB: at least 2 GPUs). speedup = best feasible throughput / sync.

    simulation: its B, steps and sigma (its lanes and train time are the split's).

    Example: at G = 16, train_work = 16 the sync run is Part 2's k = 0 run (16 lanes,
    train_time 1).
    """
    B, n_steps, sigma = simulation.batch, simulation.steps, simulation.sigma

    def throughput(n_lanes, k, train_time):
        return scheduler.simulate(
            n_lanes, B, k, n_steps=n_steps, train_time=train_time, sigma=sigma
        )["throughput"]

    trainers, why = trainer_gpus_needed(memory)
    sync = throughput(gpus * lanes_per_gpu, 0, train_work / gpus)
    splits = [
        dict(
            gen_gpus=g,
            throughput=throughput(g * lanes_per_gpu, k, train_work / (gpus - g)),
            feasible=gpus - g >= trainers,
        )
        for g in range(1, gpus)
    ]
    feasible = [s for s in splits if s["feasible"]]
    best = (
        max(feasible, key=lambda s: s["throughput"])
        if feasible
        else dict(gen_gpus=None, throughput=None)
    )
    return dict(
        gpus=gpus,
        lanes_per_gpu=lanes_per_gpu,
        train_work=train_work,
        k=k,
        B=B,
        n_steps=n_steps,
        sigma=sigma,
        sync_throughput=sync,
        splits=splits,
        trainer_gpus_needed=trainers,
        trainer_gpus_why=why,
        best_gen_gpus=best["gen_gpus"],
        best_throughput=best["throughput"],
        speedup=best["throughput"] / sync if feasible else None,
    )


def trainer_gpus_needed(memory: ModuleType) -> tuple[int, str]:
    """GPUs needed to hold the model state of GRPO on the lab's 7B (Task 1c), and why.
    Before Task 1 works this is 1 with a note: no split is excluded."""
    try:
        gb = memory.rl_memory_gb("grpo", ROUND_7B.params)
        need = math.ceil(gb / GPU_GB)
        return need, (
            f"GRPO on the lab's 7B holds {gb:.0f} GB of model state: the trainers "
            f"need at least {need} GPU(s) of {GPU_GB} GB"
        )
    except Exception as error:  # noqa: BLE001 (Task 1 unfinished or failing: exclude nothing)
        return 1, f"Task 1 does not work yet ({type(error).__name__}), so no split was excluded"


def show(e: dict[str, Any]) -> None:
    G = e["gpus"]
    say(
        f"Equal hardware: {G} GPUs, {e['lanes_per_gpu']} lane(s) per generating GPU, one update "
        f"= {e['train_work']:g} GPU-time units, B = {e['B']}, {e['n_steps']} steps"
    )
    print(
        f"  synchronous, colocated (all {G} generate, then all {G} train): "
        f"throughput {e['sync_throughput']:.2f}"
    )
    print(f"  asynchronous at k = {e['k']}, g GPUs generate and {G} - g train; the best splits:")
    print(f"  {'g':>5}{'train GPUs':>12}{'throughput':>12}")
    for s in sorted(e["splits"], key=lambda s: -s["throughput"])[:5]:
        note = "" if s["feasible"] else "   excluded: the trainers cannot hold the model"
        print(f"  {s['gen_gpus']:>5}{G - s['gen_gpus']:>12}{s['throughput']:>12.2f}{note}")
    print(f"  {e['trainer_gpus_why']}")
    if e["best_gen_gpus"] is None:
        print("  no split is feasible")
    else:
        print(
            f"  best: {e['best_gen_gpus']} generate, {G - e['best_gen_gpus']} train: "
            f"throughput {e['best_throughput']:.2f} = {e['speedup']:.2f}x the synchronous run "
            "on the same GPUs"
        )


def draw(results: dict[str, Any], path: Path) -> None:
    """Save the --equal-hardware figure: throughput of each async split vs the sync run."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7, 4.5))
    ax = fig.subplots()
    e = results["equal_hardware"]
    if e is None:
        placeholder(ax, results["unavailable"][LABEL])
        gpus = "the same GPUs"
    else:
        equal_hardware_panel(e, ax)
        gpus = f"the same {e['gpus']} GPUs"
    ax.set_title(f"Synchronous vs asynchronous on {gpus} (Task {TASK})")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def equal_hardware_panel(e: dict[str, Any], ax: Axes) -> None:
    G = e["gpus"]
    g = [s["gen_gpus"] for s in e["splits"]]
    x = [s["throughput"] for s in e["splits"]]
    ax.plot(
        g,
        x,
        "o-",
        color="tab:purple",
        label=f"asynchronous, k = {e['k']}: g GPUs generate, {G} - g train",
    )
    excluded = [s for s in e["splits"] if not s["feasible"]]
    if excluded:
        ax.plot(
            [s["gen_gpus"] for s in excluded],
            [s["throughput"] for s in excluded],
            "x",
            color="black",
            markersize=10,
            label="excluded: trainers cannot hold the model",
        )
    ax.axhline(
        e["sync_throughput"],
        color="gray",
        linestyle="--",
        label=f"synchronous, colocated: {e['sync_throughput']:.2f}",
    )
    if e["best_gen_gpus"] is not None:
        ax.plot(
            [e["best_gen_gpus"]],
            [e["best_throughput"]],
            "*",
            color="tab:red",
            markersize=16,
            label=f"best: g = {e['best_gen_gpus']}, {e['speedup']:.2f}x synchronous",
        )
    ax.set_xlabel("g, GPUs that generate")
    ax.set_ylabel("throughput (trained responses per time unit)")
    ax.set_xticks(g if G <= 16 else g[::2])
    ax.set_ylim(0, 1.6 * max(x + [e["sync_throughput"]]))  # the legend goes above the data
    ax.legend(
        title=f"{e['lanes_per_gpu']} lane(s) per GPU, update = {e['train_work']:g} "
        f"GPU-time, B = {e['B']}",
        fontsize=8,
        title_fontsize=8,
        loc="upper left",
    )
