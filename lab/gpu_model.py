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
import functools
import inspect
import itertools
import math

import numpy as np

from gpu_core import Linear, run_gpu_simulation
from lab.gpu_presets import MFU, PRESETS, PROMPT_TOKENS, SIGMA, STEP_OVERHEAD

SHARD = 8       # simulate 1/SHARD of the GPUs and of each batch
WINDOW = 8      # steps measured after the warm-up of 2 (k + 1) steps
KS = (1, 2, 4)


def costs(memory, preset, engines_gpus, train_gpus, forwards, overhead=STEP_OVERHEAD):
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
    step = Linear(overhead + weights / bandwidth, kv / bandwidth)
    train = Linear(0.0, (6 + 2 * forwards) * m.params / (train_gpus * gpu.flops * MFU))
    sample = length_sample(preset)
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


@functools.cache  # every run of a preset asks for the same sample
def length_sample(preset, n=20_000):
    """n lengths of `preset` (seed 99, apart from the runs' seed 0), for their moments."""
    sample = np.array(list(itertools.islice(lengths(preset, seed=99), n)), float)
    sample.setflags(write=False)
    return sample


def run(scheduler, memory, preset, gen_gpus, train_gpus, k, forwards, slots=None,
        warmup=None, window=WINDOW, overhead=STEP_OVERHEAD):
    """One steady-state measurement: seconds per step over `window` steps after `warmup`
    (2 (k + 1) by default), lags, and the run itself. slots: responses per engine at most,
    if not the paged-KV number of `costs`; overhead: seconds per decode step beyond the
    roofline.

    Long responses finish late, so the first batches after the start are short ones;
    the warm-up lets the pool of responses in flight fill. On areal-1.5b at k = 4 this
    window is within 4% of a 50-step one.
    """
    warmup = warmup or 2 * (k + 1)
    step, train, paged = costs(memory, preset, gen_gpus, train_gpus / SHARD, forwards, overhead)
    slots = slots or paged
    engines = gen_gpus // preset.tp // SHARD
    B = preset.prompts // SHARD
    # inspect.unwrap: without their @checked input checks, as scheduler_core.simulate does
    r = run_gpu_simulation(engines, slots, B, k, warmup + window, preset.group_size, step,
                           train, lengths(preset), inspect.unwrap(scheduler.may_start),
                           inspect.unwrap(scheduler.take_batch), prompt=PROMPT_TOKENS)
    u = r["updates"]
    seconds = (u[-1][1] - u[warmup - 1][1]) / window
    return dict(seconds=seconds, mean_lag=r["mean_lag"], max_lag=r["max_lag"],
                head_token_lag=r["head_token_lag"], token_lag=r["token_lag"], slots=slots,
                engines=engines * SHARD), r


def gpu_comparison(scheduler, memory, name):
    """Predicted against published hours for preset `name` (see the module docstring)."""
    p = PRESETS[name]
    hours = lambda seconds: seconds * p.n_steps / 3600  # noqa: E731
    colocated, colocated_run = run(scheduler, memory, p, p.gpus, p.gpus, 0, p.sync_forwards)
    if p.baseline == "colocated":
        sync, sync_run = colocated, colocated_run
    else:
        sync, sync_run = run(scheduler, memory, p, p.gen_gpus, p.gpus - p.gen_gpus, 0,
                             p.sync_forwards)
    unit = p.tp * SHARD  # GPUs per simulated engine: splits move in these steps

    def split(g, k):
        result, _ = run(scheduler, memory, p, g, p.gpus - g, k, p.async_forwards)
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
        mean_len=float(length_sample(p).mean()),
        k=p.k, n_steps=p.n_steps, baseline=p.baseline, mfu=MFU, step_overhead=STEP_OVERHEAD,
        shard=SHARD, slots=sync["slots"],
        sync=dict(hours=sync_hours, seconds=sync["seconds"], **generation(sync_run)),
        colocated=dict(hours=hours(colocated["seconds"]), seconds=colocated["seconds"],
                       speedup=hours(colocated["seconds"]) / published["hours"]),
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


