"""The lab's pytest plugin (given): readable failures, a time limit, a progress table, Gradescope.

conftest.py loads it; its time limits live in grading/harness.py.

* A test that reaches an unimplemented TODO fails with one line naming the task.
* A failed check prints its own message (quantity, inputs, expected vs got, likely cause).
  Any other error shows its type, text, and the line of your file it came from; never
  a blank message. Output your code printed is cut to its first lines.
* Importing a task file, setting up a test and running it each have a time limit of
  TIME_LIMIT seconds (grading/harness.py); a session stuck past it is ended by a backstop.
  Once a task's function has run past its limit, the later tests of that task and of
  the tasks that use it (lab.USES) get SHORT_LIMIT: one loop costs seconds, not minutes.
* Every run ends with a table of passed tests per task.
* The fixtures `memory`, `scheduler` and `tis` are the one place where tests
  reach the task modules (through grading.load).
* `--gradescope results.json` also writes the results in Gradescope's format
  (grading/gradescope.py, which the autograder uses too). It lists every graded test
  collected, with its share of its task's points: a test that did not run scores 0.
  The file is rewritten after every test, so even a session that dies midway leaves
  a file that says so.
"""

import contextlib
import gc
import json
import os
import threading
from collections.abc import Generator
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, NamedTuple

import pytest

import grading
import lab
from grading import gradescope, harness
from grading.harness import TIME_LIMIT, TimeLimitExceeded, time_limit
from lab.input_checks import ContractError
from scheduler_core import SchedulerError

OUTPUT_LINES = 10  # lines of a failing test's printed output that are shown
# seconds per test phase once a function the test uses overran (the autograder, whose every
# call starts a process after one overran, sets more with LAB_SHORT_LIMIT)
SHORT_LIMIT = float(os.environ.get("LAB_SHORT_LIMIT", "0.5"))


class Outcome(NamedTuple):
    """How a graded test ended."""

    task: str
    passed: bool
    message: str  # why it failed ("" if it passed)


@dataclass
class State:
    """The plugin's state for one session, in config.stash[STATE]."""

    watchdog: harness.Watchdog
    stderr: int  # the terminal's stderr, for the last resort (see pytest_configure)
    # graded test -> task, every one collected; the graded tests meant to run (after -k);
    # graded test -> how it ended
    tests: dict[str, str] = field(default_factory=dict)
    selected: list[str] = field(default_factory=list)
    results: dict[str, Outcome] = field(default_factory=dict)
    # task module -> why it cannot be imported (tried once per session), and the test that
    # showed why first
    import_errors: dict[str, str] = field(default_factory=dict)
    shown: dict[str, str] = field(default_factory=dict)
    # task -> (its function, the test) that first ran past its time limit
    overran: dict[str, tuple[str, str]] = field(default_factory=dict)
    # the test whose phase runs now (set by `limited` before the watchdog can ask) and its limit
    running: pytest.Item = field(init=False)
    limit: float = TIME_LIMIT
    exitstatus: int = 1  # pytest's, once the session finishes


STATE = pytest.StashKey[State]()
LIMIT = pytest.StashKey[tuple[float, str]]()  # item.stash: (seconds, why) of its time limit


def load(config: pytest.Config, name: str) -> ModuleType:
    """grading.load, whose import runs under the test's set-up time limit. A task file that
    cannot be imported is tried once per session, so a loop in it costs one limit."""
    errors = config.stash[STATE].import_errors
    if name not in errors:
        try:
            return grading.load(name)
        except TimeLimitExceeded as error:
            errors[name] = (
                f"importing it ran for more than {TIME_LIMIT:g} s: {error}{harness.where(error)}"
            )
        except grading.TaskFileError as error:
            errors[name] = error.why
    raise grading.TaskFileError(name, errors[name])


def task_module(request: pytest.FixtureRequest, name: str) -> ModuleType:
    """load(name) for a test. A test of the given code (no task in its name) whose task
    file cannot be imported is skipped: the graded tests already report the file."""
    try:
        return load(request.config, name)
    except grading.TaskFileError as error:
        if lab.task_of(request.node.name) is None:
            pytest.skip(
                f"{str(error).splitlines()[0]} (this test of the given code in it "
                "runs once it imports)"
            )
        raise


