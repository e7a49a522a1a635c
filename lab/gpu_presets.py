"""Published RL runs as presets for the GPU model (given): every number with its source.

Each value is either cited (repository, path and commit; paper and table; or URL)
or marked ASSUMED with the reason. `python run.py --preset NAME` runs one; the
docs (docs/gpu-model.md) discuss how far the predictions land from the hours.

Sources, named once (docs/gpu-model.md's "Sources" uses the same names):
  AREAL_V03   inclusionAI/AReaL blog/AReaL_v0_3.md @ ea9b799c91fc1a4219b5d5dcd14c94c5e7565c24
              (Table 2: hours; Table 3: eta = 4 row equals Table 2's 42.2)
  AREAL_V02   inclusionAI/AReaL blog/AReaL_v0_2.md @ 13c5dd227af1ea5c76e986c672c9ce405d20d531
              (512 prompts x 16 responses, 27K new tokens, truncation below 5%, 4 minibatches)
  AREAL_CFG   inclusionAI/AReaL training/configs/async-ppo.yaml @ 7dc6daa6cc2b47ecacbf8bc52262138147df2b0b
              (max_head_offpolicyness 4, max_new_tokens 27648, recompute_logprob true,
               kl_ctl 0, total_train_epochs 5, mem_fraction_static 0.8, max_prompt_len 1024,
               train_bs_n_seqs 512, group_size 16, ppo_n_minibatches 4, boba_106k data)
  AREAL_ALLOC inclusionAI/AReaL benchmark/verl_312a8cb/build_cmd.py @ af2693dc31d5e63943692a81ffc68a684c32f314
              (n_sglang_gpus = n_nodes * 8 // 4 * 3, SGLang TP 1 below 32B,
               mem_fraction_static 0.7 above 1.5B)
  AREAL_HW    inclusionAI/AReaL docs/tutorial/installation.md @ 5c7d0de0e85bc7e692c6c2087be99f5f40fd246d
              (8x H800 per node)
  VERL_README volcengine/verl recipe/fully_async_policy/README.md @ 19997f9ec3d0a3c44a941ea09b89eeabf38bf261
              (H20, Qwen2.5-Math-7B, 28K, n = 16, 512 prompts, 400 steps, staleness 0.5,
               partial rollout; 128 GPUs: colocated 356.30 s/step = gen 177.85 + old_log_prob
               53.92 + update_actor 113.81, 1d 16h 48m; 64:64 async 17h 22m)
  VERL_SCRIPT volcengine/verl recipe/fully_async_policy/exp/qwen2-7B-math_128/fsdp2_fully-async_64-64/
              dapo_qwen2-7B-math_28k_fsdp2_fully-async_64-64_mbs32_tfq4.sh @ 34cf9e7b91fbabb6761a74047bf33fe13bfb5318
              (gen_tp 4, gpu_memory_utilization 0.80, max_response_length 28672,
               max_prompt_length 2048, no KL, rollout log-probs used; it sets
               staleness_threshold 1, where VERL_README's runs state 0.5)
  SGLANG_1401 https://github.com/sgl-project/sglang/pull/1401 (Llama-3-8B, batch 1,
              FlashInfer with CUDA graph: median decode step 7.35 ms)
  H100_SHEET  https://www.nvidia.com/en-us/data-center/h100/ (H100 SXM: 80 GB, 3.35 TB/s,
              989 TFLOP/s dense BF16 = half the 1,979 quoted with sparsity)
  H20_SHEET   https://willitrunai.com/es/gpus/h20-96gb (third-party: 96 GB, 4.0 TB/s,
              148 TFLOP/s FP16 dense)
  LLAMA3_MFU  The Llama 3 Herd of Models, arXiv 2407.21783, Table 4 (BF16 MFU 38-43%
              on H100)
  SEER        Seer, arXiv 2511.14617 (the last ~10% of requests can take up to ~50% of
              the rollout time)
"""
import math
from typing import NamedTuple

from lab.model_shapes import MODELS, Model

QWEN_15B, QWEN_7B = MODELS[0], MODELS[1]
# R1-Distill-Qwen-1.5B: Qwen2.5-1.5B's layers with an untied output embedding
# (151,936 x 1,536 more parameters): 1.78B, as its model card says.
R1_15B = Model("R1-Distill-Qwen-1.5B", 28, 12, 2, 1536, 8960, QWEN_15B.params + 151_936 * 1536,
               131_072)
