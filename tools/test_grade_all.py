"""Tests of what a course sees of the grading (issue 41): the report in Gradescope's format,
the points check, tools/grade_all.py and two gradings at once (python -m pytest -q tools).

The tests that grade with the bundle need root and the student's user (AUTOGRADER_USER,
else lab-student; never nobody), and a Python that user can run with the bundle's
requirements (AUTOGRADER_PYTHON, else this one): without them they are skipped, saying
why. CI runs them in its foreground, never beside another grading as the same user.
"""

import csv
import json
import os
import pwd
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import lab
from grading import gradescope
from tools import check_autograder, check_release, release
from tools.autograder import fresh_checks, grade, student

ROOT = Path(__file__).resolve().parent.parent
TASK_FILES = [module + ".py" for module in lab.STUDENT_MODULES]
# Gradescope's results.json, as its autograder specification documents it
TOP_FIELDS = {
    "score",
    "execution_time",
    "output",
    "output_format",
    "test_output_format",
    "test_name_format",
    "visibility",
    "stdout_visibility",
    "extra_data",
    "tests",
    "leaderboard",
}
TEST_FIELDS = {
    "score",
    "max_score",
    "status",
    "name",
    "name_format",
    "number",
    "output",
    "output_format",
    "tags",
    "visibility",
    "extra_data",
}
FORMATS = {"text", "html", "simple_format", "md", "ansi"}
VISIBILITIES = {"visible", "hidden", "after_due_date", "after_published"}
STATUSES = {"passed", "failed"}
MEMORY_ONLY = sum(t.points for t in lab.TASKS.values() if t.module == "memory")  # 35


def format_problems(report):
    """What in `report` is not Gradescope's results.json as this lab writes it: documented
    fields and values only; a Markdown output; every test with a status, a visibility and a
    number, numbered in task order; each unseen-input check as two entries, whether it
    passed visible and what it tried after the due date; no run header or rewritten assert
    line in a check's message."""
    problems = [f"top-level field {key!r}" for key in set(report) - TOP_FIELDS]
    if report.get("output_format") != "md" or not report.get("output"):
        problems.append("no Markdown output")
    if report.get("visibility", "visible") not in VISIBILITIES:
        problems.append(f"visibility {report['visibility']!r}")
    if report.get("stdout_visibility", "hidden") not in VISIBILITIES:
        problems.append(f"stdout_visibility {report['stdout_visibility']!r}")
    order = list(lab.TASKS)
    last = (0, 0)
    for test in report["tests"]:
        about = f"test {test.get('number')} {test.get('name')}"
        problems += [f"{about}: field {key!r}" for key in set(test) - TEST_FIELDS]
        if test.get("status") not in STATUSES or test.get("visibility") not in VISIBILITIES:
            problems.append(
                f"{about}: status {test.get('status')!r}, visibility {test.get('visibility')!r}"
            )
        if test.get("output_format", "text") not in FORMATS:
            problems.append(f"{about}: output_format {test['output_format']!r}")
        if not all(isinstance(test.get(key), float) for key in ("score", "max_score")):
            problems.append(f"{about}: score and max_score must be numbers")
        task, _, i = str(test.get("number")).partition(".")
        if (
            not isinstance(test.get("number"), str)
            or task not in order
            or (order.index(task), int(i)) <= last
        ):
            problems.append(f"{about}: not numbered in task order")
        else:
            last = (order.index(task), int(i))
        if "_unseen_inputs" in test["name"] and (
            test["output"].startswith("with ") or "\nassert " in test["output"]
        ):
            problems.append(f"{about}: a run's header or an assert line: {test['output']!r}")
    checks = [t for t in report["tests"] if "_unseen_inputs" in t["name"]]
    for shown, details in zip(checks[::2], checks[1::2]):
        if (
            (shown["visibility"], details["visibility"]) != ("visible", "after_due_date")
            or shown["status"] != details["status"]
            or "what it tried" not in details["name"]
        ):
            problems.append(
                f"check {shown['name']}: not a visible verdict and its details after the due date"
            )
    return problems


@pytest.fixture(scope="module")
def reference_report(tmp_path_factory):
    """The reference's local `pytest --gradescope` report."""
    path = tmp_path_factory.mktemp("report") / "results.json"
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", f"--gradescope={path}"],
        cwd=ROOT,
        env=dict(os.environ, RL_SOLUTIONS="1"),
        capture_output=True,
        timeout=300,
    )
    return json.loads(path.read_text())


def a_partial_grading(reference_report):
    """The bundle's scoring (grade.grade) of a submission whose Task 2a fails a public test
    with the public inputs and its unseen-input check with fresh ones, and whose Task 1b
    passes its public tests but not its unseen-input check."""
    tests = {
        e["name"].split(": ")[-1]: lab.task_of(e["name"].split(": ")[-1])
        for e in reference_report["tests"]
    }
    checks = sorted(n for n in vars(fresh_checks) if n.endswith("_unseen_inputs"))
    first = next(n for n in tests if tests[n] == "2a")
    public = dict.fromkeys([*tests, *checks])
    public[first] = "may_start(...): expected True, got False"
    public["test_task1b_unseen_inputs"] = "on inputs the public tests don't use: 3 != 4"
    fresh = dict(public, test_task2a_unseen_inputs="on inputs the public tests don't use: no")
    return grade.grade(
        tests,
        [("with the public inputs", public, None), ("with fresh inputs", fresh, None)],
        checks,
        ["a note"],
    )