@pytest.fixture
def memory(request):
    """The Task 1 module under test: yours, or the reference with RL_SOLUTIONS=1."""
    return task_module(request, "memory")


@pytest.fixture
def scheduler(request):
    """The Task 2 module under test."""
    return task_module(request, "scheduler")


@pytest.fixture
def tis(request):
    """The Task 3 module under test."""
    return task_module(request, "tis")


def pytest_addoption(parser):
    parser.addoption(
        "--gradescope",
        metavar="PATH",
        help="also write the results in Gradescope's results.json format to PATH",
    )
    if grading.SOLUTIONS_DIR.is_dir():  # a students' copy has no reference to switch to
        parser.addoption(
            "--solutions",
            action="store_true",
            help="test the reference solutions (the same as RL_SOLUTIONS=1)",
        )


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("solutions", False):
        grading.choose_reference()
    try:
        grading.use_reference()
    except ValueError as error:
        raise pytest.UsageError(str(error)) from error
    path = config.getoption("gradescope")
    problem = path and harness.cannot_write(path)
    if problem:
        raise pytest.UsageError(f"--gradescope {path}: {problem}")
    # The terminal's stderr for the last resort: while a test runs, pytest points
    # descriptor 2 at a file of its own, which an ended process never shows.
    config.stash[STATE] = State(
        watchdog=harness.Watchdog(lambda label, seconds: abort(config, label, seconds)),
        stderr=os.dup(2),
    )


def pytest_report_header(config):
    return f"Lab 20: testing {grading.code_under_test()}"


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Count each task's tests before -k deselects any, so points never move between tests."""
    for item in items:
        if task := lab.task_of(item.name):
            config.stash[STATE].tests[item.name] = task
    for item in items:
        # a per-item override of pytest's method, on purpose (mypy flags every such assignment)
        item.repr_failure = short_failure(item, item.repr_failure)  # type: ignore[method-assign]


def short_failure(item, repr_failure):
    """An item's repr_failure that skips pytest's traceback where the lab's one-line message
    replaces it anyway (see pytest_runtest_makereport): formatting 50 tracebacks of TODOs
    would double the time of a run on the stubs."""

    def shortened(excinfo, *args, **kwargs):
        text, short = message(excinfo.value, item)
        return text if short else repr_failure(excinfo, *args, **kwargs)

    return shortened


def pytest_collection_finish(session: pytest.Session) -> None:
    # What is loaded by now (pytest, numpy, the lab, the collected tests) lives until the
    # end: frozen, the garbage collector's full passes skip it (one such pass during the
    # tests would otherwise take some 40 ms).
    gc.freeze()
    session.config.stash[STATE].selected = [
        item.name for item in session.items if lab.task_of(item.name)
    ]
    write_gradescope(session.config, finished=False)


def label(item):
    task = lab.task_of(item.name)
    return f"{item.name} (Task {task}, {lab.file_of(task)})" if task else item.name


def limit_of(item: pytest.Item) -> tuple[float, str]:
    """(seconds, why) of a test's time limit: TIME_LIMIT, or SHORT_LIMIT once a function of
    its task, or of a task its task uses, has run past its limit in an earlier test."""
    task = lab.task_of(item.name)
    if task is None:  # not a graded test: no task of its can have overrun
        return TIME_LIMIT, ""
    for slow, (function, test) in item.config.stash[STATE].overran.items():
        if task == slow or slow in lab.USES.get(task, ()):
            return SHORT_LIMIT, (
                f" (the short limit: {function} already ran past {TIME_LIMIT:g} s in {test})"
            )
    return TIME_LIMIT, ""


def overran(item: pytest.Item, error: BaseException) -> None:
    """Note the task whose function ran past the limit: the function the student's innermost
    line is in (may_start in a test of Task 2, say), else the test's own task."""
    frame = harness.student_frame(error)
    task = lab.task_of_function(frame.name) if frame else None
    if task is None:
        task = lab.task_of(item.name)
    if task is not None:
        item.config.stash[STATE].overran.setdefault(
            task,
            (
                frame.name if frame and frame.name == lab.TASKS[task].what else f"Task {task}",
                item.name,
            ),
        )


