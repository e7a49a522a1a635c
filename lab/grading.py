"""The lab's pytest plugin (given): readable failures, a time limit, a progress table.

conftest.py loads it; tools/check_release.py uses its time limit.


* A test that reaches an unimplemented TODO fails with one line naming the task.
* A failed check prints its own message (quantity, inputs, expected vs got, likely cause).
* A test that runs longer than TIME_LIMIT seconds fails (an endless loop never hangs grading).
* Every run ends with a table of passed tests per task.
* The fixtures `memory`, `scheduler` and `tis` are the one place where tests
  reach the task modules (through lab.load).
* `--gradescope results.json` also writes the results in Gradescope's format,
  with the points per task from lab.TASKS.
"""
import contextlib
import json
import signal
from pathlib import Path

import pytest

import lab
from scheduler_core import SchedulerError

TIME_LIMIT = 5  # seconds per test; every test here takes well under one
SHORT = (NotImplementedError, AssertionError, SchedulerError, TimeoutError, lab.TaskFileError)
TASK_FILES = {module + ".py" for module in lab.STUDENT_MODULES}


def where(excinfo):
    """' (stopped in scheduler.py, line 37, in may_start)' for the innermost task-file frame."""
    for entry in reversed(excinfo.traceback):
        if Path(entry.path).name in TASK_FILES:
            return f" (stopped in {Path(entry.path).name}, line {entry.lineno + 1}, in {entry.name})"
    return ""


@pytest.fixture
def memory():
    """The Task 1 module under test: yours, or the reference with RL_SOLUTIONS=1."""
    return lab.load("memory")


@pytest.fixture
def scheduler():
    """The Task 2 module under test."""
    return lab.load("scheduler")


@pytest.fixture
def tis():
    """The Task 3 module under test."""
    return lab.load("tis")


def pytest_addoption(parser):
    parser.addoption("--gradescope", metavar="PATH",
                     help="also write the results in Gradescope's results.json format to PATH")
    parser.addoption("--solutions", action="store_true",
                     help="test the reference solutions (the same as RL_SOLUTIONS=1)")


def pytest_configure(config):
    if config.getoption("solutions"):
        lab.choose_reference()
    try:
        lab.use_reference()
    except ValueError as error:
        raise pytest.UsageError(str(error))
    config.lab_results = {}  # test name -> (task, passed, message)


def pytest_report_header(config):
    return f"Lab 20: testing {lab.code_under_test()}"


def _on_time_limit(signum, frame):
    raise TimeoutError(f"this test ran for more than {TIME_LIMIT} s; "
                       "is there a loop in your code that never ends?")


@contextlib.contextmanager
def time_limit():
    """Raise TimeoutError in the code inside after TIME_LIMIT seconds (Unix only:
    Windows has no alarm signal, so there the code runs without a limit)."""
    if not hasattr(signal, "SIGALRM"):
        yield
        return
    previous = signal.signal(signal.SIGALRM, _on_time_limit)
    signal.alarm(TIME_LIMIT)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    with time_limit():
        yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    report = (yield).get_result()
    if call.when == "setup" and report.passed:
        return
    if call.when == "call" or report.failed:
        message = ""
        if report.failed and call.excinfo.errisinstance(SHORT):
            error = call.excinfo.value
            message = str(error)
            if isinstance(error, TimeoutError):
                message += where(call.excinfo)
            if not isinstance(error, (AssertionError, NotImplementedError, lab.TaskFileError)):
                message = f"{type(error).__name__}: {message}"
            report.longrepr = message
        elif report.failed:
            message = call.excinfo.exconly()
        item.config.lab_results[item.name] = (lab.task_of(item.name), report.passed, message)


def pytest_terminal_summary(terminalreporter, config):
    rows = {}
    for task, passed, _ in config.lab_results.values():
        if task:
            done, total = rows.get(task, (0, 0))
            rows[task] = (done + passed, total + 1)
    if not rows:
        return
    write = terminalreporter.write_line
    write("")
    write(f"Lab 20 progress, testing {lab.code_under_test()}:")
    write(f"  {'task':<5} {'what':<42} {'file':<13} passed")
    for task in (t for t in lab.TASKS if t in rows):
        done, total = rows[task]
        mark = "  done" if done == total else ""
        write(f"  {task:<5} {lab.TASKS[task].what:<42} {lab.file_of(task):<13} {done}/{total}{mark}")
    if config.getoption("gradescope"):
        write(f"Gradescope results written to {config.getoption('gradescope')}")


def pytest_sessionfinish(session):
    path = session.config.getoption("gradescope")
    if path:
        with open(path, "w") as out:
            json.dump(gradescope_results(session.config.lab_results), out, indent=1)


def gradescope_results(results):
    """Gradescope's results.json: a test's max_score is its task's points / its tests.
    An extra-credit test has max_score 0 and scores its share when it passes."""
    counts = {}
    for task, _, _ in results.values():
        counts[task] = counts.get(task, 0) + 1
    tests = []
    for name, (task, passed, message) in results.items():
        if task is None:
            continue
        _, what, points, extra = lab.TASKS[task]
        share = points / counts[task]
        prefix = "Extra credit: " if extra else ""
        tests.append(dict(name=f"{prefix}Task {task} {what} ({lab.file_of(task)}): {name}",
                          score=share if passed else 0.0, max_score=0.0 if extra else share,
                          output=message))
    return dict(score=round(sum(t["score"] for t in tests), 6), tests=tests)
