"""Check the Gradescope autograder on twenty-three submissions: cheats and attacks (CI runs it).

    python tools/check_autograder.py RELEASE [--python PYTHON] [--only WORDS ... [--exact]]
                                             [--part untimed|timed]

RELEASE is a folder tools/release.py wrote. Each submission is graded by the bundle as
Gradescope would, unzipped into a temporary folder (run_autograder with AUTOGRADER_ROOT):

  stubs       the task files as shipped                              must score 0
  reference   solutions/                              must score 100 + the extra credit (110)
  mutant      the reference with one plausible mistake (Task 1c)     must score in (0, 110)
  writer      stubs + memory.py patches the results writer and pytest's reports     0
  atexit      stubs + memory.py rewrites results files when the process exits       0
  hardcoded   right on exactly the inputs the public tests use, NotImplementedError
              on any other (recorded from a run of the public tests on the reference) 0
  copy        stubs + each task function taken from the students' copy's test files, by
              the names the reference functions and stand-ins had there before     0
and the attacks of issue 20, each scored at what its code is worth: an error message
with a lone surrogate, a full temporary folder, loops at import in two files (and a
process in a session of its own: none may be left), float16(inf) off the public inputs,
three edge-case bugs with and without a lookup of the public inputs, an input changed in
place (the score of a plain local run), and a 60 MB answer; and those of issue 26: a tree
deeper than Python's recursion limit, traces in every folder anyone may write to with
System V IPC objects, a CPU hog in one task file, a slow first call (the score of a plain
local run), a million tiny objects; and those of issue 35, in three submissions (see
BOX_DEPTH): the box (a deep folder beside the files, a stopped killer, a POSIX queue and
a kernel key, set-user-ID children, a slow import, bytes left in the pipe), the grader
made big (a huge message, shared sublists, tiny objects), and a check cut by the run's
limit. After each, results.json must be Gradescope's, nothing of the student's user may
remain (processes by real uid, IPC objects, kernel keys, files in any folder it may
write to), and the grading pytest and grade.py must stay within 200 MiB and decode any
answer within 10 s. Before them: the memory cap
with a small cap, and the decoding of answers of each shape at the largest cap. A plain
local `pytest --gradescope` run of each cheat is shown beside it: what the trick would get
without the autograder. PYTHON runs the bundle; as root it must be one the unprivileged
user can run (not under /root). AUTOGRADER_USER, if set, is that user (grade.py ends all
its processes; a second check or grading as the same user at once is refused). --only
grades the submissions whose label contains one of WORDS (during development); with
--exact, only those whose label is one of WORDS (CI's other Pythons: `--only stubs
reference --exact`). --part splits the check in two for CI: `untimed`, the submissions
whose outcome does not depend on the machine's speed, which CI grades while its other jobs
run; `timed`, the memory cap, the decoding times and the six submissions that race a limit
(a CPU hog, a slow first call, the tiny objects, the box with its slow import, the grader
made big, the check cut by the run's limit), graded with the machine to themselves. Exits
1 if any outcome is wrong.
"""

import argparse
import json
import os
import pwd
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
import lab
from grading import gradescope
from tools.attacks import (
    ATEXIT_CHEAT,
    BIG_ANSWER,
    BIG_ANSWER_PEAK,
    BIG_MASKED,
    BOX_DEPTH,
    COPY_CHEAT,
    CPU_HOG,
    CUT_LIMIT,
    DECODE,
    DECODE_LIMIT,
    DEEP_TREE,
    EDGE_BUGS,
    FILL_TMP,
    FINGERPRINT,
    FLOAT16_INF,
    GRADER_BASE,
    GUARD,
    HARDCODED_CHEAT,
    IMPORT_LOOP,
    IN_PLACE,
    LOOKUP,
    NEVER_AFTER_PUBLIC,
    PIPE_BYTES,
    QUEUE_AND_KEY,
    RECORDER,
    SETUID,
    SHAPES,
    SLOW_FIRST,
    SLOW_IMPORT,
    SURROGATE,
    TINY_OBJECTS,
    TRACES,
    WRITER_CHEAT,
)
from tools.autograder import student as autograder_student
from tools.mutants import MUTANTS

