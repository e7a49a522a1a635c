"""Part 3 with masking (Task 3c, optional): the masked schemes' RMSE against the mismatch.

Drawn on Part 3's panels of rl_systems.png, faint and dashed, once Task 3c is done.
"""

import argparse
from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np

import grading
import toy
from experiments.part3_mismatch import LARGE_MISMATCH, MISMATCHES
from experiments.settings import Settings
from lab import MASKED

KEY, LABEL, TASK, FLAG = "masking", "Masking", "3c", None
SECONDS = 0.9


def arguments(p: argparse.ArgumentParser) -> None:
    pass


def work(settings: Settings) -> float:
    return 1.0


def run(settings: Settings, results: dict[str, Any]) -> dict[str, Any]:
    return masked_sweep(grading.load("tis"), settings.toy.batch_size, settings.toy.noise)


def masked_functions(
    tis: ModuleType, low: float = 0.5, high: float = 2.0
) -> dict[str, Callable[..., np.ndarray]]:
    """{"token_mask": weights function, "seq_mask": ..., "geo_mask": ...} from Task 3c's
    masked_weights, each taking (logp_train, logp_infer, scheme, C) like importance_weights
    (scheme and C unused). Raises lab.TaskNotDone if Task 3c (or a task it uses) is not
    done: masked_weights is called once on a one-token input first."""
    tis.masked_weights([[0.0]], [[0.0]], "token", low, high)

    def level_weights(level):
        return lambda logp_train, logp_infer, scheme=None, C=None: tis.masked_weights(
            logp_train, logp_infer, level, low, high
        )

    return {name: level_weights(level) for level, name in MASKED.items()}


def masked_sweep(
    tis: ModuleType,
    batch_size: int = 64,
    noise: str = "student_t",
    low: float = 0.5,
    high: float = 2.0,
) -> dict[str, Any]:
    """Exact bias, variance and RMSE of the masked schemes (band [low, high]) against the
    mismatch, as mismatch_sweep does for the five schemes of Task 3a."""
    schemes = {}
    for scheme, weights in masked_functions(tis, low, high).items():
        stats = [
            toy.exact_stats(weights, tis.pg_estimate, scheme, m, 2.0, batch_size, noise)
            for m in MISMATCHES
        ]
        schemes[scheme] = {key: [s[key] for s in stats] for key in ("bias", "variance", "rmse")}
    return dict(
        mismatch=list(MISMATCHES),
        batch_size=batch_size,
        noise=noise,
        low=low,
        high=high,
        schemes=schemes,
    )


def show(m: dict[str, Any]) -> None:
    print(f"Part 3 with masking (Task 3c): RMSE, band [{m['low']}, {m['high']}], same settings")
    print(f"  {'mismatch':>8}" + "".join(f"{s:>11}" for s in m["schemes"]))
    for i, x in enumerate(m["mismatch"]):
        print(f"  {x:>8.1f}" + "".join(f"{v['rmse'][i]:>11.4f}" for v in m["schemes"].values()))


def short(m: dict[str, Any]) -> str:
    at = m["mismatch"].index(LARGE_MISMATCH)
    return f"Masking (Task 3c, RMSE at mismatch {LARGE_MISMATCH}): " + ", ".join(
        f"{scheme} {stats['rmse'][at]:.3f}" for scheme, stats in m["schemes"].items()
    )
