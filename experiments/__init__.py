"""The experiments room (given): one module per experiment that run.py can run, in print order.

An experiment is a module with the names of the Experiment protocol below, and a Part's or
a Flag's besides (part1_memory.py is the smallest example); tools/test_house.py checks that
every module in REGISTRY has them, with functions that take what run.py passes. What they
are:

    KEY       its key in rl_systems.json, "drop_stale"
    LABEL     how messages and placeholders name it, "Drop stale"
    TASK      the task it needs, "2": a failure points at that task's tests
    SECONDS   its wall-clock seconds with the reference and the default flags, measured on
              a busy 2-core machine (a quiet one takes about a third); run.py allows 5 times
              this, times work(settings), and at least the harness's TIME_LIMIT
    FLAG      the option that asks for it ("drop_stale" for --drop-stale); None for the
              parts that always run (Parts 1-3 and Task 3c's masking)
    NEEDS     (optional) the KEY of an earlier experiment whose result it needs: run.py
              skips it, saying so, when that one did not succeed
    arguments(parser)   adds its own command-line options
    work(settings)      how many times the default's work the options ask for (>= 1)
    run(settings, results)  its result, a dict of plain numbers; it takes the task modules
                        from grading.load, and may read an earlier experiment's result.
                        settings (settings.Settings, built once by run.py) holds the model
                        families' settings (simulation, toy) and the options, of which an
                        experiment reads only its own. A task not done yet raises
                        lab.TaskNotDone out of it, which run.py reports
    show(result)        prints the result in full
    short(result)       (Parts only) the result in one line, printed after a flag's section
    draw(results, path) (Flags only) its own figure; the parts share rl_systems.png
                        (main_figure.py), so they have panel functions instead

A new experiment is one module here plus its name in PARTS or FLAGS (REGISTRY is both), its
snapshot in tools/snapshots/ and its section in the docs. The other modules of this room are what
several experiments share: settings (the model families' settings and their options),
model_shapes (the real models), gpu_model and gpu_sources (the GPU cost model and its
sources), staleness_maths, training and ppo (the toy's policy moving under lag), printing and
plotting.
"""

import argparse
from pathlib import Path
from typing import Any, Protocol

from experiments import (
    c_sweep,
    drop_stale,
    equal_hardware,
    gpu_sweep,
    learning_curves,
    length_sweep,
    part1_memory,
    part2_scheduling,
    part3_mismatch,
    part3c_masking,
    ppo_curves,
    preset,
    staleness,
    step_grid,
    timeline,
)
from experiments.settings import Settings


class Experiment(Protocol):
    """What run.py reads of every experiment module (the names above). Its functions are
    called with positional arguments only, so a module may name its parameters as it likes."""

    KEY: str
    LABEL: str
    TASK: str
    SECONDS: float
    FLAG: str | None

    def arguments(self, parser: argparse.ArgumentParser, /) -> None: ...

    def work(self, settings: Settings, /) -> float: ...

    def run(self, settings: Settings, results: dict[str, Any], /) -> dict[str, Any]: ...

    def show(self, result: dict[str, Any], /) -> None: ...


class Part(Experiment, Protocol):
    """An experiment that always runs (FLAG None): its result in one line too."""

    FLAG: None

    def short(self, result: dict[str, Any], /) -> str: ...


class Flag(Experiment, Protocol):
    """An experiment an option asks for (FLAG its name): a figure of its own."""

    FLAG: str

    def draw(self, results: dict[str, Any], path: Path, /) -> None: ...


# Print order: the parts first, then the flags' sections. Typed by the protocols, so that a
# type checker holds each module to its contract too.
PARTS: tuple[Part, ...] = (part1_memory, part2_scheduling, part3_mismatch, part3c_masking)
FLAGS: tuple[Flag, ...] = (
    drop_stale,
    equal_hardware,
    timeline,
    preset,
    gpu_sweep,
    c_sweep,
    length_sweep,
    staleness,
    learning_curves,
    step_grid,
    ppo_curves,
)
REGISTRY: tuple[Experiment, ...] = PARTS + FLAGS
