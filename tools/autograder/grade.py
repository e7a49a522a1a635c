"""The autograder's entry point (run_autograder runs it as `python3 -m grader.grade`).

ROOT (env AUTOGRADER_ROOT, default /autograder, Gradescope's) holds source/ (this bundle:
grader/ and course/, the lab with its reference and the unseen-input checks), submission/
(what the student uploaded) and results/ (where results.json goes).

1. A work folder gets the lab's given files and, from the submission, only memory.py,
   scheduler.py and tis.py (regular files; links and everything else are ignored).
2. pytest runs the public tests and test_fresh.py twice: with LAB_SEED=2026 (the public
   inputs) and with a fresh seed. These pytest processes import no student code: the task
   modules are stand-ins (remote.py) whose functions run in a child process in the work
   folder, as an unprivileged user when this runs as root, with a temporary folder of its
   own, one task file after another, each in a child of its own, in a box (box.py: PID
   and IPC namespaces of its own) where the machine allows it. A run ends itself at
   RUN_LIMIT (remote.py: the tests not finished fail, saying so, and its report is
   written whole); one still going HARD_LIMIT seconds after its start is stopped from
   here. Between two task files and after each run, everything that user left is removed
   (student.py: its processes, its IPC objects, its kernel keys and its files in every
   folder it may write to, found once at start-up), and the grader's log says what was
   removed and that nothing is left. Where the grader may make a memory cgroup, all that
   user's processes share STUDENT_MEMORY; where it may make a kill cgroup, they are ended
   through it.
3. results.json is built here (grading/gradescope.py) from the JUnit XML reports of those two
   runs, against the fixed list of tests and unseen-input checks each run must execute
   (as the grading pytest collected them): one with no result in a run's report (cut by
   a limit, a crash, a lost report) fails, with the run's reason. A test counts when it
   passes in both, and a task's tests count only when its unseen-input check passes too
   (for a task without one, all checks of its file): code written for the public inputs
   earns nothing. Whatever the submission does, a results.json is written: an error in
   cleaning up is logged, and the grade stands.
Only one grading at a time runs as that user (student.hold): a second is refused with exit
status BUSY and no results.json, as the two would end each other's processes.
"""

import json
import os
import pwd
import resource
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import traceback
from pathlib import Path

ROOT = Path(os.environ.get("AUTOGRADER_ROOT", "/autograder"))
SOURCE = Path(__file__).resolve().parent.parent  # this bundle: grader/ and course/
LAB = SOURCE / "course"
sys.path.insert(0, str(LAB))
import lab
from grading import gradescope
from grading.gradescope import DID_NOT_RUN

from . import student

PUBLIC_SEED = 2026
TASK_FILES = [module + ".py" for module in lab.STUDENT_MODULES]
NOT_GIVEN = {"solutions", "test_fresh.py", "__pycache__"}  # kept from the student's process
# setup.sh makes the first; the second is everywhere. AUTOGRADER_USER picks another (a test
# that must not end the processes of a grading running beside it).
USERS = tuple(filter(None, [os.environ.get("AUTOGRADER_USER")])) or ("lab-student", "nobody")
# seconds for one pytest run of all, which ends itself there (remote.py); two runs and their
# HARD_LIMIT fit Gradescope's default 10 min. AUTOGRADER_RUN_LIMIT sets less (a check's).
RUN_LIMIT = float(os.environ.get("AUTOGRADER_RUN_LIMIT", 240))
HARD_LIMIT = RUN_LIMIT + 20  # seconds after which a run that did not end itself is stopped
STOP_GRACE = 10  # seconds a run stopped at HARD_LIMIT gets to write the report of its tests so far
STUDENT_MEMORY = int(os.environ.get("AUTOGRADER_MEMORY_CAP", 2 * 2**30))  # bytes, all its processes
GRADER_MEMORY = 3 * 2**30  # bytes of address space for the grading pytest (answers are capped)
SHORT_LIMIT = 2  # seconds: grading.plugin's short limit here, where a call crosses to a process
UNSEEN = "_unseen_inputs"  # how the names of the checks in test_fresh.py end (remote.UNSEEN)
MAX_FILE = 1_000_000  # bytes; a task file larger than this is not taken
BOX = os.environ.get("AUTOGRADER_BOX") != "off"  # off: the fallback, without box or kill cgroup
MAX_DEPTH, MAX_ENTRIES = 20, 10_000  # the folders of a submission searched for the task files
# Gradescope's visibility of each unseen-input check's details (its inputs, the student's
# answers, the expected values); whether it passed is always visible at once. One of
# gradescope.VISIBILITIES: "after_due_date", "after_published", "hidden" or "visible".
UNSEEN_DETAILS = "after_due_date"
BUSY = 75  # the exit status when another grading runs as the same user (EX_TEMPFAIL)


