"""Tests of the release machinery: the students' copy and its docs, the autograder's wire,
the snapshot checks, the --solutions switch and toy's blocked estimates
(python -m pytest -q tools)."""

import ast
import copy
import io
import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import grading
import lab
import toy
from grading import gradescope
from tools import release
from tools.autograder import wire
from tools.release import links, student_python, student_text
from tools.snapshots import (
    QUOTES,
    ROOT,
    RUNS,
    SNAPSHOTS,
    TABLE_ROWS,
    checks,
    differences,
    docs,
    quote_problems,
    quoted,
    registry,
)


def test_student_text_drops_instructor_parts():
    text = (
        "intro\n| a | b |\n| `solutions/` | x | <!-- instructor -->\n"
        "<!-- instructor -->\nsecret\n<!-- /instructor -->\n"
        "<!-- student\nonly students\nstudent -->\nend\n"
    )
    assert student_text(text) == "intro\n| a | b |\nonly students\nend\n"


def test_student_text_refuses_an_unclosed_block():
    with pytest.raises(ValueError, match=r"docs/x\.md: .* never closed"):
        student_text("<!-- instructor -->\nsecret\n", "docs/x.md")


def test_student_python_drops_the_marked_lines_only():
    text = '"""Run it.\n\n    run.py --solutions   # the reference (instructors only)\n"""\nx = 1\n'
    assert student_python(text) == '"""Run it.\n\n"""\nx = 1\n'


def test_links_are_files_relative_to_the_doc():
    text = "[a](grading.md#points), [b](../README.md), <https://x.org/a.md>, [c](https://x.org)"
    assert links("docs/draws.md", text) == {"docs/grading.md", "README.md"}


def test_every_link_of_the_docs_resolves():
    for doc in docs():
        missing = [
            path for path in links(doc, (ROOT / doc).read_text()) if not (ROOT / path).exists()
        ]
        assert missing == [], f"{doc} links to missing {missing}"


def test_release_refuses_a_students_doc_that_links_to_a_dropped_file(monkeypatch, tmp_path):
    monkeypatch.setattr(release, "lab_files", lambda: ["README.md", "docs/instructors.md"])
    monkeypatch.setattr(release, "student_doc", lambda doc: "see [x](docs/instructors.md)\n")
    with pytest.raises(ValueError, match=r"README\.md links to docs/instructors\.md"):
        release.write_student(tmp_path)


def test_students_copy_offers_no_solutions_and_no_instructor_docs(tmp_path):
    """The release itself: no instructor docs or links to them, and run.py and pytest in
    the copy neither accept nor mention --solutions."""
    release.main([str(tmp_path / "out")])
    student = tmp_path / "out" / "student"
    assert not (student / "solutions").exists() and not (student / "docs/instructors.md").exists()
    assert (student / "docs/grading.md").exists()
    for path in ["README.md", *(f"docs/{p.name}" for p in (student / "docs").glob("*.md"))]:
        assert "instructors.md" not in (student / path).read_text(), path
    assert "--solutions" not in ast.get_docstring(ast.parse((student / "run.py").read_text()))

    def run(*args):  # as a student runs it: an instructor's RL_SOLUTIONS=1 is not theirs
        env = {name: value for name, value in os.environ.items() if name != "RL_SOLUTIONS"}
        return subprocess.run(
            [sys.executable, *args],
            cwd=student,
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
        )

    for command in (["run.py", "--help"], ["-m", "pytest", "--help"]):
        done = run(*command)
        assert done.returncode == 0 and "--solutions" not in done.stdout, done.stderr[-300:]
    done = run("run.py", "--solutions")
    assert done.returncode == 2 and "unrecognized arguments: --solutions" in done.stderr


def round_trip(value, table=None):
    encode = wire.Encoder(table)
    tree = encode(value)
    out = io.BytesIO()
    wire.send(out, {"value": tree, "id": 0}, encode.blobs)
    message, _ = wire.receive(io.BytesIO(out.getvalue()).read)
    return message["value"]  # decoded as it was read


def test_wire_keeps_types_and_read_only_arrays():
    frozen = np.arange(6.0).reshape(2, 3)
    frozen.setflags(write=False)
    value = [1, 2.5, "x", None, True, (np.int64(3), np.float32(0.5)), {"k": frozen}]
    got = round_trip(value)
    assert got[:5] == [1, 2.5, "x", None, True] and type(got[5][0]) is np.int64
    assert type(got[5][1]) is np.float32 and np.array_equal(got[6]["k"], frozen)
    assert not got[6]["k"].flags.writeable