TASK_FILES = [module + ".py" for module in lab.STUDENT_MODULES]
MUTANT_TASK = "1c"  # the first mutant of this task is the "partial" submission
FULL = sum(t.points for t in lab.TASKS.values())  # with the extra credit


def changed(files, *edits):
    """`files` with each (file, old, new) edit made; `old` must occur once."""
    files = dict(files)
    for name, old, new in edits:
        if files[name].count(old) != 1:
            raise ValueError(f"{old!r} must occur once in {name}")
        files[name] = files[name].replace(old, new)
    return files


def public_inputs(tmp):
    """The fingerprints of every call the public tests make of a task function (reference)."""
    Path(tmp, "recorder.py").write_text(RECORDER)
    record = Path(tmp, "public.json")
    env = dict(
        os.environ,
        RL_SOLUTIONS="1",
        LAB_SEED="2026",
        RECORD_TO=str(record),
        PYTHONPATH=os.pathsep.join([tmp, str(ROOT)]),
    )
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "recorder", "test_rl_systems.py"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        check=True,
    )
    recorded = json.loads(record.read_text())
    return recorded["seen"], recorded["calls"]


class Case(NamedTuple):
    files: dict  # file name -> text
    wanted: str  # the expected score, in words
    ok: Callable  # ok(score, scores so far) -> True if the score is right
    plain: bool = False  # also show a plain local `pytest --gradescope` run's score
    deep: int = 0  # a folder this many levels deep beside the task files
    env: dict = {}  # noqa: RUF012 (a field, never changed: no ClassVar) the autograder's
    # environment besides (AUTOGRADER_RUN_LIMIT)
    timed: bool = False  # its outcome depends on how fast the machine is (see --part)


