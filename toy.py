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
"""
import itertools

import numpy as np

from lab.input_checks import at_least, one_of, whole_at_least

V, T = 4, 6
D = (V + 1) * V
START = V  # the row of theta used for the first token
NOISES = ("student_t", "gaussian")

_rng = np.random.default_rng(1)
THETA = _rng.normal(0.0, 1.0, size=(V + 1, V))
# The perturbation b, drawn once. Student-t with 3 degrees of freedom has heavy
# tails: most logits are off by a little, a few by a lot. "gaussian" is the
# light-tailed control (try it: run.py --noise gaussian).
PERTURBATIONS = {"student_t": _rng.standard_t(3, size=(V + 1, V)),
                 "gaussian": _rng.normal(0.0, 1.0, size=(V + 1, V))}

SEQUENCES = np.array(list(itertools.product(range(V), repeat=T)))  # (4096, T)
_PREV = np.concatenate([np.full((len(SEQUENCES), 1), START), SEQUENCES[:, :-1]], axis=1)


def reward(sequences):
    """1 for a response that ends in token 0 and holds at least two 0s, else 0."""
    return ((sequences[:, -1] == 0) & ((sequences == 0).sum(axis=1) >= 2)).astype(float)


def token_logprobs(logits):
    """log pi(y_t | y_<t) for every token of every sequence: (4096, T)."""
    log_softmax = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    return log_softmax[_PREV, SEQUENCES]


def grad_logprobs(logits):
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


def sequence_probs(logits):
    """pi(y) for all 4,096 responses; they sum to 1."""
    return np.exp(token_logprobs(logits).sum(axis=1))


REWARDS = reward(SEQUENCES)
LOGP_TRAIN = token_logprobs(THETA)
GRAD_LOGP = grad_logprobs(THETA)
# The true policy gradient: sum over y of pi_train(y) r(y) grad log pi_train(y).
TRUE_GRAD = np.einsum("n,ntd->d", sequence_probs(THETA) * REWARDS, GRAD_LOGP)
for _table in (THETA, SEQUENCES, REWARDS, LOGP_TRAIN, GRAD_LOGP, TRUE_GRAD):
    _table.setflags(write=False)  # code that changes its inputs in place fails at once


BLOCK = 16  # responses per call of pg_estimate in one_response_estimates


def one_response_estimates(pg_estimate, rows, weights):
    """The one-response estimates g(y) of the responses `rows`, a (len(rows), D) array:
    what pg_estimate gives on a batch of that response alone, for BLOCK responses per
    call instead of one.

    A call gets b responses whose gradients sit in separate blocks of a b * D parameter
    vector: response j's in block j, zeros elsewhere. The batch average then holds
    g(y_j) / b in block j, so one call gives b one-response estimates. Example, b = 2,
    D = 1: grad_logp rows [[g0, 0]] and [[0, g1]] -> mean [g0 / 2, g1 / 2].
    """
    g = []
    for start in range(0, len(rows), BLOCK):
        block = rows[start:start + BLOCK]
        b = len(block)
        grad = np.zeros((b, T, b, D))
        grad[np.arange(b), :, np.arange(b)] = GRAD_LOGP[block]  # response j -> block j
        out = np.asarray(pg_estimate(REWARDS[block], grad.reshape(b, T, b * D), weights[block]))
        if out.shape != (b * D,):
            raise ValueError(f"pg_estimate on {b} responses with D = {b * D} parameters returned "
                             f"shape {out.shape}; it must return one number per parameter, "
                             f"shape ({b * D},)")
        g.append(out.reshape(b, D) * b)
    return np.concatenate(g)


def exact_stats(importance_weights, pg_estimate, scheme, mismatch, C=2.0, batch_size=64,
                noise="student_t"):
    """Exact bias, variance and RMSE of the batch gradient estimate.

    The inference engine samples batch_size responses y ~ pi_infer, and the
    estimate is pg_estimate over the batch with importance_weights(..., scheme, C):
    the two functions of Task 3, passed in.
    That estimate is the mean of batch_size independent one-response estimates
    g(y), so with every expectation an exact sum over the 4,096 responses:

        bias     = || E[g(y)] - true gradient ||          (does not shrink with batch_size)
        variance = (E ||g(y)||^2 - ||E[g(y)]||^2) / batch_size
        rmse     = sqrt(bias^2 + variance)

    Returns a dict with keys bias, variance, rmse (floats).
    """
    at_least("mismatch", mismatch, 0)
    whole_at_least("batch_size", batch_size, 1)
    one_of("noise", noise, NOISES)
    logp_infer = token_logprobs(THETA + mismatch * PERTURBATIONS[noise])
    q = np.exp(logp_infer.sum(axis=1))  # pi_infer(y), the sampling probability
    weights = np.asarray(importance_weights(LOGP_TRAIN, logp_infer, scheme, C), dtype=float)

    def estimate(batch):  # pg_estimate on the responses with these indices
        return np.asarray(pg_estimate(REWARDS[batch], GRAD_LOGP[batch], weights[batch]))

    # g(y) for every response: the estimate a batch of that one response gives.
    # A response with reward 0 gives g(y) = 0, so only the rewarded ones matter.
    rewarded = np.flatnonzero(REWARDS)
    g = one_response_estimates(pg_estimate, rewarded, weights)
    q = q[rewarded]
    # The formulas assume pg_estimate averages over its batch: on batch_size
    # copies of one response it must give that response's estimate back.
    copies = estimate([rewarded[0]] * batch_size)
    if not np.allclose(copies, g[0]):
        raise ValueError(f"pg_estimate on {batch_size} copies of one response gave "
                         f"{np.linalg.norm(copies) / np.linalg.norm(g[0]):.4g} times the estimate "
                         "of that response alone; it must average over the batch, not sum")
    mean = q @ g
    bias = float(np.linalg.norm(mean - TRUE_GRAD))
    variance = float(q @ (g**2).sum(axis=1) - mean @ mean) / batch_size
    return dict(bias=bias, variance=variance, rmse=float(np.sqrt(bias**2 + variance)))
