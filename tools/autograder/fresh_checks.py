"""The autograder's checks on inputs the public tests don't show (hidden from students).

The autograder runs these with a fresh LAB_SEED per submission: each check draws its
inputs from grading.test_seed() and compares the student's function with the reference on
them. A task's points count only when its check here passes too, so answers written
for the public tests' inputs earn nothing. The draws include the public tests' edge
cases at other sizes and places (long responses at log-probs down to -1000, ratios on
a band's edge, responses finishing out of id order, numpy ints, whole floats), so a
lookup of those tests' fixed inputs earns nothing either. Answers must have the types
the docstrings state (an int where they say int) and are compared exactly where the
answer is exact; grade.py finds these checks by their names' ending, "_unseen_inputs".
PYTEST_DONT_REWRITE: a failed check shows its own message only, not pytest's rewritten
`assert np.False_ == np.True_` line under it.
"""

import importlib
import numbers

import numpy as np
import pytest

import grading
import lab
import toy
from grading.feedback import expected_got, show
from lab import SCHEMES
from lab.tolerances import KIND

N_CASES = 25  # random inputs per check


@pytest.fixture
def rng(request):
    """A generator seeded by LAB_SEED and the check's name (each check its own inputs)."""
    return np.random.default_rng([grading.test_seed(), sum(map(ord, request.node.name))])


def reference(name):
    return importlib.import_module(f"solutions.{name}")


def exact(got, expected, call, kind=None):
    """got == expected exactly, and of the type the docstring states (`kind`: numbers.Integral
    for "an int", bool for "a bool")."""
    shown = f"on inputs the public tests don't use: {call} gave {got!r}"
    if kind is numbers.Integral:
        assert isinstance(got, numbers.Integral) and not isinstance(got, (bool, np.bool_)), (
            f"{shown}, of type {type(got).__name__}; the docstring asks for an int"
        )
    if kind is bool:
        assert isinstance(got, (bool, np.bool_)), (
            f"{shown}, of type {type(got).__name__}; the docstring asks for a bool"
        )
    assert got == expected, f"{shown}, expected {expected!r}"


def close(got, expected, call, tolerance):
    """Same shape, then the same values within `tolerance` (the task's kind, lab/tolerances.py,
    as in its public tests); inf and NaN only where the answer has the same inf."""
    shown = f"on inputs the public tests don't use: {call} gave {show(got)}"
    assert np.shape(got) == np.shape(expected), (
        f"{shown}, of shape {np.shape(got)}, expected shape {np.shape(expected)}"
    )
    try:
        got = np.asarray(got, dtype=float)
    except (TypeError, ValueError):
        raise AssertionError(f"{shown}, which is not numbers") from None
    expected = np.asarray(expected, dtype=float)
    finite = np.isfinite(expected)
    ok = (
        np.array_equal(got[~finite], expected[~finite])
        and np.isfinite(got[finite]).all()
        and np.allclose(got[finite], expected[finite], rtol=tolerance.rtol, atol=tolerance.atol)
    )
    assert ok, (
        f"on inputs the public tests don't use: {call}: "  # (every digit if need be)
        f"{expected_got(expected, got, tolerance)}"
    )


def whole(rng, high):
    """A whole number below `high` as the docstrings allow it: an int, a numpy int or a
    whole float (7e9), and at times a small one or 0."""
    n = int(rng.integers(0, high)) if rng.random() < 0.8 else int(rng.integers(0, 4))
    return [n, np.int64(n), float(n)][rng.integers(3)]


def test_task1a_unseen_inputs(memory, rng):
    for _ in range(N_CASES):
        args = (whole(rng, 10**11), whole(rng, 10**11))
        exact(
            memory.model_state_bytes(*args),
            reference("memory").model_state_bytes(*args),
            f"model_state_bytes{args}",
            numbers.Integral,
        )


def test_task1b_unseen_inputs(memory, rng):
    for _ in range(N_CASES):
        args = (
            1 + whole(rng, 128),
            1 + whole(rng, 64),
            int(rng.choice([64, 80, 96, 128, 256])),
            whole(rng, 10**6),
            [1, 2, 4, np.int64(2)][rng.integers(4)],
        )
        exact(
            memory.kv_cache_bytes(*args),
            reference("memory").kv_cache_bytes(*args),
            f"kv_cache_bytes{args}",
            numbers.Integral,
        )


def test_task1c_unseen_inputs(memory, rng):
    for _ in range(N_CASES):
        algo = str(rng.choice(["ppo", "grpo"]))
        n_params = 10**8 + whole(rng, 10**11)
        lora = [0, whole(rng, 10**8), n_params][rng.integers(3)]  # none, small, all of it
        kwargs = dict(
            reference=bool(rng.integers(2)),
            reward_model=[None, True, False][rng.integers(3)],
            lora_params=lora,
        )
        close(
            memory.rl_memory_gb(algo, n_params, **kwargs),
            reference("memory").rl_memory_gb(algo, n_params, **kwargs),
            f"rl_memory_gb({algo!r}, {n_params!r}, **{kwargs})",
            KIND["1c"],
        )


