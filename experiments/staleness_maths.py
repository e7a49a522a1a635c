"""What staleness costs the gradient, exactly, on the toy (given): run.py --staleness.

Part 2 trains a response at lag l = version - tag: it was sampled by the policy of
l versions ago. Here the toy's policy moves, so that lag has a price:

  * The current version v is toy.THETA (Part 3's numbers stay as they are). Older
    versions step back along the exact gradient of the expected reward J:

        theta_{j-1} = theta_j - step * grad J(theta_j)

    and `step` is chosen so that one update moves the policy by TARGET_KL nats per
    token: KL(pi_{v-1} || pi_v) / T = TARGET_KL, the KL a PPO update is allowed.
  * A response at lag l is sampled from version v - l (and, with an engine mismatch m
    on top, from logits theta_{v-l} + m * b, as in Part 3), and trained at version v
    with the importance ratio pi_v / pi_sampler from Task 3's functions.
  * A batch of B responses with lag counts n_l estimates the gradient by the mean of
    its one-response estimates, so, exactly, with mu_l, Sigma_l the mean and
    covariance of the one-response estimate at lag l:

        E[g_hat] = sum_l n_l mu_l / B,      Cov[g_hat] = sum_l n_l Sigma_l / B**2

  * One update theta += step * g_hat raises J, to second order, by

        step * g . E[g_hat] + step**2 / 2 * (tr(H Cov[g_hat]) + E[g_hat]' H E[g_hat])

    with g, H the exact gradient and Hessian of J at version v. A biased estimate loses
    in the first term. The noise enters through step**2 / 2 * tr(H Cov[g_hat]), whose
    sign is that of J's curvature along the noise: on this toy it is positive in every
    cell run.py prints, so noise adds gain to second order.
  * The second-order gain is an approximation, so exact_gain_stats measures the real
    thing: E[J(theta_v + step * g_hat)] - J(theta_v) with the exact J, Monte Carlo over
    sampled batches, and the per-token KL such a noisy update actually moves (more than
    `step` was sized for: the older versions above are closer than a real run's).
"""

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import toy
from experiments.training import expected_rewards, log_softmax_rows

# PPO's usual per-update KL target, in nats per token: OpenAI Spinning Up's ppo has
# target_kl=0.01 ("usually small, 0.01 or 0.05"), on approx_kl = mean(logp_old - logp_new),
# i.e. KL(old || new) per action (openai/spinningup spinup/algos/pytorch/ppo/ppo.py,
# commit 20921137141b154454c0a2698709d9f9a0302101).
TARGET_KL = 0.01


def expected_reward(theta: np.ndarray) -> float:
    """J(theta) = sum over the 4,096 responses y of pi_theta(y) r(y)."""
    return float(toy.sequence_probs(theta) @ toy.REWARDS)


def reward_gradient(theta: np.ndarray) -> np.ndarray:
    """grad J(theta) = sum_y pi_theta(y) r(y) grad log pi_theta(y): a (D,) array."""
    weight = toy.sequence_probs(theta) * toy.REWARDS
    return np.einsum("n,ntd->d", weight, toy.grad_logprobs(theta))


def reward_hessian(theta: np.ndarray) -> np.ndarray:
    """The (D, D) Hessian of J at theta, exactly:

        H = sum_y pi(y) r(y) (G(y) G(y)' + sum_t d^2 log pi(y_t | y_{t-1}))

    with G(y) = grad log pi(y). A softmax row a has d^2 log p(b | a) = -(diag(p_a) - p_a p_a'),
    the same for every b, so the second part is -sum_a c_a (diag(p_a) - p_a p_a') in
    row a's block, with c_a = sum_y pi(y) r(y) #{t : y_{t-1} = a}.
    """
    weight = toy.sequence_probs(theta) * toy.REWARDS
    G = toy.grad_logprobs(theta).sum(axis=1)
    H = (G * weight[:, None]).T @ G
    p = toy.token_probs(theta)
    visits = np.array([weight @ (toy._PREV == a).sum(axis=1) for a in range(toy.V + 1)])
    for a in range(toy.V + 1):
        rows = slice(a * toy.V, (a + 1) * toy.V)
        H[rows, rows] -= visits[a] * (np.diag(p[a]) - np.outer(p[a], p[a]))
    return H


def per_token_kl(theta_p: np.ndarray, theta_q: np.ndarray) -> float:
    """KL(pi_p || pi_q) over the toy's responses, per token, exactly, by the chain rule:
    the KL of whole responses is, summed over the T positions, the KL of the next-token
    rows weighted by how likely pi_p is to be in each row there,

        sum_y pi_p(y) log(pi_p(y) / pi_q(y)) / T = sum_t sum_a P_p(row a at t) KL(p_a || q_a) / T,

    with no need to list the 4,096 responses. Example: equal thetas give 0."""
    p, q = toy.token_probs(theta_p), toy.token_probs(theta_q)
    row_kl = (p * (np.log(p) - np.log(q))).sum(axis=1)
    at, total = np.eye(toy.V + 1)[toy.START], 0.0  # the first token's row is START
    for _ in range(toy.T):
        total += at @ row_kl
        at = np.append(at @ p, 0.0)  # the next row is the token just drawn (never START)
    return float(total / toy.T)


