"""Part 3 (Task 3): exact bias, noise and RMSE of the five estimators against the mismatch.

It and every experiment that runs Task 3's estimators use the Toy settings
(experiments/settings.py: --noise, --C, --batch-size).
"""

from __future__ import annotations

import argparse
from itertools import pairwise
from types import ModuleType
from typing import TYPE_CHECKING, Any

import grading
import toy
from experiments.plotting import COLORS, LABELS, MARKERS, label_ends, log_ticks
from experiments.settings import Settings
from lab import SCHEMES, STORY

if TYPE_CHECKING:  # (matplotlib is imported only to draw)
    from matplotlib.axes import Axes
    from matplotlib.lines import Line2D

KEY, LABEL, TASK, FLAG = "mismatch", "Part 3", "3", None
SECONDS = 1.3
MISMATCHES = tuple(round(0.1 * i, 1) for i in range(11))  # 0.0, 0.1, ..., 1.0
LARGE_MISMATCH = 0.6
BATCH_SIZES = (1, 4, 16, 64, 256)


def arguments(p: argparse.ArgumentParser) -> None:
    pass  # its options are the Toy family's (experiments/settings.py)


def work(settings: Settings) -> float:
    return 1.0


def run(settings: Settings, results: dict[str, Any]) -> dict[str, Any]:
    t = settings.toy
    return mismatch_sweep(grading.load("tis"), t.C, t.batch_size, t.noise)


def mismatch_sweep(
    tis: ModuleType, C: float = 2.0, batch_size: int = 64, noise: str = "student_t"
) -> dict[str, Any]:
    """Exact bias, variance and RMSE of the five estimators against the mismatch,
    and against the batch size at LARGE_MISMATCH, from the Task 3 module `tis`."""
    schemes: dict[str, dict[str, list[float]]] = {}
    for scheme in SCHEMES:
        stats = [exact_stats(tis, scheme, m, C, batch_size, noise) for m in MISMATCHES]
        schemes[scheme] = {key: [s[key] for s in stats] for key in ("bias", "variance", "rmse")}
    # Other batch sizes need no new run: the bias does not depend on the batch size, and
    # the variance is the one-response variance / batch size (toy.exact_stats).
    at = MISMATCHES.index(LARGE_MISMATCH)
    by_batch_size: dict[str, Any] = dict(mismatch=LARGE_MISMATCH, batch_size=list(BATCH_SIZES))
    for scheme, columns in schemes.items():
        by_batch_size[scheme] = dict(
            bias=[columns["bias"][at]] * len(BATCH_SIZES),
            variance=[columns["variance"][at] * batch_size / n for n in BATCH_SIZES],
        )
    return dict(
        mismatch=list(MISMATCHES),
        batch_size=batch_size,
        C=C,
        noise=noise,
        schemes=schemes,
        by_batch_size=by_batch_size,
    )


def exact_stats(
    tis: ModuleType,
    scheme: str,
    mismatch: float,
    C: float = 2.0,
    batch_size: int = 64,
    noise: str = "student_t",
) -> dict[str, Any]:
    """toy.exact_stats with the two functions of the Task 3 module `tis`."""
    return toy.exact_stats(
        tis.importance_weights, tis.pg_estimate, scheme, mismatch, C, batch_size, noise
    )


def show(m: dict[str, Any]) -> None:
    print(
        f"Part 3: RMSE of the gradient estimate (batch of {m['batch_size']}, C = {m['C']}, "
        f"{m['noise']} noise)"
    )
    print(f"  {'mismatch':>8}" + "".join(f"{s:>11}" for s in SCHEMES))
    for i, x in enumerate(m["mismatch"]):
        print(f"  {x:>8.1f}" + "".join(f"{m['schemes'][s]['rmse'][i]:>11.4f}" for s in SCHEMES))


def short(m: dict[str, Any]) -> str:
    at = m["mismatch"].index(LARGE_MISMATCH)
    return f"Part 3 (RMSE at mismatch {LARGE_MISMATCH}): " + ", ".join(
        f"{scheme} {m['schemes'][scheme]['rmse'][at]:.3f}" for scheme in SCHEMES
    )


