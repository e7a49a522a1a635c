"""The GPU-model experiment behind `run.py --preset` (given): a bound, walked down.

From a preset (experiments/gpu_sources.py), Task 1's functions (bytes of the bf16 weights,
KV bytes per token) and Task 2's (may_start, take_batch), it builds each engine's
step cost and the trainer's update cost and runs gpu_core for

  * the synchronous baseline its source used: colocated (all GPUs generate, then
    all train; verl) or disaggregated (the asynchronous split at k = 0; AReaL);
  * the asynchronous run at the published split and staleness bound, and other bounds
    k at that split (AReaL's Fig. 7 curve for areal-1.5b);
  * for verl, the same runs at the smaller clusters its README lists;

first as a perfect pipeline (the bound: no per-step overhead, the trainer at peak
FLOP/s, nothing between updates), then with each cost of the preset's walk added in
turn (the walk down), and scales a steady-state window of steps to the run's step
count. Every held-out published number is printed against the bound and the
prediction; what is left between prediction and published is the residual.

To keep each preset to a few seconds, the asynchronous runs simulate a share of the
engines with the same share of each batch, of the trainer's GPUs and of the cap on
groups in flight (run's `shard`): every engine sees the same load, every trainer GPU
the same tokens (tools/check_shard.py compares it with the full cluster). The
synchronous runs simulate the whole cluster (SYNC).
"""
import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from experiments.gpu_sources import (CHECKPOINT_EVERY, H800, MEMGAP_NEW, MEMGAP_PROMPT,
                                     MEMGAP_SHARES, MEMGAP_STEP, MEMGAP_WEIGHTS, PRESETS,
                                     PROMPT_TOKENS, Costs, Preset, Trainer, capped_moment,
                                     context, flops_per_token, forward_flops, multiplied, passes)
from gpu_core import GpuSettings, Linear, Step, run_gpu_simulation
from lab.input_checks import unchecked

# The asynchronous runs simulate 1/SHARD of the engines, of each batch and of the cap on
# groups in flight (fewer shares if too few engines): an eighth, which keeps each preset's
# walk within its time budget; tools/check_shard.py checks it against the whole cluster.
SHARD = 8
WINDOW = 8  # steps measured after the warm-up of 2 (min(k, 8) + 1) steps
# Synchronous runs (k = 0) simulate the whole cluster: a step waits for its longest
# response, and a share of a batch draws fewer long ones. Each step starts from empty
# engines, so one step of warm-up and two measured ones suffice.
SYNC = dict(shard=1, warmup=1, window=2)
KS = (1, 2, 4)
NO_BOUND = 10**6  # k for "no staleness bound" (Fig. 7's infinity): far above any lag reached


class EngineCosts(NamedTuple):
    """What `costs` gives gpu_core for one run."""
    step: Step      # seconds of an engine's decode step
    train: Linear   # seconds of the trainer's update of a batch's tokens
    slots: int      # responses an engine holds at once
    swap: Linear    # an engine's pause at each update, of its tokens in flight


def costs(memory, preset, train_gpus, trainer, c=Costs(), sync=False):
    """The EngineCosts (step, train, slots, swap) of an engine and the trainer under the
    costs c:

      step  = overhead + max(2 N / (tp * bandwidth), n * 2 N / (tp * peak FLOP/s))
              + C * kv_per_token / (tp * bandwidth)          (+ 2 all-reduces a layer, tp > 1)
      train = save (+ reward if sync)
              + flops_per_token(model, trainer, context) * tokens / (train_gpus * peak * eff)
      slots = min(engine limit, (memory_fraction * tp * GPU memory - all weights)
                                / (kv_per_token * held))
      swap  = reload (+ poll if sync) + C * forward_flops(context) / (tp * peak * prefill)
    N = multiplied(model): the parameters without the input embedding, which a step does not
    read whole and no token multiplies; held = prompt + E[L^2] / (2 E[L]), the tokens a
    slot holds on average when its KV cache grows with the response (paged, as in vLLM and
    SGLang). The poll is charged to the synchronous run's servers, which wait for it idle
    (in the asynchronous run they go on generating meanwhile). weights and kv_per_token
    come from Task 1 (model_state_bytes(0, n), kv_cache_bytes).
    """
    m, gpu, tp = preset.model, preset.gpu, preset.tp
    read = memory.model_state_bytes(0, int(multiplied(m)))   # 2 bytes each, bf16
    held = memory.model_state_bytes(0, int(m.params))
    kv = memory.kv_cache_bytes(m.layers, m.kv_heads, m.head_dim, 1)
    bandwidth = tp * gpu.bandwidth
    all_reduce = 2 * m.layers * c.all_reduce if tp > 1 else 0.0
    step = Step(read / bandwidth, kv / bandwidth, 2 * multiplied(m) / (tp * gpu.flops),
                c.overhead + all_reduce)
    ctx = context(preset.median_len, preset.sigma, preset.max_len)
    fixed = c.save + (c.reward if sync else 0.0)
    train = Linear(fixed, flops_per_token(m, trainer, ctx) / (train_gpus * gpu.flops
                                                              * c.efficiency))
    recompute = forward_flops(m, ctx) / (tp * gpu.flops * c.prefill) if c.prefill else 0.0
    swap = Linear(c.reload + (c.poll if sync else 0.0), 0.0 if sync else recompute)
    first = capped_moment(preset.median_len, preset.sigma, preset.max_len, 1)
    second = capped_moment(preset.median_len, preset.sigma, preset.max_len, 2)
    free = preset.memory_fraction * tp * gpu.memory_gb * 1e9 - held
    paged = max(1, math.floor(free / (kv * (PROMPT_TOKENS + second / (2 * first)))))
    return EngineCosts(step, train, min(paged, preset.engine_limit), swap)


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


