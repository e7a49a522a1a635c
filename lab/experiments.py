"""The experiments behind run.py's parts (given): each takes a task module and returns numbers.

run.py passes in the module lab.load gave it (yours or the reference), prints
what comes back and draws it; the tests call the same functions. Nothing here
chooses whose code runs.
"""
import math
from collections import Counter

import numpy as np

import toy
from lab import MASK_LEVELS, SCHEMES, staleness, training
from lab.model_shapes import GPU_GB, MODELS, ROUND_7B
from scheduler_core import assign_lanes

KS = (0, 1, 2, 3, 4, 6, 8)
MISMATCHES = tuple(round(0.1 * i, 1) for i in range(11))  # 0.0, 0.1, ..., 1.0
LARGE_MISMATCH = 0.6
BATCH_SIZES = (1, 4, 16, 64, 256)
C_SWEEP = (1.0, 1.25, 1.5, 2.0, 2.5, 3.0, 4.0, 6.0, 8.0, 10.0)
LONG = 4  # a response "long" if over 4x the mean length (which is 1)
# The length sweep, set by the per-token KL(pi_infer || pi_train) of its levels: the lab's
# Part 3 scale (0.16, about mismatch 0.6) and a realistic one (0.001, the top of the
# measured range; see docs/long-responses.md for the sources). Each level runs the same
# sequence-level budgets T x KL, doubling (at KL 0.001 they are T = 128, 256, ..., 16,384).
LENGTH_BUDGETS = (0.128, 0.256, 0.512, 1.024, 2.048, 4.096, 8.192, 16.384)
NO_MISMATCH_GRID = (6, 16, 64, 128, 256, 1024)  # the T of a level of KL 0
LENGTH_KLS = (0.16, 0.001)
# A scheme has collapsed once the mean ESS of a batch's weights falls below ESS_SHARE of
# the batch (6.4 of 64) and, further, below ESS_FLOOR responses; and once its mean
# estimate's cosine with the true gradient falls below COLLAPSE_COSINE.
ESS_SHARE, ESS_FLOOR = 0.1, 2.0
COLLAPSE_COSINE = 0.5
LENGTH_KEYS = ("rmse", "rmse_stderr", "cosine", "zero_weight_share", "ess", "ess_stderr")
MAX_TOKENS = 16_384  # tokens of one response when Part 1 counts the lanes of a GPU
STALENESS_KS = (0, 1, 2, 4, 8)  # the staleness table's k, then k = 1 with drop_stale
STALENESS_SCHEMES = ("none", "token_tis", "seq_tis")


# ---------------------------------------------------------------- Part 1: memory (Task 1)

def memory_table(memory, max_tokens=MAX_TOKENS):
    """Model-state GB of PPO, GRPO and GRPO + LoRA (rank 16) for the lab's 7B and real models,
    and the lanes of one GPU at `max_tokens` tokens (see lanes_per_gpu), from the Task 1
    module `memory`."""
    rows = []
    for model in [ROUND_7B] + MODELS:
        adapter = model.lora_params()
        row = dict(model=model.name, params=model.params, lora_params=adapter,
                   ppo_gb=memory.rl_memory_gb("ppo", model.params),
                   grpo_gb=memory.rl_memory_gb("grpo", model.params),
                   grpo_lora_gb=memory.rl_memory_gb("grpo", model.params, lora_params=adapter),
                   kv_bytes_per_token=memory.kv_cache_bytes(model.layers, model.kv_heads,
                                                            model.head_dim, 1))
        row["gpus_for_ppo"] = math.ceil(row["ppo_gb"] / GPU_GB)
        row["lanes_per_gpu"] = lanes_per_gpu(memory.kv_cache_bytes, model, max_tokens)
        row["context"] = model.context
        rows.append(row)
    lab_7b = rows[0]
    return dict(ppo_7b_gb=lab_7b["ppo_gb"], grpo_7b_gb=lab_7b["grpo_gb"],
                grpo_lora_7b_gb=lab_7b["grpo_lora_gb"],
                kv_bytes_per_token=lab_7b["kv_bytes_per_token"],
                kv_64x16k_gb=memory.kv_cache_bytes(ROUND_7B.layers, ROUND_7B.kv_heads,
                                                   ROUND_7B.head_dim, 64 * 16_384) / 1e9,
                h100s_for_ppo_7b=lab_7b["gpus_for_ppo"], max_tokens=max_tokens,
                lanes_per_gpu=lab_7b["lanes_per_gpu"], models=rows)


def lanes_per_gpu(kv_cache_bytes, model, max_tokens):
    """How many responses of `max_tokens` tokens one GPU generates at once: the number of
    KV caches that fit beside the model's bf16 weights (2 bytes per parameter).

        lanes = floor((GPU_GB * 1e9 - 2 * params) / kv_cache_bytes(layers, kv_heads,
                                                                   head_dim, max_tokens))

    0 if the weights alone do not fit. Activations and the inference engine's own
    memory are ignored, so real engines fit somewhat fewer. kv_cache_bytes is Task 1b.

    Example: the lab's 7B at 16,384 tokens: (80e9 - 14e9) / 939,524,096 = 70.2, so 70.
    """
    free = GPU_GB * 1e9 - 2 * model.params
    if free <= 0:
        return 0
    per_response = kv_cache_bytes(model.layers, model.kv_heads, model.head_dim, max_tokens)
    return math.floor(free / per_response)


