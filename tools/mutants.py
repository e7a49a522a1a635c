"""Plausible wrong answers ("mutants") that the tests must catch.

Each mutant is the reference file of its task with one piece replaced: `old`
must occur exactly once in solutions/<file>, and becomes `new`. The file is
the one lab.TASKS names for the task. tools/check_release.py runs each mutant
as if it were a student's file and requires that some test of its task fails.
A mutant has a hint when a known mistake in test_rl_systems.py (its Mistake's
`mutant`) names it: then check_release requires that the mutant behaves like
that mistake's model on every probe, and that every "Likely mistake" line it
gets is that mistake's, at least one. A mutant no mistake names gets no hint.
tools/near_misses.py holds wrong answers that must get no hint at all.
"""

from typing import NamedTuple


class Mutant(NamedTuple):
    task: str  # the (sub)task it gets wrong, e.g. "2b"
    mistake: str  # what a student did
    old: str
    new: str


RULE = "return n_started - n_dropped < (version + k + 1) * B"
KV_RETURN = (
    "return math.ceil(Fraction(2 * n_layers * n_kv_heads * head_dim * n_tokens) * per_value)"
)
SEQ_THEN_TRUNCATE = """\
    if scheme in ("seq", "seq_tis"):
        # one log-ratio per sequence, repeated on each of its tokens
        log_w = np.broadcast_to(log_w.sum(axis=1, keepdims=True), log_w.shape)
    if scheme in ("token_tis", "seq_tis"):
        log_w = np.minimum(log_w, np.log(C))
"""
TRUNCATE_THEN_SEQ = """\
    if scheme in ("token_tis", "seq_tis"):
        log_w = np.minimum(log_w, np.log(C))
    if scheme in ("seq", "seq_tis"):
        log_w = np.broadcast_to(log_w.sum(axis=1, keepdims=True), log_w.shape)
"""