R1_7B = Model("R1-Distill-Qwen-7B", 28, 28, 4, 3584, 18944, QWEN_7B.params, 131_072)
MATH_7B = Model("Qwen2.5-Math-7B", 28, 28, 4, 3584, 18944, QWEN_7B.params, 32_768)


class GPU(NamedTuple):
    name: str
    memory_gb: float     # GB = 1e9 bytes
    bandwidth: float     # HBM bytes per second
    flops: float         # dense BF16 FLOP per second
    source: str


# H800: NVIDIA publishes no separate sheet; it is the H100 SXM with less NVLink
# bandwidth, so memory, bandwidth and FLOP/s are the H100 SXM's (ASSUMED on that ground).
H800 = GPU("H800", 80, 3.35e12, 989e12, "H100_SHEET (H800 = H100 SXM memory and compute)")
H20 = GPU("H20", 96, 4.0e12, 148e12, "H20_SHEET")

# Per decode step, beyond reading weights and KV: SGLANG_1401's 7.35 ms for Llama-3-8B at
# batch 1, minus its bf16 weight read 2 * 8.03e9 B / 3.35e12 B/s (GPU of that PR ASSUMED
# to be an H100) = 2.56 ms. Taken for vLLM too (ASSUMED: no vLLM number at batch 1 found).
STEP_OVERHEAD = 7.35e-3 - 2 * 8.03e9 / 3.35e12
MFU = 0.40  # LLAMA3_MFU: 38-43%, the middle
PROMPT_TOKENS = 200  # ASSUMED: math prompts are short; unpublished for both runs

# Response lengths: a lognormal cut at the maximum length. Its shape sigma is fitted to
# SEER with AReaL's truncation bound: 5% reach the cap (q95 = cap) and the last 10%
# take half the decode steps of a step (q90 = cap / 2), so
#   sigma = ln 2 / (z95 - z90) = 0.693 / (1.645 - 1.282) = 1.91
Z90, Z95 = 1.2815516, 1.6448536
SIGMA = math.log(2) / (Z95 - Z90)


class Preset(NamedTuple):
    name: str
    system: str
    model: Model
    gpu: GPU
    gpus: int              # all GPUs of the run
    gen_gpus: int          # generating GPUs in the asynchronous run
    tp: int                # GPUs per generation engine (tensor parallel)
    memory_fraction: float  # of GPU memory the engine takes for weights + KV
    prompts: int           # B: groups per batch
    group_size: int        # responses per prompt
    max_len: int           # new tokens at most
    median_len: float      # of the lognormal, tokens
    k: int                 # staleness bound of the asynchronous run
    n_steps: int           # steps the published hours cover
    baseline: str          # "disaggregated" (same split, k = 0) or "colocated"
    sync_forwards: int     # extra forward passes per update, synchronous run
    async_forwards: int    # extra forward passes per update, asynchronous run
    sync_hours: float      # published
    async_hours: float     # published
    notes: tuple           # (what, source or ASSUMED ...) lines printed with the table


def median_for_truncation(cap, sigma, share):
    """The lognormal median that puts `share` of the lengths above `cap`:
    cap = median * exp(z * sigma) with z the (1 - share) quantile of the normal."""
    z = {0.05: Z95}[share]
    return cap / math.exp(z * sigma)


def capped_mean(median, sigma, cap):
    """E[min(X, cap)] of a lognormal X with this median and shape (tokens).

        E = mean * Phi((ln cap - mu - s^2) / s) + cap * (1 - Phi((ln cap - mu) / s))
    """
    mu = math.log(median)
    phi = lambda x: 0.5 * (1 + math.erf(x / math.sqrt(2)))  # noqa: E731
    a = (math.log(cap) - mu) / sigma
    return math.exp(mu + sigma**2 / 2) * phi(a - sigma) + cap * (1 - phi(a))


def median_for_mean(mean, sigma, cap):
    """The lognormal median whose capped mean is `mean` (bisection on the log)."""
    low, high = math.log(1.0), math.log(cap)
    for _ in range(100):
        mid = (low + high) / 2
        low, high = (mid, high) if capped_mean(math.exp(mid), sigma, cap) < mean else (low, mid)
    return math.exp((low + high) / 2)


