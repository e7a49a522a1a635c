"""Training the toy on the simulator's clock (given): run.py --learning-curves.

staleness_maths.py prices one update. Here the toy is trained for many, and J is read off
the simulated clock:

  * Version 0 is toy.THETA. Update u trains on exactly the batch that `simulate` handed
    the trainer at its u-th update, and produces version u + 1:

        theta_{u+1} = theta_u + step * g_hat_u, rounded to a multiple of 2**-20 (THETA_GRID)

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
seeds can go on for many more updates at little cost. train can also return the KL each
update moves the policy (update_kls), the measure by which learning_curves gives every
scheme the same movement per update.
"""

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

import toy
from block_calls import block_diagonal, block_estimates
from lab.input_checks import unchecked

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
        at[:, 0, 1:] = step[:, 0, :2]  # a 0 adds one zero ...
        at[:, 0, 2] += step[:, 0, 2]  # ... and two or more stay "two or more"
    return at[:, 0, 2]


def batch_tags(trace, B, n_updates):
    """(n_updates, B) ints: row u holds the tags of the responses update u trained (the
    update that trained a response is tag + lag), in the trace's order. Example: tags 0, 0,
    0, 1 at lags 0, 0, 1, 0 with B = 2 -> [[0, 0], [0, 1]]."""
    rows: list[list[int]] = [[] for _ in range(n_updates)]
    for r in trace:
        if r["lag"] is not None:
            rows[r["tag"] + r["lag"]].append(r["tag"])
    if any(len(row) != B for row in rows):
        raise ValueError(
            f"every update must train B = {B} responses; the trace's updates "
            f"trained {sorted({len(row) for row in rows})}"
        )
    return np.array(rows, dtype=int)


def sample_tokens(sampler_cdf, slots, runs, draws):
    """Each response drawn from the version that tagged it: (r, B, T) tokens and their
    previous tokens (START first), for the runs `runs` (r,). sampler_cdf (V - 1, L, R, V + 1)
    holds recent versions' cumulative next-token probabilities for every run (the last, 1,
    left out), one array per token b (so each is read with one flat index); slots (r, B)
    says where each response's version sits; draws (r, B, T) uniforms. A token is the number
    of its row's cumulative probabilities that the uniform exceeds (toy.sample_responses'
    rule)."""
    columns = sampler_cdf.reshape(V - 1, -1)
    first = (slots * sampler_cdf.shape[2] + runs[:, None]) * (V + 1)  # + previous: the row
    tokens = np.empty(draws.shape, dtype=int)
    previous = np.empty_like(tokens)
    prev = np.full(slots.shape, START)
    for t in range(T):
        previous[..., t] = prev
        row, u = first + prev, draws[..., t]
        prev = tokens[..., t] = sum((u > column[row]).astype(int) for column in columns)
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
    Each run sits in its own block of the parameters (block_calls.block_diagonal), so the batch
    average of a call holds run j's estimate / b in block j.
    """
    R, B = rewards.shape
    pairs = previous * V + tokens
    summed = np.bincount(
        (np.arange(R)[:, None, None] * D + pairs).ravel(),
        (rewards[:, :, None] * weights).ravel() / B,
        minlength=R * D,
    ).reshape(R, D)
    grads, pg_unchecked = pair_gradients(thetas), unchecked(pg_estimate)
    return np.concatenate(
        [
            block_estimates(pg_unchecked, np.ones(len(g)), block_diagonal(g), w)
            for g, w in ((grads[i : i + BLOCK], summed[i : i + BLOCK]) for i in range(0, R, BLOCK))
        ]
    )


def row_visits(thetas):
    """How often each run's policy visits each row over the T positions, divided by T:
    (R, V + 1), summing to 1. The first token's row is START; the next row is the token
    just drawn (never START)."""
    p = np.exp(log_softmax_rows(thetas))
    at = np.zeros((len(p), V + 1))
    at[:, START] = 1.0
    visits = np.zeros_like(at)
    for _ in range(T):
        visits += at
        at = np.concatenate([np.einsum("ra,rab->rb", at, p), np.zeros((len(p), 1))], axis=1)
    return visits / T


def update_kls(before, after):
    """KL(pi_before || pi_after) per token for each of R pairs of policies (R,), exactly,
    by staleness.per_token_kl's chain rule: the rows' KLs weighted by how often pi_before
    visits them. Example: equal thetas give 0."""
    logp, logq = log_softmax_rows(before), log_softmax_rows(after)
    return ((np.exp(logp) * (logp - logq)).sum(axis=-1) * row_visits(before)).sum(axis=1)


def kl_steps(thetas, directions, kl, iterations=30, rtol=1e-9):
    """For each run, the step s >= 0 with update_kls(theta, theta + s d) = kl (R,), to rtol,
    by Newton's method from the quadratic guess s = sqrt(2 kl / f''(0)). Along the ray the KL
    f(s) is convex with f(0) = f'(0) = 0, so a Newton step that overshoots comes back from
    above. A zero direction (a batch without reward) gets s = 0: it cannot move.
    Once every run is within rtol, one more Newton step takes s to its last bits, so that s
    does not depend on which iteration a CPU's last bits let pass the test."""
    logp = log_softmax_rows(thetas)
    p, visits = np.exp(logp), row_visits(thetas)
    kl = np.broadcast_to(np.asarray(kl, dtype=float), len(p))  # one kl, or one per run
    mean = (p * directions).sum(axis=-1, keepdims=True)
    curvature = (visits * (p * (directions - mean) ** 2).sum(axis=-1)).sum(axis=1)  # f''(0)
    moves = curvature > 1e-300
    s = np.zeros(len(p))
    s[moves] = np.sqrt(2 * kl[moves] / curvature[moves])
    for _ in range(iterations):
        logq = log_softmax_rows(thetas + s[:, None, None] * directions)
        f = (visits * (p * (logp - logq)).sum(axis=-1)).sum(axis=1) - kl
        within = (~moves | (abs(f) <= rtol * kl)).all()
        slope = (visits * ((np.exp(logq) - p) * directions).sum(axis=-1)).sum(axis=1)
        new = np.where(moves, s - f / np.where(moves, slope, 1.0), 0.0)
        s = np.maximum(new, s / 2)
        if within:
            break
    return s


