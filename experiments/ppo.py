"""Training the toy as the real systems do (given): PPO's clipped objective on stale batches.

training.py trains the toy with REINFORCE at a fixed KL per update, the simpler model. Here
each update is what AReaL, verl and TRL run, on exactly the batch `simulate` handed the
trainer, whose responses were sampled by older versions (and, with a mismatch, by the
engine's logits theta_tag + m * b):

  * advantages as GRPO's: each response's reward minus the group's mean, divided by the
    group's standard deviation (the toy has one prompt, so a batch is one group; a batch
    whose rewards are all equal has advantage 0 and does not move);
  * the token-level clipped surrogate, averaged over the minibatch's tokens,

        L(theta) = mean_t  w_t * min(rho_t A, clip(rho_t, 1 - eps, 1 + eps) A),
        rho_t = pi_theta(y_t | y_t-1) / pi_centre(y_t | y_t-1),

    maximised by plain gradient ascent, EPOCHS passes over MINIBATCHES minibatches; each
    objective (OBJECTIVES) picks the clip's centre and the weight w_t;
  * theta rounded to a multiple of 2**-20 after every step (training.on_grid: the same
    numbers on any CPU).

J is exact (training.expected_rewards) and read at the end time of each update; the KL an
update moves, KL(pi_u || pi_u+1) per token, is exact too (training.update_kls).
"""

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

import toy
from experiments import training

V, T = toy.V, toy.T
CLIP = 0.2  # eps: AReaL's eps_clip and verl's clip_ratio default (docs/staleness.md)
EPOCHS = 4  # passes over each batch
MINIBATCHES = 4  # of B / 4 responses each, in the batch's order
ADV_EPS = 1e-6  # added to the group's standard deviation, as verl's GRPO advantage does
# Chosen on the synchronous run alone (k = 0, no mismatch), and fixed before any stale run
# was trained, so that J >= 0.9 takes 20 to 40 updates there: 29.84 +- 0.19 updates over the
# 200 seeds (tools/ppo_learning_rate.py prints the table it was read from).
LEARNING_RATE = 0.15


class Objective(NamedTuple):
    """One PPO objective: where its clip is centred and what weights each token.

    centre: "behaviour" (the version, and with a mismatch the engine, that sampled the
    response) or "proximal" (the trainer's policy at the start of the update).
    weight: "" (1), a Task 3a scheme of importance_weights for the ratio proximal /
    behaviour ("token", "token_tis", "seq_tis"), or "cap": Task 3c's masked_weights at the
    token level with the band [0, C] (a token whose ratio passes C gets 0)."""

    name: str
    centre: str
    weight: str
    task: str  # the task whose function it needs ("" for none)
    label: str  # the systems that run it


OBJECTIVES = (
    Objective("naive", "behaviour", "", "", "naive PPO (AReaL's baseline)"),
    Objective("recomputed", "proximal", "", "", "verl's default (old log-probs recomputed)"),
    Objective("decoupled", "proximal", "token", "3a", "AReaL decoupled, untruncated"),
    Objective(
        "decoupled_tis",
        "proximal",
        "token_tis",
        "3a",
        "AReaL decoupled truncated at C = verl rollout correction (token TIS)",
    ),
    Objective(
        "decoupled_cap",
        "proximal",
        "cap",
        "3c",
        "AReaL decoupled with behav_imp_weight_cap = C (3c's mask)",
    ),
    Objective(
        "decoupled_seq_tis",
        "proximal",
        "seq_tis",
        "3a",
        "decoupled, sequence-level truncated weight (sensitivity)",
    ),
)
OBJECTIVE = {o.name: o for o in OBJECTIVES}


@dataclass(frozen=True)
class Ppo:
    """How train_ppo trains: C (truncation, and the cap of "cap"), the engine's noise, the
    target J (a run stops once it reaches it), and PPO's clip, epochs and minibatches."""

    C: float = 2.0
    noise: str = "student_t"
    target: float | None = None
    clip: float = CLIP
    epochs: int = EPOCHS
    minibatches: int = MINIBATCHES


class PpoRuns(NamedTuple):
    """train_ppo's answer, each (n_settings, n_objectives, n_lrs, n_seeds, ...)."""

    J: np.ndarray  # (..., n_updates + 1): J(THETA), then after each update
    kl: np.ndarray  # (..., n_updates): KL(pi_u || pi_u+1) per token
    clip_fraction: np.ndarray  # (..., n_updates): share of token terms the clip held still