def verl_calibrated_mean():
    """THE ONE CALIBRATED QUANTITY: verl's mean response length, from its 128-GPU colocated
    update_actor time (VERL_README: 113.81 s) at MFU:
        tokens per step = 113.81 s * 128 GPUs * 148e12 FLOP/s * MFU / (6 * n_params)
    minus the prompts, per response (8,192 responses). About 2,100 tokens."""
    tokens = 113.81 * 128 * H20.flops * MFU / (6 * MATH_7B.params)
    return tokens / (512 * 16) - PROMPT_TOKENS


AREAL_NOTES = (
    ("8 x H800 per node", "AREAL_HW; H800 figures from H100_SHEET (ASSUMED equal)"),
    ("512 prompts x 16, cap 27,648, truncation < 5%", "AREAL_V02, AREAL_CFG"),
    ("3/4 of the GPUs generate, SGLang TP 1", "AREAL_ALLOC"),
    ("staleness bound 4 for math", "AREAL_CFG; AREAL_V03 Table 3 (eta = 4 scores Table 2's "
                                   "42.2)"),
    ("sync baseline = same split at eta = 0", "AREAL_V03 (eta = 0 is synchronous RL)"),
    ("1000 PPO steps = 1000 batches", "DERIVED: AREAL_CFG trains 5 epochs of boba-106k "
                                      "= 5 x 106k / 512 = 1,035 batches"),
    ("1 extra forward (recomputed log-probs), no reference (kl_ctl 0)", "AREAL_CFG"),
    ("lengths: 5% at the cap, sigma 1.91", "ASSUMED: 'below 5%' (AREAL_V02) taken as 5%, "
                                           "sigma fitted to SEER"),
    ("prompt 200 tokens", "ASSUMED: unpublished"),
)

PRESETS = {
    "areal-1.5b": Preset(
        "areal-1.5b", "AReaL v0.3, R1-Distill-Qwen-1.5B, 16 nodes", R1_15B, H800, 128, 96, 1, 0.8,
        512, 16, 27_648, median_for_truncation(27_648, SIGMA, 0.05), 4, 1000, "disaggregated",
        1, 1, 41.0, 14.8, AREAL_NOTES + (("SGLang memory fraction 0.8", "AREAL_CFG"),)),
    "areal-7b": Preset(
        "areal-7b", "AReaL v0.3, R1-Distill-Qwen-7B, 24 nodes", R1_7B, H800, 192, 144, 1, 0.7,
        512, 16, 27_648, median_for_truncation(27_648, SIGMA, 0.05), 4, 1000, "disaggregated",
        1, 1, 57.7, 25.4, AREAL_NOTES + (("SGLang memory fraction 0.7", "AREAL_ALLOC"),)),
    "verl-7b": Preset(
        "verl-7b", "verl fully async, Qwen2.5-Math-7B, 128 x H20", MATH_7B, H20, 128, 64, 4, 0.8,
        512, 16, 28_672, median_for_mean(verl_calibrated_mean(), SIGMA, 28_672), 1, 400,
        "colocated", 1, 0, 40 + 48 / 60, 17 + 22 / 60,
        (("H20 x 128, 64:64 split, 512 x 16, cap 28,672, 400 steps", "VERL_README, VERL_SCRIPT"),
         ("vLLM TP 4, memory fraction 0.80", "VERL_SCRIPT"),
         ("staleness_threshold 0.5 -> k = 1", "VERL_README (VERL_SCRIPT sets 1, also k = 1); "
                                              "ASSUMED: 0.5 lets the rollouter run half a "
                                              "batch ahead; the lab's whole-batch bound "
                                              "rounds it up"),
         ("sync: old_log_prob forward; async: rollout log-probs", "VERL_README (old_log_prob "
                                                                  "column), VERL_SCRIPT"),
         ("published hours: 1d 16h 48m and 17h 22m at 400 steps", "VERL_README"),
         ("mean response length CALIBRATED", "on VERL_README's update_actor 113.81 s at MFU "
                                             "(verl_calibrated_mean)"),
         ("sigma 1.91 as AReaL's", "ASSUMED: the same shape"),
         ("prompt 200 tokens", "ASSUMED: unpublished"))),
}
