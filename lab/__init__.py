"""The lab's plumbing (given): whose code runs, and the facts every other file shares.

Every test and run.py gets the task modules from `load`, which picks whose code
runs:

    python -m pytest -q                   # your memory.py, scheduler.py, tis.py
    RL_SOLUTIONS=1 python -m pytest -q    # solutions/memory.py, ... (instructors only)
    python -m pytest -q --solutions       # the same, in any shell (instructors only)

The facts below (tasks and points, student modules, schemes, the parts of
run.py) are written here once; everything else imports them.
"""
import importlib
import os
import re
import traceback
from pathlib import Path
from typing import NamedTuple


class Task(NamedTuple):
    module: str           # the student module it lives in
    what: str             # the function to implement (or what the end-to-end tests use)
    points: float         # split evenly over the task's tests
    extra: bool = False   # extra credit: its points come on top of the 100


# Test names carry the task id ("test_task2b_fifo"); the ids without a letter
# are the end-to-end checks that use a whole task at once.
TASKS = {
    "1a": Task("memory", "model_state_bytes", 10),
    "1b": Task("memory", "kv_cache_bytes", 10),
    "1c": Task("memory", "rl_memory_gb", 15),
    "2a": Task("scheduler", "may_start", 10),
    "2b": Task("scheduler", "take_batch", 15),
    "2": Task("scheduler", "simulate (2a + 2b together)", 10),
    "3a": Task("tis", "importance_weights", 15),
    "3b": Task("tis", "pg_estimate", 5),
    "3": Task("tis", "the chapter's claims (3a + 3b together)", 10),
    # Optional: extra credit on top of the 100 (max_score 0 on Gradescope, "Extra credit:" names).
    "3c": Task("tis", "masked_weights", 10, extra=True),
}
# The student modules in task order: memory, scheduler, tis.
STUDENT_MODULES = tuple(dict.fromkeys(task.module for task in TASKS.values()))
# The tasks whose tests also run other tasks' functions: the end-to-end checks "2" and "3",
# and Task 3c's comparison, which runs pg_estimate (3b).
USES = {"2": ("2a", "2b"), "3": ("3a", "3b"), "3c": ("3b",)}
# Given functions that sit in a student module for the student to call (simulate runs
# Task 2's two functions): an error inside one is reported at the student's line that called it.
GIVEN_FUNCTIONS = {"scheduler": ("simulate",)}

# The weighting schemes of Task 3, in the order tables and the figure show them.
SCHEMES = ("none", "token", "token_tis", "seq", "seq_tis")
# Task 3c's masking levels; tables and the figure show level "seq" as the scheme "seq_mask".
MASK_LEVELS = ("token", "seq", "geo")

# run.py's parts: result key -> (label printed and stored, the task it needs).
PARTS = {
    "memory": ("Part 1", "1"),
    "scheduling": ("Part 2", "2"),
    "drop_stale": ("Drop stale", "2"),
    "equal_hardware": ("Equal hardware", "2"),
    "timeline": ("Timeline", "2"),
    "gpu_model": ("GPU model", "2"),  # Task 1's bytes too: a TODO there names its own task
    "gpu_sweep": ("GPU sweep", "2"),
    "mismatch": ("Part 3", "3"),
    "c_sweep": ("C sweep", "3"),
    "masking": ("Masking", "3c"),
    "length_sweep": ("Length sweep", "3"),
    "staleness": ("Staleness", "3"),  # needs Part 2 (Task 2) too: run.py checks it first
    "learning_curves": ("Learning curves", "3"),  # the same
    "step_grid": ("Step grid", "3"),  # the same
}

