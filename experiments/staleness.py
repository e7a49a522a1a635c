"""--staleness (Tasks 2 and 3): what each k's lag costs the gradient, priced with Task 3's tools.

The maths of a policy that moves under lag is staleness_maths.py; here the experiment
runs Task 2's simulate at each k, prices every row with it, prints and draws it.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import grading
import toy
from experiments import staleness_maths
from experiments.options import bounded
from experiments.plotting import COLORS, placeholder
from experiments.printing import row_name, say
from experiments.settings import Settings, Simulation, Toy
from experiments.staleness_maths import TARGET_KL
from lab import SCHEME, STORY

if TYPE_CHECKING:  # (matplotlib is imported only to draw)
    from matplotlib.axes import Axes

KEY, LABEL, TASK, FLAG = "staleness", "Staleness", "3", "staleness"
SECONDS = 5.0
NEEDS = "scheduling"  # it trains on Part 2's traces: run.py checks Part 2 ran first
STALENESS_KS = (0, 1, 2, 4, 8)  # the staleness table's k, then k = 1 with drop_stale
STALENESS_SCHEMES = STORY  # the schemes of the README's story (lab's SCHEME_TABLE)


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--staleness",
        action="store_true",
        help="also price Part 2's lag with Part 3's tools: the error of the gradient "
        "and the gain per time unit at each k (a PNG of its own)",
    )
    p.add_argument(
        "--staleness-kl",
        type=bounded(float, 1e-6, 1.0),
        default=TARGET_KL,
        help="nats per token that one update moves the policy, for --staleness",
    )
    p.add_argument(
        "--staleness-mismatch",
        type=bounded(float, 0, toy.MAX_MISMATCH),
        default=0.0,
        help="Part 3's engine mismatch on top of the lag, for --staleness",
    )


def work(settings: Settings) -> float:
    return settings.simulation.work()


def run(settings: Settings, results: dict[str, Any]) -> dict[str, Any]:
    mine = settings.options
    return staleness_sweep(
        grading.load("scheduler"),
        grading.load("tis"),
        settings.simulation,
        settings.toy,
        kl=mine.staleness_kl,
        mismatch=mine.staleness_mismatch,
    )


def staleness_sweep(
    scheduler: ModuleType,
    tis: ModuleType,
    simulation: Simulation,
    toy_settings: Toy,
    ks: Sequence[int] = STALENESS_KS,
    kl: float = TARGET_KL,
    mismatch: float = 0.0,
    n_batches: int = staleness_maths.ONE_STEP_BATCHES,
) -> dict[str, Any]:
    """What each k's lag costs the gradient (staleness_maths.py), from Task 2's `scheduler`
    (the lag of every trained response, batch by batch) and Task 3's `tis` (the weights
    that correct it). One row per k in ks, then k = 1 with drop_stale; per row and scheme
    the bias, variance, RMSE and cosine of the batch estimate at version v, and the
    expected gain of J per update and per time unit (gain per update x updates per time
    unit, throughput / B: a dropped response costs its time and trains nothing), to second
    order and exactly (Monte Carlo over n_batches batches, staleness_maths.exact_gain_stats);
    the simulations at `simulation`, the estimators at toy_settings' C and noise."""
    n_lanes, B, n_steps = simulation.lanes, simulation.batch, simulation.steps
    sigma, train_time = simulation.sigma, simulation.train_time
    C, noise = toy_settings.C, toy_settings.noise
    settings = [(k, False) for k in ks] + [(1, True)]
    runs = [
        scheduler.simulate(
            n_lanes, B, k, n_steps=n_steps, train_time=train_time, sigma=sigma, drop_stale=drop
        )
        for k, drop in settings
    ]
    counts = [staleness_maths.batch_lags(r["trace"], B) for r in runs]
    step = staleness_maths.step_for_kl(kl)
    versions = staleness_maths.policy_versions(step, max(c.shape[1] for c in counts) - 1)
    H = staleness_maths.reward_hessian(toy.THETA)
    estimates = {
        scheme: staleness_maths.lag_estimates(
            tis.importance_weights, tis.pg_estimate, scheme, versions, mismatch, C, noise
        )
        for scheme in STALENESS_SCHEMES
    }
    moments = {
        scheme: staleness_maths.lag_moments(estimates[scheme], H)  # the same in every row
        for scheme in STALENESS_SCHEMES
    }
    rows = []
    for (k, drop), r, c in zip(settings, runs, counts):
        row = dict(
            k=k,
            drop_stale=drop,
            throughput=r["throughput"],
            mean_lag=r["mean_lag"],
            lag_p95=r["lag_p95"],
            max_lag=r["max_lag"],
            schemes={},
        )
        for scheme in STALENESS_SCHEMES:
            stats = staleness_maths.staleness_stats(moments[scheme], c, step, H)
            stats |= staleness_maths.exact_gain_stats(estimates[scheme], c, step, H, n_batches)
            per_update = r["throughput"] / B  # updates per time unit
            stats["gain_per_time"] = stats["gain_per_update"] * per_update
            stats["exact_gain_per_time"] = stats["exact_gain"] * per_update
            stats["exact_gain_per_time_se"] = stats["exact_gain_se"] * per_update
            # flagged: the second-order gain is more than 10% off the exact one
            stats["second_order_off"] = bool(
                abs(stats["gain_per_update"] - stats["exact_gain"]) > 0.1 * abs(stats["exact_gain"])
            )
            row["schemes"][scheme] = stats
        rows.append(row)
    best = {
        scheme: max(
            range(len(rows)), key=lambda i: rows[i]["schemes"][scheme]["exact_gain_per_time"]
        )
        for scheme in STALENESS_SCHEMES
    }
    return dict(
        n_lanes=n_lanes,
        B=B,
        n_steps=n_steps,
        sigma=sigma,
        train_time=train_time,
        kl=kl,
        step=step,
        lag_kl=[staleness_maths.per_token_kl(theta, toy.THETA) for theta in versions],
        mismatch=mismatch,
        C=C,
        noise=noise,
        schemes=list(STALENESS_SCHEMES),
        n_batches=n_batches,
        rows=rows,
        best=best,
    )


