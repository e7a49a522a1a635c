"""Part 2 (Task 2): throughput and lag against the staleness bound k, on the lane simulator.

Its simulations use the Simulation settings (experiments/settings.py: --lanes, -B, --steps,
--train-time, --sigma), as every experiment that runs Task 2's scheduler does.
"""

from __future__ import annotations

import argparse
from collections import Counter
from collections.abc import Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

import grading
from experiments.plotting import label_ends, log_ticks
from experiments.settings import Settings

if TYPE_CHECKING:  # (matplotlib is imported only to draw)
    from matplotlib.axes import Axes

KEY, LABEL, TASK, FLAG = "scheduling", "Part 2", "2", None
SECONDS = 0.8
KS = (0, 1, 2, 3, 4, 6, 8)


def arguments(p: argparse.ArgumentParser) -> None:
    pass  # its options are the Simulation family's (experiments/settings.py)


def work(settings: Settings) -> float:
    return settings.simulation.work()


def run(settings: Settings, results: dict[str, Any]) -> dict[str, Any]:
    return scheduling_sweep(grading.load("scheduler"), **settings.simulation.simulate())


def scheduling_sweep(
    scheduler: ModuleType,
    n_lanes: int,
    B: int,
    ks: Sequence[int] = KS,
    n_steps: int = 200,
    train_time: float = 1.0,
    sigma: float = 1.25,
) -> dict[str, Any]:
    """Throughput, lane utilization and lag (mean, 95th percentile, max, and lag_counts: how
    many trained responses had lag 0, 1, 2, ...) for each staleness bound k (ks[0] must be
    0), from the Task 2 module `scheduler`."""
    runs = [
        scheduler.simulate(n_lanes, B, k, n_steps=n_steps, train_time=train_time, sigma=sigma)
        for k in ks
    ]
    return dict(
        n_lanes=n_lanes,
        B=B,
        n_steps=n_steps,
        sigma=sigma,
        train_time=train_time,
        k=list(ks),
        throughput=[r["throughput"] for r in runs],
        throughput_gain=[r["throughput"] / runs[0]["throughput"] for r in runs],
        utilization=[r["utilization"] for r in runs],
        mean_lag=[r["mean_lag"] for r in runs],
        lag_p95=[r["lag_p95"] for r in runs],
        max_lag=[r["max_lag"] for r in runs],
        lag_counts=[lag_counts(r["trace"]) for r in runs],
    )


def lag_counts(trace: list[dict[str, Any]]) -> list[int]:
    """[n_0, n_1, ..., n_max]: n_l trained responses had lag l (dropped ones have no lag).

    Example: lags 0, 0, 1, 3 give [2, 1, 0, 1].
    """
    counts = Counter(r["lag"] for r in trace if r["lag"] is not None)
    return [counts[lag] for lag in range(max(counts) + 1)]


def show(s: dict[str, Any]) -> None:
    print(
        f"Part 2: {s['n_lanes']} lanes, B = {s['B']}, sigma = {s['sigma']}, "
        f"train_time = {s['train_time']}, {s['n_steps']} steps"
    )
    print(
        f"  {'k':>3}{'throughput':>12}{'gain':>8}{'lanes busy':>12}{'mean lag':>10}"
        f"{'p95 lag':>9}{'max lag':>9}"
    )
    for i, k in enumerate(s["k"]):
        print(
            f"  {k:>3}{s['throughput'][i]:>12.2f}{s['throughput_gain'][i]:>7.2f}x"
            f"{s['utilization'][i]:>12.0%}{s['mean_lag'][i]:>10.2f}"
            f"{s['lag_p95'][i]:>9}{s['max_lag'][i]:>9}"
        )
    print(
        "  k bounds how far generation runs ahead, not how old a trained response can be "
        "(see --drop-stale)"
    )


def short(s: dict[str, Any]) -> str:
    k1 = s["k"].index(1) if 1 in s["k"] else -1
    return (
        f"Part 2: k = {s['k'][k1]} gives {s['throughput_gain'][k1]:.2f}x the throughput of "
        f"k = 0 (lanes busy {s['utilization'][0]:.0%} -> {s['utilization'][k1]:.0%}); "
        f"mean lag {s['mean_lag'][k1]:.2f}, max {s['max_lag'][k1]}"
    )


