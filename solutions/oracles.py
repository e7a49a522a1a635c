"""The reference's answers and the known mistakes' models, for instructors only.

The graded tests never compute an expected value: they read it from
grading/expected.json, which tools/make_expected.py writes by calling the functions
named in ORACLES below on the tests' inputs (fixed at LAB_SEED=2026). Where the
reference is at hand and the seed is another one (the autograder's fresh-seed run, an
instructor's LAB_SEED=123), grading/expected.py calls them directly. The students'
copy of the lab (tools/release.py) has no solutions/, so none of this.

ORACLES names each function by what the tests call it: a task function's name for the
right answer on its inputs ("model_state_bytes"), and "<task>:right" and
"<task>:<mutant>" for a hint's fingerprints (the right answer and each known mistake's,
on the task's probes, as the test observes the student's function there).
"""

import functools
import math
from collections.abc import Callable, Mapping
from fractions import Fraction
from typing import Any, NamedTuple

import numpy as np

from lab.responses import take_outcome

# ---------------------------------------------------------------- Task 1


def state_bytes(n_trained, n_frozen=0):
    return 16 * int(n_trained) + 2 * int(n_frozen)


def exact_bytes(count, b):
    """`count` values of b bytes each, b read as the decimal it prints as, rounded up."""
    return math.ceil(Fraction(count) * Fraction(str(b)))


def cache_bytes(L, H, d, n, b=2):
    return exact_bytes(2 * int(L) * int(H) * int(d) * int(n), b)


class Bill(NamedTuple):
    """How rl_memory_gb's bill is drawn up: the defaults are the rule, and each known
    mistake (MODELS_1C) changes one field, so one line of the bill."""

    unit: float = 1e9  # bytes per GB
    critic: int = 16  # bytes per critic parameter (PPO, no LoRA)
    reference_bytes: int = 2  # bytes per parameter of the frozen reference
    reward_bytes: int = 2  # bytes per parameter of the frozen reward model
    adapter: int = 16  # bytes per trained LoRA parameter
    obey_reference: bool = True  # reference=False leaves the reference out
    obey_reward_model: bool = True  # reward_model is read, not taken from the algorithm
    lora_reference_copy: bool = False  # under LoRA, a reference apart from the frozen base
    critic_adapter: bool = True  # under LoRA, PPO's critic has an adapter of its own
    critic_base: bool = False  # under LoRA, PPO's critic has a frozen base of its own
    use_lora: bool = True  # lora_params is read
    reference_frees_base: bool = False  # under LoRA, the base is left out when reference=False


RULE_1C = Bill()


def bill_gb(algo, N, reference, reward_model, lora, how=RULE_1C):
    """rl_memory_gb's docstring as a bill of models, drawn up as `how` says (a Bill)."""
    if reward_model is None or not how.obey_reward_model:
        reward_model = algo == "ppo"
    reference = reference or not how.obey_reference
    ppo = algo == "ppo"
    if lora and how.use_lora:
        bill = how.adapter * lora + ppo * how.adapter * lora * how.critic_adapter  # the adapters
        bill += 2 * N * (not how.reference_frees_base or reference)  # the shared frozen base
        bill += 2 * N * (reference and how.lora_reference_copy)  # a reference apart
        bill += 2 * N * (ppo and how.critic_base)  # the critic's own base
    else:
        bill = 16 * N + ppo * how.critic * N + reference * how.reference_bytes * N
    return (bill + reward_model * how.reward_bytes * N) / how.unit