def show(s: dict[str, Any]) -> None:
    say(
        f"Staleness: what each k's lag costs the gradient ({s['n_lanes']} lanes, B = {s['B']}, "
        f"sigma = {s['sigma']}, {s['n_steps']} steps; engine mismatch {s['mismatch']}, "
        f"C = {s['C']})"
    )
    say(
        f"  the policy moves: one update = step {s['step']:.4g} along the exact gradient, "
        f"{s['kl']:g} nats per token (KL(pi_v-1 || pi_v) / T);\n  a response at lag l was "
        f"sampled by version v - l, KL(pi_v-l || pi_v) / T = "
        + ", ".join(f"{kl:.3f}" for kl in s["lag_kl"][1:5])
        + " ... at l = 1 .. 4"
    )
    names = {n: n for n in s["schemes"]}  # the code's names, as in the figures
    print(f"  {'':38}" + "".join(f"{names[n]:>20}" for n in s["schemes"]))
    print(
        f"  {'k':>8}{'throughput':>11}{'mean lag':>9}{'p95':>5}{'max':>5}"
        + "".join(f"{'RMSE':>14}{'cos':>6}" for n in s["schemes"])
    )
    for row in s["rows"]:
        print(
            f"  {row_name(row):>8}{row['throughput']:>11.2f}{row['mean_lag']:>9.2f}"
            f"{row['lag_p95']:>5}{row['max_lag']:>5}"
            + "".join(f"{v['rmse']:>14.4f}{v['cosine']:>6.3f}" for v in row["schemes"].values())
        )
    print(
        "  expected gain of J per update: second order (exact formula) | exact J after a real "
        "sampled step,"
    )
    print(
        f"  Monte Carlo over {staleness_maths.ONE_STEP_BATCHES:,} batches (+- SE); * = the two "
        "differ by over 10%; noise = eta^2/2 tr(H Cov)"
    )
    print(f"  {'k':>8}" + "".join(f"{names[n] + ': 2nd | exact':>30}" for n in s["schemes"]))
    for row in s["rows"]:
        print(
            f"  {row_name(row):>8}"
            + "".join(
                f"{v['gain_per_update']:>10.4f} |{v['exact_gain']:>8.4f} +-{v['exact_gain_se']:.4f}"
                + ("*" if v["second_order_off"] else " ")
                for v in row["schemes"].values()
            )
        )
    print(f"  {'k':>8}" + "".join(f"{names[n] + ': noise, KL moved':>30}" for n in s["schemes"]))
    for row in s["rows"]:
        print(
            f"  {row_name(row):>8}"
            + "".join(
                f"{v['noise_term']:>+12.4f}{v['update_kl']:>9.4f} +-{v['update_kl_se']:.4f}"
                for v in row["schemes"].values()
            )
        )
    print(
        f"  (KL moved: KL(pi_v || pi_v+1) / T of a real noisy update; the versions above are "
        f"{s['kl']:g} apart)"
    )
    print("  exact gain of J per time unit (gain per update x throughput / B), and / k = 0's")
    print(f"  {'k':>8}" + "".join(f"{names[n]:>22}" for n in s["schemes"]))
    sync = s["rows"][0]["schemes"]
    for row in s["rows"]:
        print(
            f"  {row_name(row):>8}"
            + "".join(
                f"{v['exact_gain_per_time']:>11.5f} "
                f"({v['exact_gain_per_time'] / sync[n]['exact_gain_per_time']:.2f}x)"
                for n, v in row["schemes"].items()
            )
        )
    print(
        "  best (exact gain per time unit): "
        + ", ".join(f"{names[n]} at k = {row_name(s['rows'][i])}" for n, i in s["best"].items())
    )


