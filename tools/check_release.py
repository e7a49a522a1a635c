"""Check that a release of the lab is consistent (for instructors; CI runs it).

    python tools/check_release.py

1. stubs:     the student files are exactly what tools/make_stubs.py writes.
2. skeleton:  with the student files as shipped, every graded test fails on a
              TODO, every test of the given code passes, and the Gradescope
              score is 0.
3. reference: with RL_SOLUTIONS=1 everything passes and the Gradescope score
              is the maximum.
4. mutants:   each wrong answer in tools/mutants.py, put in a student file,
              makes at least one test of its task fail, and each graded test
              fails for at least one of them (a test no mistake fails tests nothing).
5. leaks:     in a fresh students' copy (tools/release.py), no callable outside the three
              student files gives a task's answers (tools/leaks.py).
6. hints:     the precision of "Likely mistake" lines, both ways. Each known
              mistake of the tests (grading.feedback.Mistake) names a mutant of its
              task; that mutant behaves like the mistake's model on every probe,
              gets the mistake's hint, and no other. A mutant no mistake names,
              each near miss in tools/near_misses.py (caught, too) and the
              reference get no hint at all. Every model differs from the rule on
              some probe, and from every other mistake's model.
Exits 1 if any check fails.
"""

import inspect
import itertools
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import types
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
import grading
import lab  # these need ROOT on the path first
import test_rl_systems
from grading.feedback import same
from grading.gradescope import ReportError, read_junit, read_todos
from grading.harness import TimeLimitExceeded, time_limit
from tools import leaks, release
from tools.make_stubs import STUDENT_FILES, MarkerError, all_stubs, out_of_date
from tools.mutants import MUTANTS
from tools.near_misses import NEAR_MISSES

HINT = re.compile(r"Likely mistake: (.*)")
KNOWN = test_rl_systems.KNOWN_MISTAKES  # task -> grading.feedback.KnownMistakes
# The corpus has no loops, so its verdicts must not depend on how busy the machine is:
# here a test and a hint's probes get far more time than in a student's run.
CHECK_LIMIT = 60  # seconds per test; a hint's probes get a quarter of it


def pytest(reference=False):
    """Run the lab's tests; return (exit code, {test: failure message or None}, (score, max),
    the Gradescope report, {test: the task of the lab.TaskNotDone it failed on})."""
    with tempfile.TemporaryDirectory() as tmp:
        xml, grades = Path(tmp, "junit.xml"), Path(tmp, "grades.json")
        env = dict(os.environ, RL_SOLUTIONS="1" if reference else "0")
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", f"--junitxml={xml}", f"--gradescope={grades}"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
        )
        try:
            outcomes, todos = read_junit(xml), read_todos(xml)
        except ReportError as error:
            why = f"(pytest did not run: {error})"
            return done.returncode, {why: done.stdout + done.stderr}, None, None, {}
        grade = json.loads(grades.read_text())
        score = (grade["score"], sum(t["max_score"] for t in grade["tests"]))
        return done.returncode, outcomes, score, grade, todos


def check_stubs():
    try:
        stubs = all_stubs()
    except MarkerError as error:
        return [str(error)]
    return [
        f"{name} differs from what tools/make_stubs.py writes from solutions/{name}"
        for name in out_of_date(stubs)
    ]


def check_skeleton():
    """With the stubs, each graded test fails on the lab.TaskNotDone of its own task or of a
    task it uses (lab.USES), and every test of the given code passes."""
    _, outcomes, score, _, todos = pytest()
    problems = []
    for name, message in outcomes.items():
        task = lab.task_of(name)
        graded = task is not None
        if graded and todos.get(name) not in (task, *lab.USES.get(task, ())):
            problems.append(
                f"{name} should fail on a TODO of Task {task} with the stubs, "
                f"got: {message} (a TODO of {todos.get(name)})"
            )
        if not graded and message is not None:
            problems.append(f"{name} tests given code and should pass with the stubs: {message}")
    if score is None or score[0] != 0:
        problems.append(f"the stubs should score 0 on Gradescope, got {score}")
    return problems, outcomes


