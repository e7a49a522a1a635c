"""The figure (given): rl_systems.png drawn from the numbers run.py computed.

Top row: the memory bill and the scheduling experiment. Bottom row: the
mismatch experiment. A part whose task is not implemented yet is drawn as a
labelled placeholder panel.
"""
import matplotlib

matplotlib.use("Agg")  # draw to a file; no screen needed
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.collections import PolyCollection  # noqa: E402

from lab import PARTS  # noqa: E402
from lab.model_shapes import GPU_GB  # noqa: E402

COLORS = {"none": "black", "token": "tab:blue", "token_tis": "tab:green", "seq": "tab:red",
          "seq_tis": "tab:orange", "token_mask": "tab:cyan", "seq_mask": "tab:pink",
          "geo_mask": "tab:olive"}
# Panel titles, left to right, per part (also on a part's placeholder panels).
TITLES = {"memory": ["Model state of a 7B model"],
          "scheduling": ["Throughput vs synchronous", "Generation lanes busy", "Price: policy lag"],
          "mismatch": ["Bias vs mismatch", "Noise vs mismatch", "Total error vs mismatch",
                       "Bigger batches cut noise, not bias"],
          "length_sweep": ["Longer responses: relative error", "Does the mean estimate point right?",
                           "Weights that vanish"]}
LABELS = {"none": "none (ignore mismatch)", "token": "token IS", "token_tis": "token TIS",
          "seq": "sequence IS", "seq_tis": "sequence TIS", "token_mask": "token mask (3c)",
          "seq_mask": "sequence mask (3c)", "geo_mask": "geometric mask (3c)"}


def draw(results, path):
    """Save the 2 x 4 figure for `results` (the dict run.py writes as JSON) to `path`."""
    plt.rcParams.update({"font.size": 10, "axes.titlesize": 11, "axes.grid": True,
                         "grid.alpha": 0.3,
                         "axes.titley": 1.0})  # fixed: finding room above ticks is slow
    sweep = "length_sweep" in results  # run.py --length-sweep: a third row
    fig, axes = plt.subplots(3 if sweep else 2, 4, figsize=(18, 13 if sweep else 8.5))
    top, bottom = axes[:2]
    parts = [("memory", [top[0]], memory_panel),
             ("scheduling", top[1:], scheduling_panels),
             ("mismatch", bottom, mismatch_panels)]
    if sweep:
        parts.append(("length_sweep", axes[2], length_panels))
    for key, panels, draw_part in parts:
        part, task = PARTS[key]
        if results[key] is None:
            for ax in panels:
                placeholder(ax, results["unavailable"][part])
        elif key == "mismatch":
            draw_part(results[key], *panels, masking=results.get("masking"))
        else:
            draw_part(results[key], *panels)
        for ax, title in zip(panels, TITLES[key]):
            ax.set_title(f"{title} (Task {task})")
    for ax in fig.axes:
        ax.minorticks_off()  # a log axis has dozens of unlabelled ticks: slow to draw, no help
    fig.suptitle(f"RL systems on a laptop. Code under test: {results['code']}", fontsize=13)
    # Fixed margins instead of tight_layout, which lays out every label a second time,
    # and 90 dpi: the saved figure costs half as much and reads the same on a screen.
    fig.subplots_adjust(left=0.045, right=0.99, bottom=0.07, top=0.91, wspace=0.3, hspace=0.3)
    fig.savefig(path, dpi=90, pil_kwargs={"compress_level": 1})  # fast; the file is bigger
    plt.close(fig)


def placeholder(ax, text):
    ax.text(0.5, 0.5, text, ha="center", va="center", fontsize=13, color="gray",
            transform=ax.transAxes)
    ax.set_xticks([])
    ax.set_yticks([])


def memory_panel(memory, ax):
    bars = {"PPO": memory["ppo_7b_gb"], "GRPO": memory["grpo_7b_gb"],
            "GRPO + LoRA": memory["grpo_lora_7b_gb"]}
    ax.bar(list(bars), list(bars.values()), color=["tab:red", "tab:blue", "tab:green"])
    for x, gb in enumerate(bars.values()):
        ax.text(x, gb, f"{gb:.3g} GB", ha="center", va="bottom")  # 252, 126, 14.6 as printed
    ax.set_ylim(0, 1.1 * max(bars.values()))  # room for the tallest bar's label
    ax.axhline(GPU_GB, color="gray", linestyle="--", label=f"one {GPU_GB} GB GPU")
    ax.set_ylabel("GB (10^9 bytes), before activations and KV cache")
    ax.legend(loc="upper right")


