"""The graded tests of Lab 20. PYTEST_DONT_REWRITE

Run one task at a time:  python -m pytest -q -k task1   (then task2, task3)

A test named test_task<id>_... grades that task (see lab.TASKS). Its argument
(memory, scheduler or tis) is the task module under test, yours or the
reference's (the fixtures are in grading/plugin.py); the given code is tested in
test_given.py and experiments/test_*.py. Every expected number can be worked out by hand, follows
from the formula in the function's docstring (the random tests, whose inputs
are seeded by grading.test_seed()), or is the reference's result on a small seeded
run (the snapshot tests). The expected values are data (grading/expected.py): the
instructors' reference worked them out on these very inputs. Each failure says what was
computed, from which inputs (the smallest wrong case), expected vs got, and, when the wrong value is
exactly what one known mistake gives and no other, which one (grading/feedback.py).
(PYTEST_DONT_REWRITE above keeps pytest from appending its own assert
introspection, so the messages below are shown as they are.)
"""

import collections
import math
import numbers

import numpy as np

import grading
import toy
from grading import feedback
from grading.expected import answer, answers
from grading.feedback import KnownMistakes, Mistake, check, check_cases, same, show
from grading.harness import where
from lab import GPU_GB, MASK_LEVELS, SCHEMES
from lab.responses import ids, response, take_outcome
from lab.tolerances import KIND, NO_FLOOR, ROUNDING

# ---------------------------------------------------------------- helpers


def random_inputs(test_number):
    """The random generator of one test: seeded by grading.test_seed() (fixed unless LAB_SEED
    is set) and the test's own number, so each test draws its own reproducible inputs.
    (The tests pick from a list as options[rng.integers(len(options))]: the very draw
    rng.choice(options) makes, at a tenth of its cost.)"""
    return np.random.default_rng([grading.test_seed(), test_number])


def built(name):
    """The string `name` built at run time, as one read from a config file would be: equal
    to the literal, but another object, so only == (never `is`) finds them equal."""
    return "".join(list(name))


def call(function, *args):
    """function(*args) written out as the student would type it, for a failure message."""
    return f"{function}({', '.join(map(repr, args))})"


def check_whole(function, name, cases, expected, hint):
    """function(*case) is an int (a numpy int too) equal to expected exactly, on every case
    in order: a float is wrong even when its value is right (the docstring says int), and
    so is an int a few bytes off (float arithmetic past 2**53 loses them) or a multiple of
    2**64 off (numpy int64 arithmetic wraps past 2**63 - 1)."""
    for case, want in zip(cases, expected):
        try:
            got = function(*case)
        except OverflowError as error:  # np.int64() of a larger int, say
            raise AssertionError(
                f"{call(name, *case)} must return the int {want:,} (whole bytes, exact), got "
                f"OverflowError: {error}{where(error)}; numpy's int64 holds at most 2**63 - 1, "
                "about 9.2e18, and Python ints hold any whole number" + hint()
            ) from None
        if (
            isinstance(got, numbers.Integral)
            and not isinstance(got, (bool, np.bool_))
            and got == want
        ):
            continue
        off = ""
        if isinstance(got, numbers.Real) and math.isfinite(got) and got != want:
            gap = int(got) - want
            off = f", {gap:+,} bytes off"
            if -(2**63) <= got < 2**63 and gap % 2**64 == 0:
                off += (
                    " (a multiple of 2**64, as numpy int64 arithmetic gives: it wraps past "
                    "2**63 - 1, about 9.2e18; Python ints hold any whole number)"
                )
            elif want > 2**53 and abs(gap) <= want * 2**-48:
                off += (
                    " (within float rounding: float arithmetic rounds past 2**53, keep "
                    "whole numbers as int)"
                )
        raise AssertionError(
            f"{call(name, *case)} must return the int {want:,} (whole bytes, "
            f"exact), got {type(got).__name__} {got!r}{off}" + hint()
        )


# ---------------------------------------------------------------- Task 1a


def random_counts():
    """Task 1a's random (n_trained, n_frozen), from one to 10**10 each, small ones first."""
    rng = random_inputs(1)
    counts = [(int(a), int(b)) for a, b in np.round(10 ** rng.uniform(0, 10, size=(100, 2)))]
    return [(0, 0), (1, 0), (0, 1)] + sorted(counts, key=sum)


MISTAKES_1A = KnownMistakes(
    "1a",
    [
        Mistake(
            "forgot the fp32 master copy of the weight (4 bytes)",
            "forgot the fp32 master weights (12 bytes per trained parameter)",
        ),
        Mistake(
            "counted only the two Adam moments m and v",
            "counted only the two Adam moments (8 bytes per trained parameter)",
        ),
        Mistake(
            "counted only the bf16 weight and gradient, no fp32 master or Adam state",
            "counted only the bf16 weight and gradient",
        ),
        Mistake(
            "counted the trained parameters as frozen (2 bytes); a trained one costs 16",
            "counted trained parameters like frozen ones",
        ),
        Mistake(
            "frozen weights are kept in bf16 (2 bytes), not fp32",
            "kept frozen weights in fp32 (4 bytes)",
        ),
        Mistake(
            "frozen parameters still take memory: 2 bytes each", "frozen parameters cost nothing"
        ),
        Mistake(
            "a frozen parameter has no gradient and no optimizer state: only its bf16 weight",
            "counted frozen parameters like trained ones",
        ),
    ],
    probes=lambda: (
        [(1, 0), (0, 1), (1_000, 500), (7e9, 0)] + WHOLE_COUNTS + INT64_COUNTS + random_counts()
    ),
)


def test_task1a_bytes_per_parameter(memory):
    hint = MISTAKES_1A.about(memory.model_state_bytes)
    check(memory.model_state_bytes(1), 16, "model_state_bytes(1) (one trained parameter)", hint)
    check(memory.model_state_bytes(0, 1), 2, "model_state_bytes(0, 1) (one frozen parameter)", hint)
    check(memory.model_state_bytes(1_000, 500), 17_000, "model_state_bytes(1000, 500)", hint)


def test_task1a_full_7b_is_112_gb(memory):
    got = memory.model_state_bytes(7e9)
    check(
        got,
        112_000_000_000,
        "model_state_bytes(7e9), a 7B model trained in full (bytes)",
        MISTAKES_1A.about(memory.model_state_bytes),
    )
    assert isinstance(got, numbers.Integral), (
        f"model_state_bytes must return an int (whole bytes), got {type(got).__name__} {got!r}"
    )


# Every kind of count the docstring allows, each of which changes the type some code
# returns: whole floats (7e9, also for n_frozen), numpy ints (their bytes within int64, up
# to 2**63 - 16 here), and ints past 2**53, where float arithmetic loses bytes (2**53 + 1 is
# not a float).
WHOLE_COUNTS = [
    (7e9, 0),
    (7e9, 7e9),
    (1_000, 500.0),
    (1_000.0, 500),
    (np.int64(7), np.int64(3)),
    (2**53 + 1, 0),
    (1, 2**60 + 1),
    (3 * 2**53 + 1, 2**54 + 3),
    (np.int64(2**59 - 1), np.int64(0)),
    (np.int64(0), np.int64(2**59 - 1)),
]
# Python int counts whose bytes pass int64's largest number, 2**63 - 1 (each count in turn):
# numpy int64 arithmetic wraps there (16 * 2**59 becomes -2**63), and np.int64() of a larger
# int raises OverflowError. Python ints have no largest number.
INT64_COUNTS = [(2**59, 0), (2**60, 0), (0, 2**63), (2**60 + 1, 2**62 + 3)]


def test_task1a_exact_int_for_every_kind_of_count(memory):
    check_whole(
        memory.model_state_bytes,
        "model_state_bytes",
        WHOLE_COUNTS,
        answers("model_state_bytes", WHOLE_COUNTS),
        MISTAKES_1A.about(memory.model_state_bytes),
    )


def test_task1a_exact_past_int64(memory):
    check_whole(
        memory.model_state_bytes,
        "model_state_bytes",
        INT64_COUNTS,
        answers("model_state_bytes", INT64_COUNTS),
        MISTAKES_1A.about(memory.model_state_bytes),
    )


def test_task1a_random_counts(memory):
    counts = random_counts()
    got = [memory.model_state_bytes(a, b) for a, b in counts]
    check_cases(
        counts,
        got,
        answers("model_state_bytes", counts),
        "model_state_bytes on random counts",
        "bytes = 16 * n_trained + 2 * n_frozen",
        MISTAKES_1A.about(memory.model_state_bytes),
        shown=lambda count: call("model_state_bytes", *count),
    )
    floats = [g for g in got if not isinstance(g, numbers.Integral)]
    assert not floats, f"model_state_bytes must return an int (whole bytes), got {floats[0]!r}"


# ---------------------------------------------------------------- Task 1b

QWEN_7B = (28, 4, 128)  # layers, KV heads, head_dim
N_TOKENS = 64 * 16_384  # 64 responses of 16k tokens


def random_shapes():
    """Task 1b's random (layers, KV heads, head_dim, tokens, bytes per value), few tokens first."""
    rng = random_inputs(2)
    return sorted(
        (
            (
                int(rng.integers(1, 81)),
                int(rng.integers(1, 65)),
                int(2 ** rng.integers(0, 9)),
                int(rng.integers(0, 10**6)),
                [1, 2, 4][rng.integers(3)],
            )
            for _ in range(100)
        ),
        key=lambda shape: shape[3],
    )


MISTAKES_1B = KnownMistakes(
    "1b",
    [
        Mistake(
            "forgot the factor 2: each token caches a key AND a value vector",
            "KV cache without the factor 2 for K and V",
        ),
        Mistake("ignored bytes_per_value (used 2)", "ignored bytes_per_value (always bf16)"),
        Mistake("counted bits instead of bytes", "counted bits instead of bytes"),
        Mistake(
            "forgot head_dim: each KV head caches a vector of head_dim values", "forgot head_dim"
        ),
    ],
    probes=lambda: (
        [(*QWEN_7B, 1, 2), (*QWEN_7B, N_TOKENS, 2), (*QWEN_7B, N_TOKENS, 1)]
        + padded(WHOLE_SHAPES + INT64_SHAPES)
        + FRACTIONAL_SHAPES
        + random_shapes()
    ),
)


def test_task1b_qwen_7b_is_56_kib_per_token(memory):
    got = memory.kv_cache_bytes(28, 4, 128, 1)
    check(
        got,
        57_344,
        "kv_cache_bytes(28 layers, 4 KV heads, head_dim 128, 1 token)",
        MISTAKES_1B.about(memory.kv_cache_bytes),
    )
    assert isinstance(got, numbers.Integral), (
        f"kv_cache_bytes must return an int (whole bytes), got {type(got).__name__} {got!r}"
    )


def test_task1b_scales_with_tokens_and_precision(memory):
    hint = MISTAKES_1B.about(memory.kv_cache_bytes)
    check(
        memory.kv_cache_bytes(*QWEN_7B, N_TOKENS),
        60_129_542_144,
        "kv_cache_bytes for Qwen2.5-7B, 64 responses x 16,384 tokens (about 60 GB)",
        hint,
    )
    check(
        memory.kv_cache_bytes(*QWEN_7B, N_TOKENS, bytes_per_value=1),
        30_064_771_072,
        "the same in fp8 (bytes_per_value=1)",
        hint,
    )


def test_task1b_random_shapes(memory):
    shapes = random_shapes()
    got = [memory.kv_cache_bytes(*shape) for shape in shapes]
    check_cases(
        shapes,
        got,
        answers("kv_cache_bytes", shapes),
        "kv_cache_bytes on random shapes",
        "bytes = 2 * n_layers * n_kv_heads * head_dim * n_tokens * bytes_per_value",
        MISTAKES_1B.about(memory.kv_cache_bytes),
        shown=lambda shape: call("kv_cache_bytes", *shape),
    )