# ---------------------------------------------------------------- Part 2: scheduling (Task 2)

def scheduling_sweep(scheduler, n_lanes, B, ks=KS, n_steps=200, train_time=1.0, sigma=1.25):
    """Throughput, lane utilization and lag (mean, 95th percentile, max, and lag_counts: how
    many trained responses had lag 0, 1, 2, ...) for each staleness bound k (ks[0] must be
    0), from the Task 2 module `scheduler`."""
    runs = [scheduler.simulate(n_lanes, B, k, n_steps=n_steps, train_time=train_time,
                               sigma=sigma) for k in ks]
    return dict(n_lanes=n_lanes, B=B, n_steps=n_steps, sigma=sigma, train_time=train_time,
                k=list(ks), throughput=[r["throughput"] for r in runs],
                throughput_gain=[r["throughput"] / runs[0]["throughput"] for r in runs],
                utilization=[r["utilization"] for r in runs],
                mean_lag=[r["mean_lag"] for r in runs], lag_p95=[r["lag_p95"] for r in runs],
                max_lag=[r["max_lag"] for r in runs],
                lag_counts=[lag_counts(r["trace"]) for r in runs])


def lag_counts(trace):
    """[n_0, n_1, ..., n_max]: n_l trained responses had lag l (dropped ones have no lag).

    Example: lags 0, 0, 1, 3 give [2, 1, 0, 1].
    """
    counts = Counter(r["lag"] for r in trace if r["lag"] is not None)
    return [counts[lag] for lag in range(max(counts) + 1)]


def drop_stale_analysis(scheduler, n_lanes, B, k=1, n_steps=200, train_time=1.0, sigma=1.25):
    """Run with stale responses dropped: how many, how much work lost, and which ones."""
    r = scheduler.simulate(n_lanes, B, k, n_steps=n_steps, train_time=train_time, sigma=sigma,
                           drop_stale=True)
    dropped = [s["length"] for s in r["trace"] if s["dropped"]]
    trained = [s["length"] for s in r["trace"] if s["lag"] is not None]
    keep = scheduler.simulate(n_lanes, B, k, n_steps=n_steps, train_time=train_time, sigma=sigma)
    return dict(k=k, n_started=len(r["trace"]), n_dropped=len(dropped),
                max_lag=r["max_lag"], max_lag_keeping_stale=keep["max_lag"],
                wasted_frac=r["wasted_frac"], throughput=r["throughput"],
                throughput_keeping_stale=keep["throughput"],
                mean_length_dropped=sum(dropped) / max(len(dropped), 1),
                mean_length_trained=sum(trained) / len(trained),
                long_share_dropped=sum(x > LONG for x in dropped) / max(len(dropped), 1),
                long_share_trained=sum(x > LONG for x in trained) / len(trained))


def equal_hardware(scheduler, memory, gpus=16, lanes_per_gpu=1, train_work=16.0, k=1, B=32,
                   n_steps=200, sigma=1.25):
    """Synchronous vs asynchronous RL on the same `gpus` GPUs (G below), from the Task 2
    module `scheduler` (and Task 1's `memory` for which splits can hold the model).

    One update costs train_work GPU-time units, shared by the GPUs that train.
      sync, colocated: all G GPUs generate (G * lanes_per_gpu lanes), then all G train:
          simulate(G * lanes_per_gpu, B, 0, train_time=train_work / G)
      async, disaggregated: g GPUs generate and G - g train, for g = 1 .. G - 1:
          simulate(g * lanes_per_gpu, B, k, train_time=train_work / (G - g))
    A split is feasible if its G - g trainer GPUs hold the model state of GRPO on the
    lab's 7B (126 GB: at least 2 GPUs). speedup = best feasible throughput / sync.

    Example: at G = 16, train_work = 16 the sync run is Part 2's k = 0 run (16 lanes,
    train_time 1).
    """
    def throughput(n_lanes, k, train_time):
        return scheduler.simulate(n_lanes, B, k, n_steps=n_steps, train_time=train_time,
                                  sigma=sigma)["throughput"]

    trainers, why = trainer_gpus_needed(memory)
    sync = throughput(gpus * lanes_per_gpu, 0, train_work / gpus)
    splits = [dict(gen_gpus=g, throughput=throughput(g * lanes_per_gpu, k, train_work / (gpus - g)),
                   feasible=gpus - g >= trainers) for g in range(1, gpus)]
    feasible = [s for s in splits if s["feasible"]]
    best = max(feasible, key=lambda s: s["throughput"]) if feasible else dict(gen_gpus=None,
                                                                              throughput=None)
    return dict(gpus=gpus, lanes_per_gpu=lanes_per_gpu, train_work=train_work, k=k, B=B,
                n_steps=n_steps, sigma=sigma, sync_throughput=sync, splits=splits,
                trainer_gpus_needed=trainers, trainer_gpus_why=why,
                best_gen_gpus=best["gen_gpus"], best_throughput=best["throughput"],
                speedup=best["throughput"] / sync if feasible else None)


