"""Published RL runs as presets for the GPU model (given): every number with its source.

Each value is either cited (repository, path and commit; paper and table; or URL),
marked ASSUMED with the reason, or marked FITTED with the one published number or
measurement it was fitted to (docs/gpu-model.md lists the fit set and the held-out set). Everything
a preset is compared with afterwards (`published`) is held out: no value here was
tuned to it. `python run.py --preset NAME` runs one.

Sources, named once (docs/gpu-model.md's "Sources" uses the same names):
  AREAL_V03   inclusionAI/AReaL blog/AReaL_v0_3.md @ ea9b799c91fc1a4219b5d5dcd14c94c5e7565c24
              (Table 2: hours, "1000 PPO steps"; Table 3: k = 4 equals Table 2's 42.2;
               k = 0 "degenerates to the synchronous RL setting"; Fig. 6: "1000 PPO
               updates"; Fig. 7 = assets/staleness_throughput.png at the same commit:
               effective training throughput against the staleness bound, values printed
               on the bars)
  AREAL_V02   inclusionAI/AReaL blog/AReaL_v0_2.md @ 13c5dd227af1ea5c76e986c672c9ce405d20d531
              (512 prompts x 16 responses, 27K new tokens, truncation below 5%, 4 PPO
               minibatches; assets/figures/thpt_comparison.png at the same commit:
               1.5B on 128 GPUs 173k tokens/s, 7B on 128 GPUs 95k tokens/s, values printed
               on the bars)
  AREAL_V02_README inclusionAI/AReaL README.md @ aff05c2544fe725af935790d1c710bc6ebe2079f
              (1.5B on 128 GPUs: 250 steps, ~27 h; 7B on 128 GPUs: 400 steps, ~90 h), with
              examples/configs/1.5B-distill/ppo-1.5B-distill-gpus-128.yaml at the same
              commit (sglang.d64p1m1+d32p2m1: generation and training on separate GPUs)
  AREAL_V01   inclusionAI/AReaL blog/AReaL_v0_1.md @ 13c5dd227af1ea5c76e986c672c9ce405d20d531
              (Figure 1, assets/figures/distill_1.5b_24k_curve.png: R1-Distill-Qwen-1.5B's
               response lengths during RL, about 4,100 to 7,100 tokens, read off its axis)
  AREAL_CFG   inclusionAI/AReaL training/configs/async-ppo.yaml @ 7dc6daa6cc2b47ecacbf8bc52262138147df2b0b
              (max_head_offpolicyness 4, max_new_tokens 27648, recompute_logprob true,
               use_decoupled_loss true, gradient_checkpointing true, kl_ctl 0,
               mem_fraction_static 0.8, train_bs_n_seqs 512, group_size 16,
               ppo_n_minibatches 4, total_train_epochs 5, boba_106k data)
  AREAL_SYNC  inclusionAI/AReaL training/configs/sync-ppo.yaml @ the same commit
              (recompute_logprob false, gradient_checkpointing true, allocation
               sglang.d4p1m1+d2p2m1: its generation and training GPUs are separate)
  AREAL_ALLOC inclusionAI/AReaL benchmark/verl_312a8cb/build_cmd.py @ af2693dc31d5e63943692a81ffc68a684c32f314
              (n_sglang_gpus = n_nodes * 8 // 4 * 3, SGLang TP 1 below 32B,
               mem_fraction_static 0.7 above 1.5B)
  AREAL_HW    inclusionAI/AReaL docs/tutorial/installation.md @ 5c7d0de0e85bc7e692c6c2087be99f5f40fd246d
              (8x H800 per node)
  VERL_README volcengine/verl recipe/fully_async_policy/README.md @ 19997f9ec3d0a3c44a941ea09b89eeabf38bf261
              ("Asynchronous Training on 7B Model": H20, Qwen2.5-Math-7B, 28K, n = 16, 512
               prompts, 400 steps, staleness 0.5, partial rollout; per-phase seconds and
               hours for colocated 32, 64, 128 and async 16:16, 32:32, 64:64)
  VERL_COLOC  volcengine/verl recipe/fully_async_policy/exp/qwen2-7B-math_128/fsdp2_colocate/
              dapo_7b_math_fsdp2_colocate.sh @ 34cf9e7b91fbabb6761a74047bf33fe13bfb5318 (and
              the _32 and _64 folders' scripts: the same offload, gen_tp and fsdp_size)
              (offload=True: parameters and optimizer on the CPU, fsdp_size 2, gen_tp 4,
               enable_gradient_checkpointing=True, no KL)
  VERL_SCRIPT volcengine/verl recipe/fully_async_policy/exp/qwen2-7B-math_128/fsdp2_fully-async_64-64/
              dapo_qwen2-7B-math_28k_fsdp2_fully-async_64-64_mbs32_tfq4.sh @ 34cf9e7b91fbabb6761a74047bf33fe13bfb5318
              (actor_offload=False, gen_tp 4, gpu_memory_utilization 0.80,
               max_response_length 28672, max_prompt_length 2048, no KL, rollout log-probs
               used; it sets staleness_threshold 1, where VERL_README's runs state 0.5)
  VERL_DEFAULTS volcengine/verl verl/trainer/config/ppo_trainer.yaml @ 34cf9e7b91fbabb6761a74047bf33fe13bfb5318
              (enable_gradient_checkpointing: true, the async script's default)
  SGLANG_1401 https://github.com/sgl-project/sglang/pull/1401 (Llama-3-8B, batch 1,
              FlashInfer with CUDA graph: median decode step 7.35 ms)
  MEMGAP      FerranAgulloLopez/vLLMBatchingMemoryGap @ a9186347e6146b4547ed25674b4e9034eb1e9abf,
              benchmarks_simple/definitive_results/analysis/decode_kernels/batch_size_evolution/
              (decode_kernels_batch_size_evolution.pdf with its chart.py: the mean over the
               decode phase of Nsight's "DRAM Read Bandwidth [Throughput %]", read from the
               bar heights: 41.0, 44.9, 46.8, 50.2, 50.4, 50.4% at batch 1, 32, 64, 128,
               256, 512; and
               opt-1.3b/_161_338_512/log_16005134.out: vLLM v0.5.2.dev, OPT-1.3B, weights
               2.4509 GiB, a GPU of 63.43 GiB, so not the 80 GB H100 SXM of H100_SHEET;
               prompts of 161 tokens, 338 new ones, 512 at once; profiled under Nsight)
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

from experiments.model_shapes import MODELS, Model

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

# Per decode step, beyond reading the weights at the sheet's bandwidth: SGLANG_1401's
# 7.35 ms for Llama-3-8B at batch 1, minus its bf16 weight read 2 * 8.03e9 B / 3.35e12 B/s
# (GPU of that PR ASSUMED to be an H100) = 2.56 ms. That measurement holds every shortfall
# of a batch-1 step (kernels below peak bandwidth, launches, sampling), so the weights are
# read at the full sheet bandwidth and the shortfall is counted once, here. Taken for vLLM
# too (ASSUMED: no vLLM number at batch 1 found).
STEP_OVERHEAD = 7.35e-3 - 2 * 8.03e9 / 3.35e12
# FITTED, all presets: an effective factor on the KV term, to MEMGAP's measurement (not a
# number of these runs, so outside the held-out set): vLLM decoding 512 OPT-1.3B responses
# at once (24 layers, hidden 2,048, so 196,608 KV bytes a token; prompt 161, 338 new
# tokens: 329.5 tokens of context a step on average) reads DRAM at 50.4% of its peak over
# the decode phase. kv_read_efficiency solves this model's step on the H100 sheet, with the
# overhead above in place, for the share of the bandwidth at which KV must be read to give
# that average: 0.60. So it holds whatever a large-batch step loses beyond that overhead
# (KV reads below peak, matrix multiplies below peak); the overhead is not counted again.
# It depends on the point it is fitted at (0.67 at batch 256, 0.88 at 128) and on the
# overhead (0.55 with the 1.14 ms that MEMGAP's own batch-1 share implies at the sheet's
# bandwidth). ASSUMED: the share carries over from that GPU (63.43 GiB, peak not stated)
# and vLLM 0.5 to the H800 and the H20, SGLang and vLLM.
MEMGAP_SHARES = {1: 0.410, 32: 0.449, 64: 0.468, 128: 0.502, 256: 0.504, 512: 0.504}
MEMGAP_BATCH, MEMGAP_PROMPT, MEMGAP_NEW = 512, 161, 338   # the batch the share is fitted at
MEMGAP_CONTEXT = MEMGAP_PROMPT + (MEMGAP_NEW - 1) / 2     # step j reads 161 + j - 1 tokens
MEMGAP_WEIGHTS, MEMGAP_KV_PER_TOKEN = 2.4509 * 2**30, 2 * 24 * 2048 * 2
OPT_1_3B = Model("OPT-1.3B", 24, 32, 32, 2048, 8192, MEMGAP_WEIGHTS / 2, 2048)


def kv_read_efficiency():
    """The share of the H100 sheet's bandwidth at which the model must read KV for MEMGAP's
    decode step (512 responses of 329.5 tokens on OPT-1.3B) to read DRAM at 50.4% of peak
    on average:

        0.504 = (W + KV) / bandwidth / (overhead + W / bandwidth + n * 2N / FLOP/s
                                        + KV / (efficiency * bandwidth))

    solved for efficiency, with W = 2N the weights' bytes and KV = n * 329.5 * 196,608
    bytes (33.2 GB): a step of 21.2 ms, of which KV takes 16.5 ms. Result: 0.60. The mean
    context stands for the 338 steps: bytes and seconds are both linear in the context, so
    the ratio of their sums is the ratio at the mean (experiments.gpu_model.dram_shares sums)."""
    kv = MEMGAP_BATCH * MEMGAP_CONTEXT * MEMGAP_KV_PER_TOKEN
    step = (MEMGAP_WEIGHTS + kv) / H800.bandwidth / MEMGAP_SHARES[MEMGAP_BATCH]
    rest = (STEP_OVERHEAD + MEMGAP_WEIGHTS / H800.bandwidth
            + MEMGAP_BATCH * 2 * OPT_1_3B.params / H800.flops)
    return kv / H800.bandwidth / (step - rest)


KV_READ = kv_read_efficiency()
# Tensor parallel engines all-reduce twice a layer per decode step (after attention and
# after the MLP). ASSUMED 10 us each (a small-message NVLink all-reduce; no measurement on
# H20 found): 28 layers -> 0.56 ms a step. Its bandwidth term (2 bytes x hidden per response
# and all-reduce) is under 1% of the KV read and is left out.
ALL_REDUCE_SECONDS = 10e-6
MFU = 0.40  # LLAMA3_MFU: 38-43%, the middle; for every trainer that keeps its state on GPU
PROMPT_TOKENS = 200  # ASSUMED: math prompts are short; unpublished for both runs
# Response lengths: a lognormal cut at the maximum length. Its shape is ASSUMED from two
# statistics read as quantiles: SEER's "the last ~10% take up to ~50% of the rollout" as
# q90 = q95 / 2, and AReaL's truncation "below 5%" (AREAL_V02) as q95 at most the cap:
#   sigma = ln 2 / (z95 - z90) = 0.693 / (1.645 - 1.282) = 1.91
# The mean is FITTED (below); with it, 2.5% of AReaL's responses reach the cap.
Z90, Z95 = 1.2815516, 1.6448536
SIGMA = math.log(2) / (Z95 - Z90)


class Trainer(NamedTuple):
    """How a run trains: the passes over each token and the share of peak FLOP/s they get."""
    checkpointing: bool    # activations recomputed in the backward pass: one more forward
    logprob_passes: int    # forward passes before the update (recomputed log-probabilities)
    efficiency: float      # achieved / peak FLOP/s (MFU)
    source: str


def passes(trainer):
    """Forward-pass equivalents per trained token: forward 1 + backward 2, plus 1 with
    gradient checkpointing, plus the log-probability passes. Example: 3 + 1 + 1 = 5."""
    return 3 + int(trainer.checkpointing) + trainer.logprob_passes


def forward_flops(model, context):
    """FLOPs of one forward pass per token (the usual 2 per parameter, plus attention):

        2 * n_params + 2 * layers * heads * head_dim * context

    Attention: the token at position t multiplies its query with t keys and t values
    (4 * t * heads * head_dim FLOPs a layer), so over a sequence of T tokens each token
    costs 2 * T on average; over a batch context = E[T^2] / E[T]. Example: R1-Distill-1.5B
    (1.78e9 parameters, 28 x 12 x 128) at context 10,000: 3.56e9 + 0.86e9 FLOPs."""
    return 2 * model.params + 2 * model.layers * model.heads * model.head_dim * context


def flops_per_token(model, trainer, context):
    """FLOPs to train one token: passes(trainer) * forward_flops(model, context)."""
    return passes(trainer) * forward_flops(model, context)


def phi(x):
    """The standard normal's distribution function."""
    return 0.5 * (1 + math.erf(x / math.sqrt(2)))


