"""--learning-curves (Tasks 2 and 3): the toy trained on each k's simulate trace, timed to a target.

The trainer is training.py; here the experiment runs Task 2's simulate at each k, trains
the toy on its traces with each of Task 3's schemes, prints and draws
rl_systems_learning_curves.png: one row per engine mismatch; left three panels the mean J
against simulated time, one per scheme, one line per setting (k), with a band of +- 2
standard errors over the seeds; right panel the time to the target J against k.
"""
import textwrap

import numpy as np

import grading
import toy
from experiments import staleness_maths
from experiments import training
from experiments.part2_scheduling import simulation_work
from experiments.part3_mismatch import LARGE_MISMATCH
from experiments.printing import row_name, say
from experiments.staleness import STALENESS_KS, STALENESS_SCHEMES
from experiments.plotting import COLORS, MARKERS, placeholder

KEY, LABEL, TASK, FLAG = "learning_curves", "Learning curves", "3", "learning_curves"
SECONDS = 40.0
NEEDS = "scheduling"  # it trains on Part 2's traces: run.py checks Part 2 ran first
LEARNING_TARGET = 0.5   # the J to reach, fixed before running (J(THETA) = 0.208, at most 1)
# A harder target, added after the first results as a check: 0.5 is reached within two to
# five updates, so it says little about the later, staler ones. Read off the same runs (step 1x).
LEARNING_CHECK_TARGET = 0.9
LEARNING_SEEDS = 200    # seeds of the toy's sampling, the same in every setting and scheme
LEARNING_UPDATES = 32   # updates every run makes (the curves)
LEARNING_MAX_UPDATES = 128  # a run that has not reached the target by then goes on up to this
LEARNING_SEED = 24      # the seed of the uniform draws
STEP_SCALES = (0.5, 1.0, 2.0)   # the grid of step sizes, times the rule's step
LEARNING_MISMATCHES = (0.0, LARGE_MISMATCH)


def arguments(p):
    p.add_argument("--learning-curves", action="store_true",
                   help="also train the toy on each k's simulate trace and time how soon J "
                        "reaches 0.5 (a PNG of its own)")


def work(args):
    return simulation_work(args)


def run(args, results):
    return learning_curves(grading.load("scheduler"), grading.load("tis"), args.lanes,
                           args.batch, train_time=args.train_time, sigma=args.sigma, C=args.C,
                           noise=args.noise)


