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

length_stats(...) asks the same question for responses of any length T, up to
thousands of tokens (run.py --length-sweep; see the section at the bottom).
"""
import inspect
import itertools

import numpy as np

from lab.input_checks import ContractError, at_least, at_most, one_of, whole_at_least

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

# Upper bounds of exact_stats's arguments (run.py's flags use them too). Beyond
# MAX_MISMATCH the sequence weights overflow float64; batch_size only divides
# the variance, so its bound just keeps the numbers meaningful.
MAX_MISMATCH = 10.0
MAX_BATCH_SIZE = 10**6
# The averaging check below runs pg_estimate on this many copies of one response.
N_COPIES = 3

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


def block_diagonal(grad_logp):
    """(b, n, b * D) gradients for b responses of n tokens: response j's D numbers in block
    j of a b * D parameter vector, zeros elsewhere. Example, b = 2, D = 1, n = 1:
    [[g0]], [[g1]] -> [[[g0, 0]], [[0, g1]]]."""
    b, n = grad_logp.shape[:2]
    grad = np.zeros((b, n, b, D))
    grad[np.arange(b), :, np.arange(b)] = grad_logp  # response j -> block j
    grad.setflags(write=False)
    return grad.reshape(b, n, b * D)


def blocks(grad_logp):
    """The rewarded responses (a response with reward 0 has the estimate 0) in blocks of
    BLOCK, each with its block-diagonal gradients: [(rows, (b, T, b * D) array), ...]."""
    return [(rows, block_diagonal(grad_logp[rows]))
            for rows in np.split(REWARDED, range(BLOCK, len(REWARDED), BLOCK))]


REWARDED = np.flatnonzero(REWARDS)
BLOCKS = blocks(GRAD_LOGP)  # the same for every scheme and mismatch: built once


def one_response_estimates(pg_estimate, weights):
    """The one-response estimates g(y) of the rewarded responses, a (len(REWARDED), D)
    array: what pg_estimate gives on a batch of that response alone, for BLOCK
    responses per call instead of one.

    A call gets b responses whose gradients sit in separate blocks of a b * D parameter
    vector (block_diagonal). The batch average then holds g(y_j) / b in block j, so one
    call gives b one-response estimates. Example, b = 2, D = 1: grad_logp rows
    [[g0, 0]] and [[0, g1]] -> mean [g0 / 2, g1 / 2].

    These calls skip pg_estimate's @checked input checks (inspect.unwrap), as the
    simulator does: the toy made these float arrays itself, and checking them on
    each of the 49 calls would cost a quarter of the time. Each answer is still checked.
    """
    unchecked = inspect.unwrap(pg_estimate)
    return np.concatenate([block_estimates(unchecked, REWARDS[rows], grad, weights[rows])
                           for rows, grad in BLOCKS])


def block_estimates(unchecked, rewards, grad, weights):
    """One call of an unwrapped pg_estimate on b responses in their own blocks
    (block_diagonal): the (b, D) one-response estimates, b times the blocks of the batch
    average. The answer is checked here, as the call skips pg_estimate's own checks."""
    b = len(rewards)
    out = np.asarray(unchecked(rewards, grad, weights))
    if out.shape != (b * D,) or out.dtype.kind not in "biuf":
        raise ContractError(f"pg_estimate (Task 3b) on {b} responses with D = {b * D} "
                            f"parameters returned {out.dtype} numbers of shape "
                            f"{out.shape}; it must return one real number per parameter, "
                            f"shape ({b * D},)")
    return out.reshape(b, D) * b


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

    Returns a dict with keys bias, variance, rmse (floats). Bounds: mismatch <= 10,
    batch_size <= 10**6.
    """
    at_least("mismatch", mismatch, 0)
    at_most("mismatch", mismatch, MAX_MISMATCH, "beyond it the sequence weights overflow")
    whole_at_least("batch_size", batch_size, 1)
    at_most("batch_size", batch_size, MAX_BATCH_SIZE, "a bigger batch only shrinks the variance")
    one_of("noise", noise, NOISES)
    q, g = response_estimates(importance_weights, pg_estimate, scheme,
                              THETA + mismatch * PERTURBATIONS[noise], C)
    mean = q @ g
    bias = float(np.linalg.norm(mean - TRUE_GRAD))
    variance = float(q @ (g**2).sum(axis=1) - mean @ mean) / batch_size
    return dict(bias=bias, variance=variance, rmse=float(np.sqrt(bias**2 + variance)))


def response_estimates(importance_weights, pg_estimate, scheme, sampler_logits, C=2.0):
    """(q, g) for the rewarded responses when the policy with logits `sampler_logits`
    samples and the trainer (THETA) learns: q (len(REWARDED),) their sampling
    probabilities, g (len(REWARDED), D) their one-response estimates g(y), from
    pg_estimate with importance_weights(LOGP_TRAIN, logp_sampler, scheme, C).
    A response with reward 0 gives g(y) = 0, so only the rewarded ones matter.
    """
    logp_sampler = token_logprobs(sampler_logits)
    q = np.exp(logp_sampler.sum(axis=1))  # pi_sampler(y), the sampling probability
    weights = np.asarray(importance_weights(LOGP_TRAIN, logp_sampler, scheme, C), dtype=float)

    def estimate(batch):  # pg_estimate on the responses with these indices
        return np.asarray(pg_estimate(REWARDS[batch], GRAD_LOGP[batch], weights[batch]))

    # The formulas assume pg_estimate averages over its batch: on a few copies of
    # one response it must give that response's estimate back. (A few, not
    # batch_size: the check must not cost memory or time for a large batch.)
    one, copies = estimate(REWARDED[:1]), estimate([REWARDED[0]] * N_COPIES)
    if not np.allclose(copies, one):
        raise ContractError(
            f"pg_estimate (Task 3b) on {N_COPIES} copies of one response gave "
            f"{np.linalg.norm(copies) / np.linalg.norm(one):.4g} times that response's own "
            "estimate; it must average over the batch (divide by N), not sum")
    return q[REWARDED], one_response_estimates(pg_estimate, weights)


# ---------------------------------------------------------------- longer responses (run.py --length-sweep)
#
# Real responses have hundreds to thousands of tokens. The same bigram model
# (same THETA, same perturbations) writes responses of any length T, but
# reward() above saturates: over many tokens "at least two 0s" is almost
# certain, the reward then depends on the last token only, and the true
# gradient stops growing while the noise keeps growing with T. The sweep
# therefore uses a per-token reward, one point per token 0, centred by its
# mean under pi_train:
#
#     r(y) = #{t : y_t = 0} - E_train[#{t : y_t = 0}]
#
# Its spread and its true gradient both grow with T, so the relative error of
# an estimate measures the weighting scheme, not a reward that fades away.

ZERO_WEIGHT = 1e-6  # a token weight below this counts as zero (its term is lost among the others)
LENGTH_SEED = 0      # the Monte Carlo draws of the length sweep
ESS_BATCHES = 1024   # batches drawn for the ESS where the responses are listed (T <= 6)


def token_probs(logits):
    """The bigram's next-token probabilities p(b | a): (V + 1, V), each row sums to 1."""
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def length_true_grad(T):
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