def panels(
    m: dict[str, Any],
    ax_bias: Axes,
    ax_std: Axes,
    ax_rmse: Axes,
    ax_batch: Axes,
    masking: dict[str, Any] | None = None,
) -> None:
    """The four bottom panels. The three estimators the story is about (STORY) bold; token
    and sequence IS thin and faint, and the masked schemes of Task 3c, once it is done,
    faint and dashed."""
    setup = f"batch of {m['batch_size']}, C = {m['C']}, {m['noise']} noise"
    schemes = m["schemes"] | (masking["schemes"] if masking else {})
    lines: dict[Axes, list[Line2D]] = {ax_bias: [], ax_std: [], ax_rmse: []}
    for scheme, stats in schemes.items():
        story = scheme in STORY
        style: dict[str, Any] = dict(
            color=COLORS[scheme],
            label=LABELS[scheme].split(" (")[0],
            marker=MARKERS[scheme],
            markersize=5 if story else 3,
            linewidth=2.4 if story else 1.0,
            alpha=None if story else 0.45,
            zorder=3 if story else 2,
            linestyle="--" if scheme.endswith("_mask") else "-",
        )
        for ax, values in (
            (ax_bias, stats["bias"]),
            (ax_std, [v**0.5 for v in stats["variance"]]),
            (ax_rmse, stats["rmse"]),
        ):
            lines[ax] += ax.plot(m["mismatch"], values, **style)
    if masking:
        mask_step_note(ax_bias, m["mismatch"], masking)
    for ax, ylabel in (
        (ax_bias, "|| E[estimate] - true gradient ||"),
        (ax_std, "standard deviation of the estimate"),
        (ax_rmse, "RMSE = sqrt(bias^2 + variance)"),
    ):
        ax.set_xlabel(f"mismatch (scale of the logit perturbation)\n{setup}")
        ax.set_ylabel(ylabel)
        ax.set_xticks(m["mismatch"][::2])
        if ax is not ax_bias:
            ax.set_yscale("log")
        label_ends(ax, lines[ax])
        if ax is not ax_bias:
            log_ticks(ax.yaxis)

    by = m["by_batch_size"]
    batch_lines: list[Line2D] = []
    for scheme in ("none", "seq_tis"):
        name = LABELS[scheme].split(" (")[0]
        batch_lines += ax_batch.plot(
            by["batch_size"],
            by[scheme]["bias"],
            "o-",
            color=COLORS[scheme],
            label=f"{name}: bias",
            linewidth=2.4,
        )
        batch_lines += ax_batch.plot(
            by["batch_size"],
            [v**0.5 for v in by[scheme]["variance"]],
            "s--",
            color=COLORS[scheme],
            label=f"{name}: std",
            linewidth=2.4,
        )
    ax_batch.set_xscale("log", base=2)
    ax_batch.set_yscale("log")
    ax_batch.set_xticks(by["batch_size"], [str(n) for n in by["batch_size"]])
    ax_batch.set_xlabel(
        f"batch size (responses)\nmismatch {by['mismatch']}, C = {m['C']}, {m['noise']} noise"
    )
    ax_batch.set_ylabel("bias or standard deviation")
    label_ends(ax_batch, batch_lines)
    log_ticks(ax_batch.yaxis)


def mask_step_note(ax: Axes, mismatch: list[float], masking: dict[str, Any]) -> None:
    """Say on the bias panel why the token mask's bias jumps (at mismatch 0.9 -> 1.0 in the
    reference): the toy has 20 (previous token, token) pairs, and all tokens of a pair
    leave the band together, so its bias is a staircase, not a defect of the sweep."""
    bias = masking["schemes"]["token_mask"]["bias"]
    steps = [b - a for a, b in pairwise(bias)]
    i = max(range(len(steps)), key=steps.__getitem__)
    if steps[i] < 0.05:  # no big step: nothing to explain
        return
    low, high = ax.get_ylim()
    ax.set_ylim(low, low + 1.4 * (high - low))  # room for the note above the curves
    ax.annotate(
        "token_mask: a step, not noise. The toy has\n20 (previous token, token) "
        "pairs; every token\nof one pair leaves the band at once (here\n0 after 0, "
        "in half the rewarded responses)",
        (mismatch[i + 1], bias[i + 1]),
        xytext=(0.03, 0.97),
        textcoords="axes fraction",
        ha="left",
        va="top",
        fontsize=7.5,
        color=COLORS["token_mask"],
        arrowprops=dict(arrowstyle="->", color=COLORS["token_mask"], lw=0.8),
    )