def test_wire_changes_the_senders_containers_in_place():
    a, b = {"tag": 0, "lag": None}, {"tag": 1, "lag": None}
    finished = [a, b]
    send = wire.Encoder()  # the grader sends take_batch's argument
    args = send([finished])
    sent = {n: obj for n, obj in send.table.values()}
    received = wire.Decoder(send.blobs)  # the child: take the first, set its lag
    theirs = received(args)[0]
    taken = theirs.pop(0)
    taken["lag"] = 3
    answer = wire.Encoder({id(obj): (n, obj) for n, obj in received.objects.items()})
    result, state = answer([taken]), answer.contents(sorted(received.objects))
    back = wire.Decoder(answer.blobs, dict(sent))  # the grader again
    back.update(back(state))
    assert back(result)[0] is a and finished == [b] and a["lag"] == 3


@pytest.mark.parametrize("value", [object(), np.array(["a"]), np.array([1], dtype=object)])
def test_wire_sends_only_data(value):
    with pytest.raises(wire.WireError):
        wire.Encoder()(value)


TODO_AND_OWN = (
    "from lab import TaskNotDone\n\n\ndef model_state_bytes(n_trained, n_frozen=0):\n"
    "    raise TaskNotDone('1a')\n\n\ndef kv_cache_bytes(*args):\n"
    "    raise NotImplementedError('mine')\n"
)
RAISE_HERE = (
    "import json, sys\nfrom tools.autograder import remote\n"
    "for reply in json.loads(sys.argv[1]):\n    try:\n"
    "        remote._raise(reply, 'memory')\n    except Exception as error:\n"
    "        print(type(error).__name__, getattr(error, 'task', None), error, sep='|')\n"
)


