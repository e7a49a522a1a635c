"""The facts every file of the lab shares (given): the tasks and their points, the student
modules, Task 3's schemes (SCHEME_TABLE), the GPU's size, and TaskNotDone, what a TODO raises.
Written here once; everything else imports them.
This module imports nothing of the lab's, so that any file may import it.
"""

import re
from typing import NamedTuple


class Task(NamedTuple):
    module: str  # the student module it lives in
    what: str  # the function to implement (or what the end-to-end tests use)
    points: float  # split evenly over the task's tests
    extra: bool = False  # extra credit: its points come on top of the 100


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


class Scheme(NamedTuple):
    """One weighting scheme of Task 3: everything the lab says about it, in one row."""

    name: str  # its name in tables, figures and the JSON
    task: str  # the task whose function computes it
    argument: str  # what that function takes to compute it (scheme, or level for 3c)
    label: str  # how figures name it
    color: str  # its colour in every figure
    marker: str  # its marker too, so lines of close colours (or printed in grey) stay apart
    family: str  # "token" or "seq": the length sweep's group (weights per token or per response)
    story: str = ""  # its line in the README's story (Part 3 draws these bold; --staleness and
    # --learning-curves train them), or "" if it is not in the story


# Task 3's schemes, in the order tables and figures show them. Adding a scheme is a row here
# plus its maths in the student file and the reference.
SCHEME_TABLE = (
    Scheme("none", "3a", "none", "none", "black", "o", "token", "none (stale as on-policy)"),
    Scheme("token", "3a", "token", "token", "tab:blue", "s", "token"),
    Scheme("token_tis", "3a", "token_tis", "token_tis", "tab:green", "^", "token", "token_tis"),
    Scheme("seq", "3a", "seq", "seq", "tab:red", "D", "seq"),
    Scheme("seq_tis", "3a", "seq_tis", "seq_tis", "tab:orange", "v", "seq", "seq_tis"),
    Scheme("token_mask", "3c", "token", "token_mask (3c)", "tab:cyan", "P", "token"),
    Scheme("seq_mask", "3c", "seq", "seq_mask (3c)", "tab:pink", "X", "seq"),
    Scheme("geo_mask", "3c", "geo", "geo_mask (3c)", "tab:olive", "*", "seq"),
)
SCHEME = {scheme.name: scheme for scheme in SCHEME_TABLE}
# importance_weights' schemes (Task 3a)
SCHEMES = tuple(s.name for s in SCHEME_TABLE if s.task == "3a")
# masked_weights' levels (Task 3c), and the scheme each is shown as
MASKED = {s.argument: s.name for s in SCHEME_TABLE if s.task == "3c"}
MASK_LEVELS = tuple(MASKED)
# the README's story: the schemes drawn bold, and trained by --staleness and --learning-curves
STORY = tuple(s.name for s in SCHEME_TABLE if s.story)

GPU_GB = 80  # memory of one H100 (or A100 80GB), in GB = 10**9 bytes

_TEST_NAME = re.compile(r"test_task(\d[a-z]?)_")


def task_of(test_name: str) -> str | None:
    """The task a test grades: test_task2b_fifo -> "2b", test_task3_x -> "3", test_toy_x -> None."""
    match = _TEST_NAME.match(test_name)
    return match[1] if match else None


def task_of_function(name: str) -> str | None:
    """The task whose function is `name`: "may_start" -> "2a"; None for any other name."""
    return next((task for task, spec in TASKS.items() if spec.what == name), None)


def file_of(task: str) -> str:
    """The student file of a task: "2b" -> "scheduler.py"."""
    return TASKS[task].module + ".py"


class TaskNotDone(NotImplementedError):
    """A task's function is still its TODO: each stub raises it, `raise TaskNotDone("2b")`.

    `task` is the task's id ("2b"), which run.py, the tests and the autograder read instead
    of the message. A NotImplementedError, so `except NotImplementedError` still catches it.
    """

    def __init__(self, task: str) -> None:
        if task not in TASKS:
            raise ValueError(f"task must be one of {list(TASKS)}, got {task!r}")
        super().__init__(f"Task {task} {TASKS[task].what} ({file_of(task)}) is not implemented yet")
        self.task = task

    def __reduce__(self) -> tuple[type, tuple[str]]:
        return TaskNotDone, (self.task,)  # pickle and copy rebuild it from its task
