"""Grade a folder of submissions with the Gradescope bundle into one CSV (for instructors).

    sudo python tools/grade_all.py SUBMISSIONS OUT.csv [--bundle autograder.zip]
                                   [--python PYTHON] [--fresh-seed SEED]

SUBMISSIONS holds one entry per submission: a folder, or a .zip of one. Each is graded
by the bundle as Gradescope grades it (its run_autograder, in a fresh AUTOGRADER_ROOT), one
after another, with the bundle's isolation: student code runs as the unprivileged user
AUTOGRADER_USER (else lab-student), in a box where the machine allows one, and everything
that user left is removed after each. That needs root, so without root this refuses to
run rather than grade with less. The user must exist (setup.sh makes lab-student; never
`nobody`, whose processes elsewhere every grading ends) and be able to run PYTHON, which
has the bundle's requirements (tools/autograder/requirements.txt). --bundle is the
autograder.zip to grade with (the one uploaded to Gradescope, say); without it, one is
built from this repository (tools/release.py). Of a zip, only the task files (memory.py,
scheduler.py, tis.py, each at most grade.MAX_FILE bytes and grade.MAX_DEPTH folders down)
are taken out: the bundle takes nothing else.

OUT.csv gets one row per submission as soon as it is graded: its name, each task's points
(lab.TASKS), the total, the seconds its grading took, notes (a task file missing, a run
cut short) and `not graded`: why it could not be graded, empty when it was. A broken or
hostile submission is one row, never the end of the run. An interrupted run resumes: the
rows already in OUT.csv are kept and their submissions skipped (delete a row to grade it
again). The fresh run's seed is random for each submission, as on Gradescope, so a
submission whose bug shows on some random inputs only can score differently from one
grading to the next; --fresh-seed SEED grades every one with the same fresh inputs, and
grades it the same again. Exit status 0 when every submission was graded, 1 if some
could not be, 2 when the run is refused (not root, no such user, a second grading as
that user).
"""

import argparse
import csv
import io
import json
import os
import pwd
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path, PurePosixPath

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
import lab
from tools import release
from tools.autograder import grade, student

TASK_FILES = [module + ".py" for module in lab.STUDENT_MODULES]
COLUMNS = ["submission", *lab.TASKS, "total", "seconds", "notes", "not graded"]
# seconds one grading may take: grade.py stops each of its two runs at HARD_LIMIT and
# cleans up within a minute, so only a broken grader gets here
GRADING_LIMIT = 2 * (grade.HARD_LIMIT + grade.STOP_GRACE) + 300
STOP_WAIT = 60  # seconds an interrupted grading gets to clean up before it is killed


class NotGraded(Exception):
    """A submission the bundle could not grade, and why."""


def refuse(why):
    print(f"grade_all: refused: {why}", file=sys.stderr)
    sys.exit(2)


def student_user(python):
    """The user the bundle runs student code as (AUTOGRADER_USER, else lab-student), checked
    as grade.py checks it; refuses the run if there is none or it cannot run `python`."""
    name = os.environ.get("AUTOGRADER_USER") or "lab-student"
    if name == "nobody":
        refuse("AUTOGRADER_USER=nobody: every grading ends all the processes of its user")
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        refuse(
            f"no user {name}: make it as setup.sh does (useradd --system --no-create-home "
            f"--shell /usr/sbin/nologin {name}) or set AUTOGRADER_USER"
        )
    try:
        tried = subprocess.run(
            [python, "-I", "-c", "import numpy, pytest"],
            user=name,
            group=entry.pw_gid,
            extra_groups=[],
            cwd="/",
            capture_output=True,
            text=True,
        )
        problem = tried.stderr[-500:] if tried.returncode != 0 else None
    except OSError as error:
        problem = str(error)
    if problem is not None:
        refuse(
            f"{name} cannot run {python} with numpy and pytest (is it in a folder only root "
            f"can read?): pass --python, one with tools/autograder/requirements.txt that "
            f"{name} can run\n{problem}"
        )
    return name


def submissions(folder):
    """{name: path}: the folders and .zip files in `folder`, by name."""
    return {
        path.name: path
        for path in sorted(folder.iterdir())
        if not path.name.startswith(".") and (path.is_dir() or path.suffix == ".zip")
    }


