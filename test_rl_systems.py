"""The graded tests of Lab 20. PYTEST_DONT_REWRITE

Run one task at a time:  python -m pytest -q -k task1   (then task2, task3)

A test named test_task<id>_... grades that task (see lab.TASKS). Its argument
(memory, scheduler or tis) is the task module under test, yours or the
reference's (the fixtures are in lab/grading.py); the given code is tested in
lab/test_given.py. Every expected number can be worked out by hand; each
failure says what was computed, from which inputs, expected vs got, and, when
the wrong value is a known mistake, which one (lab/feedback.py).
(PYTEST_DONT_REWRITE above keeps pytest from appending its own assert
introspection, so the messages below are shown as they are.)
"""
import math
import numbers

import numpy as np

import toy
from lab import MASK_LEVELS, SCHEMES
from lab.experiments import c_sweep, exact_stats, masked_functions, scheduling_sweep
from lab.feedback import check, likely, same, show
from lab.model_shapes import GPU_GB


# ---------------------------------------------------------------- helpers

def response(id, tag):
    """A finished response as the simulator makes it (length 1, started at its id)."""
    return dict(id=id, tag=tag, start=float(id), end=id + 1.0, length=1.0, lag=None,
                dropped=False)


def ids(responses):
    return None if responses is None else [r["id"] for r in responses]


# ---------------------------------------------------------------- Task 1a

def test_task1a_bytes_per_parameter(memory):
    check(memory.model_state_bytes(1), 16, "model_state_bytes(1) (one trained parameter)", [
        (12, "forgot the fp32 master copy of the weight (4 bytes)"),
        (8, "counted only the two Adam moments m and v"),
        (4, "counted only the bf16 weight and gradient, no fp32 master or Adam state"),
        (2, "counted the trained parameter as frozen")])
    check(memory.model_state_bytes(0, 1), 2, "model_state_bytes(0, 1) (one frozen parameter)", [
        (16, "a frozen parameter has no gradient and no optimizer state: only its bf16 weight"),
        (4, "frozen weights are kept in bf16 (2 bytes), not fp32"),
        (0, "frozen parameters still take memory: 2 bytes each")])
    check(memory.model_state_bytes(1_000, 500), 17_000, "model_state_bytes(1000, 500)")


def test_task1a_full_7b_is_112_gb(memory):
    got = memory.model_state_bytes(7e9)
    check(got, 112e9, "model_state_bytes(7e9), a 7B model trained in full (bytes)")
    assert isinstance(got, numbers.Integral), (
        f"model_state_bytes must return an int (whole bytes), got {type(got).__name__} {got!r}")


# ---------------------------------------------------------------- Task 1b

def test_task1b_qwen_7b_is_56_kib_per_token(memory):
    got = memory.kv_cache_bytes(28, 4, 128, 1)
    check(got, 57_344, "kv_cache_bytes(28 layers, 4 KV heads, head_dim 128, 1 token)", [
        (28_672, "forgot the factor 2: each token caches a key AND a value vector"),
        (229_376, "used 8 bytes per value; bf16 is 2 bytes (bytes_per_value)"),
        (458_752, "counted bits instead of bytes")])
    assert isinstance(got, numbers.Integral), (
        f"kv_cache_bytes must return an int (whole bytes), got {type(got).__name__} {got!r}")


def test_task1b_scales_with_tokens_and_precision(memory):
    n_tokens = 64 * 16_384  # 64 responses of 16k tokens
    check(memory.kv_cache_bytes(28, 4, 128, n_tokens), 60_129_542_144,
          "kv_cache_bytes for Qwen2.5-7B, 64 responses x 16,384 tokens (about 60 GB)",
          [(30_064_771_072, "forgot the factor 2 for K and V")])
    check(memory.kv_cache_bytes(28, 4, 128, n_tokens, bytes_per_value=1), 30_064_771_072,
          "the same in fp8 (bytes_per_value=1)",
          [(60_129_542_144, "ignored bytes_per_value")])


# ---------------------------------------------------------------- Task 1c

GB_PER_GIB = 2**30 / 1e9  # dividing by 2**30 instead of 1e9 shrinks every number by this


