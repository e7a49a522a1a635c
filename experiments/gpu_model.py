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
count. Every published number is printed against the bound, the band (every ranged cost
of the walk at its cheap end, then its dear end: `band_end`) and the point prediction,
held out or not (`published_numbers` says which); what is left between the point and
the published number is the residual. Before the runs, `gpu_components` checks the decode
model alone against AReaL v0.3's Fig. 2 and Fig. 5 generation throughputs
(experiments/gpu_components.py). --gpu-sweep's variations are experiments/gpu_sweep.py's.

To keep each preset to a few seconds, the asynchronous runs simulate a share of the
engines with the same share of each batch, of the trainer's GPUs and of the cap on
groups in flight (run's `shard`): every engine sees the same load, every trainer GPU
the same tokens (tools/check_shard.py compares it with the full cluster). The
synchronous runs simulate the whole cluster (SYNC).
"""

import itertools
import math
from dataclasses import dataclass, replace
from typing import NamedTuple

import numpy as np

from experiments.gpu_sources import (
    CHECKPOINT_EVERY,
    GPUS_PER_NODE,
    PRESETS,
    PROMPT_TOKENS,
    Costs,
    Preset,
    Trainer,
    capped_moment,
    context,
    flops_per_token,
    forward_flops,
    median_for_mean,
    multiplied,
    passes,
)
from gpu_core import GpuSettings, Linear, Step, collector_paused, run_gpu_simulation, steps_time
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

    step: Step  # seconds of an engine's decode step
    train: Linear  # seconds of the trainer's update of a batch's tokens
    slots: int  # responses an engine holds at once
    swap: Linear  # an engine's pause at each update, of its tokens in flight


def costs(memory, preset, train_gpus, trainer, c=Costs(), sync=False, nodes=1):
    """The EngineCosts (step, train, slots, swap) of an engine and the trainer under the
    costs c, with `nodes` generating nodes reading the new weights from the shared store:

      step  = overhead + max(2 N / (tp * bandwidth), n * 2 N / (tp * peak FLOP/s))
              + C * kv_per_token / (tp * bandwidth)          (+ 2 all-reduces a layer, tp > 1)
      train = save (+ realloc + transfer + reward if sync)
              + flops_per_token(model, trainer, context) * tokens / (train_gpus * peak * eff)
      slots = min(engine limit, (memory_fraction * tp * GPU memory - all weights)
                                / (kv_per_token * held))
      swap  = reload + nodes * node_read (+ poll, and
              + C * forward_flops(context) / (tp * peak * prefill), if asynchronous)
    N = multiplied(model): the parameters without the input embedding, which a step does not
    read whole and no token multiplies; held = prompt + E[L^2] / (2 E[L]), the tokens a
    slot holds on average when its KV cache grows with the response (paged, as in vLLM and
    SGLang). The poll is the asynchronous run's (its gserver manager posts new weights
    after a sleep; the synchronous run reloads through param-realloc, with a second save).
    weights and kv_per_token come from Task 1 (model_state_bytes(0, n), kv_cache_bytes).
    """
    m, gpu, tp = preset.model, preset.gpu, preset.tp
    read = memory.model_state_bytes(0, int(multiplied(m)))  # 2 bytes each, bf16
    held = memory.model_state_bytes(0, int(m.params))
    kv = memory.kv_cache_bytes(m.layers, m.kv_heads, m.head_dim, 1)
    bandwidth = tp * gpu.bandwidth
    all_reduce = 2 * m.layers * c.all_reduce if tp > 1 else 0.0
    step = Step(
        read / bandwidth,
        kv / bandwidth,
        2 * multiplied(m) / (tp * gpu.flops),
        c.overhead + all_reduce,
    )
    ctx = context(preset.median_len, preset.sigma, preset.max_len)
    fixed = c.save + (c.realloc + c.transfer + c.reward if sync else 0.0)
    train = Linear(
        fixed, flops_per_token(m, trainer, ctx) / (train_gpus * gpu.flops * c.efficiency)
    )
    recompute = forward_flops(m, ctx) / (tp * gpu.flops * c.prefill) if c.prefill else 0.0
    reload = c.reload + nodes * c.node_read
    swap = Linear(reload if sync else reload + c.poll, 0.0 if sync else recompute)
    first = capped_moment(preset.median_len, preset.sigma, preset.max_len, 1)
    second = capped_moment(preset.median_len, preset.sigma, preset.max_len, 2)
    free = preset.memory_fraction * tp * gpu.memory_gb * 1e9 - held
    paged = max(1, math.floor(free / (kv * (PROMPT_TOKENS + second / (2 * first)))))
    return EngineCosts(step, train, min(paged, preset.engine_limit), swap)


def lengths(preset, seed=0):
    """Endless response lengths in tokens: lognormal(median, sigma), rounded up, cut at
    max_len (drawn 4,096 at a time, and read one by one without a Python call each)."""
    return itertools.chain.from_iterable(length_blocks(preset, seed))


def length_blocks(preset, seed):
    rng = np.random.default_rng(seed)
    while True:
        draw = np.ceil(rng.lognormal(math.log(preset.median_len), preset.sigma, 4096))
        yield np.minimum(draw, preset.max_len).astype(int).tolist()


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
    k: int | None  # None: no staleness bound; 0: a synchronous run
    trainer: Trainer
    c: Costs = Costs()
    slots: int | None = None  # responses per engine at most, if not the number of `costs`
    warmup: int | None = None  # steps before the window; 2 (min(k, 8) + 1) if None
    window: int = WINDOW  # steps measured
    shard: int | None = None  # simulate 1/shard of the cluster; SHARD if None


def run(scheduler, memory, setup, simulations=None):
    """One steady-state measurement of the GpuRun `setup`, over its window of steps after
    its warm-up, under its costs c: seconds per step, trained tokens per second and per
    step, lags, and the run itself. k = 0 is a synchronous run (its reward, second save and
    transfer, and no poll or KV recompute: costs). A shard simulates at most one engine's
    worth of the cluster, with 1/shard of each batch, of the trainer's GPUs and of the cap
    on groups in flight.

    Validations and checkpoints are charged after the run, exactly as if the whole
    pipeline stopped for them: (seconds + stopped(...)) / (1 - checkpoint / every).
    simulations: a dict that keeps each simulation by its settings and lengths, so that a
    run whose simulation is the same as an earlier one (a cost charged after the run, such
    as a checkpoint, changes no GpuSettings) reuses it: the same numbers, simulated once.
    """
    preset, c, window = setup.preset, setup.c, setup.window
    k = NO_BOUND if setup.k is None else setup.k
    shard = max(1, min(setup.shard or SHARD, setup.gen_gpus // preset.tp))
    warmup = setup.warmup or 2 * (min(k, 8) + 1)
    nodes = math.ceil(setup.gen_gpus / GPUS_PER_NODE)
    step, train, limit, swap = costs(
        memory, preset, setup.train_gpus / shard, setup.trainer, c, k == 0, nodes
    )
    slots = setup.slots or limit
    engines = setup.gen_gpus // preset.tp // shard
    cap = None if preset.max_running is None else max(1, preset.max_running // shard)
    settings = GpuSettings(
        engines,
        slots,
        preset.prompts // shard,
        k,
        warmup + window,
        preset.group_size,
        step,
        train,
        prompt=PROMPT_TOKENS,
        max_running=cap,
        pin=preset.pin,
        swap=swap,
    )
    key = (settings, preset.median_len, preset.sigma, preset.max_len)  # what lengths() draws
    r = None if simulations is None else simulations.get(key) or same_run(simulations, key)
    if r is None:
        # unchecked: without their @checked input checks, as scheduler_core.simulate does
        r = run_gpu_simulation(
            settings,
            lengths(preset),
            unchecked(scheduler.may_start),
            unchecked(scheduler.take_batch),
        )
        if simulations is not None:
            simulations[key] = r
    u = r["updates"]
    seconds = ((u[-1][1] - u[warmup - 1][1]) / window + stopped(preset, step, c)) / (
        1 - c.checkpoint / CHECKPOINT_EVERY
    )
    tokens = sum(r["batch_tokens"][warmup:]) * shard / window  # per step, whole cluster
    return dict(
        seconds=seconds,
        tokens_per_step=tokens,
        throughput=tokens / seconds,
        train_seconds=train(tokens / shard),
        mean_lag=r["mean_lag"],
        max_lag=r["max_lag"],
        head_token_lag=r["head_token_lag"],
        token_lag=r["token_lag"],
        slots=slots,
        engines=engines * shard,
        shard=shard,
    ), r


def same_run(simulations, key):
    """A simulation kept in `simulations` that is the one of `key` at a lower staleness bound,
    in which may_start never refused a start; None if there is none. By Task 2's rule it is
    the same run, call for call: may_start admits at a higher k whatever it admitted at a
    lower one, and take_batch reads k only to drop stale groups (never here). So Fig. 7's
    k = 16 and unbounded runs are k = 8's when k = 8 never binds, as at the bound."""
    settings, *drawn = key
    if settings.drop_stale:
        return None
    for (other, *other_drawn), r in simulations.items():
        if (
            other_drawn == drawn
            and other.k < settings.k
            and not r["refused"]
            and replace(other, k=settings.k) == settings
        ):
            return r
    return None


