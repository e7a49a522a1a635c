"""Running untrusted student code (given): a time limit nothing slips past, where errors come from.

grading/plugin.py (pytest) and run.py run every piece of student code inside

    with harness.time_limit("test_task2b_fifo (Task 2b, scheduler.py)", watchdog):
        ...

which works in three layers, each catching what gets past the one before:

1. After `limit` seconds (TIME_LIMIT, 5 s in tests) an alarm signal raises
   TimeLimitExceeded, a BaseException: `except Exception` cannot swallow it, and
   the alarm re-fires every REFIRE seconds in case a bare `except:` did.
2. The watchdog thread raises the same exception in the main thread REFIRE
   seconds later (at the limit itself where there is no alarm signal, as on
   Windows): this catches code that switched the alarm off.
3. BACKSTOP seconds after the limit the watchdog gives up on the student's
   code: it reports which piece of code was stuck, saves what can be saved,
   and ends the process. faulthandler (`last_resort`) does the same a little
   later in case even the watchdog cannot run: code that holds Python's lock
   (one long C call, such as sum(range(10**15))) lets no thread but
   faulthandler's own run.

Inside, os._exit raises StudentExit, so a stray exit fails one test instead of
ending grading silently. The rest of this file: where an error came from (a
task file or given code), and writing files whole or not at all.
"""

import contextlib
import ctypes
import faulthandler
import os
import signal
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path

import lab

TIME_LIMIT = float(os.environ.get("LAB_TIME_LIMIT", "5"))  # seconds; the harness tests set 1
HINT_LIMIT = min(1.0, TIME_LIMIT / 5)  # seconds for checking a hint (grading/feedback.py)
REFIRE = 0.5  # seconds between repeated attempts to stop overrunning code
BACKSTOP = TIME_LIMIT  # seconds past the limit after which the whole process ends
EXIT_STUCK = 3  # the exit status of a process ended by the backstop

ROOT = Path(__file__).resolve().parent.parent
_exit = os._exit  # kept before any student code can replace it


class TimeLimitExceeded(BaseException):
    """Student code ran past its time limit. A BaseException, like KeyboardInterrupt,
    so that a student's `except Exception: continue` does not swallow it."""

    def __str__(self):
        return "is there a loop in your code that never ends?"


class StudentExit(BaseException):
    """Student code called os._exit, which would end grading without a word."""

    def __str__(self):
        return f"your code called os._exit({self.args[0] if self.args else ''}), which ends Python"


def _refuse_exit(status=0):
    raise StudentExit(status)


def _raise_in_main(exception):
    """Make the main thread raise `exception` at its next Python instruction (None cancels)."""
    main = threading.main_thread().ident
    assert main is not None, "the main thread has always started"
    ctypes.pythonapi.PyThreadState_SetAsyncExc(
        ctypes.c_ulong(main), None if exception is None else ctypes.py_object(exception)
    )


class Watchdog(threading.Thread):
    """A thread that stops overrunning student code (layers 2 and 3 above).

    `abort(label, seconds)` is called from this thread when the backstop ends the
    process: it should say what was stuck and save the results so far."""

    def __init__(self, abort):
        super().__init__(name="lab time limit", daemon=True)
        self.abort = abort
        self.lock = threading.Lock()
        self.phase = None  # (label, start, limit, alarm armed?) while student code runs
        self.start()

    def run(self):
        while True:
            time.sleep(0.05)
            with self.lock:
                if self.phase is None:
                    continue
                label, start, limit, alarm = self.phase
                late = time.monotonic() - start - limit
                if late > BACKSTOP:
                    break
                if late > (REFIRE if alarm else 0):  # the alarm gets the first chance
                    _raise_in_main(TimeLimitExceeded)
        self.abort(label, time.monotonic() - start)
        sys.stdout.flush()
        sys.stderr.flush()
        _exit(EXIT_STUCK)

    def enter(self, label, limit, alarm):
        with self.lock:
            self.phase = (label, time.monotonic(), limit, alarm)

    def leave(self):
        """End the phase and cancel a TimeLimitExceeded still on its way to the main thread."""
        while True:
            try:
                with self.lock:
                    self.phase = None
                    _raise_in_main(None)
                return
            except TimeLimitExceeded:  # arrived just now, after the code it was meant for
                continue