MUTANTS = [
    # ---- Task 1: memory.py
    Mutant(
        "1a",
        "forgot the fp32 master weights (12 bytes per trained parameter)",
        "TRAINED_BYTES * n_trained",
        "12 * n_trained",
    ),
    Mutant(
        "1a", "kept frozen weights in fp32 (4 bytes)", "FROZEN_BYTES * n_frozen", "4 * n_frozen"
    ),
    Mutant("1a", "frozen parameters cost nothing", "+ FROZEN_BYTES * n_frozen", "+ 0 * n_frozen"),
    Mutant(
        "1a",
        "counted frozen parameters like trained ones",
        "FROZEN_BYTES * n_frozen",
        "TRAINED_BYTES * n_frozen",
    ),
    Mutant(
        "1a",
        "counted only the two Adam moments (8 bytes per trained parameter)",
        "TRAINED_BYTES * n_trained",
        "8 * n_trained",
    ),
    Mutant(
        "1a",
        "counted only the bf16 weight and gradient",
        "TRAINED_BYTES * n_trained",
        "4 * n_trained",
    ),
    Mutant(
        "1a",
        "counted trained parameters like frozen ones",
        "TRAINED_BYTES * n_trained",
        "FROZEN_BYTES * n_trained",
    ),
    Mutant(
        "1a",
        "returned a float number of bytes",
        "return int(TRAINED_BYTES",
        "return float(TRAINED_BYTES",
    ),
    Mutant(
        "1a",
        "float arithmetic (bytes lost past 2**53)",
        "return int(TRAINED_BYTES * n_trained",
        "return int(TRAINED_BYTES * float(n_trained)",
    ),
    Mutant(
        "1a",
        "int() on the trained bytes only (a float for a float n_frozen)",
        "return int(TRAINED_BYTES * n_trained + FROZEN_BYTES * n_frozen)",
        "return int(TRAINED_BYTES * n_trained) + FROZEN_BYTES * n_frozen",
    ),
    Mutant(
        "1a",
        "returned a numpy int64 (OverflowError past 2**63 - 1 bytes)",
        "return int(TRAINED_BYTES",
        "import numpy as np\n    return np.int64(TRAINED_BYTES",
    ),
    Mutant(
        "1a",
        "made the counts numpy int64 first (wraps past 2**63 - 1 bytes)",
        "return int(TRAINED_BYTES * n_trained + FROZEN_BYTES * n_frozen)",
        "import numpy as np\n"
        "    return int(TRAINED_BYTES * np.int64(n_trained) + FROZEN_BYTES * np.int64(n_frozen))",
    ),
    Mutant(
        "1b",
        "int(bytes_per_value): a 4-bit cache (0.5) costs 0 bytes",
        "* per_value)",
        "* int(per_value))",
    ),
    Mutant(
        "1b",
        "no int(): a float for a fractional bytes_per_value",
        KV_RETURN,
        "return 2 * n_layers * n_kv_heads * head_dim * n_tokens * bytes_per_value",
    ),
    Mutant(
        "1b",
        "the float product truncated: 0.57 bytes a value, 100 values, gives 56",
        KV_RETURN,
        "return int(2 * n_layers * n_kv_heads * head_dim * n_tokens * bytes_per_value)",
    ),
    Mutant(
        "1b",
        "the float product rounded up: 1.1 bytes a value, 50 values, gives 56",
        KV_RETURN,
        "return math.ceil(2 * n_layers * n_kv_heads * head_dim * n_tokens * bytes_per_value)",
    ),
    Mutant(
        "1b",
        "a total that is not whole bytes rounded to the nearest byte, not up",
        "return math.ceil(",
        "return round(",
    ),
    Mutant(
        "1b",
        "float arithmetic (bytes lost past 2**53)",
        "Fraction(2 * n_layers",
        "Fraction(2.0 * n_layers",
    ),
    Mutant(
        "1b",
        "0.0 (a float) for an empty cache",
        "return math.ceil(",
        "return 0.0 if n_tokens == 0 else math.ceil(",
    ),
    Mutant(
        "1b",
        "np.prod of the sizes in int64 (wraps past 2**63 - 1 bytes)",
        KV_RETURN,
        "import numpy as np\n    return math.ceil(Fraction(int(np.prod("
        "[2, n_layers, n_kv_heads, head_dim, n_tokens]))) * per_value)",
    ),
    Mutant(
        "1b",
        "int() of the bytes per token, times n_tokens (a float for 16384.0 tokens)",
        KV_RETURN,
        "return math.ceil(Fraction(2 * n_layers * n_kv_heads * head_dim) * per_value) * n_tokens",
    ),
    Mutant(
        "1b",
        "KV cache without the factor 2 for K and V",
        "Fraction(2 * n_layers",
        "Fraction(n_layers",
    ),
    Mutant("1b", "ignored bytes_per_value (always bf16)", "* per_value)", "* 2)"),
    Mutant("1b", "counted bits instead of bytes", "* per_value)", "* per_value * 8)"),
    Mutant("1b", "forgot head_dim", "n_kv_heads * head_dim * n_tokens)", "n_kv_heads * n_tokens)"),
    Mutant("1c", "GiB (2**30) instead of GB (10**9)", "return total / 1e9", "return total / 2**30"),
    Mutant(
        "1c",
        "forgot the critic",
        'n_trained_models = 2 if algo == "ppo" else 1',
        "n_trained_models = 1",
    ),
    Mutant(
        "1c",
        "counted the reference as trained",
        "model_state_bytes(n_trained_models * n_params, n_params if reference else 0)",
        "model_state_bytes((n_trained_models + reference) * n_params)",
    ),
    Mutant("1c", "ignored reference=False", "n_params if reference else 0", "n_params"),
    Mutant(
        "1c",
        "counted the reward model as trained",
        "total += model_state_bytes(0, n_params)",
        "total += model_state_bytes(n_params)",
    ),
    Mutant(
        "1c",
        "kept a separate reference copy under LoRA",
        "model_state_bytes(n_trained_models * lora_params, n_params)",
        "model_state_bytes(n_trained_models * lora_params, n_params * (1 + reference))",
    ),
    Mutant(
        "1c",
        "counted the LoRA adapter as frozen",
        "model_state_bytes(n_trained_models * lora_params, n_params)",
        "model_state_bytes(0, n_params + n_trained_models * lora_params)",
    ),
    Mutant(
        "1c",
        "one adapter for PPO under LoRA (forgot the critic's)",
        "model_state_bytes(n_trained_models * lora_params, n_params)",
        "model_state_bytes(lora_params, n_params)",
    ),
    Mutant(
        "1c",
        "ignored reward_model (a reward model exactly when the algorithm is PPO)",
        "    if reward_model:\n",
        '    if algo == "ppo":\n',
    ),
    Mutant(
        "1c",
        "left the frozen base out under LoRA when reference=False",
        "model_state_bytes(n_trained_models * lora_params, n_params)",
        "model_state_bytes(n_trained_models * lora_params, n_params if reference else 0)",
    ),
    Mutant(
        "1c",
        "gave PPO's critic a frozen base of its own under LoRA",
        "model_state_bytes(n_trained_models * lora_params, n_params)",
        "model_state_bytes(n_trained_models * lora_params, n_trained_models * n_params)",
    ),
    Mutant(
        "1c",
        "counted the critic as frozen",
        "model_state_bytes(n_trained_models * n_params, n_params if reference else 0)",
        "model_state_bytes(n_params, n_params * (n_trained_models - 1 + reference))",
    ),
    Mutant("1c", "ignored lora_params", "if lora_params > 0:", "if False:"),
    Mutant(
        "1c",
        "made the counts numpy int64 (wraps past 2**63 - 1 bytes)",
        '    n_trained_models = 2 if algo == "ppo" else 1',
        "    import numpy as np\n    n_params, lora_params = np.int64(n_params), "
        "np.int64(lora_params)\n"
        '    n_trained_models = 2 if algo == "ppo" else 1',
    ),
    Mutant(
        "1c",
        "an int when the GB are whole (252, not 252.0)",
        "return total / 1e9",
        "gb = total / 1e9\n    return int(gb) if gb.is_integer() else gb",
    ),
    Mutant(
        "1c",
        'compared algo with `is`: a string built at run time is not "ppo"',
        'algo == "ppo"',
        'algo is "ppo"',
    ),
    # ---- Task 2: scheduler.py
    Mutant(
        "2a",
        "true division: (n_started - n_dropped) / B is a float, inexact past 2**53",
        RULE,
        "return (n_started - n_dropped) / B < version + k + 1",
    ),
    Mutant("2a", "admission ignores n_dropped", RULE, "return n_started < (version + k + 1) * B"),
    Mutant(
        "2a",
        "admission off by one batch (too strict)",
        RULE,
        "return n_started - n_dropped < (version + k) * B",
    ),
    Mutant(
        "2a",
        "admission off by one batch (too loose)",
        RULE,
        "return n_started - n_dropped < (version + k + 2) * B",
    ),
    Mutant("2a", "<= instead of <", RULE, "return n_started - n_dropped <= (version + k + 1) * B"),
    Mutant(
        "2a",
        "admission ignores k (always synchronous)",
        RULE,
        "return n_started - n_dropped < (version + 1) * B",
    ),
    Mutant(
        "2a", "admission ignores the version", RULE, "return n_started - n_dropped < (k + 1) * B"
    ),
    Mutant(
        "2a",
        "added n_dropped instead of subtracting it",
        RULE,
        "return n_started + n_dropped < (version + k + 1) * B",
    ),
    Mutant(
        "2a", "<= with (version + k) * B", RULE, "return n_started - n_dropped <= (version + k) * B"
    ),
    Mutant(
        "2a",
        "k responses ahead instead of k batches",
        RULE,
        "return n_started - n_dropped < (version + 1) * B + k",
    ),
    Mutant(
        "2b",
        "re-sorted `finished` by finish time, then length (FIFO broken only among "
        "responses that finish at the same time)",
        "batch = finished[:B]\n    del finished[:B]",
        'finished.sort(key=lambda r: (r["end"], r["length"]))\n'
        "    batch = finished[:B]\n    del finished[:B]",
    ),
    Mutant(
        "2b",
        "took the lowest ids (start order), not the first in `finished`",
        "batch = finished[:B]\n    del finished[:B]",
        'batch = sorted(finished, key=lambda r: r["start"])[:B]\n'
        "    finished[:] = [r for r in finished if all(r is not b for b in batch)]",
    ),
    Mutant(
        "2b",
        "took the shortest responses first",
        "batch = finished[:B]\n    del finished[:B]",
        'batch = sorted(finished, key=lambda r: r["length"])[:B]\n'
        "    finished[:] = [r for r in finished if all(r is not b for b in batch)]",
    ),
    Mutant(
        "2b",
        "took the oldest tags first",
        "batch = finished[:B]\n    del finished[:B]",
        'batch = sorted(finished, key=lambda r: r["tag"])[:B]\n'
        "    finished[:] = [r for r in finished if all(r is not b for b in batch)]",
    ),
    Mutant(
        "2b",
        "dropped only when B responses were waiting",
        "if drop_stale:",
        "if drop_stale and len(finished) >= B:",
    ),
    Mutant(
        "2b",
        "dropped only when B fresh responses were left for a batch",
        "if drop_stale:",
        'if drop_stale and sum(version - r["tag"] <= k for r in finished) >= B:',
    ),
    Mutant(
        "2b",
        "returned copies of the responses",
        "batch = finished[:B]\n",
        "batch = [dict(r) for r in finished[:B]]\n",
    ),
    Mutant(
        "2b",
        "returned a list [batch, dropped], not a tuple",
        "return batch, dropped",
        "return [batch, dropped]",
    ),
    Mutant(
        "2b",
        "set the lags before dropping",
        "    dropped = []\n    if drop_stale:",
        '    dropped = []\n    for r in finished:\n        r["lag"] = version - r["tag"]\n'
        "    if drop_stale:",
    ),
    Mutant(
        "2b",
        "LIFO instead of FIFO",
        "batch = finished[:B]\n    del finished[:B]",
        "batch = finished[-B:][::-1]\n    del finished[-B:]",
    ),
    Mutant(
        "2b",
        "took the newest B in order",
        "batch = finished[:B]\n    del finished[:B]",
        "batch = finished[-B:]\n    del finished[-B:]",
    ),
    Mutant(
        "2b",
        "lag with the wrong sign",
        'r["lag"] = version - r["tag"]',
        'r["lag"] = r["tag"] - version',
    ),
    Mutant(
        "2b",
        "dropped at lag == k",
        'version - r["tag"] > k]\n        finished[:] = [r for r in finished if '
        'version - r["tag"] <= k]',
        'version - r["tag"] >= k]\n        finished[:] = [r for r in finished if '
        'version - r["tag"] < k]',
    ),
    Mutant("2b", "did not flag dropped responses", 'r["dropped"] = True', "pass"),
    Mutant(
        "2b",
        "left dropped responses in `finished`",
        'finished[:] = [r for r in finished if version - r["tag"] <= k]',
        "pass",
    ),
    Mutant(
        "2b",
        "replaced the list instead of changing it in place",
        "finished[:] = [r for r in finished",
        "finished = [r for r in finished",
    ),
    Mutant("2b", "did not remove the batch from `finished`", "del finished[:B]", "pass"),
    Mutant(
        "2b", "waited for more than B responses", "if len(finished) < B:", "if len(finished) <= B:"
    ),
    Mutant(
        "2b",
        "returned a short batch when fewer than B were waiting",
        "if len(finished) < B:",
        "if not finished:",
    ),
    Mutant(
        "2b", "dropped stale responses even when drop_stale is False", "if drop_stale:", "if True:"
    ),
    Mutant(
        "2b",
        "flagged dropped responses only when a batch follows",
        '        for r in dropped:\n            r["dropped"] = True\n    if len(finished) < B:\n'
        "        return None, dropped\n",
        "    if len(finished) < B:\n        return None, dropped\n"
        '    for r in dropped:\n        r["dropped"] = True\n',
    ),
    Mutant(
        "2b",
        "removed stale responses from the list while looping over it (skips the next)",
        '        dropped = [r for r in finished if version - r["tag"] > k]\n'
        '        finished[:] = [r for r in finished if version - r["tag"] <= k]\n',
        "        for r in finished:\n"
        '            if version - r["tag"] > k:\n'
        "                finished.remove(r)\n"
        "                dropped.append(r)\n",
    ),
    Mutant(
        "2b",
        "kept the dropped list between calls (returns dicts from earlier calls)",
        "    dropped = []\n    if drop_stale:\n"
        '        dropped = [r for r in finished if version - r["tag"] > k]\n',
        '    dropped = vars(take_batch).setdefault("dropped", [])\n    if drop_stale:\n'
        '        dropped += [r for r in finished if version - r["tag"] > k]\n',
    ),
    Mutant(
        "2b",
        "trained everything that finished, not B",
        "batch = finished[:B]\n    del finished[:B]",
        "batch = finished[:]\n    del finished[:]",
    ),
    # ---- Task 3: tis.py
    Mutant(
        "3a",
        'compared scheme with `is`: a string built at run time is not "none"',
        'if scheme == "none":',
        'if scheme is "none":',
    ),
    Mutant(
        "3a",
        "ratio upside down (inferred over trained)",
        "log_w = logp_train - logp_infer\n",
        "log_w = logp_infer - logp_train\n",
    ),
    Mutant(
        "3a",
        "ratio of exponentials (linear space): 0/0 at very low log-probabilities",
        "log_w = logp_train - logp_infer\n",
        "log_w = np.log(np.exp(logp_train) / np.exp(logp_infer))\n",
    ),
    Mutant(
        "3a",
        "max instead of min (raised every weight to C)",
        "log_w = np.minimum(log_w, np.log(C))",
        "log_w = np.maximum(log_w, np.log(C))",
    ),
    Mutant(
        "3a",
        "clipped from below as well as above",
        "log_w = np.minimum(log_w, np.log(C))",
        "log_w = np.clip(log_w, -np.log(C), np.log(C))",
    ),
    Mutant(
        "3a",
        "ignored C (always 2)",
        "np.minimum(log_w, np.log(C))",
        "np.minimum(log_w, np.log(2.0))",
    ),
    Mutant(
        "3a",
        "truncated each token inside the sequence product",
        SEQ_THEN_TRUNCATE,
        TRUNCATE_THEN_SEQ,
    ),
    Mutant(
        "3a",
        "multiplied ratios directly (overflow), not in log space",
        "np.broadcast_to(log_w.sum(axis=1, keepdims=True), log_w.shape)",
        "np.log(np.broadcast_to(np.prod(np.exp(log_w), axis=1, keepdims=True), log_w.shape))",
    ),
    Mutant(
        "3a",
        "one weight per sequence, shape (N, 1)",
        "np.broadcast_to(log_w.sum(axis=1, keepdims=True), log_w.shape)",
        "log_w.sum(axis=1, keepdims=True)",
    ),
    Mutant(
        "3a",
        "running product instead of the whole product",
        "log_w.sum(axis=1, keepdims=True)",
        "np.cumsum(log_w, axis=1)",
    ),
    Mutant(
        "3a",
        "geometric mean of the ratios instead of their product",
        "log_w.sum(axis=1, keepdims=True)",
        "log_w.mean(axis=1, keepdims=True)",
    ),
    Mutant(
        "3a",
        "token_tis not truncated",
        'if scheme in ("token_tis", "seq_tis"):',
        'if scheme == "seq_tis":',
    ),
    Mutant(
        "3a",
        "seq_tis not truncated",
        'if scheme in ("token_tis", "seq_tis"):',
        'if scheme == "token_tis":',
    ),
    Mutant("3a", "returned the log-weights", "return np.exp(log_w)", "return log_w"),
    Mutant(
        "3a",
        '"none" gives zero weights',
        "return np.ones_like(log_w)",
        "return np.zeros_like(log_w)",
    ),
    Mutant(
        "3a",
        "capped log w at C instead of log C",
        "log_w = np.minimum(log_w, np.log(C))",
        "log_w = np.minimum(log_w, C)",
    ),
    Mutant(
        "3a",
        "summed the log-ratios over the batch axis",
        "log_w.sum(axis=1, keepdims=True)",
        "log_w.sum(axis=0, keepdims=True)",
    ),
    Mutant(
        "3a",
        "changed logp_train in place",
        "log_w = logp_train - logp_infer\n",
        "log_w = logp_train\n    log_w -= logp_infer\n",
    ),
    Mutant(
        "3a",
        "clamped each log-ratio at +-20 (an overflow guard)",
        "log_w = logp_train - logp_infer\n",
        "log_w = np.clip(logp_train - logp_infer, -20, 20)\n",
    ),
    Mutant(
        "3a",
        "clamped the sequence log-ratio at +-20 (an overflow guard)",
        "np.broadcast_to(log_w.sum(axis=1, keepdims=True), log_w.shape)",
        "np.broadcast_to(np.clip(log_w.sum(axis=1, keepdims=True), -20, 20), log_w.shape)",
    ),
    Mutant(
        "3a",
        "clamped the log-weights at +-709 before exp (inf is the answer past e**709.78)",
        "return np.exp(log_w)",
        "return np.exp(np.clip(log_w, -709, 709))",
    ),
    Mutant(
        "3a",
        "returned a list, not an array",
        "return np.exp(log_w)",
        "return np.exp(log_w).tolist()",
    ),
    Mutant(
        "3a",
        "returned float32 weights",
        "return np.exp(log_w)",
        "return np.exp(log_w).astype(np.float32)",
    ),
    Mutant(
        "3a",
        "squeezed the weights (shape wrong when N = 1 or T = 1)",
        "return np.exp(log_w)",
        "return np.exp(log_w).squeeze()",
    ),
    Mutant(
        "3b",
        "returned a list, not an array",
        ".sum(axis=1).mean(axis=0)",
        ".sum(axis=1).mean(axis=0).tolist()",
    ),
    Mutant(
        "3b",
        "returned float32 numbers",
        ".sum(axis=1).mean(axis=0)",
        ".sum(axis=1).mean(axis=0).astype(np.float32)",
    ),
    Mutant(
        "3b",
        "subtracted the mean reward (a GRPO baseline)",
        "rewards[:, None, None] * weights[:, :, None] * grad_logp",
        "(rewards - rewards.mean())[:, None, None] * weights[:, :, None] * grad_logp",
    ),
    Mutant(
        "3b",
        "summed over the batch and averaged over the tokens (axes swapped)",
        ".sum(axis=1).mean(axis=0)",
        ".sum(axis=0).mean(axis=0)",
    ),
    Mutant(
        "3b",
        "changed grad_logp in place",
        "    return (rewards[:, None, None] * weights[:, :, None] * grad_logp)"
        ".sum(axis=1).mean(axis=0)\n",
        "    grad_logp *= rewards[:, None, None] * weights[:, :, None]\n"
        "    return grad_logp.sum(axis=1).mean(axis=0)\n",
    ),
    Mutant(
        "3b",
        "summed over the batch instead of averaging",
        ".sum(axis=1).mean(axis=0)",
        ".sum(axis=1).sum(axis=0)",
    ),
    Mutant(
        "3b",
        "ignored the weights",
        "rewards[:, None, None] * weights[:, :, None] * grad_logp",
        "rewards[:, None, None] * grad_logp",
    ),
    Mutant(
        "3b",
        "averaged over tokens instead of summing",
        ".sum(axis=1).mean(axis=0)",
        ".mean(axis=1).mean(axis=0)",
    ),
    Mutant(
        "3b",
        "ignored the rewards",
        "rewards[:, None, None] * weights[:, :, None] * grad_logp",
        "weights[:, :, None] * grad_logp",
    ),
    Mutant(
        "3b",
        "squared the weights",
        "weights[:, :, None] * grad_logp",
        "weights[:, :, None] ** 2 * grad_logp",
    ),
]

