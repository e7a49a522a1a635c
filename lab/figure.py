"""The figure (given): rl_systems.png drawn from the numbers run.py computed.

Top row: the memory bill and the scheduling experiment. Bottom row: the
mismatch experiment. A part whose task is not implemented yet is drawn as a
labelled placeholder panel.
"""
import matplotlib

matplotlib.use("Agg")  # draw to a file; no screen needed
import matplotlib.pyplot as plt  # noqa: E402

from lab import PARTS  # noqa: E402
from lab.model_shapes import GPU_GB  # noqa: E402

COLORS = {"none": "black", "token": "tab:blue", "token_tis": "tab:green", "seq": "tab:red",
          "seq_tis": "tab:orange"}
# Panel titles, left to right, per part (also on a part's placeholder panels).
TITLES = {"memory": ["Model state of a 7B model"],
          "scheduling": ["Throughput vs synchronous", "Generation lanes busy", "Price: policy lag"],
          "mismatch": ["Bias vs mismatch", "Noise vs mismatch", "Total error vs mismatch",
                       "Bigger batches cut noise, not bias"]}
LABELS = {"none": "none (ignore mismatch)", "token": "token IS", "token_tis": "token TIS",
          "seq": "sequence IS", "seq_tis": "sequence TIS"}


def draw(results, path):
    """Save the 2 x 4 figure for `results` (the dict run.py writes as JSON) to `path`."""
    plt.rcParams.update({"font.size": 10, "axes.titlesize": 11, "axes.grid": True,
                         "grid.alpha": 0.3,
                         "axes.titley": 1.0})  # fixed: finding room above ticks is slow
    fig, axes = plt.subplots(2, 4, figsize=(18, 8.5))
    top, bottom = axes
    parts = [("memory", [top[0]], memory_panel),
             ("scheduling", top[1:], scheduling_panels),
             ("mismatch", bottom, mismatch_panels)]
    for key, panels, draw_part in parts:
        part, task = PARTS[key]
        if results[key] is None:
            for ax in panels:
                placeholder(ax, results["unavailable"][part])
        else:
            draw_part(results[key], *panels)
        for ax, title in zip(panels, TITLES[key]):
            ax.set_title(f"{title} (Task {task})")
    fig.suptitle(f"RL systems on a laptop. Code under test: {results['code']}", fontsize=13)
    # Fixed margins instead of tight_layout, which lays out every label a second time,
    # and 90 dpi: the saved figure costs half as much and reads the same on a screen.
    fig.subplots_adjust(left=0.045, right=0.99, bottom=0.07, top=0.91, wspace=0.3, hspace=0.3)
    fig.savefig(path, dpi=90)
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
                            (ax_util, "utilization", "lane utilization (fraction)"),
                            (ax_lag, "mean_lag", "mean lag (versions)")):
        ax.plot(s["k"], s[key], "o-", color="tab:purple", label=setup)
        ax.set_xlabel("staleness bound k (versions ahead)")
        ax.set_ylabel(ylabel)
        ax.set_xticks(s["k"])
        ax.legend(loc="lower right", fontsize=8)
    ax_util.set_ylim(0, 1.05)


def mismatch_panels(m, ax_bias, ax_std, ax_rmse, ax_batch):
    setup = f"batch of {m['batch_size']}, C = {m['C']}, {m['noise']} noise"
    for scheme, stats in m["schemes"].items():
        style = dict(color=COLORS[scheme], label=LABELS[scheme], marker=".")
        ax_bias.plot(m["mismatch"], stats["bias"], **style)
        ax_std.plot(m["mismatch"], [v**0.5 for v in stats["variance"]], **style)
        ax_rmse.plot(m["mismatch"], stats["rmse"], **style)
    for ax, ylabel in ((ax_bias, "|| E[estimate] - true gradient ||"),
                       (ax_std, "standard deviation of the estimate"),
                       (ax_rmse, "RMSE = sqrt(bias^2 + variance)")):
        ax.set_xlabel("mismatch (scale of the logit perturbation)")
        ax.set_ylabel(ylabel)
        ax.legend(title=setup, fontsize=8, title_fontsize=8, loc="upper left")
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