def test_task1c_ppo_7b_is_252_gb(memory):
    check(memory.rl_memory_gb("ppo", 7e9), 252.0, 'rl_memory_gb("ppo", 7e9) in GB', [
        (252.0 / GB_PER_GIB, "divided by 2**30 (GiB); GB here means 10**9 bytes"),
        (140.0, "forgot the critic: PPO trains a value model as large as the policy"),
        (154.0, "counted the critic as frozen; it is trained (16 bytes per parameter)"),
        (350.0, "counted the reference or reward model as trained; both are frozen (2 B)"),
        (238.0, "forgot the reference or the reward model: PPO keeps both, frozen (2 B)")])
    assert math.ceil(memory.rl_memory_gb("ppo", 7e9) / GPU_GB) == 4, (
        f"PPO on 7B should need 4 GPUs of {GPU_GB} GB just for its model state")


def test_task1c_grpo_7b_is_126_gb(memory):
    check(memory.rl_memory_gb("grpo", 7e9), 126.0, 'rl_memory_gb("grpo", 7e9) in GB', [
        (126.0 / GB_PER_GIB, "divided by 2**30 (GiB); GB here means 10**9 bytes"),
        (224.0, "counted the reference as trained; it is frozen (2 bytes per parameter)"),
        (140.0, "counted a reward model; GRPO's default is a verifiable reward (no model)"),
        (252.0, "counted a critic; GRPO has none (the group mean is its baseline)")])
    check(memory.rl_memory_gb("grpo", 7e9, reference=False), 112.0,
          'rl_memory_gb("grpo", 7e9, reference=False)',
          [(126.0, "ignored reference=False")])
    check(memory.rl_memory_gb("grpo", 7e9, reward_model=True), 140.0,
          'rl_memory_gb("grpo", 7e9, reward_model=True)',
          [(126.0, "ignored reward_model=True"),
           (238.0, "counted the reward model as trained; it is frozen")])


def test_task1c_lora_fits_one_gpu(memory):
    lora = 40_000_000
    check(memory.rl_memory_gb("grpo", 7e9, lora_params=lora), 14.64,
          'rl_memory_gb("grpo", 7e9, lora_params=40e6): 2 B per base + 16 B per adapter param', [
              (28.64, "kept a separate reference copy: under LoRA the reference is the base "
                      "with the adapter switched off, so it costs nothing"),
              (14.08, "counted the adapter as frozen; it is what gets trained (16 B)"),
              (126.64, "trained the base weights too; with LoRA they are frozen"),
              (126.0, "ignored lora_params")])
    check(memory.rl_memory_gb("ppo", 7e9, lora_params=lora), 29.28,
          'rl_memory_gb("ppo", 7e9, lora_params=40e6): shared base, policy + critic adapters, '
          'frozen reward model', [
              (28.64, "forgot the critic's adapter"),
              (43.28, "gave the critic a base of its own; it shares the frozen base"),
              (15.28, "forgot the reward model")])


# ---------------------------------------------------------------- Task 2a

def check_admission(may_start, states, what):
    """Compare may_start over `states` with the rule and with known wrong rules."""
    rules = {
        "": lambda n, d, v, k, B: n - d < (v + k + 1) * B,
        "ignored n_dropped: dropped responses are never trained, so they free their place":
            lambda n, d, v, k, B: n < (v + k + 1) * B,
        "off by one batch: the lanes may fill the next batch plus k more, (version + k + 1) * B":
            lambda n, d, v, k, B: n - d < (v + k) * B,
        "off by one batch the other way: (version + k + 1) * B, not (version + k + 2) * B":
            lambda n, d, v, k, B: n - d < (v + k + 2) * B,
        "used <= where the rule has <: that starts one response too many":
            lambda n, d, v, k, B: n - d <= (v + k + 1) * B,
        "ignored k: that is always synchronous":
            lambda n, d, v, k, B: n - d < (v + 1) * B,
    }
    answers = {why: [rule(*s) for s in states] for why, rule in rules.items()}
    got = [may_start(*state) for state in states]
    wrong = [f"may_start(n_started={n}, n_dropped={d}, version={v}, k={k}, B={B}) returned "
             f"{g!r}, expected {e}" for (n, d, v, k, B), g, e in zip(states, got, answers[""])
             if g != e]
    mistakes = [(a, why) for why, a in answers.items() if why]
    hint = "" if None in got else likely([bool(g) for g in got], mistakes)
    assert not wrong, (f"{what}: the rule is n_started - n_dropped < (version + k + 1) * B. "
                       f"{len(wrong)} of {len(states)} answers wrong, e.g.\n  "
                       + "\n  ".join(wrong[:3]) + hint)
    assert all(isinstance(g, (bool, np.bool_)) for g in got), (
        f"may_start must return a bool, got {[type(g).__name__ for g in got]}")