def scheduling_panels(s, ax_gain, ax_util, ax_lag):
    setup = f"{s['n_lanes']} lanes, B = {s['B']}, sigma = {s['sigma']}, train_time = {s['train_time']}"
    for ax, key, ylabel in ((ax_gain, "throughput_gain", "x throughput of k = 0"),
                            (ax_util, "utilization", "lane utilization (fraction)")):
        ax.plot(s["k"], s[key], "o-", color="tab:purple", label=setup)
        ax.legend(loc="lower right", fontsize=8)
    ax_util.set_ylim(0, 1.05)
    # The mean hides the tail: k bounds how far generation runs ahead, not how old
    # a trained response can be.
    ax_lag.plot(s["k"], s["max_lag"], "^-", color="tab:red", label="max")
    ax_lag.plot(s["k"], s["lag_p95"], "s-", color="tab:orange", label="95th percentile")
    ax_lag.plot(s["k"], s["mean_lag"], "o-", color="tab:purple", label="mean")
    ax_lag.plot(s["k"], s["k"], ":", color="gray", label="lag = k")
    ax_lag.legend(title=setup, loc="upper left", fontsize=8, title_fontsize=7)
    ax_lag.set_ylim(-0.5, 1.7 * max(s["max_lag"] + s["k"]) + 1)  # room for the legend on top
    for ax, ylabel in ((ax_gain, "x throughput of k = 0"), (ax_util, "lane utilization (fraction)"),
                       (ax_lag, "lag of trained responses (versions)")):
        ax.set_xlabel("staleness bound k (versions ahead)")
        ax.set_ylabel(ylabel)
        ax.set_xticks(s["k"])


def mismatch_panels(m, ax_bias, ax_std, ax_rmse, ax_batch, masking=None):
    """The four bottom panels; the masked schemes of Task 3c dashed, once it is done."""
    setup = f"batch of {m['batch_size']}, C = {m['C']}, {m['noise']} noise"
    schemes = m["schemes"] | (masking["schemes"] if masking else {})
    for scheme, stats in schemes.items():
        style = dict(color=COLORS[scheme], label=LABELS[scheme], marker=".",
                     linestyle="--" if scheme.endswith("_mask") else "-")
        ax_bias.plot(m["mismatch"], stats["bias"], **style)
        ax_std.plot(m["mismatch"], [v**0.5 for v in stats["variance"]], **style)
        ax_rmse.plot(m["mismatch"], stats["rmse"], **style)
    for ax, ylabel in ((ax_bias, "|| E[estimate] - true gradient ||"),
                       (ax_std, "standard deviation of the estimate"),
                       (ax_rmse, "RMSE = sqrt(bias^2 + variance)")):
        ax.set_xlabel("mismatch (scale of the logit perturbation)")
        ax.set_ylabel(ylabel)
    # one legend for the three panels (same curves), where the curves leave room for it
    ax_rmse.legend(title=f"{setup}\n(the same lines in the three panels)", fontsize=8,
                   title_fontsize=8, loc="upper left")
    ax_std.set_yscale("log")
    ax_rmse.set_yscale("log")

    by = m["by_batch_size"]
    for scheme in ("none", "seq_tis"):
        ax_batch.plot(by["batch_size"], by[scheme]["bias"], "o-", color=COLORS[scheme],
                      label=f"{LABELS[scheme]}: bias")
        ax_batch.plot(by["batch_size"], [v**0.5 for v in by[scheme]["variance"]], "s--",
                      color=COLORS[scheme], label=f"{LABELS[scheme]}: std")
    ax_batch.set_xscale("log", base=2)
    ax_batch.set_yscale("log")
    ax_batch.set_xlabel("batch size (responses)")
    ax_batch.set_ylabel("bias or standard deviation")
    ax_batch.legend(title=f"mismatch {by['mismatch']}", fontsize=8, title_fontsize=8,
                    loc="upper right")


def length_panels(s, ax_rmse, ax_cos, ax_zero, ax_legend):
    """The length sweep's three panels; its legend gets a panel of its own (ax_legend),
    as inside any of them it would hide the curves."""
    setup = f"per-token mismatch {s['per_token_mismatch']}, batch of {s['batch_size']}"
    for scheme, stats in s["schemes"].items():
        # sequence IS is drawn wide, so sequence TIS on top of it leaves it visible
        style = dict(color=COLORS[scheme], label=LABELS[scheme], marker=".",
                     linestyle="--" if scheme.endswith("_mask") else "-",
                     linewidth=4 if scheme == "seq" else 1.5)
        ax_rmse.errorbar(s["T"], stats["rmse"], yerr=stats["rmse_stderr"], **style)
        ax_cos.plot(s["T"], stats["cosine"], **style)
        ax_zero.plot(s["T"], stats["zero_weight_share"], **style)
    ax_rmse.axhline(1.0, color="gray", linestyle=":", label="an estimate that is always 0")
    ax_rmse.set_yscale("log")
    for ax, ylabel in ((ax_rmse, "RMSE / ||true gradient||"),
                       (ax_cos, "cos(mean estimate, true gradient)"),
                       (ax_zero, "share of token weights < 1e-6")):
        ax.set_xscale("log", base=2)
        ax.set_xticks(s["T"], [str(T) for T in s["T"]])
        ax.set_xlabel("response length T (tokens); T = 6 exact, longer Monte Carlo")
        ax.set_ylabel(ylabel)
    ax_legend.axis("off")
    ax_legend.legend(*ax_rmse.get_legend_handles_labels(), title=setup, fontsize=9,
                     title_fontsize=9, loc="center left")


