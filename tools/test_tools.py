"""Tests of the instructor tools and switches (CI: python -m pytest -q tools/test_tools.py)."""

import copy
import os
import pickle
import re
import subprocess
import sys
from pathlib import Path

import pytest

import grading
import lab
from experiments import PARTS, REGISTRY
from tools import release
from tools.make_stubs import MarkerError, only_the_todo, stub_source

ROOT = Path(__file__).resolve().parent.parent

HEADER = "from lab import contracts\n\n\ndef model_state_bytes(n_trained, n_frozen=0):\n    x = 1\n"


def stub(body):
    return stub_source(HEADER + body, "memory.py")


def test_region_becomes_hint_and_raise():
    text = stub(
        "    # BEGIN SOLUTION task1a\n    # HINT: use 16 and 2.\n"
        "    return 16 * n_trained\n    # END SOLUTION\n"
    )
    assert "    x = 1\n" in text and "return 16" not in text
    assert "    # TODO (Task 1a): use 16 and 2.\n" in text
    assert '    raise TaskNotDone("1a")\n' in text
    assert "from lab import TaskNotDone, contracts\n" in text  # the stub's import of it


def test_stub_needs_an_import_from_lab():
    with pytest.raises(MarkerError, match="no one-line `from lab import"):
        stub_source(HEADER.replace("from lab import contracts", "import lab"), "memory.py")


def test_task_not_done_carries_its_task():
    """What the stubs raise: a NotImplementedError (pytest.raises and students' `except`
    still catch it) with the task as data, its message naming task, function and file."""
    todo = lab.TaskNotDone("2b")
    assert isinstance(todo, NotImplementedError) and todo.task == "2b"
    assert str(todo) == "Task 2b take_batch (scheduler.py) is not implemented yet"
    assert pickle.loads(pickle.dumps(todo)).task == copy.copy(todo).task == "2b"
    with pytest.raises(ValueError, match="task must be one of"):
        lab.TaskNotDone("Task 2b")


@pytest.mark.parametrize(
    "body, problem",
    [
        ("    # BEGIN SOLUTION task1a\n    return 1\n", "never closed"),
        ("    return 1\n    # END SOLUTION\n", "without a BEGIN"),
        (
            "    # BEGIN SOLUTION task1a\n    # BEGIN SOLUTION task1a\n    return 1\n"
            "    # END SOLUTION\n    # END SOLUTION\n",
            "may not nest",
        ),
        (
            "    # BEGIN SOLUTION task1b\n    return 1\n    # END SOLUTION\n",
            "belongs in kv_cache_bytes",
        ),
        (
            "    # BEGIN SOLUTION task3a\n    return 1\n    # END SOLUTION\n",
            "not a task of memory.py",
        ),
    ],
)
def test_bad_markers_are_refused(body, problem):
    with pytest.raises(MarkerError, match=problem):
        stub(body)


def test_student_function_holds_only_the_todo():
    region = "    # BEGIN SOLUTION task1a\n    return 1\n    # END SOLUTION\n"
    only_the_todo(stub_source(HEADER.replace("    x = 1\n", "") + region, "memory.py"), "memory.py")
    with pytest.raises(MarkerError, match="outside its solution region"):  # the given x = 1
        only_the_todo(stub(region), "memory.py")


def test_every_experiment_has_what_run_py_calls():
    """The values of experiments/__init__.py's contract (tools/test_house.py checks its names,
    types and functions): keys and labels unique, each TASK a task, SECONDS positive."""
    keys = [e.KEY for e in REGISTRY]
    assert len(set(keys)) == len(keys) and len({e.LABEL for e in REGISTRY}) == len(keys)
    for e in REGISTRY:
        assert e.SECONDS > 0 and any(task.startswith(e.TASK) for task in lab.TASKS), e.KEY
    assert [e.KEY for e in PARTS[:3]] == ["memory", "scheduling", "mismatch"]  # the main figure