def submissions(student, tmp):
    """{label: Case}, in the order they are graded."""
    stubs = {name: (student / name).read_text() for name in TASK_FILES}
    reference = {name: (ROOT / "solutions" / name).read_text() for name in TASK_FILES}
    mutant = next(m for m in MUTANTS if m.task == MUTANT_TASK)
    mutated = changed(reference, (lab.file_of(MUTANT_TASK), mutant.old, mutant.new))
    public, calls = public_inputs(tmp)
    hardcoded = {
        name: text + f"\n_PUBLIC = set({public!r})\n" + HARDCODED_CHEAT
        for name, text in reference.items()
    }
    buggy = changed(reference, *EDGE_BUGS)
    lookup = {
        name: text
        + f"\n_RIGHT_SOURCE = {reference[name]!r}\n_PUBLIC = set({public!r})\n"
        + FINGERPRINT
        + LOOKUP
        for name, text in buggy.items()
    }
    points = {task: t.points for task, t in lab.TASKS.items()}
    hangs = gradescope.shares(
        points["1b"], [name for name in test_names() if lab.task_of(name) == "1b"]
    )
    box = {
        "memory.py": reference["memory.py"]
        + GUARD
        + "_LOOK = False\n"
        + QUEUE_AND_KEY
        + PIPE_BYTES,
        "scheduler.py": reference["scheduler.py"] + "_LOOK = True\n" + QUEUE_AND_KEY + SETUID,
        "tis.py": reference["tis.py"] + "_LOOK = True\n" + QUEUE_AND_KEY + SLOW_IMPORT,
    }

    def score(wanted):
        return f"{wanted:g}", lambda got, scores: got == wanted

    zero = score(0)
    return {
        "stubs": Case(stubs, *zero),
        "reference": Case(reference, *score(FULL)),
        f"mutant ({mutant.mistake})": Case(
            mutated, f"in (0, {FULL:g})", lambda got, scores: 0 < got < FULL
        ),
        "writer cheat": Case(
            dict(stubs, **{"memory.py": stubs["memory.py"] + WRITER_CHEAT}), *zero, plain=True
        ),
        "atexit cheat": Case(
            dict(stubs, **{"memory.py": stubs["memory.py"] + ATEXIT_CHEAT}), *zero, plain=True
        ),
        "hard-coded cheat": Case(hardcoded, *zero, plain=True),
        "copy cheat (answers from the students' copy's tests)": Case(
            {name: text + COPY_CHEAT[name] for name, text in stubs.items()}, *zero, plain=True
        ),
        # any error in masked_weights costs Task 3c (extra credit) and nothing else
        "lone surrogate in an error (3c)": Case(
            dict(reference, **{"tis.py": reference["tis.py"] + SURROGATE}),
            *score(FULL - points["3c"]),
        ),
        "fills the temporary folder": Case(
            dict(reference, **{"memory.py": reference["memory.py"] + FILL_TMP}), *score(FULL)
        ),
        "import loops in scheduler.py, tis.py": Case(
            dict(
                reference,
                **{name: reference[name] + IMPORT_LOOP for name in ("scheduler.py", "tis.py")},
            ),
            *score(sum(points[task] for task in ("1a", "1b", "1c"))),
        ),
        "float16(inf) off the public inputs": Case(
            dict(
                stubs,
                **{
                    "memory.py": reference["memory.py"]
                    + FINGERPRINT
                    + f"\n_PUBLIC = set({public!r})\n"
                    + FLOAT16_INF
                },
            ),
            *zero,
            plain=True,
        ),
        "reference with 3 edge-case bugs": Case(
            buggy, f"in (0, {FULL:g})", lambda got, scores: 0 < got < FULL
        ),
        "the same + a lookup of the public inputs": Case(
            lookup,
            "at most the bugs' score",
            lambda got, scores: got <= scores["reference with 3 edge-case bugs"],
            plain=True,
        ),
        "changes its input in place (3a)": Case(
            changed(reference, IN_PLACE),
            "the plain run's",
            lambda got, scores: got == scores["changes its input in place (3a), plain"],
            plain=True,
        ),
        "a 60 MB answer (1c)": Case(changed(reference, BIG_ANSWER), *score(FULL - points["1c"])),
        "a tree deeper than the recursion limit": Case(
            dict(reference, **{"memory.py": reference["memory.py"] + DEEP_TREE}), *score(FULL)
        ),
        "traces outside the temporary folders, IPC": Case(
            dict(reference, **{"tis.py": reference["tis.py"] + TRACES}), *score(FULL)
        ),
        "a CPU hog in memory.py": Case(
            dict(reference, **{"memory.py": reference["memory.py"] + CPU_HOG}),
            *score(FULL),
            timed=True,
        ),
        "a slow first call (3a)": Case(
            dict(reference, **{"tis.py": reference["tis.py"] + SLOW_FIRST}),
            "the plain run's",
            lambda got, scores: got == scores["a slow first call (3a), plain"],
            plain=True,
            timed=True,
        ),
        "a million tiny objects (3c)": Case(
            dict(reference, **{"tis.py": reference["tis.py"] + TINY_OBJECTS}),
            *score(FULL - points["3c"]),
            timed=True,
        ),
        # one public test of 1b never returns: it alone scores 0
        "the box (deep folder, stopped killer, queue, key, setuid, slow import, pipe)": Case(
            box,
            *score(FULL - hangs["test_task1b_qwen_7b_is_56_kib_per_token"]),
            deep=BOX_DEPTH,
            timed=True,
        ),
        "the grader made big (huge message, shared lists, tiny objects: 3c)": Case(
            dict(reference, **{"tis.py": reference["tis.py"] + BIG_MASKED}),
            *score(FULL - points["3c"]),
            timed=True,
        ),
        "3c's check cut by the run's limit": Case(
            dict(
                reference,
                **{
                    "tis.py": reference["tis.py"]
                    + NEVER_AFTER_PUBLIC
                    + f"_PUBLIC_CALLS = {calls['masked_weights']}\n"
                },
            ),
            *score(FULL - points["3c"]),
            env={"AUTOGRADER_RUN_LIMIT": str(CUT_LIMIT), "LAB_TIME_LIMIT": "60"},
            timed=True,
        ),
    }


