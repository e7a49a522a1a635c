"""A language model small enough to enumerate (given), for Task 3.

Vocabulary of V = 4 tokens, responses of exactly T = 6 tokens: 4**6 = 4,096
possible responses, so every expectation below is an exact sum over all of
them, not a Monte Carlo guess.

The trainer's policy pi_train is a bigram model: the logits of token t are
theta[y_{t-1}] (row V stands for the start of the response), so there are
D = (V + 1) * V = 20 parameters. The inference engine samples from pi_infer,
whose logits are theta + mismatch * b for a fixed perturbation b. With
mismatch = 0 the two agree exactly.

exact_stats(importance_weights, pg_estimate, scheme, mismatch, ...) returns the
bias, variance and RMSE of the gradient estimate that the two functions you pass
in (yours from tis.py, or the reference's) produce.

The helpers at the bottom (the bigram's probabilities, sampling, estimates by token
pair) are shared by the experiments that train the toy or lengthen its responses
(experiments/training.py, experiments/length_sweep.py).
"""

import itertools
from collections.abc import Callable

import numpy as np

import block_calls
from lab.input_checks import ContractError, at_least, at_most, one_of, unchecked, whole_at_least

V, T = 4, 6
D = (V + 1) * V
START = V  # the row of theta used for the first token
NOISES = ("student_t", "gaussian")

_rng = np.random.default_rng(1)
THETA = _rng.normal(0.0, 1.0, size=(V + 1, V))
# The perturbation b, drawn once. Student-t with 3 degrees of freedom has heavy
# tails: most logits are off by a little, a few by a lot. "gaussian" is the
# light-tailed control (try it: run.py --noise gaussian).
PERTURBATIONS = {
    "student_t": _rng.standard_t(3, size=(V + 1, V)),
    "gaussian": _rng.normal(0.0, 1.0, size=(V + 1, V)),
}

# Upper bounds of exact_stats's arguments (run.py's flags use them too). Beyond
# MAX_MISMATCH the sequence weights overflow float64; batch_size only divides
# the variance, so its bound just keeps the numbers meaningful.
MAX_MISMATCH = 10.0
MAX_BATCH_SIZE = 10**6
# The averaging check below runs pg_estimate on this many copies of one response.
N_COPIES = 3

SEQUENCES = np.array(list(itertools.product(range(V), repeat=T)))  # (4096, T)
_PREV = np.concatenate([np.full((len(SEQUENCES), 1), START), SEQUENCES[:, :-1]], axis=1)


def reward(sequences: np.ndarray) -> np.ndarray:
    """1 for a response that ends in token 0 and holds at least two 0s, else 0."""
    return ((sequences[:, -1] == 0) & ((sequences == 0).sum(axis=1) >= 2)).astype(float)


def token_logprobs(logits: np.ndarray) -> np.ndarray:
    """log pi(y_t | y_<t) for every token of every sequence: (4096, T)."""
    log_softmax = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    return log_softmax[_PREV, SEQUENCES]


def grad_logprobs(logits: np.ndarray) -> np.ndarray:
    """d log pi(y_t | y_<t) / d theta for every token: (4096, T, D).

    For a softmax row, d log p[y] / d logits = onehot(y) - p; only the row
    y_{t-1} of theta is involved.
    """
    p = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    grad = np.zeros((len(SEQUENCES), T, V + 1, V))
    n, t = np.indices(SEQUENCES.shape)
    grad[n, t, _PREV] = -p[_PREV]
    grad[n, t, _PREV, SEQUENCES] += 1.0
    return grad.reshape(len(SEQUENCES), T, D)


def sequence_probs(logits: np.ndarray) -> np.ndarray:
    """pi(y) for all 4,096 responses; they sum to 1."""
    return np.exp(token_logprobs(logits).sum(axis=1))


