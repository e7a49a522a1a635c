"""The graded tests of Lab 20. PYTEST_DONT_REWRITE

Run one task at a time:  python -m pytest -q -k task1   (then task2, task3)

A test named test_task<id>_... grades that task (see lab.TASKS). Its argument
(memory, scheduler or tis) is the task module under test, yours or the
reference's (the fixtures are in lab/grading.py); the given code is tested in
lab/test_given.py. Every expected number can be worked out by hand, follows
from the formula in the function's docstring (the random tests, whose inputs
are seeded by lab.test_seed()), or is the reference's result on a small seeded
run (the snapshot tests). Each failure says what was computed, from which
inputs (the smallest wrong case), expected vs got, and, when the wrong value is
exactly what one known mistake gives and no other, which one (lab/feedback.py).
(PYTEST_DONT_REWRITE above keeps pytest from appending its own assert
introspection, so the messages below are shown as they are.)
"""
import math
import numbers

import numpy as np

import lab
import toy
from lab import MASK_LEVELS, SCHEMES
from lab.experiments import c_sweep, exact_stats, masked_functions, scheduling_sweep
from lab.feedback import check, check_cases, same, show
from lab.model_shapes import GPU_GB


# ---------------------------------------------------------------- helpers

def response(id, tag):
    """A finished response as the simulator makes it (length 1, started at its id)."""
    return dict(id=id, tag=tag, start=float(id), end=id + 1.0, length=1.0, lag=None,
                dropped=False)


def ids(responses):
    return None if responses is None else [r["id"] for r in responses]


def random_inputs(test_number):
    """The random generator of one test: seeded by lab.test_seed() (fixed unless LAB_SEED
    is set) and the test's own number, so each test draws its own reproducible inputs."""
    return np.random.default_rng([lab.test_seed(), test_number])


def call(function, *args):
    """function(*args) written out as the student would type it, for a failure message."""
    return f"{function}({', '.join(map(repr, args))})"


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
    check(got, 112_000_000_000, "model_state_bytes(7e9), a 7B model trained in full (bytes)")
    assert isinstance(got, numbers.Integral), (
        f"model_state_bytes must return an int (whole bytes), got {type(got).__name__} {got!r}")


MISTAKES_1A = {
    "forgot the fp32 master copy of the weight (4 bytes)": lambda a, b: 12 * a + 2 * b,
    "counted only the two Adam moments m and v": lambda a, b: 8 * a + 2 * b,
    "frozen weights are kept in bf16 (2 bytes), not fp32": lambda a, b: 16 * a + 4 * b,
    "frozen parameters still take memory: 2 bytes each": lambda a, b: 16 * a,
    "a frozen parameter has no gradient and no optimizer state: only its bf16 weight":
        lambda a, b: 16 * a + 16 * b,
}


def test_task1a_random_counts(memory):
    rng = random_inputs(1)
    counts = [(int(a), int(b)) for a, b in np.round(10 ** rng.uniform(0, 10, size=(100, 2)))]
    counts = [(0, 0), (1, 0), (0, 1)] + sorted(counts, key=sum)  # small ones first
    got = [memory.model_state_bytes(a, b) for a, b in counts]
    check_cases([call("model_state_bytes", a, b) for a, b in counts], got,
                [16 * a + 2 * b for a, b in counts], "model_state_bytes on random counts",
                "bytes = 16 * n_trained + 2 * n_frozen",
                lambda: {why: [f(a, b) for a, b in counts] for why, f in MISTAKES_1A.items()})
    floats = [g for g in got if not isinstance(g, numbers.Integral)]
    assert not floats, f"model_state_bytes must return an int (whole bytes), got {floats[0]!r}"


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


def test_task1b_random_shapes(memory):
    rng = random_inputs(2)
    shapes = sorted(((int(rng.integers(1, 81)), int(rng.integers(1, 65)),
                      int(2 ** rng.integers(0, 9)), int(rng.integers(0, 10**6)),
                      int(rng.choice([1, 2, 4]))) for _ in range(100)),
                    key=lambda shape: shape[3])  # layers, KV heads, head_dim, tokens, bytes
    rule = "bytes = 2 * n_layers * n_kv_heads * head_dim * n_tokens * bytes_per_value"
    mistakes = {
        "forgot the factor 2: each token caches a key AND a value vector":
            lambda L, H, d, n, b: L * H * d * n * b,
        "ignored bytes_per_value": lambda L, H, d, n, b: 2 * L * H * d * n * 2,
        "counted bits instead of bytes": lambda L, H, d, n, b: 2 * L * H * d * n * b * 8,
        "forgot head_dim: each KV head caches a vector of head_dim values":
            lambda L, H, d, n, b: 2 * L * H * n * b,
    }
    got = [memory.kv_cache_bytes(*shape) for shape in shapes]
    check_cases([call("kv_cache_bytes", *shape) for shape in shapes], got,
                [2 * L * H * d * n * b for L, H, d, n, b in shapes],
                "kv_cache_bytes on random shapes", rule,
                lambda: {why: [f(*shape) for shape in shapes] for why, f in mistakes.items()})


# ---------------------------------------------------------------- Task 1c

GB_PER_GIB = 2**30 / 1e9  # dividing by 2**30 instead of 1e9 shrinks every number by this


def if_1a_is_right(memory, mistakes):
    """The hints of a Task 1c check, kept only while model_state_bytes is right: a Task 1a
    mistake changes every bill built with it, and the result could pass for a 1c mistake."""
    try:
        right = memory.model_state_bytes(3, 5) == 16 * 3 + 2 * 5
    except Exception:  # noqa: BLE001 (not done yet, or broken: no hint either way)
        right = False
    return mistakes if right else type(mistakes)()


def test_task1c_ppo_7b_is_252_gb(memory):
    check(memory.rl_memory_gb("ppo", 7e9), 252.0, 'rl_memory_gb("ppo", 7e9) in GB',
          if_1a_is_right(memory, [
        (252.0 / GB_PER_GIB, "divided by 2**30 (GiB); GB here means 10**9 bytes"),
        (140.0, "forgot the critic: PPO trains a value model as large as the policy"),
        (154.0, "counted the critic as frozen; it is trained (16 bytes per parameter)"),
        (350.0, "counted the reference or reward model as trained; both are frozen (2 B)"),
        (238.0, "forgot the reference or the reward model: PPO keeps both, frozen (2 B)")]))
    assert math.ceil(memory.rl_memory_gb("ppo", 7e9) / GPU_GB) == 4, (
        f"PPO on 7B should need 4 GPUs of {GPU_GB} GB just for its model state")


