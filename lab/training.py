"""Training the toy on the simulator's clock (given): run.py --learning-curves.

lab/staleness.py prices one update. Here the toy is trained for many, and J is read off
the simulated clock:

  * Version 0 is toy.THETA. Update u trains on exactly the batch that `simulate` handed
    the trainer at its u-th update, and produces version u + 1:

        theta_{u+1} = theta_u + step * g_hat_u

  * Each response of that batch was sampled by the version that tagged it: a real past
    iterate theta_tag of this same run (the run keeps its whole history), or, with an
    engine mismatch m, by the engine's logits theta_tag + m * b (as in Part 3).
  * g_hat_u is Task 3b's estimate with Task 3a's weights for the ratio
    pi_train(theta_u) / pi_sampler, token by token:

        g_hat = (1/B) sum_n r_n sum_t w_nt grad log pi_theta_u(y_nt | y_n,t-1)

  * J(theta) is exact (a sum over all 4,096 responses, here by dynamic programming) and
    is read at the end time of each update in `simulate`'s trace.

Many runs (seeds, schemes, step sizes, settings) train at once, as arrays with a run axis
first; the seeds differ only in their uniform draws, and every setting, scheme and step
uses the same draws (common random numbers), so paired differences are meaningful.
"""
import inspect

import numpy as np

import toy
from lab.input_checks import ContractError

V, T, D, START = toy.V, toy.T, toy.D, toy.START
BLOCK = 8  # runs per call of pg_estimate (its block-diagonal input grows as BLOCK**2)


def log_softmax_rows(thetas):
    """log p(b | a) for each run's bigram: (R, V + 1, V) from (R, V + 1, V) logits."""
    shifted = thetas - thetas.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def expected_rewards(thetas):
    """J(theta) for each of R policies, (R,), exactly, without listing the 4,096 responses:
    dynamic programming over (previous token, number of 0s so far, capped at 2), since
    r(y) = 1 iff y ends in 0 and holds at least two 0s. Example: toy.THETA gives 0.208."""
    p = np.exp(log_softmax_rows(np.asarray(thetas, dtype=float).reshape(-1, V + 1, V)))
    at = np.zeros((len(p), V + 1, 3))  # P(previous token = a, zeros so far = c)
    at[:, START, 0] = 1.0
    for _ in range(T):
        step = np.einsum("rac,rab->rbc", at, p)  # the next token b, zeros not yet counted
        at = np.zeros_like(at)
        at[:, 1:V] = step[:, 1:]
        at[:, 0, 1:] = step[:, 0, :2]   # a 0 adds one zero ...
        at[:, 0, 2] += step[:, 0, 2]    # ... and two or more stay "two or more"
    return at[:, 0, 2]


def batch_tags(trace, B, n_updates):
    """(n_updates, B) ints: row u holds the tags of the responses update u trained (the
    update that trained a response is tag + lag), in the trace's order. Example: tags 0, 0,
    0, 1 at lags 0, 0, 1, 0 with B = 2 -> [[0, 0], [0, 1]]."""
    rows = [[] for _ in range(n_updates)]
    for r in trace:
        if r["lag"] is not None:
            rows[r["tag"] + r["lag"]].append(r["tag"])
    if any(len(row) != B for row in rows):
        raise ValueError(f"every update must train B = {B} responses; the trace's updates "
                         f"trained {sorted({len(row) for row in rows})}")
    return np.array(rows, dtype=int)


def sample_tokens(sampler_cdf, tags, draws):
    """Each response drawn from the version that tagged it: (R, B, T) tokens and their
    previous tokens (START first). sampler_cdf (versions, R, V + 1, V - 1) holds the
    history of the samplers' cumulative next-token probabilities (the last, 1, left out),
    tags (R, B), draws (R, B, T) uniforms. A token is the number of its row's cumulative
    probabilities that the uniform exceeds (toy.sample_responses' rule)."""
    R, B = tags.shape
    # one flat column per cumulative probability, row (tag * R + run) * (V + 1) + previous
    columns = [sampler_cdf[..., b].ravel() for b in range(V - 1)]
    first = (tags * R + np.arange(R)[:, None]) * (V + 1)
    tokens = np.empty((R, B, T), dtype=int)
    previous = np.empty_like(tokens)
    prev = np.full((R, B), START)
    for t in range(T):
        previous[..., t] = prev
        row, u = first + prev, draws[..., t]
        prev = tokens[..., t] = sum(u > column[row] for column in columns)
    return tokens, previous


def pair_gradients(thetas):
    """grad log p(b | a) at each run's theta for each pair number a * V + b: (R, D, D).
    Only row a of theta is involved: onehot(b) - p(. | a) there."""
    p = np.exp(log_softmax_rows(thetas))
    grads = np.zeros((len(p), V + 1, V, V + 1, V))
    for a in range(V + 1):
        grads[:, a, :, a, :] = np.eye(V) - p[:, a, None, :]
    return grads.reshape(len(p), D, D)


