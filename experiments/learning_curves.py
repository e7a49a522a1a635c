"""--learning-curves (Tasks 2 and 3): the toy trained on each k's simulate trace, timed to a target.

Two set-ups answer the two halves of the question: 16 lanes, where generation is the
bottleneck (what asynchrony buys in throughput), and 64 lanes, more than B, where the
trainer is, so k = 2, 4 and 8 run at one throughput and k sets only the lag (what one
more version of staleness costs, and which correction buys it back). The trainer is
training.py; here the experiment simulates each setting, trains the toy on its traces
with each of Task 3's schemes until J reaches the target, prints one headline table per
set-up (the rest with --learning-detail) and draws rl_systems_learning_curves.png: one panel
per set-up and engine mismatch, the mean time to the target against k, +- 2 standard
errors, per scheme, at equal movement per update, at the common step and (with
--step-grid) at each cell's best step; k = 1 dropping stale as stars beside k = 1.
"""

from dataclasses import replace
from typing import NamedTuple

import numpy as np

import grading
import toy
from experiments import staleness_maths, training
from experiments.part3_mismatch import LARGE_MISMATCH
from experiments.plotting import COLORS, MARKERS, placeholder
from experiments.printing import row_name, say
from experiments.staleness import STALENESS_KS, STALENESS_SCHEMES

KEY, LABEL, TASK, FLAG = "learning_curves", "Learning curves", "3", "learning_curves"
SECONDS = 60.0
NEEDS = "scheduling"  # it trains on Part 2's traces: run.py checks Part 2 ran first
# Fixed before the runs of issue 34 (the earlier J >= 0.5 was reached in 2 to 5 updates,
# before most stale updates happened):
LEARNING_TARGET = 0.9  # the J to reach (J(THETA) = 0.208, at most 1)
# The headline gives every cell the same movement per update, as a PPO clip or a
# KL-controlled step bounds a real update: each update's step is set so that it moves the
# policy by EQUAL_KL nats per token (KL(old || new), exactly; measured again on the runs),
# the KL an on-policy update of B = 32 moves at THETA at the common step (--staleness, k = 0:
# 0.0256 +- 0.0003). The sensitivities: the common step (1x: eta = step_for_kl(TARGET_KL)
# for every update) and each cell's best constant step (--step-grid).
EQUAL_KL = 0.0256
LEARNING_SEEDS = 200  # seeds of the toy's sampling, the same in every setting and scheme
LEARNING_HORIZON = 300  # updates simulated: a seed that has not reached the target by then
# counts at its last update (the output says how many)
LEARNING_SEED = 24  # the seed of the uniform draws
TRAINER_LANES = 64  # the trainer-bound set-up: more lanes than B, so k binds
LEARNING_MISMATCHES = (0.0, LARGE_MISMATCH)


def arguments(p):
    p.add_argument(
        "--learning-curves",
        action="store_true",
        help="also train the toy on each k's simulate trace, at 16 and 64 lanes, "
        "and time how soon J reaches 0.9, at equal movement per update and at "
        "one common step (a PNG of its own)",
    )
    p.add_argument(
        "--learning-detail",
        action="store_true",
        help="with --learning-curves: print every cell (both steps, the KL per "
        "update, every paired difference), not only the headline tables",
    )


def work(settings):
    return settings.simulation.work()


def run(settings, results):
    out = learning_curves(
        grading.load("scheduler"), grading.load("tis"), settings.simulation, settings.toy
    )
    return out | dict(detail=bool(getattr(settings.options, "learning_detail", False)))