def test_a_todo_crosses_the_autograders_wire_with_its_task(tmp_path):
    """The student's process (serve.py) sends a lab.TaskNotDone's task as data, and the
    grader's (remote.py) raises TaskNotDone of that task again; a student's own
    NotImplementedError comes back as itself, and a task that is not one as no TODO."""
    for given in ("lab", "scheduler_core.py"):
        (tmp_path / given).symlink_to(ROOT / given)
    (tmp_path / "memory.py").write_text(TODO_AND_OWN)
    requests = io.BytesIO()
    wire.send(requests, {"import": True, "target": ["memory", ""], "id": 0})
    for i, name in enumerate(["model_state_bytes", "kv_cache_bytes"], 1):
        encode = wire.Encoder()
        wire.send(
            requests,
            {
                "call": True,
                "target": ["memory", name],
                "args": encode([1]),
                "kwargs": encode({}),
                "id": i,
            },
        )
    done = subprocess.run(
        [sys.executable, "-I", str(ROOT / "tools/autograder/serve.py")],
        cwd=tmp_path,
        input=requests.getvalue(),
        capture_output=True,
        timeout=60,
        check=True,
    )
    out = io.BytesIO(done.stdout)
    replies = [wire.receive(out.read)[0] for _ in range(3)][1:]
    assert [reply.get("todo") for reply in replies] == ["1a", None], replies
    forged = {"error": ["TaskNotDone", "x", ""], "todo": "9z", "id": 3}
    raised = subprocess.run(
        [sys.executable, "-c", RAISE_HERE, json.dumps(replies + [forged])],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert raised.stdout.splitlines() == [
        "TaskNotDone|1a|Task 1a model_state_bytes (memory.py) is not implemented yet",
        "NotImplementedError|None|mine (memory.py, line 9, in kv_cache_bytes)",
        "RuntimeError|None|TaskNotDone: x",
    ], raised.stdout + raised.stderr


def test_snapshot_tolerance_has_a_relative_and_an_absolute_part():
    assert differences({"x": [1.0 + 1e-7, 1e-16]}, {"x": [1.0, 3e-16]}) == []
    assert differences({"x": [1.001]}, {"x": [1.0]}) == ["x.0: 1.001 now, 1.0 in the snapshot"]


def test_doc_quotes_hold_the_snapshots_and_catch_a_changed_number():
    """Every doc's checks hold against the stored snapshots (no runs), and fail once one
    of their numbers changes: the Part 2 k = 1 gain, quoted in the README and, in prose and
    in a table, in docs/real-systems.md."""
    snapshots = {name: json.loads((SNAPSHOTS / f"{name}.json").read_text()) for name in RUNS}
    assert set(QUOTES) | set(TABLE_ROWS) <= set(docs())
    for doc in docs():
        problems, n_numbers = quote_problems(doc, (ROOT / doc).read_text(), snapshots)
        assert problems == [] and n_numbers >= len(checks(doc)), problems
    changed = copy.deepcopy(snapshots)
    changed["default"]["scheduling"]["throughput_gain"][1] = 4.18
    for doc, at_least in (("README.md", 2), ("docs/real-systems.md", 2)):
        problems, _ = quote_problems(doc, (ROOT / doc).read_text(), changed)
        assert len(problems) >= at_least and all("4.18" in problem for problem in problems)


def test_snapshot_registry_reads_quotes_rows_and_expressions(tmp_path):
    (tmp_path / "base.toml").write_text(
        "flags = []\n[quotes]\n'README.md' = [\n  ['{} KiB', 'kv', '= f\"{v / 1024:g}\"'],\n]\n"
    )
    (tmp_path / "wide.toml").write_text(
        "flags = ['--wide']\n[rows]\n'docs/x.md' = [\n"
        "  ['| {} | {} |', ['a.1', '{:.2f}'], ['base', ['p.q', 0], '{}']],\n]\n"
    )
    runs, quotes, rows = registry(tmp_path)
    snapshots = {"base": {"kv": 57344, "p.q": [7]}, "wide": {"a": [0, 2.5]}}
    assert runs == {"base": [], "wide": ["--wide"]}
    [(words, name, path, fmt)] = quotes["README.md"]
    assert quoted(words, [(name, path, fmt)], snapshots) == "56 KiB"
    [(words, cells)] = rows["docs/x.md"]
    assert quoted(words, cells, snapshots) == "| 2.50 | 7 |"


@pytest.mark.parametrize(
    "text, problem",
    [
        (
            "flags = []\n[quotes]\n'README.md' = [['{} and {}', 'a', '{}']]\n",
            r"base.toml: quote 1 of README.md: '\{\} and \{\}' has 2 \{\} for 1 numbers",
        ),
        ("flags = []\n[quotes]\n'README.md' = [['{}', 'a']]\n", r"want \[words, path, format\]"),
        (
            "flags = []\n[rows]\n'README.md' = [['| {} |', ['other', 'a', '{}']]]\n",
            r"row 1 of README.md: each cell is \[path, format\] or \[run, path, format\]",
        ),
        ("[quotes]\n", r"base.toml: has \['quotes'\]; allowed: flags \(required\)"),
    ],
)
def test_snapshot_registry_refuses_a_malformed_entry(tmp_path, text, problem):
    (tmp_path / "base.toml").write_text(text)
    with pytest.raises(ValueError, match=problem):
        registry(tmp_path)


def test_solutions_refused_in_a_copy_without_them(monkeypatch, tmp_path):
    monkeypatch.setattr(grading, "SOLUTIONS_DIR", tmp_path / "solutions")
    monkeypatch.setenv("RL_SOLUTIONS", "1")
    with pytest.raises(ValueError, match="not part of this copy of the lab"):
        grading.use_reference()


def test_blocked_estimates_equal_one_call_per_response():
    rng = np.random.default_rng(0)
    weights = rng.uniform(0, 2, size=(len(toy.SEQUENCES), toy.T))
    rows = toy.REWARDED  # full blocks, then a short one (782 = 48 x 16 + 14)

    def pg_estimate(rewards, grad_logp, w):
        return (rewards[:, None, None] * w[:, :, None] * grad_logp).sum(axis=1).mean(axis=0)

    one_by_one = [pg_estimate(toy.REWARDS[[i]], toy.GRAD_LOGP[[i]], weights[[i]]) for i in rows]
    blocked = toy.one_response_estimates(pg_estimate, weights)
    assert np.allclose(blocked, one_by_one, rtol=1e-14, atol=1e-15)


def test_wire_refuses_an_answer_over_its_limit_before_reading_it():
    out = io.BytesIO()
    wire.send(out, {"value": 1}, [bytes(1000)])
    stream = io.BytesIO(out.getvalue())
    with pytest.raises(wire.TooLarge):
        wire.receive(stream.read, limit=500)
    assert stream.tell() < 100  # the array's bytes were never read


def test_wire_reports_arrays_changed_in_place():
    a, b = np.arange(3.0), np.ones(2)
    send = wire.Encoder()
    tree = send([a, b])
    received = wire.Decoder(send.blobs)
    theirs = received(tree)
    theirs[0] -= 1  # the child's code changes its first argument in place
    assert [index for index, _ in received.changed()] == [0]
    assert send.arrays[0] is a and send.arrays[1] is b  # where the grader copies them back


def test_pack_refuses_a_huge_int_before_sending_anything():
    with pytest.raises(ValueError):
        wire.pack({"value": 10**5000})


def test_gradescope_results_split_points_and_lock_tasks():
    tests = {"test_task1a_x": "1a", "test_task1a_y": "1a", "test_task3c_z": "3c"}
    got = gradescope.results(tests, {"test_task1a_x": None, "test_task3c_z": None})
    assert [t["score"] for t in got["tests"]] == [5, 0, 10] and got["score"] == 15
    assert [t["max_score"] for t in got["tests"]] == [5, 5, 0]  # extra credit: max 0
    assert got["tests"][1]["output"] == gradescope.DID_NOT_RUN
    locked = gradescope.results(tests, {"test_task1a_x": None}, {"1a": "unseen check failed"})
    assert locked["score"] == 0 and locked["tests"][0]["output"] == "unseen check failed"


def test_points_add_up_exactly_for_any_number_of_tests():
    """The max scores sum to exactly 100 and Task 3c's shares to exactly 10, added in any
    order: for the lab's own tests, and for 1 to 60 tests per task (points / n gave
    100.00000000000007 on the lab's tests; hundredths miss too)."""
    listed = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "test_rl_systems.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=dict(os.environ, RL_SOLUTIONS="1"),
    ).stdout
    names = [line.split("::")[1] for line in listed.splitlines() if "::test_task" in line]
    suites = [{name: lab.task_of(name) for name in names}]
    suites += [
        {f"test_task{task}_{i}": task for task in lab.TASKS for i in range(n)} for n in range(1, 61)
    ]
    main = sum(t.points for t in lab.TASKS.values() if not t.extra)  # 100
    bonus = sum(t.points for t in lab.TASKS.values() if t.extra)  # 10
    for tests in suites:
        got = gradescope.results(tests, dict.fromkeys(tests))  # every test passed
        extra = [t["score"] for t in got["tests"] if t["name"].startswith("Extra credit")]
        for order in (got["tests"], got["tests"][::-1]):
            assert sum(t["max_score"] for t in order) == main, len(tests)
        assert sum(extra) == bonus and sum(reversed(extra)) == bonus
        assert got["score"] == main + bonus
    assert len(names) > 50 and any("task3c" in name for name in names)  # collected them all