def batch_estimates(pg_estimate, thetas, rewards, tokens, previous, weights):
    """Each run's batch estimate g_hat (R, D), from Task 3b's pg_estimate, BLOCK runs a call.

    A token's gradient depends only on its pair (y_t-1, y_t) and the run's theta, so, as
    toy.estimates_by_pair does, each run's batch is passed as one response whose D "tokens"
    are the pairs, each with its gradient and its summed weight r_n w_nt / B over the
    batch (the rewards are 0 or 1 here, so they go into that sum): the same estimate.
    Each run sits in its own block of the parameters (toy.block_diagonal), so the batch
    average of a call holds run j's estimate / b in block j.
    """
    R, B = rewards.shape
    pairs = previous * V + tokens
    summed = np.bincount((np.arange(R)[:, None, None] * D + pairs).ravel(),
                         (rewards[:, :, None] * weights).ravel() / B,
                         minlength=R * D).reshape(R, D)
    grads, unchecked, out = pair_gradients(thetas), inspect.unwrap(pg_estimate), []
    for start in range(0, R, BLOCK):
        g, w = grads[start:start + BLOCK], summed[start:start + BLOCK]
        b = len(g)
        estimate = np.asarray(unchecked(np.ones(b), toy.block_diagonal(g), w))
        if estimate.shape != (b * D,) or estimate.dtype.kind not in "biuf":
            raise ContractError(f"pg_estimate (Task 3b) on {b} responses with D = {b * D} "
                                f"parameters returned {estimate.dtype} numbers of shape "
                                f"{estimate.shape}; it must return one real number per "
                                f"parameter, shape ({b * D},)")
        out.append(estimate.reshape(b, D) * b)
    return np.concatenate(out)


def train(importance_weights, pg_estimate, tags, schemes, steps, draws, mismatch=0.0, C=2.0,
          noise="student_t"):
    """Train the toy from toy.THETA in every combination at once; return J after each update.

    tags (n_settings, n_updates, B): the batches of each setting's simulate trace (from
    batch_tags); schemes: Task 3a scheme names; steps: step sizes; draws (n_seeds,
    n_updates, B, T) uniforms, one set per seed, shared by every setting, scheme and step.
    Returns J (n_settings, n_schemes, n_steps, n_seeds, n_updates + 1), exact, with
    J[..., 0] = J(THETA) and J[..., u + 1] the J of version u + 1.
    """
    n_settings, n_updates, B = tags.shape
    n_seeds = len(draws)
    shape = (n_settings, len(schemes), len(steps), n_seeds)
    setting, scheme, step, seed = (axis.ravel() for axis in np.indices(shape))
    R = len(seed)
    theta = np.broadcast_to(toy.THETA, (R, V + 1, V)).copy()
    engine = mismatch * toy.PERTURBATIONS[noise]  # the sampler's logits: theta_tag + engine
    sampler_logp = np.empty((n_updates, R, V + 1, V))
    sampler_cdf = np.empty((n_updates, R, V + 1, V - 1))
    J = np.empty((R, n_updates + 1))
    J[:, 0] = expected_rewards(theta)
    step_of_run = np.asarray(steps, dtype=float)[step]
    for u in range(n_updates):
        sampler_logp[u] = log_softmax_rows(theta + engine)  # version u, as the engine samples
        sampler_cdf[u] = np.cumsum(np.exp(sampler_logp[u][..., :V - 1]), axis=-1)
        run_tags = tags[setting, u]  # (R, B)
        tokens, previous = sample_tokens(sampler_cdf, run_tags, draws[seed, u])
        # flat indices: (version * R + run) * (V + 1) * V + previous * V + token
        pair = previous * V + tokens
        at_run = np.arange(R)[:, None, None] * ((V + 1) * V) + pair
        logp_sampler = sampler_logp.reshape(-1)[run_tags[..., None] * (R * (V + 1) * V) + at_run]
        logp_train = log_softmax_rows(theta).reshape(-1)[at_run]  # version u trains
        weights = np.empty((R, B, T))
        for i, name in enumerate(schemes):
            mine = scheme == i
            w = importance_weights(logp_train[mine].reshape(-1, T),
                                   logp_sampler[mine].reshape(-1, T), name, C)
            weights[mine] = np.asarray(w, dtype=float).reshape(-1, B, T)
        rewards = toy.reward(tokens.reshape(-1, T)).reshape(R, B)
        g = batch_estimates(pg_estimate, theta, rewards, tokens, previous, weights)
        theta = theta + step_of_run[:, None, None] * g.reshape(R, V + 1, V)
        J[:, u + 1] = expected_rewards(theta)
    return J.reshape(*shape, n_updates + 1)


def time_to_target(J, times, target):
    """For each run, the first time at which J >= target: times (n_updates + 1,) are the
    times of J's columns (0, then each update's end). Returns (time, reached): a run that
    never reaches it gets the last time (a lower bound) and reached False."""
    hit = J >= target
    first = np.where(hit.any(axis=-1), hit.argmax(axis=-1), J.shape[-1] - 1)
    return np.asarray(times)[first], hit.any(axis=-1)
