"""Tests of the given code (the simulator, the toy, the input checks): they pass from the start.

They run with the graded tests (`python -m pytest -q`); a failure here is a
bug in the lab, not in your code. The stand-in functions they need are written
here, so no task has to be done first.
"""
import numpy as np
import pytest

import toy
from scheduler_core import SchedulerError, run_simulation

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


def test_input_checks_scheduler(scheduler):
    for bad in (dict(n_lanes=0), dict(B=0), dict(k=-1), dict(n_steps=0)):
        args = dict(n_lanes=2, B=2, k=0, n_steps=2) | bad
        with pytest.raises(ValueError, match=next(iter(bad))):
            scheduler.simulate(args.pop("n_lanes"), args.pop("B"), args.pop("k"), **args)
    with pytest.raises(ValueError, match="lengths must be a list"):
        scheduler.simulate(2, 2, 0, lengths=5)
    with pytest.raises(ValueError, match=r"lengths\[1\] \(counting from 0\) is 0"):
        list(scheduler._checked_lengths(x for x in [1, 0]))  # checked as drawn, not ahead
    with pytest.raises(ValueError, match="sigma must be at most"):
        scheduler.simulate(2, 2, 0, sigma=50)
    with pytest.raises(ValueError, match="B \\* n_steps must be at most"):
        scheduler.simulate(2, 10**4, 0, n_steps=10**3)
    for bad, name in (((-1, 0, 0, 0, 1), "n_started"), ((1, 2, 0, 0, 1), "n_dropped"),
                      ((0, 0, float("nan"), 0, 1), "version"), ((0, 0, 0, 0, 0), "B"),
                      ((0, 0, 0, 0, "2"), "B"), ((0, 0, 0, 0.5, 1), "k")):
        with pytest.raises(ValueError, match=name):
            scheduler.may_start(*bad)
    for bad, name in ((((), 0, 0, 1), "finished"), (([], -1, 0, 1), "version"),
                      (([], 0, 0, 0), "B"), (([], 0, 0, -1), "B"), (([], 0, 0, "2"), "B"),
                      (([dict(tag=3)], 2, 0, 1), "tag 3 > version 2")):
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
    def weights(logp_train, logp_infer, scheme, C):
        return np.ones_like(logp_train)

    def summing(rewards, grad_logp, weights):  # sums over the batch: the check must say so
        return (rewards[:, None, None] * weights[:, :, None] * grad_logp).sum(axis=(0, 1))

    def averaging(rewards, grad_logp, weights):
        return summing(rewards, grad_logp, weights) / len(rewards)

    with pytest.raises(ValueError, match="must average over the batch"):
        toy.exact_stats(weights, summing, "none", 0.1)
    huge = toy.exact_stats(weights, averaging, "none", 0.1, batch_size=toy.MAX_BATCH_SIZE)
    assert huge["variance"] > 0  # no memory or time spent on a million copies


def test_toy_is_a_distribution():
    assert toy.SEQUENCES.shape == (4096, toy.T) and len(set(map(tuple, toy.SEQUENCES))) == 4096
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
        j_up = toy.sequence_probs(toy.THETA + step.reshape(toy.THETA.shape)) @ toy.REWARDS
        j_down = toy.sequence_probs(toy.THETA - step.reshape(toy.THETA.shape)) @ toy.REWARDS
        assert abs(toy.TRUE_GRAD[d] - (j_up - j_down) / (2 * eps)) < 1e-6


def test_core_explains_a_run_that_cannot_finish():
    with pytest.raises(SchedulerError, match="can never finish: may_start refused"):
        run_simulation(2, 2, 0, 1, 1.0, iter([1.0] * 4), lambda *a: False, lambda *a: (None, []))
    with pytest.raises(SchedulerError, match="lengths ran out"):
        run_simulation(2, 2, 0, 1, 1.0, iter([1.0]), lambda *a: True, lambda *a: (None, []))


def test_core_checks_the_decisions():
    with pytest.raises(SchedulerError, match="may_start must return True or False"):
        run_simulation(2, 2, 0, 1, 1.0, iter([1.0] * 4), lambda *a: None, lambda *a: (None, []))

    def one_short(finished, version, k, B, drop_stale):
        return (finished[:B - 1], []) if len(finished) >= B else (None, [])

    with pytest.raises(SchedulerError, match="exactly B=2"):
        run_simulation(2, 2, 0, 1, 1.0, iter([1.0] * 4), lambda *a: True, one_short)

    def keeps_them(finished, version, k, B, drop_stale):
        batch = finished[:B] if len(finished) >= B else None
        for r in batch or []:
            r["lag"] = version - r["tag"]
        return batch, []

    with pytest.raises(SchedulerError, match="removed from `finished`"):
        run_simulation(2, 2, 0, 1, 1.0, iter([1.0] * 4), lambda *a: True, keeps_them)

    def copies(finished, version, k, B, drop_stale):
        if len(finished) < B:
            return None, []
        batch = [dict(r, lag=version - r["tag"]) for r in finished[:B]]
        del finished[:B]
        return batch, []

    with pytest.raises(SchedulerError, match="not copies"):
        run_simulation(2, 2, 0, 1, 1.0, iter([1.0] * 4), lambda *a: True, copies)