def pair_grads():
    """grad log p(b | a) for each pair number a * V + b: (D, D), row by row."""
    p = token_probs(THETA)
    grads = np.zeros((V + 1, V, V + 1, V))
    for a in range(V + 1):
        grads[a, :, a] = np.eye(V) - p[a]
    return grads.reshape(D, D)


def estimates_by_pair(pg_estimate, rewards, pairs, weights):
    """pg_estimate on responses given as token pairs: a (D,) array.

    The estimate sums w_t * grad log p over the tokens of each response; tokens with the
    same pair have the same gradient, so the call gets D "tokens" per response, each
    carrying its pair's gradient and the summed weight of the response's tokens of that
    pair. Same estimate, and at T = 1024 some 50 times less work than passing every token.
    """
    grads = np.broadcast_to(PAIR_GRADS, (len(rewards), D, D))
    return np.asarray(pg_estimate(rewards, grads, pair_sums(pairs, weights)), dtype=float)


def pair_estimates(pg_estimate, rewards, summed):
    """g(y) for each response, (N, D): the estimate a batch of that one response gives, its
    tokens grouped by pair (as in estimates_by_pair). BLOCK responses per call of
    pg_estimate, each in its own block of the parameters (as one_response_estimates)."""
    out = []
    for start in range(0, len(rewards), BLOCK):
        r, w = rewards[start:start + BLOCK], summed[start:start + BLOCK]
        grads = PAIR_BLOCK if len(r) == BLOCK else block_diagonal(
            np.broadcast_to(PAIR_GRADS, (len(r), D, D)))
        out.append(np.asarray(pg_estimate(r, grads, w), dtype=float).reshape(len(r), D) * len(r))
    return np.concatenate(out)


def pair_sums(pairs, weights):
    """(N, D): for each response, the summed weight of its tokens of each pair."""
    n = len(pairs)
    return np.bincount((np.arange(n)[:, None] * D + pairs).ravel(), weights.ravel(),
                       minlength=n * D).reshape(n, D)


def sample_responses(logits, n, T, rng):
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


def per_token_kl(mismatch, noise="student_t"):
    """KL(pi_infer || pi_train) per token, in nats, for the engine's logits
    THETA + mismatch * b: each row's KL weighted by how often pi_infer visits the row in
    the long run (its stationary distribution over tokens), the limit of the sequence KL
    divided by T. Example: mismatch 0 gives 0; mismatch 0.6 gives about 0.16.
    """
    at_least("mismatch", mismatch, 0)
    p, q = token_probs(THETA), token_probs(THETA + mismatch * PERTURBATIONS[noise])
    row_kl = (q * (np.log(q) - np.log(p))).sum(axis=1)
    return float(long_run_visits(q) @ row_kl[:V])


