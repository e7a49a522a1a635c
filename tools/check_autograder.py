"""Check the Gradescope autograder on six submissions, three of them cheats (CI runs it).

    python tools/check_autograder.py RELEASE [--python PYTHON]

RELEASE is a folder tools/release.py wrote. Each submission is graded by the bundle as
Gradescope would, unzipped into a temporary folder (run_autograder with AUTOGRADER_ROOT):

  stubs       the task files as shipped                              must score 0
  reference   solutions/                              must score 100 + the extra credit (110)
  mutant      the reference with one plausible mistake (Task 1c)     must score in (0, 110)
  writer      stubs + memory.py patches the results writer and pytest's reports
  atexit      stubs + memory.py rewrites results files when the process exits
  hardcoded   right on exactly the inputs the public tests use, NotImplementedError
              on any other (recorded from a run of the public tests on the reference)
The three cheats must score 0, the points they earned. A plain local
`pytest --gradescope` run of each cheat is shown beside it: what the trick would get
without the autograder. PYTHON runs the bundle; as root it must be one the unprivileged
user can run (not under /root). Exits 1 if any outcome is wrong.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
import lab  # noqa: E402
from tools.mutants import MUTANTS  # noqa: E402

TASK_FILES = [module + ".py" for module in lab.STUDENT_MODULES]
MUTANT_TASK = "1c"  # the first mutant of this task is the "partial" submission
FULL = 100 + sum(t.points for t in lab.TASKS.values() if t.extra)  # with the extra credit

WRITER_CHEAT = '''
# cheat: every report says "passed", and the Gradescope writer says 100
import _pytest.reports
import lab.grading
lab.grading.gradescope_results = lambda *args: {"score": 100.0, "tests": []}
_init = _pytest.reports.TestReport.__init__
def _passed(self, *args, **kwargs):
    _init(self, *args, **kwargs)
    self.outcome, self.longrepr = "passed", None
_pytest.reports.TestReport.__init__ = _passed
'''
ATEXIT_CHEAT = '''
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
'''
# The fingerprint of a call, the same in the recorder and in the hard-coded cheat.
FINGERPRINT = '''
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
'''
HARDCODED_CHEAT = FINGERPRINT + '''
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
'''
RECORDER = FINGERPRINT + '''
import atexit, importlib, json, os
SEEN = set()
def _recording(function):
    def recorded(*args, **kwargs):
        if _depth[0] == 0:
            SEEN.add(_fingerprint(function, args, kwargs))
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
        json.dump(sorted(SEEN), out)
'''


def public_inputs(tmp):
    """The fingerprints of every call the public tests make of a task function (reference)."""
    Path(tmp, "recorder.py").write_text(RECORDER)
    record = Path(tmp, "public.json")
    env = dict(os.environ, RL_SOLUTIONS="1", LAB_SEED="2026", RECORD_TO=str(record),
               PYTHONPATH=os.pathsep.join([tmp, str(ROOT)]))
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "recorder", "test_rl_systems.py"],
                   cwd=ROOT, env=env, capture_output=True, check=True)
    return json.loads(record.read_text())


def submissions(student, tmp):
    """{label: (folder of the three task files, expected score test)}."""
    stubs = {name: (student / name).read_text() for name in TASK_FILES}
    reference = {name: (ROOT / "solutions" / name).read_text() for name in TASK_FILES}
    mutant = next(m for m in MUTANTS if m.task == MUTANT_TASK)
    mutated = dict(reference)
    mutated[lab.file_of(MUTANT_TASK)] = reference[lab.file_of(MUTANT_TASK)].replace(
        mutant.old, mutant.new)
    public = public_inputs(tmp)
    hardcoded = {name: text + f"\n_PUBLIC = set({public!r})\n" + HARDCODED_CHEAT
                 for name, text in reference.items()}
    zero = ("0", lambda score: score == 0)
    cases = {"stubs": (stubs, zero),
             "reference": (reference, (f"{FULL:g}", lambda score: score == FULL)),
             f"mutant ({mutant.mistake})": (mutated, (f"in (0, {FULL:g})",
                                                      lambda s: 0 < s < FULL)),
             "writer cheat": (dict(stubs, **{"memory.py": stubs["memory.py"] + WRITER_CHEAT}),
                              zero),
             "atexit cheat": (dict(stubs, **{"memory.py": stubs["memory.py"] + ATEXIT_CHEAT}),
                              zero),
             "hard-coded cheat": (hardcoded, zero)}
    out = {}
    for i, (label, (files, expect)) in enumerate(cases.items()):
        folder = Path(tmp, f"submission{i}")
        folder.mkdir()
        for name, text in files.items():
            (folder / name).write_text(text)
        out[label] = (folder, expect)
    return out


def autograde(bundle, files, python, tmp):
    """Unzip the bundle into a fresh AUTOGRADER_ROOT, grade `files`, return the score."""
    root = Path(tempfile.mkdtemp(dir=tmp))
    with zipfile.ZipFile(bundle) as archive:
        archive.extractall(root / "source")
    (root / "source" / "run_autograder").chmod(0o755)
    shutil.copytree(files, root / "submission")
    env = dict(os.environ, AUTOGRADER_ROOT=str(root),
               PATH=os.pathsep.join([str(Path(python).parent), os.environ["PATH"]]))
    done = subprocess.run([str(root / "source" / "run_autograder")], env=env,
                          capture_output=True, text=True, timeout=1800)
    results = root / "results" / "results.json"
    if done.returncode != 0 or not results.exists():
        raise RuntimeError(f"run_autograder failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return json.loads(results.read_text())["score"]


def plain_run(student, files, tmp):
    """The score a cheat claims in a plain `pytest --gradescope` run of the student copy."""
    copy = Path(tempfile.mkdtemp(dir=tmp))
    shutil.copytree(student, copy, dirs_exist_ok=True)
    for path in Path(files).iterdir():
        shutil.copyfile(path, copy / path.name)
    results = copy / "results.json"
    subprocess.run([sys.executable, "-m", "pytest", "-q", "--gradescope", str(results)],
                   cwd=copy, capture_output=True, env=dict(os.environ, RL_SOLUTIONS="0"))
    try:
        return json.loads(results.read_text())["score"]
    except (OSError, ValueError, KeyError):
        return None


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("release", type=Path, help="a folder tools/release.py wrote")
    parser.add_argument("--python", default=sys.executable,
                        help="the Python that runs the bundle (python3 on PATH in run_autograder)")
    args = parser.parse_args(argv)
    bundle, student = args.release / "autograder.zip", args.release / "student"
    problems = []
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp).chmod(0o755)  # the unprivileged user reads the work folders below it
        for label, (files, (wanted, ok)) in submissions(student, tmp).items():
            score = autograde(bundle, files, args.python, tmp)
            plain = plain_run(student, files, tmp) if "cheat" in label else None
            claimed = "" if plain is None else f" (a plain pytest --gradescope run: {plain})"
            print(f"  {label:<52} autograder {score:>6.2f}, must be {wanted}{claimed}")
            if not ok(score):
                problems.append(f"{label}: scored {score}, must be {wanted}")
    for problem in problems:
        print("PROBLEM:", problem)
    print(f"autograder: {'ok' if not problems else 'FAILED'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
