"""The GPU-model experiment behind `run.py --preset` (given): a published run, predicted in hours.

From a preset (lab/gpu_presets.py), Task 1's functions (bytes of the bf16 weights,
KV bytes per token) and Task 2's (may_start, take_batch), it builds each engine's
step cost and the trainer's update cost, runs gpu_core for

  * the synchronous baseline its source used: colocated (all GPUs generate, then
    all train) or disaggregated (the asynchronous split with k = 0);
  * the asynchronous run at the published split and staleness bound, k = 1, 2, 4
    at that split, and a coarse-then-fine search over the splits;

and scales a steady-state window of steps to the run's step count.

To keep each preset to a few seconds, an eighth of the GPUs is simulated with
an eighth of each batch (SHARD): every engine sees the same load, every trainer
GPU the same tokens. Only the longest response of a step is drawn from fewer
responses, which the length cap makes nearly irrelevant (on areal-1.5b the full
cluster gives the same seconds per step within about 5%).
"""
import inspect
import itertools
import math

import numpy as np

from gpu_core import Linear, run_gpu_simulation
from lab.gpu_presets import MFU, PRESETS, PROMPT_TOKENS, SIGMA, STEP_OVERHEAD

SHARD = 8       # simulate 1/SHARD of the GPUs and of each batch
WINDOW = 6      # steps measured after the warm-up
KS = (1, 2, 4)


def costs(memory, preset, engines_gpus, train_gpus, forwards):
    """(step, train, slots): an engine's decode-step cost, the trainer's update cost
    (Linear, seconds) and the responses an engine holds at once.

      step  = overhead + 2 * n_params / (tp * bandwidth) + C * kv_per_token / (tp * bandwidth)
      train = (6 + 2 * forwards) * n_params * tokens / (train_gpus * peak * MFU)
      slots = (memory_fraction * tp * GPU memory - weights) / (kv_per_token * context)
    with context = prompt + E[L^2] / (2 E[L]): the tokens a slot holds on average when
    its KV cache grows with the response (paged, as in vLLM and SGLang).
    weights and kv_per_token come from Task 1 (model_state_bytes(0, n), kv_cache_bytes).
    """
    m, gpu, tp = preset.model, preset.gpu, preset.tp
    weights = memory.model_state_bytes(0, int(m.params))          # 2 bytes each, bf16
    kv = memory.kv_cache_bytes(m.layers, m.kv_heads, m.head_dim, 1)
    bandwidth = tp * gpu.bandwidth
    step = Linear(STEP_OVERHEAD + weights / bandwidth, kv / bandwidth)
    train = Linear(0.0, (6 + 2 * forwards) * m.params / (train_gpus * gpu.flops * MFU))
    sample = np.array(list(itertools.islice(lengths(preset, seed=99), 20_000)), float)
    context = PROMPT_TOKENS + (sample**2).mean() / (2 * sample.mean())
    free = preset.memory_fraction * tp * gpu.memory_gb * 1e9 - weights
    return step, train, max(1, math.floor(free / (kv * context)))


def lengths(preset, seed=0):
    """Endless response lengths in tokens: lognormal(median, SIGMA), rounded up, cut at
    max_len."""
    rng = np.random.default_rng(seed)
    while True:
        draw = np.ceil(rng.lognormal(math.log(preset.median_len), SIGMA, 4096))
        yield from np.minimum(draw, preset.max_len).astype(int).tolist()


def run(scheduler, memory, preset, gen_gpus, train_gpus, k, forwards, warmup):
    """One steady-state measurement: seconds per step, lags, and the run itself."""
    step, train, slots = costs(memory, preset, gen_gpus, train_gpus / SHARD, forwards)
    engines = gen_gpus // preset.tp // SHARD
    B = preset.prompts // SHARD
    # inspect.unwrap: without their @checked input checks, as scheduler_core.simulate does
    r = run_gpu_simulation(engines, slots, B, k, warmup + WINDOW, preset.group_size, step,
                           train, lengths(preset), inspect.unwrap(scheduler.may_start),
                           inspect.unwrap(scheduler.take_batch), prompt=PROMPT_TOKENS)
    u = r["updates"]
    seconds = (u[-1][1] - u[warmup - 1][1]) / WINDOW
    return dict(seconds=seconds, mean_lag=r["mean_lag"], max_lag=r["max_lag"],
                head_token_lag=r["head_token_lag"], token_lag=r["token_lag"], slots=slots,
                engines=engines * SHARD), r


