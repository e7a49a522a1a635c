"""Tests of the PPO trainer's given code (experiments/ppo.py): the clipped surrogate and its
gradient pass from the start; those that weight tokens run on your importance_weights (and
masked_weights) once Tasks 3a (and 3c) are done (test_given.Tasks), skipped until then.
"""

import numpy as np
import pytest

import toy
from experiments import ppo, ppo_curves, training
from lab import TaskNotDone
from test_given import Tasks

WEIGHTS = Tasks("tis", importance_weights="3a", masked_weights="3c")


def one_response(rho, adv):
    """A batch of one run and one response of T tokens, each token's ratio to the centre
    rho: (thetas, tokens, previous, adv, logp_centre, weights)."""
    thetas = toy.THETA[None].copy()
    tokens = np.array([[[0, 1, 2, 3, 0, 0]]])
    previous = np.concatenate([[[[toy.START]]], tokens[..., :-1]], axis=-1)
    logp = ppo.token_logp(thetas, tokens, previous)
    return thetas, tokens, previous, np.array([[adv]]), logp - np.log(rho), np.ones(logp.shape)


@pytest.mark.parametrize(
    "rho, adv, held",
    [
        (1.5, 1.0, True),
        (1.5, -1.0, False),
        (0.5, -1.0, True),
        (0.5, 1.0, False),
        (1.1, 1.0, False),
        (0.9, -1.0, False),
    ],
)
def test_ppo_clip_stops_the_gradient_only_in_the_direction_it_clips(rho, adv, held):
    # past 1 + eps with A > 0 (or below 1 - eps with A < 0) the update would push rho further
    # out: the clip holds it still; coming back towards 1 it is not held
    thetas, *batch = one_response(rho, adv)
    g, n_held = ppo.surrogate_gradient(thetas, *batch)
    assert n_held[0] == (toy.T if held else 0)
    assert (np.abs(g).max() == 0.0) == held
    if not held:  # a small step along it raises the surrogate
        assert ppo.surrogate(thetas, *batch) < ppo.surrogate(thetas + 1e-3 * g, *batch)


def test_ppo_surrogate_gradient_matches_finite_differences():
    rng = np.random.default_rng(3)
    r, n = 2, 5
    thetas = toy.THETA + 0.3 * rng.normal(size=(r, toy.V + 1, toy.V))
    tokens = rng.integers(0, toy.V, size=(r, n, toy.T))
    previous = np.concatenate([np.full((r, n, 1), toy.START), tokens[..., :-1]], axis=-1)
    logp = ppo.token_logp(thetas, tokens, previous)
    # ratios from 0.9 to 1.1: inside the clip, where the surrogate is smooth
    centre = logp - np.log(rng.uniform(0.9, 1.1, size=logp.shape))
    adv, weights = rng.normal(size=(r, n)), rng.uniform(0, 2, size=logp.shape)
    g, n_held = ppo.surrogate_gradient(thetas, tokens, previous, adv, centre, weights)
    assert (n_held == 0).all()
    h = 1e-6
    for index in [(0, 4, 1), (0, 0, 3), (1, 2, 2), (1, 4, 0)]:
        bump = np.zeros_like(thetas)
        bump[index] = h
        up = ppo.surrogate(thetas + bump, tokens, previous, adv, centre, weights)
        down = ppo.surrogate(thetas - bump, tokens, previous, adv, centre, weights)
        assert (up - down)[index[0]] / (2 * h) == pytest.approx(g[index], rel=1e-6, abs=1e-9)


def test_ppo_advantages_are_grpo_s():
    a = ppo.advantages(np.array([[1.0, 0, 0, 0], [1.0, 1, 1, 1]]))
    assert a[0] == pytest.approx([1.5, -0.5, -0.5, -0.5], rel=1e-5)
    assert (a[1] == 0).all()  # a group of equal rewards has nothing to learn from


def test_ppo_every_objective_gives_the_same_first_update_on_policy():
    # k = 0, no mismatch: behaviour = proximal, every weight 1, so one and the same update
    tags = np.zeros((1, 1, 8), dtype=int)
    draws = np.random.default_rng(4).random((3, 1, 8, toy.T))
    names = [o.name for o in ppo.OBJECTIVES]
    runs = ppo.train_ppo(WEIGHTS, tags, names, [0.5], draws, 0.0, ppo.Ppo(minibatches=2, epochs=3))
    J = runs.J[0, :, 0, :, 1]  # (objectives, seeds)
    assert (J == J[0]).all() and (J[0] != runs.J[0, 0, 0, :, 0]).all()
    assert (runs.kl[0, :, 0] == runs.kl[0, 0, 0]).all()


