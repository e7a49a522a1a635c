"""The autograder's pytest plugin: the task modules the tests get are stand-ins whose
functions run in a child process (serve.py), so no student code runs in this one.

    LAB_REMOTE_DIR=/tmp/x python -m pytest -p grader.remote test_rl_systems.py ...

LAB_REMOTE_DIR is a folder with the given files and the student's three task files. The
child runs there, as the unprivileged user LAB_REMOTE_USER when this process is root (as
Gradescope's is), with limits on its memory, processes and file sizes, and LAB_REMOTE_TMP
as its temporary folder. Importing a task module asks the child to import the student's
file, so lab.load reports a file that cannot be imported, once per run, as it does
locally. Each call sends the arguments and gets back the result (at most ANSWER_LIMIT
bytes), the arrays it changed in place, or the student's error, which is raised here as
the same kind of error. If the child hangs, dies or sends something that is not the
answer to that call, the call fails and the next one starts a fresh child.
"""
import importlib.abc
import importlib.util
import itertools
import os
import pwd
import resource
import select
import signal
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest

import lab
from lab.harness import TIME_LIMIT, TimeLimitExceeded, time_limit
from scheduler_core import SchedulerError

from . import wire

CALL_LIMIT = 60  # seconds for one call; the tests' own time limit is usually hit first
MEMORY_LIMIT = 4 * 2**30  # bytes of address space for the child
FILE_LIMIT = 64 * 2**20   # bytes: the largest file the child may write
# Bytes an answer may take on the wire, per task module: well above the largest right answer
# the tests ask for (Task 2's simulate traces: about 1.3 MB at 200 steps).
ANSWER_LIMIT = {"memory": 2**20, "scheduler": 16 * 2**20, "tis": 16 * 2**20}
# The errors a student's code may raise that come back as themselves; any other kind
# comes back as a RuntimeError naming it.
ERRORS = {error.__name__: error for error in
          (ValueError, TypeError, KeyError, IndexError, ZeroDivisionError, AttributeError,
           NotImplementedError, ArithmeticError, OverflowError, FloatingPointError,
           RecursionError, MemoryError, RuntimeError, SchedulerError, StopIteration,
           NameError, UnboundLocalError, ImportError, ModuleNotFoundError, AssertionError)}


def _limits():
    """In the child, before it runs anything: cap its memory, its number of processes and
    the size of any file it writes (past it, a write fails with an OSError)."""
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_LIMIT, FILE_LIMIT))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    if os.geteuid() != 0:
        resource.setrlimit(resource.RLIMIT_NPROC, (256, 256))


class Child:
    """The student's code, in a process of its own."""

    def __init__(self, folder, user, tmp):
        self.folder, self.user, self.tmp, self.process = folder, user, tmp, None
        self.ids = itertools.count()
        self.imported = []  # the task modules imported so far (a new child imports them too)

    def start(self):
        as_root = os.geteuid() == 0
        group = pwd.getpwnam(self.user).pw_gid if as_root else None
        self.process = subprocess.Popen(
            [sys.executable, "-I", str(Path(self.folder, "_grader", "serve.py"))],
            cwd=self.folder, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, start_new_session=True, preexec_fn=_limits,
            user=self.user if as_root else None, group=group,
            extra_groups=[] if as_root else None,
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": self.folder,
                 "TMPDIR": self.tmp, "RL_SOLUTIONS": "0", "PYTHONDONTWRITEBYTECODE": "1",
                 "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"})

    def stop(self):
        if self.process is not None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.process.wait()
            self.process = None

    def _read(self, n):
        ready, _, _ = select.select([self.process.stdout], [], [], CALL_LIMIT)
        if not ready:
            raise TimeoutError(f"your code ran for more than {CALL_LIMIT} s in one call")
        return os.read(self.process.stdout.fileno(), n)

    def ask(self, message, blobs=(), limit=wire.MAX_BYTES):
        """Send one request, return (reply, blobs): the reply to this request, of at most
        `limit` bytes. Any failure kills the child."""
        if self.process is None:
            self.start()
        try:
            message = dict(message, id=next(self.ids))
            wire.send(self.process.stdin, message, blobs)
            reply, reply_blobs = wire.receive(self._read, limit)
            if reply.get("id") != message["id"]:
                raise wire.WireError("a reply to another request (was the wire written to "
                                     "from inside your code?)")
            return reply, reply_blobs
        except BaseException:  # a timeout (ours or the test's) or a broken child
            self.stop()
            raise