def draw(results: dict[str, Any], path: Path) -> None:
    """Save the --staleness figure: the batch estimate's RMSE, the expected gain of J per
    time unit, and that gain as a ratio to the synchronous run's, against k, for each
    weighting scheme; k = 1 with drop_stale as stars."""
    from matplotlib.figure import Figure

    s = results["staleness"]
    fig = Figure(figsize=(18, 4.8))
    axes = fig.subplots(1, 3)
    titles = [
        "Stale batches: error of the gradient",
        "What a time unit buys: gain of J",
        "Gain per time unit / synchronous",
    ]
    for ax, title in zip(axes, titles):
        if s is None:
            placeholder(ax, results["unavailable"][LABEL])
        ax.set_title(f"{title} (Tasks 2 and 3)")
    if s is not None:
        staleness_panels(s, *axes)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def staleness_panels(s: dict[str, Any], ax_error: Axes, ax_gain: Axes, ax_ratio: Axes) -> None:
    """RMSE (solid) and bias (dashed) against k; the gain of J per time unit, exact (solid,
    +- 2 SE) and second order (dashed); the exact gain as a ratio to k = 0's (+- 2 SE, the
    two standard errors combined as if independent). The row of k = 1 with drop_stale as
    stars beside k = 1."""
    kept = [row for row in s["rows"] if not row["drop_stale"]]
    dropped = [row for row in s["rows"] if row["drop_stale"]]
    ks = [row["k"] for row in kept]
    sync = s["rows"][0]["schemes"]
    for scheme in s["schemes"]:
        label, color = SCHEME[scheme].story, COLORS[scheme]
        for key, style in (("rmse", "o-"), ("bias", "s--")):
            ax_error.plot(
                ks,
                [row["schemes"][scheme][key] for row in kept],
                style,
                color=color,
                label=f"{label}: {key}",
            )
            ax_error.plot(
                [row["k"] for row in dropped],
                [row["schemes"][scheme][key] for row in dropped],
                "*",
                color=color,
                markersize=13,
            )
        for rows, fmt, size in ((kept, "o-", 6), (dropped, "*", 13)):
            x = [row["k"] + (0.15 if row["drop_stale"] else 0) for row in rows]
            v = [row["schemes"][scheme] for row in rows]
            ax_gain.errorbar(
                x,
                [c["exact_gain_per_time"] for c in v],
                yerr=[2 * c["exact_gain_per_time_se"] for c in v],
                fmt=fmt,
                color=color,
                markersize=size,
                capsize=3,
                label=f"{label}: exact" if rows is kept else None,
            )
            ax_gain.plot(
                x,
                [c["gain_per_time"] for c in v],
                "--" if rows is kept else "x",
                color=color,
                alpha=0.6,
                label=f"{label}: second order" if rows is kept else None,
            )
            base = sync[scheme]
            ratio = [c["exact_gain_per_time"] / base["exact_gain_per_time"] for c in v]
            spread = [
                r
                * math.hypot(
                    c["exact_gain_per_time_se"] / c["exact_gain_per_time"],
                    base["exact_gain_per_time_se"] / base["exact_gain_per_time"],
                )
                for r, c in zip(ratio, v)
            ]
            ax_ratio.errorbar(
                x,
                ratio,
                yerr=[2 * e for e in spread],
                fmt=fmt,
                color=color,
                markersize=size,
                capsize=3,
                label=label if rows is kept else None,
            )
    for ax in (ax_gain, ax_ratio):
        ax.plot([], [], "*", color="gray", markersize=13, label="k = 1 dropping stale responses")
    ax_ratio.axhline(1.0, color="gray", linewidth=1, linestyle=":")
    for ax, ylabel in (
        (ax_error, "error of the batch estimate at version v"),
        (ax_gain, "expected gain of J per time unit"),
        (ax_ratio, "exact gain per time unit / k = 0's (+- 2 SE)"),
    ):
        ax.set_xlabel("staleness bound k (versions ahead)")
        ax.set_ylabel(ylabel)
        ax.set_xticks(ks)
        ax.set_ylim(bottom=0)
    ax_error.legend(fontsize=8, loc="center right", ncol=2)
    ax_gain.legend(
        title=f"one update moves {s['kl']:g} nats/token; B = {s['B']}, "
        f"engine mismatch {s['mismatch']}",
        fontsize=8,
        title_fontsize=8,
        loc="lower right",
        ncol=2,
    )
    ax_ratio.legend(fontsize=8, loc="lower right")