def stopped(preset, step, c):
    """Seconds a step the whole pipeline stands still for validations: c.validation of them
    in the run's n_steps, each one cap-length response alone on an engine (Step step)."""
    if not c.validation:
        return 0.0
    return c.validation * steps_time(step, 1, PROMPT_TOKENS, preset.max_len) / preset.n_steps


DECODE = ("overhead", "all_reduce")  # the costs that change generation itself


def sync_walked(memory, preset, gpus, result, simulated, c):
    """A synchronous step (k = 0) simulated under the costs `simulated`, charged the costs c
    instead where they differ outside DECODE. Exact: at k = 0 a step is the engines' pause
    (swap), then generation from empty engines, then the update, one after the other, so
    only the pause, the update and the stops change:
        seconds = (seconds_sim * (1 - ckpt_sim / every) - stops_sim - swap_sim
                   - train_sim(tokens) + swap_c + train_c(tokens) + stops_c)
                  / (1 - ckpt_c / every)"""
    trainer, tokens = preset.sync_trainer, result["tokens_per_step"]
    nodes = math.ceil(gpus[0] / GPUS_PER_NODE)
    before = costs(memory, preset, gpus[1], trainer, simulated, True, nodes)
    after = costs(memory, preset, gpus[1], trainer, c, True, nodes)
    inner = (
        result["seconds"] * (1 - simulated.checkpoint / CHECKPOINT_EVERY)
        - stopped(preset, before.step, simulated)
        - before.swap.fixed
        - before.train(tokens)
        + after.swap.fixed
        + after.train(tokens)
        + stopped(preset, after.step, c)
    )
    seconds = inner / (1 - c.checkpoint / CHECKPOINT_EVERY)
    return dict(
        result, seconds=seconds, throughput=tokens / seconds, train_seconds=after.train(tokens)
    )


