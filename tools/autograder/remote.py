"""The autograder's pytest plugin: the task modules the tests get are stand-ins whose
functions run in a child process (serve.py), so no student code runs in this one.

    LAB_REMOTE_DIR=/tmp/x python -m pytest -p grader.remote test_rl_systems.py ...

LAB_REMOTE_DIR is a folder with the given files and the student's three task files. The
child runs there, as the unprivileged user LAB_REMOTE_USER when this process is root (as
Gradescope's is), with limits on its memory, CPU time, processes and file sizes (LIMITS),
in the memory cgroup LAB_REMOTE_CGROUP and the kill cgroup LAB_REMOTE_KILL_CGROUP if there
are, in the box LAB_REMOTE_BOX (box.py: PID and IPC namespaces of its own) if the machine
allows one, and LAB_REMOTE_TMP as its temporary folder. A child is started, and has
imported numpy and the lab's given modules, before the test that needs it begins, so the
student's import gets the test's whole time limit, as locally. Importing a task module
asks the child to import the student's file, so grading.load reports a file that cannot be
imported, once per run, as it does locally. Each call sends the arguments and gets back
the result (at most ANSWER_LIMIT bytes and VALUE_LIMIT values as the tests walk it), the
arrays it changed in place, or the student's error, which is raised here as the same kind
of error with its message cut to MESSAGE_LIMIT characters (a TODO, lab.TaskNotDone, as
itself with its task, which the child sends as data). A call past the test's time
limit is interrupted in the child, as locally, and the child kept if it answers that call
and sends nothing more; if the child hangs, dies or sends something that is not the
answer to that call, the call fails and the next one starts a fresh child.

The run ends itself at LAB_RUN_LIMIT seconds: a call then running fails, and every test
after it fails without running, each saying so, so the report is written whole.

The task files are graded one after another, each in a child of its own: the tests are
ordered by the task module they use, and before the first test of the next file every
process, IPC object and file of the student's user is removed (student.clean, with the
places listed in the file LAB_REMOTE_PLACES) and a fresh temporary folder made. So one
file's threads, children, CPU use and crashes cannot touch another file's tests. Each
file's tests get FILE_TIME seconds in all; its unseen-input checks run after its public
tests, so a function's first call falls where it does locally, and a check that ran out
of time is run once more. The names of the tests collected are written to
LAB_REMOTE_COLLECTED before the first runs: the list grade.py holds the report to.
"""

import importlib.abc
import importlib.util
import itertools
import json
import os
import pwd
import resource
import select
import signal
import subprocess
import sys
import time
import types
from pathlib import Path

import numpy as np
import pytest
from _pytest.runner import runtestprotocol

import grading
import lab
from grading.gradescope import DID_NOT_RUN
from grading.harness import TIME_LIMIT, TimeLimitExceeded, time_limit
from scheduler_core import SchedulerError

from . import student, wire