def check_reference():
    """The reference passes everything with the full score; (problems, its report)."""
    code, outcomes, score, report, _ = pytest(reference=True)
    problems = [
        f"{name} fails with the reference: {message}"
        for name, message in outcomes.items()
        if message is not None
    ]
    bonus = sum(task.points for task in lab.TASKS.values() if task.extra)  # on top of the max
    if code != 0 or score is None or not math.isclose(score[0], score[1] + bonus):
        problems.append(
            f"the reference should pass and get the full score, got exit code {code}, score {score}"
        )
    return problems, report


# What the docs state about the points: {total} is the points of the tasks that are not
# extra credit, {extra} those of the extra credit (lab.TASKS). Whitespace is not compared.
STATED = {
    "README.md": ["Tasks 1 to 3 are worth {total} points, Task 3c {extra} extra"],
    "docs/grading.md": [
        "max scores add up to exactly {total}, and Task 3c's to exactly {extra}",
        "extra credit: {extra} points on top of the {total}",
    ],
}


def points_table():
    """docs/grading.md's table of the points, from lab.TASKS."""
    rows = ["| task | what | points |", "|---|---|---|"]
    for task, (_, what, points, extra) in lab.TASKS.items():
        if not extra:
            rows.append(f"| {task} | {f'`{what}`' if what.isidentifier() else what} | {points:g} |")
    rows.append(f"| total | | {sum(t.points for t in lab.TASKS.values() if not t.extra):g} |")
    for task, (_, what, points, extra) in lab.TASKS.items():
        if extra:
            rows.append(f"| {task} (extra credit) | `{what}` | {points:g} on top |")
    return "\n".join(rows)


def task_points(report):
    """{task: the points its entries in a Gradescope report offer}: the max scores, or for
    extra credit the scores (its max scores are 0), of a report in which all passed."""
    found = {}
    for entry in report["tests"]:
        task = lab.task_of(entry["name"].split(": ")[-1])
        if task and not entry["name"].split(": ")[-1].endswith("_unseen_inputs"):
            offered = entry["score"] if lab.TASKS[task].extra else entry["max_score"]
            found[task] = found.get(task, 0) + offered
    return found


def points_problems(report, root=ROOT):
    """lab.TASKS's points against what states them: each task's tests in the reference's
    report (`report`) and in the bundle's report of a submission that passes everything
    (grade.py's scoring), README.md and docs/grading.md (STATED and `points_table`)."""
    from tools.autograder import fresh_checks, grade  # the bundle's, here only

    if report is None:
        return ["no report of the reference to count the points in"]
    want = {task: t.points for task, t in lab.TASKS.items()}
    total = sum(t.points for t in lab.TASKS.values() if not t.extra)
    extra = sum(t.points for t in lab.TASKS.values() if t.extra)
    tests = {
        entry["name"].split(": ")[-1]: lab.task_of(entry["name"].split(": ")[-1])
        for entry in report["tests"]
    }
    checks = [name for name in vars(fresh_checks) if name.endswith("_unseen_inputs")]
    bundle = grade.grade(tests, [("in a run", dict.fromkeys([*tests, *checks]), None)], checks)
    problems = []
    for where, got in (("the reference's report", report), ("the bundle's report", bundle)):
        offered = task_points(got)
        problems += [
            f"Task {task}'s tests in {where} offer {offered.get(task, 0):g} points, "
            f"lab.TASKS gives it {points:g}"
            for task, points in want.items()
            if offered.get(task, 0) != points
        ]
        if sum(e["max_score"] for e in got["tests"]) != total or got["score"] != total + extra:
            problems.append(
                f"{where} gives {got['score']:g} of "
                f"{sum(e['max_score'] for e in got['tests']):g}, lab.TASKS "
                f"{total + extra:g} of {total:g}"
            )
    for doc, statements in STATED.items():
        text = " ".join((root / doc).read_text().split())
        problems += [
            f'{doc} should state "{s.format(total=f"{total:g}", extra=f"{extra:g}")}" '
            f"(lab.TASKS: {total:g} points, {extra:g} extra)"
            for s in statements
            if s.format(total=f"{total:g}", extra=f"{extra:g}") not in text
        ]
    if points_table() not in (root / "docs/grading.md").read_text():
        problems.append(
            "docs/grading.md's table of the points is not lab.TASKS's; it should "
            f"read:\n{points_table()}"
        )
    return problems


