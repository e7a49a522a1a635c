"""Tests of the experiments' given code (the length sweep, Part 2's experiments, staleness,
training): they pass from the start, or, where one needs a task function, run on yours once
that task is done (test_given.Tasks) and are skipped until then.
"""

import statistics

import numpy as np
import pytest

import toy
from experiments import staleness_maths, training
from experiments.equal_hardware import equal_hardware
from experiments.learning_curves import train_cells
from experiments.length_sweep import (
    collapse_points,
    crossing,
    effective_sample_size,
    length_grid,
    length_responses,
    length_stats,
    length_true_grad,
    mean_abs_log_ratio,
    mean_and_stderr,
    mismatch_for_kl,
    per_token_kl,
    sampled_stats,
    sequence_ess_limit,
)
from experiments.model_shapes import MODELS, ROUND_7B
from experiments.part1_memory import lanes_per_gpu
from experiments.part2_scheduling import lag_counts, scheduling_sweep
from experiments.settings import Simulation, Toy
from experiments.staleness import STALENESS_SCHEMES, staleness_sweep
from experiments.timeline import timeline
from scheduler_core import LaneSettings, SchedulerError, lognormal_lengths, run_simulation
from test_given import MEMORY, SCHEDULER, TIS, NewestFirst

# ---------------------------------------------------------------- the length sweep


def test_length_sweep_true_gradient_matches_enumeration():
    # T = 6: the dynamic programme against the sum over all 4,096 responses
    g, mean_zeros = length_true_grad(toy.T)
    logp_train, _, pairs, rewards = length_responses(toy.SEQUENCES, toy.THETA, mean_zeros)
    p = np.exp(logp_train.sum(axis=1))
    assert abs(p @ rewards) < 1e-12  # centred under pi_train
    assert np.allclose(np.einsum("n,n,ntd->d", p, rewards, toy.GRAD_LOGP), g, atol=1e-12)
    gap = toy.PAIR_GRADS[pairs] - toy.GRAD_LOGP  # each token's gradient looked up by its pair
    assert -1e-12 < gap.min() and gap.max() < 1e-12  # (allclose is slow on 491,520 numbers)


def test_length_sweep_monte_carlo_agrees_with_exact():
    estimate = TIS.pg_estimate
    ratio = {"token": lambda train, infer: np.exp(train - infer)}
    T = 5  # 1,024 responses to list: any T up to 6 would do, a short one is quick
    exact = length_stats(ratio, estimate, T, 0.6)["schemes"]["token"]
    g, mean_zeros = length_true_grad(T)
    q = toy.THETA + 0.6 * toy.PERTURBATIONS["student_t"]
    # 64 batches of 64, drawn at once as length_stats draws them (one call, not 64)
    drawn = toy.sample_responses(q, 64 * 64, T, np.random.default_rng(0))
    batches = [length_responses(batch, q, mean_zeros) for batch in np.split(drawn, 64)]
    sampled = sampled_stats(ratio, estimate, g, batches)["schemes"]["token"]
    # Over seeds 0-39: the rmse's z-score has sd 0.81 and the cosine's difference sd 0.004,
    # so these bounds are over 4 sd wide.
    assert abs(sampled["rmse"] - exact["rmse"]) < 4 * sampled["rmse_stderr"], (sampled, exact)
    assert abs(sampled["cosine"] - exact["cosine"]) < 0.02, (sampled, exact)


def test_length_sweep_kl_is_the_long_run_kl_per_token():
    for mismatch in (0.05, 0.6):
        q_logits = toy.THETA + mismatch * toy.PERTURBATIONS["student_t"]
        # exact KL(pi_infer || pi_train) of whole responses, T = 6: a sum over all 4,096
        logq, logp = toy.token_logprobs(q_logits).sum(axis=1), toy.LOGP_TRAIN.sum(axis=1)
        six = np.exp(logq) @ (logq - logp)
        # the same by the chain rule, then per token over a long response (1,000 tokens)
        p, q = toy.token_probs(toy.THETA), toy.token_probs(q_logits)
        row_kl = (q * np.log(q / p)).sum(axis=1)
        move = np.zeros((toy.V + 1, toy.V + 1))  # row a: where a token after a goes
        move[:, : toy.V] = q  # (never back to START)
        visits, total = np.eye(toy.V + 1)[toy.START], []
        for _ in range(1_000):
            total.append(float(visits @ row_kl))
            visits = visits @ move
        assert sum(total[:6]) == pytest.approx(six, rel=1e-10)
        # each token's KL settles at the per-token KL within some 100 tokens, so the
        # average over 1,000 is within 1% of it, and the 1,000th token's KL is it
        assert per_token_kl(mismatch) == pytest.approx(sum(total) / 1_000, rel=1e-2)
        assert per_token_kl(mismatch) == pytest.approx(total[-1], rel=1e-10)
    assert per_token_kl(0.6) == pytest.approx(0.158, abs=5e-4)  # the lab's Part 3 scale
    for kl in (1e-3, 0.16):
        assert per_token_kl(mismatch_for_kl(kl)) == pytest.approx(kl, rel=1e-9)
    assert mismatch_for_kl(0) == 0.0  # exactly: not where the rounding near 0 stops a bisection
    with pytest.raises(ValueError, match="kl"):
        mismatch_for_kl(5.0)