def learning_curves(scheduler, tis, n_lanes=16, B=32, train_time=1.0, sigma=1.25,
                    n_updates=LEARNING_UPDATES, max_updates=LEARNING_MAX_UPDATES,
                    n_seeds=LEARNING_SEEDS, target=LEARNING_TARGET,
                    mismatches=LEARNING_MISMATCHES, scales=STEP_SCALES, C=2.0,
                    noise="student_t"):
    """Train the toy (experiments/training.py) on each setting's simulate trace (k in STALENESS_KS,
    then k = 1 with drop_stale), with each scheme of STALENESS_SCHEMES, at each mismatch and
    step scale, n_seeds seeds each; from Task 2's `scheduler` and Task 3's `tis`.

    The step rule: step = scale x staleness_maths.step_for_kl(TARGET_KL), the step that moves
    THETA by 0.01 nats per token along the exact gradient, the same for every setting.
    Every run makes n_updates updates; one that has not reached the target by then goes on
    until it does, up to max_updates (the trace is simulated that long).
    Per setting, scheme, scale and mismatch: the time to reach J >= target (mean and
    standard error over the seeds, how many reached it), and at scale 1 the mean J and its
    standard error after each update, at the update's end time, and the time to the harder
    LEARNING_CHECK_TARGET (a run stops once past n_updates and the target, so a seed that
    has not reached it by then counts at its last update, a lower bound). Per mismatch and scale,
    the best cell (least mean time) and every cell's paired difference from it over the
    same seeds: significant when the mean difference exceeds 2 standard errors.
    """
    settings = [(k, False) for k in STALENESS_KS] + [(1, True)]
    runs = [scheduler.simulate(n_lanes, B, k, n_steps=max_updates, train_time=train_time,
                               sigma=sigma, drop_stale=drop) for k, drop in settings]
    tags = [training.batch_tags(r["trace"], B, max_updates) for r in runs]
    times = [[0.0] + [end for _, end in r["updates"]] for r in runs]
    # k = 2, 4, 8 give the same trace here (generation is the bottleneck): train it once
    unique = []
    for i in range(len(settings)):
        if not any(np.array_equal(tags[i], tags[j]) and times[i] == times[j] for j in unique):
            unique.append(i)
    same = [next(j for j in unique if np.array_equal(tags[i], tags[j])) for i in
            range(len(settings))]
    step = staleness_maths.step_for_kl(staleness_maths.TARGET_KL)
    steps = [scale * step for scale in scales]
    draws = np.random.default_rng(LEARNING_SEED).random((n_seeds, max_updates, B, toy.T))
    levels = []
    for mismatch in mismatches:
        J = training.train(tis.importance_weights, tis.pg_estimate, np.array([tags[i] for i in
                           unique]), STALENESS_SCHEMES, steps, draws, mismatch, C, noise,
                           target, n_updates)
        J = J[[unique.index(j) for j in same]]  # back to one row per setting
        reach = [[[training.time_to_target(J[i, s, e], times[i], target) for e in
                   range(len(scales))] for s in range(len(STALENESS_SCHEMES))]
                 for i in range(len(settings))]
        rows = []
        for i, ((k, drop), r) in enumerate(zip(settings, runs)):
            row = dict(k=k, drop_stale=drop, throughput=r["throughput"],
                       times=times[i][:n_updates + 1], schemes={})
            for s, scheme in enumerate(STALENESS_SCHEMES):
                at_1 = J[i, s, list(scales).index(1.0)] if 1.0 in scales else J[i, s, 0]
                row["schemes"][scheme] = dict(
                    time=[mean_se(t) for t, _ in reach[i][s]],
                    n_reached=[int(ok.sum()) for _, ok in reach[i][s]],
                    updates_needed=[int(np.isfinite(J[i, s, e]).sum(axis=-1).max() - 1)
                                    for e in range(len(scales))],
                    J=[float(x) for x in at_1[:, :n_updates + 1].mean(axis=0)],
                    J_se=[float(x) for x in at_1[:, :n_updates + 1].std(axis=0, ddof=1)
                          / np.sqrt(n_seeds)])
                check, reached = training.time_to_target(at_1, times[i], LEARNING_CHECK_TARGET)
                row["schemes"][scheme].update(time_check=mean_se(check),
                                              n_reached_check=int(reached.sum()))
            rows.append(row)
        best = []
        for e in range(len(scales)):
            cells = [(i, s) for i in range(len(settings)) for s in range(len(STALENESS_SCHEMES))]
            bi, bs = min(cells, key=lambda c: (reach[c[0]][c[1]][e][0].mean(), c))
            diffs = {}
            for i, s in cells:
                d = mean_se(reach[i][s][e][0] - reach[bi][bs][e][0])
                diffs[f"{i} {STALENESS_SCHEMES[s]}"] = dict(
                    mean=d["mean"], se=d["se"], significant=d["mean"] > 2 * d["se"])
            best.append(dict(scale=scales[e], row=bi, scheme=STALENESS_SCHEMES[bs],
                             differences=diffs))
        levels.append(dict(mismatch=mismatch, rows=rows, best=best))
    return dict(n_lanes=n_lanes, B=B, train_time=train_time, sigma=sigma, n_updates=n_updates,
                max_updates=max_updates, n_seeds=n_seeds, target=target,
                check_target=LEARNING_CHECK_TARGET,
                J_start=staleness_maths.expected_reward(toy.THETA),
                step=step, kl=staleness_maths.TARGET_KL, scales=list(scales), C=C, noise=noise,
                schemes=list(STALENESS_SCHEMES), levels=levels)


def mean_se(x):
    """dict(mean=, se=) of the numbers x: their mean and its standard error."""
    return dict(mean=float(np.mean(x)), se=float(np.std(x, ddof=1) / np.sqrt(len(x))))


