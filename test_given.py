"""Tests of the given code (the simulator, the toy, the input checks): they pass from the start.

They run with the graded tests (`python -m pytest -q`); a failure here is a
bug in the lab, not in your code. A test that needs a task function (the
simulator needs may_start, say) runs on yours once that task's answers are right
on every input its graded tests try, and is skipped until then, saying which
task it waits for (in the instructors' copy of the lab, on the reference).
"""

import importlib
import math
import signal
import time

import numpy as np
import pytest

import grading
import toy
from grading import TaskFileError
from grading.feedback import KnownMistakes, Mistake, check
from lab import contracts
from lab.input_checks import ContractError, checked, unchecked
from lab.simulator_checks import checked_lengths
from scheduler_core import (
    LaneSettings,
    SchedulerError,
    assign_lanes,
    lognormal_lengths,
    run_simulation,
)
from test_rl_systems import KNOWN_MISTAKES

LOGP = np.log(np.full((4, 3), 0.5))  # any (N, T) log-probabilities will do


def test_input_checks_memory(memory):
    with pytest.raises(ValueError, match="algo"):
        memory.rl_memory_gb("dpo", 7e9)
    with pytest.raises(ValueError, match="n_params"):
        memory.rl_memory_gb("ppo", -1)
    with pytest.raises(ValueError, match="n_tokens"):
        memory.kv_cache_bytes(28, 4, 128, -5)
    with pytest.raises(ValueError, match="n_trained"):
        memory.model_state_bytes(1.5)
    with pytest.raises(ValueError, match="lora_params must be at most n_params"):
        memory.rl_memory_gb("grpo", 1e6, lora_params=2e6)
    with pytest.raises(ValueError, match="bytes_per_value must be a number > 0"):
        memory.kv_cache_bytes(28, 4, 128, 10, bytes_per_value=0)


def test_input_checks_scheduler(scheduler):
    for bad in (dict(n_lanes=0), dict(B=0), dict(k=-1), dict(n_steps=0)):
        args = dict(n_lanes=2, B=2, k=0, n_steps=2) | bad
        with pytest.raises(ValueError, match=next(iter(bad))):
            scheduler.simulate(args.pop("n_lanes"), args.pop("B"), args.pop("k"), **args)
    with pytest.raises(ValueError, match="lengths must be a list"):
        scheduler.simulate(2, 2, 0, lengths=5)
    with pytest.raises(ValueError, match=r"lengths\[1\] \(counting from 0\) is 0"):
        list(checked_lengths(x for x in [1, 0]))  # checked as drawn, not ahead
    with pytest.raises(ValueError, match="sigma must be at most"):
        scheduler.simulate(2, 2, 0, sigma=50)
    with pytest.raises(ValueError, match="B \\* n_steps must be at most"):
        scheduler.simulate(2, 10**4, 0, n_steps=10**3)
    for bad, name in (
        ((-1, 0, 0, 0, 1), "n_started"),
        ((1, 2, 0, 0, 1), "n_dropped"),
        ((0, 0, float("nan"), 0, 1), "version"),
        ((0, 0, 0, 0, 0), "B"),
        ((0, 0, 0, 0, "2"), "B"),
        ((0, 0, 0, 0.5, 1), "k"),
    ):
        with pytest.raises(ValueError, match=name):
            scheduler.may_start(*bad)
    for bad, name in (
        (((), 0, 0, 1), "finished"),
        (([], -1, 0, 1), "version"),
        (([], 0, 0, 0), "B"),
        (([], 0, 0, -1), "B"),
        (([], 0, 0, "2"), "B"),
        (([dict(tag=3)], 2, 0, 1), "tag 3 > version 2"),
    ):
        with pytest.raises(ValueError, match=name):
            scheduler.take_batch(*bad)
    with pytest.raises(ValueError, match="drop_stale"):
        scheduler.take_batch([], 0, 0, 1, drop_stale="yes")


def test_input_checks_tis(tis):
    with pytest.raises(ValueError, match="scheme"):
        tis.importance_weights(LOGP, LOGP, "ppo")
    with pytest.raises(ValueError, match="same shape"):
        tis.importance_weights(LOGP, LOGP[:2], "token")
    with pytest.raises(ValueError, match="C must"):
        tis.importance_weights(LOGP, LOGP, "token_tis", C=0.5)
    with pytest.raises(ValueError, match=r"grad_logp \(N, T, D\)"):
        tis.pg_estimate(np.ones(4), np.ones((4, 3)), np.ones((4, 3)))
    with pytest.raises(ValueError, match="logp_infer must hold real numbers"):
        tis.importance_weights(LOGP, LOGP + 1j, "token")
    with pytest.raises(ValueError, match="weights must hold real numbers"):
        tis.pg_estimate(np.ones(4), np.ones((4, 3, 2)), np.ones((4, 3)) * 1j)


