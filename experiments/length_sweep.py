"""--length-sweep (Task 3): every scheme at real response lengths T, where sequence IS collapses.

Real responses have hundreds to thousands of tokens. The toy's bigram (same THETA, same
perturbations, toy.py) writes responses of any length T, but toy.reward saturates: over
many tokens "at least two 0s" is almost certain, the reward then depends on the last token
only, and the true gradient stops growing while the noise keeps growing with T. The sweep
therefore uses a per-token reward, one point per token 0, centred by its mean under
pi_train:

    r(y) = #{t : y_t = 0} - E_train[#{t : y_t = 0}]

Its spread and its true gradient both grow with T, so the relative error of an estimate
measures the weighting scheme, not a reward that fades away. Exact where the responses can
be listed (T <= 6), Monte Carlo with a fixed seed beyond.
"""

from __future__ import annotations

import argparse
import itertools
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

import grading
from block_calls import BLOCK, block_diagonal
from experiments.options import bounded
from experiments.part3c_masking import masked_functions
from experiments.plotting import COLORS, LABELS, MARKERS, label_ends, log_ticks, placeholder
from experiments.settings import DEFAULT_TOY, Settings
from lab import SCHEME_TABLE, SCHEMES, TaskNotDone
from lab.input_checks import at_least, at_most, one_of, whole_at_least
from toy import (
    NOISES,
    PAIR_GRADS,
    PERTURBATIONS,
    SEQUENCES,
    START,
    THETA,
    D,
    V,
    cosine,
    estimates_by_pair,
    pair_sums,
    sample_responses,
    token_probs,
)

if TYPE_CHECKING:  # (matplotlib is imported only to draw)
    from matplotlib.axes import Axes

KEY, LABEL, TASK, FLAG = "length_sweep", "Length sweep", "3", "length_sweep"
SECONDS = 11.0
# The length sweep, set by the per-token KL(pi_infer || pi_train) of its levels: the lab's
# Part 3 scale (0.16, about mismatch 0.6) and a realistic one (0.001, the top of the
# measured range; see docs/long-responses.md for the sources). Each level runs the same
# sequence-level budgets T x KL, doubling (at KL 0.001 they are T = 128, 256, ..., 16,384).
LENGTH_BUDGETS = (0.128, 0.256, 0.512, 1.024, 2.048, 4.096, 8.192, 16.384)
NO_MISMATCH_GRID = (6, 16, 64, 128, 256, 1024)  # the T of a level of KL 0
LENGTH_KLS = (0.16, 0.001)
# A scheme has collapsed once the mean ESS of a batch's weights falls below ESS_SHARE of
# the batch (6.4 of 64) and, further, below ESS_FLOOR responses; and once its mean
# estimate's cosine with the true gradient falls below COLLAPSE_COSINE.
ESS_SHARE, ESS_FLOOR = 0.1, 2.0
COLLAPSE_COSINE = 0.5
LENGTH_KEYS = ("rmse", "rmse_stderr", "cosine", "zero_weight_share", "ess", "ess_stderr")
ZERO_WEIGHT = 1e-6  # a token weight below this counts as zero (its term is lost among the others)
LENGTH_SEED = 0  # the Monte Carlo draws of the length sweep
ESS_BATCHES = 1024  # batches drawn for the ESS where the responses are listed (T <= 6)
KL_MISMATCH = 4.0  # the KL grows with the mismatch scale from 0 up to here (both noises),


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--length-sweep",
        action="store_true",
        help=f"measure every scheme (error, cosine, ESS of its weights) at the "
        f"response lengths T with T x KL = {LENGTH_BUDGETS[0]:g} .. "
        f"{LENGTH_BUDGETS[-1]:g} (a per-token reward), at each KL of --length-kl",
    )
    p.add_argument(
        "--length-kl",
        type=bounded(float, 0, MAX_KL),
        nargs="+",
        default=list(LENGTH_KLS),
        help="per-token KL(pi_infer || pi_train) of each level of the length sweep "
        "(nats; the mismatch scale that gives it is found exactly)",
    )


def work(settings: Settings) -> float:
    """Sampled batches of batch_size responses."""
    return max(1.0, settings.toy.batch_size / DEFAULT_TOY.batch_size)


def run(settings: Settings, results: dict[str, Any]) -> dict[str, Any]:
    t = settings.toy
    return length_sweep(grading.load("tis"), settings.options.length_kl, t.batch_size, t.C, t.noise)