def capped_moment(median, sigma, cap, r=1):
    """E[min(X, cap)^r] of a lognormal X with this median and shape (tokens^r):

        exp(r mu + r^2 s^2 / 2) Phi((ln cap - mu - r s^2) / s) + cap^r (1 - Phi((ln cap - mu) / s))
    """
    mu = math.log(median)
    a = (math.log(cap) - mu) / sigma
    return math.exp(r * mu + (r * sigma)**2 / 2) * phi(a - r * sigma) + cap**r * (1 - phi(a))


def median_for_mean(mean, sigma, cap):
    """The lognormal median whose capped mean is `mean` (bisection on the log)."""
    low, high = math.log(1.0), math.log(cap)
    for _ in range(100):
        mid = (low + high) / 2
        low, high = (mid, high) if capped_moment(math.exp(mid), sigma, cap) < mean else (low, mid)
    return math.exp((low + high) / 2)


def context(median, sigma, cap):
    """E[T^2] / E[T] for T = prompt + min(lognormal(median, sigma), cap), tokens: the mean
    causal context of a trained token is half of it (forward_flops)."""
    first, second = capped_moment(median, sigma, cap, 1), capped_moment(median, sigma, cap, 2)
    P = PROMPT_TOKENS
    return (P * P + 2 * P * first + second) / (P + first)