# Every trained version's parameters sit on this binary grid. numpy's exp and log differ
# between CPUs in the last bit, and the training is chaotic enough to grow that to 0.1 in J;
# rounded to 2**-20, a last-bit difference almost never crosses a grid point's boundary, so
# every CPU trains the same versions and prints the same numbers.
THETA_GRID = 2.0**-20


def on_grid(thetas):
    """thetas rounded to the nearest multiple of THETA_GRID. Example: 1 + 2**-30 -> 1.0."""
    return np.round(thetas / THETA_GRID) * THETA_GRID


@dataclass(frozen=True)
class Training:
    """How train trains the toy (beyond what it trains on).

    C, noise: the truncation level of the TIS schemes and the engine's logit noise (the Toy
    settings' --C and --noise). With a target, a run stops once its J >= target and it has
    made n_always updates. With kl_per_update (one number, or one per step, NaN for "not
    controlled"), a KL-controlled step: every update's step is set (kl_steps) so that it
    moves the policy by exactly that many nats per token, in place of the step size of
    `steps`. with_kl: train also returns the KL and the step used.
    """

    C: float = 2.0
    noise: str = "student_t"
    target: float | None = None
    n_always: int = 0
    kl_per_update: object = None  # None, a number, or a sequence of them (one per step)
    with_kl: bool = False