def learning_settings(scheduler, set_ups, B, horizon, train_time, sigma):
    """The settings of each set-up (its number of lanes, in set_ups): k in STALENESS_KS, then
    k = 1 with drop_stale, each simulated once for `horizon` updates. Returns (settings,
    tags (n_traces, horizon, B), times (n_traces, horizon + 1)): each setting a dict with its
    trace's index `trace` (settings with the same trace, k = 2, 4, 8 when generation binds,
    share it)."""
    settings = []
    tags: list[np.ndarray] = []  # each trace's batch_tags
    times: list[np.ndarray] = []  # each trace's update times, from 0
    for lanes in set_ups:
        for k, drop in [(k, False) for k in STALENESS_KS] + [(1, True)]:
            run = scheduler.simulate(
                lanes, B, k, n_steps=horizon, train_time=train_time, sigma=sigma, drop_stale=drop
            )
            t = training.batch_tags(run["trace"], B, horizon)
            clock = np.array([0.0] + [end for _, end in run["updates"]])
            same = next(
                (
                    i
                    for i, (a, b) in enumerate(zip(tags, times))
                    if np.array_equal(a, t) and np.array_equal(b, clock)
                ),
                None,
            )
            if same is None:
                same = len(tags)
                tags.append(t)
                times.append(clock)
            lags = [r["lag"] for r in run["trace"] if r["lag"] is not None]
            settings.append(
                dict(
                    lanes=lanes,
                    B=B,
                    k=k,
                    drop_stale=drop,
                    throughput=run["throughput"],
                    mean_lag=float(np.mean(lags)),
                    trace=same,
                )
            )
    return settings, np.array(tags), np.array(times)


class Cells(NamedTuple):
    """train_cells' answer: for every run, each (..., n_mismatches, n_traces, n_schemes,
    n_seeds)."""

    time: np.ndarray  # the time to the target (never reached: its last update's time)
    reached: np.ndarray  # whether it reached the target
    kl: np.ndarray  # its mean KL per update
    step: np.ndarray  # its mean step
    last_J: np.ndarray  # its J at its last update

    def pick(self, index):
        """The Cells at `index` of every array: a step (i) or a cell (m, trace, j)."""
        return Cells(*(x[index] for x in self))


def train_cells(tis, tags, times, steps, draws, mismatches, how):
    """Train every trace at every mismatch with every scheme and step (one pass) until each
    run reaches how.target, at each of `steps`, or, where how.kl_per_update (one per step,
    NaN for none) gives one, with each update's step set so that it moves exactly that many
    nats per token (training.kl_steps); how: a training.Training.
    Returns Cells, each (n_steps, n_mismatches, n_traces, n_schemes, n_seeds)."""
    n_m, n_t, n_s = len(mismatches), len(tags), len(STALENESS_SCHEMES)
    J, KL, used = training.train(
        tis.importance_weights,
        tis.pg_estimate,
        np.tile(tags, (n_m, 1, 1)),
        STALENESS_SCHEMES,
        steps,
        draws,
        np.repeat(mismatches, n_t),
        replace(how, with_kl=True),
    )
    J, KL, used = (
        np.moveaxis(x.reshape(n_m, n_t, n_s, len(steps), len(draws), -1), 3, 0)
        for x in (J, KL, used)
    )
    time, reached = training.time_to_target(J, times[:, None, None], how.target)
    last = J.shape[-1] - 1 - np.argmax(np.isfinite(J)[..., ::-1], axis=-1)
    return Cells(
        time,
        reached,
        np.nanmean(KL, axis=-1),
        np.nanmean(used, axis=-1),
        np.take_along_axis(J, last[..., None], axis=-1)[..., 0],
    )


def cell_row(s, scheme, mismatch, step, scale, target, cell):
    """One row of learning_curves' tables: a setting s, scheme and mismatch at one step,
    from its seeds' Cells `cell`."""
    reached = cell.reached
    return dict(
        lanes=s["lanes"],
        B=s["B"],
        k=s["k"],
        drop_stale=s["drop_stale"],
        scheme=scheme,
        mismatch=mismatch,
        step=step,
        scale=scale,
        target=target,
        **mean_se(cell.time),
        reached=int(reached.sum()),
        seeds=len(cell.time),
        kl_per_update=float(cell.kl.mean()),
        mean_step=float(cell.step.mean()),
        stalled_J=float(cell.last_J[~reached].mean()) if (~reached).any() else None,
    )


