"""--ppo-curves (Tasks 2 and 3): the toy trained with PPO's clipped objectives on each k's trace.

--learning-curves trains with REINFORCE at a fixed KL per update, the simpler model. Here
each update is the real systems' (experiments/ppo.py): GRPO advantages, the token-level
clipped surrogate (eps 0.2), 4 epochs over 4 minibatches, at the learning rate chosen on
the synchronous run. The question is where the clip is centred on stale data: naive PPO
centres it on the policy that sampled the response, AReaL's decoupled objective and verl's
recomputed old log-probabilities on the trainer's policy at the start of the update. The
same two set-ups and traces as --learning-curves (16 lanes: generation-bound; 64: the
trainer is, so k sets the lag), at engine mismatch 0 and 0.6, to J >= 0.9; the figure
rl_systems_ppo_curves.png draws the time to the target against k per objective.
"""

import numpy as np

import grading
import toy
from experiments import ppo, training
from experiments.learning_curves import (
    LEARNING_MISMATCHES,
    LEARNING_SEED,
    LEARNING_TARGET,
    TRAINER_LANES,
    k_panels,
    learning_settings,
    mean_se,
    paired,
)
from experiments.printing import row_name, say
from lab import TaskNotDone

KEY, LABEL, TASK, FLAG = "ppo_curves", "PPO curves", "3", "ppo_curves"
SECONDS = 40.0
NEEDS = "scheduling"  # it trains on Part 2's traces
PPO_SEEDS = 64  # seeds of the toy's sampling, drawn from --learning-curves' seed
PPO_HORIZON = 150  # updates simulated: five times the synchronous run's 30 (ppo.LEARNING_RATE)
RATES = {"1x": ppo.LEARNING_RATE, "3x": 3 * ppo.LEARNING_RATE}  # the headline, a sensitivity
TARGET = LEARNING_TARGET  # J >= 0.9, as --learning-curves
SHORT = {
    "naive": "naive",
    "recomputed": "verl",
    "decoupled": "decoupled",
    "decoupled_tis": "dec_tis",
    "decoupled_cap": "dec_cap",
    "decoupled_seq_tis": "dec_seq",
}


def arguments(p):
    p.add_argument(
        "--ppo-curves",
        action="store_true",
        help="also train the toy with PPO's clipped objectives (naive, verl's, "
        "AReaL's decoupled) on each k's simulate trace, at 16 and 64 lanes, "
        "and time how soon J reaches 0.9 (a PNG of its own)",
    )


def work(settings):
    return settings.simulation.work()


def run(settings, results):
    return ppo_curves(
        grading.load("scheduler"), grading.load("tis"), settings.simulation, settings.toy
    )


def available_objectives(tis, C):
    """(the objectives whose tasks are done, {objective: why it is left out}): the capped one
    needs Task 3c's masked_weights, tried once on a one-token input."""
    try:
        tis.masked_weights([[0.0]], [[0.0]], "token", 0.0, C)
    except TaskNotDone as todo:
        return (
            [o.name for o in ppo.OBJECTIVES if o.task != "3c"],
            {o.name: f"skipped: {todo}" for o in ppo.OBJECTIVES if o.task == "3c"},
        )
    return [o.name for o in ppo.OBJECTIVES], {}