CALL_LIMIT = 60  # seconds for one call; the tests' own time limit is usually hit first
START_LIMIT = 60  # seconds for a child to start and import numpy and the given modules
MEMORY_LIMIT = 4 * 2**30  # bytes of address space for each process of the child's
FILE_LIMIT = 64 * 2**20  # bytes: the largest file the child may write
FILE_TIME = 70  # seconds for all the tests of one task file in one run (three fit in 240)
CPU_LIMIT = 2 * FILE_TIME  # seconds of CPU time for each process of the student's
# The child's limits (its children inherit them): memory, CPU time (past it the process is
# killed), no core files, the size of any file it writes (past it, a write fails with an
# OSError); and, where it is not root, its number of processes.
LIMITS = {
    "RLIMIT_AS": (MEMORY_LIMIT, MEMORY_LIMIT),
    "RLIMIT_CPU": (CPU_LIMIT, CPU_LIMIT + 5),
    "RLIMIT_CORE": (0, 0),
    "RLIMIT_FSIZE": (FILE_LIMIT, FILE_LIMIT),
    "RLIMIT_NPROC": (256, 256),
}
INTERRUPT_GRACE = 1  # seconds the child gets to answer once its call is interrupted
RUN_LIMIT = float(os.environ.get("LAB_RUN_LIMIT", "inf"))  # seconds for this whole run
STARTED = time.monotonic()  # this run's start, as near as a plugin sees it
MESSAGE_LIMIT = 2000  # characters of a student's error message that reach pytest
# Values an answer may hold as the tests walk it (each number, string, container and array
# element, a list shared k times counted k times): 13 times the most any answer of the
# reference holds (73,745, in Task 2's simulate traces), low enough that the tests' walk of
# any answer (numpy's conversion, comparisons) costs a second and tens of MiB, not 2**41.
VALUE_LIMIT = 1_000_000
UNSEEN = "_unseen_inputs"  # how the names of the checks in test_fresh.py end
# Bytes an answer may take on the wire, per task module: well above the largest right answer
# the tests ask for (0.64 MB, from scheduler.py; simulate's traces take about 1.1 MB at 200
# steps), and low enough that decoding any answer adds at most about 50 MiB to this process
# (a million floats; tools/check_autograder.py measures each shape).
ANSWER_LIMIT = {"memory": 2**20, "scheduler": 4 * 2**20, "tis": 4 * 2**20}
# Bytes of JSON (answers but their numpy arrays) all the calls of one test may bring back:
# twice the most a test of the reference needs (1.04 MB, Task 2's simulate traces). They
# become Python objects here, up to 11 bytes of memory per byte (floats), a test may keep
# every answer (test_task3c_random_bands keeps 150), and the last failure's are kept after
# it: this bounds them all to about 2 x 22 MiB.
TEST_TEXT_LIMIT = 2 * 2**20
# The errors a student's code may raise that come back as themselves; any other kind
# comes back as a RuntimeError naming it.
ERRORS = {
    error.__name__: error
    for error in (
        ValueError,
        TypeError,
        KeyError,
        IndexError,
        ZeroDivisionError,
        AttributeError,
        NotImplementedError,
        ArithmeticError,
        OverflowError,
        FloatingPointError,
        RecursionError,
        MemoryError,
        RuntimeError,
        SchedulerError,
        StopIteration,
        NameError,
        UnboundLocalError,
        ImportError,
        ModuleNotFoundError,
        AssertionError,
    )
}


class RunOver(BaseException):
    """The run reached LAB_RUN_LIMIT (a BaseException: no test's `except` can catch it)."""


def run_over(during):
    raised = RunOver(
        f"{DID_NOT_RUN}: the run reached its {RUN_LIMIT:g} s limit {during}, so "
        "it ended there (the tests it did not finish score 0)"
    )
    raised.from_student = True
    return raised


def _limits():
    """In the child (without a box), before it runs anything: LIMITS."""
    for name, (soft, hard) in LIMITS.items():
        if name != "RLIMIT_NPROC" or os.geteuid() != 0:
            resource.setrlimit(getattr(resource, name), (soft, hard))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)