def test_loader_rejects_unknown_values(monkeypatch):
    monkeypatch.setenv("RL_SOLUTIONS", "yes")
    with pytest.raises(ValueError, match="RL_SOLUTIONS must be"):
        grading.load("tis")


@pytest.mark.parametrize(
    "flags",
    [
        ["--sigma", "-1"],
        ["--lanes", "0"],
        ["--C", "0.5"],
        ["--noise", "cauchy"],
        ["--sigma", "50"],
        ["--batch-size", "10000000"],
        ["-B", "100000", "--steps", "100"],
    ],
)
def test_run_rejects_bad_flags(flags):
    done = subprocess.run(
        [sys.executable, "run.py", *flags], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2 and f"argument {flags[0]}" in done.stderr, done.stderr


def stubs_pytest(copy, *args):
    """The stdout of `python -m pytest -q ARGS` on the stubs in a students' copy."""
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", *args],
        cwd=copy,
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ, RL_SOLUTIONS="0"),
    ).stdout


def test_readme_first_run_matches_the_stubs(tmp_path):
    """README's "Your first run": its sample of the whole `python -m pytest -q` on the stubs
    in a fresh students' copy (every progress row and the totals: the tests of given code
    that need a task are skipped there), its `-k task1` comment and its sentence of test
    counts are what pytest collects and prints now."""
    release.write_student(tmp_path)
    readme = (ROOT / "README.md").read_text()
    start = readme.index("## Your first run")
    section = readme[start : readme.index("\n## ", start)]
    commands, sample = section.split("```")[1], section.split("```")[3]
    done = stubs_pytest(tmp_path)
    rows = [line for line in sample.splitlines() if " 0/" in line]
    assert len(rows) == len(lab.TASKS) and all(row in done for row in rows), (rows, done[-900:])
    totals = sample.strip().splitlines()[-1].split(" in ")[0]  # "58 failed, 41 passed"
    assert totals in done, (totals, done[-300:])
    task1 = re.search(r"\d+ failed, \d+ deselected", stubs_pytest(tmp_path, "-k", "task1"))[0]
    assert f"rows 1a-1c: {task1}" in commands, task1
    tests = [
        line.split("::")[:2]
        for line in stubs_pytest(tmp_path, "--collect-only").splitlines()
        if "::" in line
    ]
    tasks = [lab.task_of(name) for _, name in tests if lab.task_of(name)]
    given = [path for path, name in tests if not lab.task_of(name)]
    extra = sum(lab.TASKS[task].extra for task in tasks)
    assert (
        f"There are {len(tests)} tests: {len(tasks)} graded ones ({len(tasks) - extra} for "
        f"Tasks 1 to 3 and {extra} for the optional Task 3c), and {len(given)} of the given "
        "code (in `test_given.py` and `experiments/`)"
    ) in " ".join(section.split())
    assert all(path == "test_given.py" or path.startswith("experiments/") for path in given)


def test_run_flag_prints_its_own_section_first_and_draws_it(tmp_path):
    """An experiment flag's section comes first, Parts 1-3 follow in a line each, every line
    fits in 100 characters, and --drop-stale and --c-sweep save (and name) a PNG each."""
    out = subprocess.run(
        [sys.executable, "run.py", "--drop-stale", "--c-sweep", "--out", str(tmp_path / "r.png")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, RL_SOLUTIONS="1"),
    ).stdout
    lines = out.splitlines()
    assert lines[2].startswith("Drop stale (k = 1): ") and "C sweep: token_tis" in out, out
    short = lines[
        lines.index("Parts 1-3 in short (`python run.py` without flags prints their tables):") + 1 :
    ]
    assert [line.split(":")[0].split(" (")[0] for line in short[:4]] == [
        "Part 1",
        "Part 2",
        "Part 3",
        "Masking",
    ], short
    assert "Part 1: model state (weights" not in out  # the full table is left out
    assert max(map(len, lines)) <= 100, max(lines, key=len)
    for png in ("r_drop_stale.png", "r_c_sweep.png"):
        assert (tmp_path / png).stat().st_size > 10_000 and png in out