def trainer_gpus_needed(memory):
    """GPUs needed to hold the model state of GRPO on the lab's 7B (Task 1c), and why.
    Before Task 1 works this is 1 with a note: no split is excluded."""
    try:
        gb = memory.rl_memory_gb("grpo", ROUND_7B.params)
        need = math.ceil(gb / GPU_GB)
        return need, (f"GRPO on the lab's 7B holds {gb:.0f} GB of model state: the trainers "
                      f"need at least {need} GPU(s) of {GPU_GB} GB")
    except Exception as error:  # noqa: BLE001 (Task 1 unfinished or failing: exclude nothing)
        return 1, f"Task 1 does not work yet ({type(error).__name__}), so no split was excluded"


def timeline(scheduler, n_lanes, B, n_steps=200, train_time=1.0, sigma=1.25, drop_stale=False,
             ks=(0, 1), n_updates=4):
    """What every lane did, for k in ks (ks[0] must be 0), over the same window: from 0 to
    the end of the k = 0 run's n_updates-th update.

    Each response started in the window gets a lane (scheduler_core.assign_lanes);
    busy = lane-time spent generating within the window / (n_lanes * window).
    """
    runs = [scheduler.simulate(n_lanes, B, k, n_steps=n_steps, train_time=train_time,
                               sigma=sigma, drop_stale=drop_stale) for k in ks]
    window = runs[0]["updates"][min(n_updates, n_steps) - 1][1]
    panels = []
    for k, r in zip(ks, runs):
        shown = [s for s in r["trace"] if s["start"] < window]  # a prefix: trace is in start order
        busy = sum(min(s["end"], window) - s["start"] for s in shown)
        responses = [dict(id=s["id"], lane=lane, start=s["start"], end=s["end"], tag=s["tag"],
                          dropped=s["dropped"]) for s, lane in zip(shown, assign_lanes(shown))]
        panels.append(dict(k=k, busy=busy / (n_lanes * window), responses=responses,
                           updates=[u for u in r["updates"] if u[0] < window]))
    return dict(n_lanes=n_lanes, B=B, sigma=sigma, train_time=train_time, drop_stale=drop_stale,
                n_updates=n_updates, window=window, runs=panels)


# ---------------------------------------------------------------- Part 3: mismatch (Task 3)

def mismatch_sweep(tis, C=2.0, batch_size=64, noise="student_t"):
    """Exact bias, variance and RMSE of the five estimators against the mismatch,
    and against the batch size at LARGE_MISMATCH, from the Task 3 module `tis`."""
    schemes = {}
    for scheme in SCHEMES:
        stats = [exact_stats(tis, scheme, m, C, batch_size, noise) for m in MISMATCHES]
        schemes[scheme] = {key: [s[key] for s in stats] for key in ("bias", "variance", "rmse")}
    # Other batch sizes need no new run: the bias does not depend on the batch size, and
    # the variance is the one-response variance / batch size (toy.exact_stats).
    at = MISMATCHES.index(LARGE_MISMATCH)
    by_batch_size = dict(mismatch=LARGE_MISMATCH, batch_size=list(BATCH_SIZES))
    for scheme, stats in schemes.items():
        by_batch_size[scheme] = dict(
            bias=[stats["bias"][at]] * len(BATCH_SIZES),
            variance=[stats["variance"][at] * batch_size / n for n in BATCH_SIZES])
    return dict(mismatch=list(MISMATCHES), batch_size=batch_size, C=C, noise=noise,
                schemes=schemes, by_batch_size=by_batch_size)


def c_sweep(tis, Cs=C_SWEEP, mismatch=LARGE_MISMATCH, batch_size=64, noise="student_t"):
    """Bias and RMSE of token_tis against the truncation level C."""
    stats = [exact_stats(tis, "token_tis", mismatch, C, batch_size, noise) for C in Cs]
    rmse = [s["rmse"] for s in stats]
    return dict(mismatch=mismatch, batch_size=batch_size, noise=noise, C=list(Cs),
                bias=[s["bias"] for s in stats], rmse=rmse, best_C=Cs[rmse.index(min(rmse))])


def exact_stats(tis, scheme, mismatch, C=2.0, batch_size=64, noise="student_t"):
    """toy.exact_stats with the two functions of the Task 3 module `tis`."""
    return toy.exact_stats(tis.importance_weights, tis.pg_estimate, scheme, mismatch, C,
                           batch_size, noise)


# ---------------------------------------------------------------- Part 2 drives Part 3: staleness

