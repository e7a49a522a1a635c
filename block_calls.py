"""Many one-response estimates from a few calls of pg_estimate (given): a speed trick.

The toy needs g(y), what pg_estimate gives on a batch of response y alone, for each of
its 782 rewarded responses, and the experiments that train it need one estimate per run.
One call each would be 782 calls per exact_stats. Instead one call gets b responses
whose gradients sit in separate blocks of a b * D parameter vector (block_diagonal): the
batch average then holds g(y_j) / b in block j, so one call gives b one-response
estimates, the same numbers as b calls. Example, b = 2, D = 1: grad_logp rows [[g0, 0]]
and [[0, g1]] -> mean [g0 / 2, g1 / 2].
"""

from collections.abc import Callable

import numpy as np

from lab.input_checks import ContractError

BLOCK = 16  # responses per call of pg_estimate in one_response_estimates


def block_diagonal(grad_logp: np.ndarray) -> np.ndarray:
    """(b, n, b * D) gradients for b responses of n tokens: response j's D numbers in block
    j of a b * D parameter vector, zeros elsewhere. Example, b = 2, D = 1, n = 1:
    [[g0]], [[g1]] -> [[[g0, 0]], [[0, g1]]]."""
    b, n, D = grad_logp.shape
    grad = np.zeros((b, n, b, D))
    grad[np.arange(b), :, np.arange(b)] = grad_logp  # response j -> block j
    grad.setflags(write=False)
    return grad.reshape(b, n, b * D)


def blocks(grad_logp: np.ndarray) -> list[np.ndarray]:
    """The (N, T, D) gradients of N responses, BLOCK responses at a time, each block
    block-diagonal: what one_response_estimates takes (built once, as they do not change)."""
    return [block_diagonal(grad_logp[i : i + BLOCK]) for i in range(0, len(grad_logp), BLOCK)]


def one_response_estimates(
    pg_estimate: Callable, rewards: np.ndarray, grads: list[np.ndarray], weights: np.ndarray
) -> np.ndarray:
    """(N, D): what pg_estimate gives on a batch of each of N responses alone, from their
    rewards (N,), their gradients as `blocks` gives them and their weights (N, T)."""
    return np.concatenate(
        [
            block_estimates(pg_estimate, rewards[i : i + BLOCK], grad, weights[i : i + BLOCK])
            for i, grad in zip(range(0, len(rewards), BLOCK), grads)
        ]
    )


def block_estimates(
    pg_estimate: Callable, rewards: np.ndarray, grad: np.ndarray, weights: np.ndarray
) -> np.ndarray:
    """One call of pg_estimate on b responses in their own blocks (block_diagonal): the
    (b, D) one-response estimates, b times the blocks of the batch average. The answer is
    checked here, as the callers pass pg_estimate without its own checks."""
    b, width = len(rewards), grad.shape[-1]
    out = np.asarray(pg_estimate(rewards, grad, weights))
    if out.shape != (width,) or out.dtype.kind not in "biuf":
        raise ContractError(
            f"pg_estimate (Task 3b) on {b} responses with D = {width} "
            f"parameters returned {out.dtype} numbers of shape "
            f"{out.shape}; it must return one real number per parameter, "
            f"shape ({width},)"
        )
    return out.reshape(b, width // b) * b