def check_leaks():
    """(problems, the leak check's last line) on a fresh students' copy."""
    with tempfile.TemporaryDirectory() as tmp:
        release.write_student(Path(tmp))
        ok, report = leaks.check(Path(tmp))
    lines = report.strip().splitlines()
    problems = [line for line in lines if line.startswith("LEAK:")]
    if not ok and not problems:
        problems = [f"the leak check did not finish: {report[-1000:]}"]
    return problems, lines[-1] if lines else ""


def mutated_source(mutant):
    """The reference file of the mutant's task with the mutant's change made."""
    name = lab.file_of(mutant.task)
    reference = (ROOT / "solutions" / name).read_text()
    count = reference.count(mutant.old)
    if count != 1:
        raise ValueError(
            f"mutant {mutant.mistake!r}: its `old` text occurs {count} times in "
            f"solutions/{name}, must occur once"
        )
    return name, reference.replace(mutant.old, mutant.new)


def failures(name, source):
    """Run the tests of student file `name` with `source` standing in for it
    (as grading.load would import it); return (the module, {test: message} for the tests
    that fail).

    The tests are plain functions: calling them in this process (with the same time
    limit) is what pytest does, minus its start-up, which would cost a second per mutant.
    """
    module = types.ModuleType(name[:-3])
    exec(compile(source, f"<{name} under test>", "exec"), module.__dict__)
    sys.modules[module.__name__] = module  # grading.load("memory") now finds this one
    failed = {}
    for test_name, test in vars(test_rl_systems).items():
        task = lab.task_of(test_name)
        if task is None or lab.file_of(task) != name:
            continue
        fixtures = {arg: grading.load(arg) for arg in inspect.signature(test).parameters}
        try:
            with np.errstate(all="ignore"), time_limit(test_name, limit=CHECK_LIMIT):
                test(**fixtures)
        except (Exception, TimeLimitExceeded) as error:  # noqa: BLE001 (any of these fails a test)
            failed[test_name] = str(error) if isinstance(error, AssertionError) else repr(error)
    return module, failed


def hints_in(failed):
    """Every "Likely mistake" line in the failure messages, without the prefix."""
    return [line for message in failed.values() for line in HINT.findall(message)]


def task_function(module, task):
    return getattr(module, lab.TASKS[task].what)


def model_problems():
    """Each known mistake names a corpus mutant of its task, differs from the rule on some
    probe, and is told apart from every other mistake (with another `why`) by some probe."""
    problems = []
    names = {(mutant.task, mutant.mistake) for mutant in MUTANTS}
    for task, known in KNOWN.items():
        _, right, answers = known.tables()
        for mistake, values in answers.items():
            if (task, mistake.mutant) not in names:
                problems.append(
                    f"Task {task}: mistake {mistake.why!r} names {mistake.mutant!r}, "
                    "which is not a mutant of this task in tools/mutants.py"
                )
            if all(same(v, r) for v, r in zip(values, right)):
                problems.append(
                    f"Task {task}: mistake {mistake.why!r} gives the right answer on "
                    "every probe: it can never be named"
                )
        for (one, a), (other, b) in itertools.combinations(answers.items(), 2):
            if one.why != other.why and all(same(x, y) for x, y in zip(a, b)):
                problems.append(
                    f"Task {task}: mistakes {one.why!r} and {other.why!r} agree on "
                    "every probe: add a probe that tells them apart"
                )
    return problems