def learning_curves(scheduler, tis, simulation, toy_settings):
    """Train the toy (training.py) on each setting's simulate trace, in two set-ups:
    simulation.lanes lanes (generation-bound at the defaults: what asynchrony buys) and
    TRAINER_LANES (more lanes than B: the trainer is the bottleneck, so k = 2, 4, 8 run at
    one throughput and k sets the lag); k in STALENESS_KS and k = 1 with drop_stale; each scheme of
    STALENESS_SCHEMES at each mismatch of LEARNING_MISMATCHES, LEARNING_SEEDS seeds; from
    Task 2's `scheduler` and Task 3's `tis`, simulation's B, train_time and sigma and
    toy_settings' C and noise. Every run trains until J >= LEARNING_TARGET (up to
    LEARNING_HORIZON updates).

    Two steps per cell: "equal_kl" (the headline), every update's step set so that it moves
    the policy by exactly EQUAL_KL nats per token (training.kl_steps), and "1x", the common
    step staleness_maths.step_for_kl(TARGET_KL) for every update of every cell.
    Returns per cell (set-up, setting, scheme, mismatch, step) the time to target (mean,
    standard error, seeds that reached it, the mean KL per update measured), in the lists
    `trainer_bound` and `generation_bound`; the headline's sorted times per cell (the
    fraction of seeds that have reached the target against time); and paired comparisons
    over the same seeds (`costs`, learning_costs).
    """
    n_lanes, trainer_lanes, B = simulation.lanes, TRAINER_LANES, simulation.batch
    horizon, n_seeds, target, kl = LEARNING_HORIZON, LEARNING_SEEDS, LEARNING_TARGET, EQUAL_KL
    mismatches, C, noise = LEARNING_MISMATCHES, toy_settings.C, toy_settings.noise
    train_time, sigma = simulation.train_time, simulation.sigma
    settings, tags, times = learning_settings(
        scheduler, (n_lanes, trainer_lanes), B, horizon, train_time, sigma
    )
    step = staleness_maths.step_for_kl(staleness_maths.TARGET_KL)
    draws = np.random.default_rng(LEARNING_SEED).random((n_seeds, horizon, B, toy.T))
    how = training.Training(C, noise, target, kl_per_update=[kl, np.nan])
    both = train_cells(tis, tags, times, [step, step], draws, mismatches, how)  # equal KL, 1x
    runs = {name: both.pick(i) for i, name in enumerate(("equal_kl", "1x"))}
    cells, sorted_times = [], {}
    for m, mismatch in enumerate(mismatches):
        for i, s in enumerate(settings):
            for j, scheme in enumerate(STALENESS_SCHEMES):
                for name, run in runs.items():
                    cell = run.pick((m, s["trace"], j))
                    cells.append(
                        cell_row(
                            s, scheme, mismatch, name, 1.0 if name == "1x" else None, target, cell
                        )
                    )
                    if name == "equal_kl":
                        sorted_times[f"{mismatch} {i} {scheme}"] = np.sort(cell.time).tolist()
    per_seed = {name: run.time for name, run in runs.items()}
    return dict(
        n_lanes=n_lanes,
        trainer_lanes=trainer_lanes,
        B=B,
        train_time=train_time,
        sigma=sigma,
        horizon=horizon,
        n_seeds=n_seeds,
        target=target,
        J_start=staleness_maths.expected_reward(toy.THETA),
        step=step,
        step_kl=staleness_maths.TARGET_KL,
        equal_kl=kl,
        C=C,
        noise=noise,
        schemes=list(STALENESS_SCHEMES),
        mismatches=list(mismatches),
        settings=[{key: v for key, v in s.items() if key != "trace"} for s in settings],
        trainer_bound=[c for c in cells if c["lanes"] == trainer_lanes],
        generation_bound=[c for c in cells if c["lanes"] == n_lanes],
        sorted_times=sorted_times,
        costs=learning_costs(settings, per_seed, mismatches, n_lanes, trainer_lanes),
    )


def paired(x, y):
    """The paired difference x - y over the same seeds: dict(mean, se, significant), where
    significant means |mean| > 2 se."""
    d = mean_se(np.asarray(x) - np.asarray(y))
    return dict(d, significant=bool(abs(d["mean"]) > 2 * d["se"]))


