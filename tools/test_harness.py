"""Tests of the grading harness against broken student files (CI: pytest -q tools/test_harness.py).

Each test copies the lab to a temporary folder, puts one broken student file in
it (the reference with one bad change), runs pytest or run.py there as a student
would, and checks what the student sees: that it ends within a bound, the
Gradescope JSON, the message. LAB_TIME_LIMIT=1 shortens the 5 s limit so the
whole file runs in about a minute.
"""

import ast
import importlib.util
import itertools
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import grading
import lab
import run as run_py
import test_rl_systems
from experiments import PARTS, part2_scheduling
from grading import gradescope

ROOT = Path(__file__).resolve().parent.parent
FAST = dict(LAB_TIME_LIMIT="1")  # limit 1 s, backstop 1 s later; run.py parts 5x their time
EXTRA = sum(t.points for t in lab.TASKS.values() if t.extra)  # scored on top of the 100
TESTS_2A = sum(lab.task_of(name) == "2a" for name in vars(test_rl_systems))
TESTS_2 = sum(lab.task_of(name) == "2" for name in vars(test_rl_systems))
PART_2_LIMIT = f"{5 * part2_scheduling.SECONDS:.3g} s"  # run.py's, above FAST's 1 s

# Broken student code, appended to a reference file: a later `def` replaces the reference's.
SWALLOW = """
def take_batch(finished, version, k, B, drop_stale=False):
    while True:
        try:
            time.sleep(0.01)
        except Exception:  # swallows everything but the time limit
            continue
"""
NO_ALARM = """
def may_start(n_started, n_dropped, version, k, B):
    import signal
    if hasattr(signal, "setitimer"):
        signal.setitimer(signal.ITIMER_REAL, 0)  # turns the alarm off
    while True:
        pass
"""
IGNORE_ALL = """
def may_start(n_started, n_dropped, version, k, B):
    while True:
        try:
            time.sleep(1)
        except BaseException:  # swallows the time limit too
            pass
"""
IMPORT_LOOP = "\nwhile True:\n    pass\n"
# One C call that never gives up Python's lock: no alarm handler, no watchdog can run.
HOLDS_THE_LOCK = "\ndef rl_memory_gb(*args, **kwargs):\n    return sum(range(10**15))\n"
SLOW_CALL = "\nprint(simulate(16, 32, 1, n_steps=30000))\n"  # a debug call at the bottom
BARE_ASSERT = "\ndef kv_cache_bytes(*args, **kwargs):\n    assert False\n"
BARE_RAISE = "\ndef kv_cache_bytes(*args, **kwargs):\n    raise NotImplementedError\n"
HUGE_PRINT = (
    "\ndef kv_cache_bytes(*args, **kwargs):\n    for i in range(200000):\n        print(i)\n"
)
INTERRUPT = "\ndef rl_memory_gb(*args, **kwargs):\n    raise KeyboardInterrupt\n"
PYTEST_EXIT = "\ndef rl_memory_gb(*args, **kwargs):\n    import pytest\n    pytest.exit('bye', 0)\n"
OS_EXIT = "\ndef rl_memory_gb(*args, **kwargs):\n    import os\n    os._exit(0)\n"
THREAD = "\nimport threading\nthreading.Thread(target=time.sleep, args=(1000,)).start()\n"


def lab_copy(tmp_path, **files):
    """A copy of the lab in tmp_path with the stubs, and each files[module] (a text appended
    to the reference, or None for the reference itself) as that student file."""
    dest = tmp_path / "lab20"
    # (not the quick start's .venv either: in CI's copy it is a 200 MB folder)
    shutil.copytree(
        ROOT,
        dest,
        ignore=shutil.ignore_patterns(
            ".git", ".venv", "__pycache__", "rl_systems.*", "*.egg-info", "build"
        ),
    )
    for module, extra in files.items():
        source = (ROOT / "solutions" / f"{module}.py").read_text()
        (dest / f"{module}.py").write_text(source + "\nimport time\n" + (extra or ""))
    return dest


