"""Shapes of real open models (given), for Part 1 and the GPU model.

Numbers from each model's config.json on Hugging Face. `params` is the exact
total, embeddings included. `context` is the context length the model was
released for: max_position_embeddings for the Llama and Mistral models; for
Qwen2.5 the length its model card states (the 1.5B's card says 32,768 while its
config allows more). Only Part 1's "context shorter than --max-tokens" mark uses
it, and at the default 16,384 tokens only Llama-2-7B (4,096) gets that mark.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class Model:
    name: str
    layers: int
    heads: int  # query heads
    kv_heads: int  # key/value heads (fewer than heads with grouped-query attention)
    hidden: int
    intermediate: int  # width of the MLP
    params: float
    context: int  # longest sequence it was built for, in tokens (prompt + response)

    @property
    def head_dim(self) -> int:
        """Width of one attention head: hidden / heads (128 for the lab's models, 64 for the
        OPT-1.3B of the GPU model's decode check)."""
        return self.hidden // self.heads

    def lora_params(self, r: int = 16) -> int:
        """Parameters of a rank-r LoRA adapter on every attention and MLP projection.

        A projection from d_in to d_out gets two matrices, r x d_in and d_out x r,
        so r * (d_in + d_out) parameters. Per layer: q and o (hidden <-> hidden),
        k and v (hidden -> kv_heads * head_dim), gate and up (hidden -> intermediate),
        down (intermediate -> hidden).

        Example: Qwen2.5-7B at r = 16 has 16 * 90,112 = 1,441,792 adapter
        parameters per layer, 40.4M in all (0.5% of the model).
        """
        kv = self.kv_heads * self.head_dim
        per_layer = (
            2 * (self.hidden + self.hidden)
            + 2 * (self.hidden + kv)
            + 3 * (self.hidden + self.intermediate)
        )
        return r * per_layer * self.layers


MODELS = [
    Model("Qwen2.5-1.5B", 28, 12, 2, 1536, 8960, 1.544e9, 32_768),
    Model("Qwen2.5-7B", 28, 28, 4, 3584, 18944, 7.616e9, 131_072),
    Model("Qwen2.5-32B", 64, 40, 8, 5120, 27648, 32.76e9, 131_072),
    Model("Qwen2.5-72B", 80, 64, 8, 8192, 29568, 72.71e9, 131_072),
    Model("Llama-3.1-8B", 32, 32, 8, 4096, 14336, 8.03e9, 131_072),
    Model("Llama-3.1-70B", 80, 64, 8, 8192, 28672, 70.55e9, 131_072),
    Model("Mistral-7B-v0.1", 32, 32, 8, 4096, 14336, 7.24e9, 32_768),
    Model("Llama-2-7B", 32, 32, 32, 4096, 11008, 6.74e9, 4_096),
]

# The lab's round example: exactly 7e9 parameters, shaped like Qwen2.5-7B.
ROUND_7B = Model("7B (the lab's example)", 28, 28, 4, 3584, 18944, 7e9, 131_072)
