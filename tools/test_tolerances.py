"""Tests of the comparisons' kinds (lab/tolerances.py): a task's public tests and its unseen
check compare alike, and a message shows a difference below the printed precision
(python -m pytest -q tools)."""

import ast
import inspect
import re
from pathlib import Path

import numpy as np
import pytest

import lab
from grading import feedback
from lab import tolerances
from lab.tolerances import KIND, STRICTER
from tools.autograder import fresh_checks

ROOT = Path(__file__).resolve().parent.parent
NAMES = {
    value.name for value in vars(tolerances).values() if isinstance(value, tolerances.Tolerance)
}
# The comparisons of expected values (a claim's threshold is not one).
COMPARES = {
    "check",
    "check_cases",
    "same",
    "check_run",
    "check_whole",
    "check_bills",
    "check_admission",
    "check_queues",
    "check_batches",
    "close",
    "exact",
}


def kinds(function):
    """The kinds a function names: a tolerance by its name, or KIND["<task>"]."""
    found = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Name) and node.id in NAMES:
            found.add(node.id)
        elif isinstance(node, ast.Attribute) and node.attr in NAMES:
            found.add(node.attr)
        elif (
            isinstance(node, ast.Subscript)
            and isinstance(node.value, ast.Name)
            and node.value.id == "KIND"
            and isinstance(node.slice, ast.Constant)
        ):
            found.add(KIND[node.slice.value].name)
    return found


def called(function):
    return {
        node.func.id
        for node in ast.walk(function)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    }


def functions(source):
    return {node.name: node for node in ast.parse(source).body if isinstance(node, ast.FunctionDef)}


def mismatches(public_source, unseen_source):
    """Each test whose comparison is not its task's kind (KIND), public or unseen. A public
    test may also name a kind in STRICTER; one that names none compares with feedback's
    default, which must then be its task's kind."""
    public, unseen = functions(public_source), functions(unseen_source)
    default = inspect.signature(feedback.check).parameters["tolerance"].default
    strict = {kind.name for kind in STRICTER}
    found = []
    for task, kind in KIND.items():
        check = unseen[f"test_task{task}_unseen_inputs"]
        if kind is tolerances.EXACT and ("close" in called(check) or kinds(check)):
            found.append(
                f"test_task{task}_unseen_inputs compares with a tolerance; "
                f"Task {task}'s kind is EXACT"
            )
        elif kind is not tolerances.EXACT and kinds(check) != {kind.name}:
            found.append(
                f"test_task{task}_unseen_inputs compares with {sorted(kinds(check))}; "
                f"Task {task}'s kind is {kind.name}"
            )
        for name, test in public.items():
            if lab.task_of(name) != task or not called(test) & COMPARES:
                continue
            named = kinds(test) - strict
            if named - {kind.name}:
                found.append(
                    f"{name} compares with {sorted(named)}; Task {task}'s kind, and its "
                    f"unseen check's, is {kind.name}"
                )
            elif not named and kind is not tolerances.EXACT and kind is not default:
                found.append(
                    f"{name} compares with the default, {default.name}; Task {task}'s "
                    f"kind is {kind.name}: name it (KIND[{task!r}])"
                )
    return found


def test_a_tasks_public_tests_and_unseen_check_compare_alike():
    assert (
        inspect.signature(feedback.same).parameters["tolerance"].default
        is inspect.signature(feedback.check).parameters["tolerance"].default
    )
    public = (ROOT / "test_rl_systems.py").read_text()
    unseen = (ROOT / "tools" / "autograder" / "fresh_checks.py").read_text()
    assert mismatches(public, unseen) == []


def test_a_public_test_looser_than_its_unseen_check_is_found():
    public = (ROOT / "test_rl_systems.py").read_text()
    unseen = (ROOT / "tools" / "autograder" / "fresh_checks.py").read_text()
    # (\s+: the call may be laid out on one line or several)
    looser = re.sub(
        r"(MISTAKES_3B\.about\(tis\.pg_estimate\),\s+tolerance=)ROUNDING", r"\1STATISTICS", public
    )
    assert looser != public
    assert mismatches(looser, unseen) == [
        "test_task3b_float64_array_for_every_size compares with ['STATISTICS']; Task 3b's "
        "kind, and its unseen check's, is FLOATS"
    ]
    tighter = unseen.replace('KIND["3b"]', "tolerances.ROUNDING")
    assert mismatches(public, tighter) == [
        "test_task3b_unseen_inputs compares with ['ROUNDING']; Task 3b's kind is FLOATS"
    ]


def test_a_message_shows_a_difference_below_printed_precision():
    expected, got = np.array([0.5, 1.0]), np.array([0.5, 1.0000001])
    assert "1.0000001" in feedback.expected_got(expected, got)
    with pytest.raises(AssertionError, match=r"1\.0000001"):
        fresh_checks.close(got, expected, "f()", KIND["3a"])
    with pytest.raises(AssertionError, match=r"1\.0000001"):
        feedback.check(1.0000001, 1.0, "f()")