def staleness_sweep(scheduler, tis, n_lanes, B, ks=STALENESS_KS, n_steps=200, train_time=1.0,
                    sigma=1.25, kl=staleness.TARGET_KL, mismatch=0.0, C=2.0, noise="student_t",
                    n_batches=staleness.ONE_STEP_BATCHES):
    """What each k's lag costs the gradient (lab/staleness.py), from Task 2's `scheduler`
    (the lag of every trained response, batch by batch) and Task 3's `tis` (the weights
    that correct it). One row per k in ks, then k = 1 with drop_stale; per row and scheme
    the bias, variance, RMSE and cosine of the batch estimate at version v, and the
    expected gain of J per update and per time unit (gain per update x updates per time
    unit, throughput / B: a dropped response costs its time and trains nothing), to second
    order and exactly (Monte Carlo over n_batches batches, staleness.exact_gain_stats)."""
    settings = [(k, False) for k in ks] + [(1, True)]
    runs = [scheduler.simulate(n_lanes, B, k, n_steps=n_steps, train_time=train_time,
                               sigma=sigma, drop_stale=drop) for k, drop in settings]
    counts = [staleness.batch_lags(r["trace"], B) for r in runs]
    step = staleness.step_for_kl(kl)
    versions = staleness.policy_versions(step, max(c.shape[1] for c in counts) - 1)
    H = staleness.reward_hessian(toy.THETA)
    estimates = {scheme: staleness.lag_estimates(tis.importance_weights, tis.pg_estimate,
                                                 scheme, versions, mismatch, C, noise)
                 for scheme in STALENESS_SCHEMES}
    rows = []
    for (k, drop), r, c in zip(settings, runs, counts):
        row = dict(k=k, drop_stale=drop, throughput=r["throughput"], mean_lag=r["mean_lag"],
                   lag_p95=r["lag_p95"], max_lag=r["max_lag"], schemes={})
        for scheme in STALENESS_SCHEMES:
            stats = staleness.staleness_stats(staleness.lag_moments(estimates[scheme], H), c,
                                              step, H)
            stats |= staleness.exact_gain_stats(estimates[scheme], c, step, H, n_batches)
            per_update = r["throughput"] / B  # updates per time unit
            stats["gain_per_time"] = stats["gain_per_update"] * per_update
            stats["exact_gain_per_time"] = stats["exact_gain"] * per_update
            stats["exact_gain_per_time_se"] = stats["exact_gain_se"] * per_update
            # flagged: the second-order gain is more than 10% off the exact one
            stats["second_order_off"] = bool(abs(stats["gain_per_update"] - stats["exact_gain"])
                                             > 0.1 * abs(stats["exact_gain"]))
            row["schemes"][scheme] = stats
        rows.append(row)
    best = {scheme: max(range(len(rows)),
                        key=lambda i: rows[i]["schemes"][scheme]["exact_gain_per_time"])
            for scheme in STALENESS_SCHEMES}
    return dict(n_lanes=n_lanes, B=B, n_steps=n_steps, sigma=sigma, train_time=train_time,
                kl=kl, step=step, lag_kl=[staleness.per_token_kl(theta, toy.THETA)
                                          for theta in versions],
                mismatch=mismatch, C=C, noise=noise, schemes=list(STALENESS_SCHEMES),
                n_batches=n_batches, rows=rows, best=best)


# ---------------------------------------------------------------- Part 3 with masking (Task 3c)

def masked_functions(tis, low=0.5, high=2.0):
    """{"token_mask": weights function, "seq_mask": ..., "geo_mask": ...} from Task 3c's
    masked_weights, each taking (logp_train, logp_infer, scheme, C) like importance_weights
    (scheme and C unused). Raises NotImplementedError (with the TODO's message) if Task 3c
    is not done: it is called once on a one-token input first."""
    tis.masked_weights([[0.0]], [[0.0]], "token", low, high)

    def level_weights(level):
        return lambda logp_train, logp_infer, scheme=None, C=None: tis.masked_weights(
            logp_train, logp_infer, level, low, high)
    return {f"{level}_mask": level_weights(level) for level in MASK_LEVELS}


def masked_sweep(tis, batch_size=64, noise="student_t", low=0.5, high=2.0):
    """Exact bias, variance and RMSE of the masked schemes (band [low, high]) against the
    mismatch, as mismatch_sweep does for the five schemes of Task 3a."""
    schemes = {}
    for scheme, weights in masked_functions(tis, low, high).items():
        stats = [toy.exact_stats(weights, tis.pg_estimate, scheme, m, 2.0, batch_size, noise)
                 for m in MISMATCHES]
        schemes[scheme] = {key: [s[key] for s in stats] for key in ("bias", "variance", "rmse")}
    return dict(mismatch=list(MISMATCHES), batch_size=batch_size, noise=noise, low=low,
                high=high, schemes=schemes)


# ---------------------------------------------------------------- Part 3 at real lengths

