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


def test_input_checks_scheduler(scheduler):
    for bad in (dict(n_lanes=0), dict(B=0), dict(k=-1), dict(n_steps=0)):
        args = dict(n_lanes=2, B=2, k=0, n_steps=2) | bad
        with pytest.raises(ValueError, match=next(iter(bad))):
            scheduler.simulate(args.pop("n_lanes"), args.pop("B"), args.pop("k"), **args)
    with pytest.raises(ValueError, match="lengths"):
        scheduler.simulate(2, 2, 0, lengths=[1, 0])


def test_input_checks_tis(tis):
    with pytest.raises(ValueError, match="scheme"):
        tis.importance_weights(LOGP, LOGP, "ppo")
    with pytest.raises(ValueError, match="same shape"):
        tis.importance_weights(LOGP, LOGP[:2], "token")
    with pytest.raises(ValueError, match="C must"):
        tis.importance_weights(LOGP, LOGP, "token_tis", C=0.5)
    with pytest.raises(ValueError, match=r"grad_logp \(N, T, D\)"):
        tis.pg_estimate(np.ones(4), np.ones((4, 3)), np.ones((4, 3)))


def test_input_checks_toy():
    def unused(*args):
        raise AssertionError("the toy must check its arguments before it calls Task 3 code")

    with pytest.raises(ValueError, match="mismatch"):
        toy.exact_stats(unused, unused, "none", -0.1)
    with pytest.raises(ValueError, match="noise"):
        toy.exact_stats(unused, unused, "none", 0.1, noise="cauchy")


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


def test_input_checks_masked_weights(tis):
    with pytest.raises(ValueError, match="level"):
        tis.masked_weights(LOGP, LOGP, "sequence")
    with pytest.raises(ValueError, match="same shape"):
        tis.masked_weights(LOGP, LOGP[:2], "token")
    for bad in (dict(low=-0.1), dict(low=1.5), dict(high=0.9)):
        with pytest.raises(ValueError, match=next(iter(bad))):
            tis.masked_weights(LOGP, LOGP, "token", **bad)


def test_length_sweep_true_gradient_matches_enumeration():
    # T = 6: the dynamic programme against the sum over all 4,096 responses
    g, mean_zeros = toy.length_true_grad(toy.T)
    logp_train, _, pairs, rewards = toy.length_responses(toy.SEQUENCES, toy.THETA, mean_zeros)
    p = np.exp(logp_train.sum(axis=1))
    assert abs(p @ rewards) < 1e-12  # centred under pi_train
    assert np.allclose(np.einsum("n,n,ntd->d", p, rewards, toy.GRAD_LOGP), g, atol=1e-12)
    assert np.allclose(toy.PAIR_GRADS[pairs], toy.GRAD_LOGP, atol=1e-12)


def test_length_sweep_monte_carlo_agrees_with_exact():
    def estimate(rewards, grad_logp, weights):  # Task 3b's formula, written out
        return np.einsum("n,nt,ntd->d", rewards, weights, grad_logp) / len(rewards)

    ratio = {"token": lambda train, infer: np.exp(train - infer)}
    exact = toy.length_stats(ratio, estimate, 6, 0.6)["schemes"]["token"]
    g, mean_zeros = toy.length_true_grad(6)
    q = toy.THETA + 0.6 * toy.PERTURBATIONS["student_t"]
    batches = [toy.length_responses(toy.sample_responses(q, 64, 6, np.random.default_rng(s)),
                                    q, mean_zeros) for s in range(200)]
    sampled = toy.sampled_stats(ratio, estimate, g, batches)["schemes"]["token"]
    assert abs(sampled["rmse"] - exact["rmse"]) < 4 * sampled["rmse_stderr"], (sampled, exact)
    assert abs(sampled["cosine"] - exact["cosine"]) < 0.02, (sampled, exact)