def submitted_files(submission):
    """The regular files of the submission (not links), at most MAX_DEPTH folders down and
    MAX_ENTRIES entries in all, shallowest first: a walk without recursion, so no tree a
    student uploads can make it fail or take long."""
    found, level, seen = [], [submission], 0
    for _ in range(MAX_DEPTH + 1):
        below = []
        for folder in level:
            try:
                with os.scandir(folder) as entries:
                    for entry in entries:
                        seen += 1
                        if seen > MAX_ENTRIES:
                            return found
                        if entry.is_dir(follow_symlinks=False):
                            below.append(Path(entry.path))
                        elif entry.is_file(follow_symlinks=False):
                            found.append(Path(entry.path))
            except OSError:
                continue
        level = sorted(below)
    return found


def take_submission(submission, folder):
    """Copy the three task files from the submission into `folder`; return notes."""
    notes, files = [], submitted_files(submission)
    for name in TASK_FILES:
        found = sorted(
            (p for p in files if p.name == name and p.stat().st_size <= MAX_FILE),
            key=lambda p: (len(p.parts), str(p)),
        )
        if found:
            shutil.copyfile(found[0], folder / name)  # a regular file: nothing to follow
        else:
            notes.append(
                f"{name} is not in your submission (or is a link, or over "
                f"{MAX_FILE} bytes, or more than {MAX_DEPTH} folders down): its "
                "tasks are graded on the unchanged stub."
            )
    return notes


def work_folder(submission, folder):
    """Fill `folder` so that the student's process can read but not write it: given files +
    task files; returns notes on the submission."""
    shutil.copytree(
        LAB,
        folder,
        dirs_exist_ok=True,
        ignore=lambda d, names: [n for n in names if n in NOT_GIVEN],
    )
    shutil.copytree(
        SOURCE / "grader",
        folder / "_grader",
        ignore=lambda d, names: [n for n in names if n not in ("serve.py", "wire.py")],
    )
    notes = take_submission(submission, folder)
    for path in [folder, *folder.rglob("*")]:  # our own copy: a few levels deep
        path.chmod(0o755 if path.is_dir() else 0o644)
    return notes


def child_user():
    """The unprivileged user for student code; it must be able to run this Python."""
    for user in USERS:
        try:
            pwd.getpwnam(user)
        except KeyError:
            continue
        entry = pwd.getpwnam(user)
        tried = subprocess.run(
            [sys.executable, "-I", "-c", "import numpy"],
            user=user,
            group=entry.pw_gid,
            extra_groups=[],
            cwd="/",
            capture_output=True,
            text=True,
        )
        if tried.returncode != 0:
            raise SystemExit(
                f"user {user} cannot run {sys.executable} with numpy (is it in "
                f"a folder only root can read?):\n{tried.stderr[-500:]}"
            )
        return user
    raise SystemExit("no unprivileged user to run student code as: run setup.sh first")