def ppo_curves(scheduler, tis, simulation, toy_settings):
    """Train every objective of ppo.OBJECTIVES (those whose tasks are done) on each setting
    of learning_curves' two set-ups (simulation.lanes and TRAINER_LANES lanes), at each
    mismatch of LEARNING_MISMATCHES and each rate of RATES, PPO_SEEDS seeds, until
    J >= TARGET (up to PPO_HORIZON updates). Returns the rows (`ppo`: one per set-up,
    setting, objective, mismatch and rate: time to target mean, SE, seeds arrived, share of
    token terms the clip held, KL per update) and paired costs (`costs`)."""
    B, horizon, C = simulation.batch, PPO_HORIZON, toy_settings.C
    lanes = (simulation.lanes, TRAINER_LANES)
    settings, tags, times = learning_settings(
        scheduler, lanes, B, horizon, simulation.train_time, simulation.sigma
    )
    objectives, skipped = available_objectives(tis, C)
    draws = np.random.default_rng(LEARNING_SEED).random((PPO_SEEDS, horizon, B, toy.T))
    n_m, n_t = len(LEARNING_MISMATCHES), len(tags)
    how = ppo.Ppo(C, toy_settings.noise, TARGET)
    runs = ppo.train_ppo(
        tis,
        np.tile(tags, (n_m, 1, 1)),
        objectives,
        list(RATES.values()),
        draws,
        np.repeat(LEARNING_MISMATCHES, n_t),
        how,
    )
    # each (n_mismatches, n_traces, n_objectives, n_rates, n_seeds, ...)
    runs = ppo.PpoRuns(*(x.reshape(n_m, n_t, *x.shape[1:]) for x in runs))
    time, reached = training.time_to_target(runs.J, times[:, None, None, None], TARGET)
    rows = [
        ppo_row(s, objectives, how, runs, time, reached, (m, s["trace"], j, r))
        for m in range(n_m)
        for s in settings
        for j in range(len(objectives))
        for r in range(len(RATES))
    ]
    return dict(
        n_lanes=simulation.lanes,
        trainer_lanes=TRAINER_LANES,
        B=B,
        horizon=horizon,
        n_seeds=PPO_SEEDS,
        target=TARGET,
        C=C,
        noise=toy_settings.noise,
        clip=how.clip,
        epochs=how.epochs,
        minibatches=how.minibatches,
        rates=RATES,
        objectives=objectives,
        skipped=skipped,
        labels={o.name: o.label for o in ppo.OBJECTIVES},
        mismatches=list(LEARNING_MISMATCHES),
        settings=[{key: v for key, v in s.items() if key != "trace"} for s in settings],
        ppo=rows,
        costs=ppo_costs(settings, time, objectives, lanes),
    )


def ppo_row(s, objectives, how, runs, time, reached, cell):
    """The row of setting s at cell (mismatch, trace, objective, rate) of train_ppo's runs
    (PpoRuns, each (n_mismatches, n_traces, n_objectives, n_rates, n_seeds, ...)), with the
    time to target and reached of each seed; stalled_J is the mean last J of the seeds that
    did not arrive."""
    m, _, j, r = cell
    J = runs.J[cell]
    last = J.shape[-1] - 1 - np.argmax(np.isfinite(J)[..., ::-1], axis=-1)
    stalled = np.take_along_axis(J, last[:, None], axis=-1)[~reached[cell], 0]
    return dict(
        lanes=s["lanes"],
        B=s["B"],
        k=s["k"],
        drop_stale=s["drop_stale"],
        objective=objectives[j],
        mismatch=LEARNING_MISMATCHES[m],
        epochs=how.epochs,
        minibatches=how.minibatches,
        lr=list(RATES.values())[r],
        rate=list(RATES)[r],
        clip=how.clip,
        clip_fraction=float(np.nanmean(runs.clip_fraction[cell])),
        kl_per_update=float(np.nanmean(runs.kl[cell])),
        target=how.target,
        **mean_se(time[cell]),
        reached=int(reached[cell].sum()),
        seeds=len(J),
        stalled_J=float(stalled.mean()) if len(stalled) else None,
    )


