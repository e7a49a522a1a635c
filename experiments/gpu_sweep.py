"""--gpu-sweep (Tasks 1 and 2): how the GPU model's speedup depends on S, group size and cap.

The computation is gpu_sweep below, on experiments/gpu_model.py's cost model (the one
--preset walks down); here too are the option, the printed section and the figure.
"""

import argparse
import math
from pathlib import Path
from typing import Any

import numpy as np

import grading
from experiments import gpu_model
from experiments.gpu_model import SYNC, GpuRun, costs, walk_costs
from experiments.gpu_sources import (
    H800,
    MEMGAP_NEW,
    MEMGAP_PROMPT,
    MEMGAP_SHARES,
    MEMGAP_STEP,
    MEMGAP_WEIGHTS,
    PRESETS,
    PROMPT_TOKENS,
    Preset,
)
from experiments.plotting import extra_figure
from experiments.printing import say
from experiments.settings import Settings
from gpu_core import GpuSettings, Linear, Step, run_gpu_simulation
from lab.input_checks import unchecked

KEY, LABEL, TASK, FLAG = "gpu_sweep", "GPU sweep", "2", "gpu_sweep"
SECONDS = 25.0


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--gpu-sweep",
        action="store_true",
        help="how the walked-down GPU model's speedup depends on S, group size, the "
        "length cap and the concurrency cap (a PNG of its own)",
    )


def work(settings: Settings) -> float:
    return 1.0


def run(settings: Settings, results: dict[str, Any]) -> dict[str, Any]:
    return gpu_sweep(grading.load("scheduler"), grading.load("memory"))


def show(w: dict[str, Any]) -> None:
    say(
        f"GPU sweep, {w['preset']} at its split ({w['gen_gpus']} of {w['gpus']} GPUs generate), "
        f"walked down: seconds per step, synchronous (k = 0) against k = {w['k']}"
    )
    print(
        f"  {'':<26}{'S':>6}{'group':>7}{'cap':>8}{'sync s':>9}{'async s':>9}{'speedup':>9}"
        f"{'max lag':>9}{'token lag':>11}"
    )
    for r in w["rows"]:
        print(
            f"  {r['variant']:<26}{r['slots']:>6}{r['group_size']:>7}{r['max_len']:>8}"
            f"{r['sync_seconds']:>9.1f}{r['async_seconds']:>9.1f}{r['speedup']:>8.2f}x"
            f"{r['max_lag']:>9}{r['token_lag']:>11.2f}"
        )
    lanes = w["lanes"]
    say(
        f"  Part 2's lanes on the GPU model ({lanes['n_lanes']} lanes, B = {lanes['B']}, "
        f"sigma = {lanes['sigma']}): gain over k = 0 and max lag at k = 0, 1, 2"
    )
    for r in lanes["rows"]:
        print(
            f"  {r['variant']:<26}"
            + "".join(f"{g:>7.2f}x" for g in r["gain"])
            + "   max lag "
            + ", ".join(map(str, r["max_lag"]))
        )
    say(
        "  MEMGAP's decode steps read back (vLLM 0.5, OPT-1.3B, 161 + 338 tokens, under "
        "Nsight): what that GPU delivered, and the peak its counter shares imply"
    )
    print(f"  {'batch':<26}" + "".join(f"{r['batch']:>8}" for r in w["memgap"]))
    for key, label, fmt in (
        ("step_ms", "step, ms (measured)", "{:>8.2f}"),
        ("bytes_gb", "read a step, GB", "{:>8.2f}"),
        ("delivered_tb_s", "delivered, TB/s", "{:>8.2f}"),
        ("share", "DRAM read share", "{:>8.1%}"),
        ("implied_peak_tb_s", "implied peak, TB/s", "{:>8.2f}"),
        ("h800_sheet_ms", "at 3.35 TB/s, ms", "{:>8.2f}"),
    ):
        print(f"  {label:<26}" + "".join(fmt.format(r[key]) for r in w["memgap"]))


