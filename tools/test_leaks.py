"""Tests of the leak check (tools/leaks.py): it passes on a fresh students' copy and finds
a reference function put back in a test file, bound to a name or not
(python -m pytest -q tools)."""

import pytest

from tools import leaks, release

# Task answers as they could slip back into the test files: a module-level function (the
# stand-in for Task 2b that test_gpu_model.py once held), a closure that calls the function
# written beside it (Task 3b), and a lambda passed as an argument (Task 2a, kept by the
# object it was passed to).
PLANTED = {
    "experiments/test_gpu_model.py": """

def fifo(finished, version, k, B, drop_stale):
    dropped = [g for g in finished if drop_stale and version - g["tag"] > k]
    for g in dropped:
        finished.remove(g)
        g["dropped"] = True
    if len(finished) < B:
        return None, dropped
    batch = finished[:B]
    del finished[:B]
    for g in batch:
        g["lag"] = version - g["tag"]
    return batch, dropped
""",
    "test_given.py": """

def planted():
    def summing(rewards, grad_logp, weights):
        return (rewards[:, None, None] * weights[:, :, None] * grad_logp).sum(axis=(0, 1))

    def averaging(rewards, grad_logp, weights):
        return summing(rewards, grad_logp, weights) / len(rewards)
    return averaging
""",
    "test_rl_systems.py": """

PLANTED = KnownMistakes("2a", [], probes=list,
                        observe=lambda n, d, v, k, B: n - d < (v + k + 1) * B)
""",
}


@pytest.fixture(scope="module")
def copy(tmp_path_factory):
    folder = tmp_path_factory.mktemp("student")
    release.write_student(folder)
    return folder


def test_a_fresh_students_copy_has_no_leak(copy):
    ok, report = leaks.check(copy)
    assert ok, report
    assert "LEAK" not in report and " 0 solve a task" in report, report


def test_a_reference_function_put_back_is_found(copy):
    for path, text in PLANTED.items():
        with open(copy / path, "a") as file:
            file.write(text)
    ok, report = leaks.check(copy)
    assert not ok, report
    for leak in (
        "experiments.test_gpu_model.fifo gives Task 2b's answers",
        "test_given.planted.<locals>.averaging (from its source) gives Task 3b's answers",
        "test_rl_systems.PLANTED.observe gives Task 2a's answers",
    ):
        assert f"LEAK: {leak}" in report, report
