"""Whose code runs: your files, or the reference in solutions/.

Every test and run.py asks this module for the task modules, so one
environment variable switches the whole lab:

    python -m pytest -q                   # your memory.py, scheduler.py, tis.py
    RL_SOLUTIONS=1 python -m pytest -q    # solutions/memory.py, ...

It also holds the table of tasks: which function each task asks for, in which
file, and how many points it is worth in the autograder.
"""
import importlib
import os

# task id -> (file, what to implement, points). Test names carry the task id
# ("test_task2b_fifo"); the ids without a letter are the end-to-end checks
# that use a whole task at once.
TASKS = {
    "1a": ("memory.py", "model_state_bytes", 10),
    "1b": ("memory.py", "kv_cache_bytes", 10),
    "1c": ("memory.py", "rl_memory_gb", 15),
    "2a": ("scheduler.py", "may_start", 10),
    "2b": ("scheduler.py", "take_batch", 15),
    "2": ("scheduler.py", "simulate (2a + 2b together)", 10),
    "3a": ("tis.py", "importance_weights", 15),
    "3b": ("tis.py", "pg_estimate", 5),
    "3": ("tis.py", "the chapter's claims (3a + 3b together)", 10),
}

# module name -> the task that owns it; a test of task 2 imports only scheduler
MODULES = {"memory": "1", "scheduler": "2", "tis": "3"}


class TaskFileError(Exception):
    """A task file could not be imported (a syntax error, say)."""


def use_reference():
    """True if RL_SOLUTIONS=1, False if it is unset, empty or 0; ValueError otherwise."""
    value = os.environ.get("RL_SOLUTIONS", "0")
    if value not in ("", "0", "1"):
        raise ValueError(
            f"RL_SOLUTIONS must be 1 (reference solutions) or 0/unset (your files), got {value!r}"
        )
    return value == "1"


def code_under_test():
    """A one-line description for headers: whose code is being run."""
    if use_reference():
        return "the reference solutions (solutions/, RL_SOLUTIONS=1)"
    return "your files (memory.py, scheduler.py, tis.py)"


def load(name):
    """Import task module `name` ("memory", "scheduler" or "tis") from the right place."""
    if name not in MODULES:
        raise ValueError(f"name must be one of {sorted(MODULES)}, got {name!r}")
    try:
        return importlib.import_module(f"solutions.{name}" if use_reference() else name)
    except SyntaxError as error:  # IndentationError too
        raise TaskFileError(f"{name}.py cannot be imported: line {error.lineno}: {error.msg}"
                            f"\n    {(error.text or '').strip()}") from None
