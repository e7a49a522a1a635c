"""Run Lab 20's three experiments: print the results, save rl_systems.png and rl_systems.json.

    python run.py                  # your code; tasks not done yet become placeholders
    RL_SOLUTIONS=1 python run.py   # the reference solutions (instructors only)
    python run.py --solutions      # the same, in any shell (instructors only)
    python run.py --help           # the "things to try", as flags

Same flags, same numbers: every run is deterministic. This is a dispatcher: each
experiment is a module of experiments/ (its options, computation, printing and figure),
listed once in experiments.REGISTRY; rl_systems.png is experiments/main_figure.py.
"""

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grading
import lab
from experiments import FLAGS, PARTS, REGISTRY, Experiment, main_figure, settings
from experiments.options import DefaultsOnce, png_path
from experiments.printing import say
from grading import harness
from lab.input_checks import ContractError
from scheduler_core import MAX_RESPONSES, SchedulerError


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0], formatter_class=DefaultsOnce)
    settings.arguments(p)  # the simulator's and the toy's, which several experiments share
    for experiment in REGISTRY:
        experiment.arguments(p)
    if grading.SOLUTIONS_DIR.is_dir():  # a students' copy has no reference to switch to
        p.add_argument(
            "--solutions",
            action="store_true",
            help="run the reference solutions (the same as RL_SOLUTIONS=1)",
        )
    p.add_argument(
        "--out",
        type=png_path,
        default="rl_systems.png",
        help="where to save the figure; the numbers go next to it as .json",
    )
    args = p.parse_args(argv)
    if args.batch * args.steps > MAX_RESPONSES:  # every trained response is kept in memory
        p.error(
            f"argument -B/--batch times --steps must be at most {MAX_RESPONSES}, "
            f"got {args.batch} x {args.steps} = {args.batch * args.steps}"
        )
    return args