def run(dest, *args, env=None, python=(), timeout=90, interrupt_after=None):
    """Run `python *python *args` in dest; return (exit code, output, seconds)."""
    env = dict(os.environ, RL_SOLUTIONS="0", **(env or FAST))
    start = time.monotonic()
    process = subprocess.Popen(
        [sys.executable, *python, *args],
        cwd=dest,
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    # (Ctrl-C reaches the child even where this runs in a background job, which ignores it)
    if interrupt_after:
        time.sleep(interrupt_after)
        process.send_signal(signal.SIGINT)
    out, _ = process.communicate(timeout=timeout)
    return process.returncode, out, time.monotonic() - start


def grade(dest, *flags, **kwargs):
    """pytest with --gradescope in dest:
    (exit code, output, seconds, {test: (score, max, output)}, the whole JSON)."""
    code, out, seconds = run(
        dest, "-m", "pytest", "-q", *flags, "--gradescope", "results.json", **kwargs
    )
    path = dest / "results.json"
    results = json.loads(path.read_text()) if path.exists() else None
    tests = (
        {
            t["name"].split(": ")[-1]: (t["score"], t["max_score"], t["output"])
            for t in results["tests"]
        }
        if results
        else {}
    )
    return code, out, seconds, tests, results


def task_points(tests, prefix):
    return round(sum(score for name, (score, _, _) in tests.items() if name.startswith(prefix)), 6)


def assert_every_test_listed(tests):
    maxima = {}
    for name, (_, max_score, _) in tests.items():
        task = lab.task_of(name)
        maxima[task] = maxima.get(task, 0) + max_score
    expected = {task: 0 if t.extra else t.points for task, t in lab.TASKS.items()}
    assert maxima == pytest.approx(expected), maxima  # extra credit: max_score 0


# ---------------------------------------------------------------- pytest: time limits


def test_import_time_loop_costs_one_limit(tmp_path):
    dest = lab_copy(tmp_path, memory=None, scheduler=IMPORT_LOOP, tis=None)
    code, out, seconds, tests, _ = grade(dest)
    assert code == 1 and seconds < 30, (code, seconds)
    assert_every_test_listed(tests)
    assert task_points(tests, "test_task1") == 35 and task_points(tests, "test_task3") == 30 + EXTRA
    assert task_points(tests, "test_task2") == 0
    assert "scheduler.py cannot be imported: importing it ran for more than 1 s" in out
    assert "(stopped in scheduler.py, line" in out
    assert out.count("ran for more than") == 1, out  # shown once, later tests refer to it


def test_limit_cannot_be_swallowed(tmp_path):
    dest = lab_copy(tmp_path, scheduler=SWALLOW)
    code, out, seconds, tests, _ = grade(dest, "-k", "task2b")
    assert code == 1 and seconds < 30, (code, seconds)
    assert "TimeLimitExceeded: this test ran for more than 1 s" in out
    assert "(stopped in scheduler.py, line" in out and "in take_batch)" in out
    assert_every_test_listed(tests)
    assert all(
        output == "did not run"
        for name, (_, _, output) in tests.items()
        if not name.startswith("test_task2b")
    )


def loop_in(source, task, condition="True"):
    """`source` with a loop `while condition` at the top of task `task`'s solution region."""
    region = f"    # BEGIN SOLUTION task{task}\n"
    return source.replace(region, f"    while {condition}:\n        pass\n" + region)


def test_loop_costs_one_limit_then_short_ones(tmp_path):
    dest = lab_copy(tmp_path, memory=None, scheduler=None, tis=None)
    student = dest / "scheduler.py"
    student.write_text(loop_in(student.read_text(), "2a"))
    code, out, seconds, tests, _ = grade(dest)
    assert code == 1 and seconds < 45, (code, seconds)  # one 1 s limit, then 0.5 s each
    assert out.count("this test ran for more than 1 s:") == 1, out
    short = (
        "ran for more than 0.5 s (the short limit: may_start already ran past 1 s in test_task2a"
    )
    assert out.count(short) == TESTS_2A + TESTS_2 - 1, out  # 2a's tests, and Task 2's, use it
    assert task_points(tests, "test_task2b") == 15 and task_points(tests, "test_task1") == 35
    assert task_points(tests, "test_task2a") == task_points(tests, "test_task2_") == 0


def test_loop_on_some_inputs_still_earns_the_tests_it_passes(tmp_path):
    dest = lab_copy(tmp_path, memory=None, scheduler=None)
    student = dest / "scheduler.py"
    student.write_text(loop_in(student.read_text(), "2b", condition="drop_stale"))
    code, out, seconds, tests, _ = grade(dest, "-k", "task2b")
    assert code == 1 and seconds < 30, (code, seconds)
    assert "(the short limit: take_batch already ran past 1 s" in out, out
    assert tests["test_task2b_first_in_first_out"][0] > 0  # never asks to drop
    assert tests["test_task2b_drops_even_without_a_batch"][0] == 0


def test_slow_call_at_the_bottom_is_reported_at_that_line(tmp_path):
    dest = lab_copy(tmp_path, scheduler=SLOW_CALL)
    line = (dest / "scheduler.py").read_text().splitlines().index(SLOW_CALL.strip()) + 1
    code, out, seconds = run(dest, "-m", "pytest", "-q", "-k", "task2a")
    assert code == 1 and seconds < 30, (code, seconds)
    assert f"scheduler.py, line {line}, in <module>)" in out, out  # not simulate's line


@pytest.mark.parametrize(
    "wrong",
    [
        'w if scheme != "none" else 1.0',  # a scalar for "none"
        'w[:, :1] if scheme == "seq" else w',
    ],
)  # (N, 1) for "seq"
def test_wrong_3a_shape_is_task_3a_contract_error_in_the_claims_tests(tmp_path, wrong):
    dest = lab_copy(
        tmp_path,
        tis=(
            "\nright = importance_weights.__wrapped__\n\n\n"
            "@checked(contracts.importance_weights, returns=contracts.token_weights)\n"
            "def importance_weights(logp_train, logp_infer, scheme, C=2.0):\n"
            f"    w = right(logp_train, logp_infer, scheme, C)\n    return {wrong}\n"
        ),
    )
    code, out, _seconds, tests, _ = grade(dest, "-k", "task3_")
    failed = [
        output
        for name, (score, _, output) in tests.items()
        if name.startswith("test_task3_") and score == 0
    ]
    assert code == 1 and failed, out
    assert all(
        output.startswith(
            "ContractError: importance_weights (Task 3a, tis.py) must return an array of shape"
        )
        for output in failed
    ), failed
    assert "pg_estimate" not in out and "toy.py" not in out, out


@pytest.mark.parametrize("how", ["alarm turned off by the student", "no SIGALRM (as on Windows)"])
def test_limit_without_alarm_signal(tmp_path, how):
    dest = lab_copy(tmp_path, scheduler=NO_ALARM)
    python = ()
    if how.startswith("no SIGALRM"):  # run pytest in a Python whose signal module has no alarm
        python = (
            "-c",
            "import signal, sys; del signal.SIGALRM, signal.setitimer; "
            "import pytest; sys.exit(pytest.main(sys.argv[1:]))",
        )
    code, out, seconds = run(
        dest, *("-m", "pytest") if not python else (), "-q", "-k", "task2a", python=python
    )
    assert code == 1 and seconds < 30, (code, seconds, out)
    assert out.count("TimeLimitExceeded: this test ran for more than 1 s:") == 1, out
    assert out.count("ran for more than 0.5 s (the short limit: may_start") == TESTS_2A - 1, out
    assert "in may_start)" in out


def test_backstop_ends_a_session_that_ignores_the_limit(tmp_path):
    dest = lab_copy(tmp_path, memory=None, scheduler=IGNORE_ALL)
    code, out, seconds, tests, results = grade(dest)
    assert code == 3 and seconds < 30, (code, seconds)
    assert "(Task 2a, scheduler.py) ignored its 1 s time limit" in out, out
    assert_every_test_listed(tests)
    stuck = [name for name, (_, _, output) in tests.items() if "ignored its 1 s" in output]
    assert len(stuck) == 1 and "ignored" in results["output"]
    assert task_points(tests, "test_task1") == 35
    assert tests["test_task3_best_C_is_inside_the_sweep"][2] == "did not run"


def test_last_resort_ends_code_that_holds_the_lock_and_shows_where(tmp_path):
    """faulthandler's exit, 3 * (1 + 1) + 5 s into the test at LAB_TIME_LIMIT=1, printed to
    the terminal (not into pytest's capture of descriptor 2): the student's line is named."""
    dest = lab_copy(tmp_path, memory=HOLDS_THE_LOCK)
    code, out, seconds = run(dest, "-m", "pytest", "-q", "-k", "task1c")
    assert code == 1 and 10 < seconds < 30, (code, seconds, out)
    assert "Timeout (0:00:11)!" in out and 'memory.py", line' in out, out
    assert "in rl_memory_gb" in out, out


# ---------------------------------------------------------------- pytest: scores


@pytest.mark.parametrize("stop", [INTERRUPT, PYTEST_EXIT])
def test_interrupted_session_moves_no_points(tmp_path, stop):
    dest = lab_copy(tmp_path, memory=stop, scheduler=None, tis=None)
    code, _out, seconds, tests, results = grade(dest)
    assert code != 0 and seconds < 30, (code, seconds)
    assert_every_test_listed(tests)
    assert task_points(tests, "test_task1a") == 10 and task_points(tests, "test_task1c") == 0
    assert results["score"] == 20 and "did not run" in results["output"]
    task3 = [name for name in tests if lab.task_of(name) == "3"]
    share = gradescope.shares(10, task3)["test_task3_best_C_is_inside_the_sweep"]
    assert tests["test_task3_best_C_is_inside_the_sweep"] == (0.0, share, "did not run")


def test_os_exit_is_a_failure(tmp_path):
    dest = lab_copy(tmp_path, memory=OS_EXIT, scheduler=None, tis=None)
    code, out, seconds, tests, results = grade(dest)
    assert code == 1 and seconds < 30, (code, seconds)
    assert "your code called os._exit(0)" in out and "memory.py, line" in out
    full = sum(t.points for t in lab.TASKS.values())
    assert results["score"] == full - lab.TASKS["1c"].points
    assert task_points(tests, "test_task1c") == 0


def test_exit_past_the_lab_leaves_a_json_that_says_so(tmp_path):
    low_level_exit = OS_EXIT.replace("import os\n    os._exit", "import posix\n    posix._exit")
    dest = lab_copy(tmp_path, memory=low_level_exit)
    _code, _out, _seconds, tests, results = grade(dest)
    assert "did not finish" in results["output"] and results["score"] == 20, results
    assert tests["test_task3_best_C_is_inside_the_sweep"][2] == "did not run"


def test_thread_left_running_does_not_keep_pytest_alive(tmp_path):
    dest = lab_copy(tmp_path, memory=THREAD)
    code, out, seconds = run(dest, "-m", "pytest", "-q", "-k", "task1")
    assert code == 0 and seconds < 30, (code, seconds, out)
    assert "left a thread running" in out


def test_deselected_tests_score_zero_and_keep_their_points(tmp_path):
    dest = lab_copy(tmp_path, memory=None)
    code, out, _seconds, tests, _results = grade(dest, "-k", "task1a or task1c_ppo")
    assert code == 0, out
    assert_every_test_listed(tests)
    assert task_points(tests, "test_task1a") == 10 and 0 < task_points(tests, "test_task1c") < 15
    assert tests["test_task1b_qwen_7b_is_56_kib_per_token"][2] == "did not run"


# ---------------------------------------------------------------- pytest: messages


@pytest.mark.parametrize(
    "bug, kind, line",
    [
        (BARE_ASSERT, "AssertionError", "assert False"),
        (BARE_RAISE, "NotImplementedError", "raise NotImplementedError"),
    ],
)
def test_error_without_text_is_never_blank(tmp_path, bug, kind, line):
    dest = lab_copy(tmp_path, memory=bug)
    _code, out, _seconds, tests, _ = grade(dest, "-k", "task1b")
    expected = f"{kind} (with no message)\n  at memory.py, line "
    assert expected in out and f"in kv_cache_bytes: {line}" in out, out
    assert all(
        expected in output
        for name, (_, _, output) in tests.items()
        if name.startswith("test_task1b")
    )


def test_huge_print_is_cut(tmp_path):
    dest = lab_copy(tmp_path, memory=HUGE_PRINT)
    _code, out, _seconds, tests, _ = grade(dest, "-k", "task1b")
    assert len(out) < 20_000 and "more lines" in out and "cut)" in out, len(out)
    assert all(len(output) < 3000 for _, _, output in tests.values())


def test_import_error_is_one_line_shown_once(tmp_path):
    dest = lab_copy(tmp_path)
    (dest / "tis.py").write_text("import torch\n" + (dest / "tis.py").read_text())
    _code, out, _seconds, tests, _ = grade(dest, "-k", "task3")
    message = "tis.py cannot be imported: No module named 'torch' (line 1)"
    assert out.count(message) == 1 and "Traceback" not in out and "importlib" not in out, out
    assert all(
        output.startswith(message)
        for name, (_, _, output) in tests.items()
        if name.startswith("test_task3")
    )


# ---------------------------------------------------------------- pytest: --gradescope PATH


@pytest.mark.parametrize("form", ["space", "equals"])
def test_gradescope_path_forms(tmp_path, form):
    dest = lab_copy(tmp_path, memory=None)
    target = tmp_path / "out" / "results.json"
    target.parent.mkdir()
    flag = ["--gradescope", str(target)] if form == "space" else [f"--gradescope={target}"]
    code, out, _ = run(dest, "-m", "pytest", "-q", "-k", "task1", *flag)
    assert code == 0 and json.loads(target.read_text())["score"] == 35, out


@pytest.mark.parametrize(
    "path, problem", [("missing/results.json", "does not exist"), (".", "is a folder")]
)
def test_bad_gradescope_path_refused_before_tests(tmp_path, path, problem):
    dest = lab_copy(tmp_path)
    code, out, _seconds = run(dest, "-m", "pytest", "-q", "--gradescope", path)
    assert code == 4 and problem in out and "passed" not in out and "failed" not in out, out


# ---------------------------------------------------------------- run.py


def with_done(module, done, extra=""):
    """The stub of task file `module` with the reference's functions of the tasks `done`
    appended (a later `def` replaces the stub's), then `extra`."""
    reference = (ROOT / "solutions" / f"{module}.py").read_text()
    lines, text = reference.splitlines(keepends=True), (ROOT / f"{module}.py").read_text()
    functions = {
        node.name: node for node in ast.parse(reference).body if isinstance(node, ast.FunctionDef)
    }
    for task in done:
        node = functions[lab.TASKS[task].what]
        start = min([d.lineno for d in node.decorator_list] + [node.lineno])
        text += "\n\n" + "".join(lines[start - 1 : node.end_lineno])
    return text + extra


def run_part(part, texts, tmp_path, monkeypatch):
    """run.py's attempt at `part` with the task files `texts` ({module: source}): (what it
    said, why it recorded the part unavailable)."""
    modules = {}
    for module, text in texts.items():
        path = tmp_path / f"{module}.py"
        path.write_text(text)
        spec = importlib.util.spec_from_file_location(module, path)
        modules[module] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(modules[module])
    monkeypatch.setattr(grading, "load", modules.__getitem__)
    said, attempt = [], run_py.Run(run_py.parse_args(["--out", str(tmp_path / "x.png")]))
    attempt.attempt(part, show=said.append, note=said.append)
    return said, attempt.results["unavailable"].get(part.LABEL)


# The tasks whose functions each part of run.py calls (Task 3c's masking calls pg_estimate too)
PART_TASKS = {
    "Part 1": ("1a", "1b", "1c"),
    "Part 2": ("2a", "2b"),
    "Part 3": ("3a", "3b"),
    "Masking": ("3b", "3c"),
}


@pytest.mark.parametrize("part", PARTS, ids=lambda part: part.LABEL)
def test_run_names_a_task_not_done_whichever_are_done(part, tmp_path, monkeypatch):
    """A part skipped for a TODO names the task whose lab.TaskNotDone it met: with any of
    its tasks done but not all, a task of that part that is not done, never a done one."""
    tasks = PART_TASKS[part.LABEL]
    module = lab.TASKS[tasks[0]].module
    for n in range(len(tasks)):
        for done in itertools.combinations(tasks, n):
            said, why = run_part(part, {module: with_done(module, done)}, tmp_path, monkeypatch)
            todo = next(
                task
                for task in tasks
                if task not in done and said == [f"{part.LABEL}: skipped, {lab.TaskNotDone(task)}."]
            )
            assert why == f"Task {todo} not implemented yet", (done, said, why)


def test_run_fails_a_part_on_a_students_own_not_implemented(tmp_path, monkeypatch):
    """A NotImplementedError the student raised (not the stub's TaskNotDone) names no task:
    the part failed, at the student's line."""
    own = "\n\ndef kv_cache_bytes(*args, **kwargs):\n    raise NotImplementedError('not yet')\n"
    texts = {"memory": with_done("memory", ("1a", "1c"), own)}
    said, why = run_part(PARTS[0], texts, tmp_path, monkeypatch)
    line = texts["memory"].splitlines().index("    raise NotImplementedError('not yet')") + 1
    assert said == [
        f"Part 1: failed with NotImplementedError: not yet\n  at memory.py, line "
        f"{line}, in kv_cache_bytes: raise NotImplementedError('not yet')\n  run "
        "`python -m pytest -q -k task1` to find out why."
    ] and why == ("Task 1 failed: see its tests"), said


def test_run_part_loop_is_stopped_and_files_saved(tmp_path):
    dest = lab_copy(tmp_path, memory=None, scheduler=SWALLOW)
    code, out, seconds = run(dest, "run.py")
    assert code == 0 and seconds < 60, (code, seconds, out)
    assert f"Part 2: stopped after {PART_2_LIMIT}, its time limit" in out and "in take_batch" in out
    saved = json.loads((dest / "rl_systems.json").read_text())
    assert saved["memory"] and saved["scheduling"] is None and saved["images"] == ["rl_systems.png"]
    assert (dest / "rl_systems.png").stat().st_size > 10_000


def test_run_interrupt_saves_parts_done(tmp_path):
    dest = lab_copy(tmp_path, memory=None, scheduler=SWALLOW)
    code, out, _seconds = run(dest, "run.py", interrupt_after=4)
    assert code == 130 and "Part 2: interrupted" in out, (code, out)
    saved = json.loads((dest / "rl_systems.json").read_text())
    assert saved["memory"] and saved["unavailable"]["Part 3"].startswith("not run")
    assert not list(dest.glob(".*partial*")) and (dest / "rl_systems.png").exists()


def test_run_backstop_saves_parts_done(tmp_path):
    dest = lab_copy(
        tmp_path,
        memory=None,
        scheduler=IGNORE_ALL.replace("may_start", "take_batch").replace(
            "n_started, n_dropped, version, k, B", "*args, **kwargs"
        ),
    )
    code, out, seconds = run(dest, "run.py", env=dict(LAB_TIME_LIMIT="0.25"))
    assert code == 3 and seconds < 30, (code, seconds, out)
    assert f"Part 2 (Task 2, scheduler.py) ignored its {PART_2_LIMIT} time limit" in out, out
    assert json.loads((dest / "rl_systems.json").read_text())["memory"]


def test_run_blank_todo_and_given_code_failure(tmp_path):
    dest = lab_copy(
        tmp_path,
        memory=None,
        tis="\ndef importance_weights(*args, **kwargs):\n    raise NotImplementedError\n",
    )
    mismatch, memory = (
        dest / "experiments" / f"{name}.py" for name in ("part3_mismatch", "part1_memory")
    )
    mismatch.write_text(
        mismatch.read_text().replace(
            '    and against the batch size at LARGE_MISMATCH, from the Task 3 module `tis`."""\n',
            '    and against the batch size at LARGE_MISMATCH, from the Task 3 module `tis`."""\n'
            "    tis.importance_weights\n",
            1,
        )
    )
    # a KeyError on memory_table's first line, whatever its signature's annotations and layout
    broken = re.sub(
        r"(\ndef memory_table\(.*?\)(?: -> [^:]+)?:\n)",
        r"\1    {}['x']\n",
        memory.read_text(),
        count=1,
        flags=re.S,
    )
    assert broken != memory.read_text()
    memory.write_text(broken)
    _code, out, _seconds = run(dest, "run.py")
    assert "Part 3: failed with NotImplementedError (with no message)" in out, out
    assert "at tis.py, line" in out
    assert "Part 1: failed in given code, not in your file: KeyError" in out
    assert "experiments/part1_memory.py, line" in out


@pytest.mark.parametrize(
    "out_path, problem", [("missing/x.png", "does not exist"), ("x.png", "x.json is a folder")]
)
def test_run_output_paths_checked_first(tmp_path, out_path, problem):
    dest = lab_copy(tmp_path)
    (dest / "x.json").mkdir()
    code, out, _seconds = run(dest, "run.py", "--out", out_path)
    assert code == 2 and problem in out and "Part 1" not in out, out


# ---------------------------------------------------------------- make_stubs


def test_make_stubs_keeps_student_work(tmp_path):
    dest = lab_copy(tmp_path, memory=None)  # a student's finished memory.py, not in git
    work = (dest / "memory.py").read_text()
    code, out, _ = run(dest, "tools/make_stubs.py", "--check")
    assert code == 1 and "instructor tool" in out and "--write" not in out, out
    code, out, _ = run(dest, "tools/make_stubs.py", "--write")
    assert code == 1 and "refusing to overwrite memory.py" in out, out
    assert (dest / "memory.py").read_text() == work
    code, out, _ = run(dest, "tools/make_stubs.py", "--write", "--force")
    assert code == 0 and "kept a backup of memory.py" in out, out
    assert [p.read_text() for p in dest.glob("memory.py.*.bak")] == [work]
    assert 'raise TaskNotDone("1a")' in (dest / "memory.py").read_text()