def learning_costs(settings, per_seed, mismatches, n_lanes, trainer_lanes):
    """The comparisons the conclusions rest on, paired over the seeds, for each step and
    mismatch (per_seed[step]: times (n_mismatches, n_traces, n_schemes, n_seeds)):
      per_version: per scheme, (time at k = 8 - time at k = 2) / 6 at trainer_lanes, where
        k = 2, 4, 8 share one throughput: the cost of one more version of staleness;
      recovered: per correction, none's per-version cost minus the correction's;
      asynchrony: per scheme, time at k = 1 - time at k = 0, at n_lanes;
      drop: per set-up and scheme, time at k = 1 dropping stale - time at k = 1 keeping."""

    def at(lanes, k, drop=False):
        return next(
            s["trace"]
            for s in settings
            if (s["lanes"], s["k"], s["drop_stale"]) == (lanes, k, drop)
        )

    out = []
    for name, time in per_seed.items():
        for m, mismatch in enumerate(mismatches):
            t = time[m]
            per = {
                s: paired(t[at(trainer_lanes, 8), j] / 6, t[at(trainer_lanes, 2), j] / 6)
                for j, s in enumerate(STALENESS_SCHEMES)
            }
            versions = (t[at(trainer_lanes, 8)] - t[at(trainer_lanes, 2)]) / 6
            out.append(
                dict(
                    step=name,
                    mismatch=mismatch,
                    per_version=per,
                    recovered={
                        s: paired(versions[0], versions[j])
                        for j, s in enumerate(STALENESS_SCHEMES)
                        if j
                    },
                    asynchrony={
                        s: paired(t[at(n_lanes, 1), j], t[at(n_lanes, 0), j])
                        for j, s in enumerate(STALENESS_SCHEMES)
                    },
                    drop={
                        str(lanes): {
                            s: paired(t[at(lanes, 1, True), j], t[at(lanes, 1), j])
                            for j, s in enumerate(STALENESS_SCHEMES)
                        }
                        for lanes in (n_lanes, trainer_lanes)
                    },
                )
            )
    return out


def mean_se(x):
    """dict(mean=, se=) of the numbers x: their mean and its standard error."""
    return dict(mean=float(np.mean(x)), se=float(np.std(x, ddof=1) / np.sqrt(len(x))))


# ---------------------------------------------------------------- printed


def show(c):
    say(
        f"Learning curves (the simpler model: REINFORCE at equal KL): the toy trained until "
        f"J >= {c['target']:g} (J(THETA) = {c['J_start']:.3f}) on each k's simulate trace "
        f"(B = {c['B']}, sigma = {c['sigma']}, {c['n_seeds']} seeds, up to {c['horizon']} "
        "updates)."
    )
    say(
        f"  Headline step: each update moves the policy by exactly {c['equal_kl']:g} nats per "
        "token (KL, fixed before running). Time to the target in time units (a time unit is "
        "the mean response's generation time), mean±SE over the seeds; (n) = seeds that "
        "reached it, if not all (the others count at their last update: a lower bound). k = "
        "the staleness bound, '1 drop' = k = 1 dropping stale responses; columns: the scheme "
        "(none = uncorrected) at engine mismatch 0 and 0.6."
    )
    if c.get("detail"):
        return show_detail(c)
    for lanes, name in ((c["n_lanes"], "generation-bound"), (c["trainer_lanes"], "trainer-bound")):
        print_headline_table(c, lanes, name)
    say(
        f"  One more version (time at k = 8 - at k = 2) / 6 at {c['trainer_lanes']} lanes, "
        "paired over the seeds (* = beyond 2 SE):"
    )
    for d in c["costs"]:
        if d["step"] == "equal_kl":
            say(f"    mismatch {d['mismatch']:g}: " + paired_cells(d["per_version"]))
    say(
        f"  The common step (1x, eta {c['step']:.4g}), each cell's KL per update and the other "
        "paired differences: run.py --learning-curves --learning-detail, or the JSON "
        "(learning_curves)."
    )


def print_headline_table(c, lanes, name):
    """One set-up: a row per setting, a column per scheme and mismatch, at equal KL."""
    say(
        f"  {lanes} lanes ({name}); throughput (responses per time unit) / mean lag: "
        + ", ".join(
            f"k = {row_name(s)} {s['throughput']:.2f} / {s['mean_lag']:.2f}"
            for s in c["settings"]
            if s["lanes"] == lanes
        )
    )
    rows = c[rows_key(c, lanes)]
    print(
        f"  {'k':>6}"
        + "".join(f"{f'{n}, {m:g}':>15}" for m in c["mismatches"] for n in c["schemes"])
    )
    for s in [s for s in c["settings"] if s["lanes"] == lanes]:
        cells = [lc_find(rows, s, n, m) for m in c["mismatches"] for n in c["schemes"]]
        print(f"  {row_name(s):>6}" + "".join(f"{short_cell(r):>15}" for r in cells))


def lc_find(rows, s, scheme, mismatch, step="equal_kl"):
    return next(
        r
        for r in rows
        if (r["k"], r["drop_stale"], r["scheme"], r["mismatch"], r["step"])
        == (s["k"], s["drop_stale"], scheme, mismatch, step)
    )