def length_sweep(
    tis: ModuleType,
    kls: Sequence[float] = LENGTH_KLS,
    batch_size: int = 64,
    C: float = 2.0,
    noise: str = "student_t",
) -> dict[str, Any]:
    """Relative RMSE, cosine, zero-weight share and ESS of every scheme against the response
    length T (length_stats), at each per-token KL in `kls` (the engine's mismatch scale
    that gives it exactly, mismatch_for_kl), from the Task 3 module `tis`; the T of
    each level come from length_grid. The masked schemes come in once Task 3c is done;
    until then `masked_skipped` says why.

    Beside the measured ESS, each level holds two predictions for sequence IS weights W:
      ess_lognormal  N * exp(-2 * T * KL): log W normal with variance 2 * T * KL (the
                     per-token log-ratio's variance is about 2 KL for a small mismatch),
                     and E[W]^2 / E[W^2] = exp(-variance) for a lognormal W
      ess_limit      N * E[W]^2 / E[W^2], exact (sequence_ess_limit): the large-batch ESS
    and `collapse`: per scheme, where its mean ESS falls below ESS_SHARE * N and ESS_FLOOR
    (with the ESS and its error at both ends and whether that is beyond the noise,
    bracket), and its cosine below COLLAPSE_COSINE (crossing); `collapse_exact`: the same
    ESS crossings of seq from the exact column ess_limit."""
    functions = {scheme: scheme_weights(tis, scheme, C) for scheme in SCHEMES}
    try:
        functions |= masked_functions(tis)
        skipped = None
    except TaskNotDone as todo:
        skipped = str(todo)
    levels: list[dict[str, Any]] = []
    for kl in kls:
        mismatch, lengths = mismatch_for_kl(kl, noise), length_grid(kl)
        runs = [
            length_stats(
                functions,
                tis.pg_estimate,
                T,
                mismatch,
                batch_size,
                noise,
                n_batches=length_batches(T),
            )
            for T in lengths
        ]
        schemes = {
            scheme: {key: [run["schemes"][scheme][key] for run in runs] for key in LENGTH_KEYS}
            for scheme in functions
        }
        T_kl = [T * kl for T in lengths]
        levels.append(
            dict(
                kl=kl,
                mismatch=mismatch,
                mean_abs_log_ratio=mean_abs_log_ratio(mismatch, noise),
                T=list(lengths),
                T_kl=T_kl,
                n_batches=[length_batches(T) for T in lengths],
                method=[run["method"] for run in runs],
                schemes=schemes,
                ess_lognormal=[batch_size * math.exp(-2 * t_kl) for t_kl in T_kl],
                ess_limit=[sequence_ess_limit(T, mismatch, batch_size, noise) for T in lengths],
                collapse={
                    scheme: collapse_points(stats, T_kl, batch_size)
                    for scheme, stats in schemes.items()
                },
            )
        )
        # seq's crossings from its exact large-batch ESS, not sampled: no bracket error
        limit = levels[-1]["ess_limit"]
        levels[-1]["collapse_exact"] = dict(
            seq={
                key: crossing(limit, T_kl, value)
                for key, value in (("ess_share", ESS_SHARE * batch_size), ("ess_floor", ESS_FLOOR))
            }
        )
    return dict(
        batch_size=batch_size,
        C=C,
        noise=noise,
        ess_share=ESS_SHARE,
        ess_floor=ESS_FLOOR,
        collapse_cosine=COLLAPSE_COSINE,
        levels=levels,
        masked_skipped=skipped,
    )


def length_grid(kl: float) -> list[int]:
    """The T of a level: for each budget of LENGTH_BUDGETS the T with T * kl nearest it (at
    least 1, each T once), or NO_MISMATCH_GRID with no mismatch. Example: kl = 0.16 ->
    1, 2, 3, 6, 13, 26, 51, 102 (T x KL 0.16 ... 16.3); kl = 0.001 -> 128 ... 16,384."""
    if kl == 0:
        return list(NO_MISMATCH_GRID)
    return sorted({max(1, round(budget / kl)) for budget in LENGTH_BUDGETS})


def length_batches(T: int) -> int:
    """Monte Carlo batches at length T: 32 up to T = 512, then fewer so that the sweep
    stays a few seconds (a token costs the same at every T): 16 up to 1024, 4 up to 4096,
    2 beyond."""
    return 32 if T <= 512 else 16 if T <= 1024 else 4 if T <= 4096 else 2