def _has_alarm():
    """True where an alarm signal can interrupt this thread (Unix, main thread)."""
    return (
        hasattr(signal, "SIGALRM")
        and hasattr(signal, "setitimer")
        and threading.current_thread() is threading.main_thread()
    )


def _on_alarm(signum, frame):
    raise TimeLimitExceeded


class time_limit:
    """Run the code inside for at most `limit` seconds (see the module docstring).

    `label` names the code for the backstop's message. Without a watchdog only the
    alarm signal is used (and nothing at all where there is none). With one, the code
    also runs under its own `last_resort`, unless `last_resort=False` says an enclosing
    one covers it (grading/plugin.py arms one per test for its three phases: each
    arming waits for faulthandler's thread to stop, a millisecond on a busy machine)."""

    def __init__(self, label="", watchdog=None, limit=None, last_resort=True):
        self.label, self.watchdog = label, watchdog
        self.limit = TIME_LIMIT if limit is None else limit
        self.armed = watchdog is not None and last_resort

    def __enter__(self):
        self.alarm = _has_alarm()
        if self.alarm:
            self.previous = signal.signal(signal.SIGALRM, _on_alarm)
            signal.setitimer(signal.ITIMER_REAL, self.limit, REFIRE)
        if self.watchdog:
            self.watchdog.enter(self.label, self.limit, self.alarm)
        if self.armed:
            arm_last_resort(self.limit + BACKSTOP + 5)
        os._exit = _refuse_exit
        return self

    def __exit__(self, *exc):
        os._exit = _exit
        if self.alarm:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self.previous)
        if self.armed:
            faulthandler.cancel_dump_traceback_later()
        if self.watchdog:
            self.watchdog.leave()
        return False


def arm_last_resort(seconds, file=None):
    """In `seconds`, unless cancelled first (faulthandler.cancel_dump_traceback_later),
    print every thread's traceback to `file` (a file or a descriptor; sys.__stderr__ if
    None) and end the process: faulthandler's own thread does it, without Python's lock,
    so it works when nothing else can (layer 3)."""
    # sys.__stderr__ is None only without a console (pythonw); faulthandler's own default,
    # sys.stderr, is then the one left
    stderr = file or sys.__stderr__ or sys.stderr
    faulthandler.dump_traceback_later(seconds, exit=True, file=stderr)


@contextlib.contextmanager
def last_resort(seconds, file=None):
    """arm_last_resort(seconds, file) for the code inside, cancelled when it ends."""
    arm_last_resort(seconds, file)
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()


class shorter_limit:
    """A limit of `seconds` for optional work inside a time_limit (checking a hint, say):
    TimeLimitExceeded after `seconds`, or at once if the enclosing limit has less than
    twice that left, so the optional work never costs the test its own limit. The
    enclosing limit's alarm is restored on the way out. Without an alarm signal
    (Windows, threads) it sets nothing: the enclosing watchdog still applies."""

    def __init__(self, seconds):
        self.seconds = seconds

    def __enter__(self):
        self.alarm = _has_alarm()
        if not self.alarm:
            return self
        self.start = time.monotonic()
        self.outer = signal.getitimer(signal.ITIMER_REAL)  # (seconds left, refire); 0: none
        if self.outer[0] and self.outer[0] < 2 * self.seconds:
            raise TimeLimitExceeded
        self.previous = signal.signal(signal.SIGALRM, _on_alarm)
        signal.setitimer(signal.ITIMER_REAL, self.seconds, REFIRE)
        return self

    def __exit__(self, *exc):
        if self.alarm:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self.previous)
            left, refire = self.outer
            if left:
                spent = time.monotonic() - self.start
                signal.setitimer(signal.ITIMER_REAL, max(left - spent, 1e-3), refire)
        return False


# ---------------------------------------------------------------- where an error came from


def is_task_file(filename):
    """True for memory.py, scheduler.py, tis.py (or their solutions/ versions)."""
    name = Path(filename).name
    return name in {module + ".py" for module in lab.STUDENT_MODULES} or any(
        filename == f"<{module}.py under test>" for module in lab.STUDENT_MODULES
    )