def test_task2a_synchronous_when_k_is_0(scheduler):
    states = [(n, 0, 0, 0, 4) for n in range(6)] + [(n, 0, 1, 0, 4) for n in range(3, 10)]
    check_admission(scheduler.may_start, states,
                    "k = 0, B = 4: one batch, then wait for the update")


def test_task2a_k_batches_ahead(scheduler):
    states = [(n, 0, v, k, 4) for v, k in ((0, 1), (1, 2), (3, 1)) for n in (7, 8, 15, 16, 19, 20)]
    check_admission(scheduler.may_start, states, "k >= 1, B = 4: k batches ahead")


def test_task2a_dropped_free_their_place(scheduler):
    states = [(n, d, 0, 1, 4) for n, d in ((8, 0), (8, 1), (10, 3), (11, 3), (12, 5), (13, 5))]
    check_admission(scheduler.may_start, states, "k = 1, B = 4, with dropped responses")


# ---------------------------------------------------------------- Task 2b

def take(scheduler, tags, version, k, B, drop_stale=False):
    finished = [response(i, tag) for i, tag in enumerate(tags)]
    result = scheduler.take_batch(finished, version, k, B, drop_stale)
    assert isinstance(result, tuple) and len(result) == 2, (
        f"take_batch must return a pair (batch, dropped), got {result!r}")
    batch, dropped = result
    assert isinstance(dropped, (list, tuple)), (
        f"dropped must be a list (empty if nothing was dropped), got {dropped!r}")
    return batch, list(dropped), finished  # a tuple is fine too, as in the simulator


NO_BATCH = "returned no batch although B responses were waiting (take one when len >= B)"


def test_task2b_first_in_first_out(scheduler):
    batch, dropped, finished = take(scheduler, [0, 0, 0, 0, 0], version=0, k=0, B=3)
    check(ids(batch), [0, 1, 2], "take_batch on 5 finished responses (ids 0..4), B = 3: batch ids", [
        (None, NO_BATCH),
        ([4, 3, 2], "took the newest first (LIFO, e.g. pop()); the trainer takes the oldest"),
        ([2, 3, 4], "took the last B; the oldest B come first in `finished`")])
    check(ids(finished), [3, 4], "ids left in `finished` (change the list in place)",
          [([0, 1, 2, 3, 4], "did not remove the batch from `finished`")])
    assert dropped == [], f"nothing may be dropped when drop_stale is False, got {ids(dropped)}"


def test_task2b_lag_is_version_minus_tag(scheduler):
    batch, _, _ = take(scheduler, [3, 1, 2], version=3, k=2, B=3)
    lags = None if batch is None else [r["lag"] for r in batch]
    check(lags, [0, 2, 1], "lags of a batch with tags [3, 1, 2] at version 3", [
        (None, NO_BATCH),
        ([0, -2, -1], "wrong sign: lag = version - tag (how many updates old), not tag - version"),
        ([3, 1, 2], "set lag to the tag; lag = version - tag"),
        ([3, 3, 3], "set lag to the version; lag = version - tag")])


def test_task2b_waits_for_a_full_batch(scheduler):
    batch, dropped, finished = take(scheduler, [0, 0], version=0, k=0, B=3)
    assert batch is None, f"with 2 finished responses and B = 3, batch must be None, got {ids(batch)}"
    check(ids(finished), [0, 1], "`finished` after an incomplete batch (nothing may be removed)")
    assert [r["lag"] for r in finished] == [None, None], "responses not trained must keep lag None"


def test_task2b_drops_only_beyond_k(scheduler):
    # version 3, k = 1: lags 0, 2, 1, 1, 3 -> ids 1 and 4 are stale (lag > 1)
    batch, dropped, finished = take(scheduler, [3, 1, 2, 2, 0], version=3, k=1, B=2,
                                    drop_stale=True)
    check(sorted(ids(dropped) or []), [1, 4], "dropped ids (any order): tags [3, 1, 2, 2, 0], "
          "version 3, k = 1", [
              ([1, 2, 3, 4], "dropped responses with lag == k; only lag > k is stale"),
              ([], "dropped nothing although drop_stale=True")])
    assert all(r["dropped"] is True for r in dropped or []), "set dropped = True on each dropped"
    check(ids(batch), [0, 2], "batch ids after dropping (the oldest two fresh responses)")
    check(ids(finished), [3], "ids left in `finished`", [
        ([1, 3, 4], "left the dropped responses in `finished`"),
        ([0, 1, 2, 3, 4], "rebound the name (finished = [...]), so the caller's list never "
                          "changed; change it in place, e.g. finished[:] = [...]")])


