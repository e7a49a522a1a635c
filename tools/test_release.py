"""Tests of issue 12's machinery: the students' README, the autograder's wire, the snapshot
tolerance, the --solutions switch and toy's blocked estimates (python -m pytest -q tools)."""
import copy
import io
import json

import numpy as np
import pytest

import lab
import toy
from tools.autograder import wire
from tools.release import student_readme
from tools.snapshots import (RUNS, ROOT, SNAPSHOTS, checks, differences, quote_problems,
                             quoting_text)


def test_student_readme_drops_instructor_parts():
    text = ("intro\n| a | b |\n| `solutions/` | x | <!-- instructor -->\n"
            "<!-- instructor -->\nsecret\n<!-- /instructor -->\n"
            "<!-- student\nonly students\nstudent -->\nend\n")
    assert student_readme(text) == "intro\n| a | b |\nonly students\nend\n"


def test_student_readme_refuses_an_unclosed_block():
    with pytest.raises(ValueError, match="never closed"):
        student_readme("<!-- instructor -->\nsecret\n")


def round_trip(value, table=None):
    encode = wire.Encoder(table)
    tree = encode(value)
    out = io.BytesIO()
    wire.send(out, {"value": tree}, encode.blobs)
    message, blobs = wire.receive(io.BytesIO(out.getvalue()).read)
    return message["value"], blobs


def test_wire_keeps_types_and_read_only_arrays():
    frozen = np.arange(6.0).reshape(2, 3)
    frozen.setflags(write=False)
    value = [1, 2.5, "x", None, True, (np.int64(3), np.float32(0.5)), {"k": frozen}]
    tree, blobs = round_trip(value)
    got = wire.Decoder(blobs)(tree)
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
    back.update(state)
    assert back(result)[0] is a and finished == [b] and a["lag"] == 3


@pytest.mark.parametrize("value", [object(), np.array(["a"]), np.array([1], dtype=object)])
def test_wire_sends_only_data(value):
    with pytest.raises(wire.WireError):
        wire.Encoder()(value)


def test_snapshot_tolerance_has_a_relative_and_an_absolute_part():
    assert differences({"x": [1.0 + 1e-7, 1e-16]}, {"x": [1.0, 3e-16]}) == []
    assert differences({"x": [1.001]}, {"x": [1.0]}) == ["x.0: 1.001 now, 1.0 in the snapshot"]


def test_readme_quotes_hold_the_snapshots_and_catch_a_changed_number():
    """Every README and docs/ check holds against the stored snapshots (no runs), and fails
    once one of its numbers changes: the Part 2 k = 1 gain, quoted in prose and in a table."""
    snapshots = {name: json.loads((SNAPSHOTS / f"{name}.json").read_text()) for name in RUNS}
    readme = quoting_text()
    problems, n_numbers = quote_problems(readme, snapshots)
    assert problems == [] and n_numbers >= len(checks())
    changed = copy.deepcopy(snapshots)
    changed["default"]["scheduling"]["throughput_gain"][1] = 4.18
    problems, _ = quote_problems(readme, changed)
    assert len(problems) >= 3 and all("4.18" in problem for problem in problems)


def test_solutions_refused_in_a_copy_without_them(monkeypatch, tmp_path):
    monkeypatch.setattr(lab, "SOLUTIONS_DIR", tmp_path / "solutions")
    monkeypatch.setenv("RL_SOLUTIONS", "1")
    with pytest.raises(ValueError, match="not part of this copy of the lab"):
        lab.use_reference()


def test_blocked_estimates_equal_one_call_per_response():
    rng = np.random.default_rng(0)
    weights = rng.uniform(0, 2, size=(len(toy.SEQUENCES), toy.T))
    rows = toy.REWARDED  # full blocks, then a short one (782 = 48 x 16 + 14)

    def pg_estimate(rewards, grad_logp, w):
        return (rewards[:, None, None] * w[:, :, None] * grad_logp).sum(axis=1).mean(axis=0)

    one_by_one = [pg_estimate(toy.REWARDS[[i]], toy.GRAD_LOGP[[i]], weights[[i]]) for i in rows]
    blocked = toy.one_response_estimates(pg_estimate, weights)
    assert np.allclose(blocked, one_by_one, rtol=1e-14, atol=1e-15)