def train(
    importance_weights, pg_estimate, tags, schemes, steps, draws, mismatch=0.0, how=Training()
):
    """Train the toy from toy.THETA in every combination at once; return J after each update.

    tags (n_settings, n_updates, B): the batches of each setting's simulate trace (from
    batch_tags); schemes: Task 3a scheme names; steps: step sizes; draws (n_seeds,
    n_updates, B, T) uniforms, one set per seed, shared by every setting, scheme and step;
    mismatch: the engine mismatch, one number or one per setting (n_settings,); how: the
    Training (C, noise, target, KL control).
    Returns J (n_settings, n_schemes, n_steps, n_seeds, n_updates + 1), exact, with
    J[..., 0] = J(THETA) and J[..., u + 1] the J of version u + 1 (NaN once stopped).
    With how.with_kl also KL and the step used, each (..., n_updates): update_kls(version u,
    version u + 1) and u's step (NaN once stopped).
    """
    n_settings, n_updates, B = tags.shape
    shape = (n_settings, len(schemes), len(steps), len(draws))
    setting, scheme, step, seed = (axis.ravel() for axis in np.indices(shape))
    R = len(seed)
    theta = np.broadcast_to(toy.THETA, (R, V + 1, V)).copy()
    engine = engine_offsets(mismatch, how.noise, n_settings)[setting]
    recent = Samplers.for_tags(tags, R)
    J = np.full((R, n_updates + 1), np.nan)
    J[:, 0] = expected_rewards(theta)
    KL, used = np.full((R, n_updates), np.nan), np.full((R, n_updates), np.nan)
    step_of_run = np.asarray(steps, dtype=float)[step]
    kl_of_run = np.broadcast_to(
        np.asarray(np.nan if how.kl_per_update is None else how.kl_per_update, dtype=float),
        shape[2:3],
    )[step]
    controlled = np.isfinite(kl_of_run)
    runs = np.arange(R)  # the runs still training
    reached = np.zeros(R, dtype=bool)
    for u in range(n_updates):
        runs = still_training(runs, reached, J[:, u], u, how)
        if not len(runs):
            break
        here = theta[runs]
        tokens, previous, logp_sampler = recent.sampled_batch(
            u, runs, here + engine[runs], tags[setting[runs], u], draws[seed[runs], u]
        )
        logp_train = log_softmax_rows(here)[
            np.arange(len(runs))[:, None, None], previous, tokens
        ]  # version u trains
        weights = scheme_weights(
            importance_weights, schemes, scheme[runs], logp_train, logp_sampler, how.C
        )
        rewards = toy.reward(tokens.reshape(-1, T)).reshape(len(runs), B)
        g = batch_estimates(pg_estimate, here, rewards, tokens, previous, weights)
        g = g.reshape(-1, V + 1, V)
        used[runs, u] = step_of_run[runs]
        mine = controlled[runs]
        if mine.any():
            used[runs[mine], u] = kl_steps(here[mine], g[mine], kl_of_run[runs[mine]])
        theta[runs] = on_grid(here + used[runs, u, None, None] * g)
        J[runs, u + 1] = expected_rewards(theta[runs])
        if how.with_kl:
            KL[runs, u] = update_kls(here, theta[runs])
    J = J.reshape(*shape, n_updates + 1)
    if how.with_kl:
        return J, KL.reshape(*shape, n_updates), used.reshape(*shape, n_updates)
    return J


def engine_offsets(mismatch, noise, n_settings):
    """The engine's logit offset of each setting (n_settings, V + 1, V): its mismatch (one
    number, or one per setting) times the perturbation of `noise`."""
    m = np.broadcast_to(np.asarray(mismatch, dtype=float), (n_settings,))
    return m[:, None, None] * toy.PERTURBATIONS[noise]


def still_training(runs, reached, J_now, u, how):
    """The runs of `runs` that go on to update u: all of them without a target; with one,
    those whose J (J_now, indexed by run) has not yet reached it, once u >= how.n_always.
    reached (R,) records the runs that have, for good."""
    if how.target is None:
        return runs
    reached[runs] |= J_now[runs] >= how.target
    return runs[~reached[runs]] if u >= how.n_always else runs