def test_mean_abs_log_ratio_is_the_long_run_token_average():
    # the chain rule on the bigram, as in the KL test: token t's expected |log p - log q|
    # settles, over a long response, at the value for the long-run visits of pi_infer
    for mismatch in (0.05, 0.6):
        p = toy.token_probs(toy.THETA)
        q = toy.token_probs(toy.THETA + mismatch * toy.PERTURBATIONS["student_t"])
        row_mean = (q * np.abs(np.log(p / q))).sum(axis=1)
        move = np.zeros((toy.V + 1, toy.V + 1))
        move[:, : toy.V] = q
        visits = np.eye(toy.V + 1)[toy.START] @ np.linalg.matrix_power(move, 1_000)
        assert mean_abs_log_ratio(mismatch) == pytest.approx(visits @ row_mean, rel=1e-10)
        # not the KL, nor the mean log-ratio itself (about -KL): |.| of a log-ratio is larger
        assert mean_abs_log_ratio(mismatch) > 1.5 * per_token_kl(mismatch)
    assert mean_abs_log_ratio(0.0) == 0.0


def test_length_sweep_grid_and_collapse_points():
    # every level runs the same T x KL budgets: T = budget / KL, rounded, at least 1
    assert length_grid(0.16) == [1, 2, 3, 6, 13, 26, 51, 102]
    assert length_grid(0.001) == [128, 256, 512, 1024, 2048, 4096, 8192, 16_384]
    assert length_grid(0) == [6, 16, 64, 128, 256, 1024]
    T_kl = [1, 2, 4, 8]
    assert crossing([9, 5, 1, 1], T_kl, 6.4) == dict(at=2, after=1)
    assert crossing([9, 8, 7, 6.4], T_kl, 6.4) == dict(at=None, after=8)  # 6.4 is not below
    assert crossing([1, 1, 1, 1], T_kl, 2) == dict(at=1, after=None)  # already at the first
    stats = dict(ess=[60, 30, 5, 1.5], cosine=[0.9, 0.8, 0.6, 0.4])
    assert collapse_points(stats, T_kl, 64) == dict(
        ess_share=dict(at=4, after=2), ess_floor=dict(at=8, after=4), cosine=dict(at=8, after=4)
    )
    # with standard errors: a bracket whose end lies within 2 SE of the level is unresolved
    stats["ess_stderr"] = [1.0, 2.0, 0.5, 0.1]
    c = collapse_points(stats, T_kl, 64)
    assert c["ess_share"] == dict(
        at=4, after=2, value_at=5, se_at=0.5, value_after=30, se_after=2.0, resolved=True
    )
    assert c["ess_floor"]["resolved"] and c["cosine"] == dict(at=8, after=4)
    stats["ess_stderr"] = [1.0, 2.0, 1.0, 0.3]
    assert not collapse_points(stats, T_kl, 64)["ess_share"]["resolved"]  # 5 + 2 > 6.4
    assert not collapse_points(stats, T_kl, 64)["ess_floor"]["resolved"]  # 1.5 + 0.6 > 2