@functools.cache  # a bisection of some 40 exact KLs; run.py and the tests ask the same kl again
def step_for_kl(kl: float = TARGET_KL) -> float:
    """The step size with per_token_kl(THETA - step * grad J(THETA), THETA) = kl, found by
    bisection (to 1e-12 relative): one exact update then moves the policy by `kl`."""
    g = toy.TRUE_GRAD

    def moved(step):
        return per_token_kl(toy.THETA - step * g.reshape(toy.THETA.shape), toy.THETA)

    low, high = 0.0, 1.0
    while moved(high) < kl:
        low, high = high, 2 * high
    while high - low > 1e-12 * high:
        middle = (low + high) / 2
        low, high = (middle, high) if moved(middle) < kl else (low, middle)
    return (low + high) / 2


def policy_versions(step: float, n_back: int) -> list[np.ndarray]:
    """[theta_v, theta_{v-1}, ..., theta_{v-n_back}]: theta_v = THETA, and each older one
    is one exact gradient step back, theta_{j-1} = theta_j - step * grad J(theta_j)."""
    versions = [toy.THETA]
    for back in range(n_back):
        theta = versions[-1]
        # at THETA grad J is toy.TRUE_GRAD, the same sum number for number: not worked out again
        gradient = toy.TRUE_GRAD if back == 0 else reward_gradient(theta)
        versions.append(theta - step * gradient.reshape(theta.shape))
    return versions


def batch_lags(trace: list[dict[str, Any]], B: int) -> np.ndarray:
    """(n_batches, max_lag + 1) counts: row b holds how many responses of each lag the b-th
    update trained. A trained response's update is the version it was trained at, tag + lag.
    Example: lags 0, 0, 1, 0 trained by updates 0, 0, 1, 1 with B = 2 -> [[2, 0], [1, 1]]."""
    trained = [(r["tag"] + r["lag"], r["lag"]) for r in trace if r["lag"] is not None]
    n_batches = max(update for update, _ in trained) + 1
    counts = np.zeros((n_batches, max(lag for _, lag in trained) + 1), dtype=int)
    for update, lag in trained:
        counts[update, lag] += 1
    if not (counts.sum(axis=1) == B).all():
        raise ValueError(
            f"every update must train B = {B} responses; the trace's updates "
            f"trained {sorted(set(counts.sum(axis=1).tolist()))}"
        )
    return counts


def lag_estimates(
    importance_weights: Callable[..., np.ndarray],
    pg_estimate: Callable[..., np.ndarray],
    scheme: str,
    versions: Sequence[np.ndarray],
    mismatch: float = 0.0,
    C: float = 2.0,
    noise: str = "student_t",
) -> list[tuple[np.ndarray, np.ndarray]]:
    """For each lag l = 0 .. len(versions) - 1, (q_l, g_l): the sampling probabilities of
    the rewarded responses when version v - l samples (plus an engine mismatch) and their
    one-response estimates when version v trains with `scheme` (toy.response_estimates).
    A response with reward 0 has the estimate 0."""
    return [
        toy.response_estimates(
            importance_weights, pg_estimate, scheme, theta + mismatch * toy.PERTURBATIONS[noise], C
        )
        for theta in versions
    ]


def lag_moments(
    estimates: Sequence[tuple[np.ndarray, np.ndarray]], H: np.ndarray
) -> dict[str, np.ndarray]:
    """The one-response estimate's moments at each lag, exact sums over the responses, from
    lag_estimates: mean mu_l (L, D), E||g||^2 (L,) and E[g' H g] (L,)."""
    return dict(
        mean=np.array([q @ g for q, g in estimates]),
        square=np.array([q @ (g**2).sum(axis=1) for q, g in estimates]),
        quadratic=np.array([q @ np.einsum("nd,de,ne->n", g, H, g) for q, g in estimates]),
    )


def staleness_stats(
    moments: dict[str, np.ndarray], counts: np.ndarray, step: float, H: np.ndarray
) -> dict[str, Any]:
    """Bias, variance, RMSE and cosine of the batch estimate, and the expected gain of J per
    update, over the run's batches (each update equally likely), from lag_moments and
    batch_lags:

        E[g_hat_b]     = sum_l n_bl mu_l / B
        tr Cov[g_hat_b] = sum_l n_bl (E||g_l||^2 - ||mu_l||^2) / B**2
        bias   = || mean_b E[g_hat_b] - g ||, rmse**2 = mean_b (||E[g_hat_b] - g||^2 + tr Cov_b),
        variance = rmse**2 - bias**2 (noise within batches and the spread between them),
        cosine = cos(mean_b E[g_hat_b], g),
        gain   = mean_b (step g . E[g_hat_b] + step**2 / 2 (tr(H Cov_b) + E[g_hat_b]' H E[g_hat_b]))
        noise_term = mean_b step**2 / 2 tr(H Cov_b), the part of the gain the noise brings
    """
    g = toy.TRUE_GRAD
    B = counts[0].sum()
    mu = moments["mean"][: counts.shape[1]]
    means = counts @ mu / B  # (n_batches, D)
    noise = counts @ (moments["square"][: len(mu)] - (mu**2).sum(axis=1)) / B**2
    noise_h = (
        counts @ (moments["quadratic"][: len(mu)] - np.einsum("ld,de,le->l", mu, H, mu)) / B**2
    )
    mse = ((means - g) ** 2).sum(axis=1) + noise
    gain = step * means @ g + step**2 / 2 * (noise_h + np.einsum("bd,de,be->b", means, H, means))
    mean = means.mean(axis=0)
    bias = float(np.linalg.norm(mean - g))
    rmse = float(np.sqrt(mse.mean()))
    return dict(
        bias=bias,
        variance=rmse**2 - bias**2,
        rmse=rmse,
        cosine=toy.cosine(mean, g),
        gain_per_update=float(gain.mean()),
        noise_term=float(step**2 / 2 * noise_h.mean()),
    )