def read_rows(out):
    """The rows already in OUT.csv, {name: row}; rewrites the file without a row cut short
    (an interrupted write). Refuses a file with other columns."""
    if not out.exists() or out.stat().st_size == 0:
        return {}
    rows = list(csv.reader(io.StringIO(out.read_text(errors="replace"))))
    if rows[0] != COLUMNS:
        refuse(f"{out} has the columns {rows[0]}, not this lab's {COLUMNS}: use a new file")
    kept = {row[0]: row for row in rows[1:] if len(row) == len(COLUMNS)}
    if len(kept) != len(rows) - 1:
        write_rows(out, kept.values())
    return kept


def write_rows(out, rows):
    text = io.StringIO()
    csv.writer(text).writerows([COLUMNS, *rows])
    Path(f"{out}.new").write_text(text.getvalue())
    os.replace(f"{out}.new", out)


def append_row(out, row):
    """Add one row to OUT.csv (with the header if it is new), on disk before the next grading."""
    new = not out.exists() or out.stat().st_size == 0
    with open(out, "a", newline="") as file:
        csv.writer(file).writerows([COLUMNS, row] if new else [row])
        file.flush()
        os.fsync(file.fileno())


def unpack(archive, dest):
    """The task files of a zip submission into `dest`, where they sit in it (see the module
    docstring); its links and other files stay out. NotGraded if it cannot be read."""
    try:
        with zipfile.ZipFile(archive) as members:
            for info in members.infolist()[: grade.MAX_ENTRIES]:
                parts = PurePosixPath(info.filename).parts
                link = stat.S_ISLNK(info.external_attr >> 16)
                if (
                    not parts
                    or parts[-1] not in TASK_FILES
                    or info.is_dir()
                    or link
                    or info.filename.startswith("/")
                    or ".." in parts
                    or "\\" in info.filename
                    or len(parts) > grade.MAX_DEPTH + 1
                    or info.file_size > grade.MAX_FILE
                ):
                    continue
                with members.open(info) as source:
                    data = source.read(grade.MAX_FILE + 1)
                if len(data) <= grade.MAX_FILE:
                    dest.joinpath(*parts).parent.mkdir(parents=True, exist_ok=True)
                    dest.joinpath(*parts).write_bytes(data)
    except (
        zipfile.BadZipFile,
        OSError,
        EOFError,
        RuntimeError,
        NotImplementedError,
        ValueError,
    ) as error:
        raise NotGraded(f"the zip cannot be read ({type(error).__name__}: {error})") from None


def run_bundle(root, python, lock, user, seed):
    """run_autograder in AUTOGRADER_ROOT `root`; its results.json. Ctrl-C (or GRADING_LIMIT)
    stops it as a terminal's Ctrl-C would, so that grade.py cleans up, then re-raises."""
    env = dict(
        os.environ,
        AUTOGRADER_ROOT=str(root),
        AUTOGRADER_USER=user,
        PATH=os.pathsep.join([str(Path(python).parent), os.environ["PATH"]]),
    )
    env[student.LOCK_FD] = str(lock)
    if seed is not None:
        env["AUTOGRADER_FRESH_SEED"] = str(seed)
    process = subprocess.Popen(
        [str(root / "source" / "run_autograder")],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",
        pass_fds=(lock,),
        start_new_session=True,
    )
    try:
        _, errors = process.communicate(timeout=GRADING_LIMIT)
    except (KeyboardInterrupt, subprocess.TimeoutExpired) as error:
        stop(process, user)
        if isinstance(error, KeyboardInterrupt):
            raise
        raise NotGraded(f"its grading ran past {GRADING_LIMIT} s and was stopped") from None
    if process.returncode == grade.BUSY:
        raise NotGraded(f"refused by the bundle: {errors.strip()[-500:]}")
    results = root / "results" / "results.json"
    if process.returncode != 0 or not results.exists():
        raise NotGraded(
            f"the bundle failed (exit status {process.returncode}): {errors.strip()[-500:]}"
        )
    return json.loads(results.read_text())


def stop(process, user):
    """Stop a grading: Ctrl-C to its process group, then, if it has not ended within
    STOP_WAIT seconds, kill it and end its student user's processes."""
    os.killpg(process.pid, signal.SIGINT)
    try:
        process.wait(timeout=STOP_WAIT)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        student.end_processes(student.User(user))


