# Your file for Task 3. Fill in each TODO, then run `python -m pytest -q -k task3`.
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

from lab import TaskNotDone, contracts
from lab.input_checks import checked


@checked(contracts.importance_weights, returns=contracts.token_weights)
def importance_weights(logp_train, logp_infer, scheme, C=2.0):
    """Per-token weights (N, T) for one of five schemes:

        "none"       1                       (ignore the mismatch: biased)
        "token"      w_t                     (per-token IS)
        "token_tis"  min(w_t, C)             (per-token truncated IS)
        "seq"        prod_s w_s, every token (sequence IS: unbiased, noisy)
        "seq_tis"    min(prod_s w_s, C)      (sequence truncated IS)

    Truncation caps a weight from above only: a weight below 1 is kept.
    Products of many ratios overflow or underflow, so work with logs:
    prod_s w_s = exp(sum_s log w_s), and min(x, C) = exp(min(log x, log C)).
    Log-probabilities may be as low as -1000 (a token's rarely is, a response's
    summed log-probability often is), and exp(-1000) is 0 in float64: take the
    difference logp_train - logp_infer first, exponentiate only at the end.

    Weights from e**-700 to e**700 come out exact (to rounding): no clamping of the
    log-ratios. Past e**709.78 float64 overflows and inf is the honest answer for
    "token" and "seq"; the truncated schemes give C there.

    Example: logp_train - logp_infer = [[log 4, log 1/4, log 1]], C = 2:
      token     -> [[4, 0.25, 1]]      token_tis -> [[2, 0.25, 1]]
      seq       -> [[1, 1, 1]]         seq_tis   -> [[1, 1, 1]]

    Returns a new (N, T) np.ndarray of float64 (any byte order or memory layout), also for
    N = 1 or T = 1; logp_train and logp_infer are not changed. Checked above it: real (not
    complex) arrays of one shape, a known scheme, C >= 1; and afterwards, that the answer
    is such an array (a list or float32 numbers are refused).
    """
    # TODO (Task 3a): start from log_w = logp_train - logp_infer; exponentiate last.
    raise TaskNotDone("3a")


@checked(contracts.pg_estimate, returns=contracts.gradient)
def pg_estimate(rewards, grad_logp, weights):
    """REINFORCE with weighted token terms, averaged over the batch: a (D,) array

        g = (1/N) sum_n r_n sum_t w_nt * grad log pi_train(y_nt | y_n,<t)

    Example: one sequence (N = 1) of two tokens, D = 1: r = [3],
    grad_logp = [[[1], [3]]], weights = [[1, 0.5]] -> 3 * (1*1 + 0.5*3) = [7.5].

    Returns a (D,) np.ndarray of float64 (any byte order or memory layout), also for N,
    T or D = 1. The rewards are used
    as they are (no baseline is subtracted here), and the inputs are not changed.
    Checked above it: real arrays of matching shapes (and afterwards, that the answer
    is a (D,) array of float64: a list or float32 numbers are refused).
    """
    # TODO (Task 3b): broadcast rewards to (N, 1, 1) and weights to (N, T, 1).
    raise TaskNotDone("3b")


@checked(contracts.masked_weights, returns=contracts.token_weights)
def masked_weights(logp_train, logp_infer, level, low=0.5, high=2.0):
    """Task 3c (optional): masking. Per-token weights (N, T) that reject instead of truncate:
    a ratio inside the band [low, high] (edges included) is kept as it is, one outside
    gives weight 0, so that token or response adds nothing to the gradient.

        "token"  w_t on token t if low <= w_t <= high, else 0
        "seq"    prod_s w_s on every token if low <= prod_s w_s <= high, else 0
        "geo"    (prod_s w_s)**(1/T), the geometric mean of the response's ratios,
                 on every token if it lies in the band, else 0

    Work in log space, as in Task 3a, and compare there too: log(low) <= log w <= log(high).
    A product over thousands of tokens overflows; its logarithm does not. Log-probabilities
    may be as low as -1000, where exp() gives 0 in float64. low = 0 means no lower bound
    (log 0 = -inf): every ratio up to high is kept, however small (e**-30 = 9.4e-14 and
    e**-700 = 9.9e-305 as they are, not 0). On the edges only the log-space test is exact:
    exp(log 3) is 3.0000000000000004 in float64, so a ratio on the edge high = 3 is kept,
    though exp(log w) <= 3 would reject it.

    Returns a new (N, T) np.ndarray of float64 (checked afterwards, as in Task 3a).

    Example: logp_train - logp_infer = [[log 4, log 1/4, log 1]], band [0.5, 2]:
      token -> [[0, 0, 1]]      seq -> [[1, 1, 1]]      geo -> [[1, 1, 1]]
    """
    # TODO (Task 3c): one log-ratio per token; for "seq" their sum, for "geo" their mean, on every token.
    # TODO (Task 3c): keep it where log(low) <= it <= log(high) (edges included); exactly 0 elsewhere.
    raise TaskNotDone("3c")