# ------------------------------------------------------------------------ the fit set
# FITTED, AReaL: the mean response length, to AREAL_V03 Fig. 7's k = 0 point only (128.7k
# trained tokens per second, prompt and response tokens counted; Fig. 7 names no model,
# and its k = 4 / k = 0 ratio 2.771 equals Table 2's 1.5B 41.0 / 14.8 h, so it is taken as
# areal-1.5b). experiments.gpu_model.fit_areal_mean recomputes it; the 7B preset uses the same lengths.
AREAL_FIG7 = ((0, 128.7e3), (1, 269.3e3), (2, 356.6e3), (4, 356.6e3), (8, 371.7e3),
              (16, 382.4e3), (None, 396.8e3))  # (k, tokens per second); None: no bound
AREAL_MEAN_LEN = 2805.0  # fit_areal_mean(): 2,805.4 (16 bisection steps over 1,500 to 12,000)
AREAL_MEDIAN = median_for_mean(AREAL_MEAN_LEN, SIGMA, 27_648)

AREAL_SYNC_TRAINER = Trainer(True, 0, MFU, "AREAL_SYNC (checkpointing, no recomputed "
                                            "log-probs); LLAMA3_MFU")
AREAL_ASYNC_TRAINER = Trainer(True, 1, MFU, "AREAL_CFG (checkpointing, recompute_logprob "
                                             "for the decoupled loss); LLAMA3_MFU")