def ppo_costs(settings, time, objectives, lanes):
    """Paired over the seeds, per rate, mismatch and objective (time (n_mismatches, n_traces,
    n_objectives, n_rates, n_seeds)): per_version, (time at k = 8 - at k = 2) / 6 at the
    trainer-bound lanes (one throughput: only the lag differs); asynchrony, time at k = 1 -
    at k = 0 at the generation-bound lanes; against_naive, time - naive's at k = 8, 64
    lanes."""
    n_lanes, trainer_lanes = lanes

    def at(n, k):
        return next(
            s["trace"] for s in settings if (s["lanes"], s["k"], s["drop_stale"]) == (n, k, False)
        )

    out = []
    for r, rate in enumerate(RATES):
        for m, mismatch in enumerate(LEARNING_MISMATCHES):
            t = time[m, :, :, r]
            out.append(
                dict(
                    rate=rate,
                    mismatch=mismatch,
                    per_version={
                        name: paired(t[at(trainer_lanes, 8), j] / 6, t[at(trainer_lanes, 2), j] / 6)
                        for j, name in enumerate(objectives)
                    },
                    asynchrony={
                        name: paired(t[at(n_lanes, 1), j], t[at(n_lanes, 0), j])
                        for j, name in enumerate(objectives)
                    },
                    against_naive={
                        name: paired(t[at(trainer_lanes, 8), j], t[at(trainer_lanes, 8), 0])
                        for j, name in enumerate(objectives)
                        if j
                    },
                )
            )
    return out


# ---------------------------------------------------------------- printed


def show(c):
    say(
        f"PPO curves: the toy trained with PPO's clipped objective until J >= {c['target']:g} "
        f"on each k's simulate trace (B = {c['B']}, {c['n_seeds']} seeds, up to "
        f"{c['horizon']} updates). Each update: advantages = (reward - batch mean) / batch "
        f"SD; the clipped surrogate, eps = {c['clip']:g}, {c['epochs']} epochs x "
        f"{c['minibatches']} minibatches, learning rate {c['rates']['1x']:g} (chosen on the "
        f"synchronous run; 3x = {c['rates']['3x']:g} is the sensitivity)."
    )
    say(
        "  Objectives: "
        + "; ".join(f"{SHORT[o]} = {c['labels'][o]}" for o in c["objectives"])
        + "".join(f"; {SHORT[o]} {why}" for o, why in c["skipped"].items())
        + "."
    )
    say(
        "  Time to the target in time units (mean±SE over the seeds; (n) = seeds that reached"
        " it, if not all: the others count at their last update, a lower bound). k = the "
        "staleness bound; '1 drop' = k = 1 dropping stale responses."
    )
    for lanes, name in ((c["n_lanes"], "generation-bound"), (c["trainer_lanes"], "trainer-bound")):
        for mismatch in c["mismatches"]:
            print(f"  {lanes} lanes ({name}), engine mismatch {mismatch:g}, rate 1x:")
            print_ppo_table(c, lanes, mismatch, "1x")
    say(
        "  Paired over the seeds (time units; * = beyond 2 SE). One more version = (time at "
        f"k = 8 - time at k = 2) / 6 at {c['trainer_lanes']} lanes, where k = 2, 4, 8 run at "
        "one throughput:"
    )
    for d in c["costs"]:
        say(
            f"    rate {d['rate']}, mismatch {d['mismatch']:g}: "
            + ", ".join(f"{SHORT[o]} {paired_text(v)}" for o, v in d["per_version"].items())
        )
    say(
        "  clip = share of token terms the clip held still, KL = nats/token an update moves; "
        "every row, and the 3x rate, are in the JSON (ppo_curves.ppo)."
    )


def print_ppo_table(c, lanes, mismatch, rate):
    """One set-up at one mismatch: a row per setting, a column per objective."""
    print(f"  {'k':>7}" + "".join(f"{SHORT[o]:>15}" for o in c["objectives"]))
    rows = [
        r for r in c["ppo"] if (r["lanes"], r["mismatch"], r["rate"]) == (lanes, mismatch, rate)
    ]
    for s in [s for s in c["settings"] if s["lanes"] == lanes]:
        mine = [r for r in rows if (r["k"], r["drop_stale"]) == (s["k"], s["drop_stale"])]
        print(f"  {row_name(s):>7}" + "".join(f"{ppo_cell(r):>15}" for r in mine))
    clip = [r["clip_fraction"] for r in rows]
    kl = [r["kl_per_update"] for r in rows]
    say(f"    clip {min(clip):.3f} to {max(clip):.3f}, KL {min(kl):.4f} to {max(kl):.4f}")


