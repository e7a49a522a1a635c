"""The autograder's entry point (run_autograder runs it as `python3 -m grader.grade`).

ROOT (env AUTOGRADER_ROOT, default /autograder, Gradescope's) holds source/ (this bundle:
grader/ and course/, the lab with its reference and the unseen-input checks), submission/
(what the student uploaded) and results/ (where results.json goes).

1. A work folder gets the lab's given files and, from the submission, only memory.py,
   scheduler.py and tis.py (regular files; links and everything else are ignored).
2. pytest runs the public tests and test_fresh.py twice: with LAB_SEED=2026 (the public
   inputs) and with a fresh seed. These pytest processes import no student code: the task
   modules are stand-ins (remote.py) whose functions run in a child process in the work
   folder, as an unprivileged user when this runs as root.
3. results.json is built here from the JUnit XML reports of those two runs. A test counts
   when it passes in both, and a task's tests count only when its unseen-input check
   passes too (for a task without one, all checks of its file): code written for the
   public inputs earns nothing.
"""
import json
import os
import pwd
import secrets
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(os.environ.get("AUTOGRADER_ROOT", "/autograder"))
SOURCE = Path(__file__).resolve().parent.parent  # this bundle: grader/ and course/
LAB = SOURCE / "course"
sys.path.insert(0, str(LAB))
import lab  # noqa: E402

PUBLIC_SEED = 2026
TASK_FILES = [module + ".py" for module in lab.STUDENT_MODULES]
NOT_GIVEN = {"solutions", "test_fresh.py", "__pycache__"}  # kept from the student's process
USERS = ("lab-student", "nobody")  # setup.sh makes the first; the second is everywhere
RUN_LIMIT = 240  # seconds for one pytest run of everything (two runs fit Gradescope's default 10 min)
MAX_FILE = 1_000_000  # bytes; a task file larger than this is not taken


def take_submission(submission, folder):
    """Copy the three task files from the submission into `folder`; return notes."""
    notes = []
    for name in TASK_FILES:
        found = sorted((p for p in submission.rglob(name) if not p.is_symlink() and p.is_file()
                        and p.stat().st_size <= MAX_FILE),
                       key=lambda p: (len(p.parts), str(p)))
        if found:
            shutil.copyfile(found[0], folder / name)  # a regular file: nothing to follow
        else:
            notes.append(f"{name} is not in your submission (or is a link, or over "
                         f"{MAX_FILE} bytes): its tasks are graded on the unchanged stub.")
    return notes


def work_folder(submission):
    """A folder the student's process can read but not write: given files + task files."""
    folder = Path(tempfile.mkdtemp(prefix="lab-grade-"))
    shutil.copytree(LAB, folder, dirs_exist_ok=True,
                    ignore=lambda d, names: [n for n in names if n in NOT_GIVEN])
    shutil.copytree(SOURCE / "grader", folder / "_grader",
                    ignore=lambda d, names: [n for n in names if n not in ("serve.py", "wire.py")])
    notes = take_submission(submission, folder)
    for path in [folder, *folder.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return folder, notes


def child_user():
    """The unprivileged user for student code; it must be able to run this Python."""
    for user in USERS:
        try:
            pwd.getpwnam(user)
        except KeyError:
            continue
        entry = pwd.getpwnam(user)
        tried = subprocess.run([sys.executable, "-I", "-c", "import numpy"], user=user,
                               group=entry.pw_gid, extra_groups=[], cwd="/",
                               capture_output=True, text=True)
        if tried.returncode != 0:
            raise SystemExit(f"user {user} cannot run {sys.executable} with numpy (is it in "
                             f"a folder only root can read?):\n{tried.stderr[-500:]}")
        return user
    raise SystemExit("no unprivileged user to run student code as: run setup.sh first")


def run_tests(folder, seed, report, user):
    """One pytest run of the public tests and the unseen-input checks; returns its output."""
    env = dict(os.environ, LAB_SEED=str(seed), RL_SOLUTIONS="0", LAB_REMOTE_DIR=str(folder),
               PYTHONPATH=str(SOURCE), PYTHONDONTWRITEBYTECODE="1")
    if user:
        env["LAB_REMOTE_USER"] = user
    try:
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "grader.remote", f"--junitxml={report}",
             "-o", "junit_family=xunit1", "test_rl_systems.py", "test_fresh.py"],
            cwd=LAB, env=env, capture_output=True, text=True, timeout=RUN_LIMIT)
    except subprocess.TimeoutExpired:  # every test slow but under its own limit: no grade
        report.unlink(missing_ok=True)
        return f"the tests ran for more than {RUN_LIMIT} s in all and were stopped"
    return done.stdout[-3000:] + done.stderr[-3000:]