class Child:
    """The student's code, in a process of its own."""

    def __init__(self, folder, user, tmp, cgroups, box):
        self.folder, self.user, self.tmp, self.cgroups, self.box = folder, user, tmp, cgroups, box
        self.process = None
        self.ids = itertools.count()
        self.imported = []  # the task modules imported so far (a new child imports them too)
        self.module, self.began = None, None  # the task module of the tests now, since when
        self.wait = CALL_LIMIT  # seconds to wait for a reply
        self.largest = (0, 0.0)  # (bytes, seconds to decode) of the largest answer read
        self.most_values = 0  # the most values an answer held (VALUE_LIMIT)
        self.text = 0  # bytes of JSON read in the test now (TEST_TEXT_LIMIT)
        self.log = []  # the clean-ups between task files, for the grader's log

    def start(self):
        """Start a child and wait until it has imported numpy and the given modules (no
        student code yet): that time is the grader's, not the student's."""
        as_root = os.geteuid() == 0
        serve = [sys.executable, "-I", str(Path(self.folder, "_grader", "serve.py"))]
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": self.folder,
            "TMPDIR": self.tmp,
            "RL_SOLUTIONS": "0",
            "PYTHONDONTWRITEBYTECODE": "1",
            "OPENBLAS_NUM_THREADS": "1",
            "OMP_NUM_THREADS": "1",
        }
        pipes = dict(
            cwd=self.folder,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            env=env,
        )
        if as_root and self.box:  # box.py joins the cgroups, then drops root for the user
            entry = pwd.getpwnam(self.user)
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-I",
                    self.box,
                    str(entry.pw_uid),
                    str(entry.pw_gid),
                    json.dumps(LIMITS),
                    *(str(Path(c, "cgroup.procs")) for c in self.cgroups),
                    "--",
                    *serve,
                ],
                **pipes,
            )
        else:
            group = pwd.getpwnam(self.user).pw_gid if as_root else None
            self.process = subprocess.Popen(
                serve,
                preexec_fn=_limits,
                user=self.user if as_root else None,
                group=group,
                extra_groups=[] if as_root else None,
                **pipes,
            )
            for cgroup in self.cgroups if as_root else ():  # before any request
                try:
                    student.join_cgroup(cgroup, self.process.pid)
                except OSError as error:
                    self.log.append(f"could not put the child in {cgroup}: {error}")
        self.wait = START_LIMIT
        try:
            wire.send(self.process.stdin, {"ready": True, "id": -1})
            reply, _ = wire.receive(self._read, 1000)
            if reply.get("id") != -1:
                raise wire.WireError("the child's first answer was not its greeting")
        except BaseException:
            self.stop()
            raise
        finally:
            self.wait = CALL_LIMIT

    def stop(self):
        """End the child and all it started: its process group, and where there is one the
        kill cgroup (in the box, the root processes around it too, so its namespace ends)."""
        if self.process is not None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            if os.environ.get("LAB_REMOTE_KILL_CGROUP") and os.geteuid() == 0:
                try:
                    student.end_group(os.environ["LAB_REMOTE_KILL_CGROUP"])
                except OSError as error:
                    self.log.append(f"could not end the kill cgroup: {error}")
            self.process.wait()
            self.process = None

    def _read(self, n):
        left = RUN_LIMIT - (time.monotonic() - STARTED)
        ready, _, _ = select.select([self.process.stdout], [], [], max(0, min(self.wait, left)))
        if not ready and left <= self.wait:
            raise run_over("during this test")
        if not ready:
            raise TimeoutError(f"your code ran for more than {self.wait} s in one call")
        return os.read(self.process.stdout.fileno(), n)

    def pending(self):
        """True if the child sent bytes no request asked for (they would be read as the
        next answer)."""
        ready, _, _ = select.select([self.process.stdout], [], [], 0)
        return bool(ready)

    def ask(self, message, blobs=(), limit=wire.MAX_BYTES, objects=None):
        """Send one request, return (reply, decoder): the reply to this request, of at most
        `limit` bytes, decoded with the containers `objects`. If the test's time runs out,
        the call is interrupted and the child kept if it answers within INTERRUPT_GRACE;
        any other failure kills the child."""
        if time.monotonic() - STARTED > RUN_LIMIT:
            raise run_over("before this call")
        if self.process is not None and self.pending():
            self.log.append(
                f"{self.module}.py: bytes no request asked for came from the "
                "child; a fresh one answers the next call"
            )
            self.stop()
        if self.process is None:
            self.start()
        try:
            message = dict(message, id=next(self.ids))
            wire.send(self.process.stdin, message, blobs)
            reply, decoder = wire.receive(
                self._read, limit, objects, TEST_TEXT_LIMIT - self.text, VALUE_LIMIT
            )
            self.text += decoder.text
            self.largest = max(self.largest, (decoder.size, decoder.seconds))
            self.most_values = max(self.most_values, decoder.values)
            if reply.get("id") != message["id"]:
                raise wire.WireError(
                    "a reply to another request (was the wire written to from inside your code?)"
                )
            return reply, decoder
        except TimeLimitExceeded:
            if not self.interrupt(message["id"], limit, objects):
                self.stop()
            raise
        except wire.TooMuchText:  # read whole: the child answers the next call as usual
            raise
        except BaseException:  # our timeout or a broken child
            self.stop()
            raise

    def interrupt(self, number, limit, objects):
        """Interrupt the call `number` in the child (a signal its code gets as an error, as
        a local run's time limit); True if the child answered it in time."""
        try:
            os.kill(self.process.pid, signal.SIGUSR1)
            self.wait = INTERRUPT_GRACE
            reply, _ = wire.receive(self._read, limit, objects, value_limit=VALUE_LIMIT)
            time.sleep(0.01)  # what the child sends with its answer has arrived by now
            return reply.get("id") == number and not self.pending()
        except (Exception, TimeLimitExceeded, RunOver):  # noqa: BLE001 (then it is ended)
            return False
        finally:
            self.wait = CALL_LIMIT

    def switch(self, module):
        """Before a test of task module `module`: if the last test used another, end that
        file's child and clean up all the student's user left, so this file starts afresh."""
        if module == self.module:
            return
        self.stop()
        if self.module is not None and os.geteuid() == 0 and os.environ.get("LAB_REMOTE_PLACES"):
            places = json.loads(Path(os.environ["LAB_REMOTE_PLACES"]).read_text())
            user = student.User(self.user, places["places"], places["before"])
            log, _ = student.clean(
                user, also=[self.tmp], group=os.environ.get("LAB_REMOTE_KILL_CGROUP")
            )
            self.log += [f"after {self.module}.py: {line}" for line in log]
            try:
                os.mkdir(self.tmp, 0o700)
                os.chown(self.tmp, user.uid, user.gid)
            except OSError as error:
                self.log.append(f"could not make {self.tmp} again: {error}")
        self.module, self.began, self.imported = module, time.monotonic(), []
        if time.monotonic() - STARTED < RUN_LIMIT:
            try:  # before the test's time limit: the start is the grader's time
                self.start()
            except (Exception, TimeLimitExceeded) as error:  # noqa: BLE001 (the call will say)
                self.log.append(f"{module}.py: a child did not start: {error!r}")