def grade_one(path, bundle, python, lock, user, seed=None):
    """Grade one submission (with the fresh seed `seed` if not None): its row without name
    and seconds."""
    root = Path(tempfile.mkdtemp(prefix="lab-grade-all-"))
    try:
        with zipfile.ZipFile(bundle) as archive:
            archive.extractall(root / "source")
        (root / "source" / "run_autograder").chmod(0o755)
        if path.is_dir():  # grade.py reads it as root, and takes only the task files
            (root / "submission").symlink_to(path.resolve(), target_is_directory=True)
        else:
            (root / "submission").mkdir()
            unpack(path, root / "submission")
        results = run_bundle(root, python, lock, user, seed)
    except NotGraded as error:
        return [""] * len(lab.TASKS) + ["", "", str(error)]
    finally:
        shutil.rmtree(root, ignore_errors=True)  # the submission's link, not what it points to
    extra = results.get("extra_data", {})
    if extra.get("not_graded"):
        return [""] * len(lab.TASKS) + ["", "", extra["not_graded"]]
    points = [f"{extra['tasks'].get(task, 0):g}" for task in lab.TASKS]
    return points + [f"{results['score']:g}", " ".join(extra.get("notes", [])), ""]


def built_bundle(tmp):
    """An autograder.zip built from this repository (tools/release.py)."""
    release.main([str(Path(tmp) / "release")])
    return Path(tmp) / "release" / "autograder.zip"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("submissions", type=Path, help="a folder of submissions (folders, zips)")
    parser.add_argument("out", type=Path, help="the CSV to write (or to resume)")
    parser.add_argument("--bundle", type=Path, help="the autograder.zip (default: built now)")
    parser.add_argument(
        "--python",
        default=sys.executable,
        help="the Python that runs the bundle (python3 in run_autograder)",
    )
    parser.add_argument(
        "--fresh-seed",
        type=int,
        metavar="SEED",
        help="the fresh run's LAB_SEED for every submission (default: a random "
        "one each, as on Gradescope); the same SEED grades the same again",
    )
    args = parser.parse_args(argv)
    if args.fresh_seed is not None and (
        args.fresh_seed < 0 or args.fresh_seed == grade.PUBLIC_SEED
    ):
        parser.error(
            f"argument --fresh-seed: must be a whole number >= 0 other than "
            f"{grade.PUBLIC_SEED}, got {args.fresh_seed}"
        )
    if os.geteuid() != 0:
        refuse(
            "grading needs root: the bundle runs student code as an unprivileged user, in "
            "a box, and cleans up after it only as root; without root the code would run "
            "as you. Run it with sudo."
        )
    if not args.submissions.is_dir():
        parser.error(f"argument SUBMISSIONS: {args.submissions} is not a folder")
    if args.bundle and not zipfile.is_zipfile(args.bundle):
        parser.error(f"argument --bundle: {args.bundle} is not a zip file")
    user = student_user(args.python)
    try:
        lock = student.hold(user)  # for the whole run: no other grading as this user meanwhile
    except student.Busy as error:
        refuse(str(error))
    done, todo = read_rows(args.out), submissions(args.submissions)
    left = {name: path for name, path in todo.items() if name not in done}
    others = sorted(
        p.name
        for p in args.submissions.iterdir()
        if p.name not in todo and not p.name.startswith(".")
    )
    if others:
        print(
            f"grade_all: not submissions (neither a folder nor a .zip), left out: "
            f"{', '.join(others)}"
        )
    print(
        f"grade_all: {len(todo)} submissions in {args.submissions}, {len(todo) - len(left)} "
        f"already in {args.out}; grading {len(left)} as {user}"
    )
    started, failed = time.monotonic(), 0
    with tempfile.TemporaryDirectory() as tmp:
        bundle = args.bundle or built_bundle(tmp)
        for i, (name, path) in enumerate(left.items(), 1):
            began = time.monotonic()
            try:
                row = grade_one(path, bundle, args.python, lock, user, args.fresh_seed)
            except KeyboardInterrupt:
                print(
                    f"grade_all: interrupted; {i - 1} graded this time. Run the same command "
                    "again to go on."
                )
                return 130
            seconds = time.monotonic() - began
            row = [name, *row[:-2], f"{seconds:.1f}", *row[-2:]]
            append_row(args.out, row)
            failed += bool(row[-1])
            shown = f"not graded: {row[-1]}" if row[-1] else f"{row[-4]} points"
            print(f"[{i}/{len(left)}] {name}: {shown} ({seconds:.0f} s)", flush=True)
    took = time.monotonic() - started
    print(
        f"grade_all: {len(left)} submissions done in {took:.0f} s"
        + (f" ({took / len(left):.1f} s each)" if left else "")
        + (f"; {failed} could not be graded (see `not graded` in {args.out})" if failed else "")
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
