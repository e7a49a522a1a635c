"""The experiments behind run.py's parts (given): each takes a task module and returns numbers.

run.py passes in the module lab.load gave it (yours or the reference), prints
what comes back and draws it; the tests call the same functions. Nothing here
chooses whose code runs.
"""
import math

import numpy as np

import toy
from lab import MASK_LEVELS, SCHEMES
from lab.model_shapes import GPU_GB, MODELS, ROUND_7B

KS = (0, 1, 2, 3, 4, 6, 8)
MISMATCHES = tuple(round(0.1 * i, 1) for i in range(11))  # 0.0, 0.1, ..., 1.0
LARGE_MISMATCH = 0.6
BATCH_SIZES = (1, 4, 16, 64, 256)
C_SWEEP = (1.0, 1.25, 1.5, 2.0, 2.5, 3.0, 4.0, 6.0, 8.0, 10.0)
LONG = 4  # a response "long" if over 4x the mean length (which is 1)
LENGTHS = (6, 16, 64, 256, 1024)  # response lengths T of the length sweep
LENGTH_KEYS = ("rmse", "rmse_stderr", "cosine", "zero_weight_share")


# ---------------------------------------------------------------- Part 1: memory (Task 1)

def memory_table(memory):
    """Model-state GB of PPO, GRPO and GRPO + LoRA (rank 16) for the lab's 7B and real models,
    from the Task 1 module `memory`."""
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
        rows.append(row)
    lab_7b = rows[0]
    return dict(ppo_7b_gb=lab_7b["ppo_gb"], grpo_7b_gb=lab_7b["grpo_gb"],
                grpo_lora_7b_gb=lab_7b["grpo_lora_gb"],
                kv_bytes_per_token=lab_7b["kv_bytes_per_token"],
                kv_64x16k_gb=memory.kv_cache_bytes(ROUND_7B.layers, ROUND_7B.kv_heads,
                                                   ROUND_7B.head_dim, 64 * 16_384) / 1e9,
                h100s_for_ppo_7b=lab_7b["gpus_for_ppo"], models=rows)


# ---------------------------------------------------------------- Part 2: scheduling (Task 2)

def scheduling_sweep(scheduler, n_lanes, B, ks=KS, n_steps=200, train_time=1.0, sigma=1.25):
    """Throughput, lane utilization and mean lag for each staleness bound k (ks[0] must be 0),
    from the Task 2 module `scheduler`."""
    runs = [scheduler.simulate(n_lanes, B, k, n_steps=n_steps, train_time=train_time,
                               sigma=sigma) for k in ks]
    return dict(n_lanes=n_lanes, B=B, n_steps=n_steps, sigma=sigma, train_time=train_time,
                k=list(ks), throughput=[r["throughput"] for r in runs],
                throughput_gain=[r["throughput"] / runs[0]["throughput"] for r in runs],
                utilization=[r["utilization"] for r in runs],
                mean_lag=[r["mean_lag"] for r in runs])


def drop_stale_analysis(scheduler, n_lanes, B, k=1, n_steps=200, train_time=1.0, sigma=1.25):
    """Run with stale responses dropped: how many, how much work lost, and which ones."""
    r = scheduler.simulate(n_lanes, B, k, n_steps=n_steps, train_time=train_time, sigma=sigma,
                           drop_stale=True)
    dropped = [s["length"] for s in r["trace"] if s["dropped"]]
    trained = [s["length"] for s in r["trace"] if s["lag"] is not None]
    keep = scheduler.simulate(n_lanes, B, k, n_steps=n_steps, train_time=train_time, sigma=sigma)
    return dict(k=k, n_started=len(r["trace"]), n_dropped=len(dropped),
                wasted_frac=r["wasted_frac"], throughput=r["throughput"],
                throughput_keeping_stale=keep["throughput"],
                mean_length_dropped=sum(dropped) / max(len(dropped), 1),
                mean_length_trained=sum(trained) / len(trained),
                long_share_dropped=sum(x > LONG for x in dropped) / max(len(dropped), 1),
                long_share_trained=sum(x > LONG for x in trained) / len(trained))


# ---------------------------------------------------------------- Part 3: mismatch (Task 3)

def mismatch_sweep(tis, C=2.0, batch_size=64, noise="student_t"):
    """Exact bias, variance and RMSE of the five estimators against the mismatch,
    and against the batch size at LARGE_MISMATCH, from the Task 3 module `tis`."""
    schemes = {}
    for scheme in SCHEMES:
        stats = [exact_stats(tis, scheme, m, C, batch_size, noise) for m in MISMATCHES]
        schemes[scheme] = {key: [s[key] for s in stats] for key in ("bias", "variance", "rmse")}
    by_batch_size = dict(mismatch=LARGE_MISMATCH, batch_size=list(BATCH_SIZES))
    for scheme in SCHEMES:
        stats = [exact_stats(tis, scheme, LARGE_MISMATCH, C, n, noise) for n in BATCH_SIZES]
        by_batch_size[scheme] = {key: [s[key] for s in stats] for key in ("bias", "variance")}
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

def length_sweep(tis, mismatch=LARGE_MISMATCH, batch_size=64, C=2.0, noise="student_t",
                 lengths=LENGTHS):
    """Relative RMSE, cosine and zero-weight share of every scheme against the response
    length T at a fixed per-token mismatch (toy.length_stats), from the Task 3 module `tis`.
    The masked schemes come in once Task 3c is done; until then `masked_skipped` says why."""
    functions = {scheme: scheme_weights(tis, scheme, C) for scheme in SCHEMES}
    try:
        functions |= masked_functions(tis)
        skipped = None
    except NotImplementedError as todo:
        skipped = str(todo)
    runs = [toy.length_stats(functions, tis.pg_estimate, T, mismatch, batch_size, noise)
            for T in lengths]
    schemes = {scheme: {key: [run["schemes"][scheme][key] for run in runs]
                        for key in LENGTH_KEYS} for scheme in functions}
    return dict(T=list(lengths), per_token_mismatch=mismatch, batch_size=batch_size, C=C,
                noise=noise, method=[run["method"] for run in runs], schemes=schemes,
                masked_skipped=skipped)


def scheme_weights(tis, scheme, C):
    """Task 3a's weights for one scheme, as a function of (logp_train, logp_infer)."""
    return lambda logp_train, logp_infer: tis.importance_weights(logp_train, logp_infer, scheme, C)