def walk_costs(preset, mode, end="value"):
    """The Costs after each step of the preset's walk, for mode "sync" or "async": a list of
    (Cost or None for the bound, Costs), the bound first; steps that do not apply to the
    mode leave the Costs as they were. end: "value" (each cost's point), "cheap" or "dear"
    (each cost at that end of its range, where it has one)."""
    c, stages = Costs(), [(None, Costs())]
    for cost in preset.walk:
        if cost.applies in ("both", mode):
            value = getattr(cost, end)
            c = c._replace(**{cost.field: cost.value if value is None else value})
        stages.append((cost, c))
    return stages


def phases(preset, result, gpus, c):
    """A colocated step split as verl reports it (seconds): old_log_prob and update_actor
    from the step's trained tokens at the trainer efficiency of the costs c, generation the
    rest (a colocated step at k = 0 does one, then the other)."""
    trainer, m = preset.sync_trainer, preset.model
    per_pass = (
        result["tokens_per_step"]
        * forward_flops(m, context(preset.median_len, preset.sigma, preset.max_len))
        / (gpus * preset.gpu.flops * c.efficiency)
    )
    log_prob = trainer.logprob_passes * per_pass
    update = (passes(trainer) - trainer.logprob_passes) * per_pass
    return dict(
        gen=result["seconds"] - log_prob - update,
        old_log_prob=log_prob,
        update_actor=update,
        step=result["seconds"],
    )