def collapse_points(stats: dict[str, Any], T_kl: list[float], batch_size: int) -> dict[str, Any]:
    """Where one scheme collapses, as crossing() of its mean ESS below ESS_SHARE * batch_size
    and below ESS_FLOOR, and of its cosine below COLLAPSE_COSINE:
    dict(ess_share=..., ess_floor=..., cosine=...). With the ESS's standard errors in
    stats["ess_stderr"], each ESS crossing also holds the ESS and its error at both ends of
    its bracket (bracket)."""
    ess = {
        key: crossing(stats["ess"], T_kl, level)
        for key, level in (("ess_share", ESS_SHARE * batch_size), ("ess_floor", ESS_FLOOR))
    }
    if "ess_stderr" in stats:
        ess = {
            key: bracket(
                c,
                stats["ess"],
                stats["ess_stderr"],
                T_kl,
                ESS_SHARE * batch_size if key == "ess_share" else ESS_FLOOR,
            )
            for key, c in ess.items()
        }
    return dict(ess, cosine=crossing(stats["cosine"], T_kl, COLLAPSE_COSINE))


def bracket(
    c: dict[str, Any], values: list[float], stderrs: list[float], T_kl: list[float], level: float
) -> dict[str, Any]:
    """A crossing c of sampled values, with the value and standard error at each end of its
    bracket (None where there is no end) and `resolved`: both ends lie more than 2 standard
    errors from `level`, so the crossing is between them beyond the sampling noise (an exact
    value has error 0). Example: values 9 +- 1, 5 +- 2 at T x KL 1, 2, level 6.4 -> at 2,
    after 1, resolved False (5 + 2 x 2 > 6.4)."""
    ends: dict[str, Any] = {}
    for end in ("at", "after"):
        i = T_kl.index(c[end]) if c[end] is not None else None
        ends[f"value_{end}"] = None if i is None else values[i]
        ends[f"se_{end}"] = None if i is None else stderrs[i]
    resolved = all(
        ends[f"value_{end}"] is None or abs(ends[f"value_{end}"] - level) > 2 * ends[f"se_{end}"]
        for end in ("at", "after")
    )
    return dict(c, **ends, resolved=resolved)


def crossing(values: list[float], T_kl: list[float], level: float) -> dict[str, Any]:
    """The first T x KL at which `values` is below `level`, and the T x KL just before it:
    dict(at=..., after=...); at=None if it never is, after=None if already at the first.
    Example: values 9, 5, 1 at T x KL 1, 2, 4, level 6.4 -> dict(at=2, after=1)."""
    for i, (value, t_kl) in enumerate(zip(values, T_kl)):
        if value < level:
            return dict(at=t_kl, after=T_kl[i - 1] if i > 0 else None)
    return dict(at=None, after=T_kl[-1])


def scheme_weights(tis: ModuleType, scheme: str, C: float) -> Callable[..., np.ndarray]:
    """Task 3a's weights for one scheme, as a function of (logp_train, logp_infer)."""
    return lambda logp_train, logp_infer: tis.importance_weights(logp_train, logp_infer, scheme, C)


# ---------------------------------------------------------------- the toy at length T


def length_true_grad(T: int) -> tuple[np.ndarray, float]:
    """(true gradient of E_train[r(y)] for responses of T tokens (D,), E_train[#zeros]).

    Dynamic programming over the bigram instead of a sum over V**T responses:
    with pi_{t-1}(a) = P(y_{t-1} = a) (forward) and H_t(b) the expected count of
    0s from token t on, given y_t = b (backward), the gradient of the row a of
    theta is  sum_t pi_{t-1}(a) * p(.|a) * (H_t - <p(.|a), H_t>).
    Example: T = 1 from START gives p(.|START) * (f - p(0|START)), f = onehot(0).
    """
    p = token_probs(THETA)
    f = (np.arange(V) == 0).astype(float)  # the reward of each token: 1 for token 0
    H = np.zeros((T + 1, V))  # H[t] for t = 1..T; H[T] = f
    H[T] = f
    for t in range(T - 1, 0, -1):
        H[t] = f + p[:V] @ H[t + 1]
    step = np.zeros((V + 1, V + 1))  # P(y_t = b | y_{t-1} = a); START is never revisited
    step[:, :V] = p
    forward = np.zeros((T + 1, V + 1))  # forward[t] = P(y_t = .), forward[0] at START
    forward[0, START] = 1.0
    for t in range(1, T + 1):
        forward[t] = forward[t - 1] @ step
    # the sum over t of the gradient above, one matrix product per term
    before, after = forward[:T], H[1:]  # pi_{t-1} and H_t for t = 1..T
    grad = p * (before.T @ after - (before * (after @ p.T)).sum(axis=0)[:, None])
    expected_zeros = forward[1:, 0].sum()
    return grad.reshape(D), expected_zeros


