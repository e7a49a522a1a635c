"""Part 1 (Task 1): the model-state bill of PPO, GRPO and GRPO + LoRA, and the lanes of a GPU.

The smallest experiment, and the pattern of every other: its settings, its computation
from the student's module, its table, its line in short, its panel of rl_systems.png.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING, Any

import grading
from experiments.model_shapes import MODELS, ROUND_7B, Model
from experiments.options import bounded
from experiments.settings import Settings
from lab import GPU_GB

if TYPE_CHECKING:  # (matplotlib is imported only to draw)
    from matplotlib.axes import Axes

KEY, LABEL, TASK, FLAG = "memory", "Part 1", "1", None
SECONDS = 0.01
MAX_TOKENS = 16_384  # tokens of one response when Part 1 counts the lanes of a GPU


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--max-tokens",
        type=bounded(int, 1, 1_048_576),
        default=MAX_TOKENS,
        help="tokens per response when Part 1 counts the lanes of one GPU",
    )


def work(settings: Settings) -> float:
    return 1.0


def run(settings: Settings, results: dict[str, Any]) -> dict[str, Any]:
    return memory_table(grading.load("memory"), settings.options.max_tokens)


def memory_table(memory: ModuleType, max_tokens: int = MAX_TOKENS) -> dict[str, Any]:
    """Model-state GB of PPO, GRPO and GRPO + LoRA (rank 16) for the lab's 7B and real models,
    and the lanes of one GPU at `max_tokens` tokens (see lanes_per_gpu), from the Task 1
    module `memory`."""
    rows = []
    for model in [ROUND_7B] + MODELS:
        adapter = model.lora_params()
        row = dict(
            model=model.name,
            params=model.params,
            lora_params=adapter,
            ppo_gb=memory.rl_memory_gb("ppo", model.params),
            grpo_gb=memory.rl_memory_gb("grpo", model.params),
            grpo_lora_gb=memory.rl_memory_gb("grpo", model.params, lora_params=adapter),
            kv_bytes_per_token=memory.kv_cache_bytes(
                model.layers, model.kv_heads, model.head_dim, 1
            ),
        )
        row["gpus_for_ppo"] = math.ceil(row["ppo_gb"] / GPU_GB)
        row["lanes_per_gpu"] = lanes_per_gpu(memory.kv_cache_bytes, model, max_tokens)
        row["context"] = model.context
        rows.append(row)
    lab_7b = rows[0]
    return dict(
        ppo_7b_gb=lab_7b["ppo_gb"],
        grpo_7b_gb=lab_7b["grpo_gb"],
        grpo_lora_7b_gb=lab_7b["grpo_lora_gb"],
        kv_bytes_per_token=lab_7b["kv_bytes_per_token"],
        kv_64x16k_gb=memory.kv_cache_bytes(
            ROUND_7B.layers, ROUND_7B.kv_heads, ROUND_7B.head_dim, 64 * 16_384
        )
        / 1e9,
        h100s_for_ppo_7b=lab_7b["gpus_for_ppo"],
        max_tokens=max_tokens,
        lanes_per_gpu=lab_7b["lanes_per_gpu"],
        models=rows,
    )


def lanes_per_gpu(kv_cache_bytes: Callable[..., int], model: Model, max_tokens: int) -> int:
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


def show(m: dict[str, Any]) -> None:
    print("Part 1: model state (weights, gradients, optimizer), GB = 10^9 bytes; LoRA rank 16")
    print(
        f"  {'model':<23}{'params':>8}{'KV/token':>10}{'PPO':>9}{'GRPO':>9}"
        f"{'GRPO+LoRA':>11}{'PPO GPUs':>10}{'lanes/GPU':>14}"
    )
    for r in m["models"]:
        print(
            f"  {r['model']:<23}{r['params'] / 1e9:>7.2f}B"
            f"{r['kv_bytes_per_token'] / 1024:>6.0f} KiB"
            f"{r['ppo_gb']:>9.1f}{r['grpo_gb']:>9.1f}{r['grpo_lora_gb']:>11.1f}"
            f"{r['gpus_for_ppo']:>10}{lanes_text(r, m['max_tokens']):>14}"
        )
    print(f"  KV cache on top: 64 responses x 16k tokens on the 7B = {m['kv_64x16k_gb']:.1f} GB")
    print(
        f"  PPO GPUs: {GPU_GB} GB GPUs that hold PPO's model state. lanes/GPU: responses of "
        f"{m['max_tokens']:,} tokens\n  that one {GPU_GB} GB GPU generates at once, KV cache "
        "beside the bf16 weights (activations and\n  engine overhead ignored): "
        f"{m['lanes_per_gpu']} for the lab's 7B. A lane of Part 2 is one such slot."
    )
    for r in m["models"]:
        if r["context"] < m["max_tokens"]:
            print(
                f"  * {r['model']}: its context is {r['context']:,} tokens, shorter than "
                f"{m['max_tokens']:,}"
            )


def lanes_text(row: dict[str, Any], max_tokens: int) -> str:
    """A lanes/GPU cell: the number, "does not fit", and * if the context is too short."""
    text = "does not fit" if row["lanes_per_gpu"] == 0 else str(row["lanes_per_gpu"])
    return text + ("*" if row["context"] < max_tokens else " ")


def short(m: dict[str, Any]) -> str:
    """Part 1 in a line (run.py with an experiment flag), as are the three below."""
    return (
        f"Part 1: model state of the lab's 7B: PPO {m['ppo_7b_gb']:.0f} GB, GRPO "
        f"{m['grpo_7b_gb']:.0f} GB, GRPO + LoRA {m['grpo_lora_7b_gb']:.1f} GB"
    )


def panel(memory: dict[str, Any], ax: Axes) -> None:
    bars = {
        "PPO": memory["ppo_7b_gb"],
        "GRPO": memory["grpo_7b_gb"],
        "GRPO + LoRA": memory["grpo_lora_7b_gb"],
    }
    ax.bar(list(bars), list(bars.values()), color=["tab:red", "tab:blue", "tab:green"])
    for x, gb in enumerate(bars.values()):
        ax.text(x, gb, f"{gb:.3g} GB", ha="center", va="bottom")  # 252, 126, 14.6 as printed
    ax.set_ylim(0, 1.18 * max(*bars.values(), GPU_GB))  # room above the tallest label
    ax.axhline(GPU_GB, color="gray", linestyle="--")
    ax.text(
        len(bars) - 0.55,
        GPU_GB,
        f"one {GPU_GB} GB GPU",
        ha="right",
        va="bottom",
        fontsize=9,
        color="dimgray",
    )
    ax.set_ylabel("GB (10^9 bytes), before activations and KV cache")
