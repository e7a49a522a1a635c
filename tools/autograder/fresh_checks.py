"""The autograder's checks on inputs the public tests don't show (hidden from students).

The autograder runs these with a fresh LAB_SEED per submission: each check draws its
inputs from lab.test_seed() and compares the student's function with the reference on
them. A task's points count only when its check here passes too, so answers written
for the public tests' inputs earn nothing.
"""
import importlib

import numpy as np
import pytest

import lab
import toy
from lab import SCHEMES

N_CASES = 25  # random inputs per check


@pytest.fixture
def rng(request):
    """A generator seeded by LAB_SEED and the check's name (each check its own inputs)."""
    return np.random.default_rng([lab.test_seed(), sum(map(ord, request.node.name))])


def reference(name):
    return importlib.import_module(f"solutions.{name}")


def same(got, expected, call):
    assert got == expected, (
        f"on inputs the public tests don't use: {call} gave {got!r}, expected {expected!r}")


def close(got, expected, call, rel=1e-9, abs=1e-12):
    ok = np.shape(got) == np.shape(expected) and np.allclose(got, expected, rtol=rel, atol=abs)
    assert ok, f"on inputs the public tests don't use: {call} gave {got!r}, expected {expected!r}"


def test_task1a_unseen_inputs(memory, rng):
    for _ in range(N_CASES):
        args = (int(rng.integers(0, 10**11)), int(rng.integers(0, 10**11)))
        same(memory.model_state_bytes(*args), reference("memory").model_state_bytes(*args),
             f"model_state_bytes{args}")


def test_task1b_unseen_inputs(memory, rng):
    for _ in range(N_CASES):
        args = (int(rng.integers(1, 129)), int(rng.integers(1, 65)),
                int(rng.choice([64, 80, 96, 128, 256])), int(rng.integers(0, 10**6)),
                int(rng.choice([1, 2, 4])))
        same(memory.kv_cache_bytes(*args), reference("memory").kv_cache_bytes(*args),
             f"kv_cache_bytes{args}")


def test_task1c_unseen_inputs(memory, rng):
    for _ in range(N_CASES):
        algo = str(rng.choice(["ppo", "grpo"]))
        n_params = int(rng.integers(10**8, 10**11))
        kwargs = dict(reference=bool(rng.integers(2)),
                      reward_model=[None, True, False][rng.integers(3)],
                      lora_params=int(rng.integers(10**6, 10**8)) * int(rng.integers(2)))
        close(memory.rl_memory_gb(algo, n_params, **kwargs),
              reference("memory").rl_memory_gb(algo, n_params, **kwargs),
              f"rl_memory_gb({algo!r}, {n_params}, **{kwargs})")


def test_task2a_unseen_inputs(scheduler, rng):
    for _ in range(8 * N_CASES):
        n_started = int(rng.integers(0, 400))
        args = (n_started, int(rng.integers(0, n_started + 1)), int(rng.integers(0, 20)),
                int(rng.integers(0, 5)), int(rng.integers(1, 17)))
        same(bool(scheduler.may_start(*args)), reference("scheduler").may_start(*args),
             f"may_start{args}")


def responses(tags):
    return [dict(id=i, tag=tag, start=float(i), end=i + 1.0, length=1.0, lag=None,
                 dropped=False) for i, tag in enumerate(tags)]


def test_task2b_unseen_inputs(scheduler, rng):
    def outcome(take_batch, tags, *args):
        finished = responses(tags)
        everyone = list(finished)
        batch, dropped = take_batch(finished, *args)
        return dict(batch=None if batch is None else [r["id"] for r in batch],
                    dropped=sorted(r["id"] for r in dropped),
                    left=[r["id"] for r in finished],
                    lags=[r["lag"] for r in everyone], flags=[r["dropped"] for r in everyone])
    for _ in range(2 * N_CASES):
        version = int(rng.integers(0, 8))
        tags = [int(t) for t in rng.integers(0, version + 1, size=rng.integers(0, 13))]
        args = (version, int(rng.integers(0, 4)), int(rng.integers(1, 7)), bool(rng.integers(2)))
        same(outcome(scheduler.take_batch, tags, *args),
             outcome(reference("scheduler").take_batch, tags, *args),
             f"take_batch on responses tagged {tags}, version, k, B, drop_stale = {args}")