CHILD = Child(
    os.environ.get("LAB_REMOTE_DIR", "."),
    os.environ.get("LAB_REMOTE_USER", "nobody"),
    os.environ.get("LAB_REMOTE_TMP", "/tmp"),
    [
        c
        for c in (os.environ.get("LAB_REMOTE_CGROUP"), os.environ.get("LAB_REMOTE_KILL_CGROUP"))
        if c
    ],
    os.environ.get("LAB_REMOTE_BOX"),
)


def _ask(message, blobs=(), objects=None):
    module, name = message["target"]
    limit = ANSWER_LIMIT.get(module, wire.MAX_BYTES)
    try:
        return CHILD.ask(message, blobs, limit, objects)
    except wire.TooManyValues:
        problem = (
            f"the answer of {name or module} holds more than {VALUE_LIMIT:,} values "
            "(numbers, strings, containers and array elements, a list counted once "
            "for each place it appears), more than any answer needs, so the grader "
            "refused it whole"
        )
    except (EOFError, BrokenPipeError):
        problem = (
            "your code ended the process it ran in (os._exit, a crash or running out of memory)"
        )
    except wire.TooLarge as error:
        problem = (
            f"the answer of {name or module} takes more than {limit / 2**20:g} MiB, more "
            f"than any answer in {module}.py needs, so the grader refused it"
            if not isinstance(error, wire.TooMuchText)
            else f"the answers of this test take more than {TEST_TEXT_LIMIT / 2**20:g} MiB "
            "(apart from numpy arrays), more than any test needs, so the grader "
            f"refused the answer of {name or module}"
        )
    except (wire.WireError, ValueError) as error:
        problem = f"the grader could not read your code's answer: {cut(str(error))}"
    raised = RuntimeError(problem)
    raised.from_student = True
    raise raised