def gpu_sweep(scheduler, memory, name="areal-1.5b"):
    """How the equal-hardware speedup depends on S, group size and the length cap: preset
    `name` at its published split, synchronous (its baseline, k = 0) against k = its bound,
    changing one thing at a time:
      no overhead           the roofline alone: no per-step overhead
      S = 16                a small decode batch per engine
      S reserved            KV reserved at the maximum length (Part 1's lanes per GPU)
      groups of 1           the same responses per batch, admitted one by one
      cap x 2, cap / 2      the same median and shape, cut at another length
    Admitted one by one, long responses are deferred for many steps before the pool of
    responses in flight settles, so that row measures 30 steps after 40 of warm-up.
    """
    p = PRESETS[name]
    _, _, paged = costs(memory, p, p.gen_gpus, 1, 0)
    m = p.model
    weights = memory.model_state_bytes(0, int(m.params))
    kv = memory.kv_cache_bytes(m.layers, m.kv_heads, m.head_dim, PROMPT_TOKENS + p.max_len)
    reserved = math.floor((p.memory_fraction * p.tp * p.gpu.memory_gb * 1e9 - weights) / kv)
    ones = p._replace(prompts=p.prompts * p.group_size, group_size=1)
    variants = (("as published (paged KV)", p, paged), ("no per-step overhead", p, paged),
                ("S = 16", p, 16),
                ("S reserved at the cap", p, reserved), ("groups of 1", ones, None),
                ("cap x 2", p._replace(max_len=2 * p.max_len), None),
                ("cap / 2", p._replace(max_len=p.max_len // 2), None))
    rows = []
    for label, q, slots in variants:
        long = dict(warmup=40, window=30) if q.group_size == 1 else {}
        overhead = 0.0 if label == "no per-step overhead" else STEP_OVERHEAD
        sync, _ = run(scheduler, memory, q, q.gen_gpus, q.gpus - q.gen_gpus, 0, q.sync_forwards,
                      slots, overhead=overhead)
        asyn, _ = run(scheduler, memory, q, q.gen_gpus, q.gpus - q.gen_gpus, q.k,
                      q.async_forwards, slots, overhead=overhead, **long)
        rows.append(dict(variant=label, slots=sync["slots"], group_size=q.group_size,
                         max_len=q.max_len, sync_seconds=sync["seconds"],
                         async_seconds=asyn["seconds"], speedup=sync["seconds"] / asyn["seconds"],
                         max_lag=asyn["max_lag"], token_lag=asyn["token_lag"]))
    return dict(preset=name, k=p.k, gen_gpus=p.gen_gpus, gpus=p.gpus, rows=rows,
                lanes=lane_groups(scheduler))


def lane_groups(scheduler, n_lanes=16, B=32, sigma=1.25, train_time=1.0, n_steps=200,
                tick=0.01):
    """Part 2's default lanes, run on gpu_core as lanes (S = 1, a step of `tick` time units
    per token, lengths = ceil(lognormal / tick) tokens): throughput gain over k = 0 and max
    lag for k = 0, 1, 2, with responses admitted one by one or in groups of 8 (B = 4
    groups of 8), and with lengths cut at 4x the mean."""
    def lengths(cap):
        rng = np.random.default_rng(0)
        while True:
            draw = np.ceil(rng.lognormal(-sigma**2 / 2, sigma, 4096) / tick)
            yield from np.minimum(draw, cap).astype(int).tolist()

    rows = []
    for label, group, cap in (("one by one", 1, 10**9), ("groups of 8", 8, 10**9),
                              ("one by one, cap 4x mean", 1, round(4 / tick))):
        runs = [run_gpu_simulation(n_lanes, 1, B // group, k, n_steps, group, Linear(tick, 0.0),
                                   Linear(train_time, 0.0), lengths(cap),
                                   inspect.unwrap(scheduler.may_start),
                                   inspect.unwrap(scheduler.take_batch)) for k in (0, 1, 2)]
        rows.append(dict(variant=label, k=[0, 1, 2],
                         gain=[r["throughput"] / runs[0]["throughput"] for r in runs],
                         max_lag=[r["max_lag"] for r in runs]))
    return dict(n_lanes=n_lanes, B=B, sigma=sigma, train_time=train_time, n_steps=n_steps,
                rows=rows)