REWARDS = reward(SEQUENCES)
LOGP_TRAIN = token_logprobs(THETA)
GRAD_LOGP = grad_logprobs(THETA)
# The true policy gradient: sum over y of pi_train(y) r(y) grad log pi_train(y).
TRUE_GRAD = np.einsum("n,ntd->d", sequence_probs(THETA) * REWARDS, GRAD_LOGP)
for _table in (THETA, SEQUENCES, REWARDS, LOGP_TRAIN, GRAD_LOGP, TRUE_GRAD):
    _table.setflags(write=False)  # code that changes its inputs in place fails at once


REWARDED = np.flatnonzero(REWARDS)  # a response with reward 0 has the estimate g(y) = 0
# The rewarded responses' gradients as block_calls.one_response_estimates takes them.
REWARDED_BLOCKS = block_calls.blocks(GRAD_LOGP[REWARDED])


def exact_stats(
    importance_weights: Callable,
    pg_estimate: Callable,
    scheme: str,
    mismatch: float,
    C: float = 2.0,
    batch_size: int = 64,
    noise: str = "student_t",
) -> dict[str, float]:
    """Exact bias, variance and RMSE of the batch gradient estimate.

    The inference engine samples batch_size responses y ~ pi_infer, and the
    estimate is pg_estimate over the batch with importance_weights(..., scheme, C):
    the two functions of Task 3, passed in.
    That estimate is the mean of batch_size independent one-response estimates
    g(y), so with every expectation an exact sum over the 4,096 responses:

        bias     = || E[g(y)] - true gradient ||          (does not shrink with batch_size)
        variance = (E ||g(y)||^2 - ||E[g(y)]||^2) / batch_size
        rmse     = sqrt(bias^2 + variance)

    Returns a dict with keys bias, variance, rmse (floats). Bounds: mismatch <= 10,
    batch_size <= 10**6.
    """
    check_stats_arguments(mismatch, batch_size, noise)
    q, g = response_estimates(
        importance_weights, pg_estimate, scheme, THETA + mismatch * PERTURBATIONS[noise], C
    )
    mean = q @ g
    bias = float(np.linalg.norm(mean - TRUE_GRAD))
    variance = float(q @ (g**2).sum(axis=1) - mean @ mean) / batch_size
    return dict(bias=bias, variance=variance, rmse=float(np.sqrt(bias**2 + variance)))


def response_estimates(
    importance_weights: Callable,
    pg_estimate: Callable,
    scheme: str,
    sampler_logits: np.ndarray,
    C: float = 2.0,
) -> tuple[np.ndarray, np.ndarray]:
    """(q, g) for the rewarded responses when the policy with logits `sampler_logits`
    samples and the trainer (THETA) learns: q (len(REWARDED),) their sampling
    probabilities, g (len(REWARDED), D) their one-response estimates g(y), from
    pg_estimate with importance_weights(LOGP_TRAIN, logp_sampler, scheme, C).
    A response with reward 0 gives g(y) = 0, so only the rewarded ones matter.
    """
    logp_sampler = token_logprobs(sampler_logits)
    q = np.exp(logp_sampler[REWARDED].sum(axis=1))  # pi_sampler(y) of each rewarded y
    weights = np.asarray(importance_weights(LOGP_TRAIN, logp_sampler, scheme, C), dtype=float)
    check_averages(pg_estimate, weights)
    return q, one_response_estimates(pg_estimate, weights)


def one_response_estimates(pg_estimate: Callable, weights: np.ndarray) -> np.ndarray:
    """g(y) for the rewarded responses, (len(REWARDED), D): what pg_estimate gives on a batch
    of that response alone, with its rows of `weights` (N, T).

    The calls are made block_calls.BLOCK responses at a time (the same numbers from
    fewer calls), without pg_estimate's @checked input checks: the toy made these float
    arrays itself, and checking them on each of the 49 calls would cost a quarter of the
    time. Each answer is still checked.
    """
    return block_calls.one_response_estimates(
        unchecked(pg_estimate), REWARDS[REWARDED], REWARDED_BLOCKS, weights[REWARDED]
    )


# ---------------------------------------------------------------- the checks of the above


