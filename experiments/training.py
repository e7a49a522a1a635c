"""Training the toy on the simulator's clock (given): run.py --learning-curves.

staleness_maths.py prices one update. Here the toy is trained for many, and J is read off
the simulated clock:

  * Version 0 is toy.THETA. Update u trains on exactly the batch that `simulate` handed
    the trainer at its u-th update, and produces version u + 1:

        theta_{u+1} = theta_u + step * g_hat_u

  * Each response of that batch was sampled by the version that tagged it: a real past
    iterate theta_tag of this same run (each run keeps its last versions, as many as the
    trace's largest lag needs), or, with an engine mismatch m, by the engine's logits
    theta_tag + m * b (as in Part 3).
  * g_hat_u is Task 3b's estimate with Task 3a's weights for the ratio
    pi_train(theta_u) / pi_sampler, token by token:

        g_hat = (1/B) sum_n r_n sum_t w_nt grad log pi_theta_u(y_nt | y_n,t-1)

  * J(theta) is exact (a sum over all 4,096 responses, here by dynamic programming) and
    is read at the end time of each update in `simulate`'s trace.

Many runs (seeds, schemes, step sizes, settings) train at once, as arrays with a run axis
first; the seeds differ only in their uniform draws, and every setting, scheme and step
uses the same draws (common random numbers), so paired differences are meaningful.
A run can stop once it has reached a target J (train's `target`), so that the few slow
seeds can go on for many more updates at little cost.
"""
import inspect

import numpy as np

import toy

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


def sample_tokens(sampler_cdf, slots, runs, draws):
    """Each response drawn from the version that tagged it: (r, B, T) tokens and their
    previous tokens (START first), for the runs `runs` (r,). sampler_cdf (L, R, V + 1, V - 1)
    holds recent versions' cumulative next-token probabilities for every run (the last, 1,
    left out); slots (r, B) says where each response's version sits; draws (r, B, T)
    uniforms. A token is the number of its row's cumulative probabilities that the uniform
    exceeds (toy.sample_responses' rule)."""
    R = sampler_cdf.shape[1]
    # one flat column per cumulative probability, row (slot * R + run) * (V + 1) + previous
    columns = [sampler_cdf[..., b].ravel() for b in range(V - 1)]
    first = (slots * R + runs[:, None]) * (V + 1)
    tokens = np.empty(draws.shape, dtype=int)
    previous = np.empty_like(tokens)
    prev = np.full(slots.shape, START)
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
    grads, unchecked = pair_gradients(thetas), inspect.unwrap(pg_estimate)
    return np.concatenate([
        toy.block_estimates(unchecked, np.ones(len(g)), toy.block_diagonal(g), w)
        for g, w in ((grads[i:i + BLOCK], summed[i:i + BLOCK]) for i in range(0, R, BLOCK))])


def train(importance_weights, pg_estimate, tags, schemes, steps, draws, mismatch=0.0, C=2.0,
          noise="student_t", target=None, n_always=0):
    """Train the toy from toy.THETA in every combination at once; return J after each update.

    tags (n_settings, n_updates, B): the batches of each setting's simulate trace (from
    batch_tags); schemes: Task 3a scheme names; steps: step sizes; draws (n_seeds,
    n_updates, B, T) uniforms, one set per seed, shared by every setting, scheme and step.
    With a target, a run stops once its J >= target and it has made n_always updates.
    Returns J (n_settings, n_schemes, n_steps, n_seeds, n_updates + 1), exact, with
    J[..., 0] = J(THETA) and J[..., u + 1] the J of version u + 1 (NaN once stopped).
    """
    n_settings, n_updates, B = tags.shape
    shape = (n_settings, len(schemes), len(steps), len(draws))
    setting, scheme, step, seed = (axis.ravel() for axis in np.indices(shape))
    R = len(seed)
    theta = np.broadcast_to(toy.THETA, (R, V + 1, V)).copy()
    engine = mismatch * toy.PERTURBATIONS[noise]  # the sampler's logits: theta_tag + engine
    # the samplers of the last L versions, version j in slot j % L: every lag is below L
    L = int((np.arange(n_updates)[:, None] - tags).max()) + 1
    sampler_logp = np.empty((L, R, V + 1, V))
    sampler_cdf = np.empty((L, R, V + 1, V - 1))
    J = np.full((R, n_updates + 1), np.nan)
    J[:, 0] = expected_rewards(theta)
    step_of_run = np.asarray(steps, dtype=float)[step]
    runs = np.arange(R)  # the runs still training
    for u in range(n_updates):
        if target is not None and u >= n_always:
            runs = runs[~(J[runs, :u + 1] >= target).any(axis=1)]
            if not len(runs):
                break
        here = theta[runs]
        sampler_logp[u % L, runs] = log_softmax_rows(here + engine)  # version u, as sampled
        sampler_cdf[u % L, runs] = np.cumsum(np.exp(sampler_logp[u % L, runs][..., :V - 1]),
                                             axis=-1)
        slots = tags[setting[runs], u] % L  # (r, B)
        tokens, previous = sample_tokens(sampler_cdf, slots, runs, draws[seed[runs], u])
        # flat indices: (slot * R + run) * (V + 1) * V + previous * V + token
        at_run = runs[:, None, None] * ((V + 1) * V) + previous * V + tokens
        logp_sampler = sampler_logp.reshape(-1)[slots[..., None] * (R * (V + 1) * V) + at_run]
        logp_train = log_softmax_rows(here)[np.arange(len(runs))[:, None, None], previous,
                                            tokens]  # version u trains
        weights = np.empty(tokens.shape)
        for i, name in enumerate(schemes):
            mine = scheme[runs] == i
            if mine.any():
                w = importance_weights(logp_train[mine].reshape(-1, T),
                                       logp_sampler[mine].reshape(-1, T), name, C)
                weights[mine] = np.asarray(w, dtype=float).reshape(-1, B, T)
        rewards = toy.reward(tokens.reshape(-1, T)).reshape(len(runs), B)
        g = batch_estimates(pg_estimate, here, rewards, tokens, previous, weights)
        theta[runs] = here + step_of_run[runs, None, None] * g.reshape(-1, V + 1, V)
        J[runs, u + 1] = expected_rewards(theta[runs])
    return J.reshape(*shape, n_updates + 1)


def time_to_target(J, times, target):
    """For each run, the first time at which J >= target: times (n_updates + 1,) are the
    times of J's columns (0, then each update's end). Returns (time, reached): a run that
    never reaches it gets the last time (a lower bound) and reached False."""
    hit = J >= target
    first = np.where(hit.any(axis=-1), hit.argmax(axis=-1), J.shape[-1] - 1)
    return np.asarray(times)[first], hit.any(axis=-1)