def test_reports_are_gradescopes_format(reference_report):
    """The local report of the reference and the bundle's of a partial submission hold to
    the format; the partial one fails 1b and 2a and says why at the right visibility."""
    partial = a_partial_grading(reference_report)
    assert format_problems(reference_report) == []
    assert format_problems(partial) == []
    assert all(t["status"] == "passed" for t in reference_report["tests"])
    full = sum(t.points for t in lab.TASKS.values())
    assert partial["score"] == full - lab.TASKS["1b"].points - lab.TASKS["2a"].points
    by_number = {t["number"]: t for t in partial["tests"]}
    check_1b = [t for t in partial["tests"] if "1b_unseen" in t["name"]]
    assert [t["status"] for t in check_1b] == ["failed", "failed"]
    assert check_1b[0]["output"].startswith("failed: Task 1b's tests earn nothing")
    assert check_1b[1]["output"] == "on inputs the public tests don't use: 3 != 4"
    assert by_number["2a.1"]["output"].startswith("with the public inputs:\nmay_start")
    n_1b = sum(lab.task_of(t["name"].split(": ")[-1]) == "1b" for t in reference_report["tests"])
    assert (
        f"| 1b | kv_cache_bytes | memory.py | {n_1b} of {n_1b} | failed | 0 of 10 |"
        in (partial["output"])
    )
    assert partial["output"].startswith("a note\n\n**Lab 20: ")
    assert partial["extra_data"]["tasks"]["1b"] == 0 and partial["extra_data"]["notes"] == [
        "a note"
    ]


def test_one_setting_shows_the_checks_details_at_once(reference_report, monkeypatch):
    monkeypatch.setattr(grade, "UNSEEN_DETAILS", "visible")
    partial = a_partial_grading(reference_report)
    details = [t for t in partial["tests"] if "what it tried" in t["name"]]
    assert {t["visibility"] for t in details} == {"visible"}
    with pytest.raises(ValueError, match="details must be one of"):
        gradescope.results({}, {}, details="after_the_exam")


def test_points_check_passes_on_main_and_fails_on_a_planted_edit(reference_report, monkeypatch):
    """check_release's points check: clean on the lab as it is; Task 2b at 20 points (the
    tests then offer 20, as pytest would split them) is caught in README.md and in
    docs/grading.md's statements and table."""
    assert check_release.points_problems(reference_report) == []
    monkeypatch.setitem(lab.TASKS, "2b", lab.TASKS["2b"]._replace(points=20))
    tests = {
        e["name"].split(": ")[-1]: lab.task_of(e["name"].split(": ")[-1])
        for e in reference_report["tests"]
    }
    planted = gradescope.results(tests, dict.fromkeys(tests))
    problems = check_release.points_problems(planted)
    assert len(problems) == 4, problems
    assert any(
        p.startswith('README.md should state "Tasks 1 to 3 are worth 105 points') for p in problems
    )
    assert any("| 2b | `take_batch` | 20 |" in p for p in problems)
    unsplit = check_release.points_problems(reference_report)  # tests still offer 15
    assert any(
        "Task 2b's tests in the reference's report offer 15 points, lab.TASKS gives it 20" in p
        for p in unsplit
    )


def test_a_regrade_can_repeat_the_fresh_seed(monkeypatch):
    monkeypatch.setenv("AUTOGRADER_FRESH_SEED", "4141")
    assert grade.fresh() == 4141
    monkeypatch.setenv("AUTOGRADER_FRESH_SEED", str(grade.PUBLIC_SEED))
    with pytest.raises(ValueError, match="a whole number other than 2026"):
        grade.fresh()
    monkeypatch.delenv("AUTOGRADER_FRESH_SEED")
    seeds = {grade.fresh() for _ in range(5)}  # random ones, never the public seed
    assert grade.PUBLIC_SEED not in seeds and len(seeds) > 1


# ---- grading with the bundle: root, the student's user and a Python it can run


def grading_setup():
    """(user, python) to grade with, or the reason there are none (the tests then skip)."""
    if os.geteuid() != 0:
        return None, "grading with the bundle needs root"
    name = os.environ.get("AUTOGRADER_USER") or "lab-student"
    try:
        pwd.getpwnam(name)
    except KeyError:
        return None, f"no user {name} (set AUTOGRADER_USER)"
    python = os.environ.get("AUTOGRADER_PYTHON") or sys.executable
    done = subprocess.run(
        [python, "-I", "-c", "import numpy, pytest"], user=name, cwd="/", capture_output=True
    )
    if done.returncode != 0:
        return None, f"{name} cannot run {python} with numpy and pytest (set AUTOGRADER_PYTHON)"
    return (name, python), None