def cut(text, limit=MESSAGE_LIMIT):
    """`text`, or its first `limit` characters and a note of how many were left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text) - limit:,} more characters)"


def readable(text, limit=MESSAGE_LIMIT):
    """`text` cut to `limit` characters, without what cannot be printed as UTF-8 (a lone
    surrogate becomes "?"): the student's process sends it, so its length is the grader's."""
    return cut(text, limit).encode("utf-8", errors="replace").decode("utf-8")


def _raise(reply, module):
    """Raise here the error of the child's `reply` to a request about task module `module`:
    a TODO as lab.TaskNotDone of the task it names (a task of lab.TASKS, or it is not one)."""
    kind, message, where = (readable(str(part)) for part in reply["error"])
    todo = reply.get("todo")
    if kind == "SyntaxError":
        raise grading.TaskFileError(module, message)
    if kind == "TaskNotDone" and type(todo) is str and todo in lab.TASKS:
        raised = lab.TaskNotDone(todo)
    elif kind in ERRORS:
        raised = ERRORS[kind](message + where)
    else:
        raised = RuntimeError(f"{kind}: {message}{where}")
    raised.from_student = True  # shown in one line (see pytest_runtest_makereport)
    raise raised


def copy_back(sent, changed, blobs):
    """Put into the arrays the grader sent the contents the child's code gave them in place,
    so that the tests' "inputs not changed" checks see what they would see locally."""
    for index, blob in changed:
        array = sent[index]
        new = np.frombuffer(blobs[blob], dtype=array.dtype)
        if new.size != array.size:
            raise wire.WireError("an array argument changed size")
        if not array.flags.writeable:
            raise ValueError("assignment destination is read-only")
        np.copyto(array, new.reshape(array.shape))


def remote_function(module, name):
    """A stand-in for the student's function `module.name`."""

    def call(*args, **kwargs):
        encode = wire.Encoder()
        tree_args, tree_kwargs = encode(list(args)), encode(dict(kwargs))
        sent = {n: obj for n, obj in encode.table.values()}
        reply, decode = _ask(
            {"call": True, "target": [module, name], "args": tree_args, "kwargs": tree_kwargs},
            encode.blobs,
            dict(sent),
        )
        if "error" in reply:
            _raise(reply, module)
        try:
            copy_back(encode.arrays, reply["changed"], decode.blobs)
            decode.update(reply["state"])
            return reply["value"]
        except (wire.WireError, KeyError, TypeError, ValueError, IndexError) as error:
            raised = RuntimeError(
                f"the grader could not read your code's answer: {cut(str(error))}"
            )
            raised.from_student = True
            raise raised from None

    call.__name__ = call.__qualname__ = name
    return call