def test_names():
    """The names of the public tests (pytest's collection of the lab, the reference's)."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "--collect-only", "test_rl_systems.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=dict(os.environ, RL_SOLUTIONS="1"),
    )
    return [line.split("::")[-1] for line in done.stdout.splitlines() if "::" in line]


def unpack(bundle, root, files):
    """Lay out AUTOGRADER_ROOT `root` as Gradescope does: the bundle unzipped in source/,
    `files` ({name: text}) in submission/."""
    with zipfile.ZipFile(bundle) as archive:
        archive.extractall(root / "source")
    (root / "source" / "run_autograder").chmod(0o755)
    (root / "submission").mkdir()
    for name, text in files.items():
        (root / "submission" / name).write_text(text)


def autograde(bundle, files, python, tmp, env=None, deep=0, lock=None):
    """Unzip the bundle into a fresh AUTOGRADER_ROOT, grade `files` ({name: text}, beside
    a folder `deep` levels deep if `deep`); return the score, the grading pytest's peak
    memory (MiB; grade.py's own if larger) and (bytes, seconds to decode) of the largest
    answer, as grade.py reports them. A results.json that is not Gradescope's fails. `lock`:
    the student user's lock (student.hold), held here and passed down to grade.py."""
    root = Path(tempfile.mkdtemp(dir=tmp))
    unpack(bundle, root, files)
    if deep:
        fd = os.open(root / "submission", os.O_RDONLY)
        for _ in range(deep):
            os.mkdir("d", dir_fd=fd)
            inner = os.open("d", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = inner
        os.close(fd)
    env = dict(
        os.environ,
        AUTOGRADER_ROOT=str(root),
        PATH=os.pathsep.join([str(Path(python).parent), os.environ["PATH"]]),
        **(env or {}),
    )
    if lock is not None:
        env[autograder_student.LOCK_FD] = str(lock)
    done = subprocess.run(
        [str(root / "source" / "run_autograder")],
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
        pass_fds=() if lock is None else (lock,),
    )
    results = root / "results" / "results.json"
    if done.returncode != 0 or not results.exists():
        raise RuntimeError(f"run_autograder failed ({done.returncode}):\n{done.stderr[-2000:]}")
    figures = re.search(
        r"peak memory of a grading process: (\d+) MiB; the largest answer: "
        r"(\d+) bytes, decoded in ([\d.]+) s",
        done.stdout,
    )
    if figures is None:
        raise RuntimeError(f"grade.py printed no figures:\n{done.stdout[-2000:]}")
    graded = json.loads(results.read_text())
    if not isinstance(graded.get("score"), float) or not isinstance(graded.get("tests"), list):
        raise RuntimeError(f"results.json is not Gradescope's: {str(graded)[:500]}")
    if deep:
        autograder_student.remove_tree(os.open(root, os.O_RDONLY), "submission", [])
    return graded, int(figures[1]), (int(figures[2]), float(figures[3]))


def the_student():
    """As root: the user grade.py picks for student code, with the folders it may write to
    and what it owned there before (student.User); None otherwise."""
    if os.geteuid() != 0:
        return None
    for name in (os.environ.get("AUTOGRADER_USER") or "lab-student", "nobody"):
        try:
            pwd.getpwnam(name)
        except KeyError:
            continue
        user = autograder_student.User(name)
        user.places = autograder_student.places(user.uid, user.gid)
        user.before = set(user.owned())
        return user
    return None


def leftovers(user):
    """What the student's user left behind after grading: processes still running, IPC
    objects, and entries it owns in any folder it may write to."""
    if user is None:
        return []
    return [f"{what} of {user.name}" for what in autograder_student.leftovers(user)]


def remote_answer_limits():
    """remote.ANSWER_LIMIT, read from its source (remote.py imports the lab's given files)."""
    text = (ROOT / "tools" / "autograder" / "remote.py").read_text()
    return eval(re.search(r"^ANSWER_LIMIT = (\{.*\})$", text, re.M)[1], {})


def check_decoding(cap):
    """Decode an answer of each shape in SHAPES, of `cap` bytes, in a fresh process: the
    grader's cost. Returns (problems, table lines)."""
    problems, lines = [], []
    for label, shape in SHAPES.items():
        done = subprocess.run(
            [sys.executable, "-c", DECODE, str(ROOT / "tools" / "autograder"), shape, str(cap)],
            capture_output=True,
            text=True,
            check=True,
        )
        n, seconds, added = done.stdout.split()
        lines.append(f"{label:<20} {int(n):>9,} {float(seconds):>7.2f} s {float(added):>6.0f} MiB")
        if float(seconds) > DECODE_LIMIT or GRADER_BASE + float(added) > BIG_ANSWER_PEAK:
            problems.append(f"decoding {n} {label}: {float(seconds):.1f} s and {added} MiB")
    return problems, lines


def check_memory_cap(user, python):
    """The memory cap grade.py puts on the student's user, with a small cap: two processes
    of that user in one 64 MiB cgroup, each touching 48 MiB (run by `python`, which that user
    can run). (problem or None, what was seen)."""
    if user is None:
        return None, "not root: not tested"
    cgroup, why_not = autograder_student.memory_cgroup(f"lab-check-{os.getpid()}", 64 * 2**20)
    if cgroup is None:
        return None, f"no memory cgroup can be made here ({why_not}): not tested"
    hold = (
        "import sys, time\nsys.stdin.readline()\nx = b'x' * (48 * 2**20)\n"
        "print('held', flush=True)\ntime.sleep(2)"
    )
    try:
        processes = [
            subprocess.Popen(
                [python, "-I", "-c", hold],
                user=user.uid,
                group=user.gid,
                extra_groups=[],
                cwd="/",
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
            )
            for _ in range(2)
        ]
        for process in processes:
            autograder_student.join_cgroup(cgroup, process.pid)
        for process in processes:
            process.stdin.write(b"go\n")
            process.stdin.flush()
        held = [process.communicate(timeout=60)[0] == b"held\n" for process in processes]
    finally:
        autograder_student.end_processes(user)
        autograder_student.remove_cgroup(cgroup)
    seen = f"2 processes of 48 MiB under a 64 MiB cap: {sum(held)} held it"
    return (None if sum(held) < 2 else f"memory cap: {seen}"), seen


def plain_run(student, files, tmp):
    """The score of a plain local `pytest --gradescope` run of the student copy."""
    copy = Path(tempfile.mkdtemp(dir=tmp))
    # without the quick start's .venv, which CI's student copy has (200 MB)
    shutil.copytree(student, copy, dirs_exist_ok=True, ignore=shutil.ignore_patterns(".venv"))
    for name, text in files.items():
        (copy / name).write_text(text)
    results = copy / "results.json"
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "--gradescope", str(results)],
        cwd=copy,
        capture_output=True,
        env=dict(os.environ, RL_SOLUTIONS="0"),
    )
    try:
        return json.loads(results.read_text())["score"]
    except (OSError, ValueError, KeyError):
        return None


