"""--drop-stale (Task 2): k = 1 dropping stale responses: how many, how long, what it buys."""

import argparse
from pathlib import Path
from types import ModuleType
from typing import Any

import grading
from experiments.plotting import extra_figure
from experiments.settings import Settings

KEY, LABEL, TASK, FLAG = "drop_stale", "Drop stale", "2", "drop_stale"
SECONDS = 0.4
LONG = 4  # a response "long" if over 4x the mean length (which is 1)


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--drop-stale",
        action="store_true",
        help="also run k = 1 dropping stale responses: how many, how long they were "
        "(a PNG of its own)",
    )


def work(settings: Settings) -> float:
    return settings.simulation.work()


def run(settings: Settings, results: dict[str, Any]) -> dict[str, Any]:
    return drop_stale_analysis(grading.load("scheduler"), **settings.simulation.simulate())


def drop_stale_analysis(
    scheduler: ModuleType,
    n_lanes: int,
    B: int,
    k: int = 1,
    n_steps: int = 200,
    train_time: float = 1.0,
    sigma: float = 1.25,
) -> dict[str, Any]:
    """Run with stale responses dropped: how many, how much work lost, and which ones."""
    r = scheduler.simulate(
        n_lanes, B, k, n_steps=n_steps, train_time=train_time, sigma=sigma, drop_stale=True
    )
    dropped = [s["length"] for s in r["trace"] if s["dropped"]]
    trained = [s["length"] for s in r["trace"] if s["lag"] is not None]
    keep = scheduler.simulate(n_lanes, B, k, n_steps=n_steps, train_time=train_time, sigma=sigma)
    return dict(
        k=k,
        n_started=len(r["trace"]),
        n_dropped=len(dropped),
        max_lag=r["max_lag"],
        max_lag_keeping_stale=keep["max_lag"],
        wasted_frac=r["wasted_frac"],
        throughput=r["throughput"],
        throughput_keeping_stale=keep["throughput"],
        mean_length_dropped=sum(dropped) / max(len(dropped), 1),
        mean_length_trained=sum(trained) / len(trained),
        long_share_dropped=sum(x > LONG for x in dropped) / max(len(dropped), 1),
        long_share_trained=sum(x > LONG for x in trained) / len(trained),
    )


def show(d: dict[str, Any]) -> None:
    print(
        f"Drop stale (k = {d['k']}): {d['n_dropped']} of {d['n_started']} responses dropped, "
        f"{d['wasted_frac']:.1%} of generation time wasted"
    )
    print(
        f"  mean length: dropped {d['mean_length_dropped']:.2f}, trained "
        f"{d['mean_length_trained']:.2f} (the mean of all lengths is 1)"
    )
    print(
        f"  longer than {LONG}x the mean: {100 * d['long_share_dropped']:.2g}% of dropped, "
        f"{100 * d['long_share_trained']:.2g}% of trained"
    )
    print(
        f"  throughput {d['throughput']:.2f} vs {d['throughput_keeping_stale']:.2f} keeping "
        "them; dropping is a filter against long responses"
    )
    print(
        f"  max lag of trained responses: {d['max_lag']} (<= k = {d['k']}), against "
        f"{d['max_lag_keeping_stale']} keeping them"
    )


def draw(results: dict[str, Any], path: Path) -> None:
    """Save the --drop-stale figure: what dropping costs, which responses go, what it buys."""
    fig, (ax_time, ax_length, ax_lag), d = extra_figure(
        results,
        KEY,
        LABEL,
        TASK,
        [
            "Generation time: trained or wasted",
            "Dropped responses are the long ones",
            "What it buys: max lag",
        ],
        (15, 4.6),
    )
    if d is not None:
        ax_time.bar(
            ["trained", "dropped (wasted)"],
            [100 * (1 - d["wasted_frac"]), 100 * d["wasted_frac"]],
            color=["tab:purple", "lightgray"],
            edgecolor="dimgray",
        )
        ax_time.set_ylabel("% of all generation time")
        ax_time.set_ylim(0, 100)
        ax_time.text(
            0.5,
            0.97,
            f"{d['n_dropped']:,} of {d['n_started']:,} responses dropped",
            transform=ax_time.transAxes,
            ha="center",
            va="top",
            fontsize=9,
        )
        lengths = [d["mean_length_trained"], d["mean_length_dropped"]]
        ax_length.bar(
            ["trained", "dropped"], lengths, color=["tab:purple", "lightgray"], edgecolor="dimgray"
        )
        for x, (value, long) in enumerate(
            zip(lengths, [d["long_share_trained"], d["long_share_dropped"]])
        ):
            ax_length.text(
                x,
                value,
                f"mean {value:.2f}\n{100 * long:.2g}% over {LONG}x the mean",
                ha="center",
                va="bottom",
                fontsize=9,
            )
        ax_length.axhline(1, color="gray", linestyle=":")
        ax_length.text(
            1.45, 1, "mean of all lengths", ha="right", va="bottom", fontsize=8, color="dimgray"
        )
        ax_length.set_ylim(0, 1.3 * max(lengths + [1]))
        ax_length.set_ylabel("mean response length (the mean of all is 1)")
        lags = [d["max_lag_keeping_stale"], d["max_lag"]]
        ax_lag.bar(["keeping them", "dropping them"], lags, color=["tab:red", "tab:purple"])
        for x, (lag, throughput) in enumerate(
            zip(lags, [d["throughput_keeping_stale"], d["throughput"]])
        ):
            ax_lag.text(
                x,
                lag,
                f"max lag {lag}\nthroughput {throughput:.2f}",
                ha="center",
                va="bottom",
                fontsize=9,
            )
        ax_lag.axhline(d["k"], color="gray", linestyle=":")
        ax_lag.set_ylim(0, 1.3 * max(lags))
        ax_lag.set_ylabel(f"max lag of a trained response (dotted: k = {d['k']})")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