def check_stats_arguments(mismatch: float, batch_size: int, noise: str) -> None:
    """A ValueError naming the first of exact_stats's arguments out of bounds."""
    at_least("mismatch", mismatch, 0)
    at_most("mismatch", mismatch, MAX_MISMATCH, "beyond it the sequence weights overflow")
    whole_at_least("batch_size", batch_size, 1)
    at_most("batch_size", batch_size, MAX_BATCH_SIZE, "a bigger batch only shrinks the variance")
    one_of("noise", noise, NOISES)


def check_averages(pg_estimate: Callable, weights: np.ndarray) -> None:
    """A ContractError unless pg_estimate averages over its batch, as the formulas of
    exact_stats assume: on a few copies of one response it must give that response's
    estimate back. (A few, not batch_size: the check must not cost memory or time for a
    large batch.)"""

    def estimate(batch):  # pg_estimate on the responses with these indices
        return np.asarray(pg_estimate(REWARDS[batch], GRAD_LOGP[batch], weights[batch]))

    one, copies = estimate(REWARDED[:1]), estimate([REWARDED[0]] * N_COPIES)
    if not np.allclose(copies, one):
        raise ContractError(
            f"pg_estimate (Task 3b) on {N_COPIES} copies of one response gave "
            f"{np.linalg.norm(copies) / np.linalg.norm(one):.4g} times that response's own "
            "estimate; it must average over the batch (divide by N), not sum"
        )


# ---------------------------------------------------------------- shared by the experiments
#
# The bigram's probabilities, estimates of responses given by token pair, and sampling:
# the training loop (experiments/training.py) and the length sweep
# (experiments/length_sweep.py) build on them.


def token_probs(logits: np.ndarray) -> np.ndarray:
    """The bigram's next-token probabilities p(b | a): (V + 1, V), each row sums to 1."""
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def pair_grads() -> np.ndarray:
    """grad log p(b | a) for each pair number a * V + b: (D, D), row by row."""
    p = token_probs(THETA)
    grads = np.zeros((V + 1, V, V + 1, V))
    for a in range(V + 1):
        grads[a, :, a] = np.eye(V) - p[a]
    return grads.reshape(D, D)


def estimates_by_pair(
    pg_estimate: Callable, rewards: np.ndarray, pairs: np.ndarray, weights: np.ndarray
) -> np.ndarray:
    """pg_estimate on responses given as token pairs: a (D,) array.

    The estimate sums w_t * grad log p over the tokens of each response; tokens with the
    same pair have the same gradient, so the call gets D "tokens" per response, each
    carrying its pair's gradient and the summed weight of the response's tokens of that
    pair. Same estimate, and at T = 1024 some 50 times less work than passing every token.
    """
    grads = np.broadcast_to(PAIR_GRADS, (len(rewards), D, D))
    return np.asarray(pg_estimate(rewards, grads, pair_sums(pairs, weights)), dtype=float)


def pair_sums(pairs: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """(N, D): for each response, the summed weight of its tokens of each pair."""
    n = len(pairs)
    return np.bincount(
        (np.arange(n)[:, None] * D + pairs).ravel(), weights.ravel(), minlength=n * D
    ).reshape(n, D)


def sample_responses(logits: np.ndarray, n: int, T: int, rng: np.random.Generator) -> np.ndarray:
    """n responses of T tokens drawn from the bigram with these logits: (n, T) ints.
    Token t is the number of the row's cumulative probabilities that a uniform draw
    exceeds; one column of those per comparison keeps each step to a few 1-D lookups."""
    cdf = np.cumsum(token_probs(logits), axis=1)
    columns = [cdf[:, b] for b in range(V - 1)]  # the last is 1: never exceeded
    draws = rng.random((T, n))  # the same stream as T draws of n
    sequences = np.empty((T, n), dtype=int)
    prev = np.full(n, START)
    for t in range(T):
        prev = sequences[t] = sum(draws[t] > column[prev] for column in columns)
    return sequences.T


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    """cos of the angle between two vectors; 0 if one is zero."""
    norms = np.linalg.norm(a) * np.linalg.norm(b)
    return float(a @ b / norms) if norms > 0 else 0.0


PAIR_GRADS = pair_grads()
PAIR_GRADS.setflags(write=False)