def length_sweep(tis, kls=LENGTH_KLS, batch_size=64, C=2.0, noise="student_t"):
    """Relative RMSE, cosine, zero-weight share and ESS of every scheme against the response
    length T (toy.length_stats), at each per-token KL in `kls` (the engine's mismatch scale
    that gives it exactly, toy.mismatch_for_kl), from the Task 3 module `tis`; the T of
    each level come from length_grid. The masked schemes come in once Task 3c is done;
    until then `masked_skipped` says why.

    Beside the measured ESS, each level holds two predictions for sequence IS weights W:
      ess_lognormal  N * exp(-2 * T * KL): log W normal with variance 2 * T * KL (the
                     per-token log-ratio's variance is about 2 KL for a small mismatch),
                     and E[W]^2 / E[W^2] = exp(-variance) for a lognormal W
      ess_limit      N * E[W]^2 / E[W^2], exact (toy.sequence_ess_limit): the large-batch ESS
    and `collapse`: per scheme, where its mean ESS falls below ESS_SHARE * N and ESS_FLOOR
    (with the ESS and its error at both ends and whether that is beyond the noise,
    bracket), and its cosine below COLLAPSE_COSINE (crossing); `collapse_exact`: the same
    ESS crossings of seq from the exact column ess_limit."""
    functions = {scheme: scheme_weights(tis, scheme, C) for scheme in SCHEMES}
    try:
        functions |= masked_functions(tis)
        skipped = None
    except NotImplementedError as todo:
        skipped = str(todo)
    levels = []
    for kl in kls:
        mismatch, lengths = toy.mismatch_for_kl(kl, noise), length_grid(kl)
        runs = [toy.length_stats(functions, tis.pg_estimate, T, mismatch, batch_size, noise,
                                 n_batches=length_batches(T)) for T in lengths]
        schemes = {scheme: {key: [run["schemes"][scheme][key] for run in runs]
                            for key in LENGTH_KEYS} for scheme in functions}
        T_kl = [T * kl for T in lengths]
        levels.append(dict(
            kl=kl, mismatch=mismatch, mean_abs_log_ratio=toy.mean_abs_log_ratio(mismatch, noise),
            T=list(lengths), T_kl=T_kl, n_batches=[length_batches(T) for T in lengths],
            method=[run["method"] for run in runs], schemes=schemes,
            ess_lognormal=[batch_size * math.exp(-2 * t_kl) for t_kl in T_kl],
            ess_limit=[toy.sequence_ess_limit(T, mismatch, batch_size, noise) for T in lengths],
            collapse={scheme: collapse_points(stats, T_kl, batch_size)
                      for scheme, stats in schemes.items()}))
        # seq's crossings from its exact large-batch ESS, not sampled: no bracket error
        limit = levels[-1]["ess_limit"]
        levels[-1]["collapse_exact"] = dict(
            seq={key: crossing(limit, T_kl, value) for key, value in
                 (("ess_share", ESS_SHARE * batch_size), ("ess_floor", ESS_FLOOR))})
    return dict(batch_size=batch_size, C=C, noise=noise, ess_share=ESS_SHARE,
                ess_floor=ESS_FLOOR, collapse_cosine=COLLAPSE_COSINE, levels=levels,
                masked_skipped=skipped)


def length_grid(kl):
    """The T of a level: for each budget of LENGTH_BUDGETS the T with T * kl nearest it (at
    least 1, each T once), or NO_MISMATCH_GRID with no mismatch. Example: kl = 0.16 ->
    1, 2, 3, 6, 13, 26, 51, 102 (T x KL 0.16 ... 16.3); kl = 0.001 -> 128 ... 16,384."""
    if kl == 0:
        return list(NO_MISMATCH_GRID)
    return sorted({max(1, round(budget / kl)) for budget in LENGTH_BUDGETS})


def length_batches(T):
    """Monte Carlo batches at length T: 32 up to T = 512, then fewer so that the sweep
    stays a few seconds (a token costs the same at every T): 16 up to 1024, 4 up to 4096,
    2 beyond."""
    return 32 if T <= 512 else 16 if T <= 1024 else 4 if T <= 4096 else 2


def collapse_points(stats, T_kl, batch_size):
    """Where one scheme collapses, as crossing() of its mean ESS below ESS_SHARE * batch_size
    and below ESS_FLOOR, and of its cosine below COLLAPSE_COSINE:
    dict(ess_share=..., ess_floor=..., cosine=...). With the ESS's standard errors in
    stats["ess_stderr"], each ESS crossing also holds the ESS and its error at both ends of
    its bracket (bracket)."""
    ess = {key: crossing(stats["ess"], T_kl, level) for key, level in
           (("ess_share", ESS_SHARE * batch_size), ("ess_floor", ESS_FLOOR))}
    if "ess_stderr" in stats:
        ess = {key: bracket(c, stats["ess"], stats["ess_stderr"], T_kl,
                            ESS_SHARE * batch_size if key == "ess_share" else ESS_FLOOR)
               for key, c in ess.items()}
    return dict(ess, cosine=crossing(stats["cosine"], T_kl, COLLAPSE_COSINE))


def bracket(c, values, stderrs, T_kl, level):
    """A crossing c of sampled values, with the value and standard error at each end of its
    bracket (None where there is no end) and `resolved`: both ends lie more than 2 standard
    errors from `level`, so the crossing is between them beyond the sampling noise (an exact
    value has error 0). Example: values 9 +- 1, 5 +- 2 at T x KL 1, 2, level 6.4 -> at 2,
    after 1, resolved False (5 + 2 x 2 > 6.4)."""
    ends = {}
    for end in ("at", "after"):
        i = T_kl.index(c[end]) if c[end] is not None else None
        ends[f"value_{end}"] = None if i is None else values[i]
        ends[f"se_{end}"] = None if i is None else stderrs[i]
    resolved = all(ends[f"value_{end}"] is None or
                   abs(ends[f"value_{end}"] - level) > 2 * ends[f"se_{end}"] for end in ("at", "after"))
    return dict(c, **ends, resolved=resolved)