def short_cell(r):
    """ "12.3±0.5" ("333.5±49" once the SE is 10 or more, to fit), and "(97)" if not every
    seed reached the target."""
    return f"{r['mean']:.1f}±{r['se']:.{1 if r['se'] < 10 else 0}f}" + (
        f"({r['reached']})" if r["reached"] < r["seeds"] else ""
    )


def show_detail(c):
    """Every cell: both steps, the KL per update, every paired difference."""
    say(
        f"  1x = eta {c['step']:.4g} for every update (one exact-gradient step of "
        f"{c['step_kl']:g} nats/token at THETA); throughput = responses trained per time unit; "
        "lag = the mean lag of the responses trained."
    )
    for title, rows in set_up_tables(c):
        print_learning_table(c, rows, title)
    say("  paired differences over the same seeds (time units; * = beyond 2 SE):")
    for d in c["costs"]:
        say(
            f"  mismatch {d['mismatch']:g}, step {d['step']}: one more version at "
            f"{c['trainer_lanes']} lanes (k = 2 -> 8, / 6): "
            + paired_cells(d["per_version"])
            + "; recovered of none's: "
            + paired_cells(d["recovered"])
            + f"; k = 1 - k = 0 at {c['n_lanes']} lanes: "
            + paired_cells(d["asynchrony"])
            + "".join(
                f"; dropping - keeping at k = 1, {lanes} lanes: " + paired_cells(drop)
                for lanes, drop in d["drop"].items()
            )
        )


def set_up_tables(c):
    """(title, rows) for each set-up and engine mismatch with rows in `c` (learning_curves's
    or --step-grid's results), in print order: "16 lanes (generation-bound), engine
    mismatch 0" and its cells."""
    for name, key in (("generation-bound", "generation_bound"), ("trainer-bound", "trainer_bound")):
        for mismatch in c["mismatches"]:
            rows = [r for r in c[key] if r["mismatch"] == mismatch]
            if rows:  # (--step-grid may leave a set-up out)
                yield f"{rows[0]['lanes']} lanes ({name}), engine mismatch {mismatch:g}", rows


def print_learning_table(c, rows, title):
    """One set-up at one mismatch: a line per setting and step, a column per scheme; then
    each cell's mean KL per update (nats/token)."""
    print(f"  {title}:")
    print(
        f"  {'k':>6}{'throughput':>11}{'lag':>6}{'step':>9}"
        + "".join(f"{n:>22}" for n in c["schemes"])
    )
    kls: dict[str, list[str]] = {"equal_kl": [], "1x": []}  # each step's lines of KL
    for row in rows[:: len(c["schemes"]) * 2]:  # each setting: its schemes, two steps each
        for step in ("equal_kl", "1x"):
            mine = [
                r
                for r in rows
                if (r["k"], r["drop_stale"], r["step"]) == (row["k"], row["drop_stale"], step)
            ]
            setting = next(
                s
                for s in c["settings"]
                if (s["lanes"], s["k"], s["drop_stale"])
                == (row["lanes"], row["k"], row["drop_stale"])
            )
            first = (
                f"{row_name(row):>6}{setting['throughput']:>11.2f}{setting['mean_lag']:>6.2f}"
                if step == "equal_kl"
                else " " * 23
            )
            print(f"  {first}{step:>9}" + "".join(f"{time_cell(r):>22}" for r in mine))
            kls[step].append(
                f"k = {row_name(row)}: " + " / ".join(f"{r['kl_per_update']:.4f}" for r in mine)
            )
    for step, cells in kls.items():
        say(f"    KL per update at {step} ({' / '.join(c['schemes'])}): " + ", ".join(cells))


def time_cell(r):
    """ "12.34 +- 0.56", and " (197)" if not every seed reached the target."""
    return f"{r['mean']:.2f} +- {r['se']:.2f}" + (
        f" ({r['reached']})" if r["reached"] < r["seeds"] else ""
    )


def paired_cells(d):
    """ "none 5.85 +- 0.16*, token_tis 0.35 +- 0.05*" from {scheme: paired difference}."""
    return ", ".join(
        f"{s} {v['mean']:+.2f} +- {v['se']:.2f}" + ("*" if v["significant"] else "")
        for s, v in d.items()
    )


