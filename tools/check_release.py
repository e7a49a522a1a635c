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
5. hints:     every "Likely mistake" line a mutant gets names its own mistake
              (contains the mutant's `hint`; none at all if its hint is None), a
              mutant with a hint gets it, and the reference triggers no hint
              (no known mistake's answer equals the right one on a test's inputs).
Exits 1 if any check fails.
"""
import inspect
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
import lab  # noqa: E402  (these need ROOT on the path first)
import lab.feedback  # noqa: E402
from lab.gradescope import ReportError, read_junit  # noqa: E402
import test_rl_systems  # noqa: E402
from lab.harness import TimeLimitExceeded, time_limit  # noqa: E402
from tools.make_stubs import STUDENT_FILES, MarkerError, all_stubs, out_of_date  # noqa: E402
from tools.mutants import MUTANTS  # noqa: E402

TODO = "is not implemented yet"
HINT = re.compile(r"Likely mistake: (.*)")


def pytest(reference=False):
    """Run the lab's tests; return (exit code, {test: failure message or None}, (score, max))."""
    with tempfile.TemporaryDirectory() as tmp:
        xml, grades = Path(tmp, "junit.xml"), Path(tmp, "grades.json")
        env = dict(os.environ, RL_SOLUTIONS="1" if reference else "0")
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", f"--junitxml={xml}",
                               f"--gradescope={grades}"],
                              cwd=ROOT, env=env, capture_output=True, text=True)
        try:
            outcomes = read_junit(xml)
        except ReportError as error:
            why = f"(pytest did not run: {error})"
            return done.returncode, {why: done.stdout + done.stderr}, None
        grade = json.loads(grades.read_text())
        score = (grade["score"], sum(t["max_score"] for t in grade["tests"]))
        return done.returncode, outcomes, score


def check_stubs():
    try:
        stubs = all_stubs()
    except MarkerError as error:
        return [str(error)]
    return [f"{name} differs from what tools/make_stubs.py writes from solutions/{name}"
            for name in out_of_date(stubs)]


def check_skeleton():
    _, outcomes, score = pytest()
    problems = []
    for name, message in outcomes.items():
        graded = lab.task_of(name) is not None
        if graded and (message is None or TODO not in message):
            problems.append(f"{name} should fail on a TODO with the stubs, got: {message}")
        if not graded and message is not None:
            problems.append(f"{name} tests given code and should pass with the stubs: {message}")
    if score is None or score[0] != 0:
        problems.append(f"the stubs should score 0 on Gradescope, got {score}")
    return problems, outcomes


def check_reference():
    code, outcomes, score = pytest(reference=True)
    problems = [f"{name} fails with the reference: {message}"
                for name, message in outcomes.items() if message is not None]
    bonus = sum(task.points for task in lab.TASKS.values() if task.extra)  # on top of the max
    if code != 0 or score is None or not math.isclose(score[0], score[1] + bonus):
        problems.append(f"the reference should pass and get the full score, got exit code "
                        f"{code}, score {score}")
    return problems


def mutated_source(mutant):
    """The reference file of the mutant's task with the mutant's change made."""
    name = lab.file_of(mutant.task)
    reference = (ROOT / "solutions" / name).read_text()
    count = reference.count(mutant.old)
    if count != 1:
        raise ValueError(f"mutant {mutant.mistake!r}: its `old` text occurs {count} times in "
                         f"solutions/{name}, must occur once")
    return name, reference.replace(mutant.old, mutant.new)


def failures(name, source):
    """Run the tests of student file `name` with `source` standing in for it
    (as lab.load would import it); return {test: message} for the tests that fail.

    The tests are plain functions: calling them in this process (with the same time
    limit) is what pytest does, minus its start-up, which would cost a second per mutant.
    """
    module = types.ModuleType(name[:-3])
    exec(compile(source, f"<{name} under test>", "exec"), module.__dict__)
    sys.modules[module.__name__] = module  # lab.load("memory") now finds this one
    failed = {}
    for test_name, test in vars(test_rl_systems).items():
        task = lab.task_of(test_name)
        if task is None or lab.file_of(task) != name:
            continue
        fixtures = {arg: lab.load(arg) for arg in inspect.signature(test).parameters}
        try:
            with np.errstate(all="ignore"), time_limit(test_name):
                test(**fixtures)
        except (Exception, TimeLimitExceeded) as error:  # noqa: BLE001 (any of these fails a test)
            failed[test_name] = str(error) if isinstance(error, AssertionError) else repr(error)
    return failed