def under_limits(item):
    """True for every test but the tools' own, which run whole pytest sessions
    (tools/test_harness.py) under limits of their own."""
    return item.path.parent.name != "tools"


def limited(item: pytest.Item) -> contextlib.AbstractContextManager:
    """The time limit for one phase of a test (under_limits); the test's last resort
    (pytest_runtest_protocol) covers all three phases."""
    if not under_limits(item):
        return contextlib.nullcontext()
    state = item.config.stash[STATE]
    item.stash[LIMIT] = limit_of(item)
    state.running, state.limit = item, item.stash[LIMIT][0]
    return time_limit(label(item), state.watchdog, state.limit, last_resort=False)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(
    item: pytest.Item, nextitem: pytest.Item | None
) -> Generator[None, Any, None]:
    """faulthandler's last resort (grading/harness.py), armed once for the test's setup,
    call and teardown: each a phase of at most TIME_LIMIT + BACKSTOP seconds."""
    if not under_limits(item):
        yield
        return
    with harness.last_resort(
        3 * (TIME_LIMIT + harness.BACKSTOP) + 5, item.config.stash[STATE].stderr
    ):
        yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item):
    with limited(item):
        yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    with limited(item):
        yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item):
    with limited(item):
        yield


def message(error: BaseException, item: pytest.Item) -> tuple[str, bool]:
    """(text, short) for a failure of test `item`: the lab's own text for its checks and
    TODOs (lab.TaskNotDone), else the type, text and the student's line (harness.describe;
    a student's own NotImplementedError too). `short`: the text can replace pytest's
    traceback (always, except for an error with no frame in a task file)."""
    text = str(error)
    if isinstance(error, TimeLimitExceeded):
        limit, why = item.stash.get(LIMIT, (TIME_LIMIT, ""))
        return (
            f"TimeLimitExceeded: this test ran for more than {limit:g} s{why}: {text}"
            f"{harness.where(error)}",
            True,
        )
    if isinstance(error, grading.TaskFileError):
        return text, True
    if isinstance(error, lab.TaskNotDone):
        return text, True  # a TODO: one line naming the task
    if isinstance(error, (SchedulerError, ContractError)):
        # the simulator's or the toy's check names the rule a task function broke
        return f"{type(error).__name__}: {text}", True
    if isinstance(error, AssertionError) and text and harness.student_frame(error) is None:
        return text, True  # a check of the tests (grading/feedback.py)
    return harness.describe(error), harness.student_frame(error) is not None


def cut(text, lines=OUTPUT_LINES, chars=2000):
    """The first `lines` lines of printed output (at most `chars` characters), noting the cut."""
    kept = text[:chars].splitlines()[:lines]
    rest = text[len("\n".join(kept)) :].strip("\n")
    if not rest:
        return text
    return "\n".join(kept) + (
        f"\n... ({len(rest.splitlines())} more lines, {len(rest)} characters, cut)\n"
    )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call) -> Generator[None, Any, None]:
    report = (yield).get_result()
    report.sections = [(title, cut(content)) for title, content in report.sections]
    if call.when != "call" and not report.failed:
        return
    text, state = "", item.config.stash[STATE]
    if report.failed:
        error = call.excinfo.value
        text, short = message(error, item)
        if isinstance(error, TimeLimitExceeded):
            overran(item, error)
        if isinstance(error, lab.TaskNotDone):
            item.user_properties.append((gradescope.TODO, error.task))
        if (
            isinstance(error, grading.TaskFileError)
            and state.shown.setdefault(error.module, item.name) != item.name
        ):
            report.longrepr = (
                f"{error.module}.py cannot be imported (the reason is shown "
                f"above, at {state.shown[error.module]})"
            )
        elif short:
            report.longrepr = text
        text += "".join(
            f"\n{title}:\n{content}"
            for title, content in report.sections
            if "stdout" in title or "stderr" in title
        )
    if task := lab.task_of(item.name):
        state.results[item.name] = Outcome(task, report.passed, text)
        write_gradescope(item.config, finished=False)