class Samplers(NamedTuple):
    """The samplers of each run's last L versions, version j in slot j % L (every lag of
    the trace is below L): log-probabilities (L, R, V + 1, V), and the cumulative
    next-token probabilities sample_tokens reads (V - 1, L, R, V + 1)."""

    logp: np.ndarray
    cdf: np.ndarray

    @classmethod
    def for_tags(cls, tags, R):
        """Room for R runs trained on tags (n_settings, n_updates, B)."""
        L = int((np.arange(tags.shape[1])[:, None] - tags).max()) + 1
        return cls(np.empty((L, R, V + 1, V)), np.empty((V - 1, L, R, V + 1)))

    def sampled_batch(self, u, runs, logits, tags, draws):
        """Keep version u's sampler (its logits (r, V + 1, V) for the runs `runs`: theta_u
        plus the engine's offset), then draw each run's batch, each response from the
        version that tagged it (tags (r, B)), with the uniforms draws (r, B, T).
        Returns tokens and previous tokens (r, B, T) and their log-probabilities under the
        sampler that drew them (r, B, T)."""
        L, R = self.logp.shape[:2]
        self.logp[u % L, runs] = log_softmax_rows(logits)  # version u, as sampled
        self.cdf[:, u % L, runs] = np.moveaxis(
            np.cumsum(np.exp(self.logp[u % L, runs][..., : V - 1]), axis=-1), -1, 0
        )
        slots = tags % L  # (r, B)
        tokens, previous = sample_tokens(self.cdf, slots, runs, draws)
        # flat indices: (slot * R + run) * (V + 1) * V + previous * V + token
        at_run = runs[:, None, None] * ((V + 1) * V) + previous * V + tokens
        return (
            tokens,
            previous,
            self.logp.reshape(-1)[slots[..., None] * (R * (V + 1) * V) + at_run],
        )


def scheme_weights(importance_weights, schemes, scheme_of_run, logp_train, logp_sampler, C):
    """The importance weights of every run's batch (r, B, T), each run's from its scheme:
    one call of importance_weights per scheme, on the batches of the runs that use it."""
    weights = np.empty(logp_train.shape)
    B = logp_train.shape[1]
    for i, name in enumerate(schemes):
        mine = scheme_of_run == i
        if mine.any():
            w = importance_weights(
                logp_train[mine].reshape(-1, T), logp_sampler[mine].reshape(-1, T), name, C
            )
            weights[mine] = np.asarray(w, dtype=float).reshape(-1, B, T)
    return weights


def time_to_target(J, times, target):
    """For each run, the first time at which J >= target: times (n_updates + 1,) are the
    times of J's columns (0, then each update's end), or any shape that broadcasts to J's.
    Returns (time, reached): a run that
    never reaches it gets the time of its last update (its last J that is not NaN: a run
    stopped early is NaN after it) and reached False; its time is then a lower bound.
    Example: J [0.2, 0.3, NaN] at times [0, 2, 5], target 0.5 -> (2.0, False)."""
    hit = J >= target
    last = J.shape[-1] - 1 - np.argmax(np.isfinite(J)[..., ::-1], axis=-1)
    first = np.where(hit.any(axis=-1), hit.argmax(axis=-1), last)
    clock = np.broadcast_to(np.asarray(times, dtype=float), J.shape)  # times may be per run
    return np.take_along_axis(clock, first[..., None], axis=-1)[..., 0], hit.any(axis=-1)


def best_step(evaluate, scales=(0.25, 0.5, 1.0), factor=2.0, max_scales=16):
    """The grid search for each cell's best step: evaluate(new_scales) gives the mean time to
    target of every cell at each of new_scales, (len(new_scales), n_cells). The grid starts at
    `scales` and grows by `factor` at whichever end a cell's least time still sits, until every
    cell's least time has a larger one on both sides (at most max_scales scales).
    Returns (grid (n,), times (n, n_cells), best (n_cells,) indices into grid).
    Example: a cell whose time is (log2(scale) - 2)**2 gets grid 0.25 .. 8 and best 4."""
    grid: list[float] = []
    times: list[np.ndarray] = []  # one row of times per scale in grid

    def add(new):
        order = sorted(list(grid) + list(new))
        got = dict(zip(grid, times)) | dict(zip(new, np.asarray(evaluate(list(new)), float)))
        return order, [got[s] for s in order]

    grid, times = add([float(s) for s in scales])
    while True:
        best = np.argmin(np.array(times), axis=0)
        low, high = (best == 0).any(), (best == len(grid) - 1).any()
        if not (low or high) or len(grid) >= max_scales:
            return np.array(grid), np.array(times), best
        grid, times = add(
            ([grid[0] / factor] if low else []) + ([grid[-1] * factor] if high else [])
        )