def ppo_cell(r):
    """ "12.3±0.5", and "(97)" if not every seed reached the target."""
    return f"{r['mean']:.1f}±{r['se']:.1f}" + (
        f"({r['reached']})" if r["reached"] < r["seeds"] else ""
    )


def paired_text(v):
    return f"{v['mean']:+.2f}±{v['se']:.2f}" + ("*" if v["significant"] else "")


# ---------------------------------------------------------------- drawn

STYLES = {
    "naive": ("black", "o", "-"),
    "recomputed": ("tab:purple", "s", "--"),
    "decoupled": ("tab:blue", "D", "-"),
    "decoupled_tis": ("tab:green", "^", "-"),
    "decoupled_cap": ("tab:cyan", "P", ":"),
    "decoupled_seq_tis": ("tab:orange", "v", ":"),
}


def draw(results, path):
    """Save the figure of results["ppo_curves"] (or placeholders) to `path`: four panels,
    one per set-up and mismatch, the time to the target against k per objective, and one
    legend under them."""
    from matplotlib.figure import Figure

    c = results.get(KEY)
    fig = Figure(figsize=(13, 10))
    axes = k_panels(
        fig,
        c,
        "PPO",
        results["unavailable"].get(LABEL, "not run"),
        lambda ax, lanes, mismatch: k_panel(ax, c, lanes, mismatch),
    )
    if c:
        handles, _labels = axes[0, 0].get_legend_handles_labels()
        fig.legend(
            handles,
            [f"{SHORT[o]}: {c['labels'][o]}" for o in c["objectives"]],
            loc="lower center",
            ncol=2,
            fontsize=10,
            frameon=False,
        )
    fig.tight_layout(rect=(0, 0.09 if c else 0, 1, 1))
    fig.savefig(path, dpi=80)


TICKS = (10, 20, 30, 50, 70, 100, 150, 200, 300, 500, 700, 1000, 1500, 2000, 3000)


def k_panel(ax, c, lanes, mismatch):
    """Mean time to the target +- 2 SE against k (k = 0 drawn at 0.5), one line per
    objective, at the 1x rate, a hollow marker where not every seed arrived (the mean is
    then a lower bound); k = 1 dropping stale is left to the table."""
    from matplotlib.ticker import FixedLocator, NullFormatter

    for shift, name in zip(np.linspace(-0.08, 0.08, len(c["objectives"])), c["objectives"]):
        rows = [
            r
            for r in c["ppo"]
            if (r["lanes"], r["mismatch"], r["rate"], r["objective"], r["drop_stale"])
            == (lanes, mismatch, "1x", name, False)
        ]
        color, marker, style = STYLES[name]
        x = [max(r["k"], 0.5) * (1 + shift) for r in rows]
        ax.errorbar(
            x,
            [r["mean"] for r in rows],
            yerr=[2 * r["se"] for r in rows],
            fmt=marker + style,
            color=color,
            markersize=6,
            capsize=2,
            label=SHORT[name],
        )
        short = [(xi, r["mean"]) for xi, r in zip(x, rows) if r["reached"] < r["seeds"]]
        if short:
            ax.plot(
                *zip(*short), marker, color=color, markersize=6, markerfacecolor="white", zorder=3
            )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ks = sorted({r["k"] for r in c["ppo"] if r["lanes"] == lanes})
    ax.xaxis.set_major_locator(FixedLocator([max(k, 0.5) for k in ks]))
    ax.set_xticklabels([str(k) for k in ks])
    ax.xaxis.set_minor_formatter(NullFormatter())
    low, high = ax.get_ylim()
    ticks = [v for v in TICKS if low <= v <= high]
    ax.yaxis.set_major_locator(FixedLocator(ticks))
    ax.set_yticklabels([f"{v:g}" for v in ticks])
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel(
        "staleness bound k (k = 0 drawn at 0.5; hollow: not every seed arrived)", fontsize=10
    )
    ax.set_ylabel("time to J >= 0.9 (time units, log), mean ± 2 SE", fontsize=10)
    ax.tick_params(labelsize=10)
    ax.grid(alpha=0.3)