def crossing(values, T_kl, level):
    """The first T x KL at which `values` is below `level`, and the T x KL just before it:
    dict(at=..., after=...); at=None if it never is, after=None if already at the first.
    Example: values 9, 5, 1 at T x KL 1, 2, 4, level 6.4 -> dict(at=2, after=1)."""
    for i, (value, t_kl) in enumerate(zip(values, T_kl)):
        if value < level:
            return dict(at=t_kl, after=T_kl[i - 1] if i > 0 else None)
    return dict(at=None, after=T_kl[-1])


def scheme_weights(tis, scheme, C):
    """Task 3a's weights for one scheme, as a function of (logp_train, logp_infer)."""
    return lambda logp_train, logp_infer: tis.importance_weights(logp_train, logp_infer, scheme, C)


# ---------------------------------------------------------------- Part 2 drives Part 3: training

# Fixed before the runs of issue 34 (the earlier J >= 0.5 was reached in 2 to 5 updates,
# before most stale updates happened):
LEARNING_TARGET = 0.9   # the J to reach (J(THETA) = 0.208, at most 1)
# The headline gives every cell the same movement per update, as a PPO clip or a
# KL-controlled step bounds a real update: each update's step is set so that it moves the
# policy by EQUAL_KL nats per token (KL(old || new), exactly; measured again on the runs),
# the KL an on-policy update of B = 32 moves at THETA at the common step (--staleness, k = 0:
# 0.0256 +- 0.0003). The sensitivities: the common step (1x: eta = step_for_kl(TARGET_KL)
# for every update) and each cell's best constant step (--step-grid).
EQUAL_KL = 0.0256
LEARNING_SEEDS = 200    # seeds of the toy's sampling, the same in every setting and scheme
LEARNING_HORIZON = 300  # updates simulated: a seed that has not reached the target by then
                        # counts at its last update (the output says how many)
LEARNING_SEED = 24      # the seed of the uniform draws
TRAINER_LANES = 64      # the trainer-bound set-up: more lanes than B, so k binds
LEARNING_MISMATCHES = (0.0, LARGE_MISMATCH)
GRID_SEEDS = 50         # seeds of the step-grid sensitivity (--step-grid)
GRID_HORIZON = 400      # updates simulated for the grid (its small steps need more)
GRID_SCALES = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0)  # where the grid starts; it grows upward
                                                   # (or down) until every best is interior


def learning_settings(scheduler, set_ups, B, horizon, train_time, sigma):
    """The settings of each set-up (its number of lanes, in set_ups): k in STALENESS_KS, then
    k = 1 with drop_stale, each simulated once for `horizon` updates. Returns (settings, tags (n_traces, horizon, B), times (n_traces,
    horizon + 1)): each setting a dict with its trace's index `trace` (settings with the
    same trace, k = 2, 4, 8 when generation binds, share it)."""
    settings, tags, times = [], [], []
    for lanes in set_ups:
        for k, drop in [(k, False) for k in STALENESS_KS] + [(1, True)]:
            run = scheduler.simulate(lanes, B, k, n_steps=horizon, train_time=train_time,
                                     sigma=sigma, drop_stale=drop)
            t = training.batch_tags(run["trace"], B, horizon)
            clock = np.array([0.0] + [end for _, end in run["updates"]])
            same = next((i for i, (a, b) in enumerate(zip(tags, times))
                         if np.array_equal(a, t) and np.array_equal(b, clock)), None)
            if same is None:
                same = len(tags)
                tags.append(t)
                times.append(clock)
            lags = [r["lag"] for r in run["trace"] if r["lag"] is not None]
            settings.append(dict(lanes=lanes, B=B, k=k, drop_stale=drop,
                                 throughput=run["throughput"], mean_lag=float(np.mean(lags)),
                                 trace=same))
    return settings, np.array(tags), np.array(times)


def train_cells(tis, tags, times, steps, draws, mismatches, target, C, noise, kl=None):
    """Train every trace at every mismatch with every scheme and step (one pass) until each
    run reaches the target, at each of `steps`, or, where `kl` (one per step, NaN for none)
    gives one, with each update's step set so that it moves exactly that many nats per
    token (training.kl_steps).
    Returns (time, reached, kl, steps, last_J), each (n_steps, n_mismatches, n_traces,
    n_schemes, n_seeds): the time to target (a run that never reaches it counts at its last
    update), whether it did, its mean KL per update, its mean step and its J at its last
    update."""
    n_m, n_t, n_s = len(mismatches), len(tags), len(STALENESS_SCHEMES)
    J, KL, used = training.train(tis.importance_weights, tis.pg_estimate,
                                 np.tile(tags, (n_m, 1, 1)), STALENESS_SCHEMES, steps, draws,
                                 np.repeat(mismatches, n_t), C, noise, target, with_kl=True,
                                 kl_per_update=kl)
    J, KL, used = (np.moveaxis(x.reshape(n_m, n_t, n_s, len(steps), len(draws), -1), 3, 0)
                   for x in (J, KL, used))
    time, reached = training.time_to_target(J, times[:, None, None], target)
    last = J.shape[-1] - 1 - np.argmax(np.isfinite(J)[..., ::-1], axis=-1)
    return (time, reached, np.nanmean(KL, axis=-1), np.nanmean(used, axis=-1),
            np.take_along_axis(J, last[..., None], axis=-1)[..., 0])


