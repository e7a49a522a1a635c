"""How fast run.py, the test suite and the simulator are, as ratios (for instructors; not a test).

    python tools/benchmark.py            # 5 runs of each command, 9 of each simulation
    python tools/benchmark.py --runs 9

Wall-clock times depend on the machine, so the targets are ratios to a bare
`python -c "import numpy, matplotlib.pyplot"` on the same machine, with the
reference solutions (RL_SOLUTIONS=1) so every part runs:

    run.py (default flags) / bare imports   target <= 3
    the test suite         / bare imports   target <= 2

and, for the simulator (64 lanes, B = 64, k = 2, 1,000 steps, the same given
lengths), the reference `simulate` against `run_simulation` called directly with
the same functions unchecked (lab.input_checks.unchecked; the loop's checks of their
answers stay), as medians of interleaved runs, by wall-clock (the target) and by CPU
time (less swayed by other jobs on the machine; quote both, with the machine's load):

    simulate / unchecked run_simulation      target <= 1.1 (wall-clock)

With --presets, each GPU-model preset (run.py --preset NAME, docs/gpu-model.md) and all
three at once against the default run.py, in the same round robin:

    run.py --preset NAME / run.py            target <= 4
    run.py --preset all  / run.py            target <= 6

For information, the same run as a plain SimPy model of the same rules (SimPy is
not a dependency of the lab: `pip install simpy` to see this line).

Measure in a fresh virtual environment: pytest plugins installed system-wide
(pytest-benchmark, say) slow the suite down and a student's venv has none.
Each command runs once untimed first, with Python's bytecode cache on (__pycache__,
as in a student's Python; PYTHONDONTWRITEBYTECODE is ignored here): without it every
run would compile the lab's files again, about 0.5 s of the suite on a 2-core machine.
"""

import argparse
import gc
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
import scheduler_core  # these need ROOT on the path first
from lab.input_checks import unchecked
from solutions import scheduler

TARGETS = {"run.py": 3.0, "test suite": 2.0}
PRESETS = ("areal-1.5b", "areal-7b", "verl-7b")  # run.py --preset: each <= 4x run.py
PRESET_TARGET = 4.0
ALL_TARGET = 6.0  # run.py --preset all: the three (and the components once) <= 6x run.py
SIMULATION = dict(n_lanes=64, B=64, k=2, n_steps=1000)
SIMULATE_TARGET = 1.1