def test_task2b_keeps_stale_unless_asked(scheduler):
    batch, dropped, _ = take(scheduler, [0, 0], version=5, k=1, B=2)
    check(ids(batch), [0, 1], "batch with drop_stale=False (lag 5 > k but nothing is dropped)",
          [(None, "no batch although 2 = B responses wait: drop nothing when drop_stale is "
                  "False, and take a batch when len(finished) >= B")])
    assert dropped == [], f"drop_stale=False must drop nothing, got {ids(dropped)}"


def test_task2b_drops_even_without_a_batch(scheduler):
    batch, dropped, finished = take(scheduler, [1, 5], version=5, k=0, B=2, drop_stale=True)
    check(sorted(ids(dropped) or []), [0], "dropped ids (tags [1, 5], version 5, k = 0, B = 2) "
          "when no batch follows", [
              ([], "only dropped when a full batch was there; drop first, always"),
              ([0, 1], "dropped responses with lag == k; only lag > k is stale")])
    assert batch is None and ids(finished) == [1], (
        f"expected no batch and id 1 left in `finished`, got batch {ids(batch)}, "
        f"finished {ids(finished)}")


# ---------------------------------------------------------------- Task 2: whole simulation

def test_task2_hand_case_synchronous(scheduler):
    # t=0 start lengths 1 and 3; t=3 both done, train until 4; start 1, 1; t=5 train until 6
    r = scheduler.simulate(2, 2, 0, n_steps=2, lengths=[1, 3, 1, 1])
    check(r["time"], 6.0, "simulate(2 lanes, B=2, k=0, lengths [1, 3, 1, 1], 2 steps): time")
    check(r["utilization"], 0.5, "its lane utilization (6 busy of 2 x 6 lane-time)")
    check(r["mean_lag"], 0.0, "its mean lag (synchronous RL is on-policy)")


def test_task2_hand_case_async(scheduler):
    # the free lane starts the third response at t=1 instead of waiting for the update
    r = scheduler.simulate(2, 2, 1, n_steps=2, lengths=[1, 3, 1, 1])
    check(r["time"], 4.0, "simulate(2 lanes, B=2, k=1, lengths [1, 3, 1, 1], 2 steps): time",
          [(6.0, "no overlap at all: may_start ignores k")])
    check(r["mean_lag"], 0.5, "its mean lag (lags 0, 1, 0, 1 for responses 0..3)")
    check([s["lag"] for s in r["trace"]], [0, 1, 0, 1], "lag of each response, in start order")


def test_task2_heavy_tail_speedup(scheduler):
    # the chapter's set-up: 16 lanes, B = 32, lognormal sigma 1.25, train_time 1
    runs = {k: scheduler.simulate(16, 32, k, n_steps=100) for k in (0, 1, 2, 3)}
    util0 = runs[0]["utilization"]
    gain = {k: runs[k]["throughput"] / runs[0]["throughput"] for k in runs}
    assert 0.15 < util0 < 0.30, (
        f"synchronous lane utilization should be 20-25%, got {util0:.0%}")
    assert 3.5 < gain[1] < 5.0, f"k = 1 should give about 4x the throughput of k = 0, got {gain[1]:.2f}x"
    assert gain[3] < 1.02 * gain[2], (
        f"beyond k = 2 nothing more is gained (generation is the bottleneck), got "
        f"{gain[2]:.2f}x at k = 2 and {gain[3]:.2f}x at k = 3")
    assert 0.8 < runs[2]["mean_lag"] <= 2, f"mean lag at k = 2 should be 1-2, got {runs[2]['mean_lag']:.2f}"


def test_task2_drop_stale_wastes_long_responses(scheduler):
    r = scheduler.simulate(16, 32, 1, n_steps=100, drop_stale=True)
    dropped = [s for s in r["trace"] if s["dropped"]]
    trained = [s for s in r["trace"] if s["lag"] is not None and not s["dropped"]]
    assert dropped and r["wasted_frac"] > 0, "with k = 1 and a heavy tail some responses are stale"
    assert max(s["lag"] for s in trained) <= 1, "with drop_stale no trained response has lag > k"
    mean_dropped = np.mean([s["length"] for s in dropped])
    mean_trained = np.mean([s["length"] for s in trained])
    assert mean_dropped > 2 * mean_trained, (
        f"dropped responses should be the long ones: mean length {mean_dropped:.2f} dropped vs "
        f"{mean_trained:.2f} trained")