@pytest.fixture(scope="module")
def setup():
    found, why = grading_setup()
    if found is None:
        pytest.skip(why)
    return found


@pytest.fixture(scope="module")
def bundle(tmp_path_factory, setup):
    out = tmp_path_factory.mktemp("release") / "out"
    release.main([str(out)])
    return out / "autograder.zip"


def files(memory="solutions"):
    """The task files: the stubs, with the reference's memory.py if `memory` says so."""
    out = {name: (ROOT / name).read_text() for name in TASK_FILES}
    if memory == "solutions":
        out["memory.py"] = (ROOT / "solutions" / "memory.py").read_text()
    return out


def start(bundle, root, submission, user, python):
    """Unzip the bundle into AUTOGRADER_ROOT `root` and start run_autograder on `submission`."""
    check_autograder.unpack(bundle, root, submission)
    env = dict(
        os.environ,
        AUTOGRADER_ROOT=str(root),
        AUTOGRADER_USER=user,
        PYTHONUNBUFFERED="1",
        PATH=os.pathsep.join([str(Path(python).parent), os.environ["PATH"]]),
    )
    env.pop(student.LOCK_FD, None)
    return subprocess.Popen(
        [str(root / "source" / "run_autograder")],
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def test_a_second_grading_as_the_same_user_is_refused(bundle, setup, tmp_path):
    """Two gradings at once as one user: the second is refused at once, with a clear message
    and no results.json; the first scores right (Task 1 of the reference: 35)."""
    user, python = setup
    first = start(bundle, tmp_path / "first", files(), user, python)
    for line in first.stdout:  # grade.py holds the lock before it says how it boxes the child
        if line.startswith(("the child runs in a box", "no box")):
            break
    second = start(bundle, tmp_path / "second", files("stubs"), user, python)
    _, refused = second.communicate(timeout=120)
    first.communicate(timeout=600)
    assert second.returncode == grade.BUSY, refused
    assert f"refused: another grading runs its student code as {user}" in refused
    assert not (tmp_path / "second" / "results" / "results.json").exists()
    report = json.loads((tmp_path / "first" / "results" / "results.json").read_text())
    assert first.returncode == 0 and report["score"] == MEMORY_ONLY
    assert format_problems(report) == []


def test_grade_all_grades_a_folder_and_resumes(bundle, setup, tmp_path):
    """A zip of the stubs (0), a folder with the reference's memory.py (35) and a broken zip
    (not graded, the others still are): one row each, the totals the sums of the tasks'
    points; a run with a row deleted grades that one again and keeps the others."""
    user, python = setup
    folder = tmp_path / "submissions"
    (folder / "memory-only").mkdir(parents=True)
    for name, text in files().items():
        (folder / "memory-only" / name).write_text(text)
    with zipfile.ZipFile(folder / "stubs.zip", "w") as archive:
        for name, text in files("stubs").items():
            archive.writestr(f"lab/{name}", text)
        archive.writestr("../outside/memory.py", "never taken out")
    (folder / "broken.zip").write_bytes(b"PK\x03\x04 not a zip")
    out = tmp_path / "grades.csv"

    def run():
        done = subprocess.run(
            [
                sys.executable,
                str(ROOT / "tools" / "grade_all.py"),
                str(folder),
                str(out),
                "--bundle",
                str(bundle),
                "--python",
                python,
            ],
            capture_output=True,
            text=True,
            timeout=600,
            env=dict(os.environ, AUTOGRADER_USER=user),
        )
        return done, {row["submission"]: row for row in csv.DictReader(out.open())}

    done, rows = run()
    assert done.returncode == 1 and "[3/3]" in done.stdout, done.stdout + done.stderr
    assert list(rows) == ["broken.zip", "memory-only", "stubs.zip"]
    assert rows["broken.zip"]["not graded"].startswith("the zip cannot be read")
    assert [rows[name]["total"] for name in ("memory-only", "stubs.zip")] == [
        f"{MEMORY_ONLY:g}",
        "0",
    ]
    for name in ("memory-only", "stubs.zip"):
        assert float(rows[name]["total"]) == sum(float(rows[name][task]) for task in lab.TASKS)
        assert rows[name]["not graded"] == "" and float(rows[name]["seconds"]) > 0
    assert not (tmp_path / "outside").exists()
    kept = out.read_text().splitlines()
    out.write_text("\n".join(line for line in kept if not line.startswith("memory-only")) + "\n")
    again, rows_again = run()
    assert "2 already in" in again.stdout and "[1/1] memory-only: 35 points" in again.stdout
    assert {name: row["total"] for name, row in rows_again.items()} == {
        name: row["total"] for name, row in rows.items()
    }


def test_grade_all_refuses_to_run_without_root(setup, tmp_path):
    """As the unprivileged user itself, grade_all refuses before grading anything."""
    user, python = setup
    done = subprocess.run(
        [python, str(ROOT / "tools" / "grade_all.py"), str(tmp_path), str(tmp_path / "grades.csv")],
        user=user,
        cwd="/",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and "refused: grading needs root" in done.stderr, done.stderr
    assert not (tmp_path / "grades.csv").exists()