def test_effective_sample_size_counts_responses():
    # sequence-level weights: (sum W)^2 / sum W^2, the same for any T and any scale
    assert effective_sample_size([[1.0], [1.0], [1.0], [1.0]]) == pytest.approx(4)
    assert effective_sample_size([[3.0], [1.0]]) == pytest.approx(1.6)
    assert effective_sample_size([[3.0] * 5, [1.0] * 5]) == pytest.approx(1.6)
    assert effective_sample_size(np.exp([[-700.0], [-701.0]])) == pytest.approx(
        (1 + np.exp(-1)) ** 2 / (1 + np.exp(-2))
    )  # e^-700 squares to 0 unless scaled first
    assert effective_sample_size([[1.0, 0.0], [0.0, 0.0]]) == pytest.approx(0.5)  # 1 / T
    assert effective_sample_size(np.zeros((3, 2))) == 0.0
    batches = np.array([[[3.0], [1.0]], [[1.0], [1.0]], [[0.0], [0.0]]])  # (B, N, T)
    assert np.allclose(effective_sample_size(batches), [1.6, 2.0, 0.0])


def test_ess_of_lognormal_weights_matches_the_closed_form():
    # For log W ~ N(mu, s^2): E[W] = e^(mu + s^2/2), E[W^2] = e^(2 mu + 2 s^2), so the ESS of
    # a large batch of N is N * E[W]^2 / E[W^2] = N * e^(-s^2), whatever mu. (Plausible wrong
    # readings give e^(-s^2 / 2) or 1 / (1 + s^2): 0.61 and 0.5 at s = 1, against 0.37.)
    rng = np.random.default_rng(0)
    for mu, s in ((0.0, 1.0), (-30.0, 0.5), (5.0, 1.3)):
        shares = [
            effective_sample_size(np.exp(rng.normal(mu, s, (10_000, 1)))) / 10_000
            for _ in range(20)
        ]
        mean, stderr = mean_and_stderr(shares)
        assert abs(mean - np.exp(-(s**2))) < 4 * stderr, (mu, s, mean, stderr)
        assert stderr < 0.05 * np.exp(-(s**2))  # and the bound is tight enough to tell


def test_sequence_ess_limit_is_exact():
    # T = 6: the dynamic programme against the sum over all 4,096 responses
    q_logits = toy.THETA + 0.6 * toy.PERTURBATIONS["student_t"]
    W = np.exp(toy.LOGP_TRAIN.sum(axis=1) - toy.token_logprobs(q_logits).sum(axis=1))
    q = np.exp(toy.token_logprobs(q_logits).sum(axis=1))
    assert q @ W == pytest.approx(1, rel=1e-12)
    assert sequence_ess_limit(6, 0.6) == pytest.approx(64 * (q @ W) ** 2 / (q @ W**2), rel=1e-10)
    assert sequence_ess_limit(1000, 0.0, batch_size=10) == pytest.approx(10)
    # a small mismatch is the lognormal regime: log E[W^2] grows by about 2 KL per token
    m = mismatch_for_kl(1e-3)
    rate = np.log(64 / sequence_ess_limit(2000, m)) / 2000
    assert rate == pytest.approx(2e-3, rel=0.02)


# ---------------------------------------------------------------- Part 2's lag tail, equal
# hardware and timeline, on Task 2a's may_start with test_given.py's newest_first, and Task 1


def test_lag_counts_count_each_trained_lag():
    assert lag_counts([dict(lag=0), dict(lag=None), dict(lag=3), dict(lag=0)]) == [2, 0, 0, 1]
    s = scheduling_sweep(NewestFirst, 16, 32, ks=(0, 1, 2), n_steps=5)
    for i, k in enumerate(s["k"]):
        trace = NewestFirst.simulate(16, 32, k, n_steps=5)["trace"]
        lags = [r["lag"] for r in trace if r["lag"] is not None]
        counts = s["lag_counts"][i]
        assert counts == [lags.count(lag) for lag in range(len(counts))]
        assert len(counts) - 1 == s["max_lag"][i] and counts[-1] > 0


def test_equal_hardware_compares_on_the_same_gpus():
    e = equal_hardware(
        NewestFirst,
        MEMORY,
        Simulation(batch=16, steps=5),
        gpus=6,
        lanes_per_gpu=2,
        train_work=3.0,
        k=1,
    )
    sync = NewestFirst.simulate(12, 16, 0, n_steps=5, train_time=3.0 / 6)
    assert e["sync_throughput"] == sync["throughput"], "sync is k = 0 on all G GPUs' lanes"
    assert [s["gen_gpus"] for s in e["splits"]] == [1, 2, 3, 4, 5]
    split_3 = NewestFirst.simulate(6, 16, 1, n_steps=5, train_time=3.0 / 3)
    assert e["splits"][2]["throughput"] == split_3["throughput"]
    assert [s["feasible"] for s in e["splits"]] == [True] * 4 + [False], "7B GRPO needs 2 GPUs"
    best = max(s["throughput"] for s in e["splits"][:4])
    assert e["best_throughput"] == best and e["speedup"] == best / e["sync_throughput"]