MODELS_1A = {
    "forgot the fp32 master weights (12 bytes per trained parameter)": lambda a, b: 12 * a + 2 * b,
    "counted only the two Adam moments (8 bytes per trained parameter)": lambda a, b: 8 * a + 2 * b,
    "counted only the bf16 weight and gradient": lambda a, b: 4 * a + 2 * b,
    "counted trained parameters like frozen ones": lambda a, b: 2 * a + 2 * b,
    "kept frozen weights in fp32 (4 bytes)": lambda a, b: 16 * a + 4 * b,
    "frozen parameters cost nothing": lambda a, b: 16 * a,
    "counted frozen parameters like trained ones": lambda a, b: 16 * a + 16 * b,
}
MODELS_1B = {
    "KV cache without the factor 2 for K and V": lambda L, H, d, n, b: exact_bytes(
        L * H * d * n, b
    ),
    "ignored bytes_per_value (always bf16)": lambda L, H, d, n, b: 2 * L * H * d * n * 2,
    "counted bits instead of bytes": lambda L, H, d, n, b: exact_bytes(2 * L * H * d * n * 8, b),
    "forgot head_dim": lambda L, H, d, n, b: exact_bytes(2 * L * H * n, b),
}
CHANGES_1C: dict[str, dict[str, Any]] = {
    "GiB (2**30) instead of GB (10**9)": dict(unit=2**30),
    "forgot the critic": dict(critic=0, critic_adapter=False),
    "counted the critic as frozen": dict(critic=2),
    "counted the reference as trained": dict(reference_bytes=16),
    "ignored reference=False": dict(obey_reference=False),
    "counted the reward model as trained": dict(reward_bytes=16),
    "ignored reward_model (a reward model exactly when the algorithm is PPO)": dict(
        obey_reward_model=False
    ),
    "kept a separate reference copy under LoRA": dict(lora_reference_copy=True),
    "counted the LoRA adapter as frozen": dict(adapter=2),
    "one adapter for PPO under LoRA (forgot the critic's)": dict(critic_adapter=False),
    "gave PPO's critic a frozen base of its own under LoRA": dict(critic_base=True),
    "ignored lora_params": dict(use_lora=False),
    "left the frozen base out under LoRA when reference=False": dict(reference_frees_base=True),
}
MODELS_1C = {
    mutant: functools.partial(bill_gb, how=Bill(**change)) for mutant, change in CHANGES_1C.items()
}


# ---------------------------------------------------------------- Task 2


def admits(n, d, v, k, B):
    return n - d < (v + k + 1) * B


def admission(rule):
    return lambda n, d, v, k, B: bool(rule(n, d, v, k, B))


MODELS_2A = {
    mutant: admission(rule)
    for mutant, rule in {
        "admission ignores n_dropped": lambda n, d, v, k, B: n < (v + k + 1) * B,
        "added n_dropped instead of subtracting it": lambda n, d, v, k, B: n + d < (v + k + 1) * B,
        "admission off by one batch (too strict)": lambda n, d, v, k, B: n - d < (v + k) * B,
        "admission off by one batch (too loose)": lambda n, d, v, k, B: n - d < (v + k + 2) * B,
        "<= instead of <": lambda n, d, v, k, B: n - d <= (v + k + 1) * B,
        "<= with (version + k) * B": lambda n, d, v, k, B: n - d <= (v + k) * B,
        "admission ignores k (always synchronous)": lambda n, d, v, k, B: n - d < (v + 1) * B,
        "admission ignores the version": lambda n, d, v, k, B: n - d < (k + 1) * B,
        "k responses ahead instead of k batches": lambda n, d, v, k, B: n - d < (v + 1) * B + k,
    }.items()
}


class Take(NamedTuple):
    """How take_batch's steps are done: the defaults are the rule, and each known mistake
    (MODELS_2B) changes one field, so one step."""

    drop_if: str = "always"  # when stale responses are dropped: "always", or only with B
    # responses waiting ("batch") or B fresh ones ("fresh")
    at_k: bool = False  # a response of lag k is dropped too
    lags_first: bool = False  # every lag is set before dropping
    keep_dropped: bool = False  # dropped responses stay in `finished`
    rebind: bool = False  # `finished` is replaced, not changed in place
    more_than_B: bool = False  # a batch waits for more than B responses
    pick: str = "first"  # the batch: the first B, or "last", "lifo", or sorted by
    # "start", "length" or "tag"
    remove_batch: bool = True  # the batch is removed from `finished`
    sign: int = 1  # lag = sign * (version - tag)


