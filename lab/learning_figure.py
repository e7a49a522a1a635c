"""The --learning-curves figure (given): rl_systems_learning_curves.png.

One row per engine mismatch. Left three panels: the mean J of the trained toy against
simulated time, one panel per weighting scheme, one line per setting (k), with a band of
+- 2 standard errors over the seeds. Right panel: the time to reach the target J against k.
"""
from matplotlib.figure import Figure

from lab.figure import COLORS, MARKERS, placeholder

NAMES = {"none": "none (stale as on-policy)", "token_tis": "token_tis", "seq_tis": "seq_tis"}
SETTING_COLORS = ["black", "tab:blue", "tab:green", "tab:purple", "tab:brown", "tab:red"]
SETTING_STYLES = ["-", "-", "--", ":", "-.", "-"]  # lines that nearly coincide stay visible


def draw(results, path):
    """Save the figure of results["learning_curves"] (or placeholders) to `path`."""
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
                placeholder(ax, results["unavailable"]["Learning curves"])
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