@dataclass(frozen=True)
class GpuRun:
    """The settings of one GPU-model run (see `run`): a preset with gen_gpus GPUs generating
    and train_gpus training, at staleness bound k, with `trainer`, under the costs c."""
    preset: Preset
    gen_gpus: int
    train_gpus: int
    k: int | None        # None: no staleness bound; 0: a synchronous run
    trainer: Trainer
    c: Costs = Costs()
    slots: int | None = None   # responses per engine at most, if not the number of `costs`
    warmup: int | None = None  # steps before the window; 2 (min(k, 8) + 1) if None
    window: int = WINDOW       # steps measured
    shard: int | None = None   # simulate 1/shard of the cluster; SHARD if None


def run(scheduler, memory, setup):
    """One steady-state measurement of the GpuRun `setup`, over its window of steps after
    its warm-up, under its costs c: seconds per step, trained tokens per second and per
    step, lags, and the run itself. k = 0 is a synchronous run (its reward, poll and no KV
    recompute: costs). A shard simulates at most one engine's worth of the cluster, with
    1/shard of each batch, of the trainer's GPUs and of the cap on groups in flight.

    Checkpoints are charged after the run, exactly as if every CHECKPOINT_EVERY seconds the
    whole pipeline stopped for c.checkpoint seconds: seconds / (1 - checkpoint / every).
    """
    preset, c, window = setup.preset, setup.c, setup.window
    k = NO_BOUND if setup.k is None else setup.k
    shard = max(1, min(setup.shard or SHARD, setup.gen_gpus // preset.tp))
    warmup = setup.warmup or 2 * (min(k, 8) + 1)
    step, train, limit, swap = costs(memory, preset, setup.train_gpus / shard, setup.trainer,
                                     c, k == 0)
    slots = setup.slots or limit
    engines = setup.gen_gpus // preset.tp // shard
    cap = None if preset.max_running is None else max(1, preset.max_running // shard)
    settings = GpuSettings(engines, slots, preset.prompts // shard, k, warmup + window,
                           preset.group_size, step, train, prompt=PROMPT_TOKENS,
                           max_running=cap, pin=preset.pin, swap=swap)
    # unchecked: without their @checked input checks, as scheduler_core.simulate does
    r = run_gpu_simulation(settings, lengths(preset), unchecked(scheduler.may_start),
                           unchecked(scheduler.take_batch))
    u = r["updates"]
    seconds = (u[-1][1] - u[warmup - 1][1]) / window / (1 - c.checkpoint / CHECKPOINT_EVERY)
    tokens = sum(r["batch_tokens"][warmup:]) * shard / window   # per step, whole cluster
    return dict(seconds=seconds, tokens_per_step=tokens, throughput=tokens / seconds,
                train_seconds=train(tokens / shard), mean_lag=r["mean_lag"],
                max_lag=r["max_lag"], head_token_lag=r["head_token_lag"],
                token_lag=r["token_lag"], slots=slots, engines=engines * shard,
                shard=shard), r


DECODE = ("overhead", "all_reduce")  # the costs that change generation itself


def sync_walked(memory, preset, gpus, result, simulated, c):
    """A synchronous step (k = 0) simulated under the costs `simulated`, charged the costs c
    instead where they differ outside DECODE. Exact: at k = 0 a step is the engines' pause
    (swap), then generation from empty engines, then the update, one after the other, so
    only the pause and the update change:
        seconds = (seconds_sim * (1 - ckpt_sim / every) - swap_sim - train_sim(tokens)
                   + swap_c + train_c(tokens)) / (1 - ckpt_c / every)"""
    trainer, tokens = preset.sync_trainer, result["tokens_per_step"]
    before = costs(memory, preset, gpus[1], trainer, simulated, True)
    after = costs(memory, preset, gpus[1], trainer, c, True)
    inner = (result["seconds"] * (1 - simulated.checkpoint / CHECKPOINT_EVERY)
             - before.swap.fixed - before.train(tokens) + after.swap.fixed + after.train(tokens))
    seconds = inner / (1 - c.checkpoint / CHECKPOINT_EVERY)
    return dict(result, seconds=seconds, throughput=tokens / seconds,
                train_seconds=after.train(tokens))


def walk_costs(preset, mode):
    """The Costs after each step of the preset's walk, for mode "sync" or "async": a list of
    (Cost or None for the bound, Costs), the bound first; steps that do not apply to the
    mode leave the Costs as they were."""
    c, stages = Costs(), [(None, Costs())]
    for cost in preset.walk:
        if cost.applies in ("both", mode):
            c = c._replace(**{cost.field: cost.value})
        stages.append((cost, c))
    return stages


def phases(preset, result, gpus, c):
    """A colocated step split as verl reports it (seconds): old_log_prob and update_actor
    from the step's trained tokens at the trainer efficiency of the costs c, generation the
    rest (a colocated step at k = 0 does one, then the other)."""
    trainer, m = preset.sync_trainer, preset.model
    per_pass = result["tokens_per_step"] * forward_flops(
        m, context(preset.median_len, preset.sigma, preset.max_len)) / (
        gpus * preset.gpu.flops * c.efficiency)
    log_prob = trainer.logprob_passes * per_pass
    update = (passes(trainer) - trainer.logprob_passes) * per_pass
    return dict(gen=result["seconds"] - log_prob - update, old_log_prob=log_prob,
                update_actor=update, step=result["seconds"])


def k_label(k):
    return "no bound" if k is None else str(k)


class HeldOut(NamedTuple):
    """A held-out published number against the model (in the JSON, the list of its fields)."""
    what: str
    predicted: float
    published: float
    ratio: float          # predicted / published
    bound: float | None   # the perfect pipeline's, where it was run
    same: str             # the row that is the same measurement, "derived" or ""


def held_out(what, bound, predicted, published, same=""):
    return HeldOut(what, predicted, published, predicted / published, bound, same)


class GivenBack(NamedTuple):
    """The published number a preset was set from, given back by the model."""
    what: str
    model: float
    target: float
    ratio: float          # model / target


def given_back(what, model, target):
    return GivenBack(what, model, target, model / target)


class PresetRuns:
    """The runs of one preset under any Costs: its synchronous baseline (the whole
    cluster) and its asynchronous split; `hours` scales a step's seconds to its n_steps."""

    def __init__(self, scheduler, memory, preset, shard=None):
        self.scheduler, self.memory, self.p, self.shard = scheduler, memory, preset, shard
        self.sync_gpus = ((preset.gpus, preset.gpus) if preset.baseline == "colocated"
                          else (preset.gen_gpus, preset.gpus - preset.gen_gpus))

    def hours(self, seconds):
        return seconds * self.p.n_steps / 3600

    def sync(self, c, gpus=None):
        """(result, simulation) at k = 0 under the costs c, on (generating, training) gpus."""
        setup = GpuRun(self.p, *(gpus or self.sync_gpus), 0, self.p.sync_trainer, c, **SYNC)
        return run(self.scheduler, self.memory, setup)

    def split(self, g, k, c, gpus=None):
        """The asynchronous run at bound k, g of `gpus` GPUs (the preset's) generating."""
        p = self.p
        setup = GpuRun(p, g, (gpus or p.gpus) - g, k, p.async_trainer, c, shard=self.shard)
        result, _ = run(self.scheduler, self.memory, setup)
        return dict(gen_gpus=g, k=k_label(k), hours=self.hours(result["seconds"]), **result)


class Walk(NamedTuple):
    """walk_down's answer: (synchronous, asynchronous) pairs of results and of Costs."""
    rows: list        # one dict per stage, the bound first (the JSON's "walk")
    bound: tuple      # the results at the bound
    predicted: tuple  # the results with the whole walk charged
    simulation: dict  # the last synchronous run simulated (its generation is printed)
    costs: tuple      # the Costs with the whole walk charged


def walk_down(runs):
    """The bound, then each cost of the preset's walk charged in turn (walk_costs). The
    synchronous run is simulated again only for a cost that changes generation (DECODE);
    sync_walked charges the others exactly. The asynchronous one is simulated again for
    every cost that applies to it."""
    p, rows = runs.p, []
    sync = asyn = None
    for (cost, cs), (_, ca) in zip(walk_costs(p, "sync"), walk_costs(p, "async")):
        if sync is None or cost.field in DECODE:
            sync, simulation = runs.sync(cs)
            simulated, measured = cs, sync
        elif cost.applies in ("both", "sync"):
            sync = sync_walked(runs.memory, p, runs.sync_gpus, measured, simulated, cs)
        if asyn is None or cost.applies in ("both", "async"):
            asyn = runs.split(p.gen_gpus, p.k, ca)
        if cost is None:
            bound = (sync, asyn)
        rows.append(walk_row(cost, sync, asyn, runs.hours))
    return Walk(rows, bound, (sync, asyn), simulation, (cs, ca))


def walk_row(cost, sync, asyn, hours):
    """One stage of the walk: the cost charged last (None: the bound) and both runs."""
    name, source, applies = (("bound", "a perfect pipeline at the sourced configuration",
                              "both") if cost is None else (cost.name, cost.source, cost.applies))
    return dict(name=name, source=source, applies=applies, seconds=asyn["seconds"],
                hours=asyn["hours"], sync_seconds=sync["seconds"],
                sync_hours=hours(sync["seconds"]))


def k_curve(runs, walk):
    """(ks, predicted, bound): the asynchronous runs at each staleness bound of the preset's
    published curve (KS without one), with the whole walk and, for a curve, at the bound."""
    p = runs.p
    ks = [k for k, _ in p.curve if k != 0] or list(KS)
    predicted = [walk.predicted[1] if k == p.k else runs.split(p.gen_gpus, k, walk.costs[1])
                 for k in ks]
    bound = [walk.bound[1] if k == p.k else runs.split(p.gen_gpus, k, Costs()) for k in ks] \
        if p.curve else []
    return ks, predicted, bound


def hours_held_out(runs, walk, ks, predicted_k, bound_k):
    """The held-out hours, their speedup and the published curve's tokens per second."""
    p, hours = runs.p, runs.hours
    (bound_sync, bound_async), (sync, asyn) = walk.bound, walk.predicted
    bound_hours, sync_hours = hours(bound_sync["seconds"]), hours(sync["seconds"])
    rows = [held_out("synchronous hours", bound_hours, sync_hours, p.sync_hours),
            held_out("asynchronous hours", bound_async["hours"], asyn["hours"], p.async_hours),
            held_out("speedup (the two above)", bound_hours / bound_async["hours"],
                     sync_hours / asyn["hours"], p.sync_hours / p.async_hours, "derived")]
    bound_runs = {0: bound_sync, **dict(zip(ks, bound_k))}
    predicted_runs = {0: sync, **dict(zip(ks, predicted_k))}
    for k, value in p.curve:
        same = {0: "synchronous hours", p.k: "asynchronous hours"}.get(k, "")
        rows.append(held_out(f"tokens/s at k = {k_label(k)} (thousands)",
                             bound_runs[k]["throughput"] / 1e3,
                             predicted_runs[k]["throughput"] / 1e3, value / 1e3, same))
    return rows


def colocated_sizes(runs, walk, colocated):
    """verl's colocated runs at each published size (the bound at the preset's own only:
    it would double the time): (scaling rows, held-out rows), each phase held out."""
    p, scaling, rows = runs.p, [], []
    for gpus, published in colocated.items():
        if gpus == p.gpus:
            result, bound_up = walk.predicted[0], phases(p, walk.bound[0], gpus, Costs())
        else:
            result, bound_up = runs.sync(walk.costs[0], (gpus, gpus))[0], {}
        split_up = phases(p, result, gpus, walk.costs[0])
        scaling.append(dict(gpus=gpus, mode="colocated", hours=runs.hours(result["seconds"]),
                            **split_up))
        for phase in ("gen", "old_log_prob", "update_actor", "step"):
            same = "synchronous hours" if (gpus, phase) == (p.gpus, "step") else ""
            rows.append(held_out(f"colocated {gpus}: {phase} s", bound_up.get(phase),
                                 split_up[phase], published[phase], same))
    return scaling, rows


def split_sizes(runs, walk, asynchronous):
    """verl's g:g asynchronous runs at each published size: (scaling rows, held-out rows,
    given-back rows); the preset's own split's update_actor is the number its lengths were
    set from, so it is given back, not held out."""
    p, scaling, rows, given = runs.p, [], [], []
    for g, published in asynchronous.items():
        own = g == p.gen_gpus
        result = walk.predicted[1] if own else runs.split(g, p.k, walk.costs[1], 2 * g)
        bound = walk.bound[1] if own else {}
        scaling.append(dict(gpus=2 * g, mode=f"{g}:{g}", hours=result["hours"],
                            step=result["seconds"], update_actor=result["train_seconds"]))
        if own:
            given.append(given_back(f"{g}:{g}: update_actor s", result["train_seconds"],
                                    published["update_actor"]))
        rows.append(held_out(f"{g}:{g}: step s", bound.get("seconds"), result["seconds"],
                             published["step"], "asynchronous hours" if own else ""))
        if not own and "update_actor" in published:
            rows.append(held_out(f"{g}:{g}: update_actor s", bound.get("train_seconds"),
                                 result["train_seconds"], published["update_actor"]))
    return scaling, rows, given


def held_out_comparison(runs, walk, ks, predicted_k, bound_k):
    """(held-out rows, given-back rows, scaling rows): every published number against the
    model, each measurement once; verl's other cluster sizes are run here."""
    p = runs.p
    rows, given, scaling = hours_held_out(runs, walk, ks, predicted_k, bound_k), [], []
    if p.curve:  # the one published number each preset's lengths were set from, given back
        sequences = p.prompts * p.group_size
        given.append(given_back("tokens a sequence (k = 0 rate x hours)",
                                walk.predicted[1]["tokens_per_step"] / sequences,
                                dict(p.curve)[0] * p.sync_hours * 3600 / (p.n_steps * sequences)))
    if p.scaling:
        colocated, asynchronous = p.scaling
        scaling, more = colocated_sizes(runs, walk, colocated)
        split_scaling, split_rows, split_given = split_sizes(runs, walk, asynchronous)
        rows, given = rows + more + split_rows, given + split_given
        scaling += split_scaling
    return rows, given, scaling


def gpu_comparison(scheduler, memory, name, shard=None):
    """The bound, the walk down and the published numbers for preset `name` (see the module
    docstring). `walk` lists, from the bound to the prediction, each cost with the seconds
    per step and hours of the asynchronous run (`seconds`, `hours`) and of the synchronous
    one (`sync_seconds`, `sync_hours`) once it is charged; `held_out` lists a HeldOut for
    every held-out published number, each measurement once (`same` names the numbers that
    are the same measurement), and `set` a GivenBack for the number the preset was set from."""
    p = PRESETS[name]
    runs = PresetRuns(scheduler, memory, p, shard)
    walk = walk_down(runs)
    ks, predicted_k, bound_k = k_curve(runs, walk)
    held, given, scaling = held_out_comparison(runs, walk, ks, predicted_k, bound_k)
    (bound_sync, bound_async), (sync, asyn) = walk.bound, walk.predicted
    sync_hours = runs.hours(sync["seconds"])
    speedup = sync_hours / asyn["hours"]
    return dict(
        preset=name, system=p.system, model=p.model.name, gpu=p.gpu.name, gpus=p.gpus,
        gen_gpus=p.gen_gpus, tp=p.tp, prompts=p.prompts, group_size=p.group_size,
        max_len=p.max_len, sigma=p.sigma, median_len=p.median_len, mean_len=mean_len(p),
        k=p.k, n_steps=p.n_steps, baseline=p.baseline, set_number=p.set_number,
        residual_causes=p.residual,
        max_running=p.max_running, pin=p.pin, engine_limit=p.engine_limit,
        sync_passes=passes(p.sync_trainer), async_passes=passes(p.async_trainer),
        slots=sync["slots"], walk=walk.rows,
        bound=dict(sync_hours=runs.hours(bound_sync["seconds"]), async_hours=bound_async["hours"],
                   by_k=[dict(k=k_label(k), throughput=r["throughput"])
                         for k, r in zip(ks, bound_k)],
                   sync_throughput=bound_sync["throughput"]),
        sync=dict(hours=sync_hours, **sync, **generation(walk.simulation)),
        asynchronous=asyn, by_k=predicted_k, scaling=scaling,
        speedup=speedup,
        published=dict(sync_hours=p.sync_hours, async_hours=p.async_hours,
                       speedup=p.sync_hours / p.async_hours, curve=[[k_label(k), v]
                                                                  for k, v in p.curve]),
        ratio=dict(sync=sync_hours / p.sync_hours, asynchronous=asyn["hours"] / p.async_hours,
                   speedup=speedup / (p.sync_hours / p.async_hours)),
        held_out=held, set=given, notes=[list(n) for n in p.notes])


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
    ones = p._replace(prompts=p.prompts * p.group_size, group_size=1, pin=False,
                      max_running=None if p.max_running is None
                      else p.max_running * p.group_size)
    no_overhead = dict(overhead=0.0)
    variants = (("as walked down", p, limit, {}),
                ("no per-step overhead", p, limit, no_overhead),
                ("S = 16", p, 16, {}),
                ("S reserved at the cap", p, reserved, {}), ("groups of 1", ones, None, {}),
                ("cap x 2", p._replace(max_len=2 * p.max_len), None, {}),
                ("cap / 2", p._replace(max_len=p.max_len // 2), None, {}),
                ("no concurrency cap", p._replace(max_running=None), limit, {}))
    rows = []
    for label, q, slots, change in variants:
        long = dict(warmup=40, window=30) if q.group_size == 1 else {}
        train_gpus = q.gpus - q.gen_gpus
        sync, _ = run(scheduler, memory, GpuRun(q, q.gen_gpus, train_gpus, 0, q.sync_trainer,
                                                cs._replace(**change), slots, **SYNC))
        asyn, _ = run(scheduler, memory, GpuRun(q, q.gen_gpus, train_gpus, q.k, q.async_trainer,
                                                ca._replace(**change), slots, **long,
                                                shard=shard))
        rows.append(dict(variant=label, slots=sync["slots"], group_size=q.group_size,
                         max_len=q.max_len, sync_seconds=sync["seconds"],
                         async_seconds=asyn["seconds"], speedup=sync["seconds"] / asyn["seconds"],
                         max_lag=asyn["max_lag"], token_lag=asyn["token_lag"]))
    return dict(preset=name, k=p.k, gen_gpus=p.gen_gpus, gpus=p.gpus, rows=rows,
                lanes=lane_groups(scheduler), memgap=memgap_reread(memory))


def memgap_reread(memory):
    """MEMGAP's decode steps read back from their own times (vLLM 0.5, OPT-1.3B, prompts of
    161 tokens, 338 new ones, under Nsight): for each batch n, the bytes a step reads on
    average, W + n * (161 + 168.5) * kv (weights W, a token's KV bytes kv from Task 1; step j
    reads 161 + j - 1 tokens of each response, 168.5 the mean of j - 1 for j = 1..338; the
    log times 337 decode steps), over the measured seconds a step: the bandwidth that GPU
    delivered; divided by the DRAM read share its counters give, the peak they imply.
    Example: at n = 512, 35.8 GB in 51.0 ms = 0.70 TB/s, over 0.504: a 1.39 TB/s GPU."""
    kv = memory.kv_cache_bytes(24, 32, 64, 1)   # OPT-1.3B: 24 layers, 32 heads of 64
    rows = []
    for n, seconds in MEMGAP_STEP.items():
        read = MEMGAP_WEIGHTS + n * (MEMGAP_PROMPT + (MEMGAP_NEW - 1) / 2) * kv
        rows.append(dict(batch=n, step_ms=seconds * 1e3, bytes_gb=read / 1e9,
                         delivered_tb_s=read / seconds / 1e12, share=MEMGAP_SHARES[n],
                         implied_peak_tb_s=read / seconds / MEMGAP_SHARES[n] / 1e12,
                         h800_sheet_ms=read / H800.bandwidth * 1e3))
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
        runs = [run_gpu_simulation(GpuSettings(n_lanes, 1, B // group, k, n_steps, group,
                                               Step(tick, 0.0), Linear(train_time, 0.0)),
                                   lengths(cap), unchecked(scheduler.may_start),
                                   unchecked(scheduler.take_batch)) for k in (0, 1, 2)]
        rows.append(dict(variant=label, k=[0, 1, 2],
                         gain=[r["throughput"] / runs[0]["throughput"] for r in runs],
                         max_lag=[r["max_lag"] for r in runs]))
    return dict(n_lanes=n_lanes, B=B, sigma=sigma, train_time=train_time, n_steps=n_steps,
                rows=rows)