# ---------------------------------------------------------------- the optional figures

def draw_equal_hardware(results, path):
    """Save the --equal-hardware figure: throughput of each async split vs the sync run."""
    fig, ax = plt.subplots(figsize=(7, 4.5))
    e = results["equal_hardware"]
    if e is None:
        placeholder(ax, results["unavailable"]["Equal hardware"])
    else:
        equal_hardware_panel(e, ax)
    ax.set_title(f"Same {e['gpus'] if e else 'G'} GPUs: synchronous vs asynchronous "
                 f"(Task {PARTS['equal_hardware'][1]})")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def equal_hardware_panel(e, ax):
    G = e["gpus"]
    g = [s["gen_gpus"] for s in e["splits"]]
    x = [s["throughput"] for s in e["splits"]]
    ax.plot(g, x, "o-", color="tab:purple",
            label=f"asynchronous, k = {e['k']}: g GPUs generate, {G} - g train")
    excluded = [s for s in e["splits"] if not s["feasible"]]
    if excluded:
        ax.plot([s["gen_gpus"] for s in excluded], [s["throughput"] for s in excluded], "x",
                color="black", markersize=10, label="excluded: trainers cannot hold the model")
    ax.axhline(e["sync_throughput"], color="gray", linestyle="--",
               label=f"synchronous, colocated: {e['sync_throughput']:.2f}")
    if e["best_gen_gpus"] is not None:
        ax.plot([e["best_gen_gpus"]], [e["best_throughput"]], "*", color="tab:red", markersize=16,
                label=f"best: g = {e['best_gen_gpus']}, {e['speedup']:.2f}x synchronous")
    ax.set_xlabel("g, GPUs that generate")
    ax.set_ylabel("throughput (trained responses per time unit)")
    ax.set_xticks(g if G <= 16 else g[::2])
    ax.legend(title=f"{e['lanes_per_gpu']} lane(s) per GPU, update = {e['train_work']:g} "
                    f"GPU-time, B = {e['B']}", fontsize=8, title_fontsize=8, loc="upper left")


def draw_timeline(results, path):
    """Save the --timeline figure: one row per lane, one bar per response, the trainer below."""
    t = results["timeline"]
    runs = t["runs"] if t else [None, None]
    fig, axes = plt.subplots(len(runs), 1, figsize=(15, 4.2 * len(runs)), sharex=True)
    fig.subplots_adjust(left=0.06, right=0.86, top=0.95, bottom=0.08, hspace=0.2)
    task = PARTS["timeline"][1]
    for k, (ax, run) in enumerate(zip(axes, runs)):  # the runs are k = 0 and k = 1
        if run is None:
            placeholder(ax, results["unavailable"]["Timeline"])
            ax.set_title(f"Timeline of the generation lanes at k = {k} (Task {task})")
        else:
            timeline_panel(t, run, ax)
            caption = TIMELINE_CAPTIONS.get(run["k"], f"k = {run['k']}")
            ax.set_title(f"{caption}: lanes busy {run['busy']:.0%} of this window (Task {task})",
                         loc="left")
    if t:
        axes[-1].set_xlabel(f"time (mean response length = 1); {t['n_lanes']} lanes, B = {t['B']}, "
                            f"train_time = {t['train_time']}, sigma = {t['sigma']}")
    fig.savefig(path, dpi=100)
    plt.close(fig)


