"""The GPU-model experiment behind `run.py --preset` (given): published runs, predicted.

From a preset (experiments/gpu_sources.py), Task 1's functions (bytes of the bf16 weights,
KV bytes per token) and Task 2's (may_start, take_batch), it builds each engine's
step cost and the trainer's update cost and runs gpu_core for

  * the synchronous baseline its source used: colocated (all GPUs generate, then
    all train; verl) or disaggregated (the asynchronous split at k = 0; AReaL);
  * the asynchronous run at the published split and staleness bound, and other bounds
    k at that split (AReaL's Fig. 7 curve for areal-1.5b);
  * for verl, the same runs at the smaller clusters its README lists;

and scales a steady-state window of steps to the run's step count. Every published
number the presets were not fitted to is printed against its prediction (held_out).

To keep each preset to a few seconds, the asynchronous runs simulate a share of the
engines with the same share of each batch and of the trainer's GPUs (run's `shard`):
every engine sees the same load, every trainer GPU the same tokens (tools/check_shard.py
compares it with the full cluster on every held-out number). The synchronous runs
simulate the whole cluster (SYNC).
"""
import inspect
import math

import numpy as np

from gpu_core import Linear, Step, run_gpu_simulation
from experiments.gpu_sources import (ALL_REDUCE_SECONDS, H800, KV_READ, MEMGAP_NEW, MEMGAP_PROMPT,
                             MEMGAP_SHARES, OPT_1_3B, PRESETS, PROMPT_TOKENS, STEP_OVERHEAD,
                             VERL_ASYNC_UPDATE, capped_moment, context,
                             flops_per_token, forward_flops, median_for_mean, passes)

# The asynchronous runs simulate 1/shard of the engines and of each batch (fewer shares if
# too few engines): a quarter up to k = 4, the presets' published bounds, where generation
# can bind (on an eighth AReaL's k = 1 point comes out 3.9% above the whole cluster's: a
# smaller batch draws fewer long responses); an eighth beyond, where the presets' runs are
# bound by the trainer, whose rate any share gives. tools/check_shard.py checks both.
SHARD_TIGHT, SHARD = 4, 8
WINDOW = 8  # steps measured after the warm-up of 2 (min(k, 8) + 1) steps
# Synchronous runs (k = 0) simulate the whole cluster: a step waits for its longest
# response, and a share of a batch draws fewer long ones (on an eighth, verl's generation
# came out 10% short). Each step starts from empty engines, so one step of warm-up and two
# measured ones suffice.
SYNC = dict(shard=1, warmup=1, window=2)
KS = (1, 2, 4)
NO_BOUND = 10**6  # k for "no staleness bound" (Fig. 7's infinity): far above any lag reached


def costs(memory, preset, train_gpus, trainer, overhead=STEP_OVERHEAD, kv_read=KV_READ):
    """(step, train, slots): an engine's decode-step cost (Step), the trainer's update cost
    (Linear, seconds) and the responses an engine holds at once.

      step  = overhead + 2 * n_params / (tp * bandwidth) + all-reduces
              + n * 2 * n_params / (tp * peak FLOP/s)
              + C * kv_per_token / (kv_read * tp * bandwidth)
      train = flops_per_token(model, trainer, context) * tokens / (train_gpus * peak * eff)
      slots = (memory_fraction * tp * GPU memory - weights) / (kv_per_token * held)
    with held = prompt + E[L^2] / (2 E[L]): the tokens a slot holds on average when its KV
    cache grows with the response (paged, as in vLLM and SGLang); all-reduces = 2 a layer
    when tp > 1; kv_read = an effective share of the bandwidth for reading KV at large
    batch (KV_READ, 0.60, fitted to a measurement: experiments/gpu_sources.py). The n term is the
    matrix multiplies of n responses at peak FLOP/s, added to the memory time rather than
    overlapped with it: on an H20 (148 TFLOP/s) a 7B model's 256 responses on a TP 4 engine
    take 6.6 ms of compute a step, reading its weights 0.95 ms.
    weights and kv_per_token come from Task 1 (model_state_bytes(0, n), kv_cache_bytes).
    """
    m, gpu, tp = preset.model, preset.gpu, preset.tp
    weights = memory.model_state_bytes(0, int(m.params))          # 2 bytes each, bf16
    kv = memory.kv_cache_bytes(m.layers, m.kv_heads, m.head_dim, 1)
    bandwidth = tp * gpu.bandwidth
    all_reduce = 2 * m.layers * ALL_REDUCE_SECONDS if tp > 1 else 0.0
    step = Step(overhead + weights / bandwidth + all_reduce, kv / (kv_read * bandwidth),
                2 * m.params / (tp * gpu.flops))
    c = context(preset.median_len, preset.sigma, preset.max_len)
    train = Linear(0.0, flops_per_token(m, trainer, c) / (train_gpus * gpu.flops
                                                          * trainer.efficiency))
    first = capped_moment(preset.median_len, preset.sigma, preset.max_len, 1)
    second = capped_moment(preset.median_len, preset.sigma, preset.max_len, 2)
    free = preset.memory_fraction * tp * gpu.memory_gb * 1e9 - weights
    return step, train, max(1, math.floor(free / (kv * (PROMPT_TOKENS + second / (2 * first)))))