def advantages(rewards: np.ndarray) -> np.ndarray:
    """GRPO's advantages of each batch (r, B), one group per batch: (reward - the group's
    mean) / (the group's standard deviation (ddof 1) + ADV_EPS). Example: [1, 0, 0, 0] ->
    [1.5, -0.5, -0.5, -0.5] (to 1e-5)."""
    centred = rewards - rewards.mean(axis=1, keepdims=True)
    return centred / (rewards.std(axis=1, ddof=1, keepdims=True) + ADV_EPS)


def surrogate(thetas, tokens, previous, adv, logp_centre, weights, clip=CLIP):
    """The clipped surrogate of each run (r,) at thetas (r, V + 1, V), on tokens and their
    previous tokens (r, n, T), advantages adv (r, n), the centre's log-probabilities and the
    weights (r, n, T): the mean over the n * T tokens of w min(rho A, clip(rho) A)."""
    rho = np.exp(token_logp(thetas, tokens, previous) - logp_centre)
    A = adv[..., None]
    terms = weights * np.minimum(rho * A, np.clip(rho, 1 - clip, 1 + clip) * A)
    return terms.reshape(len(terms), -1).mean(axis=1)


def surrogate_gradient(thetas, tokens, previous, adv, logp_centre, weights, clip=CLIP):
    """The gradient of surrogate with respect to thetas (r, V + 1, V), and each run's count
    of token terms the clip holds still (r,). A term's gradient is w A rho grad log pi_theta;
    the clip stops it where rho has passed 1 + eps with A > 0 or 1 - eps with A < 0 (there
    the min picks the clipped, constant term)."""
    A = np.broadcast_to(adv[..., None], tokens.shape)
    return pair_gradient(thetas, Minibatch.of(tokens, previous, A, logp_centre, weights), clip)


class Minibatch(NamedTuple):
    """A minibatch as the gradient reads it, each (r, n, T): every token's pair number in
    its run's theta, flat ((run * (V + 1) + previous) * V + token), the sign of its
    advantage, w A, and the centre's log-probability."""

    pairs: np.ndarray
    sign: np.ndarray
    weighted: np.ndarray
    logp_centre: np.ndarray

    @classmethod
    def of(cls, tokens, previous, A, logp_centre, weights):
        run = np.arange(len(tokens))[:, None, None]
        return cls((run * (V + 1) + previous) * V + tokens, np.sign(A), weights * A, logp_centre)


def pair_gradient(thetas, mb, clip):
    """surrogate_gradient on a Minibatch. grad log pi(b | a) is onehot(b) - pi(. | a) in row
    a of theta, so the terms are summed per pair (a, b) first."""
    logp = training.log_softmax_rows(thetas)
    rho = np.exp(logp.reshape(-1)[mb.pairs] - mb.logp_centre)
    held = mb.sign * (rho - 1) > clip
    coefficient = np.where(held, 0.0, mb.weighted * rho)
    summed = np.bincount(mb.pairs.ravel(), coefficient.ravel(), minlength=thetas.size)
    summed = summed.reshape(thetas.shape) / mb.pairs[0].size  # the mean over the n * T terms
    return summed - summed.sum(axis=-1, keepdims=True) * np.exp(logp), held.sum(axis=(1, 2))


def token_logp(thetas, tokens, previous):
    """log pi_theta(y_t | y_t-1) of each token (r, n, T) under each run's thetas."""
    logp = training.log_softmax_rows(thetas)
    return logp[np.arange(len(thetas))[:, None, None], previous, tokens]


def behaviour_weights(tis, objective, logp_prox, logp_behaviour, C):
    """The objective's weight of each token (r, B, T), from the student's importance_weights
    (or masked_weights for "cap") on the ratio proximal / behaviour; 1 where it has none."""
    r, B, _ = logp_prox.shape
    if not objective.weight:
        return np.ones(logp_prox.shape)
    train, infer = logp_prox.reshape(-1, T), logp_behaviour.reshape(-1, T)
    if objective.weight == "cap":
        w = tis.masked_weights(train, infer, "token", 0.0, C)
    else:
        w = tis.importance_weights(train, infer, objective.weight, C)
    return np.asarray(w, dtype=float).reshape(r, B, T)