def test_task2_slow_trainer_lowers_the_gain(scheduler):
    fast = scheduling_sweep(scheduler, 16, 32, ks=(0, 1), n_steps=100, train_time=1.0, sigma=1.25)
    slow = scheduling_sweep(scheduler, 16, 32, ks=(0, 1), n_steps=100, train_time=3.0, sigma=1.25)
    assert slow["throughput_gain"][1] < fast["throughput_gain"][1] - 0.5, (
        f"with train_time 3.0 the trainer is the bottleneck, so k = 1 should gain less: "
        f"{slow['throughput_gain'][1]:.2f}x vs {fast['throughput_gain'][1]:.2f}x at train_time 1.0")


# ---------------------------------------------------------------- Task 3a

# Four sequences of three tokens; the ratios w_t = pi_train / pi_infer are
W = np.array([[4.0, 0.25, 1.0],    # product 1
              [0.5, 3.0, 0.5],     # product 0.75
              [3.0, 2.0, 1.0],     # product 6 (above C = 2)
              [0.25, 1.0, 1.0]])   # product 0.25 (below 1 / C)
LOGP_INFER = np.log([[0.2, 0.4, 0.5], [0.4, 0.1, 0.6], [0.3, 0.3, 0.9], [0.8, 0.5, 0.5]])
LOGP_TRAIN = LOGP_INFER + np.log(W)
SEQ = np.prod(W, axis=1, keepdims=True) * np.ones_like(W)
for _table in (W, LOGP_INFER, LOGP_TRAIN, SEQ):
    _table.setflags(write=False)  # code that changes its inputs in place fails at once


def weights(tis, scheme, C=2.0, logp_train=LOGP_TRAIN, logp_infer=LOGP_INFER):
    return tis.importance_weights(logp_train, logp_infer, scheme, C)


def test_task3a_none_is_all_ones(tis):
    check(weights(tis, "none"), np.ones((4, 3)), 'importance_weights(..., "none")')


def test_task3a_token_ratio(tis):
    check(weights(tis, "token"), W, 'importance_weights(..., "token") on the ratios W', [
        (1 / W, "ratio upside down: w = pi_train / pi_infer = exp(logp_train - logp_infer)"),
        (np.log(W), "returned log-ratios; exponentiate them")])


def test_task3a_token_tis_caps_from_above(tis):
    check(weights(tis, "token_tis"), np.minimum(W, 2.0), 'importance_weights(..., "token_tis", C=2)', [
        (np.clip(W, 0.5, 2.0), "clipped from below as well; TIS only caps large weights"),
        (W, "did not truncate"),
        (np.minimum(1 / W, 2.0), "ratio upside down, then truncated")])
    check(weights(tis, "token_tis", C=1.5), np.minimum(W, 1.5), "the same with C = 1.5",
          [(np.minimum(W, 2.0), "ignored C (used 2)")])


def test_task3a_sequence_product(tis):
    check(weights(tis, "seq"), SEQ, 'importance_weights(..., "seq"): prod_t w_t on every token', [
        (W, "per-token ratios; sequence IS uses the product over the whole sequence"),
        (np.cumprod(W, axis=1), "running product; every token gets the full product"),
        (1 / SEQ, "ratio upside down")])


def test_task3a_sequence_tis(tis):
    check(weights(tis, "seq_tis"), np.minimum(SEQ, 2.0), 'importance_weights(..., "seq_tis", C=2)', [
        (np.prod(np.minimum(W, 2.0), axis=1, keepdims=True) * np.ones_like(W),
         "truncated each token inside the product; truncate the product once"),
        (np.minimum(np.prod(np.minimum(W, 2.0), axis=1, keepdims=True), 2.0) * np.ones_like(W),
         "truncated each token inside the product; truncate the product once"),
        (np.clip(SEQ, 0.5, 2.0), "clipped from below as well; TIS only caps large weights"),
        (SEQ, "did not truncate")])


def test_task3a_long_sequences_in_log_space(tis):
    # 1,600 tokens: 800 with ratio e, then 800 with ratio 1/e. Total ratio 1, but the
    # running product reaches e**800, far beyond float64's largest number (~e**709).
    log_w = np.concatenate([np.ones(800), -np.ones(800)])[None, :]
    logp_infer = np.full((1, 1600), -2.0)
    for scheme in ("seq", "seq_tis"):
        with np.errstate(all="ignore"):
            got = tis.importance_weights(logp_infer + log_w, logp_infer, scheme, 2.0)
        overflow = not np.all(np.isfinite(got))
        assert not overflow and same(got, np.ones((1, 1600))), (
            f'importance_weights(..., "{scheme}") on a 1,600-token sequence whose ratios '
            f"multiply to 1: expected all ones, got {show(got)}."
            + ("\n  Likely mistake: overflow; multiply ratios by summing their logs, "
               "then exponentiate once" if overflow else ""))


