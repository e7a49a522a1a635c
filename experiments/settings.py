"""The settings of the model families that several experiments run (given), with their options.

    Simulation  Part 2's lane simulator (simulate): --lanes, -B, --steps, --train-time, --sigma
    Toy         Task 3's toy and its estimators: --noise, --C, --batch-size

run.py builds one Settings from the options and passes it whole to every experiment. An
experiment reads these families and its own options (Settings.options), never another
experiment's. The GPU model's settings are gpu_model.GpuRun (from a preset, not options).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any

import toy
from experiments.options import bounded
from scheduler_core import MAX_RESPONSES, MAX_SIGMA


@dataclass(frozen=True)
class Simulation:
    """Every lane simulation of the experiments that run Task 2's scheduler."""

    lanes: int = 16  # generation lanes
    batch: int = 32  # B, responses per training batch
    steps: int = 200  # training steps per simulated run
    train_time: float = 1.0  # time units per update
    sigma: float = 1.25  # lognormal shape of response lengths

    def simulate(self) -> dict[str, Any]:
        """simulate's keyword arguments (but k)."""
        return dict(
            n_lanes=self.lanes,
            B=self.batch,
            n_steps=self.steps,
            train_time=self.train_time,
            sigma=self.sigma,
        )

    def work(self) -> float:
        """Times the default's work of a simulation: it keeps B x steps responses."""
        return max(1.0, self.batch / DEFAULT_SIMULATION.batch) * max(
            1.0, self.steps / DEFAULT_SIMULATION.steps
        )


DEFAULT_SIMULATION = Simulation()


@dataclass(frozen=True)
class Toy:
    """Task 3's toy: the engine's logit noise, the truncation C of token_tis and seq_tis, and
    the responses per gradient estimate of Part 3 and the sweeps built on it."""

    noise: str = "student_t"
    C: float = 2.0
    batch_size: int = 64


DEFAULT_TOY = Toy()


@dataclass(frozen=True)
class Settings:
    """What run.py passes to every experiment: the families, and the options (of which an
    experiment reads only its own)."""

    simulation: Simulation
    toy: Toy
    options: argparse.Namespace

    @classmethod
    def from_options(cls, options: argparse.Namespace) -> Settings:
        return cls(
            Simulation(
                options.lanes, options.batch, options.steps, options.train_time, options.sigma
            ),
            Toy(options.noise, options.C, options.batch_size),
            options,
        )


def arguments(p: argparse.ArgumentParser) -> None:
    """The families' options (run.py adds them before the experiments' own)."""
    s, t = DEFAULT_SIMULATION, DEFAULT_TOY
    p.add_argument(
        "--lanes", type=bounded(int, 1, MAX_RESPONSES), default=s.lanes, help="generation lanes"
    )
    p.add_argument(
        "-B",
        "--batch",
        type=bounded(int, 1),
        default=s.batch,
        help="B, responses per training batch",
    )
    p.add_argument(
        "--steps", type=bounded(int, 1), default=s.steps, help="training steps per simulated run"
    )
    p.add_argument(
        "--train-time",
        type=bounded(float, 0),
        default=s.train_time,
        help="time units per update; try 3.0, where the trainer is the bottleneck",
    )
    p.add_argument(
        "--sigma",
        type=bounded(float, 0, MAX_SIGMA),
        default=s.sigma,
        help="lognormal shape of response lengths; larger = heavier tail",
    )
    p.add_argument(
        "--noise",
        choices=toy.NOISES,
        default=t.noise,
        help="shape of the inference engine's logit perturbation",
    )
    p.add_argument(
        "--C", type=bounded(float, 1), default=t.C, help="truncation level of token_tis and seq_tis"
    )
    p.add_argument(
        "--batch-size",
        type=bounded(int, 1, toy.MAX_BATCH_SIZE),
        default=t.batch_size,
        help="responses per gradient estimate in Part 3",
    )