def k_label(k):
    return "no bound" if k is None else str(k)


class HeldOut(NamedTuple):
    """A held-out published number against the model (in the JSON, the list of its fields)."""

    what: str
    predicted: float
    published: float
    ratio: float  # predicted / published
    bound: float | None  # the perfect pipeline's, where it was run
    same: str  # the row that is the same measurement, "derived" or ""


def held_out(what, bound, predicted, published, same=""):
    return HeldOut(what, predicted, published, predicted / published, bound, same)


class GivenBack(NamedTuple):
    """The published number a preset was set from, given back by the model."""

    what: str
    model: float
    target: float
    ratio: float  # model / target


def given_back(what, model, target):
    return GivenBack(what, model, target, model / target)


class PresetRuns:
    """The runs of one preset under any Costs: its synchronous baseline (the whole
    cluster) and its asynchronous split; `hours` scales a step's seconds to its n_steps."""

    def __init__(self, scheduler, memory, preset, shard=None):
        self.scheduler, self.memory, self.p, self.shard = scheduler, memory, preset, shard
        self.simulations = {}  # run's: each simulation once (a walk stage may repeat one)
        gen = preset.sync_gen_gpus or preset.gen_gpus
        self.sync_gpus = (
            (preset.gpus, preset.gpus)
            if preset.baseline == "colocated"
            else (gen, preset.gpus - gen)
        )

    def hours(self, seconds):
        return seconds * self.p.n_steps / 3600

    def sync(self, c, gpus=None):
        """(result, simulation) at k = 0 under the costs c, on (generating, training) gpus."""
        gen, train = gpus or self.sync_gpus
        setup = GpuRun(self.p, gen, train, 0, self.p.sync_trainer, c, **SYNC)
        return run(self.scheduler, self.memory, setup, self.simulations)

    def split(self, g, k, c, gpus=None):
        """The asynchronous run at bound k, g of `gpus` GPUs (the preset's) generating."""
        p = self.p
        setup = GpuRun(p, g, (gpus or p.gpus) - g, k, p.async_trainer, c, shard=self.shard)
        result, _ = run(self.scheduler, self.memory, setup, self.simulations)
        return dict(gen_gpus=g, k=k_label(k), hours=self.hours(result["seconds"]), **result)


class Walk(NamedTuple):
    """walk_down's answer: (synchronous, asynchronous) pairs of results and of Costs."""

    rows: list  # one dict per stage, the bound first (the JSON's "walk")
    bound: tuple  # the results at the bound
    predicted: tuple  # the results with the whole walk charged
    simulation: dict  # the last synchronous run simulated (its generation is printed)
    costs: tuple  # the Costs with the whole walk charged
    simulated: tuple  # (result, Costs) of the last synchronous run simulated (sync_walked's)


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
    return Walk(rows, bound, (sync, asyn), simulation, (cs, ca), (measured, simulated))


def walk_row(cost, sync, asyn, hours):
    """One stage of the walk: the cost charged last (None: the bound) and both runs."""
    name, source, applies = (
        ("bound", "a perfect pipeline at the sourced configuration", "both")
        if cost is None
        else (cost.name, cost.source, cost.applies)
    )
    return dict(
        name=name,
        source=source,
        applies=applies,
        seconds=asyn["seconds"],
        hours=asyn["hours"],
        sync_seconds=sync["seconds"],
        sync_hours=hours(sync["seconds"]),
    )