RULE_2B = Take()


def rule_take(finished, version, k, B, drop_stale=False, how=RULE_2B):
    """take_batch's docstring, step by step, each step done as `how` says (a Take)."""

    def lag(r):
        return version - r["tag"]

    if how.lags_first:
        for r in finished:
            r["lag"] = lag(r)
    dropped = []
    waiting = {"always": B, "batch": len(finished), "fresh": sum(lag(r) <= k for r in finished)}
    if drop_stale and waiting[how.drop_if] >= B:
        dropped = [r for r in finished if lag(r) > k or (how.at_k and lag(r) == k)]
        for r in dropped:
            r["dropped"] = True
        kept = [r for r in finished if all(r is not d for d in dropped)]
        if how.rebind:
            finished = kept  # the caller's list keeps every response
        elif not how.keep_dropped:
            finished[:] = kept
    if len(finished) < B + how.more_than_B:
        return None, dropped
    if how.pick in ("start", "length", "tag"):  # sorted by something else than finish order
        batch = sorted(finished, key=lambda r: r[how.pick])[:B]
        finished[:] = [r for r in finished if all(r is not b for b in batch)]
    else:
        ends = {"first": finished[:B], "last": finished[-B:], "lifo": finished[-B:][::-1]}
        batch = ends[how.pick]
        if how.remove_batch:
            del finished[slice(None, B) if how.pick == "first" else slice(-B, None)]
    for r in batch:
        r["lag"] = how.sign * lag(r)
    return batch, dropped


def queue_answer(tags, version, k, B, drop_stale):
    """take_batch's docstring on responses with these tags, as the random-queue test reads
    it: (batch ids or None, sorted dropped ids, ids left, each response's lag code)."""
    stale = [i for i, tag in enumerate(tags) if drop_stale and version - tag > k]
    fresh = [i for i in range(len(tags)) if i not in stale]
    batch, left = (None, fresh) if len(fresh) < B else (fresh[:B], fresh[B:])
    trained = dict(zip(batch or [], [version - tags[i] for i in batch or []]))
    return (
        batch,
        stale,
        left,
        " ".join(".x" if i in stale else str(trained.get(i, ".")) for i in range(len(tags))),
    )


def take_model(**change):
    return functools.partial(take_outcome, functools.partial(rule_take, how=Take(**change)))


CHANGES_2B: dict[str, dict[str, Any]] = {
    "took the lowest ids (start order), not the first in `finished`": dict(pick="start"),
    "took the shortest responses first": dict(pick="length"),
    "took the oldest tags first": dict(pick="tag"),
    "dropped only when B responses were waiting": dict(drop_if="batch"),
    "dropped only when B fresh responses were left for a batch": dict(drop_if="fresh"),
    "set the lags before dropping": dict(lags_first=True),
    "LIFO instead of FIFO": dict(pick="lifo"),
    "took the newest B in order": dict(pick="last"),
    "lag with the wrong sign": dict(sign=-1),
    "dropped at lag == k": dict(at_k=True),
    "left dropped responses in `finished`": dict(keep_dropped=True),
    "replaced the list instead of changing it in place": dict(rebind=True),
    "did not remove the batch from `finished`": dict(remove_batch=False),
    "waited for more than B responses": dict(more_than_B=True),
}
MODELS_2B = {mutant: take_model(**change) for mutant, change in CHANGES_2B.items()}


# ---------------------------------------------------------------- Task 3


def capped(log_w, C):
    return np.minimum(log_w, np.log(C))


def sequence(log_w, axis=1):
    return np.broadcast_to(log_w.sum(axis=axis, keepdims=True), log_w.shape)