def panels(s: dict[str, Any], ax_gain: Axes, ax_lag: Axes, ax_tail: Axes) -> None:
    setup = (
        f"{s['n_lanes']} lanes, B = {s['B']}, sigma = {s['sigma']}, train_time = {s['train_time']}"
    )
    # Throughput and lanes busy rise together (the lanes are the work), so one panel
    # shows both: the line is the throughput, the numbers on it the lanes busy.
    ax_gain.plot(s["k"], s["throughput_gain"], "o-", color="tab:purple")
    shown: list[str] = []
    for k, gain, busy in zip(s["k"], s["throughput_gain"], s["utilization"]):
        if not shown or f"{busy:.0%}" != shown[-1]:  # a repeat would say nothing new
            shown.append(f"{busy:.0%}")
            below = len(shown) % 2 == 0  # neighbours alternate above and below the line
            ax_gain.annotate(
                shown[-1],
                (k, gain),
                xytext=(4, -14) if below else (0, 7),
                textcoords="offset points",
                ha="left" if below else "center",
                fontsize=8.5,
                color="tab:purple",
            )
    ax_gain.set_ylim(0, 1.2 * max(s["throughput_gain"]))
    ax_gain.set_xlim(s["k"][0] - 0.6, s["k"][-1] + 0.6)  # room for the first and last %
    ax_gain.text(
        0.97,
        0.05,
        "%: share of time the lanes are\ngenerating (repeats left out)",
        transform=ax_gain.transAxes,
        ha="right",
        va="bottom",
        fontsize=8.5,
    )
    # The mean hides the tail: k bounds how far generation runs ahead, not how old
    # a trained response can be.
    lines = [
        ax_lag.plot(s["k"], s["max_lag"], "^-", color="tab:red", label="max")[0],
        ax_lag.plot(s["k"], s["lag_p95"], "s-", color="tab:orange", label="95th pct")[0],
        ax_lag.plot(s["k"], s["mean_lag"], "o-", color="tab:purple", label="mean")[0],
        ax_lag.plot(s["k"], s["k"], ":", color="gray", label="lag = k")[0],
    ]
    ax_lag.set_ylim(-0.5, 1.08 * max(s["max_lag"] + s["k"]) + 0.5)
    for ax, ylabel in (
        (ax_gain, "x throughput of k = 0"),
        (ax_lag, "lag of trained responses (versions)"),
    ):
        ax.set_xlabel(f"staleness bound k (versions ahead)\n{setup}")
        ax.set_ylabel(ylabel)
        ax.set_xticks(s["k"])
    label_ends(ax_lag, lines)
    lag_tail_panel(s, ax_tail, setup)


def lag_tail_panel(s: dict[str, Any], ax: Axes, setup: str, k: int = 1) -> None:
    """The share of trained responses at each lag, at staleness bound k: most are fresh,
    and a few are many versions old."""
    from matplotlib.ticker import MaxNLocator

    counts = s["lag_counts"][s["k"].index(k)]
    n = sum(counts)
    share = [100 * c / n for c in counts]
    ax.bar(range(len(counts)), share, color="tab:purple")
    ax.set_yscale("log")
    ax.set_ylim(0.5 * min(x for x in share if x > 0), 100)
    log_ticks(ax.yaxis, percent=True)
    ax.set_xlim(-0.6, max(len(counts), k + 6) - 0.4)  # room right of the bound for the note
    ax.axvline(k + 0.5, color="gray", linestyle=":")
    older = sum(counts[k + 1 :]) / n
    ax.text(
        0.97,
        0.97,
        f"right of the dotted line:\n{older:.1%} have lag > k = {k};\n"
        f"the oldest has lag {len(counts) - 1}",
        transform=ax.transAxes,
        ha="right",
        va="top",
        fontsize=8.5,
    )
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel(f"lag (versions) of a trained response\n{setup}")
    ax.set_ylabel("share of trained responses")