def draw_staleness(results, path):
    """Save the --staleness figure: the batch estimate's RMSE, and the expected gain of J
    per time unit, against k, for each weighting scheme; k = 1 with drop_stale as stars."""
    s = results["staleness"]
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.8))
    titles = ["Stale batches: error of the gradient", "What a time unit buys: gain of J"]
    for ax, title in zip(axes, titles):
        if s is None:
            placeholder(ax, results["unavailable"]["Staleness"])
        ax.set_title(f"{title} (Tasks 2 and 3)")
    if s is not None:
        staleness_panels(s, *axes)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def staleness_panels(s, ax_error, ax_gain):
    """RMSE (solid) and bias (dashed) against k, and the gain of J per time unit; the row
    of k = 1 with drop_stale as stars."""
    kept = [row for row in s["rows"] if not row["drop_stale"]]
    dropped = [row for row in s["rows"] if row["drop_stale"]]
    ks = [row["k"] for row in kept]
    for scheme in s["schemes"]:
        label, color = STALENESS_LABELS[scheme], COLORS[scheme]
        for ax, key, style in ((ax_error, "rmse", "o-"), (ax_error, "bias", "s--"),
                               (ax_gain, "gain_per_time", "o-")):
            ax.plot(ks, [row["schemes"][scheme][key] for row in kept], style, color=color,
                    label=f"{label}: {key}" if ax is ax_error else label)
            ax.plot([row["k"] for row in dropped], [row["schemes"][scheme][key] for row in dropped],
                    "*", color=color, markersize=13)
    ax_gain.plot([], [], "*", color="gray", markersize=13, label="k = 1 dropping stale responses")
    for ax, ylabel in ((ax_error, "error of the batch estimate at version v"),
                       (ax_gain, "expected gain of J per time unit")):
        ax.set_xlabel("staleness bound k (versions ahead)")
        ax.set_ylabel(ylabel)
        ax.set_xticks(ks)
    ax_error.set_ylim(bottom=0)
    ax_error.legend(fontsize=8, loc="center right", ncol=2)
    ax_gain.set_ylim(bottom=0)
    ax_gain.legend(title=f"one update moves {s['kl']:g} nats/token; B = {s['B']}, "
                         f"engine mismatch {s['mismatch']}", fontsize=8, title_fontsize=8,
                   loc="lower right")


STALENESS_LABELS = {"none": "none (stale as on-policy)", "token_tis": "token TIS",
                    "seq_tis": "sequence TIS"}


TIMELINE_CAPTIONS = {0: "k = 0, synchronous: every batch waits for its slowest response",
                     1: "k = 1: the lanes start the next batch while the trainer works"}
# Version v is drawn in colour v mod 20: tab20's ten strong colours, then its ten pale ones.
VERSION_COLORS = plt.get_cmap("tab20").colors[0::2] + plt.get_cmap("tab20").colors[1::2]


def timeline_panel(t, run, ax):
    """Bars [start, end) on each response's lane, coloured by the version that generated it;
    the trainer's updates on a row of their own, coloured by the version they produce."""
    trainer_row = t["n_lanes"] + 1
    kept = [r for r in run["responses"] if not r["dropped"]]
    dropped = [r for r in run["responses"] if r["dropped"]]
    bars(ax, [(r["lane"], r["start"], r["end"]) for r in kept], 0.8, edgecolor="white",
         linewidth=0.5, facecolor=[VERSION_COLORS[r["tag"] % 20] for r in kept])
    if dropped:
        bars(ax, [(r["lane"], r["start"], r["end"]) for r in dropped], 0.8, facecolor="lightgray",
             edgecolor="dimgray", hatch="////", label="dropped as stale")
    bars(ax, [(trainer_row, start, end) for start, end in run["updates"]], 1.6, edgecolor="black",
         facecolor=[VERSION_COLORS[(v + 1) % 20] for v in range(len(run["updates"]))])
    for v, (start, end) in enumerate(run["updates"]):
        ax.text((start + end) / 2, trainer_row, f"v{v + 1}", ha="center", va="center", fontsize=7)
    for r in kept:  # the version on the bars wide enough to hold it
        if min(r["end"], t["window"]) - r["start"] > 0.03 * t["window"]:
            ax.text(r["start"] + 0.1, r["lane"], f"v{r['tag']}", va="center", fontsize=6)
    ax.set_xlim(0, t["window"])
    ax.set_ylim(trainer_row + 1.2, -0.8)  # lane 0 on top, the trainer at the bottom
    rows = list(range(0, t["n_lanes"], max(1, t["n_lanes"] // 16)))
    ax.set_yticks(rows + [trainer_row], [f"lane {i}" for i in rows] + ["trainer"], fontsize=7)
    ax.grid(False)
    ax.text(1.005, 0.5, "colour = policy version\nthat generated it\n(trainer: version\nit "
            "produces)\nwhite = idle lane", transform=ax.transAxes, fontsize=8, va="center")
    if dropped:
        ax.legend(loc="upper left", bbox_to_anchor=(1.005, 1.0), fontsize=8)


def bars(ax, spans, height, **style):
    """Draw (row, start, end) spans as rectangles, all in one collection (fast for hundreds)."""
    boxes = [[(start, row - height / 2), (end, row - height / 2), (end, row + height / 2),
              (start, row + height / 2)] for row, start, end in spans]
    ax.add_collection(PolyCollection(boxes, **style))
