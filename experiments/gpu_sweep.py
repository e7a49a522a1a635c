"""--gpu-sweep (Tasks 1 and 2): how the GPU model's speedup depends on S, group size and cap.

The computation is experiments/gpu_model.py's gpu_sweep (it shares the cost model with
--preset); here are the option, the printed section and the figure.
"""
import argparse
from pathlib import Path
from typing import Any

import grading
from experiments.gpu_model import gpu_sweep
from experiments.plotting import extra_figure
from experiments.printing import say
from experiments.settings import Settings

KEY, LABEL, TASK, FLAG = "gpu_sweep", "GPU sweep", "2", "gpu_sweep"
SECONDS = 25.0


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--gpu-sweep", action="store_true",
                   help="how the walked-down GPU model's speedup depends on S, group size, the "
                        "length cap and the concurrency cap (a PNG of its own)")


def work(settings: Settings) -> float:
    return 1.0


def run(settings: Settings, results: dict[str, Any]) -> dict[str, Any]:
    return gpu_sweep(grading.load("scheduler"), grading.load("memory"))


def show(w: dict[str, Any]) -> None:
    say(f"GPU sweep, {w['preset']} at its split ({w['gen_gpus']} of {w['gpus']} GPUs generate), "
        f"walked down: seconds per step, synchronous (k = 0) against k = {w['k']}")
    print(f"  {'':<26}{'S':>6}{'group':>7}{'cap':>8}{'sync s':>9}{'async s':>9}{'speedup':>9}"
          f"{'max lag':>9}{'token lag':>11}")
    for r in w["rows"]:
        print(f"  {r['variant']:<26}{r['slots']:>6}{r['group_size']:>7}{r['max_len']:>8}"
              f"{r['sync_seconds']:>9.1f}{r['async_seconds']:>9.1f}{r['speedup']:>8.2f}x"
              f"{r['max_lag']:>9}{r['token_lag']:>11.2f}")
    lanes = w["lanes"]
    say(f"  Part 2's lanes on the GPU model ({lanes['n_lanes']} lanes, B = {lanes['B']}, "
        f"sigma = {lanes['sigma']}): gain over k = 0 and max lag at k = 0, 1, 2")
    for r in lanes["rows"]:
        print(f"  {r['variant']:<26}" + "".join(f"{g:>7.2f}x" for g in r["gain"])
              + "   max lag " + ", ".join(map(str, r["max_lag"])))
    say("  MEMGAP's decode steps read back (vLLM 0.5, OPT-1.3B, 161 + 338 tokens, under "
        "Nsight): what that GPU delivered, and the peak its counter shares imply")
    print(f"  {'batch':<26}" + "".join(f"{r['batch']:>8}" for r in w["memgap"]))
    for key, label, fmt in (("step_ms", "step, ms (measured)", "{:>8.2f}"),
                            ("bytes_gb", "read a step, GB", "{:>8.2f}"),
                            ("delivered_tb_s", "delivered, TB/s", "{:>8.2f}"),
                            ("share", "DRAM read share", "{:>8.1%}"),
                            ("implied_peak_tb_s", "implied peak, TB/s", "{:>8.2f}"),
                            ("h800_sheet_ms", "at 3.35 TB/s, ms", "{:>8.2f}")):
        print(f"  {label:<26}" + "".join(fmt.format(r[key]) for r in w["memgap"]))


def draw(results: dict[str, Any], path: Path) -> None:
    """Save the --gpu-sweep figure: its two tables as bars, one row per variant."""
    fig, (ax_speed, ax_lanes), w = extra_figure(
        results, KEY, LABEL, TASK, ["GPU model: seconds per step, and the speedup",
                                    "Part 2's lanes on the GPU model: gain over k = 0"], (15, 5))
    if w is not None:
        rows = w["rows"]
        y = range(len(rows))
        ax_speed.barh([i + 0.2 for i in y], [r["sync_seconds"] for r in rows], 0.4,
                      color="gray", label="synchronous (k = 0)")
        ax_speed.barh([i - 0.2 for i in y], [r["async_seconds"] for r in rows], 0.4,
                      color="tab:purple", label=f"asynchronous (k = {w['k']})")
        for i, r in enumerate(rows):
            ax_speed.text(r["sync_seconds"], i + 0.2, f" {r['speedup']:.2f}x, max lag "
                          f"{r['max_lag']}", va="center", fontsize=8.5)
        ax_speed.set_yticks(list(y), [r["variant"] for r in rows])
        ax_speed.invert_yaxis()
        ax_speed.set_xlim(0, 1.45 * max(r["sync_seconds"] for r in rows))
        ax_speed.set_xlabel(f"seconds per step (text: speedup, max lag)\n{w['preset']}, "
                            f"{w['gen_gpus']} of {w['gpus']} GPUs generate")
        ax_speed.legend(fontsize=8.5, loc="lower right")
        lanes = w["lanes"]
        for j, k in enumerate(lanes["rows"][0]["k"][1:], start=1):
            ax_lanes.barh([i + 0.4 * (j - 1.5) for i in range(len(lanes["rows"]))],
                          [r["gain"][j] for r in lanes["rows"]], 0.4,
                          color=["tab:blue", "tab:orange"][(j - 1) % 2], label=f"k = {k}")
        for i, r in enumerate(lanes["rows"]):
            ax_lanes.text(max(r["gain"]), i, "  max lag " + ", ".join(map(str, r["max_lag"][1:])),
                          va="center", fontsize=8.5)
        ax_lanes.set_yticks(range(len(lanes["rows"])), [r["variant"] for r in lanes["rows"]])
        ax_lanes.invert_yaxis()
        ax_lanes.set_xlim(0, 1.4 * max(max(r["gain"]) for r in lanes["rows"]))
        ax_lanes.set_xlabel(f"x throughput of k = 0 (text: max lag at k = 1, 2)\n"
                            f"{lanes['n_lanes']} lanes, B = {lanes['B']}, sigma = {lanes['sigma']}")
        ax_lanes.legend(fontsize=8.5, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
