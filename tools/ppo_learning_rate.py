"""How the PPO trainer's learning rate was chosen (for instructors): on the synchronous run only.

    python tools/ppo_learning_rate.py [RATE ...]

The rule (issue 44), applied before any stale run was trained: on the synchronous run (k = 0,
every batch sampled by the current version, no engine mismatch), J >= 0.9 should take 20 to
40 updates. This trains that run with the reference's importance_weights at each rate, with
the learning curves' seed for its draws, and prints the updates to J >= 0.9 (mean +- SE over the
seeds), the share of token terms the clip held and the KL per update. ppo.LEARNING_RATE is
the rate chosen from this table; docs/staleness.md quotes it.
"""

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
import toy  # (needs ROOT on the path first)
from experiments import ppo
from experiments.learning_curves import LEARNING_SEED, LEARNING_TARGET
from solutions import tis

RATES = (0.1, 0.125, 0.15, 0.2, 0.25, 0.3, 1.0, 3.0)
B, HORIZON, SEEDS = 32, 120, 200


def main(rates):
    tags = np.repeat(np.arange(HORIZON)[:, None], B, axis=1)[None]  # every tag is current
    draws = np.random.default_rng(LEARNING_SEED).random((SEEDS, HORIZON, B, toy.T))
    runs = ppo.train_ppo(tis, tags, ["naive"], rates, draws, 0.0, ppo.Ppo(target=LEARNING_TARGET))
    print(
        f"k = 0, no mismatch, B = {B}, {SEEDS} seeds, {ppo.EPOCHS} epochs x "
        f"{ppo.MINIBATCHES} minibatches, clip {ppo.CLIP}: updates to J >= {LEARNING_TARGET}"
    )
    for i, rate in enumerate(rates):
        hit = runs.J[0, 0, i] >= LEARNING_TARGET
        n = np.where(hit.any(axis=1), hit.argmax(axis=1), HORIZON)
        print(
            f"  lr {rate:<6g} {n.mean():6.2f} +- {n.std(ddof=1) / np.sqrt(SEEDS):.2f} "
            f"({hit.any(axis=1).sum()} of {SEEDS} arrived), clip held "
            f"{np.nanmean(runs.clip_fraction[0, 0, i]):.4f} of the terms, KL per update "
            f"{np.nanmean(runs.kl[0, 0, i]):.4f}"
        )


if __name__ == "__main__":
    main([float(x) for x in sys.argv[1:]] or list(RATES))
