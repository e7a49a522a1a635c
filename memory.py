# Your file for Task 1. Fill in each TODO, then run `python -m pytest -q -k task1`.
"""Task 1: a GPU memory calculator for RL on LLMs.

Units: bytes, and GB = 10**9 bytes (the unit GPU data sheets use: an H100 has
80 GB). Not GiB = 2**30 bytes, which would make every number 7% smaller.

The chapter's question: why does PPO-RLHF on a 7B model need a small cluster
just to hold its weights, while GRPO with a LoRA adapter fits on one GPU?
"""
from lab import TaskNotDone, contracts
from lab.input_checks import checked

# Bytes a parameter costs when it is trained with Adam in mixed precision:
# bf16 weight 2 + bf16 gradient 2 + fp32 master weight 4 + Adam m 4 + Adam v 4.
TRAINED_BYTES = 16
# Bytes a frozen parameter costs: its bf16 weight, nothing else.
FROZEN_BYTES = 2


@checked(contracts.model_state_bytes)
def model_state_bytes(n_trained, n_frozen=0):
    """Bytes of model state: 16 per trained parameter + 2 per frozen one.

        bytes = 16 * n_trained + 2 * n_frozen

    Activations and the KV cache come on top of this; they are not counted.

    Example: model_state_bytes(1_000, 500) == 17_000, and a 7B model trained
    in full, model_state_bytes(7e9), is 112e9 bytes = 112 GB.

    Returns an int (whole bytes), whatever whole numbers the counts are: ints,
    numpy ints or whole floats such as 7e9 (for either count). Exact for int counts
    however large: past 2**53 (about 9e15), where float arithmetic rounds, and past
    2**63 bytes (about 9.2e18), where numpy's int64 wraps (16 * 2**59 is 2**63, not
    -2**63). Numpy int counts are exact while the bytes fit in int64 (below 2**63).
    """
    # TODO (Task 1a): use TRAINED_BYTES and FROZEN_BYTES, and return an int.
    raise TaskNotDone("1a")


@checked(contracts.kv_cache_bytes)
def kv_cache_bytes(n_layers, n_kv_heads, head_dim, n_tokens, bytes_per_value=2):
    """Bytes of KV cache for `n_tokens` tokens (all sequences together).

        bytes = 2 * n_layers * n_kv_heads * head_dim * n_tokens * bytes_per_value

    The leading 2 is one key and one value vector per KV head. With grouped-
    query attention there are fewer KV heads than query heads, and only the
    KV heads are cached. bytes_per_value is 2 for bf16.

    Example: Qwen2.5-7B has 28 layers, 4 KV heads of dimension 128, so one
    token costs 2 * 28 * 4 * 128 * 2 = 57,344 bytes = 56 KiB.

    bytes_per_value may be a fraction: 0.5 for a 4-bit cache (2 * 28 * 4 * 128 * 0.5
    = 14,336 bytes a token). It is taken as the decimal it prints as (0.57 is exactly
    57/100, not the float just below it), and a total that is not whole bytes is rounded
    up (part of a byte still takes a byte): kv_cache_bytes(1, 1, 1, 50, 0.57) is 57, and
    kv_cache_bytes(1, 1, 1, 1, 0.3) is 1 (0.6 bytes). Returns an int (whole bytes): 0 for
    n_tokens = 0, and 939,524,096 (not 939524096.0) for a whole float such as n_tokens =
    16384.0. Exact for
    int arguments however large: past 2**53, where float arithmetic rounds, and past 2**63
    bytes (about 9.2e18), where numpy's int64 wraps (2**53 + 1 tokens of Qwen2.5-7B are
    516,508,834,063,867,502,592 bytes). Numpy int sizes are exact while the bytes fit in
    int64 (below 2**63). Checked above it: the sizes are whole numbers, n_tokens >= 0 and
    the others >= 1; bytes_per_value is a number > 0.
    """
    # TODO (Task 1b): a key AND a value vector per layer, per KV head, per token.
    raise TaskNotDone("1b")


@checked(contracts.rl_memory_gb)
def rl_memory_gb(algo, n_params, *, reference=True, reward_model=None, lora_params=0):
    """GB of model state for an RL run on a model of `n_params` parameters.

    The models each algorithm keeps in GPU memory (N = n_params):
      PPO:  policy (trained) + critic (trained, same size as the policy)
            + reference (frozen) + reward model (frozen, same size)
      GRPO: policy (trained) + reference (frozen, optional)
            + reward model (frozen, optional)

    reward_model=None means the usual set-up: a learned reward model for PPO,
    a verifiable reward (a program, no model) for GRPO. True or False forces it.
    The check above the function turns None into that choice, so the code below
    sees True or False.
    reference=False leaves the reference model out (no KL penalty).

    With LoRA (lora_params > 0) the base weights are frozen and shared: the
    policy is base + adapter, the reference is the same base with the adapter
    switched off (it costs nothing extra), and for PPO the critic is a second
    adapter on the same base (its small value head is ignored). The reward
    model, if any, is still a frozen copy of its own.

    Examples (N = 7e9):
      PPO:  (16 + 16 + 2 + 2) * 7e9 bytes = 252 GB
      GRPO: (16 + 2) * 7e9 bytes          = 126 GB, or 112 GB without reference
      GRPO + LoRA with a 40M-parameter adapter: 2 * 7e9 + 16 * 40e6 = 14.64 GB

    Every combination of algo, reference, reward_model and lora_params follows
    these rules. Checked above it: n_params and lora_params are whole numbers (ints,
    whole floats or numpy ints), 0 <= lora_params <= n_params; reference is True or False.
    Returns a float (GB), also when the GB are whole: 252.0, not 252.
    """
    # TODO (Task 1c): build the bill with model_state_bytes, then convert bytes to GB.
    raise TaskNotDone("1c")