def number(rng, n):
    """n as the simulator passes it (an int) or as a caller might (a numpy int)."""
    return int(n) if rng.random() < 0.7 else np.int64(n)


def test_task2a_unseen_inputs(scheduler, rng):
    for _ in range(8 * N_CASES):
        version, k, B = int(rng.integers(0, 20)), int(rng.integers(0, 5)), int(rng.integers(1, 17))
        n_dropped = int(rng.integers(0, 50))
        if rng.random() < 0.5:  # on the edge of the rule, or one either side of it
            n_started = n_dropped + (version + k + 1) * B + int(rng.integers(-1, 2))
        else:
            n_started = n_dropped + int(rng.integers(0, 400))
        args = tuple(number(rng, n) for n in (max(n_started, n_dropped), n_dropped, version, k, B))
        exact(
            scheduler.may_start(*args),
            reference("scheduler").may_start(*args),
            f"may_start{args}",
            bool,
        )


def responses(tags, rng):
    """Finished responses with these tags, in the order they finished: not the order of
    their ids, start times or lengths."""
    ids = rng.permutation(len(tags))
    out = []
    for i, tag in zip(ids, tags):
        start, length = float(rng.uniform(0, 50)), float(rng.lognormal(0, 1))
        out.append(
            dict(
                id=int(i),
                tag=tag,
                start=start,
                end=start + length,
                length=length,
                lag=None,
                dropped=False,
            )
        )
    return out


def test_task2b_unseen_inputs(scheduler, rng):
    def outcome(take_batch, finished, *args):
        everyone = list(finished)
        batch, dropped = take_batch(finished, *args)
        same_objects = all(any(r is e for e in everyone) for r in (batch or []) + list(dropped))
        return dict(
            batch=None if batch is None else [r["id"] for r in batch],
            dropped=sorted(r["id"] for r in dropped),
            same_objects=same_objects,
            left=[r["id"] for r in finished],
            lags=[r["lag"] for r in everyone],
            flags=[r["dropped"] for r in everyone],
        )

    for _ in range(2 * N_CASES):
        version = int(rng.integers(0, 8))
        tags = [int(t) for t in rng.integers(0, version + 1, size=rng.integers(0, 13))]
        args = (
            number(rng, version),
            number(rng, rng.integers(0, 4)),
            number(rng, rng.integers(1, 7)),
            bool(rng.integers(2)),
        )
        seed = int(rng.integers(2**32))
        exact(
            outcome(scheduler.take_batch, responses(tags, np.random.default_rng(seed)), *args),
            outcome(
                reference("scheduler").take_batch,
                responses(tags, np.random.default_rng(seed)),
                *args,
            ),
            f"take_batch on responses tagged {tags} (ids out of order), version, k, B, "
            f"drop_stale = {args}",
        )


def test_task2_unseen_inputs(scheduler, rng):
    for _ in range(3):
        args = (int(rng.integers(2, 13)), int(rng.integers(2, 13)), int(rng.integers(0, 4)))
        kwargs = dict(
            n_steps=int(rng.integers(20, 60)),
            train_time=float(rng.uniform(0.2, 2)),
            sigma=float(rng.uniform(0.3, 1.5)),
            drop_stale=bool(rng.integers(2)),
            seed=int(rng.integers(10**6)),
        )
        keys = ("time", "throughput", "utilization", "mean_lag", "wasted_frac")
        got, expected = (
            scheduler.simulate(*args, **kwargs),
            reference("scheduler").simulate(*args, **kwargs),
        )
        close(
            [got[key] for key in keys],
            [expected[key] for key in keys],
            f"simulate{args} with {kwargs}: {', '.join(keys)}",
            KIND["2"],
        )