def check_caps(user, python):
    """Print the memory cap's and the decoding's figures; return their problems."""
    problem, seen = check_memory_cap(user, python)
    print(f"  the memory cap on the student's user: {seen}")
    cap = max(remote_answer_limits().values())
    found, lines = check_decoding(cap)
    print(
        f"  decoding an answer of {cap / 2**20:g} MiB (the largest cap) in the grader, by shape:"
        f"\n    {'shape':<20} {'objects':>9} {'time':>9} {'memory added':>10}"
    )
    print("\n".join("    " + line for line in lines))
    return ([problem] if problem else []) + found


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("release", type=Path, help="a folder tools/release.py wrote")
    parser.add_argument(
        "--python",
        default=sys.executable,
        help="the Python that runs the bundle (python3 on PATH in run_autograder)",
    )
    parser.add_argument(
        "--only",
        metavar="WORDS",
        nargs="+",
        help="grade only the submissions whose label contains one of WORDS",
    )
    parser.add_argument(
        "--exact",
        action="store_true",
        help="--only's WORDS are whole labels: grade only those submissions",
    )
    parser.add_argument(
        "--part",
        choices=("untimed", "timed"),
        help="untimed: only the submissions whose outcome does not depend on "
        "the machine's speed (CI grades them while other jobs run); "
        "timed: the memory cap, the decoding times and the rest",
    )
    args = parser.parse_args(argv)
    bundle, student = args.release / "autograder.zip", args.release / "student"
    problems, scores, peaks, start = [], {}, {}, time.monotonic()
    user = the_student()
    # every grading, and the checks below, end the processes of that user: one run at a time
    try:
        lock = autograder_student.hold(user.name) if user else None
    except autograder_student.Busy as error:
        sys.exit(f"refused: {error}")
    if args.part != "untimed":
        problems += check_caps(user, args.python)
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp).chmod(0o755)  # the unprivileged user reads the work folders below it
        for label, case in submissions(student, tmp).items():
            if args.only and not any(
                words == label or (words in label and not args.exact) for words in args.only
            ):
                continue
            if args.part and case.timed != (args.part == "timed"):
                continue
            if case.plain:
                scores[f"{label}, plain"] = plain_run(student, case.files, tmp)
            began = time.monotonic()
            graded, peak, (size, seconds) = autograde(
                bundle, case.files, args.python, tmp, case.env, case.deep, lock
            )
            score = graded["score"]
            scores[label], peaks[label] = score, peak
            plain = (
                f" (a plain pytest --gradescope run: {scores[f'{label}, plain']})"
                if case.plain
                else ""
            )
            print(
                f"  {label:<45} autograder {score:>6.2f}, must be {case.wanted}{plain}; "
                f"grader {peak} MiB, largest answer {size / 1e6:.1f} MB decoded in "
                f"{seconds:.2f} s; {time.monotonic() - began:.0f} s"
            )
            if "AUTOGRADER_RUN_LIMIT" in case.env:  # where the run's limit fell
                print(
                    "    "
                    + next(
                        t["output"]
                        for t in graded["tests"]
                        if "3c_unseen" in t["name"] and "what it tried" in t["name"]
                    ).replace("\n", " ")[:300]
                )
            try:
                if not case.ok(score, scores):
                    problems.append(f"{label}: scored {score}, must be {case.wanted}")
            except KeyError:  # compared with a submission --only left out
                print(f"  ({label}: not compared)")
            if peak > BIG_ANSWER_PEAK or seconds > DECODE_LIMIT:
                problems.append(
                    f"{label}: the grading pytest took {peak} MiB and {seconds:.1f} s "
                    f"to decode an answer, must be at most {BIG_ANSWER_PEAK} MiB and "
                    f"{DECODE_LIMIT} s"
                )
            problems += [f"{label}: left behind {what}" for what in leftovers(user)]
        print(f"  ({time.monotonic() - start:.0f} s in all)")
    for problem in problems:
        print("PROBLEM:", problem)
    print(f"autograder: {'ok' if not problems else 'FAILED'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