class RemoteModule(types.ModuleType):
    """A task module whose attributes are asked of the child."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        reply, _ = _ask({"get": True, "target": [self.__name__, name]})
        if "error" in reply:
            kind, message, _where = reply["error"]
            if kind == "AttributeError":
                raise AttributeError(readable(str(message)))
            _raise(reply, self.__name__)
        value = remote_function(self.__name__, name) if reply.get("callable") else reply["value"]
        setattr(self, name, value)
        return value


class RemoteImporter(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """`import memory` here gives a RemoteModule, once the child has imported memory.py.
    An error in the student's file (or a loop in it) fails this import as it would fail
    a local one, so grading.load reports it and grading.plugin tries it once per run."""

    def find_spec(self, name, path=None, target=None):
        if name in lab.STUDENT_MODULES:
            return importlib.util.spec_from_loader(name, self)
        return None

    def create_module(self, spec):
        return RemoteModule(spec.name)

    def exec_module(self, module):
        reply, _ = _ask({"import": True, "target": [module.__name__, ""]})
        if "error" in reply:
            kind, message, where = (readable(str(part)) for part in reply["error"])
            raise ImportError(message if kind == "SyntaxError" else f"{kind}: {message}{where}")
        CHILD.imported.append(module.__name__)


sys.meta_path.insert(0, RemoteImporter())


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    """An error the student's code raised (or its process's end) in one line, not the
    stand-in's traceback: what and where in the student's file."""
    report = (yield).get_result()
    if report.failed and call.excinfo and getattr(call.excinfo.value, "from_student", False):
        error = call.excinfo.value
        name = "" if isinstance(error, (lab.TaskNotDone, RunOver)) else f"{type(error).__name__}: "
        report.longrepr = cut(f"{name}{error.args[0] if error.args else error}")


def module_of(item):
    """The task module a test uses (each uses one), or None for a test that uses none."""
    return next((m for m in lab.STUDENT_MODULES if m in getattr(item, "fixturenames", ())), None)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items):
    """One task file's tests after another's, in the order of lab.STUDENT_MODULES; within a
    file, its unseen-input checks last (after the public tests, as a local run has none)."""
    order = {None: -1, **{m: i for i, m in enumerate(lab.STUDENT_MODULES)}}
    items.sort(key=lambda item: (order[module_of(item)], item.name.endswith(UNSEEN)))
    if os.environ.get("LAB_REMOTE_COLLECTED"):
        Path(os.environ["LAB_REMOTE_COLLECTED"]).write_text(json.dumps([i.name for i in items]))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """A test after the run's limit, or of a file whose tests already ran FILE_TIME seconds,
    does not run."""
    if time.monotonic() - STARTED > RUN_LIMIT:
        raise run_over("before this test")
    if CHILD.module and CHILD.began and time.monotonic() - CHILD.began > FILE_TIME:
        raised = RuntimeError(
            f"{DID_NOT_RUN}: the tests of {CHILD.module}.py ran for more than {FILE_TIME} s in all"
        )
        raised.from_student = True
        raise raised


class UnseenRetry:
    """A plugin of its own (this module's pytest_runtest_protocol is the wrapper below)."""

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item, nextitem):
        """An unseen-input check that ran out of time runs once more (in the same child,
        which its interruption kept, or a fresh one): locally a slow call costs one test,
        and here the check would withhold the whole task."""
        if not item.name.endswith(UNSEEN):
            return None
        item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
        reports = runtestprotocol(item, nextitem=nextitem, log=False)
        if (
            any(r.failed and "TimeLimitExceeded" in str(r.longrepr) for r in reports)
            and time.monotonic() - STARTED < RUN_LIMIT
        ):
            item._initrequest()
            CHILD.text = 0
            reports = runtestprotocol(item, nextitem=nextitem, log=False)
        for report in reports:
            item.ihook.pytest_runtest_logreport(report=report)
        item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
        return True


def pytest_configure(config):
    config.pluginmanager.register(UnseenRetry(), "grader.remote.unseen-retry")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """Before a test: its task file's own child (CHILD.switch). After a test whose call
    ended the child, start the next one and import the task modules into it here, outside
    any time limit: a test that follows one that overran may have only grading.plugin's short
    limit, too short to start a process."""
    if module_of(item):
        CHILD.switch(module_of(item))
    CHILD.text = 0
    yield
    if CHILD.process is None and CHILD.imported and time.monotonic() - STARTED < RUN_LIMIT:
        try:
            with time_limit(limit=TIME_LIMIT):
                for module in CHILD.imported:
                    _ask({"import": True, "target": [module, ""]})
        except (Exception, TimeLimitExceeded):  # noqa: BLE001 (the next call will say)
            CHILD.stop()


def pytest_unconfigure(config):
    """End the last child; write the grader's figures to LAB_REMOTE_STATS: this process's
    peak memory, the largest answer and its decoding time, the clean-ups' log."""
    CHILD.stop()
    if os.environ.get("LAB_REMOTE_STATS"):
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        Path(os.environ["LAB_REMOTE_STATS"]).write_text(
            json.dumps(
                dict(
                    peak_mib=peak,
                    largest_answer=CHILD.largest,
                    most_values=CHILD.most_values,
                    log=CHILD.log,
                )
            )
        )