def test_task2_unseen_inputs(scheduler, rng):
    for _ in range(3):
        args = (int(rng.integers(2, 13)), int(rng.integers(2, 13)), int(rng.integers(0, 4)))
        kwargs = dict(n_steps=int(rng.integers(20, 60)), train_time=float(rng.uniform(0.2, 2)),
                      sigma=float(rng.uniform(0.3, 1.5)), drop_stale=bool(rng.integers(2)),
                      seed=int(rng.integers(10**6)))
        keys = ("time", "throughput", "utilization", "mean_lag", "wasted_frac")
        got, expected = scheduler.simulate(*args, **kwargs), \
            reference("scheduler").simulate(*args, **kwargs)
        close([got[key] for key in keys], [expected[key] for key in keys],
              f"simulate{args} with {kwargs}: {', '.join(keys)}")


def test_task3a_unseen_inputs(tis, rng):
    for _ in range(N_CASES):
        shape = (int(rng.integers(1, 7)), int(rng.integers(1, 9)))
        logp_train, logp_infer = np.log(rng.uniform(0.05, 1, size=(2, *shape)))
        scheme, C = str(rng.choice(SCHEMES)), float(rng.uniform(1, 4))
        close(tis.importance_weights(logp_train, logp_infer, scheme, C),
              reference("tis").importance_weights(logp_train, logp_infer, scheme, C),
              f"importance_weights(random {shape} log-probabilities, {scheme!r}, C={C:.3f})")


def test_task3b_unseen_inputs(tis, rng):
    for _ in range(N_CASES):
        N, T, D = (int(n) for n in rng.integers(1, 7, size=3))
        args = (rng.normal(size=N), rng.normal(size=(N, T, D)), rng.uniform(0, 3, size=(N, T)))
        close(tis.pg_estimate(*args), reference("tis").pg_estimate(*args),
              f"pg_estimate(random rewards ({N},), grad_logp ({N}, {T}, {D}), weights ({N}, {T}))")


def test_task3_unseen_inputs(tis, rng):
    ref = reference("tis")
    for _ in range(3):
        scheme, mismatch = str(rng.choice(SCHEMES)), float(rng.uniform(0.1, 1))
        C, batch_size = float(rng.uniform(1.2, 4)), int(rng.integers(1, 129))
        args = (scheme, mismatch, C, batch_size)
        got = toy.exact_stats(tis.importance_weights, tis.pg_estimate, *args)
        expected = toy.exact_stats(ref.importance_weights, ref.pg_estimate, *args)
        close([got["bias"], got["variance"]], [expected["bias"], expected["variance"]],
              f"exact_stats with your functions at scheme, mismatch, C, batch_size = "
              f"{scheme!r}, {mismatch:.3f}, {C:.3f}, {batch_size}: bias, variance", rel=1e-6)




def test_task3c_unseen_inputs(tis, rng):
    ref = reference("tis")
    for _ in range(N_CASES):
        shape = (int(rng.integers(1, 7)), int(rng.integers(1, 9)))
        logp_train, logp_infer = np.log(rng.uniform(0.05, 1, size=(2, *shape)))
        level = str(rng.choice(lab.MASK_LEVELS))
        low, high = float(rng.uniform(0, 1)), float(rng.uniform(1, 4))
        close(tis.masked_weights(logp_train, logp_infer, level, low, high),
              ref.masked_weights(logp_train, logp_infer, level, low, high),
              f"masked_weights(random {shape} log-probabilities, {level!r}, low={low:.3f}, "
              f"high={high:.3f})")