def test_task1c_grpo_7b_is_126_gb(memory):
    check(memory.rl_memory_gb("grpo", 7e9), 126.0, 'rl_memory_gb("grpo", 7e9) in GB',
          if_1a_is_right(memory, [
        (126.0 / GB_PER_GIB, "divided by 2**30 (GiB); GB here means 10**9 bytes"),
        (224.0, "counted the reference as trained; it is frozen (2 bytes per parameter)"),
        (140.0, "counted a reward model; GRPO's default is a verifiable reward (no model)"),
        (252.0, "counted a critic; GRPO has none (the group mean is its baseline)")]))
    check(memory.rl_memory_gb("grpo", 7e9, reference=False), 112.0,
          'rl_memory_gb("grpo", 7e9, reference=False)',
          if_1a_is_right(memory, [(126.0, "ignored reference=False")]))
    check(memory.rl_memory_gb("grpo", 7e9, reward_model=True), 140.0,
          'rl_memory_gb("grpo", 7e9, reward_model=True)',
          if_1a_is_right(memory, [(126.0, "ignored reward_model=True"),
                                  (238.0, "counted the reward model as trained; it is frozen")]))


def test_task1c_lora_fits_one_gpu(memory):
    lora = 40_000_000
    check(memory.rl_memory_gb("grpo", 7e9, lora_params=lora), 14.64,
          'rl_memory_gb("grpo", 7e9, lora_params=40e6): 2 B per base + 16 B per adapter param',
          if_1a_is_right(memory, [
              (28.64, "kept a separate reference copy: under LoRA the reference is the base "
                      "with the adapter switched off, so it costs nothing"),
              (14.08, "counted the adapter as frozen; it is what gets trained (16 B)"),
              (126.64, "trained the base weights too; with LoRA they are frozen"),
              (126.0, "ignored lora_params")]))
    check(memory.rl_memory_gb("ppo", 7e9, lora_params=lora), 29.28,
          'rl_memory_gb("ppo", 7e9, lora_params=40e6): shared base, policy + critic adapters, '
          'frozen reward model', if_1a_is_right(memory, [
              (28.64, "forgot the critic's adapter"),
              (43.28, "gave the critic a base of its own; it shares the frozen base"),
              (15.28, "forgot the reward model")]))


def bill_gb(algo, N, reference, reward_model, lora, *, unit=1e9, critic=16, reference_bytes=2,
            reward_bytes=2, adapter=16, obey_reference=True, obey_reward_model=True,
            lora_reference_copy=False, critic_adapter=True, critic_base=False, use_lora=True,
            reference_frees_base=False):
    """rl_memory_gb's docstring as a bill of models. The keywords after * are the known
    mistakes (each one changes one line of the bill); their defaults are the rule."""
    if reward_model is None or not obey_reward_model:
        reward_model = algo == "ppo"
    reference = reference or not obey_reference
    ppo = algo == "ppo"
    if lora and use_lora:
        bill = adapter * lora + ppo * adapter * lora * critic_adapter   # policy, critic adapters
        bill += 2 * N * (not reference_frees_base or reference)        # the shared frozen base
        bill += 2 * N * (reference and lora_reference_copy) + 2 * N * (ppo and critic_base)
    else:
        bill = 16 * N + ppo * critic * N + reference * reference_bytes * N
    return (bill + reward_model * reward_bytes * N) / unit


MISTAKES_1C = {
    "divided by 2**30 (GiB); GB here means 10**9 bytes": dict(unit=2**30),
    "forgot the critic: PPO trains a value model as large as the policy":
        dict(critic=0, critic_adapter=False),
    "counted the critic as frozen; it is trained (16 bytes per parameter)": dict(critic=2),
    "counted the reference as trained; it is frozen (2 bytes per parameter)":
        dict(reference_bytes=16),
    "ignored reference=False": dict(obey_reference=False),
    "counted the reward model as trained; it is frozen (2 bytes per parameter)":
        dict(reward_bytes=16),
    "ignored reward_model: True adds a frozen reward model (to GRPO too), False removes it "
    "(from PPO too)": dict(obey_reward_model=False),
    "kept a separate reference copy under LoRA: the reference is the base with the adapter "
    "switched off, so it costs nothing": dict(lora_reference_copy=True),
    "counted the LoRA adapter as frozen; it is what gets trained (16 B)": dict(adapter=2),
    "forgot the critic's adapter: under LoRA, PPO's critic is a second adapter":
        dict(critic_adapter=False),
    "gave the critic a base of its own under LoRA; it shares the frozen base":
        dict(critic_base=True),
    "ignored lora_params": dict(use_lora=False),
    "left out the base when reference=False under LoRA; the policy itself is base + adapter":
        dict(reference_frees_base=True),
}


def check_bills(memory, cases, what):
    """rl_memory_gb on every case (algo, N, reference, reward_model, lora) vs the bill."""
    got = [memory.rl_memory_gb(algo, N, reference=ref, reward_model=rm, lora_params=lora)
           for algo, N, ref, rm, lora in cases]
    shown = [f"rl_memory_gb({algo!r}, {N:.4g}, reference={ref}, reward_model={rm}, "
             f"lora_params={lora:.4g})" for algo, N, ref, rm, lora in cases]
    check_cases(shown, got, [bill_gb(*case) for case in cases], what,
                "the models of the docstring, 16 B per trained and 2 B per frozen parameter, "
                "in GB = 1e9 bytes",
                lambda: if_1a_is_right(memory, {why: [bill_gb(*case, **change) for case in cases]
                                                for why, change in MISTAKES_1C.items()}))


def test_task1c_every_flag_combination(memory):
    cases = [(algo, 7e9, reference, reward_model, lora)
             for lora in (0, 40e6) for algo in ("grpo", "ppo") for reference in (True, False)
             for reward_model in (None, True, False)]
    check_bills(memory, cases, "rl_memory_gb for both algorithms, every flag, with and "
                "without LoRA (N = 7e9, adapter 40e6)")


