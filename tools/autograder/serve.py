"""The child process of the autograder: runs the student's task files, and nothing else.

    python _grader/serve.py        (started by remote.py, in a folder holding the lab's
                                    given files and the student's three task files)

It first imports numpy and the lab's given modules (GIVEN: what the task files import), so
that importing a task file costs what it costs locally, where pytest has them already.
Then it answers requests on stdin/stdout in the wire format (wire.py): "ready" (answered
once those imports are done), "import" a task module, "get" an attribute of it, or "call"
a function of it with arguments; each reply carries its request's id. Everything else the
grader does, the tests and the scoring, happens in the parent, which treats these answers
as data: whatever this process prints, patches or writes to files changes nothing there.
"""

import importlib
import os
import signal
import sys
import traceback

# Started with -I (no environment, no current folder on the path): put back this
# folder (wire.py) and the working folder (the task files and the given modules).
sys.path[:0] = [os.path.dirname(os.path.abspath(__file__)), os.getcwd()]
import wire

import lab

TASK_MODULES = ("memory", "scheduler", "tis")
GIVEN = ("numpy", "lab", "lab.contracts", "lab.input_checks", "scheduler_core")


class Interrupted(BaseException):
    """The grader's test ran out of time: raised in the student's code, as the local time
    limit raises TimeLimitExceeded there, so that this process lives on as a local one does."""


def interrupt(signum, frame):
    if answering:
        raise Interrupted("the test's time limit")


answering = False  # True while a request is being answered (the signal interrupts only that)


def load(name):
    """Task module `name`; a SyntaxError in it says where (the grader adds whose file)."""
    if name not in TASK_MODULES:
        raise wire.WireError(f"not a task module: {name!r}")
    try:
        return importlib.import_module(name)
    except SyntaxError as error:
        raise SyntaxError(
            f"line {error.lineno}: {error.msg}\n    {(error.text or '').strip()}"
        ) from None


def answer(message, decode):
    """Return (reply, reply blobs) for one request."""
    if "ready" in message:
        return {}, []
    module_name, attribute = message["target"]
    if "import" in message:
        load(module_name)
        return {}, []
    value = getattr(load(module_name), attribute)
    if "get" in message:
        if callable(value):
            return {"callable": True}, []
        encode = wire.Encoder()
        return {"value": encode(value)}, encode.blobs
    args, kwargs = message["args"], message["kwargs"]  # decoded as they were read
    received = {id(obj): (n, obj) for n, obj in decode.objects.items()}
    result = value(*args, **kwargs)
    encode = wire.Encoder(dict(received))
    tree = encode(result)
    state = encode.contents(sorted(n for n, _ in received.values()))
    changed = []  # the argument arrays changed in place, their new contents as blobs
    for index, array in decode.changed():
        encode.blobs.append(array.tobytes())
        changed.append([index, len(encode.blobs) - 1])
    return {"value": tree, "state": state, "changed": changed}, encode.blobs


def main():
    global answering
    # The wire is this process's original stdin/stdout; the student's prints go nowhere.
    requests = os.fdopen(os.dup(0), "rb")
    replies = os.fdopen(os.dup(1), "wb")
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    signal.signal(signal.SIGUSR1, interrupt)
    for name in GIVEN:
        importlib.import_module(name)
    while True:
        try:
            message, decode = wire.receive(requests.read)
        except EOFError:
            return
        ending = False
        try:
            answering = True
            reply, reply_blobs = answer(message, decode)
            reply = dict(reply, id=message.get("id"))
            data = wire.pack(reply, reply_blobs)  # an answer that cannot be sent is an error
        except BaseException as error:  # noqa: BLE001 (the student's error is the answer)
            ending = isinstance(error, (SystemExit, KeyboardInterrupt))
            report = {"error": error_report(error), "id": message.get("id")}
            if isinstance(error, lab.TaskNotDone) and type(error.task) is str:
                report["todo"] = error.task  # a TODO: the grader raises TaskNotDone(todo)
            data = wire.pack(report)
        finally:
            answering = False
        replies.write(data)
        replies.flush()
        if ending:
            return


def error_report(error):
    """[kind, message, " (tis.py, line 7, in masked_weights)"] for an error: where is the
    innermost line of a task file."""
    where = traceback.extract_tb(error.__traceback__)
    mine = [f for f in where if os.path.basename(f.filename) in {m + ".py" for m in TASK_MODULES}]
    at = (
        f" ({os.path.basename(mine[-1].filename)}, line {mine[-1].lineno}, in {mine[-1].name})"
        if mine
        else ""
    )
    try:
        text = str(error)[:4000]
    except BaseException:  # noqa: BLE001 (a student's exception whose __str__ fails)
        text = "(its message could not be shown)"
    return [type(error).__name__, text, at]


if __name__ == "__main__":
    main()