def draw(results: dict[str, Any], path: Path) -> None:
    """Save the --gpu-sweep figure: its two tables as bars, one row per variant."""
    fig, (ax_speed, ax_lanes), w = extra_figure(
        results,
        KEY,
        LABEL,
        TASK,
        [
            "GPU model: seconds per step, and the speedup",
            "Part 2's lanes on the GPU model: gain over k = 0",
        ],
        (15, 5),
    )
    if w is not None:
        rows = w["rows"]
        y = range(len(rows))
        ax_speed.barh(
            [i + 0.2 for i in y],
            [r["sync_seconds"] for r in rows],
            0.4,
            color="gray",
            label="synchronous (k = 0)",
        )
        ax_speed.barh(
            [i - 0.2 for i in y],
            [r["async_seconds"] for r in rows],
            0.4,
            color="tab:purple",
            label=f"asynchronous (k = {w['k']})",
        )
        for i, r in enumerate(rows):
            ax_speed.text(
                r["sync_seconds"],
                i + 0.2,
                f" {r['speedup']:.2f}x, max lag {r['max_lag']}",
                va="center",
                fontsize=8.5,
            )
        ax_speed.set_yticks(list(y), [r["variant"] for r in rows])
        ax_speed.invert_yaxis()
        ax_speed.set_xlim(0, 1.45 * max(r["sync_seconds"] for r in rows))
        ax_speed.set_xlabel(
            f"seconds per step (text: speedup, max lag)\n{w['preset']}, "
            f"{w['gen_gpus']} of {w['gpus']} GPUs generate"
        )
        ax_speed.legend(fontsize=8.5, loc="lower right")
        lanes = w["lanes"]
        for j, k in enumerate(lanes["rows"][0]["k"][1:], start=1):
            ax_lanes.barh(
                [i + 0.4 * (j - 1.5) for i in range(len(lanes["rows"]))],
                [r["gain"][j] for r in lanes["rows"]],
                0.4,
                color=["tab:blue", "tab:orange"][(j - 1) % 2],
                label=f"k = {k}",
            )
        for i, r in enumerate(lanes["rows"]):
            ax_lanes.text(
                max(r["gain"]),
                i,
                "  max lag " + ", ".join(map(str, r["max_lag"][1:])),
                va="center",
                fontsize=8.5,
            )
        ax_lanes.set_yticks(range(len(lanes["rows"])), [r["variant"] for r in lanes["rows"]])
        ax_lanes.invert_yaxis()
        ax_lanes.set_xlim(0, 1.4 * max(max(r["gain"]) for r in lanes["rows"]))
        ax_lanes.set_xlabel(
            f"x throughput of k = 0 (text: max lag at k = 1, 2)\n"
            f"{lanes['n_lanes']} lanes, B = {lanes['B']}, sigma = {lanes['sigma']}"
        )
        ax_lanes.legend(fontsize=8.5, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=90)