# ---------------------------------------------------------------- drawn

STEP_STYLES = {
    "equal_kl": ("-", "equal KL per update"),
    "1x": ("--", "common step 1x"),
    "best": (":", "own best step"),
}


def draw(results, path):
    """Save the figure of results["learning_curves"] (or placeholders) to `path`: four
    panels, one per set-up and mismatch, the time to the target against k."""
    from matplotlib.figure import Figure

    c = results["learning_curves"]
    grid = results.get("step_grid")
    fig = Figure(figsize=(13, 10))
    axes = k_panels(
        fig,
        c,
        "REINFORCE",
        results["unavailable"].get(LABEL),
        lambda ax, lanes, mismatch: k_panel(ax, c, grid, lanes, mismatch),
    )
    if c:
        handles, labels = axes[0, 0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=10, frameon=False)
    fig.tight_layout(rect=(0, 0.08 if c else 0, 1, 1))
    fig.savefig(path, dpi=80)


def k_panels(fig, c, trainer, unavailable, panel):
    """The 2 x 2 panels of a training figure (this one and --ppo-curves'): a row per set-up,
    a column per mismatch, titled for `trainer`; panel(ax, lanes, mismatch) draws each, or,
    without a result `c`, a placeholder saying `unavailable`. Returns the axes."""
    axes = fig.subplots(2, 2, squeeze=False)
    for i, lanes in enumerate((c["n_lanes"], c["trainer_lanes"]) if c else (16, 64)):
        for j, mismatch in enumerate(c["mismatches"] if c else LEARNING_MISMATCHES):
            ax = axes[i, j]
            ax.set_title(
                f"{trainer}: time to J >= 0.9 against k, {lanes} lanes, mismatch "
                f"{mismatch:g} (Tasks 2 and 3)",
                fontsize=11,
            )
            if c is None:
                placeholder(ax, unavailable)
            else:
                panel(ax, lanes, mismatch)
    return axes


def k_panel(ax, c, grid, lanes, mismatch):
    """Time to target against k, mean +- 2 SE, per scheme and step; k = 1 dropping stale as
    stars beside k = 1."""
    from matplotlib.ticker import NullFormatter

    sources = [("equal_kl", c[rows_key(c, lanes)]), ("1x", c[rows_key(c, lanes)])]
    if grid:
        sources.append(("best", grid[rows_key(grid, lanes)]))
    for shift, scheme in zip((-0.06, 0.0, 0.06), c["schemes"]):
        for step, rows in sources:
            mine = [
                r
                for r in rows
                if r["mismatch"] == mismatch
                and r["scheme"] == scheme
                and (step == "best" or r["step"] == step)
            ]
            style, label = STEP_STYLES[step]
            for drop in (False, True):
                part = [r for r in mine if r["drop_stale"] == drop]
                x = [max(r["k"], 0.5) * (1 + shift) * (1.25 if drop else 1) for r in part]
                ax.errorbar(
                    x,
                    [r["mean"] for r in part],
                    yerr=[2 * r["se"] for r in part],
                    fmt=("*" if drop else MARKERS[scheme] + style),
                    color=COLORS[scheme],
                    markersize=9 if drop else 5,
                    capsize=2,
                    alpha=1.0 if step == "equal_kl" else 0.6,
                    label=f"{scheme}, {label}" if not drop else None,
                )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ks = sorted({r["k"] for r in c[rows_key(c, lanes)]})
    ax.set_xticks([max(k, 0.5) for k in ks], [str(k) for k in ks])
    ax.xaxis.set_minor_formatter(NullFormatter())
    low, high = ax.get_ylim()
    ticks = [
        v
        for v in (1, 2, 3, 5, 7, 10, 15, 20, 30, 50, 70, 100, 150, 200, 300, 500)
        if low <= v <= high
    ]
    ax.set_yticks(ticks, [f"{v:g}" for v in ticks])
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel(
        "staleness bound k (k = 0 drawn at 0.5; stars: k = 1 dropping stale)", fontsize=10
    )
    ax.set_ylabel(f"time to J >= {c['target']:g} (time units, log), mean ± 2 SE", fontsize=10)
    ax.tick_params(labelsize=10)
    ax.grid(alpha=0.3)


def rows_key(c, lanes):
    return "generation_bound" if lanes == c["n_lanes"] else "trainer_bound"