def collect():
    """Every test and unseen-input check a run must execute (asked of pytest only when no
    run wrote the list it collected: remote.py writes it before the first test)."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "--collect-only",
            "-p",
            "grader.remote",
            "test_fresh.py",
            "test_rl_systems.py",
        ],
        cwd=LAB,
        env=grading_env(),
        capture_output=True,
        text=True,
        errors="replace",
    )
    return [line.split("::")[-1] for line in done.stdout.splitlines() if "::" in line]


def read_collected(path):
    """The names of the tests a run collected (LAB_REMOTE_COLLECTED), or [] if none."""
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return []


def grading_env(**extra):
    """The environment of the grading pytest: no student code imported, one BLAS thread
    (so its address-space limit is not spent on idle threads' buffers), and a short limit
    (after a function overran) that leaves time for the calls to the child."""
    return dict(
        os.environ,
        RL_SOLUTIONS="0",
        PYTHONPATH=str(SOURCE),
        PYTHONDONTWRITEBYTECODE="1",
        PYTHONUTF8="1",
        OPENBLAS_NUM_THREADS="1",
        OMP_NUM_THREADS="1",
        LAB_SHORT_LIMIT=str(SHORT_LIMIT),
        **extra,
    )


def limit_grader():
    """In the grading pytest, before it starts: its own memory limit (the soft one: the
    student's process sets its own, which may be higher)."""
    resource.setrlimit(resource.RLIMIT_AS, (GRADER_MEMORY, resource.RLIM_INFINITY))


def run_tests(folder, seed, report, tmp, student_env):
    """One pytest run of the public tests and the unseen-input checks: (output, problem),
    problem None if the run finished. The child gets `tmp` as its temporary folder, and
    `student_env` says who it runs as and where that user may leave things."""
    env = grading_env(
        LAB_SEED=str(seed),
        LAB_REMOTE_DIR=str(folder),
        LAB_REMOTE_TMP=str(tmp),
        LAB_RUN_LIMIT=str(RUN_LIMIT),
        **student_env,
    )
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "grader.remote",
            f"--junitxml={report}",
            "-o",
            "junit_family=xunit1",
            "test_fresh.py",
            "test_rl_systems.py",
        ],
        cwd=LAB,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        preexec_fn=limit_grader,
    )
    problem = None
    try:
        out, _ = process.communicate(timeout=HARD_LIMIT)
    except subprocess.TimeoutExpired:  # it did not end itself at RUN_LIMIT (remote.py)
        problem = (
            f"the tests ran for more than {HARD_LIMIT:g} s in all and were stopped: "
            "the tests that had not finished score 0"
        )
        process.send_signal(signal.SIGINT)  # pytest may still write the report of the tests so far
        try:
            out, _ = process.communicate(timeout=STOP_GRACE)
        except subprocess.TimeoutExpired:
            process.kill()
            out, _ = process.communicate()
    text = out.decode("utf-8", errors="replace")
    return text[-3000:], problem


def clean_up(user, tmp, when, group=None):
    """End everything `user` left (student.clean, through the kill cgroup `group` if there
    is one) and delete `tmp`; print the log. Never raises: a clean-up that fails is the
    log's, not the grade's."""
    try:
        if user:
            log, _ = student.clean(user, also=[str(tmp)], group=group)
        else:  # not root: only the temporary folder is ours to delete
            shutil.rmtree(tmp, ignore_errors=True)
            log = [f"removed {tmp}"]
    except Exception as error:  # noqa: BLE001
        log = [f"the clean-up failed: {error!r}"]
    for line in log:
        print(f"clean-up {when}: {line}")


def private_tmp(user):
    """A temporary folder only the student's user (and root) can use, for one run."""
    tmp = Path(tempfile.mkdtemp(prefix="lab-student-"))
    if user:
        os.chown(tmp, user.uid, user.gid)
    return tmp


def the_student(reports, cgroups):
    """As root: (the student's User with its places, the environment telling remote.py
    who it is, where it may leave things, its cgroups and whether to box it). The cgroups
    made are added to `cgroups` (for the caller to remove whatever happens)."""
    name = child_user()
    student.hold(name)  # until this process exits; student.Busy if another grading has it
    entry = pwd.getpwnam(name)
    env = dict(LAB_REMOTE_USER=name)
    box, why_not = box_works() if BOX else (None, "AUTOGRADER_BOX=off")
    if box:
        env["LAB_REMOTE_BOX"] = str(box)
        print(f"the child runs in a box ({box.name}): PID and IPC namespaces of its own")
    else:  # POSIX queues then live here: mounted, /dev/mqueue is one of the places
        print(
            f"no box ({why_not}): the child runs in this machine's PID and IPC namespaces; "
            "its System V objects are found in /proc/sysvipc, its POSIX message queues "
            f"in /dev/mqueue ({student.mount_queues()})"
        )
    user = student.User(name, student.places(entry.pw_uid, entry.pw_gid))
    user.before = set(user.owned())
    print(
        f"{name} may write to: {', '.join(user.places)}; owns there already: "
        f"{', '.join(sorted(user.before)) or 'nothing'}"
    )
    places = Path(reports, "places.json")
    places.write_text(json.dumps(dict(places=user.places, before=sorted(user.before))))
    env["LAB_REMOTE_PLACES"] = str(places)
    cgroup, why_not = student.memory_cgroup(f"lab-grade-{secrets.token_hex(4)}", STUDENT_MEMORY)
    if cgroup:
        cgroups.append(cgroup)
        env["LAB_REMOTE_CGROUP"] = str(cgroup)
        print(f"the processes of {name} share {STUDENT_MEMORY / 2**20:g} MiB (cgroup {cgroup})")
    else:
        print(
            f"no memory cgroup ({why_not}): each process of {name} has its own "
            "address-space limit only"
        )
    group, why_not = (
        student.kill_cgroup(f"lab-kill-{secrets.token_hex(4)}")
        if BOX
        else (None, "AUTOGRADER_BOX=off")
    )
    if group:
        cgroups.append(group)
        env["LAB_REMOTE_KILL_CGROUP"] = str(group)
        print(f"the processes of {name} are ended through the cgroup {group}")
    else:
        print(
            f"no kill cgroup ({why_not}): the processes of {name} are found by their "
            "real uid and killed one by one"
        )
    return user, env