def progress_rows(config: pytest.Config) -> dict[str, tuple[int, int]]:
    """{task: (passed, collected)} for the tasks with a test that was meant to run."""
    state, rows = config.stash[STATE], {}
    for name in state.selected:
        task = state.tests[name]
        rows[task] = (0, sum(t == task for t in state.tests.values()))
    for outcome in state.results.values():
        if outcome.task in rows:
            done, total = rows[outcome.task]
            rows[outcome.task] = (done + outcome.passed, total)
    return rows


def pytest_terminal_summary(terminalreporter, config):
    rows = progress_rows(config)
    write = terminalreporter.write_line
    if not rows:
        return
    write("")
    write(f"Lab 20 progress, testing {grading.code_under_test()}:")
    write(f"  {'task':<5} {'what':<42} {'file':<13} passed")
    for task in (t for t in lab.TASKS if t in rows):
        done, total = rows[task]
        mark = "  done" if done == total else ""
        write(
            f"  {task:<5} {lab.TASKS[task].what:<42} {lab.file_of(task):<13} {done}/{total}{mark}"
        )
    not_run = [
        name for name in config.stash[STATE].selected if name not in config.stash[STATE].results
    ]
    if not_run:
        write(
            f"  {len(not_run)} graded tests did not run (the session stopped early): they score 0"
        )
    if config.getoption("gradescope"):
        write(f"Gradescope results written to {config.getoption('gradescope')}")


def pytest_sessionfinish(session: pytest.Session) -> None:
    config, state = session.config, session.config.stash[STATE]
    if any(name not in state.results for name in state.selected) and session.exitstatus == 0:
        session.exitstatus = pytest.ExitCode.INTERRUPTED  # stopped early is never a pass
    state.exitstatus = int(session.exitstatus)
    write_gradescope(config, finished=True)


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """A thread the student's code left running would keep Python from exiting: exit anyway."""
    state = config.stash.get(STATE, None)  # None if pytest_configure stopped early
    if state is not None:
        os.close(state.stderr)
    if any(
        t.is_alive() and not t.daemon
        for t in threading.enumerate()
        if t is not threading.main_thread()
    ):
        print("Lab 20: your code left a thread running; stopping it.", flush=True)
        harness._exit(state.exitstatus if state is not None else 1)


def abort(config: pytest.Config, label: str, seconds: float) -> None:
    """The backstop (from the watchdog thread): say which test is stuck (`label` names it with
    its task and file), save the JSON."""
    capture = config.pluginmanager.getplugin("capturemanager")
    if capture:
        capture.suspend_global_capture()
    state = config.stash[STATE]
    name = state.running.name
    text = (
        f"{label} ignored its {state.limit:g} s time limit and was still running after "
        f"{seconds:.0f} s (does it catch every exception, or turn off signals?), so grading "
        "stopped here. Tests that did not run score 0."
    )
    if task := lab.task_of(name):
        state.results[name] = Outcome(task, False, text)
    write_gradescope(config, finished=False, why=text)
    print(f"\nLab 20: {text}", flush=True)


def write_gradescope(config: pytest.Config, finished: bool, why: str | None = None) -> None:
    """Write (or rewrite) the Gradescope file, if one was asked for, through a temporary file."""
    path = config.getoption("gradescope")
    if not path:
        return
    state = config.stash[STATE]
    not_run = [name for name in state.selected if name not in state.results]
    notes = []
    if why or not finished:
        notes.append(
            why
            or (
                "Grading did not finish (the session was ended from inside the "
                "tested code?). Tests that did not run score 0."
            )
        )
    elif not_run:
        notes.append(f"Grading stopped early: {len(not_run)} graded tests did not run and score 0.")
    results = gradescope.results(
        state.tests,
        {
            name: None if outcome.passed else outcome.message
            for name, outcome in state.results.items()
        },
        notes=notes,
    )
    harness.write_atomically(path, json.dumps(results, indent=1))