# ---------------------------------------------------------------- the exact one-step gain

ONE_STEP_BATCHES = 4000  # Monte Carlo batches per row and scheme
ONE_STEP_SEED = 2  # their seed (the same in every row and scheme)


def sample_batch_estimates(
    estimates: Sequence[tuple[np.ndarray, np.ndarray]],
    counts: np.ndarray,
    n: int,
    rng: np.random.Generator,
) -> np.ndarray:
    """n batch estimates g_hat (n, D), Monte Carlo: batch i has the lag counts of the run's
    batch i mod len(counts) (each update equally likely), and each of its responses at lag
    l is drawn from version v - l's sampler (a reward-0 draw has the estimate 0)."""
    B = counts[0].sum()
    n_rewarded = len(estimates[0][1])
    lags = np.array([np.repeat(np.arange(counts.shape[1]), c) for c in counts])[
        np.arange(n) % len(counts)
    ]  # (n, B)
    draws = rng.random((n, B))
    used = estimates[: counts.shape[1]]
    table = np.concatenate([np.vstack([g, np.zeros(toy.D)]) for _, g in used])
    index = np.zeros((n, B), dtype=int)
    for lag, (q, _) in enumerate(used):
        drawn = np.minimum(np.searchsorted(np.cumsum(q), draws), n_rewarded)  # n_rewarded: 0
        index = np.where(lags == lag, lag * (n_rewarded + 1) + drawn, index)
    return table[index].sum(axis=1) / B


def one_step_gains(g_hats: np.ndarray, step: float, H: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each batch estimate g_hat (n, D), the gain of one update theta = THETA + step g_hat:
    exact, J(theta) - J(THETA) with the exact J, and to second order,
    step g . g_hat + step**2 / 2 g_hat' H g_hat (whose mean is staleness_stats's gain).
    Returns (exact (n,), second_order (n,))."""
    thetas = toy.THETA + step * g_hats.reshape(-1, *toy.THETA.shape)
    exact = expected_rewards(thetas) - expected_reward(toy.THETA)
    second = step * g_hats @ toy.TRUE_GRAD + step**2 / 2 * np.einsum(
        "nd,de,ne->n", g_hats, H, g_hats
    )
    return exact, second


def update_kls(g_hats: np.ndarray, step: float) -> np.ndarray:
    """KL(pi_THETA || pi_theta) per token of each update theta = THETA + step g_hat, exactly
    (per_token_kl's chain rule; the rows' visits depend on THETA only): (n,)."""
    p = toy.token_probs(toy.THETA)
    q = np.exp(log_softmax_rows(toy.THETA + step * g_hats.reshape(-1, *toy.THETA.shape)))
    row_kl = (p * (np.log(p) - np.log(q))).sum(axis=-1)  # (n, V + 1)
    at, visits = np.eye(toy.V + 1)[toy.START], np.zeros(toy.V + 1)
    for _ in range(toy.T):
        visits += at
        at = np.append(at @ p, 0.0)
    return row_kl @ visits / toy.T


def exact_gain_stats(
    estimates: Sequence[tuple[np.ndarray, np.ndarray]],
    counts: np.ndarray,
    step: float,
    H: np.ndarray,
    n: int = ONE_STEP_BATCHES,
    seed: int = ONE_STEP_SEED,
) -> dict[str, Any]:
    """The expected one-step gain of J over the run's batches, exactly in J and Monte Carlo
    over n batches (mean and standard error); the same batches' second-order gain; and the
    per-token KL an update actually moves (mean and standard error)."""
    g_hats = sample_batch_estimates(estimates, counts, n, np.random.default_rng(seed))
    exact, second = one_step_gains(g_hats, step, H)
    kl = update_kls(g_hats, step)
    root = np.sqrt(n)
    return dict(
        exact_gain=float(exact.mean()),
        exact_gain_se=float(exact.std(ddof=1) / root),
        second_order_mc=float(second.mean()),
        second_order_mc_se=float(second.std(ddof=1) / root),
        update_kl=float(kl.mean()),
        update_kl_se=float(kl.std(ddof=1) / root),
    )