def check_mutants():
    """Every mutant fails a test of its task; a mutant a known mistake names behaves like
    that mistake's model on every probe and gets that hint and no other; every other
    mutant, every near miss and the reference get no hint; every graded test fails for
    some mutant. Returns (problems, report lines, {task: [mutants, caught, named by a known
    mistake, got their own hint, got a wrong one]}, [near misses, caught, hinted],
    the number of tasks in which the reference gets a hint)."""
    os.environ["RL_SOLUTIONS"] = "0"
    for known in KNOWN.values():
        known.limit = CHECK_LIMIT / 4
    problems, lines, counts, near, reference_hints = [], [], {}, [0, 0, 0], 0
    for name in STUDENT_FILES:  # without a clean baseline, a caught mutant proves nothing
        module, failed = failures(name, (ROOT / "solutions" / name).read_text())
        problems += [f"the reference as {name} fails {test}: {msg}" for test, msg in failed.items()]
        for task, known in KNOWN.items():
            hint = known.hint(task_function(module, task)) if lab.file_of(task) == name else ""
            reference_hints += bool(hint)
            if hint:
                problems.append(f"the reference gets a hint in Task {task}: {hint.strip()}")
    if problems:
        return problems, lines, counts, near, reference_hints
    problems += model_problems()
    caught_by = {test: 0 for test in vars(test_rl_systems) if lab.task_of(test)}
    for mutant in MUTANTS:
        module, failed = failures(*mutated_source(mutant))
        own = [m for m in KNOWN[mutant.task].mistakes if m.mutant == mutant.mistake]
        hints = hints_in(failed)
        wrong = [hint for hint in hints if hint not in {m.why for m in own}]
        count = counts.setdefault(mutant.task, [0, 0, 0, 0, 0])
        count[0] += 1
        count[1] += bool(failed)
        count[2] += bool(own)
        count[3] += bool(own and hints and not wrong)
        count[4] += bool(wrong)
        about = f"mutant {mutant.mistake!r} (Task {mutant.task})"
        problems += [f"{about} got a hint that is not its own: {hint!r}" for hint in wrong]
        if own and not hints:
            problems.append(f"{about} never got its hint {own[0].why!r}")
        matched = KNOWN[mutant.task].matches(task_function(module, mutant.task))
        problems += [
            f"{about} does not behave like its model {m.why!r} on every probe"
            for m in own
            if m not in matched
        ]
        if not failed:
            problems.append(f"mutant not caught (Task {mutant.task}): {mutant.mistake}")
            continue
        for test in failed:
            caught_by[test] += 1
        test, message = next(iter(failed.items()))
        lines.append(
            f"  {mutant.task:<3} {mutant.mistake}\n      caught by {test}: "
            + message.replace("\n", " ")[:160]
        )
    problems += [
        f"{test} fails for none of the mutants: add the mistake it guards against "
        "to tools/mutants.py, or drop the test"
        for test, n in caught_by.items()
        if n == 0
    ]
    for miss in NEAR_MISSES:
        module, failed = failures(*mutated_source(miss))
        hints = hints_in(failed) + HINT.findall(
            KNOWN[miss.task].hint(task_function(module, miss.task))
        )
        near[0] += 1
        near[1] += bool(failed)
        near[2] += bool(hints)
        about = f"near miss {miss.mistake!r} (Task {miss.task})"
        if not failed:
            problems.append(f"{about} is not caught")
        problems += [f"{about} got a hint: {hint!r}" for hint in dict.fromkeys(hints)]
    for name in STUDENT_FILES:
        sys.modules.pop(name[:-3], None)
    return problems, lines, counts, near, reference_hints


def main():
    problems = check_stubs()
    print(f"stubs: {'ok' if not problems else 'FAILED'}")
    found, report = check_reference()
    print(f"reference: {'ok' if not found else 'FAILED'}")
    problems += found
    found = points_problems(report)
    print(
        f"points: {'ok' if not found else 'FAILED'} (lab.TASKS against the tests, README.md, "
        "docs/grading.md and the bundle's report)"
    )
    problems += found
    found, outcomes = check_skeleton()
    graded = sum(lab.task_of(name) is not None for name in outcomes)
    print(
        f"skeleton: {'ok' if not found else 'FAILED'} ({graded} graded tests fail on a TODO, "
        f"{len(outcomes) - graded} tests of given code pass)"
    )
    problems += found
    found, summary = check_leaks()
    print(f"leaks: {'ok' if not found else 'FAILED'} ({summary.removeprefix('leaks: ')})")
    problems += found
    found, lines, counts, near, reference_hints = check_mutants()
    named, own, wrong = (sum(c[i] for c in counts.values()) for i in (2, 3, 4))
    print(
        f"mutants and hints: {'ok' if not found else 'FAILED'}, {len(lines)} of {len(MUTANTS)} "
        f"mutants caught"
    )
    print(
        f"  corpus mutants with their own hint {own}/{named} ({len(MUTANTS) - named} more "
        f"have no known mistake's model); wrong hints {wrong}; near misses hinted {near[2]} "
        f"(of {near[0]}, {near[1]} caught); reference hinted {reference_hints}"
    )
    for task, (total, caught, named, own, wrong) in counts.items():
        print(
            f"  Task {task:<3} {total:>3} mutants, {caught:>3} caught, {named:>3} with a model, "
            f"{own:>3} get their own hint, {wrong} a wrong one"
        )
    print("\n".join(lines))
    problems += found
    for problem in problems:
        print("PROBLEM:", problem)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