def geometric(log_w):
    return np.broadcast_to(log_w.mean(axis=1, keepdims=True), log_w.shape)


def product(log_w):  # the product of the ratios, multiplied as they are: it overflows
    return np.log(np.broadcast_to(np.prod(np.exp(log_w), axis=1, keepdims=True), log_w.shape))


def expected_weights(log_w, scheme, C):
    """importance_weights's docstring, from the log-ratios log_w = logp_train - logp_infer."""
    if scheme == "none":
        return np.ones_like(log_w)
    log_seq = sequence(log_w)
    return np.exp(
        {
            "token": log_w,
            "token_tis": capped(log_w, C),
            "seq": log_seq,
            "seq_tis": capped(log_seq, C),
        }[scheme]
    )


def ratio_weights(ratios, scheme, C):
    """The weights of each scheme, from the ratios themselves (exact for the tests' table)."""
    seq = np.prod(ratios, axis=1, keepdims=True) * np.ones_like(ratios)
    return {
        "none": np.ones_like(ratios),
        "token": ratios,
        "token_tis": np.minimum(ratios, C),
        "seq": seq,
        "seq_tis": np.minimum(seq, C),
    }[scheme]


def weights_model(log_ratio=lambda lt, li: lt - li, **by_scheme):
    """A known mistake of importance_weights, called like it: `log_ratio` from the
    log-probabilities, then by_scheme[scheme](log_w, C) for the schemes it changes, the
    rule for the others."""

    def model(logp_train, logp_infer, scheme, C=2.0):
        log_w = log_ratio(logp_train, logp_infer)
        if scheme in by_scheme:
            return by_scheme[scheme](log_w, C)
        return expected_weights(log_w, scheme, C)

    return model


MODELS_3A = {
    "ratio upside down (inferred over trained)": weights_model(log_ratio=lambda lt, li: li - lt),
    "ratio of exponentials (linear space): 0/0 at very low log-probabilities": weights_model(
        log_ratio=lambda lt, li: np.log(np.exp(lt) / np.exp(li))
    ),
    "returned the log-weights": weights_model(
        token=lambda lw, C: lw,
        token_tis=lambda lw, C: capped(lw, C),
        seq=lambda lw, C: sequence(lw),
        seq_tis=lambda lw, C: capped(sequence(lw), C),
    ),
    "max instead of min (raised every weight to C)": weights_model(
        token_tis=lambda lw, C: np.exp(np.maximum(lw, np.log(C))),
        seq_tis=lambda lw, C: np.exp(np.maximum(sequence(lw), np.log(C))),
    ),
    "clipped from below as well as above": weights_model(
        token_tis=lambda lw, C: np.exp(np.clip(lw, -np.log(C), np.log(C))),
        seq_tis=lambda lw, C: np.exp(np.clip(sequence(lw), -np.log(C), np.log(C))),
    ),
    "ignored C (always 2)": weights_model(
        token_tis=lambda lw, C: np.exp(capped(lw, 2.0)),
        seq_tis=lambda lw, C: np.exp(capped(sequence(lw), 2.0)),
    ),
    "capped log w at C instead of log C": weights_model(
        token_tis=lambda lw, C: np.exp(np.minimum(lw, C)),
        seq_tis=lambda lw, C: np.exp(np.minimum(sequence(lw), C)),
    ),
    "truncated each token inside the sequence product": weights_model(
        seq_tis=lambda lw, C: np.exp(sequence(capped(lw, C)))
    ),
    "running product instead of the whole product": weights_model(
        seq=lambda lw, C: np.exp(np.cumsum(lw, axis=1)),
        seq_tis=lambda lw, C: np.exp(capped(np.cumsum(lw, axis=1), C)),
    ),
    "geometric mean of the ratios instead of their product": weights_model(
        seq=lambda lw, C: np.exp(geometric(lw)),
        seq_tis=lambda lw, C: np.exp(capped(geometric(lw), C)),
    ),
    "summed the log-ratios over the batch axis": weights_model(
        seq=lambda lw, C: np.exp(sequence(lw, axis=0)),
        seq_tis=lambda lw, C: np.exp(capped(sequence(lw, axis=0), C)),
    ),
    "multiplied ratios directly (overflow), not in log space": weights_model(
        seq=lambda lw, C: np.exp(product(lw)), seq_tis=lambda lw, C: np.exp(capped(product(lw), C))
    ),
    "token_tis not truncated": weights_model(token_tis=lambda lw, C: np.exp(lw)),
    "seq_tis not truncated": weights_model(seq_tis=lambda lw, C: np.exp(sequence(lw))),
    '"none" gives zero weights': weights_model(none=lambda lw, C: np.zeros_like(lw)),
}