# Shapes whose answer some code gets in the wrong type or value: a 4-bit cache (0.5 bytes
# per value, where int(bytes_per_value) is 0), no tokens at all (0, not 0.0), whole floats
# (16,384.0 tokens: an int times a float is a float), numpy ints (their bytes within int64,
# up to 2**63 - 2**50 here), and a count of bytes past 2**53 (exact only in int arithmetic).
WHOLE_SHAPES = [
    (*QWEN_7B, 1_000, 0.5),
    (*QWEN_7B, 0),
    (*QWEN_7B, 0, 0.5),
    (*QWEN_7B, 0, 1),
    (28.0, 4, 128.0, 1_000, 1),
    (*QWEN_7B, 16_384.0),
    (28, 4.0, 128, 16_384.0, 1),
    (np.int64(28), np.int64(4), 128, np.int64(1_000), 2),
    (1, 1, 1, 1, 0.5),
    (61, 7, 96, 2**43 + 7, 1),
    (79, 5, 80, 3 * 2**44 + 1, 2),
    (np.int64(1), np.int64(1), np.int64(1), np.int64(2**61 - 2**48), 2),
]
# Python int shapes whose bytes pass int64's largest number, 2**63 - 1 (each count in turn,
# 2**53 + 1 tokens of Qwen2.5-7B first: 5.2e20 bytes): numpy int64 arithmetic (np.prod of
# the sizes, say) wraps there, 28 * 4 * 128 * 2 * 2 * (2**53 + 1) to 57,344.
INT64_SHAPES = [
    (*QWEN_7B, 2**53 + 1),
    (*QWEN_7B, 2**53 + 1, 1),
    (2**62 + 1, 1, 1, 1, 1),
    (1, 2**61 + 3, 1, 1, 2),
    (1, 1, 2**63, 1, 1),
    (1, 1, 1, 2**62 + 5, 1),
]


def padded(shapes):
    """The shapes with bytes_per_value 2 where it is left out."""
    return [shape + (2,) * (5 - len(shape)) for shape in shapes]


def test_task1b_exact_int_for_every_kind_of_shape(memory):
    check_whole(
        memory.kv_cache_bytes,
        "kv_cache_bytes",
        WHOLE_SHAPES,
        answers("kv_cache_bytes", padded(WHOLE_SHAPES)),
        MISTAKES_1B.about(memory.kv_cache_bytes),
    )


def test_task1b_exact_past_int64(memory):
    check_whole(
        memory.kv_cache_bytes,
        "kv_cache_bytes",
        INT64_SHAPES,
        answers("kv_cache_bytes", padded(INT64_SHAPES)),
        MISTAKES_1B.about(memory.kv_cache_bytes),
    )


# bytes_per_value is the decimal it prints as, and a total that is not whole bytes is
# rounded up (the docstring): 0.57 bytes for 100 values is 57 (the float product is
# 56.99999999999999, which int() makes 56), 1.1 bytes for 50 values is 55 (the float
# product is 55.00000000000001, which rounding up in floats makes 56), 0.3 and 0.1 bytes
# for 2 values are 1 each (0.6 and 0.2 bytes: a part of a byte takes a byte, whichever way
# it would round), and 42 values of 1/8 byte take 6 bytes (5.25).
FRACTIONAL_SHAPES = [
    (1, 1, 1, 50, 0.57),
    (1, 1, 1, 25, 1.1),
    (1, 1, 1, 1, 0.3),
    (1, 1, 1, 1, 0.1),
    (3, 1, 1, 7, 0.125),
    (*QWEN_7B, 1_000, 0.57),
]


def test_task1b_fractional_bytes_per_value_exactly(memory):
    check_whole(
        memory.kv_cache_bytes,
        "kv_cache_bytes",
        FRACTIONAL_SHAPES,
        answers("kv_cache_bytes", FRACTIONAL_SHAPES),
        MISTAKES_1B.about(memory.kv_cache_bytes),
    )


# ---------------------------------------------------------------- Task 1c