def test_lanes_per_gpu_is_the_kv_cache_beside_the_weights():
    assert lanes_per_gpu(MEMORY.kv_cache_bytes, ROUND_7B, 16_384) == 70
    assert lanes_per_gpu(MEMORY.kv_cache_bytes, MODELS[3], 16_384) == 0  # the 72B


def test_timeline_shares_one_window():
    t = timeline(NewestFirst, Simulation(16, 32, 12))  # k = 1 still runs past the window
    k0, k1 = t["runs"]
    assert t["window"] == k0["updates"][3][1] and len(k0["updates"]) == 4
    assert k1["busy"] > 2 * k0["busy"], "asynchrony fills the idle lane time"
    assert all(r["start"] < t["window"] for r in k0["responses"] + k1["responses"])

    def copies(finished, version, k, B, drop_stale):
        if len(finished) < B:
            return None, []
        batch = [dict(r, lag=version - r["tag"]) for r in finished[:B]]
        del finished[:B]
        return batch, []

    with pytest.raises(SchedulerError, match="not copies"):
        run_simulation(LaneSettings(2, 2, 0, 1), iter([1.0] * 4), lambda *a: True, copies)


# ---------------------------------------------------------------- staleness (run.py --staleness)
# Task 3's two functions for these checks: any weights will do, so these are deliberately
# not Task 3a's (1 + log-ratio, floored at 0), with Task 3b's pg_estimate (yours, once done).


class OtherWeights:
    @staticmethod
    def importance_weights(logp_train, logp_infer, scheme, C=2.0):
        if scheme == "none":
            return np.ones_like(logp_train)
        return np.maximum(1.0 + logp_train - logp_infer, 0.0)

    @property
    def pg_estimate(self):
        return TIS.pg_estimate


STAND_IN_TIS = OtherWeights()


@pytest.fixture(scope="module")
def hessian():
    """The reward Hessian at toy.THETA, worked out once for the tests that need it."""
    H = staleness_maths.reward_hessian(toy.THETA)
    H.setflags(write=False)  # shared: no test may change it
    return H


def test_staleness_update_moves_the_stated_kl():
    for kl in (0.01, 0.05):
        step = staleness_maths.step_for_kl(kl)
        old, new = staleness_maths.policy_versions(step, 1)[::-1]
        # KL(pi_old || pi_new) per token, summed over all 4,096 responses (per_token_kl
        # works it out by the chain rule, without listing them)
        logp, logq = toy.token_logprobs(old).sum(axis=1), toy.token_logprobs(new).sum(axis=1)
        assert np.exp(logp) @ (logp - logq) / toy.T == pytest.approx(kl, rel=1e-9)
        assert np.allclose(old, toy.THETA - step * toy.TRUE_GRAD.reshape(old.shape))


def test_staleness_hessian_matches_finite_differences(hessian):
    # H d along a unit direction d that moves all 20 parameters: every column of H counts
    d, e = np.random.default_rng(4).normal(size=toy.D), 1e-5
    d /= np.linalg.norm(d)
    step = e * d.reshape(toy.THETA.shape)
    change = (
        staleness_maths.reward_gradient(toy.THETA + step)
        - staleness_maths.reward_gradient(toy.THETA - step)
    ) / (2 * e)
    assert np.allclose(hessian @ d, change, atol=1e-8)
    assert np.allclose(staleness_maths.reward_gradient(toy.THETA), toy.TRUE_GRAD, atol=1e-15)


def test_staleness_with_all_lags_0_is_on_policy():
    s = staleness_sweep(
        NewestFirst, STAND_IN_TIS, Simulation(16, 32, 4), Toy(), ks=(0,), n_batches=10
    )
    row = s["rows"][0]
    assert row["k"] == 0 and row["max_lag"] == 0
    for scheme, stats in row["schemes"].items():
        exact = toy.exact_stats(
            STAND_IN_TIS.importance_weights, STAND_IN_TIS.pg_estimate, scheme, 0.0, batch_size=32
        )
        for key in ("bias", "variance", "rmse"):
            assert stats[key] == pytest.approx(exact[key], rel=1e-9, abs=1e-15), (scheme, key)