def expected_estimate(rewards, grad, w):
    """pg_estimate's docstring: (1/N) sum_n r_n sum_t w_nt grad_nt."""
    return np.einsum("n,nt,ntd->d", rewards, w, grad) / len(rewards)


def loop_estimate(rewards, grad_logp, weights):
    """The same as a plain loop, summed in the order the docstring writes it."""
    N, T, D = grad_logp.shape
    total = np.zeros(D)
    for n in range(N):
        for t in range(T):
            total += rewards[n] * weights[n, t] * grad_logp[n, t]
    return total / N


MODELS_3B = {
    "summed over the batch instead of averaging": lambda r, g, w: (
        expected_estimate(r, g, w) * len(r)
    ),
    "ignored the weights": lambda r, g, w: expected_estimate(r, g, np.ones_like(w)),
    "averaged over tokens instead of summing": lambda r, g, w: (
        expected_estimate(r, g, w) / w.shape[1]
    ),
    "ignored the rewards": lambda r, g, w: expected_estimate(np.ones_like(r), g, w),
    "squared the weights": lambda r, g, w: expected_estimate(r, g, w**2),
    "subtracted the mean reward (a GRPO baseline)": lambda r, g, w: expected_estimate(
        r - r.mean(), g, w
    ),
    "summed over the batch and averaged over the tokens (axes swapped)": lambda r, g, w: (
        expected_estimate(r, g, w) * len(r) / w.shape[1]
    ),
}


def in_band(ratios, level, low, high):
    """Each token's ratio (level "token"), or its response's product ("seq") or geometric
    mean ("geo") of the ratios, where that lies in [low, high], else 0: from the ratios
    themselves, exact for the tests' table."""
    values = {
        "token": ratios,
        "seq": np.prod(ratios, axis=1, keepdims=True),
        "geo": np.exp(np.log(ratios).mean(axis=1, keepdims=True)),
    }[level]
    values = values * np.ones_like(ratios)
    return np.where((values >= low) & (values <= high), values, 0.0)


class Mask(NamedTuple):
    """How masked_weights's steps are done: the defaults are the rule, and each known
    mistake (MODELS_3C) changes one field, so one step."""

    upside_down: bool = False  # the ratio is pi_infer / pi_train
    seq_per_token: bool = False  # level "seq" masks each token on its own
    seq_mean: bool = False  # level "seq" takes the geometric mean, not the product
    seq_overflow: bool = False  # level "seq" multiplies the ratios directly
    geo_sum: bool = False  # level "geo" takes the product, not the geometric mean
    geo_arithmetic: bool = False  # level "geo" takes the arithmetic mean of the ratios
    band: tuple[float, float] | None = None  # (low, high) whatever the call's
    use_low: bool = True  # low bounds the band
    use_high: bool = True  # high bounds the band
    edges: bool = True  # the band holds its edges
    clip: bool = False  # clipped into the band instead of masked
    mask_only: bool = False  # the 0/1 mask, not the kept ratios


RULE_3C = Mask()