# ---- Task 3c (optional): masked_weights in tis.py
BAND = "inside = (np.log(low) <= log_ratio) & (log_ratio <= np.log(high))"
MUTANTS += [
    Mutant(
        "3c",
        'compared level with `is`: a string built at run time is not "seq"',
        'if level == "seq":',
        'if level is "seq":',
    ),
    Mutant(
        "3c",
        "band without its edges (< instead of <=)",
        BAND,
        "inside = (np.log(low) < log_ratio) & (log_ratio < np.log(high))",
    ),
    Mutant(
        "3c",
        "clipped into the band instead of masking",
        "return np.exp(np.where(inside, log_ratio, -np.inf))",
        "return np.exp(np.clip(log_ratio, np.log(low), np.log(high)))",
    ),
    Mutant(
        "3c",
        "returned the 0/1 mask, not the kept ratios",
        "return np.exp(np.where(inside, log_ratio, -np.inf))",
        "return inside.astype(float)",
    ),
    Mutant(
        "3c",
        "ratio upside down",
        "log_ratio = logp_train - logp_infer\n",
        "log_ratio = logp_infer - logp_train\n",
    ),
    Mutant("3c", "no lower bound (ignored low)", BAND, "inside = log_ratio <= np.log(high)"),
    Mutant("3c", "no upper bound (ignored high)", BAND, "inside = np.log(low) <= log_ratio"),
    Mutant(
        "3c",
        "ignored low and high (always 0.5 and 2)",
        BAND,
        "inside = (np.log(0.5) <= log_ratio) & (log_ratio <= np.log(2.0))",
    ),
    Mutant("3c", "sequence level masks each token on its own", 'if level == "seq":', "if False:"),
    Mutant(
        "3c",
        "geometric level uses the product",
        "log_ratio.mean(axis=1, keepdims=True)",
        "log_ratio.sum(axis=1, keepdims=True)",
    ),
    Mutant(
        "3c",
        "geometric level uses the arithmetic mean of the ratios",
        "np.broadcast_to(log_ratio.mean(axis=1, keepdims=True), log_ratio.shape)",
        "np.broadcast_to(np.log(np.exp(log_ratio).mean(axis=1, keepdims=True)), log_ratio.shape)",
    ),
    Mutant(
        "3c",
        "sequence level uses the geometric mean",
        "np.broadcast_to(log_ratio.sum(axis=1, keepdims=True), log_ratio.shape)",
        "np.broadcast_to(log_ratio.mean(axis=1, keepdims=True), log_ratio.shape)",
    ),
    Mutant(
        "3c",
        "multiplied ratios directly (overflow), not in log space",
        "np.broadcast_to(log_ratio.sum(axis=1, keepdims=True), log_ratio.shape)",
        "np.broadcast_to(np.log(np.prod(np.exp(log_ratio), axis=1, keepdims=True)), "
        "log_ratio.shape)",
    ),
    Mutant(
        "3c",
        "one weight per response, shape (N, 1)",
        "np.broadcast_to(log_ratio.mean(axis=1, keepdims=True), log_ratio.shape)",
        "log_ratio.mean(axis=1, keepdims=True)",
    ),
    Mutant(
        "3c",
        "band 1% wider than [low, high] (a tolerance at the edges)",
        BAND,
        "inside = (np.log(low * 0.99) <= log_ratio) & (log_ratio <= np.log(high * 1.01))",
    ),
    Mutant(
        "3c",
        "put a floor of 1e-12 under low, to dodge log(0)",
        BAND,
        "inside = (np.log(max(low, 1e-12)) <= log_ratio) & (log_ratio <= np.log(high))",
    ),
    Mutant(
        "3c",
        "put float64's smallest normal number under low, to dodge log(0)",
        BAND,
        "inside = (np.log(max(low, np.finfo(float).tiny)) <= log_ratio) "
        "& (log_ratio <= np.log(high))",
    ),
    Mutant(
        "3c",
        "compared the band in linear space (exp(log 3) > 3 in float64)",
        BAND,
        "inside = (low <= np.exp(log_ratio)) & (np.exp(log_ratio) <= high)",
    ),
    Mutant(
        "3c",
        "returned a list, not an array",
        "return np.exp(np.where(inside, log_ratio, -np.inf))",
        "return np.exp(np.where(inside, log_ratio, -np.inf)).tolist()",
    ),
    Mutant(
        "3c",
        "rejected ratios get weight 1 instead of 0",
        "return np.exp(np.where(inside, log_ratio, -np.inf))",
        "return np.exp(np.where(inside, log_ratio, 0.0))",
    ),
]