def test_staleness_single_lag_bias_is_the_off_policy_bias(hessian):
    step, H = staleness_maths.step_for_kl(), hessian
    versions = staleness_maths.policy_versions(step, 3)
    moments = staleness_maths.lag_moments(
        staleness_maths.lag_estimates(
            STAND_IN_TIS.importance_weights, STAND_IN_TIS.pg_estimate, "none", versions
        ),
        H,
    )
    for lag in (1, 3):
        counts = np.zeros((2, lag + 1), dtype=int)
        counts[:, lag] = 4  # two batches of 4 responses, all sampled by version v - lag
        stats = staleness_maths.staleness_stats(moments, counts, step, H)
        # the off-policy bias, summed directly over the 4,096 responses
        q = toy.sequence_probs(versions[lag])
        mean = np.einsum("n,n,ntd->d", q, toy.REWARDS, toy.GRAD_LOGP)
        assert stats["bias"] == pytest.approx(np.linalg.norm(mean - toy.TRUE_GRAD), rel=1e-9)
        assert stats["bias"] > 0.01, "an older policy samples other responses: a real bias"


def test_staleness_batch_lags_counts_each_update():
    trace = [
        dict(tag=0, lag=0),
        dict(tag=0, lag=0),
        dict(tag=0, lag=1),
        dict(tag=1, lag=0),
        dict(tag=1, lag=None),
    ]
    assert staleness_maths.batch_lags(trace, 2).tolist() == [[2, 0], [1, 1]]
    with pytest.raises(ValueError, match="B = 3"):
        staleness_maths.batch_lags(trace, 3)


def test_exact_j_by_dynamic_programming_matches_the_sum_over_responses():
    thetas = toy.THETA + np.random.default_rng(3).normal(size=(4, toy.V + 1, toy.V))
    assert np.allclose(
        training.expected_rewards(thetas),
        [staleness_maths.expected_reward(theta) for theta in thetas],
        rtol=1e-12,
    )


def test_one_step_gain_minus_second_order_shrinks_as_step_cubed(hessian):
    step, H = staleness_maths.step_for_kl(), hessian
    estimates = staleness_maths.lag_estimates(
        STAND_IN_TIS.importance_weights,
        STAND_IN_TIS.pg_estimate,
        "token_tis",
        staleness_maths.policy_versions(step, 1),
    )
    counts = np.array([[3, 1], [4, 0]])
    g_hats = staleness_maths.sample_batch_estimates(estimates, counts, 50, np.random.default_rng(0))
    g_hats = g_hats[(g_hats != 0).any(axis=1)]  # a batch without reward does not move
    gaps = []
    for eta in (step / 16, step / 32):  # the same batches at two step sizes
        exact, second = staleness_maths.one_step_gains(g_hats, eta, H)
        gaps.append(exact - second)
    ratio = gaps[0] / gaps[1]  # O(eta**3): halving eta divides the gap by about 8
    # (statistics.median: the first np.median imports numpy.ma, some 14 ms)
    assert len(ratio) > 20 and 7.5 < statistics.median(ratio) < 8.5 and (abs(ratio - 8) < 3).all()
    # and the second-order mean over many sampled batches is the exact formula's
    s = staleness_maths.exact_gain_stats(estimates, counts, step, H, n=1000)
    formula = staleness_maths.staleness_stats(
        staleness_maths.lag_moments(estimates, H), counts, step, H
    )
    assert abs(s["second_order_mc"] - formula["gain_per_update"]) < 4 * s["second_order_mc_se"]


def on_policy_sgd(tags_shape, draws, step):
    """An independent k = 0 trainer: each update samples B responses from the current policy
    (the same uniforms, the same rule: the token is how many cumulative probabilities lie
    below the uniform) and steps along (1/B) sum_n r_n grad log pi(y_n), rounding theta to a
    multiple of 2**-20 as train does. Returns J (seeds, updates + 1)."""
    n_updates, B = tags_shape
    out = []
    for seed_draws in draws:
        theta, J = toy.THETA.copy(), [staleness_maths.expected_reward(toy.THETA)]
        for u in range(n_updates):
            p = np.exp(theta) / np.exp(theta).sum(axis=1, keepdims=True)
            total = np.zeros_like(theta)  # sum_n r_n grad log pi(y_n)
            for n in range(B):
                prev, number, grad = toy.START, 0, np.zeros_like(theta)
                for t in range(toy.T):
                    token = int(np.searchsorted(np.cumsum(p[prev])[:-1], seed_draws[u, n, t]))
                    grad[prev] -= p[prev]  # a softmax row: d log p[token] = onehot - p
                    grad[prev, token] += 1.0
                    number, prev = number * toy.V + token, token
                total += toy.REWARDS[number] * grad  # number: the response's row in SEQUENCES
            theta = np.round((theta + step * total / B) * 2**20) / 2**20
            J.append(staleness_maths.expected_reward(theta))
        out.append(J)
    return np.array(out)