def gpu_sweep(scheduler, memory, name="areal-1.5b", shard=None):
    """How the equal-hardware speedup depends on S, group size and the length cap: preset
    `name` at its published split with its whole walk charged, synchronous (its baseline,
    k = 0) against k = its bound, changing one thing at a time:
      no per-step overhead  the decode overhead of the walk left out
      S = 16                a small decode batch per engine
      S reserved            KV reserved at the maximum length (Part 1's lanes per GPU)
      groups of 1           the same responses per batch, admitted one by one, unpinned
      cap x 2, cap / 2      the same median and shape, cut at another length
      no concurrency cap    AReaL's 512 groups in flight lifted
    Admitted one by one, long responses are deferred for many steps before the pool of
    responses in flight settles, so that row measures 30 steps after 40 of warm-up.
    shard: as in `run`.
    """
    p = PRESETS[name]
    cs, ca = walk_costs(p, "sync")[-1][1], walk_costs(p, "async")[-1][1]
    limit = costs(memory, p, 1, p.sync_trainer, cs).slots
    m = p.model
    weights = memory.model_state_bytes(0, int(m.params))
    kv = memory.kv_cache_bytes(m.layers, m.kv_heads, m.head_dim, PROMPT_TOKENS + p.max_len)
    reserved = math.floor((p.memory_fraction * p.tp * p.gpu.memory_gb * 1e9 - weights) / kv)
    ones = p._replace(
        prompts=p.prompts * p.group_size,
        group_size=1,
        pin=False,
        max_running=None if p.max_running is None else p.max_running * p.group_size,
    )
    no_overhead = dict(overhead=0.0)
    # (label, preset, slots per engine (None: the number memory allows), changes to the Costs)
    variants: tuple[tuple[str, Preset, int | None, dict[str, float]], ...] = (
        ("as walked down", p, limit, {}),
        ("no per-step overhead", p, limit, no_overhead),
        ("S = 16", p, 16, {}),
        ("S reserved at the cap", p, reserved, {}),
        ("groups of 1", ones, None, {}),
        ("cap x 2", p._replace(max_len=2 * p.max_len), None, {}),
        ("cap / 2", p._replace(max_len=p.max_len // 2), None, {}),
        ("no concurrency cap", p._replace(max_running=None), limit, {}),
    )
    rows = []
    for label, q, slots, change in variants:
        long = dict(warmup=40, window=30) if q.group_size == 1 else {}
        train_gpus = q.gpus - q.gen_gpus
        sync, _ = gpu_model.run(
            scheduler,
            memory,
            GpuRun(
                q, q.gen_gpus, train_gpus, 0, q.sync_trainer, cs._replace(**change), slots, **SYNC
            ),
        )
        asyn, _ = gpu_model.run(
            scheduler,
            memory,
            GpuRun(
                q,
                q.gen_gpus,
                train_gpus,
                q.k,
                q.async_trainer,
                ca._replace(**change),
                slots,
                **long,
                shard=shard,
            ),
        )
        rows.append(
            dict(
                variant=label,
                slots=sync["slots"],
                group_size=q.group_size,
                max_len=q.max_len,
                sync_seconds=sync["seconds"],
                async_seconds=asyn["seconds"],
                speedup=sync["seconds"] / asyn["seconds"],
                max_lag=asyn["max_lag"],
                token_lag=asyn["token_lag"],
            )
        )
    return dict(
        preset=name,
        k=p.k,
        gen_gpus=p.gen_gpus,
        gpus=p.gpus,
        rows=rows,
        lanes=lane_groups(scheduler),
        memgap=memgap_reread(memory),
    )


def memgap_reread(memory):
    """MEMGAP's decode steps read back from their own times (vLLM 0.5, OPT-1.3B, prompts of
    161 tokens, 338 new ones, under Nsight): for each batch n, the bytes a step reads on
    average, W + n * (161 + 168.5) * kv (weights W, a token's KV bytes kv from Task 1; step j
    reads 161 + j - 1 tokens of each response, 168.5 the mean of j - 1 for j = 1..338; the
    log times 337 decode steps), over the measured seconds a step: the bandwidth that GPU
    delivered; divided by the DRAM read share its counters give, the peak they imply.
    Example: at n = 512, 35.8 GB in 51.0 ms = 0.70 TB/s, over 0.504: a 1.39 TB/s GPU."""
    kv = memory.kv_cache_bytes(24, 32, 64, 1)  # OPT-1.3B: 24 layers, 32 heads of 64
    rows = []
    for n, seconds in MEMGAP_STEP.items():
        read = MEMGAP_WEIGHTS + n * (MEMGAP_PROMPT + (MEMGAP_NEW - 1) / 2) * kv
        rows.append(
            dict(
                batch=n,
                step_ms=seconds * 1e3,
                bytes_gb=read / 1e9,
                delivered_tb_s=read / seconds / 1e12,
                share=MEMGAP_SHARES[n],
                implied_peak_tb_s=read / seconds / MEMGAP_SHARES[n] / 1e12,
                h800_sheet_ms=read / H800.bandwidth * 1e3,
            )
        )
    return rows


def lane_groups(scheduler, n_lanes=16, B=32, sigma=1.25, train_time=1.0, n_steps=200, tick=0.01):
    """Part 2's default lanes, run on gpu_core as lanes (S = 1, a step of `tick` time units
    per token, lengths = ceil(lognormal / tick) tokens): throughput gain over k = 0 and max
    lag for k = 0, 1, 2, with responses admitted one by one or in groups of 8 (B = 4
    groups of 8), and with lengths cut at 4x the mean."""

    def lengths(cap):
        rng = np.random.default_rng(0)
        while True:
            draw = np.ceil(rng.lognormal(-(sigma**2) / 2, sigma, 4096) / tick)
            yield from np.minimum(draw, cap).astype(int).tolist()

    rows = []
    for label, group, cap in (
        ("one by one", 1, 10**9),
        ("groups of 8", 8, 10**9),
        ("one by one, cap 4x mean", 1, round(4 / tick)),
    ):
        runs = [
            run_gpu_simulation(
                GpuSettings(
                    n_lanes,
                    1,
                    B // group,
                    k,
                    n_steps,
                    group,
                    Step(tick, 0.0),
                    Linear(train_time, 0.0),
                ),
                lengths(cap),
                unchecked(scheduler.may_start),
                unchecked(scheduler.take_batch),
            )
            for k in (0, 1, 2)
        ]
        rows.append(
            dict(
                variant=label,
                k=[0, 1, 2],
                gain=[r["throughput"] / runs[0]["throughput"] for r in runs],
                max_lag=[r["max_lag"] for r in runs],
            )
        )
    return dict(
        n_lanes=n_lanes, B=B, sigma=sigma, train_time=train_time, n_steps=n_steps, rows=rows
    )
