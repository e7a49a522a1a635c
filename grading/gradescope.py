"""Gradescope's results.json (given): one builder and one JUnit reader for everything that grades.

`pytest --gradescope results.json` (grading/plugin.py), the Gradescope autograder
(tools/autograder/grade.py) and the instructors' checks all score through `results`:

    results({"test_task1a_x": "1a", "test_task1a_y": "1a"}, {"test_task1a_x": None})
    -> test_task1a_x scores 5 of 5 (passed), test_task1a_y 0 of 5 (did not run)

A task's points are split over its tests collected (`shares`), so a test that did
not run (or a -k that left it out) never moves points to another test.
"""
import xml.etree.ElementTree as ET
from pathlib import Path

import lab

DID_NOT_RUN = "did not run"
# Points are shared out in quarters: a multiple of 1/4 is exact in binary floating point, so
# the max scores add up to exactly 100 (and Task 3c's to exactly 10) in any order and for any
# number of tests, where 10 / 3 does not (hundredths do not either: 0.01 is not exact).
UNIT = 4
# Bytes a JUnit report may take: the autograder cuts each student's message to a few
# thousand characters, so a whole run's report takes well under 1 MB; a larger one is
# refused before it is read (a report of 600 MB would take gigabytes to parse).
MAX_REPORT = 32 * 2**20


def shares(points, names):
    """{test: its share of `points`} for the tests `names` of one task: equal shares in
    quarter points, the quarters left over one each to the first tests in name order.

    Example: shares(10, ["b", "a", "c"]) = {"a": 3.5, "b": 3.25, "c": 3.25} (14 + 13 + 13
    quarters = 40 quarters = 10 points).
    """
    base, left_over = divmod(round(points * UNIT), len(names))
    return {name: (base + (i < left_over)) / UNIT for i, name in enumerate(sorted(names))}


class ReportError(Exception):
    """A JUnit report that is missing, empty or not XML: the run that should have
    written it did not finish."""


def results(tests, failures, locked=None):
    """Gradescope's results.json, as a dict.

    tests:    {graded test: task} for every graded test collected.
    failures: {test: None if it passed, else why}; a test missing here did not run.
    locked:   {task: why} for tasks whose passing tests earn nothing anyway (the
              autograder's unseen-input checks failed).
    A test's max_score is its share of its task's points (`shares`). An extra-credit
    test has max_score 0 and scores its share when it passes.
    """
    locked = locked or {}
    share_of = {}
    for task in set(tests.values()):
        share_of |= shares(lab.TASKS[task].points, [n for n, t in tests.items() if t == task])
    out = []
    for name, task in tests.items():
        _, what, _, extra = lab.TASKS[task]
        share = share_of[name]
        why = failures.get(name, DID_NOT_RUN)
        if why is None:
            why = locked.get(task)
        out.append(dict(name=f"{'Extra credit: ' if extra else ''}Task {task} {what} "
                             f"({lab.file_of(task)}): {name}",
                        score=share if why is None else 0.0, max_score=0.0 if extra else share,
                        output=why or ""))
    return dict(score=sum(t["score"] for t in out), tests=out)  # exact: quarters


def read_junit(path):
    """{test: None if it passed, else why} from a JUnit XML report (pytest --junitxml).

    Bytes that are not UTF-8 are replaced, never fatal. ReportError if the report is
    missing, empty, larger than MAX_REPORT bytes or not XML."""
    try:
        size = Path(path).stat().st_size
        if size > MAX_REPORT:
            raise ReportError(f"the test report takes {size / 2**20:.0f} MiB, more than the "
                              f"{MAX_REPORT / 2**20:g} MiB any run's report needs")
        text = Path(path).read_bytes().decode("utf-8", errors="replace")
        root = ET.fromstring(text)
    except OSError as error:
        raise ReportError(f"no test report ({error.strerror})") from None
    except ET.ParseError as error:
        raise ReportError(f"the test report is {'empty' if not text.strip() else 'cut short'} "
                          f"({error})") from None
    found = {}
    for case in root.iter("testcase"):
        if case.get("name") is None:  # not a test (pytest's note of an interrupted run)
            continue
        problem = case.find("failure")
        if problem is None:
            problem = case.find("error")
        skipped = case.find("skipped")
        if skipped is not None:
            found[case.get("name")] = f"skipped: {skipped.get('message', '')}"
        elif problem is not None:
            found[case.get("name")] = problem.text or problem.get("message") or "failed"
        else:
            found[case.get("name")] = None
    return found