def length_responses(sequences, infer_logits, mean_zeros):
    """logp_train, logp_infer (N, T), the pair of each token (N, T) and rewards (N,).

    A token's gradient grad log p(y_t | y_{t-1}) depends only on its pair
    (y_{t-1}, y_t), one of the (V + 1) * V = D pairs, numbered y_{t-1} * V + y_t;
    PAIR_GRADS holds the D gradients.
    """
    prev = np.concatenate([np.full((len(sequences), 1), START), sequences[:, :-1]], axis=1)
    log_p, log_q = np.log(token_probs(THETA)), np.log(token_probs(infer_logits))
    rewards = (sequences == 0).sum(axis=1) - mean_zeros
    return log_p[prev, sequences], log_q[prev, sequences], prev * V + sequences, rewards


def pair_estimates(pg_estimate, rewards, summed):
    """g(y) for each response, (N, D): the estimate a batch of that one response gives, its
    tokens grouped by pair (as in estimates_by_pair). BLOCK responses per call of
    pg_estimate, each in its own block of the parameters (as block_calls.py does)."""
    out = []
    for start in range(0, len(rewards), BLOCK):
        r, w = rewards[start : start + BLOCK], summed[start : start + BLOCK]
        grads = (
            PAIR_BLOCK
            if len(r) == BLOCK
            else block_diagonal(np.broadcast_to(PAIR_GRADS, (len(r), D, D)))
        )
        out.append(np.asarray(pg_estimate(r, grads, w), dtype=float).reshape(len(r), D) * len(r))
    return np.concatenate(out)


def per_token_kl(mismatch: float, noise: str = "student_t") -> float:
    """KL(pi_infer || pi_train) per token, in nats, for the engine's logits
    THETA + mismatch * b: each row's KL weighted by how often pi_infer visits the row in
    the long run (its stationary distribution over tokens), the limit of the sequence KL
    divided by T. Example: mismatch 0 gives 0; mismatch 0.6 gives about 0.16.
    """
    at_least("mismatch", mismatch, 0)
    p, q = token_probs(THETA), token_probs(THETA + mismatch * PERTURBATIONS[noise])
    row_kl = (q * (np.log(q) - np.log(p))).sum(axis=1)
    return float(long_run_visits(q) @ row_kl[:V])


def long_run_visits(q: np.ndarray) -> np.ndarray:
    """How often a long response from the bigram q visits each token (its stationary
    distribution, (V,), summing to 1): visits @ q[:V] = visits, one equation replaced by
    the sum."""
    system = np.vstack([(q[:V] - np.eye(V)).T[:-1], np.ones(V)])
    return np.linalg.solve(system, np.eye(V)[-1])


def mean_abs_log_ratio(mismatch: float, noise: str = "student_t") -> float:
    """E |log pi_train(y_t | y_t-1) - log pi_infer(y_t | y_t-1)| per token, tokens drawn from
    pi_infer in the long run (weighted as in per_token_kl), in nats: the mean absolute
    log-probability difference between trainer and engine, the mismatch statistic that
    RL trainers log (docs/long-responses.md compares measured ones). Example: mismatch 0
    gives 0."""
    at_least("mismatch", mismatch, 0)
    p, q = token_probs(THETA), token_probs(THETA + mismatch * PERTURBATIONS[noise])
    row_mean = (q * np.abs(np.log(p) - np.log(q))).sum(axis=1)
    return float(long_run_visits(q) @ row_mean[:V])


MAX_KL = 0.7  # to about 0.77 nats per token (student_t) and 1.1 (gaussian)


def mismatch_for_kl(kl: float, noise: str = "student_t") -> float:
    """The mismatch scale whose per_token_kl is `kl`, by bisection (to 1e-12 relative)
    over 0 .. KL_MISMATCH, where the KL grows with the scale; exactly 0 for a KL of 0."""
    at_least("kl", kl, 0)
    at_most("kl", kl, MAX_KL, f"a mismatch scale up to {KL_MISMATCH} gives it")
    if kl == 0:
        # the KL grows as the scale squared, so below a scale of about 1e-8 it is lost in
        # the rounding of per_token_kl, and a bisection toward 0 would stop wherever this
        # CPU's last bits say
        return 0.0
    low, high = 0.0, KL_MISMATCH
    while high - low > 1e-12 * high:
        middle = (low + high) / 2
        low, high = (middle, high) if per_token_kl(middle, noise) < kl else (low, middle)
    return (low + high) / 2