def hints_of_reference():
    """Every hint the feedback functions find while the reference runs its tests (should be
    none: a hint there means a known mistake gives the right answer on a test's inputs)."""
    found = []
    originals = {name: getattr(lab.feedback, name) for name in ("likely", "likely_everywhere")}

    def recording(original):
        def wrapper(*args, **kwargs):
            hint = original(*args, **kwargs)
            if hint:
                found.append(hint.strip())
            return hint
        return wrapper

    for name, original in originals.items():
        setattr(lab.feedback, name, recording(original))
    try:
        failed = {}
        for name in STUDENT_FILES:  # without a clean baseline, a caught mutant proves nothing
            failed[name] = failures(name, (ROOT / "solutions" / name).read_text())
    finally:
        for name, original in originals.items():
            setattr(lab.feedback, name, original)
    return failed, found


def hint_problems(mutant, failed):
    """The wrong or missing hints of one mutant, given its failure messages."""
    problems = []
    for test, message in failed.items():
        for line in HINT.findall(message):
            if mutant.hint is None or mutant.hint not in line:
                problems.append(f"mutant {mutant.mistake!r} (Task {mutant.task}) got a hint that "
                                f"is not its own in {test}: {line!r} (its hint: {mutant.hint!r})")
    if mutant.hint is not None and not any(mutant.hint in line for message in failed.values()
                                           for line in HINT.findall(message)):
        problems.append(f"mutant {mutant.mistake!r} (Task {mutant.task}) never got its hint "
                        f"{mutant.hint!r}")
    return problems


def check_mutants():
    """Every mutant fails a test of its task and gets only its own hint, every graded test
    fails for some mutant, and the unchanged reference fails nothing and triggers no hint.
    Returns (problems, report lines, {task: (mutants, caught, with a precise hint)})."""
    os.environ["RL_SOLUTIONS"] = "0"
    problems, lines, counts = [], [], {}
    failed, hints = hints_of_reference()
    for name, tests in failed.items():
        problems += [f"the reference as {name} fails {test}: {msg}" for test, msg in tests.items()]
    problems += [f"the reference triggers a hint: {hint}" for hint in hints]
    if problems:
        return problems, lines, counts
    caught_by = {test: 0 for test in vars(test_rl_systems) if lab.task_of(test)}
    for mutant in MUTANTS:
        total, caught, precise = counts.get(mutant.task, (0, 0, 0))
        failed = failures(*mutated_source(mutant))
        wrong_hints = hint_problems(mutant, failed) if failed else []
        counts[mutant.task] = (total + 1, caught + bool(failed),
                               precise + bool(failed and mutant.hint and not wrong_hints))
        problems += wrong_hints
        if not failed:
            problems.append(f"mutant not caught (Task {mutant.task}): {mutant.mistake}")
            continue
        for test in failed:
            caught_by[test] += 1
        test, message = next(iter(failed.items()))
        lines.append(f"  {mutant.task:<3} {mutant.mistake}\n      caught by {test}: "
                     + message.replace("\n", " ")[:160])
    problems += [f"{test} fails for none of the mutants: add the mistake it guards against "
                 "to tools/mutants.py, or drop the test" for test, n in caught_by.items() if n == 0]
    for name in STUDENT_FILES:
        sys.modules.pop(name[:-3], None)
    return problems, lines, counts


def main():
    problems = []
    for title, check in (("stubs", check_stubs), ("reference", check_reference)):
        found = check()
        print(f"{title}: {'ok' if not found else 'FAILED'}")
        problems += found
    found, outcomes = check_skeleton()
    graded = sum(lab.task_of(name) is not None for name in outcomes)
    print(f"skeleton: {'ok' if not found else 'FAILED'} ({graded} graded tests fail on a TODO, "
          f"{len(outcomes) - graded} tests of given code pass)")
    problems += found
    found, lines, counts = check_mutants()
    print(f"mutants and hints: {'ok' if not found else 'FAILED'}, {len(lines)} of {len(MUTANTS)} "
          f"caught, {sum(c[2] for c in counts.values())} with a precise hint")
    for task, (total, caught, precise) in counts.items():
        print(f"  Task {task:<3} {total:>3} mutants, {caught:>3} caught, {precise:>3} with their "
              "own hint")
    print("\n".join(lines))
    problems += found
    for problem in problems:
        print("PROBLEM:", problem)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