CHILD = Child(os.environ.get("LAB_REMOTE_DIR", "."), os.environ.get("LAB_REMOTE_USER", "nobody"),
              os.environ.get("LAB_REMOTE_TMP", "/tmp"))


def _ask(message, blobs=()):
    module, name = message["target"]
    limit = ANSWER_LIMIT.get(module, wire.MAX_BYTES)
    try:
        return CHILD.ask(message, blobs, limit)
    except (EOFError, BrokenPipeError):
        problem = ("your code ended the process it ran in (os._exit, a crash or running out "
                   "of memory)")
    except wire.TooLarge:
        problem = (f"the answer of {name or module} takes more than {limit / 2**20:g} MiB, more "
                   f"than any answer in {module}.py needs, so the grader refused it")
    except (wire.WireError, ValueError) as error:
        problem = f"the grader could not read your code's answer: {error}"
    raised = RuntimeError(problem)
    raised.from_student = True
    raise raised


def readable(text):
    """`text` without what cannot be printed as UTF-8 (a lone surrogate becomes "?")."""
    return text.encode("utf-8", errors="replace").decode("utf-8")


def _raise(error):
    kind, message, where = (readable(str(part)) for part in error)
    if kind == "SyntaxError":
        raise lab.TaskFileError(message)
    raised = (ERRORS[kind](message + where) if kind in ERRORS
              else RuntimeError(f"{kind}: {message}{where}"))
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
        reply, blobs = _ask({"call": True, "target": [module, name], "args": tree_args,
                             "kwargs": tree_kwargs}, encode.blobs)
        if "error" in reply:
            _raise(reply["error"])
        decode = wire.Decoder(blobs, dict(sent))
        try:
            copy_back(encode.arrays, reply["changed"], blobs)
            decode.update(reply["state"])
            return decode(reply["value"])
        except (wire.WireError, KeyError, TypeError, ValueError, IndexError) as error:
            raised = RuntimeError(f"the grader could not read your code's answer: {error}")
            raised.from_student = True
            raise raised from None
    call.__name__ = call.__qualname__ = name
    return call


class RemoteModule(types.ModuleType):
    """A task module whose attributes are asked of the child."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        reply, blobs = _ask({"get": True, "target": [self.__name__, name]})
        if "error" in reply:
            kind, message, where = reply["error"]
            if kind == "AttributeError":
                raise AttributeError(message)
            _raise(reply["error"])
        if reply.get("callable"):
            value = remote_function(self.__name__, name)
        else:
            value = wire.Decoder(blobs)(reply["value"])
        setattr(self, name, value)
        return value


class RemoteImporter(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """`import memory` here gives a RemoteModule, once the child has imported memory.py.
    An error in the student's file (or a loop in it) fails this import as it would fail
    a local one, so lab.load reports it and lab.grading tries it once per run."""

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
        name = "" if isinstance(error, NotImplementedError) else f"{type(error).__name__}: "
        report.longrepr = f"{name}{error.args[0] if error.args else error}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """After a test whose call ended the child, start the next one and import the task
    modules into it here, outside any time limit: a test that follows one that overran
    may have only lab.grading's short limit, too short to start a process."""
    yield
    if CHILD.process is None and CHILD.imported:
        try:
            with time_limit(limit=TIME_LIMIT):
                for module in CHILD.imported:
                    _ask({"import": True, "target": [module, ""]})
        except (Exception, TimeLimitExceeded):  # noqa: BLE001 (the next call will say)
            CHILD.stop()


def pytest_unconfigure(config):
    CHILD.stop()