def length_stats(
    weight_functions, pg_estimate, T, mismatch, batch_size=64, noise="student_t", n_batches=32
):
    """How well each scheme's batch estimate finds the true gradient at response length T.

    weight_functions maps a scheme's name to a function (logp_train, logp_infer) -> (N, T)
    weights (Task 3a or 3c, passed in), pg_estimate is Task 3b's. Per scheme:

        rmse              sqrt(E || estimate - g ||^2) / ||g||   (relative: the estimate
                          that is always 0 scores exactly 1.0)
        cosine            cos(E[estimate], g): does the average estimate point the right way?
        zero_weight_share the share of token weights below ZERO_WEIGHT
        ess               the mean effective sample size of a batch's weights
                          (effective_sample_size), with its standard error ess_stderr

    with g the true gradient (exact, length_true_grad). Exact while the V**T responses
    can be listed (T <= 6: sums weighted by pi_infer(y), rmse_stderr 0); else Monte
    Carlo over n_batches batches drawn with seed LENGTH_SEED, with the standard error
    of the rmse. The ESS is a mean over sampled batches at every T, with its standard
    error: the n_batches, or at T <= 6 ESS_BATCHES drawn from the listed responses (the
    mean of a ratio over 4,096**batch_size batches cannot be listed; 32 batches of
    heavy-tailed weights can miss by 3 standard errors). Returns
    dict(method="exact" or "monte_carlo", schemes={scheme: {...}}).
    """
    at_least("mismatch", mismatch, 0)
    whole_at_least("T", T, 1)
    whole_at_least("batch_size", batch_size, 1)
    whole_at_least("n_batches", n_batches, 2)
    one_of("noise", noise, NOISES)
    g, mean_zeros = length_true_grad(T)
    infer_logits = THETA + mismatch * PERTURBATIONS[noise]
    rng = np.random.default_rng(LENGTH_SEED)
    if V**T <= len(SEQUENCES):
        sequences = np.array(list(itertools.product(range(V), repeat=T)))
        responses = length_responses(sequences, infer_logits, mean_zeros)
        q = np.exp(responses[1].sum(axis=1))  # pi_infer(y)
        draws = rng.choice(len(sequences), size=(ESS_BATCHES, batch_size), p=q / q.sum())
        return enumerated_stats(weight_functions, pg_estimate, g, batch_size, responses, draws)
    sequences = sample_responses(infer_logits, n_batches * batch_size, T, rng)
    batches = [
        length_responses(batch, infer_logits, mean_zeros)
        for batch in np.split(sequences, n_batches)
    ]
    return sampled_stats(weight_functions, pg_estimate, g, batches)


def enumerated_stats(weight_functions, pg_estimate, g, batch_size, responses, draws):
    """length_stats by exact sums over every response y, weighted by pi_infer(y); the ESS
    over the sampled batches `draws` (n_batches, batch_size) of response numbers."""
    logp_train, logp_infer, pairs, rewards = responses
    q = np.exp(logp_infer.sum(axis=1))
    out = {}
    for scheme, weights_of in weight_functions.items():
        w = np.asarray(weights_of(logp_train, logp_infer), dtype=float)
        each = pair_estimates(pg_estimate, rewards, pair_sums(pairs, w))
        mean = q @ each
        variance = (q @ (each**2).sum(axis=1) - mean @ mean) / batch_size
        mse = np.sum((mean - g) ** 2) + variance
        ess, ess_stderr = mean_and_stderr(effective_sample_size(w[draws]))
        out[scheme] = dict(
            rmse=float(np.sqrt(mse) / np.linalg.norm(g)),
            rmse_stderr=0.0,
            cosine=cosine(mean, g),
            zero_weight_share=float(q @ (w < ZERO_WEIGHT).mean(axis=1)),
            ess=ess,
            ess_stderr=ess_stderr,
        )
    return dict(method="exact", schemes=out)


