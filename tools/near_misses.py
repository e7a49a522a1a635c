"""Near misses: wrong answers built to look like a known mistake on some inputs only.

Each is a mutant (tools/mutants.py's Mutant: the reference file of its task
with `old` replaced by `new`) that gives a known mistake's value on one test,
or on part of the domain, and something else elsewhere: a known mistake plus
a perturbation on part of the domain, or two mistakes combined. The tests
must catch each one, and none may get a "Likely mistake" line: a hint is
shown only when the student's function behaves like the mistake everywhere
(tools/check_release.py checks both).
"""

from tools.mutants import BAND, KV_RETURN, RULE, Mutant

FIRST_B = "batch = finished[:B]\n    del finished[:B]"
STALE = (
    'version - r["tag"] > k]\n        finished[:] = [r for r in finished if '
    'version - r["tag"] <= k]'
)
TRUNCATION = """\
    log_w = logp_train - logp_infer
    if scheme == "none":
        return np.ones_like(log_w)
    if scheme in ("seq", "seq_tis"):
        # one log-ratio per sequence, repeated on each of its tokens
        log_w = np.broadcast_to(log_w.sum(axis=1, keepdims=True), log_w.shape)
    if scheme in ("token_tis", "seq_tis"):
        log_w = np.minimum(log_w, np.log(C))
"""
ESTIMATE = "(rewards[:, None, None] * weights[:, :, None] * grad_logp).sum(axis=1).mean(axis=0)"

