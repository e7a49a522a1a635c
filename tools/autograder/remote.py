"""The autograder's pytest plugin: the task modules the tests get are stand-ins whose
functions run in a child process (serve.py), so no student code runs in this one.

    LAB_REMOTE_DIR=/tmp/x python -m pytest -p grader.remote test_rl_systems.py ...

LAB_REMOTE_DIR is a folder with the given files and the student's three task files. The
child runs there, as the unprivileged user LAB_REMOTE_USER when this process is root (as
Gradescope's is), with a memory and process limit. Each call sends the arguments and
gets back the result, or the student's error, which is raised here as the same kind of
error. If the child hangs, dies or sends something that is not an answer, the call fails
and the next one starts a fresh child.
"""
import os
import pwd
import resource
import select
import signal
import subprocess
import sys
import types
from pathlib import Path

import pytest

import lab
from scheduler_core import SchedulerError

from . import wire

CALL_LIMIT = 60  # seconds for one call; the tests' own time limit is usually hit first
MEMORY_LIMIT = 4 * 2**30  # bytes of address space for the child
# The errors a student's code may raise that come back as themselves; any other kind
# comes back as a RuntimeError naming it.
ERRORS = {error.__name__: error for error in
          (ValueError, TypeError, KeyError, IndexError, ZeroDivisionError, AttributeError,
           NotImplementedError, ArithmeticError, OverflowError, FloatingPointError,
           RecursionError, MemoryError, RuntimeError, SchedulerError, StopIteration,
           NameError, UnboundLocalError, ImportError, ModuleNotFoundError, AssertionError)}


def _limits():
    """In the child, before it runs anything: cap its memory and its number of processes."""
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    if os.geteuid() != 0:
        resource.setrlimit(resource.RLIMIT_NPROC, (256, 256))


class Child:
    """The student's code, in a process of its own."""

    def __init__(self, folder, user):
        self.folder, self.user, self.process = folder, user, None

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
                 "RL_SOLUTIONS": "0", "PYTHONDONTWRITEBYTECODE": "1"})

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

    def ask(self, message, blobs=()):
        """Send one request, return (reply, blobs). Any failure kills the child."""
        if self.process is None:
            self.start()
        try:
            wire.send(self.process.stdin, message, blobs)
            return wire.receive(self._read)
        except BaseException:  # a timeout (ours or the test's) or a broken child
            self.stop()
            raise


CHILD = Child(os.environ.get("LAB_REMOTE_DIR", "."), os.environ.get("LAB_REMOTE_USER", "nobody"))


def _ask(message, blobs=()):
    try:
        return CHILD.ask(message, blobs)
    except (EOFError, BrokenPipeError):
        problem = ("your code ended the process it ran in (os._exit, a crash or running out "
                   "of memory)")
    except (wire.WireError, ValueError) as error:
        problem = f"the grader could not read your code's answer: {error}"
    raised = RuntimeError(problem)
    raised.from_student = True
    raise raised


def _raise(error):
    kind, message, where = error
    if kind == "SyntaxError":
        raise lab.TaskFileError(message)
    raised = (ERRORS[kind](message + where) if kind in ERRORS
              else RuntimeError(f"{kind}: {message}{where}"))
    raised.from_student = True  # shown in one line (see pytest_runtest_makereport)
    raise raised


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


for _name in lab.STUDENT_MODULES:  # lab.load("memory") imports these, not the files
    sys.modules[_name] = RemoteModule(_name)


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    """An error the student's code raised (or its process's end) in one line, not the
    stand-in's traceback: what and where in the student's file."""
    report = (yield).get_result()
    if report.failed and call.excinfo and getattr(call.excinfo.value, "from_student", False):
        error = call.excinfo.value
        name = "" if isinstance(error, NotImplementedError) else f"{type(error).__name__}: "
        report.longrepr = f"{name}{error.args[0] if error.args else error}"


def pytest_unconfigure(config):
    CHILD.stop()