def test_checked_passes_an_added_parameter_on():
    # a student's helper default or memo is no argument of the checks: the function still runs
    @checked(contracts.may_start)
    def may_start(n_started, n_dropped, version, k, B, memo=None, *, seen=()):
        return n_started - n_dropped < (version + k + 1) * B, memo, seen

    assert may_start(3, 0, 0, 0, 4) == (True, None, ())
    assert may_start(4, 0, 0, 0, 4, {}, seen=(1,)) == (False, {}, (1,))
    with pytest.raises(ValueError, match="B must be"):
        may_start(3, 0, 0, 0, 0, memo={})
    # without its checks (what the simulator's loop calls), the same call runs
    assert unchecked(may_start)(3, 0, 0, 0, 0, memo={}) == (False, {}, ())
    assert unchecked(unchecked(may_start)) is unchecked(may_start)


@pytest.mark.parametrize(
    "answer, named",
    [
        (lambda w: w.tolist(), "it returned a list of 4 items, the first: [1.0, 1.0, 1.0]"),
        (lambda w: w.astype(np.float32), "of float64 numbers; it returned an array of float32"),
        (lambda w: w[0], "it returned shape (3,)"),
        (lambda w: 1.0, "it returned a float, 1.0"),
    ],
)
def test_contract_names_the_type_expected_and_got(answer, named):
    @checked(contracts.importance_weights, returns=contracts.token_weights)
    def importance_weights(logp_train, logp_infer, scheme, C=2.0, cache=None):
        return answer(np.ones(logp_train.shape))

    with pytest.raises(
        ContractError,
        match=r"importance_weights \(Task 3a, tis.py\) must "
        r"return an array of shape \(4, 3\)",
    ) as error:
        importance_weights(LOGP, LOGP, "none")
    assert named in str(error.value), error.value
    assert str(error.value).endswith("(called with scheme 'none')"), error.value


def test_contract_names_the_level_it_was_called_with():
    @checked(contracts.masked_weights, returns=contracts.token_weights)
    def masked_weights(logp_train, logp_infer, level, low=0.5, high=2.0):
        return np.zeros(len(logp_train))  # one number per response, not per token

    with pytest.raises(
        ContractError,
        match=r"masked_weights \(Task 3c, tis.py\) must return an "
        r"array of shape \(4, 3\): .* it returned shape \(4,\) \(called with "
        r"level 'geo'\)$",
    ):
        masked_weights(LOGP, LOGP, "geo")


def weights_returning(answer):
    """An importance_weights, checked as Task 3a's is, whose answer is answer(ones)."""

    @checked(contracts.importance_weights, returns=contracts.token_weights)
    def importance_weights(logp_train, logp_infer, scheme, C=2.0):
        return answer(np.ones(logp_train.shape))

    return importance_weights


def test_contracts_take_float64_in_any_byte_order_and_layout():
    # one rule for numpy types (lab/input_checks.py): a right answer is right in any byte
    # order or memory layout of float64, and a numpy number counts as the number it is
    for answer in (
        lambda w: w.astype(">f8"),
        np.asfortranarray,
        lambda w: np.ones((8, 6))[::2, ::2],
        lambda w: np.ones((3, 4)).T,
        lambda w: np.broadcast_to(np.ones(3), w.shape),
    ):
        got = weights_returning(answer)(LOGP, LOGP.astype(">f8"), "token_tis", np.float32(2.0))
        assert got.shape == LOGP.shape
    for wrong, dtype in ((np.int64, "int64"), (">f4", ">f4")):
        with pytest.raises(
            ContractError, match=f"float64 numbers; it returned an array of {dtype}"
        ):
            weights_returning(lambda w: w.astype(wrong))(LOGP, LOGP, "none")


def test_messages_show_what_differs_in_a_few_lines():
    rng = np.random.default_rng(0)
    right = rng.normal(size=3)
    with pytest.raises(AssertionError) as error:  # float32 prints like float64 to 6 decimals
        check(right.astype(np.float32), right, "pg_estimate")
    text = str(error.value)
    assert repr(float(right[0])) in text and repr(float(np.float32(right[0]))) in text, text
    assert "first difference at index [0]" in text and "largest difference" in text, text
    assert "(relative" in text, text
    responses = [
        dict(id=i, tag=0, start=0.0, end=1.0, length=1.0, lag=None, dropped=False)
        for i in range(40)
    ]
    with pytest.raises(AssertionError) as error:
        check(responses, [0, 1], "batch ids")
    text = str(error.value)
    assert "a list of 40 items, the first: {'id': 0" in text and len(text) < 300, text