def k_curve(runs, walk):
    """(ks, predicted, bound): the asynchronous runs at each staleness bound of the preset's
    published curve (KS without one), with the whole walk and, for a curve, at the bound."""
    p = runs.p
    ks = [k for k, _ in p.curve if k != 0] or list(KS)
    predicted = [
        walk.predicted[1] if k == p.k else runs.split(p.gen_gpus, k, walk.costs[1]) for k in ks
    ]
    bound = (
        [walk.bound[1] if k == p.k else runs.split(p.gen_gpus, k, Costs()) for k in ks]
        if p.curve
        else []
    )
    return ks, predicted, bound


def curve_name(k):
    return f"tokens/s at k = {k_label(k)} (thousands)"


def published_numbers(p):
    """(name, source, published, held_out) of every published number preset p is compared
    with. held_out is False for the number the preset was set from (p.fit), for what is the
    same measurement as it or as another row, and for what follows from it (verl's trainer
    phases: the set number rescaled by GPUs and passes)."""
    table = "VERL_README" if p.scaling else "AREAL_V03 Table 2"
    rows = [
        ("synchronous hours", table, p.sync_hours, p.fit != "synchronous hours" and not p.scaling),
        ("asynchronous hours", table, p.async_hours, not p.scaling),
        (
            "speedup",
            "the two hours' ratio",
            p.sync_hours / p.async_hours,
            not p.fit and not p.scaling,
        ),
    ]
    for k, value in p.curve:
        rows.append((curve_name(k), "AREAL_V03 Fig. 7", value / 1e3, k not in (0, p.k)))
    if p.scaling:
        colocated, asynchronous = p.scaling
        for gpus, published in colocated.items():
            for phase in ("gen", "old_log_prob", "update_actor", "step"):
                rows.append(
                    (
                        f"colocated {gpus}: {phase} s",
                        "VERL_README",
                        published[phase],
                        phase in ("gen", "step"),
                    )
                )
        for g, published in asynchronous.items():
            for phase in ("step", "update_actor"):
                rows.append((f"{g}:{g}: {phase} s", "VERL_README", published[phase], False))
    return rows


def model_values(runs, cs, ca, sync, asyn, known=None):
    """{name: the model's value} for every published number (published_numbers) under the
    Costs cs (synchronous) and ca (asynchronous), given the preset's own synchronous and
    asynchronous results; `known` maps a staleness bound to a result already run. The
    curve's other bounds and verl's other sizes are run here."""
    p, hours = runs.p, runs.hours
    out = {"synchronous hours": hours(sync["seconds"]), "asynchronous hours": asyn["hours"]}
    out["speedup"] = out["synchronous hours"] / out["asynchronous hours"]
    by_k = {**(known or {}), 0: sync, p.k: asyn}
    for k, _ in p.curve:
        if k not in by_k:
            by_k[k] = runs.split(p.gen_gpus, k, ca)
        out[curve_name(k)] = by_k[k]["throughput"] / 1e3
    if p.scaling:
        colocated, asynchronous = p.scaling
        for gpus in colocated:
            result = sync if gpus == p.gpus else runs.sync(cs, (gpus, gpus))[0]
            for phase, value in phases(p, result, gpus, cs).items():
                out[f"colocated {gpus}: {phase} s"] = value
            out[f"colocated {gpus}: hours"] = hours(result["seconds"])
        for g in asynchronous:
            result = asyn if g == p.gen_gpus else runs.split(g, p.k, ca, 2 * g)
            out[f"{g}:{g}: step s"] = result["seconds"]
            out[f"{g}:{g}: update_actor s"] = result["train_seconds"]
            out[f"{g}:{g}: hours"] = result["hours"]
    return out