def test_task3a_keeps_the_shape(tis):
    rng = np.random.default_rng(0)
    logp = np.log(rng.uniform(0.1, 1, size=(5, 7)))
    for scheme in SCHEMES:
        got = np.shape(weights(tis, scheme, logp_train=logp, logp_infer=logp))
        assert got == (5, 7), (
            f'importance_weights(..., "{scheme}") on (N, T) = (5, 7) inputs must return a (5, 7) '
            f"array (one weight per token), got shape {got}")


# ---------------------------------------------------------------- Task 3b

def loop_estimate(rewards, grad_logp, weights):
    N, T, D = grad_logp.shape
    total = np.zeros(D)
    for n in range(N):
        for t in range(T):
            total += rewards[n] * weights[n, t] * grad_logp[n, t]
    return total / N


def test_task3b_worked_example(tis):
    got = tis.pg_estimate(np.array([3.0]), np.array([[[1.0], [3.0]]]), np.array([[1.0, 0.5]]))
    check(got, [7.5], "pg_estimate(r=[3], grad_logp=[[[1], [3]]], weights=[[1, 0.5]])", [
        ([12.0], "ignored the weights"), ([3.75], "averaged over tokens; sum them"),
        ([2.5], "ignored the rewards")])


def test_task3b_matches_a_loop(tis):
    rng = np.random.default_rng(3)
    rewards, grad, w = rng.normal(size=4), rng.normal(size=(4, 3, 2)), rng.uniform(0, 2, (4, 3))
    expected = loop_estimate(rewards, grad, w)
    check(tis.pg_estimate(rewards, grad, w), expected,
          "pg_estimate on random (N, T, D) = (4, 3, 2) inputs vs a plain loop", [
              (4 * expected, "summed over the batch; average over the N sequences"),
              (loop_estimate(rewards, grad, np.ones_like(w)), "ignored the weights"),
              (expected / 3, "averaged over tokens; the tokens of a sequence are summed"),
              (loop_estimate(np.ones(4), grad, w), "ignored the rewards")])


# ---------------------------------------------------------------- Task 3: the chapter's claims

def test_task3_no_mismatch_no_bias(tis):
    stats = {s: exact_stats(tis, s, 0.0) for s in SCHEMES}
    for scheme, s in stats.items():
        assert s["bias"] < 1e-12, (
            f'with mismatch 0 every weight is 1, so "{scheme}" must be unbiased; bias {s["bias"]:.3g}')
        check(s["variance"], stats["none"]["variance"], f'variance of "{scheme}" at mismatch 0')


def test_task3_naive_bias_grows_linearly(tis):
    bias = {m: exact_stats(tis, "none", m)["bias"] for m in (0.1, 0.2, 0.4)}
    assert bias[0.1] > 0.01, f'"none" ignores the mismatch, so it is biased; bias {bias[0.1]:.3g}'
    for m in (0.1, 0.2):
        assert 1.8 < bias[2 * m] / bias[m] < 2.3, (
            f"the naive bias should about double when the mismatch doubles: "
            f"{bias[m]:.4f} at {m}, {bias[2 * m]:.4f} at {2 * m}")


def test_task3_batch_size_shrinks_variance_not_bias(tis):
    small, large = exact_stats(tis, "none", 0.6, batch_size=1), exact_stats(tis, "none", 0.6, batch_size=64)
    check(large["bias"], small["bias"], "naive bias with batch 64 vs batch 1 (bias does not average away)")
    check(large["variance"], small["variance"] / 64, "variance with batch 64 = variance with batch 1 / 64")


def test_task3_sequence_is_unbiased_but_noisy(tis):
    for m in (0.3, 0.6, 1.0):
        bias = exact_stats(tis, "seq", m)["bias"]
        assert bias < 1e-9, (
            f'sequence IS is exactly unbiased, but bias = {bias:.3g} at mismatch {m}: check that '
            f'"seq" puts the full product of ratios on every token')
    growth = exact_stats(tis, "seq", 1.0)["variance"] / exact_stats(tis, "seq", 0.0)["variance"]
    naive = exact_stats(tis, "none", 1.0)["variance"] / exact_stats(tis, "none", 0.0)["variance"]
    assert growth > 50 and naive < 2, (
        f"sequence IS variance should explode with the mismatch (x{growth:.1f} from 0 to 1.0) "
        f"while the naive one barely moves (x{naive:.2f})")