def test_messages_show_expected_and_got_in_one_form():
    # numbers expected as a list are shown as the answer is: an array beside an array, a
    # list beside a list, a numpy number as the number it is
    for got, expected, text in (
        (np.array([3.75]), [7.5], "expected array([7.5]), got array([3.75])"),
        ([3.75], np.array([7.5]), "expected [7.5], got [3.75]"),
        (np.float64(3.75), 7.5, "expected 7.5, got 3.75"),
    ):
        with pytest.raises(AssertionError) as error:
            check(got, expected, "pg_estimate")
        assert f"pg_estimate: {text}." == str(error.value), error.value


def test_input_checks_toy():
    def unused(*args):
        raise AssertionError("the toy must check its arguments before it calls Task 3 code")

    with pytest.raises(ValueError, match="mismatch"):
        toy.exact_stats(unused, unused, "none", -0.1)
    with pytest.raises(ValueError, match="noise"):
        toy.exact_stats(unused, unused, "none", 0.1, noise="cauchy")
    with pytest.raises(ValueError, match="mismatch must be at most"):
        toy.exact_stats(unused, unused, "none", 50.0)
    with pytest.raises(ValueError, match="batch_size must be at most"):
        toy.exact_stats(unused, unused, "none", 0.1, batch_size=10**9)


def test_toy_checks_averaging_on_a_few_copies():
    def weights(logp_train, logp_infer, scheme, C):  # any weights will do
        return np.full_like(logp_train, 0.5)

    def summing(rewards, grad_logp, weights):  # sums over the batch: the check must say so
        return (rewards[:, None, None] * grad_logp).sum(axis=(0, 1))  # (and ignores weights)

    def averaging(rewards, grad_logp, weights):
        return summing(rewards, grad_logp, weights) / len(rewards)

    with pytest.raises(ValueError, match="must average over the batch"):
        toy.exact_stats(weights, summing, "none", 0.1)
    huge = toy.exact_stats(weights, averaging, "none", 0.1, batch_size=toy.MAX_BATCH_SIZE)
    assert huge["variance"] > 0  # no memory or time spent on a million copies


def test_toy_is_a_distribution():
    assert toy.SEQUENCES.shape == (4096, toy.T)
    assert len(set(map(tuple, toy.SEQUENCES.tolist()))) == 4096  # tolist: numpy ints hash slowly
    for noise in toy.NOISES:
        for mismatch in (0.0, 0.6):
            total = toy.sequence_probs(toy.THETA + mismatch * toy.PERTURBATIONS[noise]).sum()
            assert abs(total - 1) < 1e-12, f"probabilities ({noise}, {mismatch}) sum to {total}"


def test_toy_gradients_match_finite_differences():
    eps, rng = 1e-6, np.random.default_rng(0)
    rows = rng.choice(4096, size=5, replace=False)
    for d in range(toy.D):
        step = np.zeros(toy.D)
        step[d] = eps
        up = toy.token_logprobs(toy.THETA + step.reshape(toy.THETA.shape))
        down = toy.token_logprobs(toy.THETA - step.reshape(toy.THETA.shape))
        numeric = (up - down)[rows] / (2 * eps)
        assert np.allclose(toy.GRAD_LOGP[rows, :, d], numeric, atol=1e-6)
        # J from the log-probabilities above (sequence_probs would work them out again)
        j_up = np.exp(up.sum(axis=1)) @ toy.REWARDS
        j_down = np.exp(down.sum(axis=1)) @ toy.REWARDS
        assert abs(toy.TRUE_GRAD[d] - (j_up - j_down) / (2 * eps)) < 1e-6


def test_core_explains_a_run_that_cannot_finish():
    with pytest.raises(SchedulerError, match="can never finish: may_start refused"):
        run_simulation(
            LaneSettings(2, 2, 0, 1), iter([1.0] * 4), lambda *a: False, lambda *a: (None, [])
        )
    with pytest.raises(SchedulerError, match="lengths ran out"):
        run_simulation(
            LaneSettings(2, 2, 0, 1), iter([1.0]), lambda *a: True, lambda *a: (None, [])
        )


def take_oldest(finished, version, k, B, drop_stale):  # not Task 2b's: it never drops
    if len(finished) < B:
        return None, []
    batch = finished[:B]
    del finished[:B]
    for r in batch:
        r["lag"] = version - r["tag"]
    return batch, []