def test_task1c_random_models(memory):
    rng = random_inputs(3)
    cases = []
    for _ in range(100):
        N = int(10 ** rng.uniform(6, 11))
        lora = int(rng.choice([0, rng.integers(1, N // 10)]))
        cases.append((str(rng.choice(["ppo", "grpo"])), N, bool(rng.integers(2)),
                      [None, True, False][rng.integers(3)], lora))
    check_bills(memory, sorted(cases, key=lambda case: case[1]), "rl_memory_gb on random models")


# ---------------------------------------------------------------- Task 2a

ADMISSION_RULE = "n_started - n_dropped < (version + k + 1) * B"
MISTAKES_2A = {
    "ignored n_dropped: dropped responses are never trained, so they free their place":
        lambda n, d, v, k, B: n < (v + k + 1) * B,
    "added n_dropped; subtract it (dropped responses free their place)":
        lambda n, d, v, k, B: n + d < (v + k + 1) * B,
    "off by one batch: the lanes may fill the next batch plus k more, (version + k + 1) * B":
        lambda n, d, v, k, B: n - d < (v + k) * B,
    "off by one batch the other way: (version + k + 1) * B, not (version + k + 2) * B":
        lambda n, d, v, k, B: n - d < (v + k + 2) * B,
    "used <= where the rule has <: that starts one response too many":
        lambda n, d, v, k, B: n - d <= (v + k + 1) * B,
    "used <= with (version + k) * B: the rule is < with (version + k + 1) * B":
        lambda n, d, v, k, B: n - d <= (v + k) * B,
    "ignored k: that is always synchronous":
        lambda n, d, v, k, B: n - d < (v + 1) * B,
    "ignored the version: the bound moves up by B with every update":
        lambda n, d, v, k, B: n - d < (k + 1) * B,
    "added k responses, not k batches: the bound is (version + k + 1) * B":
        lambda n, d, v, k, B: n - d < (v + 1) * B + k,
}


def check_admission(may_start, states, what):
    """Compare may_start over `states` with the rule, naming a known mistake when it is one."""
    got = [may_start(*state) for state in states]
    check_cases([f"may_start(n_started={n}, n_dropped={d}, version={v}, k={k}, B={B})"
                 for n, d, v, k, B in states],
                got, [n - d < (v + k + 1) * B for n, d, v, k, B in states], what, ADMISSION_RULE,
                lambda: {why: [rule(*s) for s in states] for why, rule in MISTAKES_2A.items()})
    assert all(isinstance(g, (bool, np.bool_)) for g in got), (
        f"may_start must return a bool, got {[type(g).__name__ for g in got]}")


def random_states(rng, n):
    """n random admission states (n_started, n_dropped, version, k, B), near the bound."""
    states = []
    for _ in range(n):
        B, k, v = int(rng.integers(1, 9)), int(rng.integers(0, 4)), int(rng.integers(0, 6))
        d = int(rng.integers(0, 2 * B))
        states.append((d + (v + k + 1) * B + int(rng.integers(-B - 1, B + 2)), d, v, k, B))
    return sorted({s for s in states if s[0] >= s[1]}, key=lambda s: (s[4], s[0]))


def test_task2a_synchronous_when_k_is_0(scheduler):
    states = [(n, 0, 0, 0, 4) for n in range(6)] + [(n, 0, 1, 0, 4) for n in range(3, 10)]
    check_admission(scheduler.may_start, states,
                    "k = 0, B = 4: one batch, then wait for the update")


def test_task2a_k_batches_ahead(scheduler):
    states = [(n, 0, v, k, 4) for v, k in ((0, 1), (1, 2), (3, 1))
              for n in (7, 8, 10, 12, 15, 16, 19, 20)]
    check_admission(scheduler.may_start, states, "k >= 1, B = 4: k batches ahead")


def test_task2a_dropped_free_their_place(scheduler):
    states = [(n, d, 0, 1, 4) for n, d in ((8, 0), (8, 1), (10, 3), (11, 3), (12, 5), (13, 5),
                                           (6, 2), (9, 0), (14, 2), (15, 2))]
    check_admission(scheduler.may_start, states, "k = 1, B = 4, with dropped responses")


def test_task2a_random_states(scheduler):
    check_admission(scheduler.may_start, random_states(random_inputs(4), 300),
                    "may_start on random states near the bound")


# ---------------------------------------------------------------- Task 2b

def take(scheduler, tags, version, k, B, drop_stale=False, finished=None):
    """Call take_batch on responses with these tags (or on `finished`); check what it returns
    is the tuple (batch, dropped) of the very dicts it was given."""
    finished = [response(i, tag) for i, tag in enumerate(tags)] if finished is None else finished
    given = list(finished)
    result = scheduler.take_batch(finished, version, k, B, drop_stale)
    assert isinstance(result, tuple) and len(result) == 2, (
        f"take_batch must return the tuple (batch, dropped), got {type(result).__name__} "
        f"{result!r}" + ("; a list is not a tuple: return batch, dropped"
                         if isinstance(result, list) else ""))
    batch, dropped = result
    assert isinstance(dropped, (list, tuple)), (
        f"dropped must be a list (empty if nothing was dropped), got {dropped!r}")
    for name, taken in (("batch", batch or []), ("dropped", dropped)):
        copies = [r for r in taken if not any(r is g for g in given)]
        assert not copies, (
            f"take_batch returned copies in `{name}`: response {copies[0].get('id')!r} is not "
            "one of the dicts that were in `finished`. Return the same dict objects (the "
            "simulator reads each one's lag and dropped flag from them)")
    return batch, list(dropped), finished  # a tuple is fine too, as in the simulator


NO_BATCH = "returned no batch although B responses were waiting (take one when len >= B)"


def test_task2b_first_in_first_out(scheduler):
    batch, dropped, finished = take(scheduler, [0, 0, 0, 0, 0], version=0, k=0, B=3)
    check(ids(batch), [0, 1, 2], "take_batch on 5 finished responses (ids 0..4), B = 3: batch ids", [
        (None, NO_BATCH),
        ([4, 3, 2], "took the newest first (LIFO, e.g. pop()); the trainer takes the oldest"),
        ([2, 3, 4], "took the last B; the oldest B come first in `finished`")])
    check(ids(finished), [3, 4], "ids left in `finished` (change the list in place)",
          [([0, 1, 2, 3, 4], "did not remove the batch from the caller's list `finished`: "
                             "change it in place (del finished[:B]); finished = finished[B:] "
                             "only rebinds the name")])
    assert dropped == [], f"nothing may be dropped when drop_stale is False, got {ids(dropped)}"


def test_task2b_takes_in_finish_order(scheduler):
    # Finish order (the order in `finished`) differs from start order (ids), from length
    # order and from tag order: only first in, first out gives ids [3, 1].
    shapes = [(3, 0.2, 1), (1, 2.5, 2), (0, 4.0, 0), (4, 0.1, 2), (2, 2.3, 1)]  # id, length, tag
    finished = [dict(response(i, tag), start=float(i), length=length, end=i + length)
                for i, length, tag in shapes]
    batch, _, left = take(scheduler, None, version=2, k=2, B=2, finished=finished)
    check(ids(batch), [3, 1], "take_batch, B = 2, on `finished` with ids [3, 1, 0, 4, 2] (the "
          "order they finished in), lengths [0.2, 2.5, 4, 0.1, 2.3], tags [1, 2, 0, 2, 1]: "
          "batch ids", [
              (None, NO_BATCH),
              ([0, 1], "took the lowest ids (start order); take the first B of `finished`"),
              ([4, 3], "took the shortest responses; take the first B of `finished`"),
              ([0, 3], "took the oldest tags first; take the first B of `finished`"),
              ([1, 4], "took the newest tags first; take the first B of `finished`"),
              ([2, 4], "took the newest first (LIFO, e.g. pop()); the trainer takes the oldest"),
              ([4, 2], "took the last B; the oldest B come first in `finished`")])
    check(ids(left), [0, 4, 2], "ids left in `finished`, in their order")
    check([r["lag"] for r in batch], [1, 0], "lags of the batch (version 2, tags [1, 2])")


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
    check(ids(batch), [0, 2], "batch ids after dropping (the oldest two fresh responses)",
          [([0, 1], "left the dropped responses in `finished`; remove them from it")])
    check(ids(finished), [3], "ids left in `finished`", [
        ([1, 3, 4], "left the dropped responses in `finished`"),
        ([0, 1, 2, 3, 4], "rebound the name (finished = [...]), so the caller's list never "
                          "changed; change it in place, e.g. finished[:] = [...]")])


def test_task2b_keeps_stale_unless_asked(scheduler):
    batch, dropped, _ = take(scheduler, [0, 0], version=5, k=1, B=2)
    assert dropped == [], f"drop_stale=False must drop nothing, got {ids(dropped)}"
    check(ids(batch), [0, 1], "batch with drop_stale=False (lag 5 > k but nothing is dropped)",
          [(None, NO_BATCH)])


def test_task2b_drops_even_without_a_batch(scheduler):
    batch, dropped, finished = take(scheduler, [1, 5], version=5, k=0, B=2, drop_stale=True)
    check(sorted(ids(dropped) or []), [0], "dropped ids (tags [1, 5], version 5, k = 0, B = 2) "
          "when no batch follows", [
              ([], "only dropped when a full batch was there; drop first, always"),
              ([0, 1], "dropped responses with lag == k; only lag > k is stale")])
    assert batch is None and ids(finished) == [1], (
        f"expected no batch and id 1 left in `finished`, got batch {ids(batch)}, "
        f"finished {ids(finished)}")


def test_task2b_drops_whatever_is_waiting(scheduler):
    # version 4, k = 1, B = 3: tags below 3 are stale. Fewer than B waiting at all; then at
    # least B waiting, of which fewer than, exactly and more than B stay fresh.
    cases = [([1, 4], None, [0], [1]),
             ([2, 4, 3, 1], None, [0, 3], [1, 2]),
             ([2, 4, 3, 3, 1], [1, 2, 3], [0, 4], []),
             ([4, 0, 3, 4, 3, 2], [0, 2, 3], [1, 5], [4])]
    for tags, batch_ids, dropped_ids, left_ids in cases:
        batch, dropped, left = take(scheduler, tags, version=4, k=1, B=3, drop_stale=True)
        what = f"take_batch(tags {tags}, version=4, k=1, B=3, drop_stale=True)"
        at_k = sorted(set(dropped_ids) | {i for i, t in enumerate(tags) if t == 3})
        # (a mistake that gives the right answer on a case is left out: it cannot be told apart)
        mistakes = [([], "only dropped when a full batch was there; drop first, always")]
        if at_k != dropped_ids:
            mistakes.append((at_k, "dropped responses with lag == k; only lag > k is stale"))
        check(sorted(ids(dropped)), dropped_ids, f"{what}: dropped ids (any order)", mistakes)
        check(ids(batch), batch_ids, f"{what}: batch ids",
              [(None, NO_BATCH)] if batch_ids is not None else [])
        not_taken = [i for i in range(len(tags)) if i not in (batch_ids or [])]
        check(ids(left), left_ids, f"{what}: ids left in `finished`", [
            (not_taken, "left the dropped responses in `finished`; remove them from it"),
            (list(range(len(tags))), "rebound the name (finished = [...]), so the caller's "
             "list never changed; change it in place, e.g. finished[:] = [...]")])
        lags = [r["lag"] for r in dropped + left]
        assert lags == [None] * len(lags), (
            f"{what}: responses not trained (dropped or left waiting) must keep lag None, "
            f"got lags {lags}.\n  Likely mistake: set lags on more than the batch (before "
            "dropping, or on all of `finished`); set the lag of the batch only")


def expected_take(tags, version, k, B, drop_stale):
    """take_batch's docstring, as ids: (batch ids or None, sorted dropped ids, ids left)."""
    stale = [i for i, tag in enumerate(tags) if drop_stale and version - tag > k]
    fresh = [i for i in range(len(tags)) if i not in stale]
    if len(fresh) < B:
        return None, stale, fresh
    return fresh[:B], stale, fresh[B:]


def random_queues(rng, n):
    """n random take_batch inputs (tags, version, k, B, drop_stale), short queues first."""
    cases = []
    for _ in range(n):
        version, k, B = int(rng.integers(0, 6)), int(rng.integers(0, 3)), int(rng.integers(1, 5))
        tags = [int(t) for t in rng.integers(0, version + 1, size=rng.integers(0, 9))]
        cases.append((tags, version, k, B, bool(rng.integers(2))))
    return sorted(cases, key=lambda case: (len(case[0]), case[3]))


def check_queues(scheduler, cases, what):
    """take_batch on every case vs its docstring; the smallest wrong case is shown."""
    got, expected, shown = [], [], []
    for tags, version, k, B, drop_stale in cases:
        batch, dropped, left = take(scheduler, tags, version, k, B, drop_stale)
        lags = None if batch is None else [r["lag"] for r in batch]
        got.append((ids(batch), sorted(ids(dropped)), ids(left), lags))
        want = expected_take(tags, version, k, B, drop_stale)
        expected.append(want + (None if want[0] is None else [version - tags[i] for i in want[0]],))
        shown.append(f"take_batch(`finished` with tags {tags}, version={version}, k={k}, B={B}, "
                     f"drop_stale={drop_stale})")
    wrong = [i for i, (g, e) in enumerate(zip(got, expected)) if g != e]
    assert not wrong, (
        f"{what}: {len(wrong)} of {len(cases)} cases wrong; the smallest:\n"
        f"  {shown[wrong[0]]} gave (batch ids, dropped ids, ids left, batch lags) = "
        f"{got[wrong[0]]}, expected {expected[wrong[0]]} (ids are positions in `finished`)")


def test_task2b_random_queues(scheduler):
    check_queues(scheduler, random_queues(random_inputs(5), 200), "take_batch on random queues")


# ---------------------------------------------------------------- Task 2: whole simulation

def culprit(scheduler):
    """For a failed whole-simulation test: which of may_start and take_batch breaks its rule
    (on fixed states and queues), with the likely mistake if one is certain; "" if neither."""
    rng = np.random.default_rng(0)
    for function, task, run in (
            ("may_start", "2a", lambda: check_admission(scheduler.may_start,
                                                        random_states(rng, 200), "may_start")),
            ("take_batch", "2b", lambda: check_queues(scheduler, random_queues(rng, 200),
                                                      "take_batch"))):
        try:
            run()
        except Exception as error:  # noqa: BLE001 (any failure points at this function)
            return (f"\n  The cause is in {function} (run pytest -k task{task}): "
                    + str(error).replace("\n  ", "\n    "))
    return ""


def check_run(scheduler, got, expected, what):
    """check() for a number of a whole simulation; on failure, name the function at fault."""
    if not (got == expected if isinstance(expected, str) else same(got, expected)):
        raise AssertionError(f"{what}: expected {show(expected)}, got {show(got)}."
                             + culprit(scheduler))


def lag_code(trace):
    """One character per response, in start order: its lag, x if dropped, . if never trained."""
    return "".join("x" if r["dropped"] else "." if r["lag"] is None else str(r["lag"])
                   for r in trace)


def test_task2_hand_case_synchronous(scheduler):
    # t=0 start lengths 1 and 3; t=3 both done, train until 4; start 1, 1; t=5 train until 6
    r = scheduler.simulate(2, 2, 0, n_steps=2, lengths=[1, 3, 1, 1])
    check_run(scheduler, r["time"], 6.0,
              "simulate(2 lanes, B=2, k=0, lengths [1, 3, 1, 1], 2 steps): time")
    check_run(scheduler, r["utilization"], 0.5, "its lane utilization (6 busy of 2 x 6 lane-time)")
    check_run(scheduler, r["mean_lag"], 0.0, "its mean lag (synchronous RL is on-policy)")


def test_task2_hand_case_async(scheduler):
    # the free lane starts the third response at t=1 instead of waiting for the update
    r = scheduler.simulate(2, 2, 1, n_steps=2, lengths=[1, 3, 1, 1])
    check_run(scheduler, r["time"], 4.0,
              "simulate(2 lanes, B=2, k=1, lengths [1, 3, 1, 1], 2 steps): time")
    check_run(scheduler, r["mean_lag"], 0.5, "its mean lag (lags 0, 1, 0, 1 for responses 0..3)")
    check_run(scheduler, [s["lag"] for s in r["trace"]], [0, 1, 0, 1],
              "lag of each response, in start order")


def test_task2_hand_case_drop_stale(scheduler):
    # 2 lanes, B = 1, k = 1, lengths [4, 1, 1, ...], drop_stale:
    # t=0 start #0 (length 4) and #1; t=1 train #1 (lag 0) until 2; version 1
    # t=2 start #2; t=3 train #2 until 4; version 2 at t=4, start #3 (2 - 0 < (2+1+1) * 1)
    # t=4 #0 finishes with lag 2 > k: dropped, which frees its place: start #4
    # t=5 #3 and #4 finish: train #3 (lag 0) until 6; version 3: train #4 (lag 1) until 7,
    # start #5 at t=6; version 4 at t=7: done. #5 is never trained.
    r = scheduler.simulate(2, 1, 1, n_steps=4, lengths=[4, 1, 1, 1, 1, 1, 1], drop_stale=True)
    what = "simulate(2 lanes, B=1, k=1, 4 steps, lengths [4, 1, 1, ...], drop_stale=True)"
    check_run(scheduler, lag_code(r["trace"]), "x0001.",
              f"{what}: each response in start order: lag, x = dropped, . = never trained")
    check_run(scheduler, r["time"], 7.0, f"{what}: time")
    check_run(scheduler, r["wasted_frac"], 4 / 9,
              f"{what}: wasted_frac (#0 took 4 of the 9 busy lane-time units)")


# A small seeded run with a slow trainer (train_time 2), so that finished responses
# queue up and the order they are taken in matters: each response's lag and drop as
# the reference simulates them (lag_code), and the time of the run.
SNAPSHOT = {
    False: ("10003201113211222222222222421222221222222322122.1.......", 24.578013888427463),
    True: ("1000x20111x211222121211222x22221222212122x2122221221........", 24.578013888427463)}


def test_task2_seeded_run_snapshot(scheduler):
    for drop_stale, (code, time) in SNAPSHOT.items():
        r = scheduler.simulate(4, 4, 2, n_steps=12, train_time=2.0, seed=2, drop_stale=drop_stale)
        what = (f"simulate(4 lanes, B=4, k=2, 12 steps, train_time=2, seed=2, "
                f"drop_stale={drop_stale})")
        got = lag_code(r["trace"])
        at = next((i for i, (g, e) in enumerate(zip(got, code)) if g != e),
                  min(len(got), len(code)))
        check_run(scheduler, got, code, f"{what}: each response's lag (x dropped, . never "
                  f"trained); the first difference is at response {at}")
        check_run(scheduler, r["time"], time, f"{what}: time")


def test_task2_heavy_tail_speedup(scheduler):
    # the chapter's set-up: 16 lanes, B = 32, lognormal sigma 1.25, train_time 1
    runs = {k: scheduler.simulate(16, 32, k, n_steps=100) for k in (0, 1, 2, 3)}
    util0 = runs[0]["utilization"]
    gain = {k: runs[k]["throughput"] / runs[0]["throughput"] for k in runs}
    assert 0.15 < util0 < 0.30, (
        f"synchronous lane utilization should be 20-25%, got {util0:.0%}" + culprit(scheduler))
    assert 3.5 < gain[1] < 5.0, (
        f"k = 1 should give about 4x the throughput of k = 0, got {gain[1]:.2f}x"
        + culprit(scheduler))
    assert gain[3] < 1.02 * gain[2], (
        f"beyond k = 2 nothing more is gained (generation is the bottleneck), got "
        f"{gain[2]:.2f}x at k = 2 and {gain[3]:.2f}x at k = 3" + culprit(scheduler))
    assert 0.8 < runs[2]["mean_lag"] <= 2, (
        f"mean lag at k = 2 should be 1-2, got {runs[2]['mean_lag']:.2f}" + culprit(scheduler))


def test_task2_drop_stale_wastes_long_responses(scheduler):
    r = scheduler.simulate(16, 32, 1, n_steps=100, drop_stale=True)
    dropped = [s for s in r["trace"] if s["dropped"]]
    trained = [s for s in r["trace"] if s["lag"] is not None and not s["dropped"]]
    assert dropped and r["wasted_frac"] > 0, (
        "with k = 1 and a heavy tail some responses are stale" + culprit(scheduler))
    assert max(s["lag"] for s in trained) <= 1, (
        "with drop_stale no trained response has lag > k" + culprit(scheduler))
    mean_dropped = np.mean([s["length"] for s in dropped])
    mean_trained = np.mean([s["length"] for s in trained])
    assert mean_dropped > 2 * mean_trained, (
        f"dropped responses should be the long ones: mean length {mean_dropped:.2f} dropped vs "
        f"{mean_trained:.2f} trained" + culprit(scheduler))
    # the same seeded run as the reference simulates it: exact counts
    what = "simulate(16 lanes, B=32, k=1, 100 steps, drop_stale=True)"
    check_run(scheduler, [len(dropped), len(r["trace"])], [345, 3577],
              f"{what}: [responses dropped, responses started]")
    check_run(scheduler, r["throughput"], 14.805678086860285, f"{what}: throughput")


def test_task2_slow_trainer_lowers_the_gain(scheduler):
    fast = scheduling_sweep(scheduler, 16, 32, ks=(0, 1), n_steps=100, train_time=1.0, sigma=1.25)
    slow = scheduling_sweep(scheduler, 16, 32, ks=(0, 1), n_steps=100, train_time=3.0, sigma=1.25)
    assert slow["throughput_gain"][1] < fast["throughput_gain"][1] - 0.5, (
        f"with train_time 3.0 the trainer is the bottleneck, so k = 1 should gain less: "
        f"{slow['throughput_gain'][1]:.2f}x vs {fast['throughput_gain'][1]:.2f}x at train_time 1.0"
        + culprit(scheduler))


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
    try:
        return tis.importance_weights(logp_train, logp_infer, scheme, C)
    except ValueError as error:
        if "read-only" not in str(error):
            raise
        raise AssertionError(  # the tables above are read-only on purpose
            f'importance_weights(..., "{scheme}") tried to change its input logp_train or '
            "logp_infer in place (e.g. with -=); compute a new array instead") from None


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
        (np.minimum(1 / W, 2.0), "ratio upside down, then truncated"),
        (np.minimum(W, np.exp(2.0)), "capped log w at C; in log space the cap is log C"),
        (np.maximum(W, 2.0), "max where min is due: TIS keeps min(w, C), raising no weight")])
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
        (SEQ, "did not truncate"),
        (np.minimum(SEQ, np.exp(2.0)), "capped log w at C; in log space the cap is log C")])