def long_run_visits(q):
    """How often a long response from the bigram q visits each token (its stationary
    distribution, (V,), summing to 1): visits @ q[:V] = visits, one equation replaced by
    the sum."""
    system = np.vstack([(q[:V] - np.eye(V)).T[:-1], np.ones(V)])
    return np.linalg.solve(system, np.eye(V)[-1])


def mean_abs_log_ratio(mismatch, noise="student_t"):
    """E |log pi_train(y_t | y_t-1) - log pi_infer(y_t | y_t-1)| per token, tokens drawn from
    pi_infer in the long run (weighted as in per_token_kl), in nats: the mean absolute
    log-probability difference between trainer and engine, the mismatch statistic that
    RL trainers log (docs/long-responses.md compares measured ones). Example: mismatch 0
    gives 0."""
    at_least("mismatch", mismatch, 0)
    p, q = token_probs(THETA), token_probs(THETA + mismatch * PERTURBATIONS[noise])
    row_mean = (q * np.abs(np.log(p) - np.log(q))).sum(axis=1)
    return float(long_run_visits(q) @ row_mean[:V])


KL_MISMATCH = 4.0  # the KL grows with the mismatch scale from 0 up to here (both noises),
MAX_KL = 0.7       # to about 0.77 nats per token (student_t) and 1.1 (gaussian)


def mismatch_for_kl(kl, noise="student_t"):
    """The mismatch scale whose per_token_kl is `kl`, by bisection (to 1e-12 relative)
    over 0 .. KL_MISMATCH, where the KL grows with the scale."""
    at_least("kl", kl, 0)
    at_most("kl", kl, MAX_KL, f"a mismatch scale up to {KL_MISMATCH} gives it")
    low, high = 0.0, KL_MISMATCH
    while high - low > 1e-12 * high:
        middle = (low + high) / 2
        low, high = (middle, high) if per_token_kl(middle, noise) < kl else (low, middle)
    return (low + high) / 2


def length_stats(weight_functions, pg_estimate, T, mismatch, batch_size=64, noise="student_t",
                 n_batches=32):
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
    heavy-tailed weights can miss by 3 standard errors). Returns dict(method="exact" or "monte_carlo",
    schemes={scheme: {...}}).
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
    batches = [length_responses(batch, infer_logits, mean_zeros)
               for batch in np.split(sequences, n_batches)]
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
        mse = np.sum((mean - g)**2) + variance
        ess, ess_stderr = mean_and_stderr(effective_sample_size(w[draws]))
        out[scheme] = dict(rmse=float(np.sqrt(mse) / np.linalg.norm(g)), rmse_stderr=0.0,
                           cosine=cosine(mean, g),
                           zero_weight_share=float(q @ (w < ZERO_WEIGHT).mean(axis=1)),
                           ess=ess, ess_stderr=ess_stderr)
    return dict(method="exact", schemes=out)


def sampled_stats(weight_functions, pg_estimate, g, batches):
    """length_stats by Monte Carlo: each batch drawn from pi_infer gives one estimate."""
    out, norm = {}, np.linalg.norm(g)
    for scheme, weights_of in weight_functions.items():
        estimates, zero_shares, sizes = [], [], []
        for logp_train, logp_infer, pairs, rewards in batches:
            w = np.asarray(weights_of(logp_train, logp_infer), dtype=float)
            estimates.append(estimates_by_pair(pg_estimate, rewards, pairs, w))
            zero_shares.append(np.mean(w < ZERO_WEIGHT))
            sizes.append(effective_sample_size(w))
        squared = np.sum((np.array(estimates) - g)**2, axis=1) / norm**2
        rmse = np.sqrt(squared.mean())
        # standard error of the mean squared error, carried to its square root
        stderr = squared.std(ddof=1) / np.sqrt(len(squared)) / (2 * rmse)
        ess, ess_stderr = mean_and_stderr(sizes)
        out[scheme] = dict(rmse=float(rmse), rmse_stderr=float(stderr),
                           cosine=cosine(np.mean(estimates, axis=0), g),
                           zero_weight_share=float(np.mean(zero_shares)),
                           ess=ess, ess_stderr=ess_stderr)
    return dict(method="monte_carlo", schemes=out)


def effective_sample_size(weights):
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
    size = w.sum(axis=(-2, -1))**2 / (w.shape[-1] * np.where(squares > 0, squares, 1.0))
    return float(size) if size.ndim == 0 else size


def mean_and_stderr(values):
    """(mean, standard error of the mean) of a list of at least two numbers."""
    values = np.asarray(values, dtype=float)
    return float(values.mean()), float(values.std(ddof=1) / np.sqrt(len(values)))


def sequence_ess_limit(T, mismatch, batch_size=64, noise="student_t"):
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


def cosine(a, b):
    """cos of the angle between two vectors; 0 if one is zero."""
    norms = np.linalg.norm(a) * np.linalg.norm(b)
    return float(a @ b / norms) if norms > 0 else 0.0


PAIR_GRADS = pair_grads()
PAIR_GRADS.setflags(write=False)
PAIR_BLOCK = block_diagonal(np.broadcast_to(PAIR_GRADS, (BLOCK, D, D)))  # built once
