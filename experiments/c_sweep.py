"""--c-sweep (Task 3): token TIS's bias and RMSE against the truncation level C."""

import argparse
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import grading
from experiments.part3_mismatch import LARGE_MISMATCH, exact_stats
from experiments.plotting import COLORS, extra_figure
from experiments.settings import Settings

KEY, LABEL, TASK, FLAG = "c_sweep", "C sweep", "3", "c_sweep"
SECONDS = 0.3
C_SWEEP = (1.0, 1.25, 1.5, 2.0, 2.5, 3.0, 4.0, 6.0, 8.0, 10.0)


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--c-sweep",
        action="store_true",
        help=f"sweep C over {C_SWEEP[0]:g}..{C_SWEEP[-1]:g} for token_tis at "
        f"mismatch {LARGE_MISMATCH} (a PNG of its own)",
    )


def work(settings: Settings) -> float:
    return 1.0


def run(settings: Settings, results: dict[str, Any]) -> dict[str, Any]:
    return c_sweep(
        grading.load("tis"), batch_size=settings.toy.batch_size, noise=settings.toy.noise
    )


def c_sweep(
    tis: ModuleType,
    Cs: Sequence[float] = C_SWEEP,
    mismatch: float = LARGE_MISMATCH,
    batch_size: int = 64,
    noise: str = "student_t",
) -> dict[str, Any]:
    """Bias and RMSE of token_tis against the truncation level C."""
    stats = [exact_stats(tis, "token_tis", mismatch, C, batch_size, noise) for C in Cs]
    rmse = [s["rmse"] for s in stats]
    return dict(
        mismatch=mismatch,
        batch_size=batch_size,
        noise=noise,
        C=list(Cs),
        bias=[s["bias"] for s in stats],
        rmse=rmse,
        best_C=Cs[rmse.index(min(rmse))],
    )


def show(c: dict[str, Any]) -> None:
    print(f"C sweep: token_tis at mismatch {c['mismatch']}, batch of {c['batch_size']}")
    print(f"  {'C':>6}{'bias':>9}{'RMSE':>9}")
    for C, bias, rmse in zip(c["C"], c["bias"], c["rmse"]):
        print(f"  {C:>6}{bias:>9.4f}{rmse:>9.4f}" + ("   <- best" if C == c["best_C"] else ""))


def draw(results: dict[str, Any], path: Path) -> None:
    """Save the --c-sweep figure: token TIS's bias and RMSE against the truncation level C."""
    fig, (ax,), c = extra_figure(
        results, KEY, LABEL, TASK, ["token_tis: the truncation level C"], (7, 4.6)
    )
    if c is not None:
        ax.plot(c["C"], c["rmse"], "o-", color=COLORS["token_tis"], label="RMSE")
        ax.plot(c["C"], c["bias"], "s--", color=COLORS["token_tis"], label="bias")
        best = c["C"].index(c["best_C"])
        ax.plot(
            [c["best_C"]],
            [c["rmse"][best]],
            "*",
            color="tab:red",
            markersize=15,
            label=f"lowest RMSE: C = {c['best_C']:g} ({c['rmse'][best]:.3f})",
        )
        ax.set_xscale("log")
        ax.set_xticks(c["C"], [f"{C:g}" for C in c["C"]])
        ax.minorticks_off()
        ax.set_ylim(0, 1.15 * max(c["rmse"]))
        ax.set_xlabel(
            f"C (weights above it are cut to C)\nmismatch {c['mismatch']}, "
            f"batch of {c['batch_size']}, {c['noise']} noise"
        )
        ax.set_ylabel("bias or RMSE of the gradient estimate")
        ax.legend(fontsize=9, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