def sampled_stats(weight_functions, pg_estimate, g, batches):
    """length_stats by Monte Carlo: each batch drawn from pi_infer gives one estimate."""
    out, norm = {}, np.linalg.norm(g)
    for scheme, weights_of in weight_functions.items():
        estimates, zero_shares = [], []
        sizes: list[float] = []  # one ESS per batch
        for logp_train, logp_infer, pairs, rewards in batches:
            w = np.asarray(weights_of(logp_train, logp_infer), dtype=float)
            estimates.append(estimates_by_pair(pg_estimate, rewards, pairs, w))
            zero_shares.append(np.mean(w < ZERO_WEIGHT))
            sizes.append(float(effective_sample_size(w)))
        squared = np.sum((np.array(estimates) - g) ** 2, axis=1) / norm**2
        rmse = np.sqrt(squared.mean())
        # standard error of the mean squared error, carried to its square root
        stderr = squared.std(ddof=1) / np.sqrt(len(squared)) / (2 * rmse)
        ess, ess_stderr = mean_and_stderr(sizes)
        out[scheme] = dict(
            rmse=float(rmse),
            rmse_stderr=float(stderr),
            cosine=cosine(np.mean(estimates, axis=0), g),
            zero_weight_share=float(np.mean(zero_shares)),
            ess=ess,
            ess_stderr=ess_stderr,
        )
    return dict(method="monte_carlo", schemes=out)


def effective_sample_size(weights: np.ndarray) -> float | np.ndarray:
    """Kish's effective sample size of one batch's (N, T) weights, counted in responses:

        ESS = (sum of all N * T weights)^2 / (T * sum of their squares)

    With sequence-level weights (the T tokens of response i share its weight W_i) this
    is (sum_i W_i)^2 / sum_i W_i^2: N when all are equal, 1 when one response carries
    the batch. Token-level weights can score below 1 (one token carries the batch: 1/T).
    0 when every weight is 0. It depends only on the weights' ratios, so they are scaled
    by their largest first (sequence weights like e^-400 would square to 0). Several
    batches at once, (B, N, T), give B sizes.
    Example, T = 1: W = 1, 1, 1, 1 -> 4; 1, 0, 0, 0 -> 1; 3, 1 -> 16 / 10 = 1.6.
    """
    w = np.asarray(weights, dtype=float)
    largest = w.max(axis=(-2, -1), keepdims=True)
    w = w / np.where(largest > 0, largest, 1.0)  # an all-zero batch stays 0
    squares = (w**2).sum(axis=(-2, -1))
    size = w.sum(axis=(-2, -1)) ** 2 / (w.shape[-1] * np.where(squares > 0, squares, 1.0))
    return float(size) if size.ndim == 0 else size


def mean_and_stderr(values: ArrayLike) -> tuple[float, float]:
    """(mean, standard error of the mean) of a list of at least two numbers."""
    array = np.asarray(values, dtype=float)
    return float(array.mean()), float(array.std(ddof=1) / np.sqrt(len(array)))


def sequence_ess_limit(
    T: int, mismatch: float, batch_size: int = 64, noise: str = "student_t"
) -> float:
    """N * E[W]^2 / E[W^2] for the sequence IS weights W = pi_train(y) / pi_infer(y) of
    responses y ~ pi_infer of T tokens, N = batch_size: the ESS of a batch once N is large
    (the sums in effective_sample_size are then N times the means). Exact, by dynamic
    programming: E[W] = 1, and E[W^2] = sum over y of pi_train(y)^2 / pi_infer(y), a
    product over tokens, so a sum over paths of the bigram with step weights
    M[a, b] = p(b | a)^2 / q(b | a):  E[W^2] = M[START] @ M[:V]^(T - 1) @ 1.
    Example: mismatch 0 gives M = p, E[W^2] = 1 and batch_size.
    """
    whole_at_least("T", T, 1)
    p, q = token_probs(THETA), token_probs(THETA + mismatch * PERTURBATIONS[noise])
    M = p**2 / q
    with np.errstate(over="ignore"):  # E[W^2] past float64 (T x KL in the hundreds): ESS 0
        second_moment = M[START] @ np.linalg.matrix_power(M[:V], T - 1) @ np.ones(V)
    return float(batch_size / second_moment)


PAIR_BLOCK = block_diagonal(np.broadcast_to(PAIR_GRADS, (BLOCK, D, D)))  # built once


# ---------------------------------------------------------------- printed


def show(s: dict[str, Any]) -> None:
    print(
        f"Length sweep: batch of {s['batch_size']}, C = {s['C']}, {s['noise']} noise; reward: "
        "count of token 0, centred"
    )
    if s["masked_skipped"]:
        print(f"  masked schemes skipped, {s['masked_skipped']}.")
    for level in s["levels"]:
        print_length_level(level, s)


# The length sweep's schemes in two groups of four, one table each (lines <= 100 characters)
LENGTH_GROUPS = tuple(
    tuple(s.name for s in SCHEME_TABLE if s.family == family) for family in ("token", "seq")
)