def lengths(preset, seed=0):
    """Endless response lengths in tokens: lognormal(median, sigma), rounded up, cut at
    max_len."""
    rng = np.random.default_rng(seed)
    while True:
        draw = np.ceil(rng.lognormal(math.log(preset.median_len), preset.sigma, 4096))
        yield from np.minimum(draw, preset.max_len).astype(int).tolist()


def mean_len(preset):
    """E[min(L, cap)] of the preset's lengths, tokens."""
    return capped_moment(preset.median_len, preset.sigma, preset.max_len)


def run(scheduler, memory, preset, gen_gpus, train_gpus, k, trainer, slots=None,
        warmup=None, window=WINDOW, overhead=STEP_OVERHEAD, kv_read=KV_READ, shard=None):
    """One steady-state measurement over `window` steps after `warmup` (2 (min(k, 8) + 1)
    by default): seconds per step, trained tokens per second and per step, lags, and the
    run itself. k None: no staleness bound. slots: responses per engine at most, if not the
    paged-KV number of `costs`; overhead: seconds per decode step beyond the roofline;
    kv_read: the effective share of the bandwidth for reading KV;
    shard: simulate 1/shard of the cluster (at most one engine's worth per shard; by default
    SHARD_TIGHT for k <= 4, SHARD beyond).

    Long responses finish late, so the first batches after the start are short ones;
    the warm-up lets the pool of responses in flight fill. A loose bound takes longer:
    areal-1.5b with no bound trains 475.6k tokens/s after 10 steps of warm-up, and its
    steady 538.1k after 18 (and after 40), hence 2 (min(k, 8) + 1).
    """
    k = NO_BOUND if k is None else k
    shard = shard or (SHARD_TIGHT if k <= 4 else SHARD)
    shard = max(1, min(shard, gen_gpus // preset.tp))
    warmup = warmup or 2 * (min(k, 8) + 1)
    step, train, paged = costs(memory, preset, train_gpus / shard, trainer, overhead, kv_read)
    slots = slots or paged
    engines = gen_gpus // preset.tp // shard
    B = preset.prompts // shard
    # inspect.unwrap: without their @checked input checks, as scheduler_core.simulate does
    r = run_gpu_simulation(engines, slots, B, k, warmup + window, preset.group_size, step,
                           train, lengths(preset), inspect.unwrap(scheduler.may_start),
                           inspect.unwrap(scheduler.take_batch), prompt=PROMPT_TOKENS)
    u = r["updates"]
    seconds = (u[-1][1] - u[warmup - 1][1]) / window
    tokens = sum(r["batch_tokens"][warmup:]) * shard / window   # per step, whole cluster
    return dict(seconds=seconds, tokens_per_step=tokens, throughput=tokens / seconds,
                train_seconds=train(tokens / shard), mean_lag=r["mean_lag"],
                max_lag=r["max_lag"], head_token_lag=r["head_token_lag"],
                token_lag=r["token_lag"], slots=slots, engines=engines * shard,
                shard=shard), r


def phases(preset, result, gpus):
    """A colocated step split as verl reports it (seconds): old_log_prob and update_actor
    from the step's trained tokens at the colocated trainer's efficiency, generation the
    rest (a colocated step at k = 0 does one, then the other)."""
    trainer, m = preset.sync_trainer, preset.model
    per_pass = result["tokens_per_step"] * forward_flops(
        m, context(preset.median_len, preset.sigma, preset.max_len)) / (
        gpus * preset.gpu.flops * trainer.efficiency)
    log_prob = trainer.logprob_passes * per_pass
    update = (passes(trainer) - trainer.logprob_passes) * per_pass
    return dict(gen=result["seconds"] - log_prob - update, old_log_prob=log_prob,
                update_actor=update, step=result["seconds"])


def k_label(k):
    return "no bound" if k is None else str(k)


def gpu_comparison(scheduler, memory, name, shard=None):
    """Predicted against published numbers for preset `name` (see the module docstring):
    `held_out` lists (what, predicted, published, ratio) for every published number the
    preset was not fitted to, `fit` the fitted numbers with their targets, reproduced;
    `implied`, with a throughput curve, the synchronous step at the tokens a sequence that
    the curve's k = 0 rate and the published hours imply (hours * rate / sequences)."""
    p = PRESETS[name]
    hours = lambda seconds: seconds * p.n_steps / 3600  # noqa: E731
    if p.baseline == "colocated":
        sync, sync_run = run(scheduler, memory, p, p.gpus, p.gpus, 0, p.sync_trainer, **SYNC)
    else:
        sync, sync_run = run(scheduler, memory, p, p.gen_gpus, p.gpus - p.gen_gpus, 0,
                             p.sync_trainer, **SYNC)
    def split(g, k, gpus=p.gpus):
        result, _ = run(scheduler, memory, p, g, gpus - g, k, p.async_trainer, shard=shard)
        return dict(gen_gpus=g, k=k_label(k), hours=hours(result["seconds"]), **result)

    published = split(p.gen_gpus, p.k)
    ks = [k for k, _ in p.curve if k != 0] or list(KS)
    by_k = [published if k == p.k else split(p.gen_gpus, k) for k in ks]
    sync_hours = hours(sync["seconds"])
    speedup = sync_hours / published["hours"]

    held_out = [("synchronous hours", sync_hours, p.sync_hours),
                ("asynchronous hours", published["hours"], p.async_hours),
                ("speedup", speedup, p.sync_hours / p.async_hours)]
    fit, implied = [], None
    if p.curve:
        runs = {0: sync, **{k: r for k, r in zip(ks, by_k)}}
        for k, value in p.curve:
            row = (f"tokens/s at k = {k_label(k)} (thousands)", runs[k]["throughput"] / 1e3,
                   value / 1e3)
            (fit if k == 0 else held_out).append(row)
        # the curve's k = 0 rate over the published synchronous hours: tokens a sequence
        sequences = p.n_steps * p.prompts * p.group_size
        tokens = dict(p.curve)[0] * p.sync_hours * 3600 / sequences
        q = p._replace(median_len=median_for_mean(tokens - PROMPT_TOKENS, p.sigma, p.max_len))
        at, _ = run(scheduler, memory, q, q.gen_gpus, q.gpus - q.gen_gpus, 0, q.sync_trainer,
                    **SYNC)
        implied = dict(tokens_per_sequence=tokens, seconds=at["seconds"],
                       published_seconds=p.sync_hours * 3600 / p.n_steps,
                       throughput=at["throughput"])
    scaling = []
    if p.scaling:
        rows_colocated, rows_async = p.scaling
        for gpus, row in rows_colocated.items():
            result = sync if gpus == p.gpus else run(scheduler, memory, p, gpus, gpus, 0,
                                                     p.sync_trainer, **SYNC)[0]
            split_up = phases(p, result, gpus)
            scaling.append(dict(gpus=gpus, mode="colocated", hours=hours(result["seconds"]),
                                **split_up))
            for phase in ("gen", "old_log_prob", "update_actor", "step"):
                if (gpus, phase) == (p.gpus, "update_actor"):
                    fit.append((f"colocated {gpus}: update_actor s", split_up[phase],
                                row[phase]))
                else:
                    held_out.append((f"colocated {gpus}: {phase} s", split_up[phase],
                                     row[phase]))
            if gpus != p.gpus:
                held_out.append((f"colocated {gpus}: hours", hours(result["seconds"]),
                                 row["hours"]))
        for g, row in rows_async.items():
            result = published if g == p.gen_gpus else split(g, p.k, 2 * g)
            scaling.append(dict(gpus=2 * g, mode=f"{g}:{g}", hours=result["hours"],
                                step=result["seconds"], update_actor=result["train_seconds"]))
            if g == p.gen_gpus:
                fit.append((f"{g}:{g}: update_actor s", result["train_seconds"],
                            VERL_ASYNC_UPDATE))
            held_out.append((f"{g}:{g}: step s", result["seconds"], row["step"]))
            if g != p.gen_gpus:
                held_out.append((f"{g}:{g}: hours", result["hours"], row["hours"]))
    return dict(
        preset=name, system=p.system, model=p.model.name, gpu=p.gpu.name, gpus=p.gpus,
        gen_gpus=p.gen_gpus, tp=p.tp, prompts=p.prompts, group_size=p.group_size,
        max_len=p.max_len, sigma=p.sigma, median_len=p.median_len, mean_len=mean_len(p),
        k=p.k, n_steps=p.n_steps, baseline=p.baseline, step_overhead=STEP_OVERHEAD,
        kv_read=KV_READ,
        sync_passes=passes(p.sync_trainer), async_passes=passes(p.async_trainer),
        sync_efficiency=p.sync_trainer.efficiency, async_efficiency=p.async_trainer.efficiency,
        slots=sync["slots"],
        sync=dict(hours=sync_hours, **sync, **generation(sync_run)),
        asynchronous=published, by_k=by_k, scaling=scaling, implied=implied,
        speedup=speedup,
        published=dict(sync_hours=p.sync_hours, async_hours=p.async_hours,
                       speedup=p.sync_hours / p.async_hours, curve=[[k_label(k), v]
                                                                  for k, v in p.curve]),
        ratio=dict(sync=sync_hours / p.sync_hours, asynchronous=published["hours"] / p.async_hours,
                   speedup=speedup / (p.sync_hours / p.async_hours)),
        held_out=[[what, x, y, x / y] for what, x, y in held_out],
        fit=[[what, x, y, x / y] for what, x, y in fit],
        notes=[list(n) for n in p.notes])


def generation(r, points=200):
    """One synchronous step after the first: how long generation took, the share of it
    after 90% of its responses had finished (Seer's statistic), and the tokens per second
    (active responses / seconds per step) of the engine that finished last, thinned to
    about `points`; when several changes share a time, the last one stands."""
    start, end = r["updates"][0][1], r["updates"][1][0]
    ends = [t for t in r["ends"] if start < t <= end]
    t90 = ends[math.ceil(0.9 * len(ends)) - 1]
    log = [(t, e, n, s) for t, e, n, s in r["log"] if start <= t <= end]
    slowest = max(log, key=lambda x: x[0])[1]
    speed = {}
    for t, e, n, s in log:
        if e == slowest:
            speed[t - start] = n / s
    points_ = sorted(speed.items())
    stride = max(1, len(points_) // points)
    return dict(generation_seconds=end - start, tail_share=(end - t90) / (end - start),
                t90=t90 - start, tokens_per_second=[list(x) for x in points_[::stride]],
                engine=slowest)


def fit_areal_mean(scheduler, memory, name="areal-1.5b", low=2000.0, high=20000.0, steps=14):
    """The mean response length at which preset `name`'s synchronous run (k = 0) trains
    Fig. 7's 128.7k tokens per second: bisection, the throughput rising with the length
    (a step's generation is set by its longest responses, its tokens by the mean)."""
    p = PRESETS[name]
    target = dict(p.curve)[0]
    for _ in range(steps):
        mean = (low + high) / 2
        q = p._replace(median_len=median_for_mean(mean, p.sigma, p.max_len))
        result, _ = run(scheduler, memory, q, q.gen_gpus, q.gpus - q.gen_gpus, 0,
                        q.sync_trainer, **SYNC)
        low, high = (mean, high) if result["throughput"] < target else (low, mean)
    return (low + high) / 2


def gpu_sweep(scheduler, memory, name="areal-1.5b", shard=None):
    """How the equal-hardware speedup depends on S, group size and the length cap: preset
    `name` at its published split, synchronous (its baseline, k = 0) against k = its bound,
    changing one thing at a time:
      no overhead           the roofline alone: no per-step overhead
      S = 16                a small decode batch per engine
      S reserved            KV reserved at the maximum length (Part 1's lanes per GPU)
      groups of 1           the same responses per batch, admitted one by one
      cap x 2, cap / 2      the same median and shape, cut at another length
      KV at full bandwidth  KV read at the sheet's bandwidth (kv_read 1, not KV_READ)
    Admitted one by one, long responses are deferred for many steps before the pool of
    responses in flight settles, so that row measures 30 steps after 40 of warm-up.
    shard: as in `run` (a quarter of the cluster at k = 4).
    """
    p = PRESETS[name]
    _, _, paged = costs(memory, p, 1, p.sync_trainer)
    m = p.model
    weights = memory.model_state_bytes(0, int(m.params))
    kv = memory.kv_cache_bytes(m.layers, m.kv_heads, m.head_dim, PROMPT_TOKENS + p.max_len)
    reserved = math.floor((p.memory_fraction * p.tp * p.gpu.memory_gb * 1e9 - weights) / kv)
    ones = p._replace(prompts=p.prompts * p.group_size, group_size=1)
    no_overhead, full_kv = dict(overhead=0.0), dict(kv_read=1.0)
    variants = (("as published (paged KV)", p, paged, {}),
                ("no per-step overhead", p, paged, no_overhead),
                ("S = 16", p, 16, {}),
                ("S reserved at the cap", p, reserved, {}), ("groups of 1", ones, None, {}),
                ("cap x 2", p._replace(max_len=2 * p.max_len), None, {}),
                ("cap / 2", p._replace(max_len=p.max_len // 2), None, {}),
                ("KV at full bandwidth", p, paged, full_kv))
    rows = []
    for label, q, slots, roofline in variants:
        long = dict(warmup=40, window=30) if q.group_size == 1 else {}
        sync, _ = run(scheduler, memory, q, q.gen_gpus, q.gpus - q.gen_gpus, 0, q.sync_trainer,
                      slots, **roofline, **SYNC)
        asyn, _ = run(scheduler, memory, q, q.gen_gpus, q.gpus - q.gen_gpus, q.k,
                      q.async_trainer, slots, **roofline, **long, shard=shard)
        rows.append(dict(variant=label, slots=sync["slots"], group_size=q.group_size,
                         max_len=q.max_len, sync_seconds=sync["seconds"],
                         async_seconds=asyn["seconds"], speedup=sync["seconds"] / asyn["seconds"],
                         max_lag=asyn["max_lag"], token_lag=asyn["token_lag"]))
    return dict(preset=name, k=p.k, gen_gpus=p.gen_gpus, gpus=p.gpus, rows=rows,
                lanes=lane_groups(scheduler), dram=dram_shares(memory))


def dram_shares(memory):
    """The decode step against MEMGAP's measurement: for each batch n it measured (vLLM,
    OPT-1.3B on an H100, prompts of 161 tokens, 338 new ones), the share of the H100
    sheet's bandwidth that the model's steps read on average,

        sum_j (W + n * (161 + j - 1) * kv) / (bandwidth * sum_j step(n * (161 + j - 1), n))

    over steps j = 1..338, with W the weights' bytes and kv a token's KV bytes (Task 1):
    `model` with KV read at KV_READ, `full` at the sheet's bandwidth. Example: at n = 512
    `model` is the measured 0.504, to which KV_READ was fitted."""
    preset = PRESETS["areal-1.5b"]._replace(model=OPT_1_3B, gpu=H800, tp=1)  # H100 sheet
    steps = {key: costs(memory, preset, 1, preset.sync_trainer, kv_read=share)[0]
             for key, share in (("model", KV_READ), ("full", 1.0))}
    m = OPT_1_3B
    weights = memory.model_state_bytes(0, int(m.params))
    kv = memory.kv_cache_bytes(m.layers, m.kv_heads, m.head_dim, 1)
    rows = []
    for n, measured in MEMGAP_SHARES.items():
        tokens = [n * (MEMGAP_PROMPT + j - 1) for j in range(1, MEMGAP_NEW + 1)]
        read = sum(weights + kv * C for C in tokens)
        rows.append(dict(batch=n, measured=measured, **{
            key: read / (preset.gpu.bandwidth * sum(step(C, n) for C in tokens))
            for key, step in steps.items()}))
    return rows


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
        runs = [run_gpu_simulation(n_lanes, 1, B // group, k, n_steps, group, Step(tick, 0.0),
                                   Linear(train_time, 0.0), lengths(cap),
                                   inspect.unwrap(scheduler.may_start),
                                   inspect.unwrap(scheduler.take_batch)) for k in (0, 1, 2)]
        rows.append(dict(variant=label, k=[0, 1, 2],
                         gain=[r["throughput"] / runs[0]["throughput"] for r in runs],
                         max_lag=[r["max_lag"] for r in runs]))
    return dict(n_lanes=n_lanes, B=B, sigma=sigma, train_time=train_time, n_steps=n_steps,
                rows=rows)
