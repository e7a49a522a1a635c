"""Whose code runs (given): the student's files or the reference, for every test and run.py.

Every test and run.py gets the task modules from `load`, which picks whose code
runs:

    python -m pytest -q                   # your memory.py, scheduler.py, tis.py
    RL_SOLUTIONS=1 python -m pytest -q    # solutions/memory.py, ... (instructors only)
    python -m pytest -q --solutions       # the same, in any shell (instructors only)

The rest of this room runs and grades the tests: plugin.py (pytest), harness.py (time
limits, where an error came from), feedback.py (messages and hints), gradescope.py.
"""

import importlib
import os
import traceback
from pathlib import Path
from types import ModuleType

from lab import STUDENT_MODULES


class TaskFileError(Exception):
    """Task file `module`.py could not be imported, and `why` (a syntax error, say)."""

    def __init__(self, module: str, why: str) -> None:
        super().__init__(f"{module}.py cannot be imported: {why}")
        self.module, self.why = module, why


# The reference; a student copy of the lab (tools/release.py) has none.
SOLUTIONS_DIR = Path(__file__).resolve().parent.parent / "solutions"


def use_reference() -> bool:
    """True if RL_SOLUTIONS=1, False if it is unset, empty or 0; ValueError otherwise."""
    value = os.environ.get("RL_SOLUTIONS", "0")
    if value not in ("", "0", "1"):
        raise ValueError(
            f"RL_SOLUTIONS must be 1 (reference solutions) or 0/unset (your files), got {value!r}"
        )
    if value == "1" and not SOLUTIONS_DIR.is_dir():
        raise ValueError(
            "RL_SOLUTIONS=1: the reference solutions are not part of this copy of the lab"
        )
    return value == "1"


def choose_reference() -> None:
    """The --solutions switch of run.py and pytest: RL_SOLUTIONS=1 without shell syntax,
    so it works in PowerShell and cmd too. Child processes inherit it."""
    os.environ["RL_SOLUTIONS"] = "1"


def test_seed() -> int:
    """The seed of the graded tests' random inputs: LAB_SEED if set (the autograder sets a
    fresh one, so answers hard-coded to the public inputs fail), else a fixed 2026."""
    value = os.environ.get("LAB_SEED", "2026")
    if not value.isdigit():
        raise ValueError(f"LAB_SEED must be a whole number >= 0, got {value!r}")
    return int(value)


def code_under_test() -> str:
    """A one-line description for headers: whose code is being run."""
    if use_reference():
        return "the reference solutions (solutions/, RL_SOLUTIONS=1)"
    return f"your files ({', '.join(module + '.py' for module in STUDENT_MODULES)})"


def load(name: str) -> ModuleType:
    """Import task module `name` ("memory", "scheduler" or "tis") from the right place."""
    if name not in STUDENT_MODULES:
        raise ValueError(f"name must be one of {sorted(STUDENT_MODULES)}, got {name!r}")
    module = f"solutions.{name}" if use_reference() else name
    try:
        return importlib.import_module(module)
    except SyntaxError as error:  # IndentationError too
        raise TaskFileError(
            name, f"line {error.lineno}: {error.msg}\n    {(error.text or '').strip()}"
        ) from None
    except Exception as error:  # noqa: BLE001 (any error at import: one line, not a traceback)
        raise TaskFileError(name, import_problem(error, name)) from None


def import_problem(error: BaseException, name: str) -> str:
    """ "No module named 'torch' (line 3)": why importing task file `name` failed, and where."""
    text = str(error) if isinstance(error, ImportError) else f"{type(error).__name__}: {error}"
    lines = [
        frame.lineno
        for frame in traceback.extract_tb(error.__traceback__)
        if os.path.basename(frame.filename) == f"{name}.py"
    ]
    return text + (f" (line {lines[-1]})" if lines else "")