def log_probs(rng, kind):
    """(logp_train, logp_infer, what) of one of three kinds, at random sizes:
    0: short responses with any ratios;
    1: long responses (up to 3,000 tokens) at log-probs down to -1000, ratios near 1;
    2: the same, with ratios above 1 on a run of tokens and below 1 after it (or the
       reverse), so that a running product leaves float64's range though the whole
       product is near 1."""
    if kind == 0:
        shape = (int(rng.integers(1, 7)), int(rng.integers(1, 9)))
        logp_train, logp_infer = np.log(rng.uniform(0.05, 1, size=(2, *shape)))
        return logp_train, logp_infer, f"random {shape} log-probabilities"
    N, T = int(rng.integers(1, 4)), int(rng.integers(1000, 3000))
    logp_infer = -rng.uniform(0, 1000, size=(N, T))
    log_w = rng.normal(0, 10 ** rng.uniform(-6, -2), size=(N, T))
    if kind == 2:
        split = rng.integers(T // 4, 3 * T // 4, size=N)
        for i, s in enumerate(split):
            up = rng.uniform(750, 1500) / s * rng.choice([-1, 1])  # the run's total log-ratio
            log_w[i, :s] += up
            log_w[i, s:] -= up * s / (T - s)
    return logp_infer + log_w, logp_infer, f"({N}, {T}) log-probabilities down to -1000"


def test_task3a_unseen_inputs(tis, rng):
    for i in range(2 * len(SCHEMES) * 3):  # each scheme on each kind of input, twice
        logp_train, logp_infer, what = log_probs(rng, kind=i % 3)
        scheme, C = SCHEMES[i // 3 % len(SCHEMES)], float(rng.choice([1.0, rng.uniform(1, 4)]))
        # The student's function gets copies: inputs changed in place are the public
        # tests' to report (as they do locally), not a reason to lock the whole task.
        with np.errstate(all="ignore"):
            got = tis.importance_weights(logp_train.copy(), logp_infer.copy(), scheme, C)
        close(
            got,
            reference("tis").importance_weights(logp_train, logp_infer, scheme, C),
            f"importance_weights({what}, {scheme!r}, C={C:.3f})",
            KIND["3a"],
        )


def test_task3b_unseen_inputs(tis, rng):
    for _ in range(N_CASES):
        N, T, D = (int(n) for n in rng.integers(1, 7, size=3))
        args = (rng.normal(size=N), rng.normal(size=(N, T, D)), rng.uniform(0, 3, size=(N, T)))
        close(
            tis.pg_estimate(*(a.copy() for a in args)),
            reference("tis").pg_estimate(*args),
            f"pg_estimate(random rewards ({N},), grad_logp ({N}, {T}, {D}), weights ({N}, {T}))",
            KIND["3b"],
        )


def test_task3_unseen_inputs(tis, rng):
    ref = reference("tis")
    for _ in range(3):
        scheme, mismatch = str(rng.choice(SCHEMES)), float(rng.uniform(0.1, 1))
        C, batch_size = float(rng.uniform(1.2, 4)), int(rng.integers(1, 129))
        args = (scheme, mismatch, C, batch_size)
        got = toy.exact_stats(tis.importance_weights, tis.pg_estimate, *args)
        expected = toy.exact_stats(ref.importance_weights, ref.pg_estimate, *args)
        close(
            [got["bias"], got["variance"]],
            [expected["bias"], expected["variance"]],
            f"exact_stats with your functions at scheme, mismatch, C, batch_size = "
            f"{scheme!r}, {mismatch:.3f}, {C:.3f}, {batch_size}: bias, variance",
            KIND["3"],
        )


def on_edges(rng, logp_train, logp_infer, low, high):
    """Put some ratios exactly on the band's edges: log-ratio log(low) or log(high) on a few
    tokens, and a log-ratio of exactly 0 on every token of some responses (on the edge
    when low or high is 1, for each level)."""
    logp_train = logp_train.copy()
    for _ in range(int(rng.integers(0, 4))):
        i, t = int(rng.integers(logp_train.shape[0])), int(rng.integers(logp_train.shape[1]))
        ratio = rng.choice([low, high])
        edge = np.log(ratio) if ratio > 0 else -np.inf
        if np.isfinite(edge) and (logp_infer[i, t] + edge) - logp_infer[i, t] == edge:
            logp_train[i, t] = logp_infer[i, t] + edge
    rows = rng.random(logp_train.shape[0]) < 0.3
    rows[rng.integers(len(rows))] = True
    logp_train[rows] = logp_infer[rows]
    return logp_train


def test_task3c_unseen_inputs(tis, rng):
    ref = reference("tis")
    for i in range(N_CASES):
        logp_train, logp_infer, what = log_probs(rng, kind=i % 3)
        level = lab.MASK_LEVELS[i // 3 % len(lab.MASK_LEVELS)]
        low = float(rng.choice([0.0, 1.0, rng.uniform(0, 1)]))
        high = float(rng.choice([1.0, rng.uniform(1, 4)]))
        logp_train = on_edges(rng, logp_train, logp_infer, low, high)
        with np.errstate(all="ignore"):
            got = tis.masked_weights(logp_train.copy(), logp_infer.copy(), level, low, high)
            expected = ref.masked_weights(logp_train, logp_infer, level, low, high)
        close(
            got,
            expected,
            f"masked_weights({what}, some ratios on the band's edges, "
            f"{level!r}, low={low!r}, high={high!r})",
            KIND["3c"],
        )