def cell_row(s, scheme, mismatch, step, scale, target, run, m, j):
    """One row of learning_curves' tables: a setting s, scheme and mismatch at one step,
    from train_cells' `run` at mismatch index m and scheme index j."""
    time, reached, kls, steps, last_J = (x[m, s["trace"], j] for x in run)
    return dict(lanes=s["lanes"], B=s["B"], k=s["k"], drop_stale=s["drop_stale"], scheme=scheme,
                mismatch=mismatch, step=step, scale=scale, target=target, **mean_se(time),
                reached=int(reached.sum()), seeds=len(time), kl_per_update=float(kls.mean()),
                mean_step=float(steps.mean()),
                stalled_J=float(last_J[~reached].mean()) if (~reached).any() else None)


def learning_curves(scheduler, tis, n_lanes=16, B=32, train_time=1.0, sigma=1.25,
                    trainer_lanes=TRAINER_LANES, horizon=LEARNING_HORIZON,
                    n_seeds=LEARNING_SEEDS, target=LEARNING_TARGET, kl=EQUAL_KL,
                    mismatches=LEARNING_MISMATCHES, C=2.0, noise="student_t"):
    """Train the toy (lab/training.py) on each setting's simulate trace, in two set-ups:
    n_lanes lanes (generation-bound at the defaults: what asynchrony buys) and trainer_lanes
    (more lanes than B: the trainer is the bottleneck, so k = 2, 4, 8 run at one throughput
    and k sets the lag); k in STALENESS_KS and k = 1 with drop_stale; each scheme of
    STALENESS_SCHEMES at each mismatch, n_seeds seeds; from Task 2's `scheduler` and Task 3's
    `tis`. Every run trains until J >= target (up to `horizon` updates).

    Two steps per cell: "equal_kl" (the headline), every update's step set so that it moves
    the policy by exactly `kl` nats per token (training.kl_steps), and "1x", the common
    step staleness.step_for_kl(TARGET_KL) for every update of every cell.
    Returns per cell (set-up, setting, scheme, mismatch, step) the time to target (mean,
    standard error, seeds that reached it, the mean KL per update measured), in the lists
    `trainer_bound` and `generation_bound`; the headline's sorted times per cell (the
    fraction of seeds that have reached the target against time); and paired comparisons
    over the same seeds (`costs`, learning_costs).
    """
    settings, tags, times = learning_settings(scheduler, (n_lanes, trainer_lanes), B, horizon,
                                              train_time, sigma)
    step = staleness.step_for_kl(staleness.TARGET_KL)
    draws = np.random.default_rng(LEARNING_SEED).random((n_seeds, horizon, B, toy.T))
    both = train_cells(tis, tags, times, [step, step], draws, mismatches, target, C, noise,
                       [kl, np.nan])  # equal KL and 1x in one pass
    runs = {name: tuple(x[i] for x in both) for i, name in enumerate(("equal_kl", "1x"))}
    cells, sorted_times = [], {}
    for m, mismatch in enumerate(mismatches):
        for i, s in enumerate(settings):
            for j, scheme in enumerate(STALENESS_SCHEMES):
                for name, run in runs.items():
                    cells.append(cell_row(s, scheme, mismatch, name, 1.0 if name == "1x" else None,
                                          target, run, m, j))
                    if name == "equal_kl":
                        sorted_times[f"{mismatch} {i} {scheme}"] = np.sort(
                            run[0][m, s["trace"], j]).tolist()
    per_seed = {name: run[0] for name, run in runs.items()}
    return dict(n_lanes=n_lanes, trainer_lanes=trainer_lanes, B=B, train_time=train_time,
                sigma=sigma, horizon=horizon, n_seeds=n_seeds, target=target,
                J_start=staleness.expected_reward(toy.THETA), step=step,
                step_kl=staleness.TARGET_KL, equal_kl=kl, C=C, noise=noise,
                schemes=list(STALENESS_SCHEMES), mismatches=list(mismatches),
                settings=[{key: v for key, v in s.items() if key != "trace"} for s in settings],
                trainer_bound=[c for c in cells if c["lanes"] == trainer_lanes],
                generation_bound=[c for c in cells if c["lanes"] == n_lanes],
                sorted_times=sorted_times,
                costs=learning_costs(settings, per_seed, mismatches, n_lanes, trainer_lanes))