# Wall-clock seconds each part takes with the reference solutions and the default flags,
# measured on a busy 2-core machine (a quiet one takes about a third of that). run.py gives
# a part 5 times this, times the extra work its flags ask for, and at least 5 s.
# Every key of PARTS needs one (tools/test_tools.py checks).
PART_SECONDS = {"memory": 0.01, "scheduling": 0.8, "drop_stale": 0.4, "equal_hardware": 1.6,
                "timeline": 0.2, "gpu_model": 11.0, "gpu_sweep": 25.0, "mismatch": 1.3,
                "c_sweep": 0.3,
                "masking": 0.9, "length_sweep": 11.0, "staleness": 5.0,
                "learning_curves": 60.0, "step_grid": 80.0}

_TEST_NAME = re.compile(r"test_task(\d[a-z]?)_")


class TaskFileError(Exception):
    """A task file could not be imported (a syntax error, say)."""


def task_of(test_name):
    """The task a test grades: test_task2b_fifo -> "2b", test_task3_x -> "3", test_toy_x -> None."""
    match = _TEST_NAME.match(test_name)
    return match[1] if match else None


def task_of_function(name):
    """The task whose function is `name`: "may_start" -> "2a"; None for any other name."""
    return next((task for task, spec in TASKS.items() if spec.what == name), None)


def file_of(task):
    """The student file of a task: "2b" -> "scheduler.py"."""
    return TASKS[task].module + ".py"


# The reference; a student copy of the lab (tools/release.py) has none.
SOLUTIONS_DIR = Path(__file__).resolve().parent.parent / "solutions"


def use_reference():
    """True if RL_SOLUTIONS=1, False if it is unset, empty or 0; ValueError otherwise."""
    value = os.environ.get("RL_SOLUTIONS", "0")
    if value not in ("", "0", "1"):
        raise ValueError(
            f"RL_SOLUTIONS must be 1 (reference solutions) or 0/unset (your files), got {value!r}"
        )
    if value == "1" and not SOLUTIONS_DIR.is_dir():
        raise ValueError("RL_SOLUTIONS=1: the reference solutions are not part of this copy "
                         "of the lab")
    return value == "1"


def choose_reference():
    """The --solutions switch of run.py and pytest: RL_SOLUTIONS=1 without shell syntax,
    so it works in PowerShell and cmd too. Child processes inherit it."""
    os.environ["RL_SOLUTIONS"] = "1"


def test_seed():
    """The seed of the graded tests' random inputs: LAB_SEED if set (the autograder sets a
    fresh one, so answers hard-coded to the public inputs fail), else a fixed 2026."""
    value = os.environ.get("LAB_SEED", "2026")
    if not value.isdigit():
        raise ValueError(f"LAB_SEED must be a whole number >= 0, got {value!r}")
    return int(value)


def code_under_test():
    """A one-line description for headers: whose code is being run."""
    if use_reference():
        return "the reference solutions (solutions/, RL_SOLUTIONS=1)"
    return f"your files ({', '.join(module + '.py' for module in STUDENT_MODULES)})"


def load(name):
    """Import task module `name` ("memory", "scheduler" or "tis") from the right place."""
    if name not in STUDENT_MODULES:
        raise ValueError(f"name must be one of {sorted(STUDENT_MODULES)}, got {name!r}")
    module = f"solutions.{name}" if use_reference() else name
    try:
        return importlib.import_module(module)
    except SyntaxError as error:  # IndentationError too
        raise TaskFileError(f"{name}.py cannot be imported: line {error.lineno}: {error.msg}"
                            f"\n    {(error.text or '').strip()}") from None
    except Exception as error:  # noqa: BLE001 (any error at import: one line, not a traceback)
        problem = import_problem(error, name)
        raise TaskFileError(f"{name}.py cannot be imported: {problem}") from None


def import_problem(error, name):
    """"No module named 'torch' (line 3)": why importing task file `name` failed, and where."""
    text = str(error) if isinstance(error, ImportError) else f"{type(error).__name__}: {error}"
    lines = [frame.lineno for frame in traceback.extract_tb(error.__traceback__)
             if os.path.basename(frame.filename) == f"{name}.py"]
    return text + (f" (line {lines[-1]})" if lines else "")