def test_shares_place_the_left_over_quarters_by_name():
    assert gradescope.shares(10, ["b", "a", "c"]) == {"a": 3.5, "b": 3.25, "c": 3.25}
    assert gradescope.shares(5, ["x"]) == {"x": 5}


@pytest.mark.parametrize("text", [b"", b"<testsuite><testcase name='a'>", None])
def test_read_junit_refuses_an_empty_cut_or_missing_report(tmp_path, text):
    path = tmp_path / "report.xml"
    if text is not None:
        path.write_bytes(text)
    with pytest.raises(gradescope.ReportError):
        gradescope.read_junit(path)


def test_read_junit_replaces_bytes_that_are_not_utf8(tmp_path):
    path = tmp_path / "report.xml"
    path.write_bytes(
        b"<testsuite><testcase name='test_task1a_x'><failure>bad \xff byte"
        b"</failure></testcase><testcase name='test_task1a_y'/></testsuite>"
    )
    assert gradescope.read_junit(path) == {
        "test_task1a_x": "bad \ufffd byte",
        "test_task1a_y": None,
    }


def test_docs_quote_the_number_of_mutants():
    """ "Each of the 93 wrong answers in `tools/mutants.py`": the count wherever a doc quotes it."""
    from tools.mutants import MUTANTS

    texts = [path.read_text() for path in [ROOT / "README.md", *(ROOT / "docs").glob("*.md")]]
    counts = [
        int(n)
        for text in texts
        for n in re.findall(r"(\d+) wrong answers in\s+`tools/mutants.py`", text)
    ]
    assert counts and all(n == len(MUTANTS) for n in counts), (counts, len(MUTANTS))


def test_remove_tree_deeper_than_the_recursion_limit_without_following_links(tmp_path):
    from tools.autograder import student

    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "kept").write_text("not the student's")
    fd = os.open(tmp_path, os.O_RDONLY)
    os.mkdir("tree", dir_fd=fd)
    here = os.open("tree", os.O_RDONLY, dir_fd=fd)
    os.symlink(outside, "link", dir_fd=here)
    for _depth in range(sys.getrecursionlimit() + 100):
        os.mkdir("dddd", dir_fd=here)  # 5 bytes a level: longer than PATH_MAX in all
        inner = os.open("dddd", os.O_RDONLY, dir_fd=here)
        os.close(here)
        here = inner
    os.symlink(outside, "link", dir_fd=here)
    os.close(here)
    log = []
    assert student.remove_tree(fd, "tree", log) == sys.getrecursionlimit() + 100 + 3
    os.close(fd)
    assert log == [] and sorted(os.listdir(tmp_path)) == ["outside"]
    assert (outside / "kept").read_text() == "not the student's"