def ppo_update(thetas, batch, objective_weights, lr, how):
    """One update of runs at thetas (r, V + 1, V) on their batches: how.epochs passes over
    how.minibatches minibatches, a gradient-ascent step of lr (one per run, (r,)) on each,
    theta on the grid after each. batch: (tokens, previous, adv, logp_centre); the weights
    objective_weights (r, B, T). Returns (the new thetas, the share of token terms held by
    the clip over all passes (r,))."""
    tokens, previous, adv, logp_centre = batch
    B = tokens.shape[1]
    size = B // how.minibatches
    A = np.broadcast_to(adv[..., None], tokens.shape)
    parts = [
        Minibatch.of(
            *(
                x[:, m * size : (m + 1) * size]
                for x in (tokens, previous, A, logp_centre, objective_weights)
            )
        )
        for m in range(how.minibatches)
    ]
    held = np.zeros(len(thetas))
    for _ in range(how.epochs):
        for mb in parts:
            g, n_held = pair_gradient(thetas, mb, how.clip)
            thetas = training.on_grid(thetas + lr[:, None, None] * g)
            held += n_held
    return thetas, held / (how.epochs * B * T)


def train_ppo(tis, tags, objectives, lrs, draws, mismatch=0.0, how=Ppo()) -> PpoRuns:
    """Train the toy from toy.THETA with PPO in every combination at once.

    tis: the module whose importance_weights (and masked_weights, for "cap") weight the
    tokens; tags (n_settings, n_updates, B) from training.batch_tags; objectives: names of
    OBJECTIVES; lrs: learning rates; draws (n_seeds, n_updates, B, T) uniforms shared by
    every setting, objective and rate; mismatch: one number or one per setting.
    Returns PpoRuns, NaN after a run has stopped (at how.target)."""
    n_settings, n_updates, B = tags.shape
    if B % how.minibatches:
        raise ValueError(f"B = {B} must split into minibatches = {how.minibatches} equal parts")
    shape = (n_settings, len(objectives), len(lrs), len(draws))
    setting, objective, lr, seed = (axis.ravel() for axis in np.indices(shape))
    R = len(seed)
    theta = np.broadcast_to(toy.THETA, (R, V + 1, V)).copy()
    engine = training.engine_offsets(mismatch, how.noise, n_settings)[setting]
    recent = training.Samplers.for_tags(tags, R)
    J = np.full((R, n_updates + 1), np.nan)
    J[:, 0] = training.expected_rewards(theta)
    KL, held = np.full((R, n_updates), np.nan), np.full((R, n_updates), np.nan)
    rate = np.asarray(lrs, dtype=float)[lr]
    runs, reached = np.arange(R), np.zeros(R, dtype=bool)
    stop = training.Training(target=how.target)
    for u in range(n_updates):
        runs = training.still_training(runs, reached, J[:, u], u, stop)
        if not len(runs):
            break
        here = theta[runs]
        tokens, previous, logp_behaviour = recent.sampled_batch(
            u, runs, here + engine[runs], tags[setting[runs], u], draws[seed[runs], u]
        )
        logp_prox = token_logp(here, tokens, previous)
        adv = advantages(toy.reward(tokens.reshape(-1, T)).reshape(len(runs), B))
        new, held[runs, u] = update_each_objective(
            tis,
            [OBJECTIVE[name] for name in objectives],
            objective[runs],
            here,
            (tokens, previous, adv, logp_prox, logp_behaviour),
            rate[runs],
            how,
        )
        theta[runs] = new
        J[runs, u + 1] = training.expected_rewards(new)
        KL[runs, u] = training.update_kls(here, new)
    return PpoRuns(*(x.reshape(*shape, -1) for x in (J, KL, held)))


def update_each_objective(tis, objectives, objective_of_run, thetas, batch, lr, how):
    """ppo_update for the runs of each objective (objective_of_run (r,) indexes objectives),
    with its centre and weights: batch (tokens, previous, adv, logp_prox, logp_behaviour).
    Returns the new thetas and the clip's share, each run's."""
    tokens, previous, adv, logp_prox, logp_behaviour = batch
    new, held = np.empty_like(thetas), np.empty(len(thetas))
    for i, objective in enumerate(objectives):
        mine = objective_of_run == i
        if not mine.any():
            continue
        centre = (logp_behaviour if objective.centre == "behaviour" else logp_prox)[mine]
        w = behaviour_weights(tis, objective, logp_prox[mine], logp_behaviour[mine], how.C)
        new[mine], held[mine] = ppo_update(
            thetas[mine], (tokens[mine], previous[mine], adv[mine], centre), w, lr[mine], how
        )
    return new, held
