"""Gradescope's results.json (given): one builder and one JUnit reader for everything that grades.

`pytest --gradescope results.json` (grading/plugin.py), the Gradescope autograder
(tools/autograder/grade.py) and the instructors' checks all score through `results`:

    results({"test_task1a_x": "1a", "test_task1a_y": "1a"}, {"test_task1a_x": None})
    -> test_task1a_x scores 5 of 5 (passed), test_task1a_y 0 of 5 (did not run)

A task's points are split over its tests collected (`shares`), so a test that did
not run (or a -k that left it out) never moves points to another test.
"""

import xml.etree.ElementTree as ET
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import lab

DID_NOT_RUN = "did not run"
# The JUnit property (pytest --junitxml) grading/plugin.py gives a test that failed on a TODO:
# the task of the lab.TaskNotDone it met (read_todos).
TODO = "task_not_done"
# The visibilities Gradescope knows, for a whole report or one entry of it.
VISIBILITIES = ("visible", "hidden", "after_due_date", "after_published")
# Points are shared out in quarters: a multiple of 1/4 is exact in binary floating point, so
# the max scores add up to exactly 100 (and Task 3c's to exactly 10) in any order and for any
# number of tests, where 10 / 3 does not (hundredths do not either: 0.01 is not exact).
UNIT = 4
# Bytes a JUnit report may take: the autograder cuts each student's message to a few
# thousand characters, so a whole run's report takes well under 1 MB; a larger one is
# refused before it is read (a report of 600 MB would take gigabytes to parse).
MAX_REPORT = 32 * 2**20


def shares(points: float, names: Collection[str]) -> dict[str, float]:
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


def results(
    tests: dict[str, str],
    failures: dict[str, str | None],
    locked: dict[str, str] | None = None,
    checks: dict[str, str | None] | None = None,
    details: str = "after_due_date",
    notes: Sequence[str] = (),
) -> dict[str, Any]:
    """Gradescope's results.json, as a dict.

    tests:    {graded test: task} for every graded test collected, in the order they ran.
    failures: {test: None if it passed, else why}; a test missing here did not run.
    locked:   {task: why} for tasks whose passing tests earn nothing anyway (the
              autograder's unseen-input checks failed).
    checks:   {unseen-input check: None if it passed, else why} (the autograder's). Each
              check is two entries after its task's tests, as Gradescope shows a whole
              entry or nothing: whether it passed, visible at once, and what it tried
              (inputs, answers, expected values) with the visibility `details`.
    notes:    paragraphs for the top of the report (a missing file, a run that failed).
    A test's max_score is its share of its task's points (`shares`). An extra-credit
    test has max_score 0 and scores its share when it passes. Entries come in task order,
    numbered "1a.1", "1a.2", ...; the report's `output` (Markdown) holds the notes and a
    table of each task's tests passed and points; extra_data holds each task's points
    ("tasks") and the notes (for tools/grade_all.py).
    """
    if details not in VISIBILITIES:
        raise ValueError(f"details must be one of {VISIBILITIES}, got {details!r}")
    locked, checks = locked or {}, checks or {}
    out: list[dict[str, Any]] = []
    rows: list[Row] = []
    for task, (_, what, points, extra) in lab.TASKS.items():
        mine = [name for name, t in tests.items() if t == task]
        if not mine:
            continue
        entries = entries_of_tests(task, mine, failures, locked.get(task))
        own_checks = [name for name in checks if lab.task_of(name) == task]
        for name in own_checks:
            entries += check_entries(
                task, name, checks[name], f"{task}.{len(entries) + 2}", details
            )
        for i, one in enumerate(entries, 1):
            one["number"] = f"{task}.{i}"
        out += entries
        unseen = (
            ""
            if not own_checks
            else "failed"
            if any(checks[name] is not None for name in own_checks)
            else "passed"
        )
        rows.append(
            Row(
                task,
                what,
                sum(failures.get(name, DID_NOT_RUN) is None for name in mine),
                len(mine),
                unseen,
                sum(e["score"] for e in entries),
                points,
                extra,
            )
        )
    score = sum(t["score"] for t in out)  # exact: quarters
    return dict(
        score=score,
        output=summary(rows, notes, bool(checks)),
        output_format="md",
        visibility="visible",
        stdout_visibility="hidden",
        extra_data=dict(tasks={row.task: row.score for row in rows}, notes=list(notes)),
        tests=out,
    )


class Row(NamedTuple):
    """One task's line of the report's table."""

    task: str
    what: str
    passed: int  # its tests that passed (in every run)
    tests: int  # its tests collected
    unseen: str  # its unseen-input check: "passed", "failed", or "" where there is none
    score: float  # its points earned
    points: float  # its points (lab.TASKS)
    extra: bool  # extra credit


def entries_of_tests(
    task: str, names: list[str], failures: dict[str, str | None], locked: str | None
) -> list[dict[str, Any]]:
    """The entries of one task's tests (`locked`: why its passing tests earn nothing, or None)."""
    _, what, points, extra = lab.TASKS[task]
    share_of = shares(points, names)
    out = []
    for name in names:
        why = failures.get(name, DID_NOT_RUN)
        if why is None:
            why = locked
        out.append(
            dict(
                name=f"{'Extra credit: ' if extra else ''}Task {task} {what} "
                f"({lab.file_of(task)}): {name}",
                score=share_of[name] if why is None else 0.0,
                max_score=0.0 if extra else share_of[name],
                status="passed" if why is None else "failed",
                output=why or "",
                output_format="text",
                visibility="visible",
            )
        )
    return out