def gpu_comparison(scheduler, memory, name):
    """Predicted against published hours for preset `name` (see the module docstring)."""
    p = PRESETS[name]
    hours = lambda seconds: seconds * p.n_steps / 3600  # noqa: E731
    if p.baseline == "colocated":
        sync, sync_run = run(scheduler, memory, p, p.gpus, p.gpus, 0, p.sync_forwards, 1)
    else:
        sync, sync_run = run(scheduler, memory, p, p.gen_gpus, p.gpus - p.gen_gpus, 0,
                             p.sync_forwards, 1)
    unit = p.tp * SHARD  # GPUs per simulated engine: splits move in these steps

    def split(g, k):
        result, _ = run(scheduler, memory, p, g, p.gpus - g, k, p.async_forwards, k + 2)
        return dict(gen_gpus=g, k=k, hours=hours(result["seconds"]), **result)

    published = split(p.gen_gpus, p.k)
    by_k = [published if k == p.k else split(p.gen_gpus, k) for k in KS]
    coarse = {g: split(g, p.k) for g in range(p.gpus // 4, p.gpus, p.gpus // 4)}
    coarse[p.gen_gpus] = published
    best_g = min(coarse, key=lambda g: coarse[g]["hours"])
    for g in (best_g - p.gpus // 8, best_g + p.gpus // 8):
        if 0 < g < p.gpus and g % unit == 0 and g not in coarse:
            coarse[g] = split(g, p.k)
    best = min(coarse.values(), key=lambda s: s["hours"])
    sync_hours = hours(sync["seconds"])
    return dict(
        preset=name, system=p.system, model=p.model.name, gpu=p.gpu.name, gpus=p.gpus,
        gen_gpus=p.gen_gpus, tp=p.tp, prompts=p.prompts, group_size=p.group_size,
        max_len=p.max_len, sigma=SIGMA, median_len=p.median_len,
        mean_len=float(np.mean(list(itertools.islice(lengths(p, seed=99), 20_000)))),
        k=p.k, n_steps=p.n_steps, baseline=p.baseline, mfu=MFU, step_overhead=STEP_OVERHEAD,
        shard=SHARD, slots=sync["slots"],
        sync=dict(hours=sync_hours, seconds=sync["seconds"], **generation(sync_run)),
        asynchronous=published, by_k=by_k,
        splits=sorted(coarse.values(), key=lambda s: s["gen_gpus"]), best=best,
        speedup=sync_hours / published["hours"], best_speedup=sync_hours / best["hours"],
        published=dict(sync_hours=p.sync_hours, async_hours=p.async_hours,
                       speedup=p.sync_hours / p.async_hours),
        ratio=dict(sync=sync_hours / p.sync_hours, asynchronous=published["hours"] / p.async_hours,
                   speedup=(sync_hours / published["hours"]) / (p.sync_hours / p.async_hours)),
        notes=[list(n) for n in p.notes])


def generation(r, engine=0, points=200):
    """One synchronous step after the first: how long generation took, the share of it
    after 90% of its responses had finished (Seer's statistic), and one engine's tokens
    per second over it (active responses / seconds per step), thinned to about `points`."""
    start, end = r["updates"][0][1], r["updates"][1][0]
    ends = [t for t in r["ends"] if start < t <= end]
    tail = (end - ends[math.ceil(0.9 * len(ends)) - 1]) / (end - start)
    log = [(t - start, n / s) for t, e, n, s in r["log"] if e == engine and start <= t <= end]
    stride = max(1, len(log) // points)
    return dict(generation_seconds=end - start, tail_share=tail,
                tokens_per_second=[list(x) for x in log[::stride]])