def test_training_with_k_0_and_no_mismatch_is_on_policy_sgd():
    n_updates, B, step = 3, 4, 5.0
    tags = np.repeat(np.arange(n_updates)[:, None], B, axis=1)[None]  # every tag is current
    draws = np.random.default_rng(5).random((2, n_updates, B, toy.T))
    J = training.train(
        STAND_IN_TIS.importance_weights,
        STAND_IN_TIS.pg_estimate,
        tags,
        ("none", "token_tis"),
        (step,),
        draws,
    )
    for scheme in (0, 1):
        assert np.allclose(J[0, scheme, 0], on_policy_sgd(tags.shape[1:], draws, step), rtol=1e-10)
    assert (np.diff(J[0, 0, 0], axis=1) != 0).any(), "the policy must move"


def test_training_weights_are_1_exactly_when_every_tag_is_current():
    seen = []

    def weights(logp_train, logp_infer, scheme, C=2.0):
        w = STAND_IN_TIS.importance_weights(logp_train, logp_infer, scheme, C)
        seen.append(w)
        return w

    draws = np.random.default_rng(6).random((2, 3, 4, toy.T))
    current = np.repeat(np.arange(3)[:, None], 4, axis=1)[None]
    training.train(weights, STAND_IN_TIS.pg_estimate, current, ("token_tis",), (5.0,), draws)
    assert all((w == 1.0).all() for w in seen)
    seen.clear()
    stale = np.zeros_like(current)  # every response sampled by version 0
    training.train(weights, STAND_IN_TIS.pg_estimate, stale, ("token_tis",), (5.0,), draws)
    assert (seen[0] == 1.0).all() and not (seen[-1] == 1.0).all()


def test_training_is_deterministic_for_a_fixed_seed():
    tags = np.array([[[0] * 8, [0] * 4 + [1] * 4, [1] * 4 + [2] * 4]])
    draws = np.random.default_rng(7).random((3, 3, 8, toy.T))
    runs = [
        training.train(
            STAND_IN_TIS.importance_weights,
            STAND_IN_TIS.pg_estimate,
            tags,
            ("none", "seq_tis"),
            (2.0, 4.0),
            draws,
            mismatch=0.6,
        )
        for _ in range(2)
    ]
    assert np.array_equal(*runs)
    assert not np.array_equal(runs[0][:, 0], runs[0][:, 1]), "the schemes must differ"
    # a run stopped at its target (after 1 update at least) was the same run until then
    # (to rounding: its blocks of pg_estimate calls hold other runs)
    stopped = training.train(
        STAND_IN_TIS.importance_weights,
        STAND_IN_TIS.pg_estimate,
        tags,
        ("none", "seq_tis"),
        (2.0, 4.0),
        draws,
        0.6,
        training.Training(target=0.25, n_always=1),
    )
    kept = np.isfinite(stopped)
    assert np.allclose(stopped[kept], runs[0][kept], rtol=1e-12) and not kept.all()


def test_training_batch_tags_and_time_to_target():
    trace = [
        dict(tag=0, lag=0),
        dict(tag=0, lag=0),
        dict(tag=0, lag=1),
        dict(tag=1, lag=0),
        dict(tag=1, lag=None),
    ]
    assert training.batch_tags(trace, 2, 2).tolist() == [[0, 0], [0, 1]]
    with pytest.raises(ValueError, match="B = 3"):
        training.batch_tags(trace, 3, 2)
    time, reached = training.time_to_target(
        np.array([[0.2, 0.6, 0.4], [0.2, 0.3, 0.4]]), [0.0, 2.0, 5.0], 0.5
    )
    assert time.tolist() == [2.0, 5.0] and reached.tolist() == [True, False]


