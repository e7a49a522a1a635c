# Your file for Task 1. Fill in each TODO, then run `python -m pytest -q -k task1`.
"""Task 1: a GPU memory calculator for RL on LLMs.

Units: bytes, and GB = 10**9 bytes (the unit GPU data sheets use: an H100 has
80 GB). Not GiB = 2**30 bytes, which would make every number 7% smaller.

The chapter's question: why does PPO-RLHF on a 7B model need a small cluster
just to hold its weights, while GRPO with a LoRA adapter fits on one GPU?
"""

from lab import TaskNotDone, contracts
from lab.input_checks import Number, Whole, checked

# Bytes a parameter costs when it is trained with Adam in mixed precision:
# bf16 weight 2 + bf16 gradient 2 + fp32 master weight 4 + Adam m 4 + Adam v 4.
TRAINED_BYTES = 16
# Bytes a frozen parameter costs: its bf16 weight, nothing else.
FROZEN_BYTES = 2


@checked(contracts.model_state_bytes)
def model_state_bytes(n_trained: Whole, n_frozen: Whole = 0) -> int:
    """Bytes of model state (activations and the KV cache come on top):

        bytes = 16 * n_trained + 2 * n_frozen

    Args:
        n_trained (int): parameters trained with Adam (7e9 or np.int64(7) is fine too).
        n_frozen (int): frozen parameters.

    Returns:
        int: whole bytes, exact (Python's int arithmetic is exact at any size, numpy's while
            the bytes fit in int64).

    Example: model_state_bytes(1_000, 500) == 16 * 1_000 + 2 * 500 == 17_000.
    """
    # TODO (Task 1a): use TRAINED_BYTES and FROZEN_BYTES, and return an int.
    raise TaskNotDone("1a")


@checked(contracts.kv_cache_bytes)
def kv_cache_bytes(
    n_layers: Whole,
    n_kv_heads: Whole,
    head_dim: Whole,
    n_tokens: Whole,
    bytes_per_value: Number = 2,
) -> int:
    """Bytes of KV cache for `n_tokens` tokens (all sequences together):

        bytes = 2 * n_layers * n_kv_heads * head_dim * n_tokens * bytes_per_value

    Args:
        n_layers (int): transformer layers.
        n_kv_heads (int): KV heads a layer (fewer than query heads with grouped-query attention).
        head_dim (int): values in one head's key (or value) vector.
        n_tokens (int): tokens cached (0 or more).
        bytes_per_value (float): 2 for bf16, 1 for fp8, 0.5 for a 4-bit cache.

    Returns:
        int: whole bytes, exact as in model_state_bytes. A total that is not whole bytes is
            rounded up, bytes_per_value taken as the decimal it prints as (0.57 is 57/100):
            kv_cache_bytes(1, 1, 1, 50, 0.57) == 57.

    Example: Qwen2.5-7B (28 layers, 4 KV heads, head_dim 128) caches 56 KiB a token:
    kv_cache_bytes(28, 4, 128, 1) == 2 * 28 * 4 * 128 * 1 * 2 == 57_344.
    """
    # TODO (Task 1b): a key AND a value vector per layer, per KV head, per token.
    raise TaskNotDone("1b")


@checked(contracts.rl_memory_gb)
def rl_memory_gb(
    algo: str,
    n_params: Whole,
    *,
    reference: bool = True,
    reward_model: bool | None = None,
    lora_params: Whole = 0,
) -> float:
    """GB of model state for an RL run whose models have N = n_params parameters each:

        PPO:  policy and critic, trained; reference and reward model, frozen
        GRPO: policy, trained; reference (optional) and reward model (optional), frozen

    With LoRA (lora_params > 0) one frozen base is shared: the policy is base + adapter, the
    reference is the base with the adapter off (nothing extra), and PPO's critic is a second
    adapter on it (its small value head is ignored). A reward model is a frozen copy of its own.

    Args:
        algo (str): "ppo" or "grpo".
        n_params (int): N, the policy's parameters.
        reference (bool): keep the frozen reference model (False: no KL penalty).
        reward_model (bool | None): True or False puts a frozen reward model in or leaves it
            out; None (made True or False by the check above) is the usual set-up: a learned
            reward model for PPO, a verifiable reward (a program, no model) for GRPO.
        lora_params (int): parameters of one LoRA adapter, 0 (no LoRA) to n_params.

    Returns:
        float: GB (10**9 bytes), a float even when whole (252.0, not 252).

    Example (N = 7e9): "ppo" gives (16 + 16 + 2 + 2) * 7e9 bytes = 252.0 GB; "grpo" 126.0 GB,
    112.0 with reference=False, and 14.64 with lora_params=40e6 (2 * 7e9 + 16 * 40e6 bytes).
    """
    # TODO (Task 1c): build the bill with model_state_bytes, then convert bytes to GB.
    raise TaskNotDone("1c")
