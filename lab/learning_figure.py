"""The --learning-curves figure (given): rl_systems_learning_curves.png, and --step-grid's.

One row per set-up (16 lanes: generation-bound; 64 lanes: the trainer is) and engine
mismatch. Left three panels, one per weighting scheme: the fraction of seeds that have
reached the target J against simulated time, at the headline step (equal movement per
update), one line per setting (k), each with a dot at its mean time, the number the table
prints. Right panel: the mean time to the target against k, +- 2 standard errors, at equal
movement per update, at the common step and (with --step-grid) at each cell's best step.
"""
import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import NullFormatter, ScalarFormatter

from lab.figure import COLORS, MARKERS, placeholder

NAMES = {"none": "none (stale as on-policy)", "token_tis": "token_tis", "seq_tis": "seq_tis"}
SETTING_COLORS = ["black", "tab:blue", "tab:green", "tab:purple", "tab:brown", "tab:red"]
SETTING_STYLES = ["-", "-", "--", ":", "-.", "-"]
STEP_STYLES = {"equal_kl": ("-", "equal KL per update"), "1x": ("--", "common step 1x"),
               "best": (":", "own best step")}


def setting_name(s):
    return f"k = {s['k']}" + (" dropping stale" if s["drop_stale"] else "")


def draw(results, path):
    """Save the figure of results["learning_curves"] (or placeholders) to `path`."""
    c = results["learning_curves"]
    grid = results.get("step_grid")
    panels = [(lanes, m) for lanes in (c["n_lanes"], c["trainer_lanes"])
              for m in c["mismatches"]] if c else [None]
    fig = Figure(figsize=(19, 4.4 * len(panels)))
    axes = fig.subplots(len(panels), 4, squeeze=False)
    for row_axes, panel in zip(axes, panels):
        if panel is None:
            for ax, title in zip(row_axes, ("Seeds at the target: none",
                                            "Seeds at the target: token_tis",
                                            "Seeds at the target: seq_tis",
                                            "Time to the target against k")):
                placeholder(ax, results["unavailable"]["Learning curves"])
                ax.set_title(f"{title} (Tasks 2 and 3)", fontsize=10)
            continue
        lanes, mismatch = panel
        for ax, scheme in zip(row_axes, c["schemes"]):
            reached_panel(ax, c, lanes, mismatch, scheme)
        k_panel(row_axes[3], c, grid, lanes, mismatch)
    fig.tight_layout()
    fig.savefig(path, dpi=80)


def distinct(c, lanes, mismatch, scheme):
    """(label, sorted times, mean) per distinct setting of one set-up: settings whose times
    are those of an earlier one (k = 2, 4, 8 when generation binds) share its line."""
    shown = []
    for i, s in enumerate(c["settings"]):
        if s["lanes"] != lanes:
            continue
        times = c["sorted_times"][f"{mismatch} {i} {scheme}"]
        same = next((x for x in shown if x[1] == times), None)
        if same:
            same[0].append(setting_name(s).removeprefix("k = "))
        else:
            shown.append(([setting_name(s)], times))
    return [(" = ".join(names), times) for names, times in shown]


def reached_panel(ax, c, lanes, mismatch, scheme):
    """The share of seeds at the target against time (an empirical distribution of the
    first-passage times), a dot at each line's mean time."""
    n = c["n_seeds"]
    for color, style, (label, times) in zip(SETTING_COLORS, SETTING_STYLES,
                                            distinct(c, lanes, mismatch, scheme)):
        share = np.arange(1, n + 1) / n  # after the i-th time, i of the n seeds are there
        ax.step(times, share, style, where="post", color=color, linewidth=1.5, label=label)
        mean = float(np.mean(times))
        ax.plot([mean], [np.searchsorted(times, mean, side="right") / n], "o", color=color,
                markersize=5)
    plain_log(ax, "x")
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("simulated time (time units, log scale); dot: the mean time")
    ax.set_ylabel(f"share of seeds with J >= {c['target']:g}")
    ax.set_title(f"{NAMES[scheme]}, {lanes} lanes, mismatch {mismatch:g}, equal KL per update",
                 fontsize=10)
    ax.legend(fontsize=8, loc="lower right")