def show(c):
    say(f"Learning curves: the toy trained on each k's simulate trace ({c['n_lanes']} lanes, "
          f"B = {c['B']}, sigma = {c['sigma']}, {c['n_updates']} updates, {c['n_seeds']} seeds)")
    print(f"  step rule: eta = scale x {c['step']:.4g} (one exact-gradient step of {c['kl']:g} "
          f"nats/token at THETA), C = {c['C']}")
    print(f"  time to reach J >= {c['target']:g} (J(THETA) = {c['J_start']:.3f}), mean +- SE over "
          "the seeds; (n) = seeds that reached it,\n  if not all (the others count at the "
          "run's end: a lower bound); throughput of these runs")
    names = {n: n for n in c["schemes"]}
    for level in c["levels"]:
        for e, scale in enumerate(c["scales"]):
            print(f"  engine mismatch {level['mismatch']}, step {scale:g}x:")
            print(f"  {'k':>8}{'throughput':>11}"
                  + "".join(f"{names[n]:>22}" for n in c["schemes"]))
            for row in level["rows"]:
                cells = [f"{v['time'][e]['mean']:.2f} +- {v['time'][e]['se']:.2f}"
                         + (f" ({v['n_reached'][e]})" if v["n_reached"][e] < c["n_seeds"] else "")
                         for v in row["schemes"].values()]
                print(f"  {row_name(row):>8}{row['throughput']:>11.2f}"
                      + "".join(f"{cell:>22}" for cell in cells))
            best = level["best"][e]
            winner = cell_name(level, best["row"], best["scheme"], names)
            ties = [cell_name(level, int(cell.split()[0]), cell.split()[1], names)
                    for cell, d in best["differences"].items() if not d["significant"]]
            print(textwrap.fill(f"best: {winner}; not significantly slower (paired difference "
                                f"<= 2 SE): " + (", ".join(t for t in ties if t != winner)
                                                 or "none"), 98, initial_indent="  ",
                                subsequent_indent="    "))


    say(f"  a harder target as a check (added after the results above; step 1x, the same runs): "
        f"time to J >= {c['check_target']:g}, (n) = seeds that reached it within the run")
    print(f"  {'mismatch, k':>14}" + "".join(f"{n:>22}" for n in c["schemes"]))
    for level in c["levels"]:
        for row in level["rows"]:
            cells = [f"{v['time_check']['mean']:.2f} +- {v['time_check']['se']:.2f}"
                     + (f" ({v['n_reached_check']})" if v["n_reached_check"] < c["n_seeds"] else "")
                     for v in row["schemes"].values()]
            print(f"  {format(level['mismatch'], 'g') + ', ' + row_name(row):>14}"
                  + "".join(f"{cell:>22}" for cell in cells))


def cell_name(level, i, scheme, names):
    """"token_tis at k = 1" or "... at k = 1 drop"."""
    return f"{names[scheme]} at k = {row_name(level['rows'][i])}"


NAMES = {"none": "none (stale as on-policy)", "token_tis": "token_tis", "seq_tis": "seq_tis"}
SETTING_COLORS = ["black", "tab:blue", "tab:green", "tab:purple", "tab:brown", "tab:red"]
SETTING_STYLES = ["-", "-", "--", ":", "-.", "-"]  # lines that nearly coincide stay visible


def draw(results, path):
    """Save the figure of results["learning_curves"] (or placeholders) to `path`."""
    from matplotlib.figure import Figure
    c = results["learning_curves"]
    levels = c["levels"] if c else [None]
    fig = Figure(figsize=(17, 4.6 * len(levels)))
    axes = fig.subplots(len(levels), 4, squeeze=False)
    for row_axes, level in zip(axes, levels):
        if level is None:
            for ax, title in zip(row_axes, ("J against simulated time: none",
                                            "J against simulated time: token_tis",
                                            "J against simulated time: seq_tis",
                                            "Time to the target J against k")):
                placeholder(ax, results["unavailable"][LABEL])
                ax.set_title(f"{title} (Tasks 2 and 3)", fontsize=10)
            continue
        for ax, scheme in zip(row_axes, c["schemes"]):
            curves_panel(ax, c, level, scheme)
        target_panel(row_axes[3], c, level)
    fig.tight_layout()
    fig.savefig(path, dpi=90)