def band_end(runs, walk, end):
    """model_values() with every cost of the walk at the `end` ("cheap" or "dear") of its range.
    A preset whose lengths are set at the trainer's efficiency (verl) is re-set at it and
    simulated again; otherwise the synchronous step is charged exactly (sync_walked)."""
    p = runs.p
    cs, ca = walk_costs(p, "sync", end)[-1][1], walk_costs(p, "async", end)[-1][1]
    if p.lengths_at is not None:
        runs = PresetRuns(
            runs.scheduler, runs.memory, at_mean(p, p.lengths_at(ca.efficiency)), runs.shard
        )
        sync = runs.sync(cs)[0]
    else:
        result, simulated = walk.simulated
        sync = sync_walked(runs.memory, p, runs.sync_gpus, result, simulated, cs)
    return model_values(runs, cs, ca, sync, runs.split(p.gen_gpus, p.k, ca))


def at_mean(p, mean):
    """Preset p with its lognormal's median moved so that its capped mean is `mean`."""
    return p._replace(median_len=median_for_mean(mean, p.sigma, p.max_len))


class Check(NamedTuple):
    """A published number against the model's band: its value with every ranged cost at its
    cheap end, at its point, at its dear end (low and high: the smallest and largest)."""

    name: str
    source: str
    published: float
    low: float
    point: float
    high: float
    held_out: bool


def band_checks(p, point, cheap, dear):
    """A Check (as a dict, the JSON's form) for every published number of preset p."""
    rows = []
    for name, source, published, held in published_numbers(p):
        values = (cheap[name], point[name], dear[name])
        rows.append(
            Check(name, source, published, min(values), point[name], max(values), held)._asdict()
        )
    return rows


def bound_values(runs, walk, ks, bound_k):
    """{name: the bound's value} where the bound was run (the preset's own size)."""
    p, hours = runs.p, runs.hours
    (sync, asyn) = walk.bound
    out = {"synchronous hours": hours(sync["seconds"]), "asynchronous hours": asyn["hours"]}
    out["speedup"] = out["synchronous hours"] / out["asynchronous hours"]
    by_k = {0: sync, **dict(zip(ks, bound_k))}
    for k, _ in p.curve:
        out[curve_name(k)] = by_k[k]["throughput"] / 1e3
    if p.scaling:
        for phase, value in phases(p, sync, p.gpus, Costs()).items():
            out[f"colocated {p.gpus}: {phase} s"] = value
        out[f"{p.gen_gpus}:{p.gen_gpus}: step s"] = asyn["seconds"]
        out[f"{p.gen_gpus}:{p.gen_gpus}: update_actor s"] = asyn["train_seconds"]
    return out


def scaling_rows(p, point):
    """verl's runs at each published size (the figure's phase panel), from model_values()."""
    if not p.scaling:
        return []
    colocated, asynchronous = p.scaling
    rows = [
        dict(
            gpus=gpus,
            mode="colocated",
            hours=point[f"colocated {gpus}: hours"],
            **{
                phase: point[f"colocated {gpus}: {phase} s"]
                for phase in ("gen", "old_log_prob", "update_actor", "step")
            },
        )
        for gpus in colocated
    ]
    return rows + [
        dict(
            gpus=2 * g,
            mode=f"{g}:{g}",
            hours=point[f"{g}:{g}: hours"],
            step=point[f"{g}:{g}: step s"],
            update_actor=point[f"{g}:{g}: update_actor s"],
        )
        for g in asynchronous
    ]


def fit_given_back(p, walk):
    """The number preset p was set from, given back by the model (none for areal-7b)."""
    if p.curve:
        sequences = p.prompts * p.group_size
        return [
            given_back(
                "tokens a sequence (k = 0 rate x hours)",
                walk.predicted[1]["tokens_per_step"] / sequences,
                dict(p.curve)[0] * p.sync_hours * 3600 / (p.n_steps * sequences),
            )
        ]
    if p.scaling:
        return [
            given_back(
                f"{p.gen_gpus}:{p.gen_gpus}: update_actor s",
                walk.predicted[1]["train_seconds"],
                p.scaling[1][p.gen_gpus]["update_actor"],
            )
        ]
    return []