def k_panel(ax, c, grid, lanes, mismatch):
    """Time to target against k, mean +- 2 SE, per scheme and step; k = 1 dropping stale as
    stars beside k = 1."""
    sources = [("equal_kl", c[rows_key(c, lanes)]), ("1x", c[rows_key(c, lanes)])]
    if grid:
        sources.append(("best", grid[rows_key(grid, lanes)]))
    for shift, scheme in zip((-0.06, 0.0, 0.06), c["schemes"]):
        for step, rows in sources:
            mine = [r for r in rows if r["mismatch"] == mismatch and r["scheme"] == scheme
                    and (step == "best" or r["step"] == step)]
            style, label = STEP_STYLES[step]
            for drop in (False, True):
                part = [r for r in mine if r["drop_stale"] == drop]
                x = [max(r["k"], 0.5) * (1 + shift) * (1.25 if drop else 1) for r in part]
                ax.errorbar(x, [r["mean"] for r in part], yerr=[2 * r["se"] for r in part],
                            fmt=("*" if drop else MARKERS[scheme] + style),
                            color=COLORS[scheme], markersize=9 if drop else 5, capsize=2,
                            alpha=1.0 if step == "equal_kl" else 0.6,
                            label=f"{scheme}, {label}" if not drop else None)
    ax.set_xscale("log")
    plain_log(ax, "y")
    ks = sorted({r["k"] for r in c[rows_key(c, lanes)]})
    ax.set_xticks([max(k, 0.5) for k in ks], [str(k) for k in ks])
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("staleness bound k (k = 0 drawn at 0.5; stars: k = 1 dropping stale)")
    ax.set_ylabel(f"time to J >= {c['target']:g}, mean +- 2 SE (log)")
    ax.set_title(f"Time to target against k, {lanes} lanes, mismatch {mismatch:g}", fontsize=10)
    ax.legend(fontsize=6.5, ncol=1 if not grid else 2)


def plain_log(ax, which):
    """A log scale on axis `which` ("x" or "y") labelled with plain numbers (10, 100)."""
    (ax.set_xscale if which == "x" else ax.set_yscale)("log")
    axis = ax.xaxis if which == "x" else ax.yaxis
    axis.set_major_formatter(ScalarFormatter())
    axis.set_minor_formatter(NullFormatter())


def rows_key(c, lanes):
    return "generation_bound" if lanes == c["n_lanes"] else "trainer_bound"


def draw_step_grid(results, path):
    """Save the --step-grid figure: each cell's mean time to target against the step scale,
    one panel per set-up and mismatch, one line per scheme and setting."""
    g = results["step_grid"]
    n_rows = len({s["lanes"] for s in g["settings"]}) if g else 1
    fig = Figure(figsize=(16, 4.5 * n_rows))
    axes = fig.subplots(n_rows, 2, squeeze=False).ravel()
    if g is None:
        for ax in axes:
            placeholder(ax, results["unavailable"]["Step grid"])
            ax.set_title("Time to target against the step (Tasks 2 and 3)", fontsize=10)
    panels = [(lanes, m) for lanes in sorted({s["lanes"] for s in g["settings"]})
              for m in g["mismatches"]] if g else []
    for ax, panel in zip(axes, panels):
        lanes, mismatch = panel
        for row in g[rows_key(g, lanes)]:
            if row["mismatch"] != mismatch:
                continue
            scales = [p["scale"] for p in row["grid"]]
            ax.plot(scales, [p["mean"] for p in row["grid"]], MARKERS[row["scheme"]] + "-",
                    color=COLORS[row["scheme"]], alpha=0.3 + 0.7 * (row["k"] == 8),
                    linewidth=1, markersize=3)
            ax.plot([row["scale"]], [row["mean"]], MARKERS[row["scheme"]],
                    color=COLORS[row["scheme"]], markersize=8)
        for scheme in g["schemes"]:
            ax.plot([], [], MARKERS[scheme] + "-", color=COLORS[scheme], label=scheme)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("step scale (x the common step); large marker: a setting's best")
        ax.set_ylabel(f"mean time to J >= {g['target']:g} (log)")
        ax.set_title(f"{lanes} lanes, mismatch {mismatch:g}: one line per setting (k = 8 darkest)",
                     fontsize=10)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