def print_length_level(level: dict[str, Any], s: dict[str, Any]) -> None:
    print(
        f"  KL(pi_infer || pi_train) = {level['kl']:g} nats/token (mismatch scale "
        f"{level['mismatch']:.4f}); mean |log-ratio| {level['mean_abs_log_ratio']:.3g}/token"
    )
    batches = sorted(set(level["n_batches"]), reverse=True)
    print(
        f"    T <= 6 exact (the ESS sampled), longer T Monte Carlo, seed {LENGTH_SEED}: "
        f"{' / '.join(map(str, batches))} batches as T grows"
    )
    for key, title in (
        ("rmse", "relative RMSE, RMSE / ||true gradient|| (always 0 scores 1.0)"),
        ("rmse_stderr", "its standard error (0 where exact)"),
        ("cosine", "cosine of the mean estimate with the true gradient"),
        ("zero_weight_share", "share of token weights below 1e-6"),
        ("ess", f"mean ESS of a batch's weights, (sum w)^2 / (T sum w^2), of {s['batch_size']}"),
    ):
        print(f"    {title}")
        for group in LENGTH_GROUPS:
            print_length_table(level, key, [n for n in group if n in level["schemes"]])
    print(
        "    where each scheme collapses, as T x KL: from the last T where it held to the "
        "first where not\n    (? = not resolved: an end's sampled mean ESS is within 2 SE of "
        "the level; the ends below)"
    )
    print(
        f"    {'scheme':<12}{'mean ESS < ' + format(s['ess_share'] * s['batch_size'], 'g'):>18}"
        f"{'mean ESS < ' + format(s['ess_floor'], 'g'):>18}"
        f"{'cosine < ' + format(s['collapse_cosine'], 'g'):>18}"
    )
    for scheme, c in level["collapse"].items():
        print(
            f"    {scheme:<12}"
            + "".join(
                f"{collapse_text(c[key]):>18}" for key in ("ess_share", "ess_floor", "cosine")
            )
        )
    for scheme, c in level["collapse"].items():
        for key, label in (
            ("ess_share", "10% of the batch"),
            ("ess_floor", format(s["ess_floor"], "g")),
        ):
            ends = [
                f"{c[key][f'value_{end}']:.3g} +- {c[key][f'se_{end}']:.2g} at {c[key][end]:.3g}"
                for end in ("after", "at")
                if c[key][end] is not None
            ]
            if c[key]["at"] is not None and not c[key]["resolved"]:
                print(f"    {scheme} below {label}? mean ESS " + ", then ".join(ends))
    for scheme, c in level.get("collapse_exact", {}).items():
        print(
            f"    {scheme} by its exact large-batch ESS: < "
            f"{format(s['ess_share'] * s['batch_size'], 'g')} {collapse_text(c['ess_share'])}, "
            f"< {format(s['ess_floor'], 'g')} {collapse_text(c['ess_floor'])}"
        )


def print_length_table(level: dict[str, Any], key: str, schemes: Sequence[str]) -> None:
    """One metric of a level for up to four schemes, against T; the ESS of the sequence
    schemes with its two predictions for sequence IS (lognormal, exact large-batch)."""
    stderr = {"rmse": "rmse_stderr", "ess": "ess_stderr"}.get(key)
    width = 14 if stderr else 11
    extra = key == "ess" and "seq" in schemes
    print(
        f"    {'T':>6}{'T x KL':>8}"
        + "".join(f"{name:>{width}}" for name in schemes)
        + (f"{'lognormal':>11}{'seq exact':>11}" if extra else "")
    )
    for i, T in enumerate(level["T"]):
        stats = [level["schemes"][name] for name in schemes]
        cells = [f"{v[key][i]:.3g}" + (f"+-{v[stderr][i]:.2g}" if stderr else "") for v in stats]
        line = f"    {T:>6}{level['T_kl'][i]:>8.3g}" + "".join(f"{c:>{width}}" for c in cells)
        if extra:
            line += f"{level['ess_lognormal'][i]:>11.3g}{level['ess_limit'][i]:>11.3g}"
        print(line)


def collapse_text(c: dict[str, Any]) -> str:
    """ "0.96 to 1.92", "<= 0.16" (already at the first T) or "none to 16.4"; "?" after a
    crossing that the sampling noise does not resolve."""
    if c["at"] is None:
        return f"none to {c['after']:.3g}"
    text = f"{c['after']:.3g} to {c['at']:.3g}" if c["after"] is not None else f"<= {c['at']:.3g}"
    return text + (" ?" if not c.get("resolved", True) else "")