def rule_mask(logp_train, logp_infer, level, low=0.5, high=2.0, how=RULE_3C):
    """masked_weights's docstring, step by step, each step done as `how` says (a Mask)."""
    log_ratio = logp_infer - logp_train if how.upside_down else logp_train - logp_infer
    if level == "seq" and not how.seq_per_token:
        log_ratio = (
            product(log_ratio)
            if how.seq_overflow
            else np.broadcast_to(
                (log_ratio.mean if how.seq_mean else log_ratio.sum)(axis=1, keepdims=True),
                log_ratio.shape,
            )
        )
    if level == "geo":
        log_ratio = np.broadcast_to(
            np.log(np.exp(log_ratio).mean(axis=1, keepdims=True))
            if how.geo_arithmetic
            else (log_ratio.sum if how.geo_sum else log_ratio.mean)(axis=1, keepdims=True),
            log_ratio.shape,
        )
    low, high = how.band or (low, high)
    if how.clip:
        return np.exp(np.clip(log_ratio, np.log(low), np.log(high)))
    lowest = np.log(low) if how.use_low else -np.inf
    highest = np.log(high) if how.use_high else np.inf
    if how.edges:
        inside = (lowest <= log_ratio) & (log_ratio <= highest)
    else:
        inside = (lowest < log_ratio) & (log_ratio < highest)
    return inside.astype(float) if how.mask_only else np.exp(np.where(inside, log_ratio, -np.inf))


CHANGES_3C: dict[str, dict[str, Any]] = {
    "band without its edges (< instead of <=)": dict(edges=False),
    "clipped into the band instead of masking": dict(clip=True),
    "returned the 0/1 mask, not the kept ratios": dict(mask_only=True),
    "ratio upside down": dict(upside_down=True),
    "no lower bound (ignored low)": dict(use_low=False),
    "no upper bound (ignored high)": dict(use_high=False),
    "ignored low and high (always 0.5 and 2)": dict(band=(0.5, 2.0)),
    "sequence level masks each token on its own": dict(seq_per_token=True),
    "geometric level uses the product": dict(geo_sum=True),
    "geometric level uses the arithmetic mean of the ratios": dict(geo_arithmetic=True),
    "sequence level uses the geometric mean": dict(seq_mean=True),
    "multiplied ratios directly (overflow), not in log space": dict(seq_overflow=True),
}
MODELS_3C = {
    mutant: functools.partial(rule_mask, how=Mask(**change))
    for mutant, change in CHANGES_3C.items()
}


# ---------------------------------------------------------------- every table, by name

RIGHT = {
    "1a": state_bytes,
    "1b": cache_bytes,
    "1c": bill_gb,
    "2a": admits,
    "2b": functools.partial(take_outcome, rule_take),
    "3a": lambda lt, li, scheme, C=2.0: expected_weights(lt - li, scheme, C),
    "3b": expected_estimate,
    "3c": rule_mask,
}
MODELS: dict[str, Mapping[str, Callable]] = {
    "1a": MODELS_1A,
    "1b": MODELS_1B,
    "1c": MODELS_1C,
    "2a": MODELS_2A,
    "2b": MODELS_2B,
    "3a": MODELS_3A,
    "3b": MODELS_3B,
    "3c": MODELS_3C,
}
ORACLES = {
    "model_state_bytes": state_bytes,
    "kv_cache_bytes": cache_bytes,
    "rl_memory_gb": bill_gb,
    "may_start": admits,
    "take_batch": queue_answer,
    "importance_weights": RIGHT["3a"],
    "weights_of_log_ratios": expected_weights,
    "weights_of_ratios": ratio_weights,
    "pg_estimate": expected_estimate,
    "pg_estimate_by_loop": loop_estimate,
    "masked_weights": rule_mask,
    "masked_ratios": in_band,
    **{f"{task}:right": right for task, right in RIGHT.items()},
    **{
        f"{task}:{mutant}": model
        for task, models in MODELS.items()
        for mutant, model in models.items()
    },
}