def test_task3_truncation_wins_at_large_mismatch(tis):
    rmse = {s: exact_stats(tis, s, 0.6)["rmse"] for s in SCHEMES}
    truncated = max(rmse["token_tis"], rmse["seq_tis"])
    others = min(rmse["none"], rmse["token"], rmse["seq"])
    shown = ", ".join(f"{s} {v:.4f}" for s, v in rmse.items())
    assert truncated < others, (
        f"at mismatch 0.6 the truncated estimators should have the lowest RMSE; got {shown}")


def test_task3_best_C_is_inside_the_sweep(tis):
    sweep = c_sweep(tis, Cs=(1.0, 1.25, 1.5, 2.0, 4.0, 10.0), mismatch=0.6)
    assert 1.0 < sweep["best_C"] < 10.0, (
        f"the RMSE of token_tis at mismatch 0.6 should be lowest strictly inside C = 1..10, "
        f"got best C = {sweep['best_C']} (RMSE {sweep['rmse']})")


# ---------------------------------------------------------------- Task 3c (optional): masking

# Four responses of three tokens; the ratios w_t = pi_train / pi_infer are
RATIOS = np.array([[4.0, 0.5, 1.0],    # product 2 (on the band's upper edge: kept)
                   [2.0, 2.0, 0.25],   # product 1
                   [3.0, 3.0, 1.0],    # product 9 (above the band)
                   [0.25, 0.5, 1.0]])  # product 1/8 (below the band)
# (chosen so that logp_train - logp_infer is exactly log(RATIOS): the edges are exact)
MASK_INFER = np.log([[0.1, 0.4, 0.1], [0.2, 0.2, 0.2], [0.1, 0.1, 0.1], [0.2, 0.4, 0.1]])
MASK_TRAIN = MASK_INFER + np.log(RATIOS)
PRODUCTS = np.prod(RATIOS, axis=1, keepdims=True) * np.ones_like(RATIOS)
GEO_MEANS = np.exp(np.log(RATIOS).mean(axis=1, keepdims=True)) * np.ones_like(RATIOS)
for _table in (RATIOS, MASK_INFER, MASK_TRAIN, PRODUCTS, GEO_MEANS):
    _table.setflags(write=False)


def in_band(values, low, high):
    return np.where((values >= low) & (values <= high), values, 0.0)


def test_task3c_token_mask_keeps_the_band(tis):
    check(tis.masked_weights(MASK_TRAIN, MASK_INFER, "token"), in_band(RATIOS, 0.5, 2.0),
          'masked_weights(..., "token") on the ratios RATIOS, band [0.5, 2]', [
              (in_band(RATIOS, 0.5 + 1e-9, 2.0 - 1e-9),
               "rejected the ratios on the band's edges (0.5 and 2); the band includes them"),
              (np.clip(RATIOS, 0.5, 2.0), "clipped the ratios into the band; masking sets a "
                                          "ratio outside the band to 0"),
              (in_band(RATIOS, 0.5, 2.0) > 0, "returned the 0/1 mask; keep the ratio where it is 1"),
              (in_band(1 / RATIOS, 0.5, 2.0), "ratio upside down: w = exp(logp_train - logp_infer)"),
              (in_band(RATIOS, 0.0, 2.0), "ignored low: ratios below the band are rejected too"),
              (in_band(RATIOS, 0.5, np.inf), "ignored high")])


def test_task3c_sequence_mask_rejects_whole_responses(tis):
    check(tis.masked_weights(MASK_TRAIN, MASK_INFER, "seq"), in_band(PRODUCTS, 0.5, 2.0),
          'masked_weights(..., "seq"), band [0.5, 2]: the product of the ratios on every token', [
              (in_band(RATIOS, 0.5, 2.0), "masked each token; the sequence level tests the "
                                          "product of the response's ratios, once"),
              (in_band(PRODUCTS, 0.5 + 1e-9, 2.0 - 1e-9),
               "rejected a product exactly on the band's edge (2); the band includes it"),
              (np.clip(PRODUCTS, 0.5, 2.0), "clipped the product into the band; masking sets "
                                            "it to 0 outside"),
              (in_band(GEO_MEANS, 0.5, 2.0), 'used the geometric mean; that is level "geo"'),
              (in_band(PRODUCTS, 0.5, 2.0) > 0, "returned the 0/1 mask; keep the product")])