SHOWN = {
    "visible": "in entry {} below",
    "after_due_date": "in entry {}, shown after the due date",
    "after_published": "in entry {}, shown once grades are published",
    "hidden": "with your instructor (entry {} is hidden)",
}


def check_entries(
    task: str, name: str, why: str | None, details_number: str, details: str
) -> list[dict[str, Any]]:
    """The two entries of an unseen-input check: passed or failed (visible), and what it
    tried (`details`: its visibility)."""
    where = f"Task {task} on unseen inputs ({lab.file_of(task)})"
    if why is None:
        verdict = f"passed: Task {task}'s tests count."
    else:
        verdict = (
            f"failed: Task {task}'s tests earn nothing until it passes. What it tried, "
            f"what your code gave and what was expected are "
            f"{SHOWN[details].format(details_number)}."
        )
    status = "passed" if why is None else "failed"
    return [
        dict(
            name=f"{where}: {name}",
            score=0.0,
            max_score=0.0,
            status=status,
            output=verdict,
            output_format="text",
            visibility="visible",
        ),
        dict(
            name=f"{where}, what it tried: {name}",
            score=0.0,
            max_score=0.0,
            status=status,
            output=why or "passed on every input it tried.",
            output_format="text",
            visibility=details,
        ),
    ]


def summary(rows: Sequence[Row], notes: Sequence[str], checked: bool) -> str:
    """The report's Markdown: the notes, a title with the score, and a table of the tasks
    (`rows`, with a column for the unseen-input checks if `checked`)."""
    main = [row for row in rows if not row.extra]
    title = f"**Lab 20: {sum(r.score for r in main):g} of {sum(r.points for r in main):g} points**"
    extra = [row for row in rows if row.extra]
    if extra:
        title += (
            f", and {sum(r.score for r in extra):g} of {sum(r.points for r in extra):g} "
            "extra credit"
        )
    lines = [
        title,
        "",
        "| task | what | file | tests passed | "
        + ("unseen inputs | " if checked else "")
        + "points |",
        "|---|---|---|---|" + ("---|" if checked else "") + "---|",
    ]
    for row in rows:
        lines.append(
            f"| {row.task}{' (extra credit)' if row.extra else ''} | {row.what} | "
            f"{lab.file_of(row.task)} | {row.passed} of {row.tests} | "
            + (f"{row.unseen} | " if checked else "")
            + f"{row.score:g} of {row.points:g} |"
        )
    if checked:
        lines += [
            "",
            "Each task is also checked on inputs the public tests don't use: its "
            "points count only when that check passes too.",
        ]
    shown = [note if "\n" not in note else f"```\n{note}\n```" for note in notes]  # a log, as is
    return "\n\n".join([*shown, "\n".join(lines)])


def read_junit(path: str | Path) -> dict[str, str | None]:
    """{test: None if it passed, else why} from a JUnit XML report (pytest --junitxml).

    Bytes that are not UTF-8 are replaced, never fatal. ReportError if the report is
    missing, empty, larger than MAX_REPORT bytes or not XML."""
    found: dict[str, str | None] = {}
    for case in junit_cases(path):
        name = case.attrib["name"]  # junit_cases keeps only the cases with a name
        problem = case.find("failure")
        if problem is None:
            problem = case.find("error")
        skipped = case.find("skipped")
        if skipped is not None:
            found[name] = f"skipped: {skipped.get('message', '')}"
        elif problem is not None:
            found[name] = problem.text or problem.get("message") or "failed"
        else:
            found[name] = None
    return found


def read_todos(path: str | Path) -> dict[str, str]:
    """{test: the task whose lab.TaskNotDone it failed on} from a JUnit XML report, for the
    tests that failed on a TODO (grading/plugin.py records it as the property TODO).
    ReportError as read_junit."""
    return {
        case.get("name"): prop.get("value")
        for case in junit_cases(path)
        for prop in case.iterfind("properties/property")
        if prop.get("name") == TODO
    }


def junit_cases(path):
    """The <testcase> elements of a JUnit XML report that are tests (see read_junit)."""
    try:
        size = Path(path).stat().st_size
        if size > MAX_REPORT:
            raise ReportError(
                f"the test report takes {size / 2**20:.0f} MiB, more than the "
                f"{MAX_REPORT / 2**20:g} MiB any run's report needs"
            )
        text = Path(path).read_bytes().decode("utf-8", errors="replace")
        root = ET.fromstring(text)
    except OSError as error:
        raise ReportError(f"no test report ({error.strerror})") from None
    except ET.ParseError as error:
        raise ReportError(
            f"the test report is {'empty' if not text.strip() else 'cut short'} ({error})"
        ) from None
    # a testcase without a name is not a test (pytest's note of an interrupted run)
    return [case for case in root.iter("testcase") if case.get("name") is not None]