def oldest_tag_first(finished, version, k, B, drop_stale):
    """A stand-in take_batch that trains the B responses of the lowest tags."""
    if len(finished) < B:
        return None, []
    batch = sorted(finished, key=lambda r: r["tag"])[:B]
    for r in batch:
        finished.remove(r)
        r["lag"] = version - r["tag"]
    return batch, []


def test_a_seed_that_never_reaches_the_target_counts_at_its_last_update():
    # a run stopped early is NaN after its last update: it counts there, not at the end
    J = np.array([[0.2, 0.6, np.nan, np.nan], [0.2, 0.3, np.nan, np.nan], [0.2, 0.3, 0.4, 0.45]])
    time, reached = training.time_to_target(J, [0.0, 2.0, 5.0, 9.0], 0.5)
    assert time.tolist() == [2.0, 2.0, 9.0] and reached.tolist() == [True, False, False]
    # and through the trainer: no seed reaches J >= 0.99 in 3 updates, so each counts at the
    # end time of its third update, and none is counted as having reached it
    tags = np.repeat(np.arange(3)[:, None], 4, axis=1)[None]
    draws = np.random.default_rng(8).random((3, 3, 4, toy.T))
    clock = np.array([[0.0, 1.5, 2.5, 4.0]])
    time, reached, _kl, _steps, last_J = (
        x[0]
        for x in train_cells(
            STAND_IN_TIS, tags, clock, [5.0], draws, [0.0], training.Training(target=0.99)
        )
    )
    assert (time == 4.0).all() and not reached.any()
    assert np.allclose(
        last_J,
        training.train(
            STAND_IN_TIS.importance_weights,
            STAND_IN_TIS.pg_estimate,
            tags,
            STALENESS_SCHEMES,
            (5.0,),
            draws,
        )[0, :, 0, :, -1],
    )


def test_best_step_search_returns_an_interior_point():
    # quadratic stand-ins in log2(scale): best at 6 (inside the first grid), at 40 (above
    # it) and at 0.1 (below it); the grid must grow until each best has worse on both sides
    optima = np.array([6.0, 40.0, 0.1])
    grid, times, best = training.best_step(
        lambda scales: [(np.log2(s) - np.log2(optima)) ** 2 for s in scales], (0.25, 0.5, 1.0)
    )
    assert list(grid) == sorted(grid) and ((0 < best) & (best < len(grid) - 1)).all()
    for cell, b in enumerate(best):
        assert times[b - 1, cell] > times[b, cell] < times[b + 1, cell]
        assert abs(np.log2(grid[b]) - np.log2(optima[cell])) <= 0.5  # the nearest scale


def test_kl_steps_move_exactly_the_kl_asked():
    rng = np.random.default_rng(9)
    thetas = toy.THETA + rng.normal(size=(5, toy.V + 1, toy.V))
    directions = rng.normal(size=thetas.shape)
    directions[0] = 0.0  # a batch without reward cannot move
    s = training.kl_steps(thetas, directions, 0.0256)
    assert s[0] == 0.0
    for theta, d, step in zip(thetas[1:], directions[1:], s[1:]):
        assert staleness_maths.per_token_kl(theta, theta + step * d) == pytest.approx(
            0.0256, rel=1e-8
        )
    moved = training.update_kls(thetas, thetas + s[:, None, None] * directions)
    assert moved[1:] == pytest.approx(0.0256, rel=1e-8)


def test_with_more_lanes_than_B_k_sets_the_lag():
    """Past B lanes the trainer is the bottleneck: k = 2, 4, 8 give different batches, at
    one throughput, with a mean lag that grows with k (the trainer-bound set-up)."""
    runs = {
        k: run_simulation(
            LaneSettings(64, 32, k, 10),
            lognormal_lengths(1.25, 0),
            SCHEDULER.may_start,
            oldest_tag_first,
        )
        for k in (2, 4, 8)
    }
    tags = [training.batch_tags(runs[k]["trace"], 32, 10) for k in (2, 4, 8)]
    assert not np.array_equal(tags[0], tags[1]) and not np.array_equal(tags[1], tags[2])
    lags = [
        np.mean([r["lag"] for r in runs[k]["trace"] if r["lag"] is not None]) for k in (2, 4, 8)
    ]
    assert lags[0] < lags[1] < lags[2], f"mean lags {lags} must grow with k"
    assert runs[2]["throughput"] == pytest.approx(runs[8]["throughput"], rel=0.02)