VERL_ASYNC_UPDATE = 113.16  # VERL_README, 64:64 update_actor seconds: verl's length fit
VERL_COLOC_UPDATE = 113.81  # VERL_README, colocated 128 update_actor seconds: its efficiency


def verl_fitted_mean():
    """FITTED, verl: the mean response length whose batch (512 x 16 sequences) the async
    trainer (VERL_SCRIPT: no offload, checkpointing by VERL_DEFAULTS, rollout log-probs, so
    4 passes, at MFU) trains on 64 H20s in VERL_README's 113.16 s of update_actor. Bisection:
    the tokens a batch can have in that time fall as the context grows."""
    trainer = Trainer(True, 0, MFU, "")
    budget = VERL_ASYNC_UPDATE * 64 * H20.flops * MFU
    low, high = 1.0, 28_000.0
    for _ in range(60):
        mean = (low + high) / 2
        tokens = 512 * 16 * (PROMPT_TOKENS + mean)
        c = context(median_for_mean(mean, SIGMA, 28_672), SIGMA, 28_672)
        fits = tokens * flops_per_token(MATH_7B, trainer, c) < budget
        low, high = (mean, high) if fits else (low, mean)
    return (low + high) / 2


def verl_colocated_efficiency(mean):
    """FITTED, verl: the offloaded colocated trainer's FLOP/s share (VERL_COLOC: parameters
    and optimizer on the CPU), from VERL_README's 128-GPU update_actor, 113.81 s:
        efficiency = tokens * 4 passes * forward_flops / (113.81 s * 128 * peak)"""
    tokens = 512 * 16 * (PROMPT_TOKENS + mean)
    c = context(median_for_mean(mean, SIGMA, 28_672), SIGMA, 28_672)
    work = tokens * passes(Trainer(True, 0, 1.0, "")) * forward_flops(MATH_7B, c)
    return work / (VERL_COLOC_UPDATE * 128 * H20.flops)


