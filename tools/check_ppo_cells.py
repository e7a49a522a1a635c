"""Check three cells of --ppo-curves with a separate, plain-loop PPO trainer (for instructors).

    python tools/check_ppo_cells.py [SEEDS]

experiments/ppo.py trains every run at once, as arrays. This trains a few seeds of three
64-lane cells again one response and one token at a time: each response sampled token by
token from the version (and engine) that tagged it, with the same uniforms; the advantages,
the clip and the gradient of each token written out; J summed over the 4,096 responses (not
by dynamic programming). It prints each seed's time to J >= 0.9 both ways and exits 1 if any
differs. The traces, draws and settings are the experiment's own.
"""

import math
import statistics
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
import toy  # (needs ROOT on the path first)
from experiments import ppo, ppo_curves, training
from experiments.learning_curves import LEARNING_SEED, learning_settings
from experiments.settings import DEFAULT_SIMULATION as SIM
from solutions import scheduler, tis

CELLS = [(8, "naive", 0.0), (4, "decoupled_tis", 0.6), (2, "naive", 0.6)]  # k, objective, m
LANES = ppo_curves.TRAINER_LANES


def softmax_rows(theta):
    return [
        [math.exp(x - max(row)) / sum(math.exp(y - max(row)) for y in row) for x in row]
        for row in theta
    ]


def exact_J(theta):
    p = np.array(softmax_rows(theta))
    prev = np.concatenate(
        [np.full((len(toy.SEQUENCES), 1), toy.START), toy.SEQUENCES[:, :-1]], axis=1
    )
    return float(p[prev, toy.SEQUENCES].prod(axis=1) @ toy.reward(toy.SEQUENCES))


def sample(probs, uniforms):
    """A response (list of (previous, token)) from row probabilities, one uniform a token: the
    token is how many of the first V - 1 cumulative probabilities the uniform exceeds."""
    prev, out = toy.START, []
    for u in uniforms:
        cumulative, token = 0.0, 0
        for b in range(toy.V - 1):
            cumulative += probs[prev][b]
            token += u > cumulative
        out.append((prev, token))
        prev = token
    return out


def plain_update(theta, batch, objective, lr, C):
    """One PPO update, written out: batch = [(pairs, reward, behaviour log-probs)]."""
    rewards = [r for _, r, _ in batch]
    mean, sd = statistics.fmean(rewards), statistics.stdev(rewards)
    p0 = softmax_rows(theta)
    terms = []  # (prev, token, A, centre log-prob, weight), in the batch's order
    for pairs, r, behaviour in batch:
        A = (r - mean) / (sd + ppo.ADV_EPS)
        prox = [math.log(p0[a][b]) for a, b in pairs]
        log_w = [x - y for x, y in zip(prox, behaviour)]
        weight = {
            "naive": [1.0] * toy.T,
            "recomputed": [1.0] * toy.T,
            "decoupled": [math.exp(x) for x in log_w],
            "decoupled_tis": [min(math.exp(x), C) for x in log_w],
        }[objective]
        centre = behaviour if objective == "naive" else prox
        terms.append([(a, b, A, c, w) for (a, b), c, w in zip(pairs, centre, weight)])
    theta = [row[:] for row in theta]
    size = len(batch) // ppo.MINIBATCHES
    for _ in range(ppo.EPOCHS):
        for m in range(ppo.MINIBATCHES):
            p = softmax_rows(theta)
            grad = [[0.0] * toy.V for _ in range(toy.V + 1)]
            part = [t for response in terms[m * size : (m + 1) * size] for t in response]
            for a, b, A, centre, w in part:
                rho = math.exp(math.log(p[a][b]) - centre)
                if (A > 0 and rho > 1 + ppo.CLIP) or (A < 0 and rho < 1 - ppo.CLIP):
                    continue  # the clip holds this term
                for j in range(toy.V):
                    grad[a][j] += w * A * rho * ((j == b) - p[a][j])
            theta = [
                [round((x + lr * g / len(part)) * 2**20) / 2**20 for x, g in zip(row, gr)]
                for row, gr in zip(theta, grad)
            ]
    return theta


def plain_time(tags, clock, draws, objective, mismatch, lr, C):
    """One seed's time to J >= 0.9 (or its last update's time) and its last J."""
    offset = (mismatch * toy.PERTURBATIONS["student_t"]).tolist()
    versions = [toy.THETA.tolist()]
    J = exact_J(versions[0])
    for u in range(len(tags)):
        if J >= ppo_curves.TARGET:
            return clock[u], J
        batch = []
        for n, tag in enumerate(tags[u]):
            logits = [[x + y for x, y in zip(row, o)] for row, o in zip(versions[tag], offset)]
            probs = softmax_rows(logits)
            pairs = sample(probs, draws[u, n])
            reward = float(toy.reward(np.array([[b for _, b in pairs]]))[0])
            batch.append((pairs, reward, [math.log(probs[a][b]) for a, b in pairs]))
        versions.append(plain_update(versions[-1], batch, objective, lr, C))
        J = exact_J(versions[-1])
    return clock[len(tags)], J


def main(n_seeds):
    settings, tags, times = learning_settings(
        scheduler, (LANES,), SIM.batch, ppo_curves.PPO_HORIZON, SIM.train_time, SIM.sigma
    )
    draws = np.random.default_rng(LEARNING_SEED).random(
        (ppo_curves.PPO_SEEDS, ppo_curves.PPO_HORIZON, SIM.batch, toy.T)
    )[:n_seeds]
    bad = 0
    for k, objective, mismatch in CELLS:
        trace = next(s["trace"] for s in settings if (s["k"], s["drop_stale"]) == (k, False))
        runs = ppo.train_ppo(
            tis,
            tags[trace][None],
            [objective],
            [ppo.LEARNING_RATE],
            draws,
            mismatch,
            ppo.Ppo(target=ppo_curves.TARGET),
        )
        J = runs.J[0, 0, 0]
        fast, _ = training.time_to_target(J, times[trace], ppo_curves.TARGET)
        fast_J = [row[np.isfinite(row)][-1] for row in J]
        plain, plain_J = zip(
            *(
                plain_time(
                    tags[trace], times[trace], d, objective, mismatch, ppo.LEARNING_RATE, 2.0
                )
                for d in draws
            )
        )
        same = np.array_equal(fast, plain) and np.allclose(fast_J, plain_J, rtol=1e-9, atol=0)
        bad += not same
        print(
            f"64 lanes, k = {k}, {objective}, mismatch {mismatch:g}, {n_seeds} seeds: "
            f"{'the same' if same else 'DIFFERENT'}: times {np.round(fast, 2).tolist()} "
            f"(plain loop {np.round(plain, 2).tolist()}), last J "
            f"{np.round(fast_J, 4).tolist()} (plain loop {np.round(plain_J, 4).tolist()})"
        )
    return bad


if __name__ == "__main__":
    sys.exit(1 if main(int(sys.argv[1]) if len(sys.argv) > 1 else 6) else 0)