def seconds(command):
    """Wall-clock seconds of one run of `command` (in ROOT, with the reference code, and
    Python's bytecode cache on)."""
    env = dict(os.environ, RL_SOLUTIONS="1")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    start = time.perf_counter()
    subprocess.run(command, cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def in_turn(names, i):
    """The names in order in even rounds, reversed in odd ones: whatever runs first in a
    round (slower, on some machines) is each one's turn alike."""
    return list(names) if i % 2 == 0 else list(names)[::-1]


def simpy_time(n_lanes, B, k, n_steps, lengths, train_time=1.0):
    """The simulated time of the same run as a plain SimPy model: lanes and a trainer as
    processes, admission by may_start's rule, first-in first-out batches (no drops)."""
    import simpy

    env = simpy.Environment()
    finished = []  # tags of the finished responses, oldest first
    state = dict(version=0, started=0, trainer_waits=env.event(), update=env.event())
    lengths = iter(lengths)

    def lane():
        while True:
            while state["started"] >= (state["version"] + k + 1) * B:
                yield state["update"]  # admission refused until the next update
            state["started"] += 1
            tag = state["version"]
            yield env.timeout(next(lengths))
            finished.append(tag)
            if not state["trainer_waits"].triggered:
                state["trainer_waits"].succeed()

    def trainer():
        while state["version"] < n_steps:
            while len(finished) < B:
                state["trainer_waits"] = env.event()
                yield state["trainer_waits"]
            del finished[:B]
            yield env.timeout(train_time)
            state["version"] += 1
            update, state["update"] = state["update"], env.event()
            update.succeed()

    for _ in range(n_lanes):
        env.process(lane())
    env.run(until=env.process(trainer()))
    return env.now


def simulator_ratios(runs):
    """Median seconds of the reference simulate, of run_simulation with the same functions
    unchecked, and (if SimPy is installed) of the SimPy model, interleaved run by run:
    ({name: median wall-clock seconds}, {name: median CPU seconds}, {name: simulated time})."""
    n = SIMULATION
    lengths = np.random.default_rng(0).lognormal(-(1.25**2) / 2, 1.25, 70_000).tolist()
    settings = scheduler_core.LaneSettings(**n)
    decisions = unchecked(scheduler.may_start), unchecked(scheduler.take_batch)
    runs_of = {
        "simulate": lambda: scheduler.simulate(**n, lengths=lengths)["time"],
        "unchecked": lambda: scheduler_core.run_simulation(settings, iter(lengths), *decisions)[
            "time"
        ],
    }
    try:
        import simpy  # noqa: F401

        runs_of["SimPy"] = lambda: simpy_time(**n, lengths=lengths)
    except ImportError:
        print("  SimPy model: skipped (SimPy is not installed; `pip install simpy` to compare)")
    wall, cpu = {name: [] for name in runs_of}, {name: [] for name in runs_of}
    simulated = {}
    for i in range(runs):
        for name in in_turn(runs_of, i):
            run = runs_of[name]
            gc.collect()  # the last run's garbage is not this run's cost
            start, start_cpu = time.perf_counter(), time.process_time()
            simulated[name] = run()
            wall[name].append(time.perf_counter() - start)
            cpu[name].append(time.process_time() - start_cpu)
    return (
        {name: statistics.median(t) for name, t in wall.items()},
        {name: statistics.median(t) for name, t in cpu.items()},
        simulated,
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="runs per command (median taken)")
    parser.add_argument(
        "--simulations", type=int, default=9, help="runs per simulation (median taken)"
    )
    parser.add_argument(
        "--only-simulator", action="store_true", help="skip run.py and the test suite"
    )
    parser.add_argument(
        "--presets",
        action="store_true",
        help="also time run.py --preset for each GPU-model preset, and --preset all",
    )
    args = parser.parse_args(argv)
    ok = simulator_report(args.simulations)
    if not args.only_simulator:
        ok &= commands_report(args.runs, args.presets)
    return 0 if ok else 1


def simulator_report(runs):
    seconds_of, cpu_of, simulated = simulator_ratios(runs)
    ratio = seconds_of["simulate"] / seconds_of["unchecked"]
    print(
        f"Simulator, {SIMULATION}, given lengths, median of {runs} interleaved runs "
        f"(load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs):"
    )
    print(
        f"  wall-clock: simulate {seconds_of['simulate']:.3f} s, unchecked run_simulation "
        f"{seconds_of['unchecked']:.3f} s: {ratio:.3f}x (target <= {SIMULATE_TARGET:g}x)"
        f"{'' if ratio <= SIMULATE_TARGET else '  OVER'}"
    )
    print(
        f"  CPU time:   simulate {cpu_of['simulate']:.3f} s, unchecked run_simulation "
        f"{cpu_of['unchecked']:.3f} s: {cpu_of['simulate'] / cpu_of['unchecked']:.3f}x"
    )
    if "SimPy" in seconds_of:
        print(
            f"  SimPy model of the same rules {seconds_of['SimPy']:.3f} s: simulate takes "
            f"{seconds_of['simulate'] / seconds_of['SimPy']:.2f}x its time (simulated time "
            f"{simulated['SimPy']:.2f} vs {simulated['simulate']:.2f})"
        )
    return ratio <= SIMULATE_TARGET


def commands_report(runs, presets=False):
    python = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        commands = {
            "bare imports": [python, "-c", "import numpy, matplotlib.pyplot"],
            "run.py": [python, "run.py", "--out", str(Path(tmp, "bench.png"))],
            "test suite": [python, "-m", "pytest", "-q"],
        }
        for name in (*PRESETS, "all") if presets else ():
            commands[f"--preset {name}"] = [*commands["run.py"], "--preset", name]
        for name in ("run.py", "test suite"):  # warm the file, bytecode and font caches
            seconds(commands[name])
        # Round robin, so a machine that gets busier slows every command alike.
        times = {name: [] for name in commands}
        for i in range(runs):
            for name in in_turn(commands, i):
                times[name].append(seconds(commands[name]))
        median = {name: statistics.median(t) for name, t in times.items()}
    bare = median["bare imports"]
    print(f"{python}, median of {runs} runs, reference solutions")
    print(f"  bare imports  {bare:6.2f} s")
    ok = True
    for name, target in TARGETS.items():
        ratio = median[name] / bare
        ok &= ratio <= target
        print(
            f"  {name:<13} {median[name]:6.2f} s  = {ratio:4.2f}x bare imports "
            f"(target <= {target:g}x){'' if ratio <= target else '  OVER'}"
        )
    for name in (*PRESETS, "all") if presets else ():
        target = ALL_TARGET if name == "all" else PRESET_TARGET
        ratio = median[f"--preset {name}"] / median["run.py"]
        ok &= ratio <= target
        print(
            f"  run.py --preset {name:<11} {median[f'--preset {name}']:6.2f} s  = {ratio:4.2f}x "
            f"run.py (target <= {target:g}x){'' if ratio <= target else '  OVER'}"
        )
    return ok


if __name__ == "__main__":
    sys.exit(main())