VERL_MEAN_LEN = verl_fitted_mean()
VERL_COLOC_TRAINER = Trainer(True, 1, verl_colocated_efficiency(VERL_MEAN_LEN),
                             "VERL_COLOC (offload, checkpointing, old_log_prob pass); "
                             "efficiency FITTED")
VERL_ASYNC_TRAINER = Trainer(True, 0, MFU, "VERL_SCRIPT (no offload, rollout log-probs), "
                                           "VERL_DEFAULTS (checkpointing); LLAMA3_MFU")


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
    median_len: float      # of the lognormal, tokens (from the FITTED mean, see above)
    sigma: float           # its shape
    k: int                 # staleness bound of the asynchronous run
    n_steps: int           # batches the published hours cover
    baseline: str          # "disaggregated" (same split, k = 0) or "colocated"
    sync_trainer: Trainer
    async_trainer: Trainer
    sync_hours: float      # published
    async_hours: float     # published
    curve: tuple           # published (k, trained tokens per second) pairs, or ()
    scaling: tuple         # published (colocated rows, async rows) at other sizes, or ()
    notes: tuple           # (what, source or ASSUMED ...) lines printed with the table


# Held out: what the presets are compared with; none of it was used above but the fit
# targets named there. verl's rows by GPU count (colocated) and generating GPUs (async):
# seconds per step and its phases, hours for 400 steps (VERL_README).
VERL_COLOCATED = {32: dict(step=790.10, gen=357.41, old_log_prob=107.71, update_actor=269.80,
                           hours=3 * 24 + 17 + 5 / 60),
                  64: dict(step=365.28, gen=150.72, old_log_prob=70.26, update_actor=133.41,
                           hours=24 + 17 + 32 / 60),
                  128: dict(step=356.30, gen=177.85, old_log_prob=53.92, update_actor=113.81,
                            hours=24 + 16 + 48 / 60)}
VERL_ASYNC = {16: dict(step=294.77, hours=24 + 9 + 26 / 60),
              32: dict(step=189.26, hours=21 + 40 / 60),
              64: dict(step=150.63, hours=17 + 22 / 60)}