@pytest.mark.parametrize(
    "may_start, k, named",
    [
        (
            lambda n, d, v, k, B: n - d < (v + k) * B,
            0,
            "it stops one batch short, at 0 = (version "
            "+ k) * B. Is the + 1 of (version + k + 1) * B missing?",
        ),
        (lambda n, d, v, k, B: n - d < v * B + 1, 1, ""),
    ],
)  # (a refusal no known mistake explains)
def test_core_names_what_a_refusal_lacks(may_start, k, named):
    # no response is ever dropped here, so the message never asks about n_dropped
    with pytest.raises(SchedulerError, match="can never finish: may_start refused") as error:
        run_simulation(LaneSettings(2, 2, k, 3), iter([1.0] * 40), may_start, take_oldest)
    assert named in str(error.value) and "n_dropped?" not in str(error.value), error.value
    assert ("Is the + 1" in str(error.value)) == bool(named), error.value


def test_core_checks_the_decisions():
    with pytest.raises(SchedulerError, match="may_start must return True or False"):
        run_simulation(
            LaneSettings(2, 2, 0, 1), iter([1.0] * 4), lambda *a: None, lambda *a: (None, [])
        )

    def one_short(finished, version, k, B, drop_stale):
        return (finished[: B - 1], []) if len(finished) >= B else (None, [])

    with pytest.raises(SchedulerError, match="exactly B=2"):
        run_simulation(LaneSettings(2, 2, 0, 1), iter([1.0] * 4), lambda *a: True, one_short)

    def keeps_them(finished, version, k, B, drop_stale):
        batch = finished[:B] if len(finished) >= B else None
        for r in batch or []:
            r["lag"] = version - r["tag"]
        return batch, []

    with pytest.raises(SchedulerError, match="removed from `finished`"):
        run_simulation(LaneSettings(2, 2, 0, 1), iter([1.0] * 4), lambda *a: True, keeps_them)


def test_input_checks_masked_weights(tis):
    with pytest.raises(ValueError, match="level"):
        tis.masked_weights(LOGP, LOGP, "sequence")
    with pytest.raises(ValueError, match="same shape"):
        tis.masked_weights(LOGP, LOGP[:2], "token")
    for bad in (dict(low=-0.1), dict(low=1.5), dict(high=0.9)):
        with pytest.raises(ValueError, match=next(iter(bad))):
            tis.masked_weights(LOGP, LOGP, "token", **bad)


# ---------------------------------------------------------------- the task functions they need


class Tasks:
    """Task functions that tests of the given code need (`names`: function -> task), each
    looked up when a test uses it: the reference's where the lab has solutions/ (the
    instructors' copy, where CI runs these tests), else yours once its task's answers
    are right on every probe of its hints (its graded tests' inputs among them). Until
    then the test is skipped, saying which task it waits for."""

    def __init__(self, module, **names):
        self.module, self.names = module, names

    def __getattr__(self, name):
        if name not in self.__dict__.get("names", {}):
            raise AttributeError(name)
        if grading.SOLUTIONS_DIR.is_dir():
            return getattr(importlib.import_module(f"solutions.{self.module}"), name)
        task = self.names[name]
        waits = (
            f"this test of the given code runs on your {name} ({self.module}.py) once "
            f"Task {task} is done: run python -m pytest -q -k task{task}"
        )
        try:
            function = getattr(grading.load(self.module), name)
        except TaskFileError:
            pytest.skip(waits)
        if not KNOWN_MISTAKES[task].right_everywhere(function):
            pytest.skip(waits)
        return function


MEMORY = Tasks("memory", model_state_bytes="1a", kv_cache_bytes="1b", rl_memory_gb="1c")
SCHEDULER = Tasks("scheduler", may_start="2a", take_batch="2b")
TIS = Tasks("tis", importance_weights="3a", pg_estimate="3b")


# ---------------------------------------------------------------- the simulator
# newest_first follows the simulator's rules, but it is deliberately not Task 2b's answer:
# it trains the newest B responses, not the oldest, which the given code must handle just
# as well (experiments/test_*.py use it too).


def newest_first(finished, version, k, B, drop_stale):
    dropped = [r for r in finished if version - r["tag"] > k] if drop_stale else []
    for r in dropped:
        finished.remove(r)
        r["dropped"] = True
    if len(finished) < B:
        return None, dropped
    batch = finished[-B:]
    del finished[-B:]
    for r in batch:
        r["lag"] = version - r["tag"]
    return batch, dropped