def outcomes(report):
    """{test name: (file, None if passed else the failure text)} from a JUnit XML report."""
    found = {}
    for case in ET.parse(report).iter("testcase"):
        problem = case.find("failure")
        if problem is None:
            problem = case.find("error")
        if case.find("skipped") is not None:
            text = "skipped"
        else:
            text = None if problem is None else (problem.text or problem.get("message", ""))
        found[case.get("name")] = (case.get("classname", ""), text)
    return found


def results(runs):
    """Gradescope's results.json from [(label, outcomes), ...], the public run first."""
    names = list(runs[0][1])
    fresh = {name for name in names if runs[0][1][name][0].endswith("test_fresh")}

    def failure(name):  # the first run in which `name` failed, with its message
        for label, found in runs:
            _, text = found.get(name, ("", "did not run"))
            if text is not None:
                return f"{label}:\n{text[:3000]}"
        return None

    graded = [n for n in names if lab.task_of(n) and n not in fresh]
    count = {task: sum(lab.task_of(n) == task for n in graded) for task in lab.TASKS}
    # A task is checked on unseen inputs by its own check, or, if it has none (a task
    # added later), by all the checks of its file.
    own = {task: [n for n in fresh if lab.task_of(n) == task] for task in lab.TASKS}
    unseen_ok = {task: all(failure(n) is None for n in own[task] or
                           [n for n in fresh if lab.file_of(lab.task_of(n)) == lab.file_of(task)])
                 for task in lab.TASKS}
    tests = []
    for name in graded:
        task = lab.task_of(name)
        _, what, points, extra = lab.TASKS[task]
        share, problem = points / count[task], failure(name)
        if problem is None and not unseen_ok[task]:
            problem = (f"passed, but Task {task} does not work on inputs the public tests don't "
                       "use (see its unseen-input check), so its tests earn nothing")
        tests.append(dict(name=f"{'Extra credit: ' if extra else ''}Task {task} {what} "
                               f"({lab.file_of(task)}): {name}",
                          score=share if problem is None else 0.0,
                          max_score=0.0 if extra else share, output=problem or ""))
    for name in sorted(fresh):
        task = lab.task_of(name)
        tests.append(dict(name=f"Task {task} on unseen inputs ({lab.file_of(task)}): {name}",
                          score=0.0, max_score=0.0,
                          output=failure(name) or f"passed: Task {task}'s tests count"))
    return dict(score=round(sum(t["score"] for t in tests), 6), tests=tests)


def main():
    out = ROOT / "results" / "results.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0:
        SOURCE.chmod(0o700)  # the reference in course/solutions: not for the student's process
    folder, notes = work_folder(ROOT / "submission")
    fresh_seed = PUBLIC_SEED
    while fresh_seed == PUBLIC_SEED:
        fresh_seed = secrets.randbelow(10**9)
    user = child_user() if os.geteuid() == 0 else None
    runs, logs = [], []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for label, seed in ((f"with the public inputs (LAB_SEED={PUBLIC_SEED})", PUBLIC_SEED),
                                (f"with fresh inputs (LAB_SEED={fresh_seed})", fresh_seed)):
                report = Path(tmp, f"junit-{seed}.xml")
                logs.append(run_tests(folder, seed, report, user))
                runs.append((label, outcomes(report) if report.exists() else {}))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    if not runs[0][1]:
        grade = dict(score=0.0, tests=[], output="The tests could not run:\n" + logs[0])
    else:
        grade = results(runs)
        grade["output"] = "\n".join(notes)
    out.write_text(json.dumps(grade, indent=1))
    print(f"score {grade['score']}; results written to {out}")


if __name__ == "__main__":
    main()