def lab_frames(error):
    """The traceback frames of `error` in the lab's own files (not Python's or numpy's)."""
    frames = traceback.extract_tb(error.__traceback__)
    return [f for f in frames if f.filename.startswith(str(ROOT)) or is_task_file(f.filename)]


def is_student_frame(frame):
    """True for a frame of code the student wrote: in a task file, outside its given
    functions (lab.GIVEN_FUNCTIONS, such as scheduler.simulate)."""
    if not is_task_file(frame.filename):
        return False
    module = Path(frame.filename).name.strip("<>").split()[0][:-3]  # "<tis.py under test>"
    return frame.name not in lab.GIVEN_FUNCTIONS.get(module, ())


def student_frames(error):
    """The traceback frames of `error` (outermost first), each with True if it is code the
    student wrote. A frame stopped on its function's first line (a decorator or the def) is
    not: a time limit that strikes as a call begins has caught none of its lines running."""
    tb = error.__traceback__
    return [
        (summary, is_student_frame(summary) and lineno != frame.f_code.co_firstlineno)
        for summary, (frame, lineno) in zip(traceback.extract_tb(tb), traceback.walk_tb(tb))
    ]


def student_frame(error):
    """The innermost traceback frame of `error` in code the student wrote, or None."""
    frames = [frame for frame, theirs in student_frames(error) if theirs]
    return frames[-1] if frames else None


def raised_in_given_code(error):
    """True if `error` was raised in given code while no student code was running: with a
    frame of the student's on the way (a check called from it, say), the error is the task's."""
    return bool(lab_frames(error)) and student_frame(error) is None


def where(error):
    """' (stopped in scheduler.py, line 37, in may_start)' at the innermost line the student
    wrote, or '' if the error passed through none. If given code that the student called
    (simulate, say) ran it, the student's call is named too: a slow call of given code
    stops in given code or in whichever of the student's functions it was running."""
    frames = student_frames(error)
    theirs = [i for i, (_, mine) in enumerate(frames) if mine]
    if not theirs:
        return ""
    inner, outer = frames[theirs[-1]][0], frames[theirs[0]][0]
    text = f" (stopped in {place(inner)}"
    if not all(mine for _, mine in frames[theirs[0] : theirs[-1] + 1]):
        text += f", run by given code called from {place(outer)}"
    return text + ")"


def place(frame: traceback.FrameSummary) -> str:
    """'scheduler.py, line 37, in take_batch' for a traceback frame."""
    name = Path(frame.filename).name.strip("<>").split()[0]  # check_release: "<tis.py under test>"
    return f"{name}, line {frame.lineno}, in {frame.name}"


def location(frame: traceback.FrameSummary) -> str:
    """place(frame) and its source line: 'scheduler.py, line 37, in take_batch: return
    queue[B]'."""
    return place(frame) + (f": {frame.line.strip()}" if frame.line else "")


def describe(error):
    """One or two lines that are never blank: the exception's type and text and,
    when it came from a task file, the file, line and source line there."""
    text = str(error)
    kind = type(error).__name__
    line = f"{kind}: {text}" if text else f"{kind} (with no message)"
    frame = student_frame(error)
    return f"{line}\n  at {location(frame)}" if frame else line


# ---------------------------------------------------------------- files never half-written


def cannot_write(path):
    """What is in the way of writing a file at `path`, in a few words; None if nothing is."""
    path = Path(path)
    if path.is_dir():
        return f"{path} is a folder"
    if not path.parent.is_dir():
        return f"the folder {path.parent} does not exist"
    try:
        with tempfile.NamedTemporaryFile(dir=path.parent):
            return None
    except OSError as error:
        return f"cannot write in the folder {path.parent} ({error.strerror})"


def write_atomically(path, text=None, write=None):
    """Write `text` (or call write(temporary path)) to a temporary file next to `path`, then
    rename it to `path`: the file on disk is always the old one or the whole new one."""
    path = Path(path)
    # the same suffix, from which savefig takes the format
    temporary = path.with_name(f".{path.stem}.partial{path.suffix}")
    try:
        if write is None:
            temporary.write_text(text)
        else:
            write(temporary)
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)