def test_task3c_geometric_mean_level(tis):
    got = tis.masked_weights(MASK_TRAIN, MASK_INFER, "geo", low=0.7, high=1.5)
    arithmetic = RATIOS.mean(axis=1, keepdims=True) * np.ones_like(RATIOS)
    check(got, in_band(GEO_MEANS, 0.7, 1.5),
          'masked_weights(..., "geo", low=0.7, high=1.5): (prod_t w_t)**(1/T) on every token', [
              (in_band(PRODUCTS, 0.7, 1.5), "used the product; the geo level takes its T-th root "
                                            "(the mean of the log-ratios)"),
              (in_band(arithmetic, 0.7, 1.5), "arithmetic mean of the ratios; the geometric mean "
                                              "is exp(mean of log-ratios)"),
              (in_band(GEO_MEANS, 0.5, 2.0), "ignored low and high (used 0.5 and 2)")])


def test_task3c_band_comes_from_low_and_high(tis):
    check(tis.masked_weights(MASK_TRAIN, MASK_INFER, "token", low=0.25, high=3.0),
          in_band(RATIOS, 0.25, 3.0), 'masked_weights(..., "token", low=0.25, high=3)', [
              (in_band(RATIOS, 0.5, 2.0), "ignored low and high (used 0.5 and 2)"),
              (in_band(RATIOS, 0.5, 3.0), "ignored low (used 0.5)"),
              (in_band(RATIOS, 0.25, 2.0), "ignored high (used 2)")])
    with np.errstate(divide="ignore"):  # low = 0 is allowed: no lower bound
        got = tis.masked_weights(MASK_TRAIN, MASK_INFER, "seq", low=0.0, high=2.0)
    check(got, in_band(PRODUCTS, 0.0, 2.0),
          'masked_weights(..., "seq", low=0, high=2): an upper bound only, as in TRL')


def test_task3c_long_responses_in_log_space(tis):
    # 1,600 tokens. Response 1: 800 ratios e, then 800 ratios 1/e (product 1, but the running
    # product reaches e**800, beyond float64's largest number, ~e**709). Response 2: every
    # ratio e**0.5 (product e**800: rejected).
    log_w = np.stack([np.repeat([1.0, -1.0], 800), np.full(1600, 0.5)])
    logp_infer = np.full((2, 1600), -2.0)
    expected = {"seq": np.stack([np.ones(1600), np.zeros(1600)]),
                "geo": np.stack([np.ones(1600), np.full(1600, np.exp(0.5))])}
    for level, want in expected.items():
        with np.errstate(all="ignore"):
            got = tis.masked_weights(logp_infer + log_w, logp_infer, level)
        broken = not np.all(np.isfinite(got))
        assert not broken and same(got, want), (
            f'masked_weights(..., "{level}") on two 1,600-token responses (products 1 and '
            f"e**800): expected {show(want)}, got {show(got)}."
            + ("\n  Likely mistake: overflow; add the log-ratios, compare the sum with log(low) "
               "and log(high), and exponentiate only what you keep" if broken else ""))


def test_task3c_keeps_the_shape(tis):
    logp = np.log(np.random.default_rng(0).uniform(0.1, 1, size=(5, 7)))
    for level in MASK_LEVELS:
        got = np.shape(tis.masked_weights(logp, logp, level))
        assert got == (5, 7), (
            f'masked_weights(..., "{level}") on (N, T) = (5, 7) inputs must return a (5, 7) '
            f"array (one weight per token), got shape {got}")


def test_task3c_masking_tames_sequence_is(tis):
    # On the toy at mismatch 0.6: rejecting the responses whose sequence ratio leaves
    # [0.5, 2] removes the huge weights that make sequence IS noisy, at a small bias.
    masked = masked_functions(tis)["seq_mask"]
    mask = toy.exact_stats(masked, tis.pg_estimate, "seq_mask", 0.6)
    seq = exact_stats(tis, "seq", 0.6)
    clean = toy.exact_stats(masked, tis.pg_estimate, "seq_mask", 0.0)
    assert clean["bias"] < 1e-12, (
        f"with mismatch 0 every ratio is 1, inside the band, so nothing is masked and the "
        f"estimate is unbiased; got bias {clean['bias']:.3g}")
    assert mask["rmse"] < seq["rmse"] / 2 and mask["bias"] > 0.01, (
        f"at mismatch 0.6 the sequence mask should cut sequence IS's RMSE at least in half "
        f"({mask['rmse']:.4f} vs {seq['rmse']:.4f}) and pay a bias for it "
        f"(bias {mask['bias']:.4f})")