def test_run_help_shows_each_default_once():
    text = subprocess.run(
        [sys.executable, "run.py", "--help"], cwd=ROOT, capture_output=True, text=True, timeout=60
    ).stdout
    options = re.split(r"\n  (?=-)", text.split("options:")[1])
    assert len(options) > 20 and all(option.count("(default") <= 1 for option in options), text
    assert "(default: None)" not in text and "(default: False)" not in text


def test_readme_stays_a_handout():
    """The README is what a student reads first, in order: at most 260 lines. Background goes
    to a file of docs/, linked from the README's list."""
    n_lines = len((ROOT / "README.md").read_text().splitlines())
    assert n_lines <= 260, f"README.md has {n_lines} lines: move background to docs/"


def test_doc_tables_keep_their_columns():
    """Every row of a Markdown table in README.md and docs/ has as many cells as its header:
    a row rewritten by hand (or from a snapshot's quote) must not lose its last cells."""
    problems = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        width = None
        for i, line in enumerate(path.read_text().splitlines(), 1):
            if not line.startswith("|"):
                width = None
                continue
            cells = len(re.findall(r"(?<!\\)\|", line.strip())) - 1
            if width is None:
                width = cells
            elif cells != width:
                problems.append(f"{path.name}:{i}: {cells} cells, its header has {width}")
    assert not problems, "\n".join(problems)


def test_hint_precision_catches_a_wrong_hint(monkeypatch):
    """check_release's near-miss check can fail: a "near miss" that is really a known
    mistake gets that mistake's hint, which is reported (the real 2a mutants pass)."""
    from tools import check_release
    from tools.mutants import MUTANTS, RULE, Mutant

    monkeypatch.setenv("RL_SOLUTIONS", "0")
    monkeypatch.setattr(check_release, "MUTANTS", [m for m in MUTANTS if m.task == "2a"])
    monkeypatch.setattr(
        check_release,
        "NEAR_MISSES",
        [
            Mutant(
                "2a", "planted: ignores k", RULE, "return n_started - n_dropped < (version + 1) * B"
            )
        ],
    )
    monkeypatch.setattr(check_release, "model_problems", lambda: [])
    problems = check_release.check_mutants()[0]
    assert any("near miss 'planted: ignores k'" in p and "ignored k" in p for p in problems)
    assert not any("mutant" in p and "Task 2a" in p for p in problems), problems


def test_compare_runs_diffs_exactly_and_finds_an_untried_flag():
    from tools.compare_runs import differences, flag_sets, json_differences, uncovered

    assert json_differences({"x": [1.0, float("nan")]}, {"x": [1.0, float("nan")]}) == []
    assert json_differences({"x": [1.0], "y": 1}, {"x": [1.0 + 1e-12], "y": 1.0}) == [
        "x.0: 1.0 != 1.000000000001",
        "y: 1 != 1.0",
    ]
    assert json_differences({"a": 1}, {"b": 1}) == ["top: keys ['a', 'b'] in one only"]
    run_a = (0, "gain 4.08\n", {"rl_systems.json": b'{"g": 4.08}'}, 1.0)
    run_b = (0, "gain 4.09\n", {"rl_systems.json": b'{"g": 4.09}'}, 2.0)
    assert differences(run_a, run_a) == []
    assert differences(run_a, run_b) == [
        "output: @@ -1 +1 @@",
        "output: -gain 4.08",
        "output: +gain 4.09",
        "rl_systems.json: g: 4.08 != 4.09",
    ]
    sets = flag_sets(["all"])
    help_text = (
        "usage: run.py [-B BATCH] [--new-flag X]\n  -B BATCH, --batch BATCH  B\n"
        "  --preset {all}        x\n  --new-flag X          with\n"
        "                        --lanes (a wrapped line)\n"
    )
    assert uncovered(help_text, sets) == ["--new-flag"]