def settings(level):
    """(label, row) per distinct run: rows whose curves and times are the same as an earlier
    row's (k = 2, 4, 8 when generation is the bottleneck) share one line and its label."""
    shown = []
    for row in level["rows"]:
        name = f"k = {row['k']}" + (" dropping stale" if row["drop_stale"] else "")
        same = next((s for s in shown if s[1]["times"] == row["times"] and s[1]["schemes"] ==
                     row["schemes"]), None)
        if same:
            same[0].append(name.removeprefix("k = "))
        else:
            shown.append(([name], row))
    return [(" = ".join(names), row) for names, row in shown]


def curves_panel(ax, c, level, scheme):
    """Mean J against time, +- 2 SE bands, one line per distinct setting."""
    runs = settings(level)
    end = min(row["times"][-1] for _, row in runs)  # every line drawn over the same window
    for color, style, (label, row) in zip(SETTING_COLORS, SETTING_STYLES, runs):
        v = row["schemes"][scheme]
        low = [m - 2 * s for m, s in zip(v["J"], v["J_se"])]
        high = [m + 2 * s for m, s in zip(v["J"], v["J_se"])]
        # J changes only when an update ends: steps, not slopes
        ax.plot(row["times"], v["J"], style, color=color, label=label, linewidth=1.6,
                drawstyle="steps-post")
        ax.fill_between(row["times"], low, high, color=color, alpha=0.2, linewidth=0,
                        step="post")
    ax.axhline(c["target"], color="gray", linestyle="--", linewidth=1)
    ax.text(end, c["target"], f" target {c['target']:g}", va="bottom", ha="right", fontsize=8,
            color="gray")
    ax.set_xlim(0, end)
    ax.set_ylim(0, 1)
    ax.set_xlabel("simulated time (J read at each update's end)")
    ax.set_ylabel("J, exact (mean over seeds, band +- 2 SE)")
    ax.set_title(f"{NAMES[scheme]}, engine mismatch {level['mismatch']:g}, step 1x", fontsize=10)
    ax.legend(fontsize=8, loc="lower right")


def target_panel(ax, c, level):
    """Time to reach the target J against k, mean +- 2 SE, per scheme, at step 1x; the
    k = 1 run that drops stale responses as stars beside k = 1."""
    e = c["scales"].index(1.0)
    kept = [row for row in level["rows"] if not row["drop_stale"]]
    dropped = [row for row in level["rows"] if row["drop_stale"]]
    for shift, scheme in zip((-0.08, 0.0, 0.08), c["schemes"]):
        for rows, marker, size in ((kept, MARKERS[scheme], 6), (dropped, "*", 12)):
            x = [row["k"] + shift + (0.25 if row["drop_stale"] else 0) for row in rows]
            y = [row["schemes"][scheme]["time"][e]["mean"] for row in rows]
            err = [2 * row["schemes"][scheme]["time"][e]["se"] for row in rows]
            ax.errorbar(x, y, yerr=err, fmt=marker + ("-" if rows is kept else ""),
                        color=COLORS[scheme], markersize=size, capsize=3,
                        label=NAMES[scheme] if rows is kept else None)
    ax.plot([], [], "*", color="gray", markersize=12, label="k = 1 dropping stale (beside k = 1)")
    ax.set_xscale("symlog", linthresh=1)
    ax.set_xticks([row["k"] for row in kept], [str(row["k"]) for row in kept])
    ax.set_ylim(bottom=0)
    ax.set_xlabel("staleness bound k (versions ahead)")
    ax.set_ylabel(f"time to reach J >= {c['target']:g} (mean +- 2 SE)")
    ax.set_title(f"Time to target, engine mismatch {level['mismatch']:g}, step 1x", fontsize=10)
    ax.legend(fontsize=8)