@collector_paused()  # its simulations' results are kept until it returns (PresetRuns)
def gpu_comparison(scheduler, memory, name, shard=None):
    """The bound, the walk down, the band and the published numbers for preset `name` (see
    the module docstring). `walk` lists, from the bound to the prediction, each cost with
    the seconds per step and hours of the asynchronous run (`seconds`, `hours`) and of the
    synchronous one (`sync_seconds`, `sync_hours`) once it is charged; `checks` every
    published number against the band (Check); `held_out` a HeldOut for each held-out
    one; `set` a GivenBack for the number the preset was set from."""
    p = PRESETS[name]
    runs = PresetRuns(scheduler, memory, p, shard)
    walk = walk_down(runs)
    ks, predicted_k, bound_k = k_curve(runs, walk)
    (bound_sync, bound_async), (sync, asyn) = walk.bound, walk.predicted
    cs, ca = walk.costs
    point = model_values(runs, cs, ca, sync, asyn, dict(zip(ks, predicted_k)))
    checks = band_checks(p, point, band_end(runs, walk, "cheap"), band_end(runs, walk, "dear"))
    bound = bound_values(runs, walk, ks, bound_k)
    held = [
        held_out(c["name"], bound.get(c["name"]), c["point"], c["published"])
        for c in checks
        if c["held_out"]
    ]
    sync_hours = runs.hours(sync["seconds"])
    speedup = sync_hours / asyn["hours"]
    sensitivity = {}
    if p.sync_gen_gpus:  # the synchronous baseline at the asynchronous run's split
        other = runs.sync(walk.costs[0], (p.gen_gpus, p.gpus - p.gen_gpus))[0]
        sensitivity[f"synchronous hours at {p.gen_gpus}:{p.gpus - p.gen_gpus}"] = runs.hours(
            other["seconds"]
        )
    return dict(
        preset=name,
        system=p.system,
        model=p.model.name,
        gpu=p.gpu.name,
        gpus=p.gpus,
        gen_gpus=p.gen_gpus,
        sync_gpus=list(runs.sync_gpus),
        tp=p.tp,
        prompts=p.prompts,
        group_size=p.group_size,
        max_len=p.max_len,
        sigma=p.sigma,
        median_len=p.median_len,
        mean_len=mean_len(p),
        k=p.k,
        n_steps=p.n_steps,
        baseline=p.baseline,
        set_number=p.set_number,
        fit=p.fit,
        residual_causes=p.residual,
        max_running=p.max_running,
        pin=p.pin,
        engine_limit=p.engine_limit,
        sync_passes=passes(p.sync_trainer),
        async_passes=passes(p.async_trainer),
        slots=sync["slots"],
        walk=walk.rows,
        kv_slots=costs(memory, p._replace(engine_limit=10**9), 1, p.sync_trainer).slots,
        bound=dict(
            sync_hours=runs.hours(bound_sync["seconds"]),
            async_hours=bound_async["hours"],
            by_k=[dict(k=k_label(k), throughput=r["throughput"]) for k, r in zip(ks, bound_k)],
            sync_throughput=bound_sync["throughput"],
        ),
        sync=dict(hours=sync_hours, **sync, **generation(walk.simulation)),
        asynchronous=asyn,
        by_k=predicted_k,
        scaling=scaling_rows(p, point),
        speedup=speedup,
        sensitivity=sensitivity,
        published=dict(
            sync_hours=p.sync_hours,
            async_hours=p.async_hours,
            speedup=p.sync_hours / p.async_hours,
            curve=[[k_label(k), v] for k, v in p.curve],
        ),
        ratio=dict(
            sync=sync_hours / p.sync_hours,
            asynchronous=asyn["hours"] / p.async_hours,
            speedup=speedup / (p.sync_hours / p.async_hours),
        ),
        checks=checks,
        held_out=held,
        set=fit_given_back(p, walk),
        notes=[list(n) for n in p.notes],
    )


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
    return dict(
        generation_seconds=end - start,
        tail_share=(end - t90) / (end - start),
        t90=t90 - start,
        tokens_per_second=[list(x) for x in points_[::stride]],
        engine=slowest,
    )