NEAR_MISSES = [
    # ---- Task 1: memory.py
    Mutant(
        "1a",
        "frozen weights in fp32, but only past 1,000 frozen parameters",
        "FROZEN_BYTES * n_frozen",
        "(4 if n_frozen > 1000 else FROZEN_BYTES) * n_frozen",
    ),
    Mutant(
        "1a",
        "forgot the fp32 master copy only for models over 10**9 parameters",
        "TRAINED_BYTES * n_trained",
        "(12 if n_trained > 10**9 else TRAINED_BYTES) * n_trained",
    ),
    Mutant(
        "1a",
        "forgot the fp32 master copy and kept frozen weights in fp32 (two mistakes)",
        "TRAINED_BYTES * n_trained + FROZEN_BYTES * n_frozen",
        "12 * n_trained + 4 * n_frozen",
    ),
    Mutant(
        "1a",
        "forgot the fp32 master copy for float counts only",
        "TRAINED_BYTES * n_trained",
        "(12 if isinstance(n_trained, float) else TRAINED_BYTES) * n_trained",
    ),
    Mutant(
        "1a",
        "forgot the fp32 master copy past 2**58 trained parameters",
        "TRAINED_BYTES * n_trained",
        "(12 if n_trained > 2**58 else TRAINED_BYTES) * n_trained",
    ),
    Mutant(
        "1a",
        "frozen weights in fp32 past 2**62 frozen parameters",
        "FROZEN_BYTES * n_frozen",
        "(4 if n_frozen > 2**62 else FROZEN_BYTES) * n_frozen",
    ),
    Mutant(
        "1a",
        "numpy int64 counts and forgot the fp32 master copy (two mistakes)",
        "return int(TRAINED_BYTES * n_trained + FROZEN_BYTES * n_frozen)",
        "import numpy as np\n"
        "    return int(12 * np.int64(n_trained) + FROZEN_BYTES * np.int64(n_frozen))",
    ),
    Mutant(
        "1b",
        "ignored a fractional bytes_per_value (used 2)",
        "* per_value)",
        "* (per_value if per_value >= 1 else 2))",
    ),
    Mutant(
        "1b",
        "counted fp8 as bf16: at least 2 bytes per value",
        "* per_value)",
        "* max(per_value, 2))",
    ),
    Mutant(
        "1b",
        "forgot the factor 2 beyond 1,000 tokens",
        "Fraction(2 * n_layers",
        "Fraction((1 if n_tokens > 1000 else 2) * n_layers",
    ),
    Mutant(
        "1b",
        "forgot the factor 2 and counted bits (two mistakes)",
        "Fraction(2 * n_layers",
        "Fraction(8 * n_layers",
    ),
    Mutant(
        "1b",
        "forgot the factor 2 past 2**53 tokens",
        "Fraction(2 * n_layers",
        "Fraction((1 if n_tokens > 2**53 else 2) * n_layers",
    ),
    Mutant(
        "1b",
        "np.prod of the sizes in int64 and counted bits (two mistakes)",
        KV_RETURN,
        "import numpy as np\n    return math.ceil(Fraction(int(np.prod("
        "[2, n_layers, n_kv_heads, head_dim, n_tokens]))) * per_value * 8)",
    ),
    Mutant(
        "1b",
        "forgot head_dim for a float n_tokens only",
        "n_kv_heads * head_dim * n_tokens)",
        "n_kv_heads * (1 if isinstance(n_tokens, float) else head_dim) * n_tokens)",
    ),
    Mutant(
        "1c",
        "stored the frozen reference at 4 bytes per parameter",
        "model_state_bytes(n_trained_models * n_params, n_params if reference else 0)",
        "model_state_bytes(n_trained_models * n_params, 2 * n_params if reference else 0)",
    ),
    Mutant(
        "1c",
        "divided by 2**30 for PPO only",
        "return total / 1e9",
        'return total / (2**30 if algo == "ppo" else 1e9)',
    ),
    Mutant(
        "1c",
        "forgot the critic in full fine-tuning only (not under LoRA)",
        'n_trained_models = 2 if algo == "ppo" else 1',
        'n_trained_models = 2 if algo == "ppo" and lora_params > 0 else 1',
    ),
    Mutant(
        "1c",
        "divided by 2**30 past 10**17 parameters",
        "return total / 1e9",
        "return total / (2**30 if n_params > 10**17 else 1e9)",
    ),
    Mutant(
        "1c",
        "divided by 2**30 when the bytes are a whole number of GB",
        "return total / 1e9",
        "return total / (2**30 if total % 10**9 == 0 else 1e9)",
    ),
    Mutant(
        "1c",
        "counted the reward model as trained for GRPO only",
        "total += model_state_bytes(0, n_params)",
        'total += model_state_bytes(n_params * (algo == "grpo"), n_params * (algo == "ppo"))',
    ),
    # ---- Task 2: scheduler.py
    Mutant(
        "2a",
        "< with (version + k + 1) * B, but one response too many counted",
        RULE,
        "return n_started - n_dropped + 1 < (version + k + 1) * B",
    ),
    Mutant(
        "2a",
        "<= where the rule has <, but only when k > 0",
        RULE,
        "return (n_started - n_dropped <= (version + k + 1) * B if k\n"
        "            else n_started - n_dropped < (version + k + 1) * B)",
    ),
    Mutant(
        "2a",
        "ignored n_dropped once the version is past 0",
        RULE,
        "return (n_started if version else n_started - n_dropped) < (version + k + 1) * B",
    ),
    Mutant(
        "2b",
        "LIFO when dropping stale responses, FIFO otherwise",
        FIRST_B,
        "batch = finished[-B:][::-1] if drop_stale else finished[:B]\n"
        "    del finished[slice(-B, None) if drop_stale else slice(None, B)]",
    ),
    Mutant(
        "2b",
        "dropped at lag == k, but only when k > 0",
        STALE,
        '(version - r["tag"] >= k if k else version - r["tag"] > k)]\n        finished[:] = '
        '[r for r in finished if (version - r["tag"] < k if k else version - r["tag"] <= k)]',
    ),
    Mutant(
        "2b",
        "lag with the wrong sign when drop_stale is False",
        'r["lag"] = version - r["tag"]',
        'r["lag"] = version - r["tag"] if drop_stale else r["tag"] - version',
    ),
    Mutant(
        "2b",
        "took the shortest first when more than B + 1 were waiting",
        FIRST_B,
        'batch = (sorted(finished, key=lambda r: r["length"]) if len(finished) > B + 1\n'
        "             else finished)[:B]\n"
        "    finished[:] = [r for r in finished if all(r is not b for b in batch)]",
    ),
    Mutant(
        "2b",
        "left the stale responses in `finished` when all of them were stale",
        'finished[:] = [r for r in finished if version - r["tag"] <= k]',
        'finished[:] = [r for r in finished if version - r["tag"] <= k] or finished',
    ),
    # ---- Task 3: tis.py
    Mutant(
        "3a",
        "ratio upside down where logp_train < -5",
        "log_w = logp_train - logp_infer\n",
        "log_w = np.where(logp_train < -5, logp_infer - logp_train, logp_train - logp_infer)\n",
    ),
    Mutant(
        "3a",
        "ratio upside down and clipped from below (two mistakes)",
        TRUNCATION,
        TRUNCATION.replace("logp_train - logp_infer", "logp_infer - logp_train").replace(
            "np.minimum(log_w, np.log(C))", "np.clip(log_w, -np.log(C), np.log(C))"
        ),
    ),
    Mutant(
        "3a",
        "max instead of min for seq_tis only",
        "log_w = np.minimum(log_w, np.log(C))",
        'log_w = (np.maximum if scheme == "seq_tis" else np.minimum)(log_w, np.log(C))',
    ),
    Mutant(
        "3a",
        "ignored C when C > 3 (used 2)",
        "np.minimum(log_w, np.log(C))",
        "np.minimum(log_w, np.log(C if C <= 3 else 2.0))",
    ),
    Mutant(
        "3a",
        "ratio of exponentials for the token scheme only",
        "    return np.exp(log_w)\n",
        '    if scheme == "token":\n'
        "        return np.exp(logp_train) / np.exp(logp_infer)\n"
        "    return np.exp(log_w)\n",
    ),
    Mutant(
        "3a",
        "ratio upside down where |log w| >= 700",
        "log_w = logp_train - logp_infer\n",
        "log_w = logp_train - logp_infer\n"
        "    log_w = np.where(np.abs(log_w) >= 700, -log_w, log_w)\n",
    ),
    Mutant(
        "3a",
        "capped at C * (1 + 1e-9), a tolerance",
        "np.minimum(log_w, np.log(C))",
        "np.minimum(log_w, np.log(C) + 1e-9)",
    ),
    Mutant(
        "3b",
        "ignored the weights when N = 1",
        "weights[:, :, None] * grad_logp",
        "(weights if len(rewards) > 1 else np.ones_like(weights))[:, :, None] * grad_logp",
    ),
    Mutant(
        "3b",
        "subtracted the mean reward only when N > 2",
        "rewards[:, None, None] * weights",
        "(rewards - rewards.mean() * (len(rewards) > 2))[:, None, None] * weights",
    ),
    Mutant(
        "3b",
        "summed over the batch and squared the weights (two mistakes)",
        ESTIMATE,
        "(rewards[:, None, None] * weights[:, :, None] ** 2 * grad_logp).sum(axis=1).sum(axis=0)",
    ),
    Mutant(
        "3b",
        "ignored the weights when T > 1",
        "weights[:, :, None] * grad_logp",
        "(weights if weights.shape[1] == 1 else np.ones_like(weights))[:, :, None] * grad_logp",
    ),
    Mutant(
        "3c",
        "rejected ratios on the upper edge only",
        BAND,
        "inside = (np.log(low) <= log_ratio) & (log_ratio < np.log(high))",
    ),
    Mutant(
        "3c",
        "ignored high at the sequence level only",
        BAND,
        'inside = (np.log(low) <= log_ratio) & ((log_ratio <= np.log(high)) | (level == "seq"))',
    ),
    Mutant(
        "3c",
        "compared the upper edge in linear space, the lower in log space",
        BAND,
        "inside = (np.log(low) <= log_ratio) & (np.exp(log_ratio) <= high)",
    ),
    Mutant(
        "3c",
        "ratio upside down where the log-ratio is below -25",
        "log_ratio = logp_train - logp_infer\n",
        "log_ratio = np.where(logp_train - logp_infer < -25, logp_infer - logp_train, "
        "logp_train - logp_infer)\n",
    ),
    Mutant(
        "3c",
        "clipped from above, masked below",
        "return np.exp(np.where(inside, log_ratio, -np.inf))",
        "return np.exp(np.where(np.log(low) <= log_ratio, np.minimum(log_ratio, np.log(high)), "
        "-np.inf))",
    ),
]
