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
                         "grid.alpha": 0.3})
    sweep = "length_sweep" in results  # run.py --length-sweep: a third row
    fig, axes = plt.subplots(3 if sweep else 2, 4, figsize=(18, 13 if sweep else 8.5))
    top, bottom = axes[:2]
    parts = [("memory", [top[0]], memory_panel),
             ("scheduling", top[1:], scheduling_panels),
             ("mismatch", bottom, mismatch_panels)]
    if sweep:
        parts.append(("length_sweep", axes[2][:3], length_panels))
        axes[2][3].axis("off")
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
    fig.suptitle(f"RL systems on a laptop. Code under test: {results['code']}", fontsize=13)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
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
        ax.text(x, gb, f"{gb:.0f} GB", ha="center", va="bottom")
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
    ax_batch.legend(title=f"mismatch {by['mismatch']}", fontsize=8, title_fontsize=8)


def length_panels(s, ax_rmse, ax_cos, ax_zero):
    setup = f"per-token mismatch {s['per_token_mismatch']}, batch of {s['batch_size']}"
    for scheme, stats in s["schemes"].items():
        style = dict(color=COLORS[scheme], label=LABELS[scheme], marker=".",
                     linestyle="--" if scheme.endswith("_mask") else "-")
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
    ax_rmse.legend(title=setup, fontsize=7, title_fontsize=8, loc="upper left")
