"""Task 3: truncated importance sampling (TIS) for a mismatched inference engine.

The inference engine (vLLM, SGLang, ...) samples the responses, and its
token probabilities pi_infer differ slightly from the trainer's pi_train
(other kernels, other numerics). The policy gradient is an expectation under
pi_train, so each token's term needs the importance ratio

    w_t = pi_train(y_t | y_<t) / pi_infer(y_t | y_<t) = exp(logp_train - logp_infer)

Arrays: logp_train, logp_infer and the weights are (N, T): N sequences of T
tokens. grad_logp is (N, T, D): the gradient of log pi_train(y_t | y_<t)
with respect to the D trainer parameters.
"""

import numpy as np
from numpy.typing import NDArray

from lab import contracts
from lab.input_checks import Number, checked


@checked(contracts.importance_weights, returns=contracts.token_weights)
def importance_weights(
    logp_train: NDArray[np.float64], logp_infer: NDArray[np.float64], scheme: str, C: Number = 2.0
) -> NDArray[np.float64]:
    """Per-token weights for one of five schemes, with w_t = exp(logp_train - logp_infer):

        "none"       1                       (ignore the mismatch: biased)
        "token"      w_t                     (per-token IS)
        "token_tis"  min(w_t, C)             (per-token truncated IS)
        "seq"        prod_s w_s, every token (sequence IS: unbiased, noisy)
        "seq_tis"    min(prod_s w_s, C)      (sequence truncated IS)

    Work in log space and exponentiate last: prod_s w_s = exp(sum_s log w_s), and
    min(x, C) = exp(min(log x, log C)).

    Args:
        logp_train, logp_infer (np.ndarray, shape (N, T)): each token's log-probability.
        scheme (str): one of the five above.
        C (float): the truncation cap, >= 1.

    Returns:
        np.ndarray, shape (N, T), float64: a new array (the inputs are left unchanged).

    Example: logp_train - logp_infer = [[log 4, log 1/4, log 1]], C = 2:
      token     -> [[4, 0.25, 1]]      token_tis -> [[2, 0.25, 1]]
      seq       -> [[1, 1, 1]]         seq_tis   -> [[1, 1, 1]]
    """
    # BEGIN SOLUTION task3a
    # HINT: start from log_w = logp_train - logp_infer; exponentiate last.
    log_w = logp_train - logp_infer
    if scheme == "none":
        return np.ones_like(log_w)
    if scheme in ("seq", "seq_tis"):
        # one log-ratio per sequence, repeated on each of its tokens
        log_w = np.broadcast_to(log_w.sum(axis=1, keepdims=True), log_w.shape)
    if scheme in ("token_tis", "seq_tis"):
        log_w = np.minimum(log_w, np.log(C))
    return np.exp(log_w)
    # END SOLUTION


@checked(contracts.pg_estimate, returns=contracts.gradient)
def pg_estimate(
    rewards: NDArray[np.float64], grad_logp: NDArray[np.float64], weights: NDArray[np.float64]
) -> NDArray[np.float64]:
    """REINFORCE with weighted token terms, averaged over the batch:

        g = (1/N) sum_n r_n sum_t w_nt * grad log pi_train(y_nt | y_n,<t)

    Args:
        rewards (np.ndarray, shape (N,)): r_n, used as they are (no baseline subtracted).
        grad_logp (np.ndarray, shape (N, T, D)): each token's grad log pi_train (D parameters).
        weights (np.ndarray, shape (N, T)): w_nt, from importance_weights.

    Returns:
        np.ndarray, shape (D,), float64: g (the inputs are left unchanged).

    Example: one sequence (N = 1) of two tokens, D = 1: r = [3], grad_logp = [[[1], [3]]],
    weights = [[1, 0.5]] -> 3 * (1*1 + 0.5*3) = [7.5].
    """
    # BEGIN SOLUTION task3b
    # HINT: broadcast rewards to (N, 1, 1) and weights to (N, T, 1).
    return (rewards[:, None, None] * weights[:, :, None] * grad_logp).sum(axis=1).mean(axis=0)
    # END SOLUTION


@checked(contracts.masked_weights, returns=contracts.token_weights)
def masked_weights(
    logp_train: NDArray[np.float64],
    logp_infer: NDArray[np.float64],
    level: str,
    low: Number = 0.5,
    high: Number = 2.0,
) -> NDArray[np.float64]:
    """Task 3c (optional): masking. Per-token weights that reject instead of truncate: a
    ratio inside the band [low, high] is kept as it is, one outside gives weight 0.

        "token"  w_t on token t if low <= w_t <= high, else 0
        "seq"    prod_s w_s on every token if low <= prod_s w_s <= high, else 0
        "geo"    (prod_s w_s)**(1/T), the geometric mean of the response's ratios,
                 on every token if it lies in the band, else 0

    Work in log space, as in Task 3a, and compare there too (edges included):
    log(low) <= log w <= log(high). low = 0 means no lower bound (log 0 = -inf).

    Args:
        logp_train, logp_infer (np.ndarray, shape (N, T)): as in importance_weights.
        level (str): "token", "seq" or "geo".
        low, high (float): the band's edges, 0 <= low <= 1 <= high.

    Returns:
        np.ndarray, shape (N, T), float64: a new array (the inputs are left unchanged).

    Example: logp_train - logp_infer = [[log 4, log 1/4, log 1]], band [0.5, 2]:
      token -> [[0, 0, 1]]      seq -> [[1, 1, 1]]      geo -> [[1, 1, 1]]
    """
    # BEGIN SOLUTION task3c
    # HINT: log-ratios per token; "seq" sums them, "geo" averages them, on every token.
    # HINT: keep it where log(low) <= it <= log(high) (edges in); exactly 0 elsewhere.
    log_ratio = logp_train - logp_infer
    if level == "seq":  # the log of the product, repeated on each token of the response
        log_ratio = np.broadcast_to(log_ratio.sum(axis=1, keepdims=True), log_ratio.shape)
    if level == "geo":  # the log of the geometric mean
        log_ratio = np.broadcast_to(log_ratio.mean(axis=1, keepdims=True), log_ratio.shape)
    with np.errstate(divide="ignore"):  # low = 0: log(0) = -inf, no lower bound
        inside = (np.log(low) <= log_ratio) & (log_ratio <= np.log(high))
    return np.exp(np.where(inside, log_ratio, -np.inf))  # exp(-inf) = 0, and nothing overflows
    # END SOLUTION