def test_task3a_long_sequences_in_log_space(tis):
    # 1,600 tokens: 800 with ratio e, then 800 with ratio 1/e. Total ratio 1, but the
    # running product reaches e**800, far beyond float64's largest number (~e**709).
    log_w = np.concatenate([np.ones(800), -np.ones(800)])[None, :]
    logp_infer = np.full((1, 1600), -2.0)
    for scheme in ("seq", "seq_tis"):
        with np.errstate(all="ignore"):
            got = tis.importance_weights(logp_infer + log_w, logp_infer, scheme, 2.0)
        # the overflow hint is certain only if the same scheme is right on short sequences
        overflow = not np.all(np.isfinite(got)) and same(
            weights(tis, scheme), SEQ if scheme == "seq" else np.minimum(SEQ, 2.0))
        assert same(got, np.ones((1, 1600))), (
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


def capped(log_w, C):
    return np.minimum(log_w, np.log(C))


def sequence(log_w, axis=1):
    return np.broadcast_to(log_w.sum(axis=axis, keepdims=True), log_w.shape)


def expected_weights(log_w, scheme, C):
    """importance_weights's docstring, from the log-ratios log_w = logp_train - logp_infer."""
    if scheme == "none":
        return np.ones_like(log_w)
    log_seq = sequence(log_w)
    return np.exp({"token": log_w, "token_tis": capped(log_w, C), "seq": log_seq,
                   "seq_tis": capped(log_seq, C)}[scheme])


def wrong_weights(scheme, **by_scheme):
    """A known mistake as a function of (log_w, C); schemes it does not touch are right."""
    def weights(log_w, this_scheme, C):
        if this_scheme in by_scheme:
            return by_scheme[this_scheme](log_w, C)
        return expected_weights(log_w, this_scheme, C)
    return weights


MISTAKES_3A = {
    "ratio upside down: w = pi_train / pi_infer = exp(logp_train - logp_infer)":
        lambda log_w, scheme, C: expected_weights(-log_w, scheme, C),
    "returned log-weights; exponentiate them":
        lambda log_w, scheme, C: (np.log(expected_weights(log_w, scheme, C))
                                  if scheme != "none" else np.ones_like(log_w)),
    "clipped from below as well; TIS only caps large weights": wrong_weights(
        None, token_tis=lambda lw, C: np.exp(np.clip(lw, -np.log(C), np.log(C))),
        seq_tis=lambda lw, C: np.exp(np.clip(sequence(lw), -np.log(C), np.log(C)))),
    "ignored C (used 2)": wrong_weights(
        None, token_tis=lambda lw, C: np.exp(capped(lw, 2.0)),
        seq_tis=lambda lw, C: np.exp(capped(sequence(lw), 2.0))),
    "capped log w at C; in log space the cap is log C": wrong_weights(
        None, token_tis=lambda lw, C: np.exp(np.minimum(lw, C)),
        seq_tis=lambda lw, C: np.exp(np.minimum(sequence(lw), C))),
    "truncated each token inside the product; truncate the product once": wrong_weights(
        None, seq_tis=lambda lw, C: np.exp(sequence(capped(lw, C)))),
    "running product; every token gets the full product": wrong_weights(
        None, seq=lambda lw, C: np.exp(np.cumsum(lw, axis=1)),
        seq_tis=lambda lw, C: np.exp(capped(np.cumsum(lw, axis=1), C))),
    "geometric mean of the ratios; sequence IS uses their product": wrong_weights(
        None, seq=lambda lw, C: np.exp(np.broadcast_to(lw.mean(axis=1, keepdims=True), lw.shape)),
        seq_tis=lambda lw, C: np.exp(capped(np.broadcast_to(lw.mean(axis=1, keepdims=True),
                                                            lw.shape), C))),
    "multiplied over the wrong axis (the batch); multiply over the tokens of each sequence":
        wrong_weights(None, seq=lambda lw, C: np.exp(sequence(lw, axis=0)),
                      seq_tis=lambda lw, C: np.exp(capped(sequence(lw, axis=0), C))),
    '"token_tis" not truncated': wrong_weights(None, token_tis=lambda lw, C: np.exp(lw)),
    '"seq_tis" not truncated': wrong_weights(None, seq_tis=lambda lw, C: np.exp(sequence(lw))),
    '"none" must give weight 1 on every token, not 0':
        wrong_weights(None, none=lambda lw, C: np.zeros_like(lw)),
}


def unchanged(function, inputs, call_it):
    """Call call_it(); then assert the arrays in `inputs` ({name: array}) are as before."""
    before = {name: array.copy() for name, array in inputs.items()}
    result = call_it()
    for name, array in inputs.items():
        assert np.array_equal(array, before[name]), (
            f"{function} changed its argument {name} in place (e.g. with -= or *=); "
            "compute a new array and leave the inputs as they were")
    return result


def test_task3a_random_ratios(tis):
    rng = random_inputs(6)
    cases = []
    for _ in range(150):
        N, T = int(rng.integers(1, 5)), int(rng.integers(1, 5))
        log_w = rng.integers(-6, 7, size=(N, T)) / 2  # ratios from e**-3 to e**3
        cases.append((log_w, str(rng.choice(SCHEMES)), float(rng.choice([1.0, 1.5, 2.0, 4.0]))))
    cases.sort(key=lambda case: case[0].size)
    got = []
    for log_w, scheme, C in cases:
        logp_infer = np.log(rng.uniform(0.05, 1.0, size=log_w.shape))
        logp_train = logp_infer + log_w
        got.append(unchanged("importance_weights",
                             dict(logp_train=logp_train, logp_infer=logp_infer),
                             lambda: tis.importance_weights(logp_train, logp_infer, scheme, C)))
    check_cases([f"importance_weights(..., {scheme!r}, C={C}) with logp_train - logp_infer = "
                 f"{log_w.tolist()}" for log_w, scheme, C in cases],
                got, [expected_weights(*case) for case in cases],
                "importance_weights on random log-ratios",
                "the five schemes of the docstring, from log_w = logp_train - logp_infer",
                lambda: {why: [f(*case) for case in cases] for why, f in MISTAKES_3A.items()})


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
        ([3.75], "summed over the batch and averaged over the tokens: the axes are swapped"),
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


def expected_estimate(rewards, grad, w):
    """pg_estimate's docstring: (1/N) sum_n r_n sum_t w_nt grad_nt."""
    return np.einsum("n,nt,ntd->d", rewards, w, grad) / len(rewards)


MISTAKES_3B = {
    "summed over the batch; average over the N sequences":
        lambda r, g, w: expected_estimate(r, g, w) * len(r),
    "ignored the weights": lambda r, g, w: expected_estimate(r, g, np.ones_like(w)),
    "averaged over tokens; the tokens of a sequence are summed":
        lambda r, g, w: expected_estimate(r, g, w) / w.shape[1],
    "ignored the rewards": lambda r, g, w: expected_estimate(np.ones_like(r), g, w),
    "squared the weights": lambda r, g, w: expected_estimate(r, g, w**2),
    "subtracted the mean reward (a GRPO baseline); pg_estimate uses the rewards as they are":
        lambda r, g, w: expected_estimate(r - r.mean(), g, w),
    "summed over the batch and averaged over the tokens: the axes are swapped":
        lambda r, g, w: expected_estimate(r, g, w) * len(r) / w.shape[1],
}


def random_batches(rng, n):
    """n random (rewards, grad_logp, weights) of small whole or half numbers, small first."""
    cases = []
    for _ in range(n):
        N, T, D = (int(x) for x in rng.integers(1, 4, size=3))
        cases.append((rng.integers(-2, 3, size=N).astype(float),
                      rng.integers(-2, 3, size=(N, T, D)).astype(float),
                      rng.choice([0.0, 0.5, 1.0, 2.0], size=(N, T))))
    return sorted(cases, key=lambda case: case[1].size)


def check_batches(tis, cases, what):
    got = [unchanged("pg_estimate", dict(rewards=r, grad_logp=g, weights=w),
                     lambda: tis.pg_estimate(r, g, w)) for r, g, w in cases]
    check_cases([f"pg_estimate(rewards={r.tolist()}, grad_logp={g.tolist()}, "
                 f"weights={w.tolist()})" for r, g, w in cases],
                got, [expected_estimate(*case) for case in cases], what,
                "g = (1/N) sum_n r_n sum_t w_nt * grad_logp_nt",
                lambda: {why: [f(*case) for case in cases] for why, f in MISTAKES_3B.items()})


def test_task3b_random_batches(tis):
    check_batches(tis, random_batches(random_inputs(7), 150), "pg_estimate on random batches")


# ---------------------------------------------------------------- Task 3: the chapter's claims

def tis_culprit(tis):
    """For a failed claim: which of importance_weights and pg_estimate breaks its formula
    (on fixed inputs), with the likely mistake if one is certain; "" if neither."""
    rng = np.random.default_rng(0)
    log_w = rng.integers(-6, 7, size=(3, 4)) / 2
    logp_infer = np.log(rng.uniform(0.05, 1.0, size=log_w.shape))
    function, task = "importance_weights", "3a"
    try:
        got = [tis.importance_weights(logp_infer + log_w, logp_infer, scheme, 1.5)
               for scheme in SCHEMES]
        check_cases([f"importance_weights(..., {scheme!r}, C=1.5) with logp_train - logp_infer = "
                     f"{log_w.tolist()}" for scheme in SCHEMES], got,
                    [expected_weights(log_w, scheme, 1.5) for scheme in SCHEMES],
                    "importance_weights", "the five schemes of the docstring",
                    {why: [f(log_w, scheme, 1.5) for scheme in SCHEMES]
                     for why, f in MISTAKES_3A.items()})
        function, task = "pg_estimate", "3b"
        check_batches(tis, random_batches(rng, 50), "pg_estimate")
    except Exception as error:  # noqa: BLE001 (any failure points at that function)
        return (f"\n  The cause is in {function} (run pytest -k task{task}): "
                + str(error).replace("\n  ", "\n    "))
    return ""


def claim(holds, message, tis):
    """Assert one of the chapter's claims; on failure, point at the function at fault."""
    if not holds:
        raise AssertionError(message + tis_culprit(tis))


def test_task3_no_mismatch_no_bias(tis):
    stats = {s: exact_stats(tis, s, 0.0) for s in SCHEMES}
    for scheme, s in stats.items():
        claim(s["bias"] < 1e-12, f'with mismatch 0 every weight is 1, so "{scheme}" must be '
              f'unbiased; bias {s["bias"]:.3g}', tis)
        claim(same(s["variance"], stats["none"]["variance"]),
              f'with mismatch 0 the variance of "{scheme}" must equal that of "none": '
              f'{s["variance"]:.6g} vs {stats["none"]["variance"]:.6g}', tis)


def test_task3_naive_bias_grows_linearly(tis):
    bias = {m: exact_stats(tis, "none", m)["bias"] for m in (0.1, 0.2, 0.4)}
    claim(bias[0.1] > 0.01, f'"none" ignores the mismatch, so it is biased; bias {bias[0.1]:.3g}',
          tis)
    for m in (0.1, 0.2):
        claim(1.8 < bias[2 * m] / bias[m] < 2.3,
              f"the naive bias should about double when the mismatch doubles: "
              f"{bias[m]:.4f} at {m}, {bias[2 * m]:.4f} at {2 * m}", tis)


def test_task3_batch_size_shrinks_variance_not_bias(tis):
    small, large = exact_stats(tis, "none", 0.6, batch_size=1), exact_stats(tis, "none", 0.6, batch_size=64)
    claim(same(large["bias"], small["bias"]), f"the naive bias must be the same with batch 64 and "
          f"batch 1 (bias does not average away): {large['bias']:.6g} vs {small['bias']:.6g}", tis)
    claim(same(large["variance"], small["variance"] / 64), f"variance with batch 64 must be the "
          f"variance with batch 1 / 64: {large['variance']:.6g} vs {small['variance'] / 64:.6g}",
          tis)


def test_task3_sequence_is_unbiased_but_noisy(tis):
    for m in (0.3, 0.6, 1.0):
        bias = exact_stats(tis, "seq", m)["bias"]
        claim(bias < 1e-9, f"sequence IS is exactly unbiased, but bias = {bias:.3g} at "
              f"mismatch {m}", tis)
    growth = exact_stats(tis, "seq", 1.0)["variance"] / exact_stats(tis, "seq", 0.0)["variance"]
    naive = exact_stats(tis, "none", 1.0)["variance"] / exact_stats(tis, "none", 0.0)["variance"]
    claim(growth > 50 and naive < 2,
          f"sequence IS variance should explode with the mismatch (x{growth:.1f} from 0 to 1.0) "
          f"while the naive one barely moves (x{naive:.2f})", tis)


def test_task3_truncation_wins_at_large_mismatch(tis):
    rmse = {s: exact_stats(tis, s, 0.6)["rmse"] for s in SCHEMES}
    truncated = max(rmse["token_tis"], rmse["seq_tis"])
    others = min(rmse["none"], rmse["token"], rmse["seq"])
    shown = ", ".join(f"{s} {v:.4f}" for s, v in rmse.items())
    claim(truncated < others,
          f"at mismatch 0.6 the truncated estimators should have the lowest RMSE; got {shown}", tis)


def test_task3_best_C_is_inside_the_sweep(tis):
    sweep = c_sweep(tis, Cs=(1.0, 1.25, 1.5, 2.0, 4.0, 10.0), mismatch=0.6)
    claim(1.0 < sweep["best_C"] < 10.0,
          f"the RMSE of token_tis at mismatch 0.6 should be lowest strictly inside C = 1..10, "
          f"got best C = {sweep['best_C']} (RMSE {sweep['rmse']})", tis)


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
    # no ratio sits on these edges, so this test is about which band, not about its edges
    check(tis.masked_weights(MASK_TRAIN, MASK_INFER, "token", low=0.2, high=3.5),
          in_band(RATIOS, 0.2, 3.5), 'masked_weights(..., "token", low=0.2, high=3.5)', [
              (in_band(RATIOS, 0.5, 2.0), "ignored low and high (used 0.5 and 2)"),
              (in_band(RATIOS, 0.5, 3.5), "ignored low (used 0.5)"),
              (in_band(RATIOS, 0.2, 2.0), "ignored high (used 2)")])
    with np.errstate(divide="ignore"):  # low = 0 is allowed: no lower bound
        got = tis.masked_weights(MASK_TRAIN, MASK_INFER, "seq", low=0.0, high=2.0)
    check(got, in_band(PRODUCTS, 0.0, 2.0),
          'masked_weights(..., "seq", low=0, high=2): an upper bound only, as in TRL')


def test_task3c_long_responses_in_log_space(tis):
    # 1,600 tokens. Response 1: 800 ratios e, then 800 ratios 1/e (product 1, but the running
    # product reaches e**800, beyond float64's largest number, ~e**709). Response 2: every
    # ratio e**0.5 (product e**800: rejected; geometric mean e**0.5: kept).
    log_w = np.stack([np.repeat([1.0, -1.0], 800), np.full(1600, 0.5)])
    logp_infer = np.full((2, 1600), -2.0)
    ones, zeros = np.ones(1600), np.zeros(1600)
    with np.errstate(all="ignore"):
        got = {level: tis.masked_weights(logp_infer + log_w, logp_infer, level)
               for level in ("seq", "geo")}
    check(got["seq"], np.stack([ones, zeros]),
          'masked_weights(..., "seq") on two 1,600-token responses (products 1 and e**800)', [
              (np.stack([zeros, zeros]), "overflow: the running product of response 1 passed "
                                         "e**709; add the log-ratios, compare the sum with "
                                         "log(low) and log(high), exponentiate only what you keep"),
              (np.stack([ones, np.full(1600, np.inf)]), "ignored high: a product above the band "
                                                        "is rejected (weight 0)")])
    check(got["geo"], np.stack([ones, np.full(1600, np.exp(0.5))]),
          'masked_weights(..., "geo") on the same responses (geometric means 1 and e**0.5)')


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
