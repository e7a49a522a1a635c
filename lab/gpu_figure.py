"""The --preset figure (given): predicted against published numbers, and the tail of a step.

Kept apart from lab/figure.py: one figure per file of the optional parts that
have their own module. A row per preset: on the left what it is compared with
(AReaL's Fig. 7 throughput over k, Table 2's hours, verl's seconds per phase), on
the right the engine that finished last in one synchronous step.
"""
from matplotlib.figure import Figure

from lab.figure import placeholder

PREDICTED, PUBLISHED = "tab:blue", "tab:orange"


def draw(results, path):
    """Save rl_systems_gpu_model.png: a row per preset."""
    runs = results["gpu_model"]
    rows = len(runs) if runs else 1
    fig = Figure(figsize=(12, 3.8 * rows))
    axes = fig.subplots(rows, 2, squeeze=False, gridspec_kw=dict(width_ratios=(1.3, 1)))
    if not runs:
        for ax, title in zip(axes[0], ("GPU model: predicted against published",
                                       "GPU model: the slowest engine's tail")):
            placeholder(ax, results["unavailable"]["GPU model"])
            ax.set_title(f"{title} (Tasks 1 and 2)", fontsize=10)
    for (ax_left, ax_tail), g in zip(axes, (runs or {}).values()):
        if g["published"]["curve"]:
            curve_panel(g, ax_left)
        elif g["scaling"]:
            phase_panel(g, ax_left)
        else:
            hours_panel(g, ax_left)
        tail_panel(g, ax_tail)
    fig.tight_layout()
    fig.savefig(path, pil_kwargs={"compress_level": 1})


def curve_panel(g, ax):
    """Trained tokens per second against the staleness bound k: the model, Fig. 7."""
    labels = [k for k, _ in g["published"]["curve"]]
    published = [v / 1e3 for _, v in g["published"]["curve"]]
    predicted = [g["sync"]["throughput"] / 1e3] + [r["throughput"] / 1e3 for r in g["by_k"]]
    x = range(len(labels))
    ax.plot(x, predicted, "o-", color=PREDICTED, label="GPU model (k = 0 fitted, rest predicted)")
    ax.plot(x, published, "s--", color=PUBLISHED, label="AReaL v0.3, Fig. 7 (published)")
    ax.set_xticks(list(x), ["∞" if k == "no bound" else k for k in labels])
    ax.set_xlabel("staleness bound k")
    ax.set_ylabel("trained tokens per second (thousands)")
    ax.set_ylim(0, None)
    ax.set_title(f"{g['preset']}: throughput over k, {g['gen_gpus']} generate, "
                 f"{g['gpus'] - g['gen_gpus']} train", fontsize=10)
    ax.legend(fontsize=8, loc="lower right")


def hours_panel(g, ax):
    """Hours of the run, synchronous and asynchronous: the model beside the paper."""
    labels = [f"synchronous\n({g['baseline']}, k = 0)", f"asynchronous\n(k = {g['k']})"]
    predicted = [g["sync"]["hours"], g["asynchronous"]["hours"]]
    published = [g["published"]["sync_hours"], g["published"]["async_hours"]]
    x = range(len(labels))
    ax.bar([i - 0.2 for i in x], predicted, 0.4, color=PREDICTED, label="GPU model (predicted)")
    ax.bar([i + 0.2 for i in x], published, 0.4, color=PUBLISHED, label="published")
    ax.set_xticks(list(x), labels)
    ax.set_ylabel(f"hours for {g['n_steps']} batches")
    ax.set_title(f"{g['preset']}: hours, speedup {g['speedup']:.2f}x predicted, "
                 f"{g['published']['speedup']:.2f}x published", fontsize=10)
    ax.legend(fontsize=8)


PHASES = (("gen", "generation"), ("old_log_prob", "old_log_prob"),
          ("update_actor", "update_actor"))


def phase_panel(g, ax):
    """verl's seconds per step: colocated runs split into phases, asynchronous runs whole;
    for each run the model (left bar) beside the README (right bar, hatched)."""
    published = published_scaling(g)
    colours = ("tab:green", "tab:purple", "tab:red")
    for i, row in enumerate(g["scaling"]):
        for dx, values, hatch in ((-0.2, row, ""), (0.2, published[i], "//")):
            if row["mode"] == "colocated":
                bottom = 0.0
                for (key, label), colour in zip(PHASES, colours):
                    ax.bar(i + dx, values[key], 0.38, bottom=bottom, color=colour, hatch=hatch,
                           edgecolor="white", label=label if i == 0 and not hatch else None)
                    bottom += values[key]
            else:
                ax.bar(i + dx, values["step"], 0.38, color="tab:gray", hatch=hatch,
                       edgecolor="white", label="asynchronous step" if i == 3 and not hatch
                       else None)
    ax.set_xticks(range(len(g["scaling"])),
                  [f"{r['gpus']}\n{r['mode']}" for r in g["scaling"]], fontsize=8)
    ax.set_ylabel("seconds per step")
    ax.set_title(f"{g['preset']}: per phase, model (plain) beside README (hatched)",
                 fontsize=10)
    ax.legend(fontsize=7, ncol=2)


def published_scaling(g):
    """The README's numbers for each row of g['scaling'], from the held-out list."""
    table = {what: published for what, _, published, _ in g["held_out"] + g["fit"]}
    rows = []
    for r in g["scaling"]:
        if r["mode"] == "colocated":
            prefix = f"colocated {r['gpus']}: "
            rows.append({key: table[f"{prefix}{key} s"] for key, _ in PHASES})
        else:
            rows.append(dict(step=table[f"{r['mode']}: step s"]))
    return rows


def tail_panel(g, ax):
    """Tokens per second of the engine that finished last over one synchronous step's
    generation, with the time by which 90% of the step's responses had finished."""
    s = g["sync"]
    points = s["tokens_per_second"]
    ax.step([t for t, _ in points], [v for _, v in points], where="post", color=PREDICTED)
    ax.axvline(s["t90"], color="black", linestyle=":",
               label=f"90% of responses done: the last 10% take {s['tail_share']:.0%}")
    ax.set_xlim(0, s["generation_seconds"])
    ax.set_ylim(0, None)
    ax.set_xlabel("seconds into one synchronous step's generation")
    ax.set_ylabel("tokens per second, one engine")
    engine = f"{g['tp']} x {g['gpu']}" if g["tp"] > 1 else f"1 {g['gpu']}"
    ax.set_title(f"{g['preset']}: the last of {s['engines']} engines ({engine} each) "
                 f"to finish", fontsize=10)
    ax.legend(fontsize=8, loc="upper right")