def paired(x, y):
    """The paired difference x - y over the same seeds: dict(mean, se, significant), where
    significant means |mean| > 2 se."""
    d = mean_se(np.asarray(x) - np.asarray(y))
    return dict(d, significant=bool(abs(d["mean"]) > 2 * d["se"]))


def learning_costs(settings, per_seed, mismatches, n_lanes, trainer_lanes):
    """The comparisons the conclusions rest on, paired over the seeds, for each step and
    mismatch (per_seed[step]: times (n_mismatches, n_traces, n_schemes, n_seeds)):
      per_version: per scheme, (time at k = 8 - time at k = 2) / 6 at trainer_lanes, where
        k = 2, 4, 8 share one throughput: the cost of one more version of staleness;
      recovered: per correction, none's per-version cost minus the correction's;
      asynchrony: per scheme, time at k = 1 - time at k = 0, at n_lanes;
      drop: per set-up and scheme, time at k = 1 dropping stale - time at k = 1 keeping."""
    def at(lanes, k, drop=False):
        return next(s["trace"] for s in settings
                    if (s["lanes"], s["k"], s["drop_stale"]) == (lanes, k, drop))

    out = []
    for name, time in per_seed.items():
        for m, mismatch in enumerate(mismatches):
            t = time[m]
            per = {s: paired(t[at(trainer_lanes, 8), j] / 6, t[at(trainer_lanes, 2), j] / 6)
                   for j, s in enumerate(STALENESS_SCHEMES)}
            versions = (t[at(trainer_lanes, 8)] - t[at(trainer_lanes, 2)]) / 6
            out.append(dict(
                step=name, mismatch=mismatch, per_version=per,
                recovered={s: paired(versions[0], versions[j])
                           for j, s in enumerate(STALENESS_SCHEMES) if j},
                asynchrony={s: paired(t[at(n_lanes, 1), j], t[at(n_lanes, 0), j])
                            for j, s in enumerate(STALENESS_SCHEMES)},
                drop={str(lanes): {s: paired(t[at(lanes, 1, True), j], t[at(lanes, 1), j])
                                   for j, s in enumerate(STALENESS_SCHEMES)}
                      for lanes in (n_lanes, trainer_lanes)}))
    return out


def step_grid(scheduler, tis, n_lanes=16, B=32, train_time=1.0, sigma=1.25,
              trainer_lanes=TRAINER_LANES, lanes=(TRAINER_LANES,), horizon=GRID_HORIZON,
              n_seeds=GRID_SEEDS, target=LEARNING_TARGET, mismatches=LEARNING_MISMATCHES,
              scales=GRID_SCALES, C=2.0, noise="student_t"):
    """The step sensitivity of learning_curves: every cell (set-up, setting, scheme,
    mismatch; the set-ups of `lanes`, by default the trainer-bound one) at step
    scale x staleness.step_for_kl(TARGET_KL) for every update, for scales from `scales`,
    the grid growing (training.best_step) until every cell's least mean time to target has
    a larger one on both sides; n_seeds seeds (the first of learning_curves' draws).
    Returns each cell's times at every scale and its best scale, as rows like
    learning_curves' (step = the best scale)."""
    settings, tags, times = learning_settings(scheduler, lanes, B, horizon, train_time, sigma)
    step = staleness.step_for_kl(staleness.TARGET_KL)
    draws = np.random.default_rng(LEARNING_SEED).random((n_seeds, horizon, B, toy.T))
    runs = {}

    def evaluate(new):  # every new scale in one pass
        out = train_cells(tis, tags, times, [step * scale for scale in new], draws,
                          mismatches, target, C, noise)
        for i, scale in enumerate(new):
            runs[scale] = tuple(x[i] for x in out)
        return [runs[scale][0].mean(axis=-1).ravel() for scale in new]

    grid, means, best = training.best_step(evaluate, scales)
    best = best.reshape(runs[grid[0]][0].shape[:-1])
    cells = []
    for m, mismatch in enumerate(mismatches):
        for s in settings:
            for j, scheme in enumerate(STALENESS_SCHEMES):
                b = grid[best[m, s["trace"], j]]
                cells.append(dict(cell_row(s, scheme, mismatch, float(b), float(b), target,
                                           runs[b], m, j),
                                  grid=[dict(scale=float(g), **mean_se(runs[g][0][m, s["trace"], j]),
                                             reached=int(runs[g][1][m, s["trace"], j].sum()))
                                        for g in grid]))
    return dict(n_lanes=n_lanes, trainer_lanes=trainer_lanes, B=B, horizon=horizon,
                n_seeds=n_seeds, target=target, step=step, scales=[float(g) for g in grid],
                schemes=list(STALENESS_SCHEMES), mismatches=list(mismatches),
                settings=[{key: v for key, v in s.items() if key != "trace"} for s in settings],
                trainer_bound=[c for c in cells if c["lanes"] == trainer_lanes],
                generation_bound=[c for c in cells if c["lanes"] == n_lanes])


def mean_se(x):
    """dict(mean=, se=) of the numbers x: their mean and its standard error."""
    return dict(mean=float(np.mean(x)), se=float(np.std(x, ddof=1) / np.sqrt(len(x))))