class NewestFirst:
    """The scheduler module's simulate, run with may_start (Task 2a) and newest_first."""

    @staticmethod
    def simulate(
        n_lanes, B, k, *, n_steps=200, train_time=1.0, sigma=1.25, drop_stale=False, seed=0
    ):
        return run_simulation(
            LaneSettings(n_lanes, B, k, n_steps, train_time, drop_stale),
            lognormal_lengths(sigma, seed),
            SCHEDULER.may_start,
            newest_first,
        )


def test_core_reports_the_lag_tail():
    keep = NewestFirst.simulate(16, 32, 1, n_steps=20)
    lags = sorted(r["lag"] for r in keep["trace"] if r["lag"] is not None)
    assert keep["max_lag"] == lags[-1] > 1, "k = 1 bounds admission, not lag: the tail exceeds k"
    assert keep["lag_p95"] == lags[math.ceil(0.95 * len(lags)) - 1]
    assert keep["lag_p95"] <= keep["max_lag"]
    drop = NewestFirst.simulate(16, 32, 1, n_steps=20, drop_stale=True)
    assert drop["max_lag"] <= 1, "dropping stale responses keeps every trained lag <= k"


def test_core_records_the_updates():
    for k in (0, 1, 3):
        r = NewestFirst.simulate(8, 16, k, n_steps=10, train_time=0.7)
        assert len(r["updates"]) == 10, "one update per version reached"
        for start, end in r["updates"]:
            assert end - start == pytest.approx(0.7)
        for (_, end), (start, _) in zip(r["updates"], r["updates"][1:]):
            assert end <= start, "updates come in order and never overlap"
        assert r["updates"][-1][1] == r["time"]


def test_assign_lanes_never_overlaps_and_uses_at_most_n_lanes():
    for k, n_lanes in ((0, 16), (1, 16), (2, 5)):
        trace = NewestFirst.simulate(n_lanes, 32, k, n_steps=10)["trace"]
        lanes = assign_lanes(trace)
        assert len(lanes) == len(trace) and max(lanes) < n_lanes
        ends = {}  # each lane's last end so far (the trace is in start order)
        for r, lane in zip(trace, lanes):
            assert ends.get(lane, 0.0) <= r["start"], f"two responses overlap on lane {lane}"
            ends[lane] = r["end"]
    assert assign_lanes([dict(start=0, end=1), dict(start=0, end=2), dict(start=1, end=3)]) == [
        0,
        1,
        0,
    ]


# A toy task for the hints: the rule is 2x; one known mistake adds 2 instead (the same at
# x = 2), another gives NaN at x = 3 (as code that overflows would).
TOY_MODELS = {
    "toy:right": lambda x: 2.0 * x,
    "toy:added 2": lambda x: x + 2.0,
    "toy:NaN at 3": lambda x: np.nan if x == 3 else 2.0 * x,
}


def toy_fingerprints(names, probes):
    return {name: [TOY_MODELS[name](*args) for args in probes] for name in names}


TOY_MISTAKES = KnownMistakes(
    "toy",
    [Mistake("added 2", "added 2"), Mistake("NaN at 3", "NaN at 3")],
    probes=lambda: [(0,), (1,), (2,), (3,)],
    limit=0.1,
    fingerprints=toy_fingerprints,
)


def test_a_hint_holds_on_every_probe():
    def near_miss(x):  # adds 2 on three probes of four
        return x + 2.0 if x < 3 else 7.0

    assert "Likely mistake: added 2" in TOY_MISTAKES.hint(lambda x: x + 2.0)
    assert TOY_MISTAKES.hint(near_miss) == ""
    assert TOY_MISTAKES.hint(lambda x: 2.0 * x) == ""  # the rule itself
    assert "Likely mistake: NaN at 3" in TOY_MISTAKES.hint(lambda x: 2.0 * x if x < 3 else np.nan)


def test_a_hint_that_cannot_be_checked_is_not_shown():
    def fails(x):
        raise KeyError(x)

    def loops(x):
        while True:
            pass

    assert TOY_MISTAKES.hint(fails) == ""
    # the same task with a shorter limit: here it only ever cuts the loop short
    quick = KnownMistakes(
        "toy",
        TOY_MISTAKES.mistakes,
        TOY_MISTAKES.probes,
        limit=0.005,
        fingerprints=toy_fingerprints,
    )
    start = time.monotonic()
    assert quick.hint(loops) == ""
    assert time.monotonic() - start < 0.5, "the probe outlived its limit"
    if hasattr(signal, "getitimer"):  # the test's own time limit is armed again
        assert signal.getitimer(signal.ITIMER_REAL)[0] > 0