# ---------------------------------------------------------------- drawn

# The length sweep's panels: the ESS and cosine of the sequence-level schemes, the cosine of
# the token-level ones (at most four schemes a panel), one row per KL level
TOKEN_LEVEL, SEQUENCE_LEVEL = LENGTH_GROUPS
LENGTH_PANELS = (
    ("ess", SEQUENCE_LEVEL, "Sequence-level weights: ESS of a batch"),
    ("cosine", SEQUENCE_LEVEL, "Sequence-level: cosine of the mean estimate"),
    ("cosine", TOKEN_LEVEL, "Token-level: cosine of the mean estimate"),
)


def draw(results: dict[str, Any], path: Path) -> None:
    """Save the --length-sweep figure: one row per KL level (a level of KL 0 has no place on a
    T x KL axis: it is printed only), the panels of LENGTH_PANELS against T x KL."""
    from matplotlib.figure import Figure

    s = results["length_sweep"]
    levels = [level for level in s["levels"] if level["kl"] > 0] if s else []
    why = results["unavailable"][LABEL] if s is None else "KL 0: no T x KL axis (printed only)"
    fig = Figure(figsize=(17, 4.6 * max(1, len(levels))))
    axes = fig.subplots(max(1, len(levels)), len(LENGTH_PANELS), squeeze=False)
    fig.subplots_adjust(
        left=0.05,
        right=0.99,
        top=1 - 0.55 / fig.get_figheight(),
        bottom=0.6 / fig.get_figheight(),
        wspace=0.25,
        hspace=0.45,
    )
    for row, level in zip(axes, levels or [None]):
        for ax, (key, schemes, title) in zip(row, LENGTH_PANELS):
            if level is None:
                placeholder(ax, why)
                ax.set_title(f"{title} (Task {TASK})")
            else:
                ax.set_title(f"{title}, KL {level['kl']:g}", fontsize=10)
                length_panel(s, level, key, [n for n in schemes if n in level["schemes"]], ax)
    fig.savefig(path, dpi=90)


def length_panel(
    s: dict[str, Any], level: dict[str, Any], key: str, schemes: Sequence[str], ax: Axes
) -> None:
    """One metric of one KL level against T x KL, a line per scheme (with its standard error
    as a band, where sampled); on the ESS panel also the lognormal prediction and the exact
    large-batch ESS of sequence IS, and the collapse levels."""
    from matplotlib.ticker import FuncFormatter

    x, lines = level["T_kl"], []
    for scheme in schemes:
        stats = level["schemes"][scheme]
        y = stats[key]
        lines += ax.plot(
            x, y, color=COLORS[scheme], marker=MARKERS[scheme], markersize=5, label=LABELS[scheme]
        )
        if key == "ess":
            low = [max(v - 2 * e, 1e-3) for v, e in zip(y, stats["ess_stderr"])]
            ax.fill_between(
                x,
                low,
                [v + 2 * e for v, e in zip(y, stats["ess_stderr"])],
                color=COLORS[scheme],
                alpha=0.15,
                linewidth=0,
            )
    ax.set_xscale("log")
    if key == "ess":
        N, bottom = s["batch_size"], 0.3
        for name, style, label in (
            ("ess_lognormal", "--", "lognormal N e^(-2 T KL)"),
            ("ess_limit", ":", "seq IS, exact, large N"),
        ):
            # drawn down to the first point under the frame, so its name sits by its end
            shown = next((i + 1 for i, v in enumerate(level[name]) if v < bottom), len(x))
            lines += ax.plot(
                x[:shown],
                level[name][:shown],
                color="gray" if style == "--" else "black",
                linestyle=style,
                label=label,
            )
        for share in (s["ess_share"] * N, s["ess_floor"]):
            ax.axhline(share, color="gray", linewidth=0.8, alpha=0.6)
        ax.set_yscale("log")
        ax.set_ylim(bottom, 1.5 * N)
        ax.set_ylabel(f"ESS, of a batch of {N} (bands: 2 standard errors)")
        ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    else:
        ax.axhline(s["collapse_cosine"], color="gray", linewidth=0.8, alpha=0.6)
        ax.set_ylim(-0.05, 1.05)
        ax.set_ylabel("cos(mean estimate, true gradient)")
    log_ticks(ax.xaxis)
    ax.set_xlabel(f"T x KL (T = {level['T'][0]:,} to {level['T'][-1]:,})")
    label_ends(ax, lines, fontsize=8)