def random_models():
    """Task 1c's random cases (algo, N, reference, reward_model, lora_params), small N first."""
    rng = random_inputs(3)
    cases = []
    for _ in range(100):
        N = int(10 ** rng.uniform(6, 11))
        lora = int([0, rng.integers(1, N // 10)][rng.integers(2)])
        cases.append(
            (
                ["ppo", "grpo"][rng.integers(2)],
                N,
                bool(rng.integers(2)),
                [None, True, False][rng.integers(3)],
                lora,
            )
        )
    return sorted(cases, key=lambda case: case[1])


FLAG_COMBINATIONS = [
    (algo, 7e9, reference, reward_model, lora)
    for lora in (0, 40e6)
    for algo in ("grpo", "ppo")
    for reference in (True, False)
    for reward_model in (None, True, False)
]
MISTAKES_1C = KnownMistakes(
    "1c",
    [
        Mistake(
            "divided by 2**30 (GiB); GB here means 10**9 bytes", "GiB (2**30) instead of GB (10**9)"
        ),
        Mistake(
            "forgot the critic: PPO trains a value model as large as the policy",
            "forgot the critic",
        ),
        Mistake(
            "counted the critic as frozen; it is trained (16 bytes per parameter)",
            "counted the critic as frozen",
        ),
        Mistake(
            "counted the reference as trained; it is frozen (2 bytes per parameter)",
            "counted the reference as trained",
        ),
        Mistake("ignored reference=False", "ignored reference=False"),
        Mistake(
            "counted the reward model as trained; it is frozen (2 bytes per parameter)",
            "counted the reward model as trained",
        ),
        Mistake(
            "ignored reward_model: True adds a frozen reward model (to GRPO too), False "
            "removes it (from PPO too)",
            "ignored reward_model (a reward model exactly when the algorithm is PPO)",
        ),
        Mistake(
            "kept a separate reference copy under LoRA: the reference is the base with the "
            "adapter switched off, so it costs nothing",
            "kept a separate reference copy under LoRA",
        ),
        Mistake(
            "counted the LoRA adapter as frozen; it is what gets trained (16 B)",
            "counted the LoRA adapter as frozen",
        ),
        Mistake(
            "forgot the critic's adapter: under LoRA, PPO's critic is a second adapter",
            "one adapter for PPO under LoRA (forgot the critic's)",
        ),
        Mistake(
            "gave the critic a base of its own under LoRA; it shares the frozen base",
            "gave PPO's critic a frozen base of its own under LoRA",
        ),
        Mistake("ignored lora_params", "ignored lora_params"),
        Mistake(
            "left out the base when reference=False under LoRA; the policy itself is base + "
            "adapter",
            "left the frozen base out under LoRA when reference=False",
        ),
    ],
    probes=lambda: FLAG_COMBINATIONS + WHOLE_GB + random_models(),
    observe=lambda rl_memory_gb, case: rl_memory_gb(
        case[0], case[1], reference=case[2], reward_model=case[3], lora_params=case[4]
    ),
)


def test_task1c_ppo_7b_is_252_gb(memory):
    check(
        memory.rl_memory_gb("ppo", 7e9),
        252.0,
        'rl_memory_gb("ppo", 7e9) in GB',
        MISTAKES_1C.about(memory.rl_memory_gb),
    )
    assert math.ceil(memory.rl_memory_gb("ppo", 7e9) / GPU_GB) == 4, (
        f"PPO on 7B should need 4 GPUs of {GPU_GB} GB just for its model state"
    )


def test_task1c_grpo_7b_is_126_gb(memory):
    hint = MISTAKES_1C.about(memory.rl_memory_gb)
    check(memory.rl_memory_gb("grpo", 7e9), 126.0, 'rl_memory_gb("grpo", 7e9) in GB', hint)
    check(
        memory.rl_memory_gb("grpo", 7e9, reference=False),
        112.0,
        'rl_memory_gb("grpo", 7e9, reference=False)',
        hint,
    )
    check(
        memory.rl_memory_gb("grpo", 7e9, reward_model=True),
        140.0,
        'rl_memory_gb("grpo", 7e9, reward_model=True)',
        hint,
    )


def test_task1c_lora_fits_one_gpu(memory):
    hint = MISTAKES_1C.about(memory.rl_memory_gb)
    check(
        memory.rl_memory_gb("grpo", 7e9, lora_params=40e6),
        14.64,
        'rl_memory_gb("grpo", 7e9, lora_params=40e6): 2 B per base + 16 B per adapter param',
        hint,
    )
    check(
        memory.rl_memory_gb("ppo", 7e9, lora_params=40e6),
        29.28,
        'rl_memory_gb("ppo", 7e9, lora_params=40e6): shared base, policy + critic adapters, '
        "frozen reward model",
        hint,
    )


# Whole numbers of GB from int, float and numpy-int counts: (algo, N, reference,
# reward_model, lora_params), each a float (252.0, not 252). The last two are Python ints
# whose bytes pass 2**63 (3.6e19 and 2.4e19 bytes), where numpy int64 arithmetic wraps.
WHOLE_GB = [
    ("ppo", 7e9, True, None, 0),
    ("ppo", 7_000_000_000, True, None, 0),
    ("grpo", 10**9, False, None, 0),
    ("grpo", np.int64(10**9), True, None, 0),
    ("ppo", 10**9, True, None, 10**9),
    ("grpo", 0, True, None, 0),
    ("ppo", 10**18, True, None, 0),
    ("grpo", 2 * 10**18, True, True, 10**18),
]


def test_task1c_returns_a_float(memory):
    hint = MISTAKES_1C.about(memory.rl_memory_gb)
    for (algo, N, reference, reward_model, lora), want in zip(
        WHOLE_GB, answers("rl_memory_gb", WHOLE_GB)
    ):
        got = memory.rl_memory_gb(
            algo, N, reference=reference, reward_model=reward_model, lora_params=lora
        )
        shown = (
            f"rl_memory_gb({algo!r}, {N!r}, reference={reference}, "
            f"reward_model={reward_model}, lora_params={lora!r})"
        )
        check(got, want, shown, hint)
        assert isinstance(got, float), (
            f"{shown} must return a float (GB, from bytes / 1e9), got {type(got).__name__} {got!r}"
        )


def check_bills(memory, cases, what):
    """rl_memory_gb on every case (algo, N, reference, reward_model, lora) vs the bill, with
    each algo a string built at run time (compare it with ==, never `is`)."""
    got = [
        memory.rl_memory_gb(built(algo), N, reference=ref, reward_model=rm, lora_params=lora)
        for algo, N, ref, rm, lora in cases
    ]

    def shown(case):
        algo, N, ref, rm, lora = case
        return (
            f"rl_memory_gb({algo!r}, {N:.4g}, reference={ref}, reward_model={rm}, "
            f"lora_params={lora:.4g})"
        )

    check_cases(
        cases,
        got,
        answers("rl_memory_gb", cases),
        what,
        "the models of the docstring, 16 B per trained and 2 B per frozen parameter, "
        "in GB = 1e9 bytes (algo is a string built at run time: compare it with ==)",
        MISTAKES_1C.about(memory.rl_memory_gb),
        shown,
    )


def test_task1c_every_flag_combination(memory):
    check_bills(
        memory,
        FLAG_COMBINATIONS,
        "rl_memory_gb for both algorithms, every flag, with "
        "and without LoRA (N = 7e9, adapter 40e6)",
    )


def test_task1c_random_models(memory):
    check_bills(memory, random_models(), "rl_memory_gb on random models")


# ---------------------------------------------------------------- Task 2a

ADMISSION_RULE = "n_started - n_dropped < (version + k + 1) * B"
SYNCHRONOUS_STATES = [(n, 0, 0, 0, 4) for n in range(6)] + [(n, 0, 1, 0, 4) for n in range(3, 10)]
AHEAD_STATES = [
    (n, 0, v, k, 4) for v, k in ((0, 1), (1, 2), (3, 1)) for n in (7, 8, 10, 12, 15, 16, 19, 20)
]
DROPPED_STATES = [
    (n, d, 0, 1, 4)
    for n, d in (
        (8, 0),
        (8, 1),
        (10, 3),
        (11, 3),
        (12, 5),
        (13, 5),
        (6, 2),
        (9, 0),
        (14, 2),
        (15, 2),
    )
]


def random_states(rng, n):
    """n random admission states (n_started, n_dropped, version, k, B), near the bound."""
    states = []
    for _ in range(n):
        B, k, v = int(rng.integers(1, 9)), int(rng.integers(0, 4)), int(rng.integers(0, 6))
        d = int(rng.integers(0, 2 * B))
        states.append((d + (v + k + 1) * B + int(rng.integers(-B - 1, B + 2)), d, v, k, B))
    return sorted({s for s in states if s[0] >= s[1]}, key=lambda s: (s[4], s[0]))


MISTAKES_2A = KnownMistakes(
    "2a",
    [
        Mistake(
            "ignored n_dropped: dropped responses are never trained, so they free their place",
            "admission ignores n_dropped",
        ),
        Mistake(
            "added n_dropped; subtract it (dropped responses free their place)",
            "added n_dropped instead of subtracting it",
        ),
        Mistake(
            "off by one batch: the lanes may fill the next batch plus k more, (version + k + "
            "1) * B",
            "admission off by one batch (too strict)",
        ),
        Mistake(
            "off by one batch the other way: (version + k + 1) * B, not (version + k + 2) * B",
            "admission off by one batch (too loose)",
        ),
        Mistake(
            "used <= where the rule has <: that starts one response too many", "<= instead of <"
        ),
        Mistake(
            "used <= with (version + k) * B: the rule is < with (version + k + 1) * B",
            "<= with (version + k) * B",
        ),
        Mistake(
            "ignored k: that is always synchronous", "admission ignores k (always synchronous)"
        ),
        Mistake(
            "ignored the version: the bound moves up by B with every update",
            "admission ignores the version",
        ),
        Mistake(
            "added k responses, not k batches: the bound is (version + k + 1) * B",
            "k responses ahead instead of k batches",
        ),
    ],
    probes=lambda: (
        SYNCHRONOUS_STATES
        + AHEAD_STATES
        + DROPPED_STATES
        + HUGE_STATES
        + random_states(random_inputs(4), 300)
        + random_states(np.random.default_rng([grading.test_seed(), 104]), 300)
    ),
)


def check_admission(may_start, states, what):
    """Compare may_start over `states` with the rule, naming a known mistake when it is one."""
    got = [may_start(*state) for state in states]

    def shown(state):
        n, d, v, k, B = state
        return f"may_start(n_started={n}, n_dropped={d}, version={v}, k={k}, B={B})"

    check_cases(
        states,
        got,
        answers("may_start", states),
        what,
        ADMISSION_RULE,
        MISTAKES_2A.about(may_start),
        shown,
    )
    assert all(isinstance(g, (bool, np.bool_)) for g in got), (
        f"may_start must return a bool, got {[type(g).__name__ for g in got]}"
    )


def test_task2a_synchronous_when_k_is_0(scheduler):
    check_admission(
        scheduler.may_start, SYNCHRONOUS_STATES, "k = 0, B = 4: one batch, then wait for the update"
    )


def test_task2a_k_batches_ahead(scheduler):
    check_admission(scheduler.may_start, AHEAD_STATES, "k >= 1, B = 4: k batches ahead")


def test_task2a_dropped_free_their_place(scheduler):
    check_admission(scheduler.may_start, DROPPED_STATES, "k = 1, B = 4, with dropped responses")


# Counts past 2**53, where floats skip whole numbers: in float division (3 * 2**53 - 1) / 3
# rounds up to 2**53, so (n_started - n_dropped) / B < version + k + 1 refuses the last
# response the rule admits. Int arithmetic is exact at any size.
HUGE_STATES = [
    (3 * 2**53 - 1, 0, 2**53 - 1, 0, 3),
    (3 * 2**53, 0, 2**53 - 1, 0, 3),
    (2**60 - 1, 0, 2**58 - 1, 0, 4),
    (2**60 + 5, 6, 2**58 - 2, 1, 4),
    (7 * 2**55 + 6, 0, 2**55, 0, 7),
    (7 * 2**55 + 7, 0, 2**55, 0, 7),
]


def test_task2a_exact_past_2_53(scheduler):
    check_admission(
        scheduler.may_start,
        HUGE_STATES,
        "may_start with counts past 2**53 (exact only in int arithmetic)",
    )


def test_task2a_random_states(scheduler):
    check_admission(
        scheduler.may_start,
        random_states(random_inputs(4), 300),
        "may_start on random states near the bound",
    )


# ---------------------------------------------------------------- Task 2b

# The response dicts of the latest take_batch calls (strong references, so an id is never
# reused): a dict returned later that is one of these was kept from an earlier call.
EARLIER = collections.deque(maxlen=4_000)


def take(scheduler, tags, version, k, B, drop_stale=False, finished=None):
    """Call take_batch on responses with these tags (or on `finished`); check what it returns
    is the tuple (batch, dropped) of the very dicts it was given."""
    finished = [response(i, tag) for i, tag in enumerate(tags)] if finished is None else finished
    given = list(finished)
    result = scheduler.take_batch(finished, version, k, B, drop_stale)
    assert isinstance(result, tuple) and len(result) == 2, (
        f"take_batch must return the tuple (batch, dropped), got {show(result)}"
        + ("; a list is not a tuple: return batch, dropped" if isinstance(result, list) else "")
    )
    batch, dropped = result
    assert isinstance(dropped, (list, tuple)), (
        f"dropped must be a list (empty if nothing was dropped), got {show(dropped)}"
    )
    for name, taken in (("batch", batch or []), ("dropped", dropped)):
        strangers = [r for r in taken if not any(r is g for g in given)]
        assert not strangers, not_given(name, strangers[0], given)
    EARLIER.extend(given)
    return batch, list(dropped), finished  # a tuple is fine too, as in the simulator


def not_given(name, r, given):
    """Why response dict `r`, returned in `name`, is none of the dicts in `finished`."""
    if any(r is e for e in EARLIER):
        return (
            f"take_batch returned in `{name}` response {r.get('id')!r} from an earlier "
            "call: it was not in `finished` this time. Did you keep a list between calls "
            "(a global, or a default argument such as dropped=[] that Python creates "
            "once)? Start `batch` and `dropped` empty on every call"
        )
    what = "a copy of" if any(r.get("id") == g.get("id") for g in given) else "not one of"
    return (
        f"take_batch returned in `{name}` {what} the dicts that were in `finished` "
        f"(response {r.get('id')!r}). Return the same dict objects (the simulator reads "
        "each one's lag and dropped flag from them)"
    )


def queue(tags):
    """(id, tag, start, length) of responses with these tags, finished in id order."""
    return tuple((i, tag, float(i), 1.0) for i, tag in enumerate(tags))


# Finish order (the order in `finished`) differs from start order (ids), from length order
# and from tag order: only first in, first out gives ids [3, 1] with B = 2.
FINISH_ORDER = (
    (3, 1, 3.0, 0.2),
    (1, 2, 1.0, 2.5),
    (0, 0, 0.0, 4.0),
    (4, 2, 4.0, 0.1),
    (2, 1, 2.0, 2.3),
)  # id, tag, start, length
# version 4, k = 1, B = 3: tags below 3 are stale. Fewer than B waiting at all; then at
# least B waiting, of which fewer than, exactly and more than B stay fresh.
WAITING = [
    ([1, 4], None, [0], [1]),  # tags, batch ids, dropped ids, ids left
    ([2, 4, 3, 1], None, [0, 3], [1, 2]),
    ([2, 4, 3, 3, 1], [1, 2, 3], [0, 4], []),
    ([4, 0, 3, 4, 3, 2], [0, 2, 3], [1, 5], [4]),
]


def random_queues(rng, n):
    """n random take_batch inputs (tags, version, k, B, drop_stale), short queues first."""
    cases = []
    for _ in range(n):
        version, k, B = int(rng.integers(0, 6)), int(rng.integers(0, 3)), int(rng.integers(1, 5))
        tags = [int(t) for t in rng.integers(0, version + 1, size=rng.integers(0, 9))]
        cases.append((tags, version, k, B, bool(rng.integers(2))))
    return sorted(cases, key=lambda case: (len(case[0]), case[3]))


def shuffled_queues(rng, n):
    """n random take_batch inputs whose finish order is not the order of ids, lengths or tags."""
    cases = []
    for _ in range(n):
        version, k, B = int(rng.integers(0, 6)), int(rng.integers(0, 3)), int(rng.integers(1, 5))
        size = int(rng.integers(0, 10))
        tags, lengths = rng.integers(0, version + 1, size=size), rng.permutation(size) + 0.5
        cases.append(
            (
                tuple(
                    (int(i), int(tags[i]), float(i), float(lengths[i]))
                    for i in rng.permutation(size)
                ),
                version,
                k,
                B,
                bool(rng.integers(2)),
            )
        )
    return cases


MISTAKES_2B = KnownMistakes(
    "2b",
    [
        Mistake(
            "took the lowest ids (start order); take the first B of `finished`",
            "took the lowest ids (start order), not the first in `finished`",
        ),
        Mistake(
            "took the shortest responses; take the first B of `finished`",
            "took the shortest responses first",
        ),
        Mistake(
            "took the oldest tags first; take the first B of `finished`",
            "took the oldest tags first",
        ),
        Mistake(
            "only dropped when a full batch was there; drop first, always",
            "dropped only when B responses were waiting",
        ),
        Mistake(
            "only dropped when a full batch was there; drop first, always",
            "dropped only when B fresh responses were left for a batch",
        ),
        Mistake(
            "set the lags of every waiting response before dropping; set the lag of the batch only",
            "set the lags before dropping",
        ),
        Mistake(
            "took the newest first (LIFO, e.g. pop()); the trainer takes the oldest",
            "LIFO instead of FIFO",
        ),
        Mistake(
            "took the last B; the oldest B come first in `finished`", "took the newest B in order"
        ),
        Mistake(
            "wrong sign: lag = version - tag (how many updates old), not tag - version",
            "lag with the wrong sign",
        ),
        Mistake("dropped responses with lag == k; only lag > k is stale", "dropped at lag == k"),
        Mistake(
            "left the dropped responses in `finished`; remove them from it",
            "left dropped responses in `finished`",
        ),
        Mistake(
            "rebound the name (finished = [...]), so the caller's list never changed; change "
            "it in place, e.g. finished[:] = [...]",
            "replaced the list instead of changing it in place",
        ),
        Mistake(
            "did not remove the batch from the caller's list `finished`: change it in place "
            "(del finished[:B]); finished = finished[B:] only rebinds the name",
            "did not remove the batch from `finished`",
        ),
        Mistake(
            "returned no batch although B responses were waiting (take one when len >= B)",
            "waited for more than B responses",
        ),
    ],
    probes=lambda: (
        [
            (queue([0] * 5), 0, 0, 3, False),
            (FINISH_ORDER, 2, 2, 2, False),
            (SAME_END, 1, 1, 2, False),
            (queue([3, 1, 2]), 3, 2, 3, False),
            (queue([0, 0]), 0, 0, 3, False),
            (queue([3, 1, 2, 2, 0]), 3, 1, 2, True),
            (queue([0, 0]), 5, 1, 2, False),
            (queue([1, 5]), 5, 0, 2, True),
            (queue(ALL_STALE), 5, 1, 2, True),
            (queue([4, 5]), 5, 1, 2, True),
        ]
        + [(queue(tags), 4, 1, 3, True) for tags, *_ in WAITING]
        + [(queue(tags), *rest) for tags, *rest in random_queues(random_inputs(5), 200)]
        + shuffled_queues(np.random.default_rng([grading.test_seed(), 105]), 200)
    ),
    observe=lambda take_batch, args: take_outcome(take_batch, *args),
)


def test_task2b_first_in_first_out(scheduler):
    hint = MISTAKES_2B.about(scheduler.take_batch)
    batch, dropped, finished = take(scheduler, [0, 0, 0, 0, 0], version=0, k=0, B=3)
    check(
        ids(batch),
        [0, 1, 2],
        "take_batch on 5 finished responses (ids 0..4), B = 3: batch ids",
        hint,
    )
    check(ids(finished), [3, 4], "ids left in `finished` (change the list in place)", hint)
    assert dropped == [], f"nothing may be dropped when drop_stale is False, got {ids(dropped)}"


def test_task2b_takes_in_finish_order(scheduler):
    finished = [
        dict(response(i, tag), start=start, length=length, end=start + length)
        for i, tag, start, length in FINISH_ORDER
    ]
    batch, _, left = take(scheduler, None, version=2, k=2, B=2, finished=finished)
    hint = MISTAKES_2B.about(scheduler.take_batch)
    check(
        ids(batch),
        [3, 1],
        "take_batch, B = 2, on `finished` with ids [3, 1, 0, 4, 2] (the "
        "order they finished in), lengths [0.2, 2.5, 4, 0.1, 2.3], tags [1, 2, 0, 2, 1]: "
        "batch ids",
        hint,
    )
    check(ids(left), [0, 4, 2], "ids left in `finished`, in their order", hint)
    check([r["lag"] for r in batch], [1, 0], "lags of the batch (version 2, tags [1, 2])", hint)


# Four responses that finish at the same time, 5.0, in `finished` in the order the simulator
# put them there, which is not the order of their ids, starts or lengths: first in, first out
# keeps it; a queue sorted by finish time and then by anything else does not.
SAME_END = ((2, 0, 1.0, 4.0), (0, 0, 3.0, 2.0), (3, 0, 2.0, 3.0), (1, 0, 4.0, 1.0))


def test_task2b_equal_finish_times_keep_their_order(scheduler):
    finished = [response(i, tag, start, length) for i, tag, start, length in SAME_END]
    batch, _, left = take(scheduler, None, version=1, k=1, B=2, finished=finished)
    hint = MISTAKES_2B.about(scheduler.take_batch)
    check(
        ids(batch),
        [2, 0],
        "take_batch, B = 2, on four responses that all finished at time "
        "5.0, in `finished` as ids [2, 0, 3, 1] (starts 1, 3, 2, 4; lengths 4, 2, 3, 1): "
        "batch ids (the first two in `finished`)",
        hint,
    )
    check(ids(left), [3, 1], "ids left in `finished`, in their order", hint)


def test_task2b_lag_is_version_minus_tag(scheduler):
    batch, _, _ = take(scheduler, [3, 1, 2], version=3, k=2, B=3)
    lags = None if batch is None else [r["lag"] for r in batch]
    check(
        lags,
        [0, 2, 1],
        "lags of a batch with tags [3, 1, 2] at version 3",
        MISTAKES_2B.about(scheduler.take_batch),
    )


def test_task2b_waits_for_a_full_batch(scheduler):
    batch, _dropped, finished = take(scheduler, [0, 0], version=0, k=0, B=3)
    assert batch is None, (
        f"with 2 finished responses and B = 3, batch must be None, got {ids(batch)}"
    )
    check(
        ids(finished),
        [0, 1],
        "`finished` after an incomplete batch (nothing may be removed)",
        MISTAKES_2B.about(scheduler.take_batch),
    )
    assert [r["lag"] for r in finished] == [None, None], "responses not trained must keep lag None"


def test_task2b_drops_only_beyond_k(scheduler):
    # version 3, k = 1: lags 0, 2, 1, 1, 3 -> ids 1 and 4 are stale (lag > 1)
    batch, dropped, finished = take(
        scheduler, [3, 1, 2, 2, 0], version=3, k=1, B=2, drop_stale=True
    )
    hint = MISTAKES_2B.about(scheduler.take_batch)
    check(
        sorted(ids(dropped) or []),
        [1, 4],
        "dropped ids (any order): tags [3, 1, 2, 2, 0], version 3, k = 1",
        hint,
    )
    assert all(r["dropped"] is True for r in dropped or []), "set dropped = True on each dropped"
    check(ids(batch), [0, 2], "batch ids after dropping (the oldest two fresh responses)", hint)
    check(ids(finished), [3], "ids left in `finished`", hint)


def test_task2b_keeps_stale_unless_asked(scheduler):
    batch, dropped, _ = take(scheduler, [0, 0], version=5, k=1, B=2)
    assert dropped == [], f"drop_stale=False must drop nothing, got {ids(dropped)}"
    check(
        ids(batch),
        [0, 1],
        "batch with drop_stale=False (lag 5 > k but nothing is dropped)",
        MISTAKES_2B.about(scheduler.take_batch),
    )


def test_task2b_drops_even_without_a_batch(scheduler):
    batch, dropped, finished = take(scheduler, [1, 5], version=5, k=0, B=2, drop_stale=True)
    check(
        sorted(ids(dropped) or []),
        [0],
        "dropped ids (tags [1, 5], version 5, k = 0, B = 2) when no batch follows",
        MISTAKES_2B.about(scheduler.take_batch),
    )
    assert batch is None and ids(finished) == [1], (
        f"expected no batch and id 1 left in `finished`, got batch {ids(batch)}, "
        f"finished {ids(finished)}"
    )


def test_task2b_drops_whatever_is_waiting(scheduler):
    hint = MISTAKES_2B.about(scheduler.take_batch)
    for tags, batch_ids, dropped_ids, left_ids in WAITING:
        batch, dropped, left = take(scheduler, tags, version=4, k=1, B=3, drop_stale=True)
        what = f"take_batch(tags {tags}, version=4, k=1, B=3, drop_stale=True)"
        check(sorted(ids(dropped)), dropped_ids, f"{what}: dropped ids (any order)", hint)
        check(ids(batch), batch_ids, f"{what}: batch ids", hint)
        check(ids(left), left_ids, f"{what}: ids left in `finished`", hint)
        check(
            [r["lag"] for r in dropped + left],
            [None] * len(dropped + left),
            f"{what}: lags of the responses not trained (dropped or left waiting), which "
            "must stay None",
            hint,
        )
        check(
            [r["dropped"] for r in dropped + left],
            [True] * len(dropped) + [False] * len(left),
            f"{what}: the dropped flag of each dropped response, then of each left waiting "
            "(True once dropped, whether or not a batch follows)",
            hint,
        )


ALL_STALE = [0, 1, 1, 0, 2, 0]  # at version 5 with k = 1 every lag is above k


def test_task2b_drops_when_every_response_is_stale(scheduler):
    hint = MISTAKES_2B.about(scheduler.take_batch)
    batch, dropped, left = take(scheduler, ALL_STALE, version=5, k=1, B=2, drop_stale=True)
    what = f"take_batch(tags {ALL_STALE}, version=5, k=1, B=2, drop_stale=True), all stale"
    check(sorted(ids(dropped)), [0, 1, 2, 3, 4, 5], f"{what}: dropped ids (any order)", hint)
    check(ids(left), [], f"{what}: ids left in `finished`", hint)
    assert batch is None, f"{what}: no batch can follow, got batch ids {ids(batch)}"
    check(
        [(r["dropped"], r["lag"]) for r in dropped],
        [(True, None)] * 6,
        f"{what}: (dropped, lag) of each dropped response",
        hint,
    )
    again = take(scheduler, [4, 5], version=5, k=1, B=2, drop_stale=True)
    check(
        ids(again[1]),
        [],
        "the next call, on two fresh responses (tags [4, 5]): dropped ids "
        "(only the responses in `finished` now)",
        hint,
    )


def check_queues(scheduler, cases, what):
    """take_batch on every case vs its docstring; the smallest wrong case is shown."""
    got, shown = [], []
    for tags, version, k, B, drop_stale in cases:
        finished = [response(i, tag) for i, tag in enumerate(tags)]
        everyone = list(finished)
        batch, dropped, left = take(scheduler, None, version, k, B, drop_stale, finished)
        got.append(
            (
                ids(batch),
                sorted(ids(dropped)),
                ids(left),
                " ".join(
                    ("." if r["lag"] is None else str(r["lag"]))
                    + {True: "x", False: ""}.get(r["dropped"], "?")
                    for r in everyone
                ),
            )
        )
        shown.append(
            f"take_batch(`finished` with tags {tags}, version={version}, k={k}, B={B}, "
            f"drop_stale={drop_stale})"
        )
    want = answers("take_batch", cases)
    wrong = [i for i, (g, e) in enumerate(zip(got, want)) if g != e]
    if wrong:
        raise AssertionError(
            f"{what}: {len(wrong)} of {len(cases)} cases wrong; the smallest:\n"
            f"  {shown[wrong[0]]} gave (batch ids, dropped ids, ids left, each response's "
            f"lag) = {got[wrong[0]]}, expected {want[wrong[0]]} (ids are positions in "
            "`finished`; a lag . is None, x marks dropped = True)"
            + MISTAKES_2B.hint(scheduler.take_batch)
        )


def test_task2b_random_queues(scheduler):
    check_queues(scheduler, random_queues(random_inputs(5), 200), "take_batch on random queues")


# ---------------------------------------------------------------- Task 2: whole simulation


def culprit(scheduler):
    """For a failed whole-simulation test: which of may_start and take_batch breaks its rule
    (on fixed states and queues), with the likely mistake if one is certain; "" if neither."""
    rng = np.random.default_rng(0)
    for function, task, run in (
        (
            "may_start",
            "2a",
            lambda: check_admission(scheduler.may_start, random_states(rng, 200), "may_start"),
        ),
        (
            "take_batch",
            "2b",
            lambda: check_queues(scheduler, random_queues(rng, 200), "take_batch"),
        ),
    ):
        try:
            run()
        except Exception as error:  # noqa: BLE001 (any failure points at this function)
            return f"\n  The cause is in {function} (run pytest -k task{task}): " + str(
                error
            ).replace("\n  ", "\n    ")
    return ""


def check_run(scheduler, got, expected, what):
    """check() for a number of a whole simulation; on failure, name the function at fault."""
    if not (got == expected if isinstance(expected, str) else same(got, expected)):
        raise AssertionError(
            f"{what}: expected {show(expected)}, got {show(got)}." + culprit(scheduler)
        )


def lag_code(trace):
    """One character per response, in start order: its lag, x if dropped, . if never trained."""
    return "".join(
        "x" if r["dropped"] else "." if r["lag"] is None else str(r["lag"]) for r in trace
    )


def test_task2_hand_case_synchronous(scheduler):
    # t=0 start lengths 1 and 3; t=3 both done, train until 4; start 1, 1; t=5 train until 6
    r = scheduler.simulate(2, 2, 0, n_steps=2, lengths=[1, 3, 1, 1])
    check_run(
        scheduler,
        r["time"],
        6.0,
        "simulate(2 lanes, B=2, k=0, lengths [1, 3, 1, 1], 2 steps): time",
    )
    check_run(scheduler, r["utilization"], 0.5, "its lane utilization (6 busy of 2 x 6 lane-time)")
    check_run(scheduler, r["mean_lag"], 0.0, "its mean lag (synchronous RL is on-policy)")


def test_task2_hand_case_async(scheduler):
    # the free lane starts the third response at t=1 instead of waiting for the update
    r = scheduler.simulate(2, 2, 1, n_steps=2, lengths=[1, 3, 1, 1])
    check_run(
        scheduler,
        r["time"],
        4.0,
        "simulate(2 lanes, B=2, k=1, lengths [1, 3, 1, 1], 2 steps): time",
    )
    check_run(scheduler, r["mean_lag"], 0.5, "its mean lag (lags 0, 1, 0, 1 for responses 0..3)")
    check_run(
        scheduler,
        [s["lag"] for s in r["trace"]],
        [0, 1, 0, 1],
        "lag of each response, in start order",
    )


def test_task2_hand_case_drop_stale(scheduler):
    # 2 lanes, B = 1, k = 1, lengths [4, 1, 1, ...], drop_stale:
    # t=0 start #0 (length 4) and #1; t=1 train #1 (lag 0) until 2; version 1
    # t=2 start #2; t=3 train #2 until 4; version 2 at t=4, start #3 (2 - 0 < (2+1+1) * 1)
    # t=4 #0 finishes with lag 2 > k: dropped, which frees its place: start #4
    # t=5 #3 and #4 finish: train #3 (lag 0) until 6; version 3: train #4 (lag 1) until 7,
    # start #5 at t=6; version 4 at t=7: done. #5 is never trained.
    r = scheduler.simulate(2, 1, 1, n_steps=4, lengths=[4, 1, 1, 1, 1, 1, 1], drop_stale=True)
    what = "simulate(2 lanes, B=1, k=1, 4 steps, lengths [4, 1, 1, ...], drop_stale=True)"
    check_run(
        scheduler,
        lag_code(r["trace"]),
        "x0001.",
        f"{what}: each response in start order: lag, x = dropped, . = never trained",
    )
    check_run(scheduler, r["time"], 7.0, f"{what}: time")
    check_run(
        scheduler,
        r["wasted_frac"],
        4 / 9,
        f"{what}: wasted_frac (#0 took 4 of the 9 busy lane-time units)",
    )


# A small seeded run with a slow trainer (train_time 2), so that finished responses
# queue up and the order they are taken in matters: each response's lag and drop as
# the reference simulates them (lag_code), and the time of the run.
SNAPSHOT = {
    False: ("10003201113211222222222222421222221222222322122.1.......", 24.578013888427463),
    True: ("1000x20111x211222121211222x22221222212122x2122221221........", 24.578013888427463),
}


def test_task2_seeded_run_snapshot(scheduler):
    for drop_stale, (code, time) in SNAPSHOT.items():
        r = scheduler.simulate(4, 4, 2, n_steps=12, train_time=2.0, seed=2, drop_stale=drop_stale)
        what = (
            f"simulate(4 lanes, B=4, k=2, 12 steps, train_time=2, seed=2, drop_stale={drop_stale})"
        )
        got = lag_code(r["trace"])
        at = next(
            (i for i, (g, e) in enumerate(zip(got, code)) if g != e), min(len(got), len(code))
        )
        check_run(
            scheduler,
            got,
            code,
            f"{what}: each response's lag (x dropped, . never "
            f"trained); the first difference is at response {at}",
        )
        check_run(scheduler, r["time"], time, f"{what}: time")


# Runs of the chapter's set-up, simulated once per session: two claims need some of the same
# runs. Keyed by the student's functions themselves, which the key keeps alive, so another
# student's never match; only the numbers the claims read are kept (a trace is thousands of
# responses).
RUNS = {}


def chapter_run(scheduler, k, train_time=1.0):
    """throughput, utilization and mean_lag of scheduler.simulate(16, 32, k, n_steps=50,
    train_time=train_time), simulated once per session for these functions (an error every
    time)."""
    key = (scheduler.simulate, scheduler.may_start, scheduler.take_batch, k, train_time)
    if key not in RUNS:
        run = scheduler.simulate(16, 32, k, n_steps=50, train_time=train_time)
        RUNS[key] = {name: run[name] for name in ("throughput", "utilization", "mean_lag")}
    return dict(RUNS[key])


def test_task2_heavy_tail_speedup(scheduler):
    # the chapter's set-up: 16 lanes, B = 32, lognormal sigma 1.25, train_time 1
    runs = {k: chapter_run(scheduler, k) for k in (0, 1, 2, 3)}
    util0 = runs[0]["utilization"]
    gain = {k: runs[k]["throughput"] / runs[0]["throughput"] for k in runs}
    assert 0.15 < util0 < 0.30, (
        f"synchronous lane utilization should be 20-25%, got {util0:.0%}" + culprit(scheduler)
    )
    assert 3.5 < gain[1] < 5.0, (
        f"k = 1 should give about 4x the throughput of k = 0, got {gain[1]:.2f}x"
        + culprit(scheduler)
    )
    assert gain[3] < 1.02 * gain[2], (
        f"beyond k = 2 nothing more is gained (generation is the bottleneck), got "
        f"{gain[2]:.2f}x at k = 2 and {gain[3]:.2f}x at k = 3" + culprit(scheduler)
    )
    assert 0.8 < runs[2]["mean_lag"] <= 2, (
        f"mean lag at k = 2 should be 1-2, got {runs[2]['mean_lag']:.2f}" + culprit(scheduler)
    )


def test_task2_drop_stale_wastes_long_responses(scheduler):
    r = scheduler.simulate(16, 32, 1, n_steps=100, drop_stale=True)
    dropped = [s for s in r["trace"] if s["dropped"]]
    trained = [s for s in r["trace"] if s["lag"] is not None and not s["dropped"]]
    assert dropped and r["wasted_frac"] > 0, (
        "with k = 1 and a heavy tail some responses are stale" + culprit(scheduler)
    )
    assert max(s["lag"] for s in trained) <= 1, (
        "with drop_stale no trained response has lag > k" + culprit(scheduler)
    )
    mean_dropped = np.mean([s["length"] for s in dropped])
    mean_trained = np.mean([s["length"] for s in trained])
    assert mean_dropped > 2 * mean_trained, (
        f"dropped responses should be the long ones: mean length {mean_dropped:.2f} dropped vs "
        f"{mean_trained:.2f} trained" + culprit(scheduler)
    )
    # the same seeded run as the reference simulates it: exact counts
    what = "simulate(16 lanes, B=32, k=1, 100 steps, drop_stale=True)"
    check_run(
        scheduler,
        [len(dropped), len(r["trace"])],
        [345, 3577],
        f"{what}: [responses dropped, responses started]",
    )
    check_run(scheduler, r["throughput"], 14.805678086860285, f"{what}: throughput")


def test_task2_slow_trainer_lowers_the_gain(scheduler):
    def gain(train_time):  # the throughput of k = 1 over k = 0's, 16 lanes, B = 32, 50 steps
        k0, k1 = (chapter_run(scheduler, k, train_time)["throughput"] for k in (0, 1))
        return k1 / k0

    fast, slow = gain(1.0), gain(3.0)
    assert slow < fast - 0.5, (
        f"with train_time 3.0 the trainer is the bottleneck, so k = 1 should gain less: "
        f"{slow:.2f}x vs {fast:.2f}x at train_time 1.0" + culprit(scheduler)
    )


# ---------------------------------------------------------------- Task 3a

# Four sequences of three tokens; the ratios w_t = pi_train / pi_infer are
W = np.array(
    [
        [4.0, 0.25, 1.0],  # product 1
        [0.5, 3.0, 0.5],  # product 0.75
        [3.0, 2.0, 1.0],  # product 6 (above C = 2)
        [0.25, 1.0, 1.0],
    ]
)  # product 0.25 (below 1 / C)
LOGP_INFER = np.log([[0.2, 0.4, 0.5], [0.4, 0.1, 0.6], [0.3, 0.3, 0.9], [0.8, 0.5, 0.5]])
LOGP_TRAIN = LOGP_INFER + np.log(W)
# 1,600 tokens: 800 with ratio e, then 800 with ratio 1/e. Total ratio 1, but the
# running product reaches e**800, far beyond float64's largest number (~e**709).
LONG_INFER = np.full((1, 1600), -2.0)
LONG_TRAIN = LONG_INFER + np.concatenate([np.ones(800), -np.ones(800)])[None, :]
# Log-probabilities as low as -1000 (a response's summed log-probability is that low all the
# time), with ratios near 1. exp() of anything below about -745 is 0 in float64.
LOW_INFER = np.array(
    [[-1000.0, -2.0, -900.0, -760.0, -0.5, -1000.0], [-3.0, -800.0, -1000.0, -1.0, -999.0, -750.0]]
)
LOW_LOG_W = np.array([[0.25, -0.5, 0.1, -0.25, 0.5, -0.1], [0.3, 0.2, -0.2, -0.3, 0.05, -0.45]])
LOW_TRAIN = LOW_INFER + LOW_LOG_W
UNDERFLOW = np.log(np.nextafter(0, 1)) - np.log(2)  # -745.1: exp() below it is 0 in float64
for _table in (W, LOGP_INFER, LOGP_TRAIN, LONG_INFER, LONG_TRAIN, LOW_INFER, LOW_LOG_W, LOW_TRAIN):
    _table.setflags(write=False)  # code that changes its inputs in place fails at once


def weights(tis, scheme, C=2.0, logp_train=LOGP_TRAIN, logp_infer=LOGP_INFER):
    try:
        with np.errstate(all="ignore"):
            return tis.importance_weights(logp_train, logp_infer, scheme, C)
    except ValueError as error:
        if "read-only" not in str(error):
            raise
        raise AssertionError(  # the tables above are read-only on purpose
            f'importance_weights(..., "{scheme}") tried to change its input logp_train or '
            "logp_infer in place (e.g. with -=); compute a new array instead"
        ) from None


MISTAKES_3A = KnownMistakes(
    "3a",
    [
        Mistake(
            "ratio upside down: w = pi_train / pi_infer = exp(logp_train - logp_infer)",
            "ratio upside down (inferred over trained)",
        ),
        Mistake(
            "computed the ratio as exp(logp_train) / exp(logp_infer); exponentiate the "
            "difference instead, exp(logp_train - logp_infer)",
            "ratio of exponentials (linear space): 0/0 at very low log-probabilities",
        ),
        Mistake("returned log-weights; exponentiate them", "returned the log-weights"),
        Mistake(
            "max where min is due: TIS keeps min(w, C), raising no weight",
            "max instead of min (raised every weight to C)",
        ),
        Mistake(
            "clipped from below as well; TIS only caps large weights",
            "clipped from below as well as above",
        ),
        Mistake("ignored C (used 2)", "ignored C (always 2)"),
        Mistake(
            "capped log w at C; in log space the cap is log C", "capped log w at C instead of log C"
        ),
        Mistake(
            "truncated each token inside the product; truncate the product once",
            "truncated each token inside the sequence product",
        ),
        Mistake(
            "running product; every token gets the full product",
            "running product instead of the whole product",
        ),
        Mistake(
            "geometric mean of the ratios; sequence IS uses their product",
            "geometric mean of the ratios instead of their product",
        ),
        Mistake(
            "multiplied over the wrong axis (the batch); multiply over the tokens of each sequence",
            "summed the log-ratios over the batch axis",
        ),
        Mistake(
            "overflow: the ratios were multiplied as they are; multiply them by summing their"
            " logs, then exponentiate once",
            "multiplied ratios directly (overflow), not in log space",
        ),
        Mistake('"token_tis" not truncated', "token_tis not truncated"),
        Mistake('"seq_tis" not truncated', "seq_tis not truncated"),
        Mistake('"none" must give weight 1 on every token, not 0', '"none" gives zero weights'),
    ],
    probes=lambda: (
        [(LOGP_TRAIN, LOGP_INFER, scheme, C) for scheme in SCHEMES for C in (2.0, 1.5)]
        + [(LONG_TRAIN, LONG_INFER, scheme, 2.0) for scheme in SCHEMES]
        + [(LOW_TRAIN, LOW_INFER, scheme, 2.0) for scheme in SCHEMES]
        + [(EXTREME_TRAIN, EXTREME_INFER, scheme, 2.0) for scheme in SCHEMES]
        + [(*near_c(C), scheme, C) for C in NEAR_C for scheme in ("token_tis", "seq_tis")]
        + [
            (lt, li, scheme, 2.0)
            for lt, li in corners(LOGP_TRAIN, LOGP_INFER)
            for scheme in SCHEMES
        ]
        + [(lt, li, scheme, C) for _, lt, li, scheme, C in random_ratios(random_inputs(6), 150)]
        + [
            (lt, li, scheme, C)
            for _, lt, li, scheme, C in random_ratios(
                np.random.default_rng([grading.test_seed(), 106]), 150, low=-1000.0
            )
        ]
    ),
    observe=lambda importance_weights, args: call_quietly(importance_weights, args),
)


def call_quietly(function, args):
    """function(*args) on copies of args, with numpy's overflow warnings off."""
    with np.errstate(all="ignore"):
        return feedback.call(function, args)


def test_task3a_none_is_all_ones(tis):
    check(
        weights(tis, "none"),
        np.ones((4, 3)),
        'importance_weights(..., "none")',
        MISTAKES_3A.about(tis.importance_weights),
    )


def test_task3a_token_ratio(tis):
    check(
        weights(tis, "token"),
        W,
        'importance_weights(..., "token") on the ratios W',
        MISTAKES_3A.about(tis.importance_weights),
    )


def test_task3a_token_tis_caps_from_above(tis):
    hint = MISTAKES_3A.about(tis.importance_weights)
    check(
        weights(tis, "token_tis"),
        answer("weights_of_ratios", W, "token_tis", 2.0),
        'importance_weights(..., "token_tis", C=2)',
        hint,
    )
    check(
        weights(tis, "token_tis", C=1.5),
        answer("weights_of_ratios", W, "token_tis", 1.5),
        "the same with C = 1.5",
        hint,
    )


def test_task3a_sequence_product(tis):
    check(
        weights(tis, "seq"),
        answer("weights_of_ratios", W, "seq", 2.0),
        'importance_weights(..., "seq"): prod_t w_t on every token',
        MISTAKES_3A.about(tis.importance_weights),
    )


def test_task3a_sequence_tis(tis):
    check(
        weights(tis, "seq_tis"),
        answer("weights_of_ratios", W, "seq_tis", 2.0),
        'importance_weights(..., "seq_tis", C=2)',
        MISTAKES_3A.about(tis.importance_weights),
    )


def test_task3a_long_sequences_in_log_space(tis):
    for scheme in ("seq", "seq_tis"):
        check(
            weights(tis, scheme, 2.0, LONG_TRAIN, LONG_INFER),
            np.ones((1, 1600)),
            f'importance_weights(..., "{scheme}") on a 1,600-token sequence whose ratios '
            "multiply to 1 (their running product passes e**709, float64's largest)",
            MISTAKES_3A.about(tis.importance_weights),
        )


def where_it_broke(got, expected, logp_train=LOW_TRAIN, logp_infer=LOW_INFER):
    """For a failure on very low log-probabilities: which weights came out NaN, inf or 0
    where they should not, and whether exp() underflows there ('' if none did)."""
    if got is None or np.shape(got) != np.shape(expected):
        return ""
    with np.errstate(all="ignore"):
        got = np.asarray(got, dtype=float)
        broken = ~np.isfinite(got) | ((got == 0) & (expected != 0))
    if not broken.any():
        return ""
    places = [tuple(int(i) for i in place) for place in np.argwhere(broken)]
    text = (
        f"\n  {len(places)} weights came out NaN, inf or 0 where they should not, at "
        f"(sequence, token) "
        f"{', '.join(map(str, places[:6]))}{', ...' if len(places) > 6 else ''}"
    )
    low = np.minimum(logp_train, logp_infer) < UNDERFLOW
    if all(low[place] for place in places):
        text += ": each is a token whose log-probability is below -745"
    elif all(low[row].any() for row, _ in places):
        text += ": each is in a sequence holding a log-probability below -745"
    else:
        return text
    return (
        text + ", where exp() gives 0 in float64 and a ratio exp(logp_train) / "
        "exp(logp_infer) is 0/0. Work in log space: exp(logp_train - logp_infer)"
    )


def test_task3a_very_low_log_probabilities(tis):
    for scheme in SCHEMES:
        got = weights(tis, scheme, 2.0, LOW_TRAIN, LOW_INFER)
        expected = answer("weights_of_log_ratios", LOW_LOG_W, scheme, 2.0)
        check(
            got,
            expected,
            f'importance_weights(..., "{scheme}") on log-probabilities from '
            "-1000 to -0.5 with ratios near 1 (LOW_TRAIN, LOW_INFER)",
            MISTAKES_3A.about(tis.importance_weights),
            where_it_broke,
        )


def test_task3a_keeps_the_shape(tis):
    rng = np.random.default_rng(0)
    logp = np.log(rng.uniform(0.1, 1, size=(5, 7)))
    for scheme in SCHEMES:
        got = np.shape(weights(tis, scheme, logp_train=logp, logp_infer=logp))
        assert got == (5, 7), (
            f'importance_weights(..., "{scheme}") on (N, T) = (5, 7) inputs must return a (5, 7) '
            f"array (one weight per token), got shape {got}"
        )


def random_ratios(rng, n, low=None):
    """n random (log_w, logp_train, logp_infer, scheme, C), small arrays first: ratios from
    e**-3 to e**3, pi_infer from 0.05 to 1 (or log-probabilities from `low` to 0)."""
    cases = []
    for _ in range(n):
        N, T = int(rng.integers(1, 5)), int(rng.integers(1, 5))
        log_w = rng.integers(-6, 7, size=(N, T)) / 2  # ratios from e**-3 to e**3
        scheme, C = SCHEMES[rng.integers(len(SCHEMES))], [1.0, 1.5, 2.0, 4.0][rng.integers(4)]
        cases.append((log_w, scheme, C))
    cases.sort(key=lambda case: case[0].size)
    with_logs = []
    for log_w, scheme, C in cases:
        logp_infer = (
            np.log(rng.uniform(0.05, 1.0, size=log_w.shape))
            if low is None
            else rng.uniform(low, 0.0, size=log_w.shape)
        )
        with_logs.append((log_w, logp_infer + log_w, logp_infer, scheme, C))
    return with_logs


def unchanged(function, inputs, call_it):
    """Call call_it(); then assert the arrays in `inputs` ({name: array}) are as before."""
    before = {name: array.copy() for name, array in inputs.items()}
    result = call_it()
    for name, array in inputs.items():
        assert np.array_equal(array, before[name]), (
            f"{function} changed its argument {name} in place (e.g. with -= or *=); "
            "compute a new array and leave the inputs as they were"
        )
    return result


def test_task3a_random_ratios(tis):
    cases = random_ratios(random_inputs(6), 150)
    got = [
        unchanged(
            "importance_weights",
            dict(logp_train=lt, logp_infer=li),
            lambda: tis.importance_weights(lt, li, built(scheme), C),
        )
        for _, lt, li, scheme, C in cases
    ]

    def shown(case):
        log_w, _, _, scheme, C = case
        return (
            f"importance_weights(..., {scheme!r}, C={C}) with logp_train - logp_infer = "
            f"{log_w.tolist()}"
        )

    check_cases(
        cases,
        got,
        answers("weights_of_log_ratios", [(log_w, scheme, C) for log_w, _, _, scheme, C in cases]),
        "importance_weights on random log-ratios",
        "the five schemes of the docstring, from log_w = logp_train - logp_infer "
        "(scheme is a string built at run time: compare it with ==)",
        MISTAKES_3A.about(tis.importance_weights),
        shown,
    )


# Log-ratios (multiples of 1/4, so every difference and sum below is exact) whose weights
# span float64: e**-700 to e**700 per token and per sequence, e**709.5 (finite), e**710
# (past e**709.78: inf for "seq", the honest answer; C for "seq_tis") and e**-1000 (0).
EXTREME_LOG_W = np.array(
    [
        [700.0, -700.0, 350.0, -350.0],  # sequence ratio 1
        [175.0, 175.0, 175.0, 175.0],  # e**700
        [-175.0, -175.0, -175.0, -175.0],  # e**-700
        [709.5, 0.0, 0.0, 0.0],  # e**709.5
        [355.0, 355.0, 0.0, 0.0],  # e**710: inf
        [-250.0, -250.0, -250.0, -250.0],  # e**-1000: 0
        [20.25, 0.5, -0.25, 0.0],
    ]
)  # e**20.5
EXTREME_INFER = np.minimum(0.0, -EXTREME_LOG_W) - 1.0  # log-probabilities from -1000 to -1
EXTREME_TRAIN = EXTREME_INFER + EXTREME_LOG_W
# One token each, at and around log C (C = 1.5, 2, 4): exactly on it, one rounding step and
# 1e-9 either side, and far above and below.
NEAR_C = {
    C: np.log(C)
    + np.array([[0.0], [-1e-9], [1e-9], [-1e-15], [1e-15], [700.0], [1000.0], [-700.0]])
    for C in (1.5, 2.0, 4.0)
}
for _table in (EXTREME_LOG_W, EXTREME_INFER, EXTREME_TRAIN, *NEAR_C.values()):
    _table.setflags(write=False)


def test_task3a_weights_from_e_minus_700_to_e_700(tis):
    hint = MISTAKES_3A.about(tis.importance_weights)
    assert np.array_equal(EXTREME_TRAIN - EXTREME_INFER, EXTREME_LOG_W)  # (the tables are exact)
    for scheme in SCHEMES:
        expected = answer("weights_of_log_ratios", EXTREME_LOG_W, scheme, 2.0)
        check(
            weights(tis, scheme, 2.0, EXTREME_TRAIN, EXTREME_INFER),
            expected,
            f'importance_weights(..., "{scheme}", C=2) on log-ratios from -700 to 709.5 per '
            "token, sequence sums 0, 700, -700, 709.5, 710 (e**710 is inf in float64), -1000 "
            "and 20.5 (EXTREME_LOG_W), to 1e-12 relative",
            hint,
            tolerance=ROUNDING,
        )


def near_c(C):
    """(logp_train, logp_infer) of NEAR_C[C]'s one-token responses, at log-probability -1000."""
    logp_infer = np.full_like(NEAR_C[C], -1000.0)
    logp_train = logp_infer + NEAR_C[C]
    for table in (logp_train, logp_infer):
        table.setflags(write=False)  # (a change in place is named, as for the tables above)
    return logp_train, logp_infer


def test_task3a_truncation_exact_at_and_around_C(tis):
    hint = MISTAKES_3A.about(tis.importance_weights)
    for C in NEAR_C:
        logp_train, logp_infer = near_c(C)
        for scheme in ("token_tis", "seq_tis"):
            expected = answer("importance_weights", logp_train, logp_infer, scheme, C)
            check(
                weights(tis, scheme, C, logp_train, logp_infer),
                expected,
                f'importance_weights(..., "{scheme}", C={C}) on one-token responses with '
                "log-ratios log C, log C -+ 1e-9, -+ 1e-15, log C + 700, + 1000 and - 700, "
                "to 1e-12 relative",
                hint,
                tolerance=ROUNDING,
            )


def corners(logp_train, logp_infer):
    """The (N, T) = (1, 1), (1, 3) and (4, 1) corners of two log-probability arrays, as
    (logp_train, logp_infer) pairs: where a squeeze, a scalar or a list slips in."""
    return [(logp_train[:N, :T], logp_infer[:N, :T]) for N, T in ((1, 1), (1, 3), (4, 1))]


def test_task3a_float64_arrays_for_one_sequence_or_one_token(tis):
    # N = 1 or T = 1 is where a squeeze, a scalar or a list slips in; the check above
    # importance_weights refuses any answer that is not an (N, T) array of float64.
    hint = MISTAKES_3A.about(tis.importance_weights)
    for logp_train, logp_infer in corners(LOGP_TRAIN, LOGP_INFER):
        for scheme in SCHEMES:
            check(
                weights(tis, scheme, 2.0, logp_train, logp_infer),
                answer("importance_weights", logp_train, logp_infer, scheme, 2.0),
                f'importance_weights(..., "{scheme}") on (N, T) = {logp_train.shape} inputs '
                "(the first rows and columns of LOGP_TRAIN, LOGP_INFER)",
                hint,
            )


# ---------------------------------------------------------------- Task 3b


def random_batches(rng, n):
    """n random (rewards, grad_logp, weights) of small whole or half numbers, small first."""
    cases = []
    for _ in range(n):
        N, T, D = (int(x) for x in rng.integers(1, 4, size=3))
        cases.append(
            (
                rng.integers(-2, 3, size=N).astype(float),
                rng.integers(-2, 3, size=(N, T, D)).astype(float),
                np.array([0.0, 0.5, 1.0, 2.0])[rng.integers(4, size=(N, T))],
            )
        )
    return sorted(cases, key=lambda case: case[1].size)


def worked_example():
    """pg_estimate's docstring example: (rewards, grad_logp, weights), fresh arrays."""
    return np.array([3.0]), np.array([[[1.0], [3.0]]]), np.array([[1.0, 0.5]])


def loop_batch():
    """A fixed random batch of (N, T, D) = (4, 3, 2), fresh arrays."""
    rng = np.random.default_rng(3)
    return rng.normal(size=4), rng.normal(size=(4, 3, 2)), rng.uniform(0, 2, (4, 3))


MISTAKES_3B = KnownMistakes(
    "3b",
    [
        Mistake(
            "summed over the batch; average over the N sequences",
            "summed over the batch instead of averaging",
        ),
        Mistake("ignored the weights", "ignored the weights"),
        Mistake(
            "averaged over tokens; the tokens of a sequence are summed",
            "averaged over tokens instead of summing",
        ),
        Mistake("ignored the rewards", "ignored the rewards"),
        Mistake("squared the weights", "squared the weights"),
        Mistake(
            "subtracted the mean reward (a GRPO baseline); pg_estimate uses the rewards as "
            "they are",
            "subtracted the mean reward (a GRPO baseline)",
        ),
        Mistake(
            "summed over the batch and averaged over the tokens: the axes are swapped",
            "summed over the batch and averaged over the tokens (axes swapped)",
        ),
    ],
    probes=lambda: (
        [worked_example(), loop_batch()]
        + small_sizes()
        + random_batches(random_inputs(7), 150)
        + random_batches(np.random.default_rng([grading.test_seed(), 107]), 150)
    ),
)


def test_task3b_worked_example(tis):
    check(
        tis.pg_estimate(*worked_example()),
        [7.5],
        "pg_estimate(r=[3], grad_logp=[[[1], [3]]], weights=[[1, 0.5]])",
        MISTAKES_3B.about(tis.pg_estimate),
    )


def test_task3b_matches_a_loop(tis):
    check(
        tis.pg_estimate(*loop_batch()),
        answer("pg_estimate_by_loop", *loop_batch()),
        "pg_estimate on random (N, T, D) = (4, 3, 2) inputs vs a plain loop",
        MISTAKES_3B.about(tis.pg_estimate),
    )


def check_batches(tis, cases, what):
    got = [
        unchanged(
            "pg_estimate", dict(rewards=r, grad_logp=g, weights=w), lambda: tis.pg_estimate(r, g, w)
        )
        for r, g, w in cases
    ]

    def shown(case):
        r, g, w = case
        return f"pg_estimate(rewards={r.tolist()}, grad_logp={g.tolist()}, weights={w.tolist()})"

    check_cases(
        cases,
        got,
        answers("pg_estimate", cases),
        what,
        "g = (1/N) sum_n r_n sum_t w_nt * grad_logp_nt",
        MISTAKES_3B.about(tis.pg_estimate),
        shown,
    )


def test_task3b_random_batches(tis):
    check_batches(tis, random_batches(random_inputs(7), 150), "pg_estimate on random batches")


def small_sizes():
    """Random (rewards, grad_logp, weights) with N, T or D = 1, fresh arrays."""
    rng = np.random.default_rng(5)
    return [
        (rng.normal(size=N), rng.normal(size=(N, T, D)), rng.uniform(0, 2, size=(N, T)))
        for N, T, D in ((1, 1, 1), (1, 3, 2), (2, 1, 1), (3, 2, 1), (1, 1, 4))
    ]


def test_task3b_float64_array_for_every_size(tis):
    # N = 1, T = 1 and D = 1 are where a squeeze or a scalar slips in; the check above
    # pg_estimate refuses any answer that is not a (D,) array of float64.
    for args in small_sizes():
        N, T, D = args[1].shape
        expected = answer("pg_estimate_by_loop", *args)  # (before the call: it gets the arrays)
        check(
            tis.pg_estimate(*args),
            expected,
            f"pg_estimate on (N, T, D) = {(N, T, D)} inputs vs a plain loop",
            MISTAKES_3B.about(tis.pg_estimate),
            tolerance=ROUNDING,
        )


# ---------------------------------------------------------------- Task 3: the chapter's claims


def tis_culprit(tis):
    """For a failed claim: which of importance_weights and pg_estimate breaks its formula
    (on fixed inputs), with the likely mistake if one is certain; "" if neither."""
    rng = np.random.default_rng(0)
    log_w = rng.integers(-6, 7, size=(3, 4)) / 2
    logp_infer = np.log(rng.uniform(0.05, 1.0, size=log_w.shape))
    function, task = "importance_weights", "3a"
    try:
        got = [
            tis.importance_weights(logp_infer + log_w, logp_infer, scheme, 1.5)
            for scheme in SCHEMES
        ]
        check_cases(
            [
                f"importance_weights(..., {scheme!r}, C=1.5) with logp_train - logp_infer = "
                f"{log_w.tolist()}"
                for scheme in SCHEMES
            ],
            got,
            answers("weights_of_log_ratios", [(log_w, scheme, 1.5) for scheme in SCHEMES]),
            "importance_weights",
            "the five schemes of the docstring",
            MISTAKES_3A.about(tis.importance_weights),
        )
        function, task = "pg_estimate", "3b"
        check_batches(tis, random_batches(rng, 50), "pg_estimate")
    except Exception as error:  # noqa: BLE001 (any failure points at that function)
        return f"\n  The cause is in {function} (run pytest -k task{task}): " + str(error).replace(
            "\n  ", "\n    "
        )
    return ""


def claim(holds, message, tis):
    """Assert one of the chapter's claims; on failure, point at the function at fault."""
    if not holds:
        raise AssertionError(message + tis_culprit(tis))


# exact_stats's answers, kept as RUNS (above) keeps runs: several claims need the same one,
# and each takes some 5 ms.
STATS = {}


def exact_stats(tis, scheme, mismatch, C=2.0, batch_size=64):
    """Exact bias, variance and RMSE of Task 3's estimator on the toy (toy.exact_stats),
    worked out once per session for these functions and arguments (an error every time)."""
    key = (tis.importance_weights, tis.pg_estimate, scheme, mismatch, C, batch_size)
    if key not in STATS:
        STATS[key] = toy.exact_stats(
            tis.importance_weights, tis.pg_estimate, scheme, mismatch, C, batch_size
        )
    return dict(STATS[key])


def test_task3_no_mismatch_no_bias(tis):
    stats = {s: exact_stats(tis, s, 0.0) for s in SCHEMES}
    for scheme, s in stats.items():
        claim(
            s["bias"] < 1e-12,
            f'with mismatch 0 every weight is 1, so "{scheme}" must be '
            f"unbiased; bias {s['bias']:.3g}",
            tis,
        )
        claim(
            same(s["variance"], stats["none"]["variance"], KIND["3"]),
            f'with mismatch 0 the variance of "{scheme}" must equal that of "none": '
            f"{s['variance']!r} vs {stats['none']['variance']!r}",
            tis,
        )


def test_task3_naive_bias_grows_linearly(tis):
    bias = {m: exact_stats(tis, "none", m)["bias"] for m in (0.1, 0.2, 0.4)}
    claim(
        bias[0.1] > 0.01, f'"none" ignores the mismatch, so it is biased; bias {bias[0.1]:.3g}', tis
    )
    for m in (0.1, 0.2):
        claim(
            1.8 < bias[2 * m] / bias[m] < 2.3,
            f"the naive bias should about double when the mismatch doubles: "
            f"{bias[m]:.4f} at {m}, {bias[2 * m]:.4f} at {2 * m}",
            tis,
        )


def test_task3_batch_size_shrinks_variance_not_bias(tis):
    small, large = (
        exact_stats(tis, "none", 0.6, batch_size=1),
        exact_stats(tis, "none", 0.6, batch_size=64),
    )
    claim(
        same(large["bias"], small["bias"], KIND["3"]),
        f"the naive bias must be the same with "
        f"batch 64 and batch 1 (bias does not average away): {large['bias']!r} vs "
        f"{small['bias']!r}",
        tis,
    )
    claim(
        same(large["variance"], small["variance"] / 64, KIND["3"]),
        f"variance with batch 64 "
        f"must be the variance with batch 1 / 64: {large['variance']!r} vs "
        f"{small['variance'] / 64!r}",
        tis,
    )


def test_task3_sequence_is_unbiased_but_noisy(tis):
    for m in (0.3, 0.6, 1.0):
        bias = exact_stats(tis, "seq", m)["bias"]
        claim(
            bias < 1e-9,
            f"sequence IS is exactly unbiased, but bias = {bias:.3g} at mismatch {m}",
            tis,
        )
    growth = exact_stats(tis, "seq", 1.0)["variance"] / exact_stats(tis, "seq", 0.0)["variance"]
    naive = exact_stats(tis, "none", 1.0)["variance"] / exact_stats(tis, "none", 0.0)["variance"]
    claim(
        growth > 50 and naive < 2,
        f"sequence IS variance should explode with the mismatch (x{growth:.1f} from 0 to 1.0) "
        f"while the naive one barely moves (x{naive:.2f})",
        tis,
    )


def test_task3_truncation_wins_at_large_mismatch(tis):
    rmse = {s: exact_stats(tis, s, 0.6)["rmse"] for s in SCHEMES}
    truncated = max(rmse["token_tis"], rmse["seq_tis"])
    others = min(rmse["none"], rmse["token"], rmse["seq"])
    shown = ", ".join(f"{s} {v:.4f}" for s, v in rmse.items())
    claim(
        truncated < others,
        f"at mismatch 0.6 the truncated estimators should have the lowest RMSE; got {shown}",
        tis,
    )


def test_task3_best_C_is_inside_the_sweep(tis):
    Cs = (1.0, 1.25, 1.5, 2.0, 4.0, 10.0)
    rmse = [exact_stats(tis, "token_tis", 0.6, C)["rmse"] for C in Cs]
    best_C = Cs[rmse.index(min(rmse))]
    claim(
        1.0 < best_C < 10.0,
        f"the RMSE of token_tis at mismatch 0.6 should be lowest strictly inside C = 1..10, "
        f"got best C = {best_C} (RMSE {rmse})",
        tis,
    )


# ---------------------------------------------------------------- Task 3c (optional): masking

# Four responses of three tokens; the ratios w_t = pi_train / pi_infer are
RATIOS = np.array(
    [
        [4.0, 0.5, 1.0],  # product 2 (on the band's upper edge: kept)
        [2.0, 2.0, 0.25],  # product 1
        [3.0, 3.0, 1.0],  # product 9 (above the band)
        [0.25, 0.5, 1.0],
    ]
)  # product 1/8 (below the band)
# (chosen so that logp_train - logp_infer is exactly log(RATIOS): the edges are exact)
MASK_INFER = np.log([[0.1, 0.4, 0.1], [0.2, 0.2, 0.2], [0.1, 0.1, 0.1], [0.2, 0.4, 0.1]])
MASK_TRAIN = MASK_INFER + np.log(RATIOS)
# 1,600 tokens. Response 1: 800 ratios e, then 800 ratios 1/e (product 1, but the running
# product reaches e**800, beyond float64's largest number, ~e**709). Response 2: every
# ratio e**0.5 (product e**800: rejected; geometric mean e**0.5: kept).
LONG_MASK_INFER = np.full((2, 1600), -2.0)
LONG_MASK_TRAIN = LONG_MASK_INFER + np.stack([np.repeat([1.0, -1.0], 800), np.full(1600, 0.5)])
for _table in (RATIOS, MASK_INFER, MASK_TRAIN, LONG_MASK_INFER, LONG_MASK_TRAIN):
    _table.setflags(write=False)


def random_masks(rng, n):
    """n random (logp_train, logp_infer, level, low, high): ratios that are powers of 2 from
    1/8 to 8, so products and band edges often meet exactly."""
    cases = []
    for _ in range(n):
        N, T = int(rng.integers(1, 4)), int(rng.integers(1, 5))
        logp_infer = np.log(np.array([0.1, 0.2, 0.4])[rng.integers(3, size=(N, T))])
        log_ratios = np.log(2.0) * rng.integers(-3, 4, size=(N, T))
        low, high = [(0.5, 2.0), (0.7, 1.5), (0.25, 4.0), (0.0, 2.0), (0.2, 3.5)][rng.integers(5)]
        level = MASK_LEVELS[rng.integers(len(MASK_LEVELS))]
        cases.append((logp_infer + log_ratios, logp_infer, level, low, high))
    return cases


def level_statistic(log_w, level):
    """The log of what masked_weights tests on each token: its ratio, or the product or the
    geometric mean of its response's ratios (one column, which broadcasts to every token)."""
    if level == "token":
        return log_w
    return (log_w.sum if level == "seq" else log_w.mean)(axis=1, keepdims=True)


def random_bands(rng, n):
    """n random (logp_train, logp_infer, level, low, high), small first. Every tested ratio
    is at least 0.1% away from the band's edges (so no rounding decides a case), and in
    about half the cases one lies just outside an edge, by 0.1% to 2%."""
    cases = []
    while len(cases) < n:
        N, T = int(rng.integers(1, 4)), int(rng.integers(1, 5))
        level = MASK_LEVELS[rng.integers(len(MASK_LEVELS))]
        low, high = [(0.5, 2.0), (0.7, 1.5), (0.25, 4.0), (0.2, 3.5)][rng.integers(4)]
        log_w = rng.normal(0.0, 0.6, size=(N, T))
        if rng.random() < 0.5:  # move response 0 (or its last token) just past an edge
            edge = np.log([low, high][rng.integers(2)])
            step = np.sign(edge) * rng.uniform(1e-3, 2e-2)
            shift = edge + step - level_statistic(log_w, level)[0, -1]
            log_w[0, -1 if level == "token" else slice(None)] += (
                shift if level != "seq" else shift / T
            )
        statistic = level_statistic(log_w, level)
        if np.min(np.abs(statistic[..., None] - np.log([low, high]))) < 1e-3:
            continue
        logp_infer = np.log(rng.uniform(0.05, 1.0, size=(N, T)))
        cases.append((logp_infer + log_w, logp_infer, level, low, high))
    return sorted(cases, key=lambda case: case[0].size)


MISTAKES_3C = KnownMistakes(
    "3c",
    [
        Mistake(
            "rejected the ratios on the band's edges (low and high); the band includes them",
            "band without its edges (< instead of <=)",
        ),
        Mistake(
            "clipped into the band; masking sets a ratio outside the band to 0",
            "clipped into the band instead of masking",
        ),
        Mistake(
            "returned the 0/1 mask; keep the ratio where it is 1",
            "returned the 0/1 mask, not the kept ratios",
        ),
        Mistake("ratio upside down: w = exp(logp_train - logp_infer)", "ratio upside down"),
        Mistake(
            "ignored low: ratios below the band are rejected too", "no lower bound (ignored low)"
        ),
        Mistake(
            "ignored high: ratios above the band are rejected too", "no upper bound (ignored high)"
        ),
        Mistake("ignored low and high (used 0.5 and 2)", "ignored low and high (always 0.5 and 2)"),
        Mistake(
            "masked each token; the sequence level tests the product of the response's "
            "ratios, once",
            "sequence level masks each token on its own",
        ),
        Mistake(
            'used the product at level "geo"; it takes the T-th root (the mean of the log-ratios)',
            "geometric level uses the product",
        ),
        Mistake(
            "arithmetic mean of the ratios; the geometric mean is exp(mean of log-ratios)",
            "geometric level uses the arithmetic mean of the ratios",
        ),
        Mistake(
            'used the geometric mean at level "seq"; that is level "geo"',
            "sequence level uses the geometric mean",
        ),
        Mistake(
            "overflow: the running product passed e**709; add the log-ratios, compare the sum"
            " with log(low) and log(high), exponentiate only what you keep",
            "multiplied ratios directly (overflow), not in log space",
        ),
    ],
    probes=lambda: (
        [
            (MASK_TRAIN, MASK_INFER, level, low, high)
            for level in MASK_LEVELS
            for low, high in ((0.5, 2.0), (0.7, 1.5), (0.2, 3.5), (0.0, 2.0))
        ]
        + [(LONG_MASK_TRAIN, LONG_MASK_INFER, level) for level in MASK_LEVELS]
        + [(LOW_TRAIN, LOW_INFER, level) for level in MASK_LEVELS]
        + [(EDGE_TRAIN, EDGE_INFER, level, EDGE_LOW, EDGE_HIGH) for level in MASK_LEVELS]
        + [(TINY_LOG_W, TINY_INFER, level, 0.0, 2.0) for level in MASK_LEVELS]
        + [(lt, li, level) for lt, li in corners(MASK_TRAIN, MASK_INFER) for level in MASK_LEVELS]
        + random_bands(random_inputs(8), 150)
        + random_masks(np.random.default_rng([grading.test_seed(), 108]), 300)
    ),
    observe=lambda masked_weights, args: call_quietly(masked_weights, args),
)


def test_task3c_token_mask_keeps_the_band(tis):
    check(
        tis.masked_weights(MASK_TRAIN, MASK_INFER, "token"),
        answer("masked_ratios", RATIOS, "token", 0.5, 2.0),
        'masked_weights(..., "token") on the ratios RATIOS, band [0.5, 2]',
        MISTAKES_3C.about(tis.masked_weights),
    )


def test_task3c_sequence_mask_rejects_whole_responses(tis):
    check(
        tis.masked_weights(MASK_TRAIN, MASK_INFER, "seq"),
        answer("masked_ratios", RATIOS, "seq", 0.5, 2.0),
        'masked_weights(..., "seq"), band [0.5, 2]: the product of the ratios on every token',
        MISTAKES_3C.about(tis.masked_weights),
    )


def test_task3c_geometric_mean_level(tis):
    check(
        tis.masked_weights(MASK_TRAIN, MASK_INFER, "geo", low=0.7, high=1.5),
        answer("masked_ratios", RATIOS, "geo", 0.7, 1.5),
        'masked_weights(..., "geo", low=0.7, high=1.5): (prod_t w_t)**(1/T) on every token',
        MISTAKES_3C.about(tis.masked_weights),
    )


def test_task3c_band_comes_from_low_and_high(tis):
    # no ratio sits on these edges, so this test is about which band, not about its edges
    hint = MISTAKES_3C.about(tis.masked_weights)
    check(
        tis.masked_weights(MASK_TRAIN, MASK_INFER, "token", low=0.2, high=3.5),
        answer("masked_ratios", RATIOS, "token", 0.2, 3.5),
        'masked_weights(..., "token", low=0.2, high=3.5)',
        hint,
    )
    with np.errstate(divide="ignore"):  # low = 0 is allowed: no lower bound
        got = tis.masked_weights(MASK_TRAIN, MASK_INFER, "seq", low=0.0, high=2.0)
    check(
        got,
        answer("masked_ratios", RATIOS, "seq", 0.0, 2.0),
        'masked_weights(..., "seq", low=0, high=2): an upper bound only, as in TRL',
        hint,
    )


# Three responses of one token, log-ratios -30, -700 and -740: weights 9.4e-14, 9.9e-305 and
# 4.2e-322 (a subnormal float64, still above 0). With low = 0 the band has no lower bound, so
# every one is kept; a floor put under low to dodge log(0) (1e-12, or float64's smallest
# normal number, 2.2e-308 = e**-708.4) rejects some of them. (Compared with no absolute
# tolerance: 9.4e-14 is not 0.)
TINY_LOG_W = np.array([[-30.0], [-700.0], [-740.0]])
TINY_INFER = np.zeros_like(TINY_LOG_W)
for _table in (TINY_LOG_W, TINY_INFER):
    _table.setflags(write=False)


def test_task3c_low_0_keeps_the_smallest_ratios(tis):
    hint = MISTAKES_3C.about(tis.masked_weights)
    for level in MASK_LEVELS:
        with np.errstate(divide="ignore"):  # low = 0: log(0) is -inf
            got = tis.masked_weights(TINY_LOG_W, TINY_INFER, level, low=0.0)
        check(
            got,
            np.exp(TINY_LOG_W),
            f'masked_weights(..., "{level}", low=0) on one-token responses with log-ratios '
            "-30, -700 and -740 (TINY_LOG_W): low = 0 means no lower bound, so each weight "
            "is kept, however small",
            hint,
            tolerance=NO_FLOOR,
        )


def test_task3c_long_responses_in_log_space(tis):
    ones, zeros = np.ones(1600), np.zeros(1600)
    hint = MISTAKES_3C.about(tis.masked_weights)
    with np.errstate(all="ignore"):
        got = {
            level: tis.masked_weights(LONG_MASK_TRAIN, LONG_MASK_INFER, level)
            for level in ("seq", "geo")
        }
    check(
        got["seq"],
        np.stack([ones, zeros]),
        'masked_weights(..., "seq") on two 1,600-token responses (products 1 and e**800)',
        hint,
    )
    check(
        got["geo"],
        np.stack([ones, np.full(1600, np.exp(0.5))]),
        'masked_weights(..., "geo") on the same responses (geometric means 1 and e**0.5)',
        hint,
    )


def test_task3c_very_low_log_probabilities(tis):
    for level in MASK_LEVELS:
        with np.errstate(all="ignore"):
            got = tis.masked_weights(LOW_TRAIN, LOW_INFER, level)
        expected = answer("masked_weights", LOW_TRAIN, LOW_INFER, level)
        check(
            got,
            expected,
            f'masked_weights(..., "{level}") on log-probabilities from -1000 to '
            "-0.5 with ratios near 1, all inside the band (LOW_TRAIN, LOW_INFER)",
            MISTAKES_3C.about(tis.masked_weights),
            where_it_broke,
        )


def test_task3c_random_bands(tis):
    cases = random_bands(random_inputs(8), 150)
    expected = answers("masked_weights", cases)  # (before the calls: they get the arrays)
    with np.errstate(divide="ignore"):
        got = [
            tis.masked_weights(lt, li, built(level), low, high)
            for lt, li, level, low, high in cases
        ]

    def shown(case):
        lt, li, level, low, high = case
        return (
            f"masked_weights(..., {level!r}, low={low}, high={high}) with logp_train - "
            f"logp_infer = {np.round(lt - li, 4).tolist()}"
        )

    check_cases(
        cases,
        got,
        expected,
        "masked_weights on random ratios",
        "keep the ratio (token), product (seq) or geometric mean (geo) where it lies "
        "in [low, high], else 0 (level is a string built at run time: compare it "
        "with ==)",
        MISTAKES_3C.about(tis.masked_weights),
        shown,
    )


# Ratios exactly on the edges of the band [0.35, 3] (the log-ratios are np.log(0.35) and
# np.log(3) exactly). In float64 exp(log 3) = 3.0000000000000004 > 3 and exp(log 0.35) < 0.35:
# a band compared in linear space, low <= exp(log w) <= high, rejects every ratio on an edge
# (6 tokens, 2 products, 2 geometric means here); the docstring compares in log space,
# log(low) <= log w <= log(high), and keeps them.
EDGE_LOW, EDGE_HIGH = 0.35, 3.0
EDGE_LOG_W = np.log(
    np.array([[EDGE_LOW, 1.0], [EDGE_HIGH, 1.0], [EDGE_HIGH, EDGE_HIGH], [EDGE_LOW, EDGE_LOW]])
)
EDGE_INFER = np.full_like(EDGE_LOG_W, -1.0)
EDGE_TRAIN = EDGE_INFER + EDGE_LOG_W
for _table in (EDGE_LOG_W, EDGE_INFER, EDGE_TRAIN):
    _table.setflags(write=False)


def test_task3c_band_edges_compared_in_log_space(tis):
    assert np.array_equal(EDGE_TRAIN - EDGE_INFER, EDGE_LOG_W)  # (the edges are exact)
    for level in MASK_LEVELS:
        check(
            tis.masked_weights(EDGE_TRAIN, EDGE_INFER, level, EDGE_LOW, EDGE_HIGH),
            answer("masked_weights", EDGE_TRAIN, EDGE_INFER, level, EDGE_LOW, EDGE_HIGH),
            f'masked_weights(..., "{level}", low={EDGE_LOW}, high={EDGE_HIGH}) on log-ratios '
            "exactly log(low), log(high) and 0 (EDGE_LOG_W): compare log w with log(low) and "
            "log(high); exp(log 3) is 3.0000000000000004 in float64",
            MISTAKES_3C.about(tis.masked_weights),
        )


def test_task3c_float64_arrays_for_one_response_or_one_token(tis):
    hint = MISTAKES_3C.about(tis.masked_weights)
    for train, infer in corners(MASK_TRAIN, MASK_INFER):
        for level in MASK_LEVELS:
            check(
                tis.masked_weights(train, infer, level),
                answer("masked_weights", train, infer, level),
                f'masked_weights(..., "{level}") on (N, T) = {train.shape} inputs (the first '
                "rows and columns of MASK_TRAIN, MASK_INFER)",
                hint,
            )


def test_task3c_keeps_the_shape(tis):
    logp = np.log(np.random.default_rng(0).uniform(0.1, 1, size=(5, 7)))
    for level in MASK_LEVELS:
        got = np.shape(tis.masked_weights(logp, logp, level))
        assert got == (5, 7), (
            f'masked_weights(..., "{level}") on (N, T) = (5, 7) inputs must return a (5, 7) '
            f"array (one weight per token), got shape {got}"
        )


def test_task3c_masking_tames_sequence_is(tis):
    # On the toy at mismatch 0.6: rejecting the responses whose sequence ratio leaves
    # [0.5, 2] removes the huge weights that make sequence IS noisy, at a small bias.
    def masked(logp_train, logp_infer, scheme, C):  # importance_weights' signature
        return tis.masked_weights(logp_train, logp_infer, "seq", 0.5, 2.0)

    mask = toy.exact_stats(masked, tis.pg_estimate, "seq_mask", 0.6)
    seq = exact_stats(tis, "seq", 0.6)
    clean = toy.exact_stats(masked, tis.pg_estimate, "seq_mask", 0.0)
    assert clean["bias"] < 1e-12, (
        f"with mismatch 0 every ratio is 1, inside the band, so nothing is masked and the "
        f"estimate is unbiased; got bias {clean['bias']:.3g}"
    )
    assert mask["rmse"] < seq["rmse"] / 2 and mask["bias"] > 0.01, (
        f"at mismatch 0.6 the sequence mask should cut sequence IS's RMSE at least in half "
        f"({mask['rmse']:.4f} vs {seq['rmse']:.4f}) and pay a bias for it "
        f"(bias {mask['bias']:.4f})"
    )


# Every task's known mistakes, for tools/check_release.py (which checks each hint's precision).
KNOWN_MISTAKES = {
    "1a": MISTAKES_1A,
    "1b": MISTAKES_1B,
    "1c": MISTAKES_1C,
    "2a": MISTAKES_2A,
    "2b": MISTAKES_2B,
    "3a": MISTAKES_3A,
    "3b": MISTAKES_3B,
    "3c": MISTAKES_3C,
}