def box_works():
    """(box.py's path, None) if this machine can make its namespaces, else (None, why not)."""
    box = Path(__file__).resolve().parent / "box.py"
    try:
        done = subprocess.run(
            [sys.executable, "-I", str(box), "--probe"],
            capture_output=True,
            text=True,
            timeout=student.STEP_LIMIT,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return None, f"box.py --probe: {error}"
    if done.returncode != 0:
        return None, done.stdout.strip() or done.stderr[-300:]
    return box, None


def grade(tests, runs, checks, notes=()):
    """Gradescope's results.json from the graded tests ({test: task}) and the runs
    [(label, {test: None or why} from its report, why the run failed or None)], the
    public run first, and the unseen-input checks each run must execute (`checks`). A test
    or check with no result in a run's report failed there, for the run's reason. A test
    counts when it passes in every run, and a task's tests count only when its
    unseen-input check passes too (for a task without one, all checks of its file). Each
    check's inputs and expected values get the visibility UNSEEN_DETAILS."""

    def failure(name):  # the first run in which `name` failed, with why
        for label, found, problem in runs:
            why = found.get(
                name,
                f"{DID_NOT_RUN}: "
                + (problem or "the run ended before it (its report has no result for it)"),
            )
            if why is not None:  # a check's inputs are never the public ones: no run's label
                return why[:3000] if name in checks else f"{label}:\n{why[:3000]}"
        return None

    own = {task: [n for n in checks if lab.task_of(n) == task] for task in lab.TASKS}
    locked = {}
    for task in lab.TASKS:
        mine = own[task] or [n for n in checks if lab.file_of(lab.task_of(n)) == lab.file_of(task)]
        failed = [failure(n) for n in mine if failure(n) is not None]
        if not mine or any(DID_NOT_RUN in why for why in failed):
            locked[task] = (
                f"passed, but Task {task}'s unseen-input check did not run, so its "
                "tests earn nothing"
            )
        elif failed:
            locked[task] = (
                f"passed, but Task {task} does not work on inputs the public tests "
                "don't use (see its unseen-input check), so its tests earn nothing"
            )
    return gradescope.results(
        tests,
        {name: failure(name) for name in tests},
        locked,
        {name: failure(name) for name in checks},
        UNSEEN_DETAILS,
        notes,
    )


def fresh():
    """The fresh run's LAB_SEED: a random one, or AUTOGRADER_FRESH_SEED to grade again with
    the same fresh inputs (tools/grade_all.py --fresh-seed). Student code never sees it."""
    given = os.environ.get("AUTOGRADER_FRESH_SEED", "")
    if given:
        if not given.isdigit() or int(given) == PUBLIC_SEED:
            raise ValueError(
                f"AUTOGRADER_FRESH_SEED must be a whole number other than "
                f"{PUBLIC_SEED}, got {given!r}"
            )
        return int(given)
    seed = PUBLIC_SEED
    while seed == PUBLIC_SEED:
        seed = secrets.randbelow(10**9)
    return seed


def grade_submission():
    """Grade ROOT/submission: (results.json as a dict, the grading pytest's own peak memory
    in MiB, (bytes, seconds to decode) of the largest answer it read and the most values
    an answer held)."""
    if os.geteuid() == 0:
        SOURCE.chmod(0o700)  # the reference in course/solutions: not for the student's process
    fresh_seed = fresh()
    runs, peak, largest, cgroups, collected = [], 0.0, (0, 0.0, 0), [], []
    with tempfile.TemporaryDirectory() as reports:
        folder = Path(tempfile.mkdtemp(prefix="lab-grade-"))
        try:  # the folder and the cgroups are removed below, whatever happens
            user, student_env = None, {}
            if os.geteuid() == 0:
                user, student_env = the_student(reports, cgroups)
            group = student_env.get("LAB_REMOTE_KILL_CGROUP")
            notes = work_folder(ROOT / "submission", folder)
            # the reports' names carry no seed: the student's process can read command lines
            for i, (label, seed) in enumerate(
                (
                    (f"with the public inputs (LAB_SEED={PUBLIC_SEED})", PUBLIC_SEED),
                    (f"with fresh inputs (LAB_SEED={fresh_seed})", fresh_seed),
                )
            ):
                report, tmp = Path(reports, f"report-{i}.xml"), private_tmp(user)
                stats = Path(reports, f"stats-{i}.json")
                names = Path(reports, f"collected-{i}.json")
                try:
                    log, problem = run_tests(
                        folder,
                        seed,
                        report,
                        tmp,
                        dict(
                            student_env,
                            LAB_REMOTE_STATS=str(stats),
                            LAB_REMOTE_COLLECTED=str(names),
                        ),
                    )
                finally:
                    clean_up(user, tmp, f"after the run {label}", group)
                peak, largest = read_stats(stats, label, peak, largest)
                collected = collected or read_collected(names)
                try:
                    found = gradescope.read_junit(report)
                except gradescope.ReportError as error:
                    found, problem = {}, f"{problem or 'it did not finish'} ({error}):\n{log}"
                runs.append((label, found, problem))
        finally:
            shutil.rmtree(folder, ignore_errors=True)
            for cgroup in cgroups:
                student.remove_cgroup(cgroup)
    collected = collected or collect()
    tests = {
        name: lab.task_of(name)
        for name in collected
        if lab.task_of(name) and not name.endswith(UNSEEN)
    }
    checks = sorted(name for name in collected if name.endswith(UNSEEN))
    if not tests:
        return (
            not_graded(
                "The tests could not be collected:\n"
                + "\n".join(problem for _, _, problem in runs if problem)
            ),
            peak,
            largest,
        )
    problems = [f"The run {label} failed: {problem}" for label, _, problem in runs if problem]
    graded = grade(tests, runs, checks, notes + problems)
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # reading the reports
    return graded, max(peak, own), largest


def not_graded(why):
    """The results.json of a submission the autograder could not grade: score 0, and `why`
    for the student and, in extra_data, for tools/grade_all.py."""
    return dict(
        score=0.0,
        output=why,
        output_format="text",
        visibility="visible",
        stdout_visibility="hidden",
        extra_data=dict(not_graded=why),
        tests=[],
    )


def read_stats(path, label, peak, largest):
    """The grading pytest's figures (remote.py writes them as it ends): print its clean-ups'
    log; return the peak memory and (bytes, seconds, values) of the largest answers so far."""
    try:
        stats = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        print(f"the run {label} left no figures (it was stopped)")
        return peak, largest
    for line in stats["log"]:
        print(f"clean-up in the run {label}: {line}")
    return max(peak, stats["peak_mib"]), (
        *max(largest[:2], tuple(stats["largest_answer"])),
        max(largest[2], stats["most_values"]),
    )


def main():
    out = ROOT / "results" / "results.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    try:
        graded, peak, (size, seconds, values) = grade_submission()
    except student.Busy as error:  # not the submission's doing: no results.json
        print(f"refused: {error}", file=sys.stderr)
        sys.exit(BUSY)
    except (Exception, SystemExit) as error:  # noqa: BLE001 (still write a results.json)
        traceback.print_exc()
        graded, peak, size, seconds, values = (
            not_graded(
                f"The autograder failed ({type(error).__name__}: {error}); please tell your "
                "instructor, who can see its log."
            ),
            0,
            0,
            0.0,
            0,
        )
    out.write_text(json.dumps(graded, indent=1))
    print(
        f"score {graded['score']}; results written to {out}; peak memory of a grading "
        f"process: {peak:.0f} MiB; the largest answer: {size} bytes, decoded in "
        f"{seconds:.2f} s; the most values in one answer: {values}"
    )


if __name__ == "__main__":
    main()