AREAL_NOTES = (
    ("8 x H800 per node", "AREAL_HW; H800 figures from H100_SHEET (ASSUMED equal)"),
    ("512 prompts x 16, cap 27,648", "AREAL_V02, AREAL_CFG"),
    ("lognormal shape sigma 1.91", "ASSUMED from SEER (q90 = q95 / 2) and AREAL_V02 "
                                   "(truncation below 5%)"),
    ("3/4 of the GPUs generate, SGLang TP 1", "AREAL_ALLOC"),
    ("staleness bound 4 for math", "AREAL_CFG; AREAL_V03 Table 3 (k = 4 scores Table 2's "
                                   "42.2)"),
    ("sync baseline = same split at k = 0", "AREAL_V03 (k = 0 is synchronous RL; Fig. 7's "
                                            "k = 4 / k = 0 ratio = Table 2's), AREAL_SYNC"),
    ("1000 PPO steps = 250 batches x 4 minibatches", "AREAL_V02_README (250 steps) with "
                                                     "AREAL_V02's 173k tokens/s: 8.2k tokens "
                                                     "a sequence; AREAL_CFG (4 minibatches)"),
    ("sync: checkpointing, no log-prob pass (4 passes)", "AREAL_SYNC"),
    ("async: checkpointing + recomputed log-probs (5 passes)", "AREAL_CFG"),
    ("mean length FITTED to Fig. 7's k = 0 point", "AREAL_V03 Fig. 7 (fit_areal_mean)"),
    ("prompt 200 tokens", "ASSUMED: unpublished"),
    (f"KV read at {KV_READ:.2f} of the bandwidth", "FITTED to MEMGAP's 50.4% DRAM share "
                                                     "(vLLM, batch 512)"),
)

PRESETS = {
    "areal-1.5b": Preset(
        "areal-1.5b", "AReaL v0.3, R1-Distill-Qwen-1.5B, 16 nodes", R1_15B, H800, 128, 96, 1, 0.8,
        512, 16, 27_648, AREAL_MEDIAN, SIGMA, 4, 250, "disaggregated", AREAL_SYNC_TRAINER,
        AREAL_ASYNC_TRAINER, 41.0, 14.8, AREAL_FIG7, (),
        AREAL_NOTES + (("SGLang memory fraction 0.8", "AREAL_CFG"),)),
    "areal-7b": Preset(
        "areal-7b", "AReaL v0.3, R1-Distill-Qwen-7B, 24 nodes", R1_7B, H800, 192, 144, 1, 0.7,
        512, 16, 27_648, AREAL_MEDIAN, SIGMA, 4, 250, "disaggregated", AREAL_SYNC_TRAINER,
        AREAL_ASYNC_TRAINER, 57.7, 25.4, (), (),
        AREAL_NOTES + (("SGLang memory fraction 0.7", "AREAL_ALLOC"),)),
    "verl-7b": Preset(
        "verl-7b", "verl fully async, Qwen2.5-Math-7B, 128 x H20", MATH_7B, H20, 128, 64, 4, 0.8,
        512, 16, 28_672, median_for_mean(VERL_MEAN_LEN, SIGMA, 28_672),
        SIGMA, 1, 400, "colocated", VERL_COLOC_TRAINER,
        VERL_ASYNC_TRAINER, 40 + 48 / 60, 17 + 22 / 60, (), (VERL_COLOCATED, VERL_ASYNC),
        (("H20 x 128, 64:64 split, 512 x 16, cap 28,672, 400 steps", "VERL_README, VERL_SCRIPT"),
         ("vLLM TP 4, memory fraction 0.80", "VERL_SCRIPT; TP all-reduces ASSUMED 10 us"),
         ("staleness_threshold 0.5 -> k = 1", "VERL_README (VERL_SCRIPT sets 1, also k = 1); "
                                              "ASSUMED: 0.5 lets the rollouter run half a "
                                              "batch ahead; the lab's whole-batch bound "
                                              "rounds it up"),
         ("colocated: offload, checkpointing, old_log_prob", "VERL_COLOC; efficiency FITTED "
                                                            "to 113.81 s (128 GPUs)"),
         ("async: no offload, checkpointing, rollout log-probs", "VERL_SCRIPT, VERL_DEFAULTS"),
         ("mean length FITTED", "to the 64:64 update_actor, 113.16 s, at MFU (VERL_README)"),
         ("lognormal shape sigma 1.91 as AReaL's", "ASSUMED: verl publishes no length "
                                                   "statistics"),
         ("prompt 200 tokens", "ASSUMED: unpublished"),
         (f"KV read at {KV_READ:.2f} of the bandwidth", "FITTED to MEMGAP's 50.4% DRAM share "
                                                         "(vLLM, batch 512)"))),
}