def test_ppo_objectives_differ_on_stale_batches():
    tags = np.array([[[0] * 8, [0] * 8, [0] * 4 + [1] * 4]])
    draws = np.random.default_rng(5).random((2, 3, 8, toy.T))
    names = [o.name for o in ppo.OBJECTIVES]
    J = ppo.train_ppo(WEIGHTS, tags, names, [3.0], draws, 0.6, ppo.Ppo(minibatches=2)).J
    finals = {tuple(J[0, i, 0, :, -1]) for i in range(len(names))}
    assert len(finals) == len(names), "each objective must train differently here"


class Recorder:
    """A tis module that records the log-probabilities importance_weights is called with."""

    def __init__(self):
        self.calls = []

    def importance_weights(self, logp_train, logp_infer, scheme, C=2.0):
        self.calls.append((logp_train.copy(), logp_infer.copy()))
        return WEIGHTS.importance_weights(logp_train, logp_infer, scheme, C)


def test_ppo_decoupled_proximal_policy_is_the_trainer_s():
    # update 0 trains version 0 = THETA on responses the engine sampled (THETA + 0.6 b): the
    # proximal log-probabilities are the trainer's THETA's, the behaviour's the engine's
    tags = np.zeros((1, 2, 8), dtype=int)
    draws = np.random.default_rng(6).random((1, 2, 8, toy.T))
    recorder = Recorder()
    ppo.train_ppo(recorder, tags, ["decoupled"], [1.0], draws, 0.6, ppo.Ppo(minibatches=2))
    trainer = training.log_softmax_rows(toy.THETA[None])[0].ravel()
    engine = training.log_softmax_rows(toy.THETA[None] + 0.6 * toy.PERTURBATIONS["student_t"])[
        0
    ].ravel()
    (prox0, behaviour0), (prox1, behaviour1) = recorder.calls

    def among(values, table):
        return np.isclose(values.ravel()[:, None], table[None], rtol=0, atol=1e-15).any(axis=1)

    assert among(prox0, trainer).all() and not among(prox0, engine).any()
    assert among(behaviour0, engine).all()
    # update 1: version 1 is the trainer's now, while the batch was sampled by version 0
    assert among(behaviour1, engine).all() and not among(prox1, trainer).all()


def verl_rollout_correction_loss(logp, logp_old, logp_rollout, adv, C, clip=ppo.CLIP):
    """verl's PPO loss with rollout correction, as its docs define it: the old
    log-probabilities recomputed by the trainer at the start of the update; the ratio to
    them clipped; each token's loss times min(pi_old / pi_rollout, C); the mean over
    tokens. The loss is minimised, so it is minus the surrogate."""
    ratio = np.exp(logp - logp_old)
    A = adv[..., None]
    loss = np.maximum(-A * ratio, -A * np.clip(ratio, 1 - clip, 1 + clip))
    is_weight = np.minimum(np.exp(logp_old - logp_rollout), C)
    return (loss * is_weight).reshape(len(loss), -1).mean(axis=1)


def test_ppo_verl_rollout_correction_is_the_truncated_decoupled_objective():
    rng = np.random.default_rng(7)
    r, n = 3, 6
    thetas = toy.THETA + 0.5 * rng.normal(size=(r, toy.V + 1, toy.V))
    tokens = rng.integers(0, toy.V, size=(r, n, toy.T))
    previous = np.concatenate([np.full((r, n, 1), toy.START), tokens[..., :-1]], axis=-1)
    old = ppo.token_logp(thetas, tokens, previous)  # recomputed by the trainer
    rollout = old + rng.normal(0, 0.8, size=old.shape)  # the engine's, several versions ago
    adv = rng.normal(size=(r, n))
    moved = thetas + 0.4 * rng.normal(size=thetas.shape)  # pi_theta, some steps into it
    w = ppo.behaviour_weights(WEIGHTS, ppo.OBJECTIVE["decoupled_tis"], old, rollout, 2.0)
    ours = ppo.surrogate(moved, tokens, previous, adv, old, w)
    verl = verl_rollout_correction_loss(
        ppo.token_logp(moved, tokens, previous), old, rollout, adv, 2.0
    )
    assert ours == pytest.approx(-verl, rel=1e-12)
    assert (w > 0).all() and (w < 1).any() and (w == 2.0).any(), "both sides of C are tried"


def test_ppo_curves_leave_the_capped_objective_out_until_task_3c_is_done():
    class WithoutMasks:
        def masked_weights(self, *args):
            raise TaskNotDone("3c")

    names, skipped = ppo_curves.available_objectives(WithoutMasks(), 2.0)
    assert names == [o.name for o in ppo.OBJECTIVES if o.task != "3c"]
    assert list(skipped) == ["decoupled_cap"] and "Task 3c" in skipped["decoupled_cap"]