class Run:
    """One run of run.py: its flags, the settings built from them once (passed whole to every
    experiment), the results so far, and the experiment running."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.results: dict[str, Any] = dict(code=grading.code_under_test(), unavailable={})
        self.settings = settings.Settings.from_options(args)
        self.stopped = False  # Ctrl-C stops the run: the rest is skipped
        # the experiment running now and its time limit, set by attempt() before the watchdog
        # can call stuck()
        self.running: Experiment
        self.limit: float
        self.watchdog = harness.Watchdog(abort=self.stuck)

    def attempt(
        self, e: Experiment, show: Callable[..., object], note: Callable[[str], object] = print
    ) -> None:
        """Run experiment `e` under its time limit (5 times its SECONDS, times the work its
        flags ask for, and at least harness.TIME_LIMIT) and `show` its result. If it meets a
        task not done yet (lab.TaskNotDone), say which one through `note`: the task whose
        TODO it reached first, whichever the part's code calls first. If it fails, say so
        (any other error, a student's own NotImplementedError too). Either way record why
        in "unavailable" (the figure draws a placeholder). Ctrl-C stops it and skips the rest."""
        self.results[e.KEY] = None  # until it succeeds
        needs = getattr(e, "NEEDS", None)  # optional in the contract (experiments/__init__.py)
        if needs and self.results[needs] is None:
            print(f"{e.LABEL}: skipped, it needs Part 2 (Task 2, scheduler.py) working first.")
            self.results["unavailable"][e.LABEL] = "needs Part 2 (Task 2) first"
            return
        if self.stopped:
            self.results["unavailable"][e.LABEL] = "not run: the run was interrupted"
            return
        file = lab.file_of(next(t for t in lab.TASKS if t.startswith(e.TASK)))
        self.limit = max(harness.TIME_LIMIT, 5 * e.SECONDS * e.work(self.settings))
        self.running = e
        try:
            with harness.time_limit(
                f"{e.LABEL} (Task {e.TASK}, {file})", self.watchdog, self.limit
            ):
                result = e.run(self.settings, self.results)
        except lab.TaskNotDone as todo:
            note(f"{e.LABEL}: skipped, {todo}.")
            self.results["unavailable"][e.LABEL] = f"Task {todo.task} not implemented yet"
            return
        except KeyboardInterrupt:
            note(f"{e.LABEL}: interrupted (Ctrl-C); saving the parts done so far.")
            self.stopped = True
            self.results["unavailable"][e.LABEL] = "not run: the run was interrupted"
            return
        except BaseException as error:  # noqa: BLE001 (a bug in a task, a time limit, an exit)
            return self.failed(e, error, note)
        self.results[e.KEY] = result
        show(result)

    def failed(self, e: Experiment, error: BaseException, note: Callable[[str], object]) -> None:
        """Report an experiment that failed: in a task file (or its checks), or in given code."""
        unavailable, tests = self.results["unavailable"], f"python -m pytest -q -k task{e.TASK}"
        if isinstance(error, harness.TimeLimitExceeded):
            note(
                f"{e.LABEL}: stopped after {self.limit:.3g} s, its time limit: {error}"
                f"{harness.where(error)}\n  run `{tests}` to find out why."
            )
            unavailable[e.LABEL] = f"Task {e.TASK} ran too long: see its tests"
        elif harness.raised_in_given_code(error) and not isinstance(
            error, (SchedulerError, ContractError, grading.TaskFileError)
        ):
            frame = harness.lab_frames(error)[-1]
            note(
                f"{e.LABEL}: failed in given code, not in your file: {type(error).__name__}: "
                f"{error}\n  at {Path(frame.filename).relative_to(harness.ROOT)}, line "
                f"{frame.lineno}. If the tests of Task {e.TASK} pass, this is a bug in the lab: "
                "please report it."
            )
            unavailable[e.LABEL] = f"{e.LABEL} failed in given code"
        else:
            note(
                f"{e.LABEL}: failed with {harness.describe(error)}\n  run `{tests}` to find "
                "out why."
            )
            unavailable[e.LABEL] = f"Task {e.TASK} failed: see its tests"

    def stuck(self, label: str, seconds: float) -> None:
        """The backstop (from the watchdog thread): the experiment running ignored its limit
        (`label` names it with its task and file). Save."""
        print(
            f"\n{label} ignored its {self.limit:.3g} s time limit and was still running "
            f"after {seconds:.0f} s (does it catch every exception, or turn off signals?); "
            "stopping."
        )
        self.results["unavailable"][self.running.LABEL] = f"{self.running.LABEL} ran too long"
        self.save()

    def save(self) -> None:
        """Save the figures, then the JSON naming them, each through a temporary file; the
        experiments that did not run are drawn as placeholders."""
        results, out = self.results, self.args.out
        for e in PARTS[:3]:  # the main figure's panels need Parts 1-3 (stuck() may come first)
            if e.KEY not in results:
                results[e.KEY] = None
                results["unavailable"].setdefault(e.LABEL, "not run")
        # the flags' figures beside it, each named for its flag: rl_systems_preset.png
        drawings = {out: main_figure.draw}
        drawings |= {
            out.with_name(f"{out.stem}_{e.FLAG}.png"): e.draw for e in FLAGS if e.KEY in results
        }
        for path, draw in drawings.items():
            harness.write_atomically(path, write=lambda tmp, draw=draw: draw(results, tmp))
        results["images"] = [path.name for path in drawings]
        # numpy numbers (a student's np.int64, say) are written as plain numbers
        text = json.dumps(results, indent=1, default=lambda number: number.item())
        harness.write_atomically(out.with_suffix(".json"), text)
        say(f"\nSaved {', '.join(map(str, drawings))} and {out.with_suffix('.json')}")


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if getattr(args, "solutions", False):
        grading.choose_reference()
    try:
        run = Run(args)
    except ValueError as error:
        sys.exit(f"run.py: {error}")
    print(f"Running {run.results['code']}\n")
    flags = [e for e in FLAGS if getattr(args, e.FLAG)]
    lines = []  # with flags: the parts run first (--staleness needs Part 2), in a line each
    for i, part in enumerate(PARTS):
        if flags:
            run.attempt(
                part, lambda result, part=part: lines.append(part.short(result)), lines.append
            )
        else:
            if i in (1, 2):
                print()
            run.attempt(part, part.show)
    for e in flags:  # the flags' own sections, then the parts in short
        run.attempt(e, e.show)
        print()
    if flags:
        print("Parts 1-3 in short (`python run.py` without flags prints their tables):")
        print("\n".join(lines))
    run.save()
    if run.stopped:
        sys.exit(130)  # interrupted: the files hold the parts done, the exit status says so


if __name__ == "__main__":
    main()
