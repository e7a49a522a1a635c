"""Published RL runs as presets for the GPU model (given): every number with its source.

A preset is a run's sourced configuration. Run as a perfect pipeline (no per-step
overhead, trainer at peak FLOP/s, nothing between updates) it gives a bound; its walk
(areal_walk, VERL_WALK) then adds the real pipeline's costs one at a time. Each value is
cited (repository, path and commit; paper and table; or URL), or marked ASSUMED with its
range and the reason, or SET from one published number (at most one per run, the fit
set: docs/gpu-model.md names it and the held-out numbers). A cost's range (Cost.cheap,
Cost.dear) gives the band. The components (GEN_SCALING, INTERRUPT_GEN) and their
assumptions are at the end. Nothing here was tuned to a number it is compared with.
`python run.py --preset NAME` runs one.

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
  AREAL_CODE  inclusionAI/AReaL @ 7dc6daa6cc2b47ecacbf8bc52262138147df2b0b:
              realhf/system/gserver_manager.py (_round_robin_schedule, the default policy
               of realhf/api/cli_args.py's AsyncRLOptions; "qid prompt (n samples) use the
               same dst server"; allocate_rollout admits while running <
               max_concurrent_rollouts; its poll loop, every 5 s, calls
               /update_weights_from_disk on every server, interrupting requests);
              realhf/api/cli_args.py (max_concurrent_rollouts "Defaults to train batch
               size"; SGLang max_running_requests None), realhf/experiments/async_exp/
               async_rl_exp.py (None -> the train RPC's n_seqs, 512 prompts);
              realhf/system/model_worker.py (after every train_step the trainer saves the
               weights to PARAM_REALLOC_PATH and waits at a barrier: "param-sync-save");
              realhf/impl/model/backend/sglang.py (the synchronous run's servers reload
               through the same update_weights_from_disk);
              training/configs/async-ppo.yaml and sync-ppo.yaml (ckpt_freq_secs 600)
  SGLANG_LIMIT sgl-project/sglang python/sglang/srt/managers/tp_worker.py: with
              max_running_requests None, min(max_total_num_tokens // 2, request pool),
              the pool at least 2,048 (version AReaL pins not checked)
  VLLM_LIMIT  volcengine/verl verl/trainer/config/rollout/rollout.yaml
              @ 19997f9ec3d0a3c44a941ea09b89eeabf38bf261
              (max_num_seqs: 1024; the run's script does not change it)
  VERL_RUN    volcengine/verl recipe/fully_async_policy/shell/dapo_7b_math_fsdp2_64_64.sh @ 19997f9
              (the README's run: staleness_threshold 0.5, require_batches 4,
               trigger_parameter_sync_step 4, fsdp_size 8, gen_tp 4, actor_offload False,
               gpu_memory_utilization 0.80, calculate_log_probs True, save_freq -1,
               test_freq 20, val_before_train True); the README's checkpoint-engine table
               (lines 471-474): Qwen2.5-Math-7B parameter sync 0.02 s with the engine, its
               default (line 108: "default `True`"), 0.12 s without
  AREAL_V01   inclusionAI/AReaL blog/AReaL_v0_1.md @ 13c5dd227af1ea5c76e986c672c9ce405d20d531
              (Figure 1, assets/figures/distill_1.5b_24k_curve.png: R1-Distill-Qwen-1.5B's
               response lengths during RL, about 4,100 to 7,100 tokens, read off its axis)
  AREAL_CFG   inclusionAI/AReaL training/configs/async-ppo.yaml
              @ 7dc6daa6cc2b47ecacbf8bc52262138147df2b0b
              (max_head_offpolicyness 4, max_new_tokens 27648, recompute_logprob true,
               use_decoupled_loss true, gradient_checkpointing true, kl_ctl 0,
               mem_fraction_static 0.8, train_bs_n_seqs 512, group_size 16,
               ppo_n_minibatches 4, total_train_epochs 5, boba_106k data)
  AREAL_SYNC  inclusionAI/AReaL training/configs/sync-ppo.yaml @ the same commit
              (recompute_logprob false, gradient_checkpointing true, allocation
               sglang.d4p1m1+d2p2m1: its generation and training GPUs are separate)
  AREAL_ALLOC inclusionAI/AReaL benchmark/verl_312a8cb/build_cmd.py
              @ af2693dc31d5e63943692a81ffc68a684c32f314
              (n_sglang_gpus = n_nodes * 8 // 4 * 3, SGLang TP 1 below 32B,
               mem_fraction_static 0.7 above 1.5B)
  AREAL_HW    inclusionAI/AReaL docs/tutorial/installation.md
              @ 5c7d0de0e85bc7e692c6c2087be99f5f40fd246d
              (8x H800 per node)
  VERL_README volcengine/verl recipe/fully_async_policy/README.md
              @ 19997f9ec3d0a3c44a941ea09b89eeabf38bf261
              ("Asynchronous Training on 7B Model": H20, Qwen2.5-Math-7B, 28K, n = 16, 512
               prompts, 400 steps, staleness 0.5, partial rollout; per-phase seconds and
               hours for colocated 32, 64, 128 and async 16:16, 32:32, 64:64)
  VERL_COLOC  volcengine/verl recipe/fully_async_policy/exp/qwen2-7B-math_128/fsdp2_colocate/
              dapo_7b_math_fsdp2_colocate.sh @ 34cf9e7b91fbabb6761a74047bf33fe13bfb5318 (and
              the _32 and _64 folders' scripts: the same offload, gen_tp and fsdp_size)
              (offload=True: parameters and optimizer on the CPU, fsdp_size 2, gen_tp 4,
               enable_gradient_checkpointing=True, no KL)
  VERL_DEFAULTS volcengine/verl verl/trainer/config/_generated_ppo_trainer.yaml @ 19997f9
              (enable_gradient_checkpointing: true; VERL_RUN does not change it)
  SGLANG_1401 https://github.com/sgl-project/sglang/pull/1401 (Llama-3-8B, batch 1,
              FlashInfer with CUDA graph: median decode step 7.35 ms)
  MEMGAP      FerranAgulloLopez/vLLMBatchingMemoryGap @ a9186347e6146b4547ed25674b4e9034eb1e9abf,
              benchmarks_simple/definitive_results/analysis/decode_kernels/batch_size_evolution/
              (chart.py and its PDF: the mean over the decode phase of Nsight's "DRAM Read
               Bandwidth [Throughput %]", 41.0, 44.9, 46.8, 50.2, 50.4, 50.4% at batch 1,
               32, 64, 128, 256, 512; opt-1.3b/_161_338_<batch>/log_*.out: "Decode elapsed
               time" over its 337 decode steps, vLLM v0.5.2.dev, OPT-1.3B, weights "2.4509
               GB" (2^30 bytes: 1.3B fp16 parameters), a GPU of 63.43 GiB, run under nsys
               --cuda-graph-trace node)
  AREAL_V02_CFG inclusionAI/AReaL examples/configs/v0.2-qwen2-math/1.5B-distill/
              ppo-1.5B-distill-gpus-128.yaml @ ea9b799 (allocation_mode
               sglang.d64p1m1+d32p2m1: 64 generate, 64 train) and ppo-1.5B-distill-gpus-32.yaml
               (sglang.d16p1m1+d8p2m1: 16 + 16 on 4 nodes)
  AREAL_BENCH inclusionAI/AReaL benchmark/verl_v0_3_0_post1_76084d3/ @ ea9b799 (README.md:
              "effective training throughput, defined as the number of tokens used in each
               RL training step divided by the time of that step"; 31k generation length;
               areal_config.yaml benchmark_n_seqs 5120; scaling_trend_vs_verl.png: 1.5B at
               ctx 32768 on 128 GPUs about 100k tokens/s, read from the figure)
  VERL_DPSK   volcengine/verl docs/perf/dpsk.md @ 19997f9 (its "MFU" column: 0.4, 0.37, 0.31
              for Qwen3-30B-A3B on 8, 16, 32 GPUs, lines 73-75; 0.19 for DeepSeek 671b,
              line 64), counted by verl/utils/flops_counter.py at the same commit
  VERL_2579   https://github.com/volcengine/verl/issues/2579 ("0.17 for 2 nodes and 0.5 for
              sinlge node", the MFU of updating the actor)
  H800_NOTE   https://www.philisun.com/technical-analysis/nvidia-h800-vs-h100-a-technical-deep-dive-into-politically-defined-ai-chips
              (third-party: the H100's die, NVLink 400 GB/s against 900, FP64 cut, memory
               and bandwidth "largely consistent")
  H100_SHEET  https://www.nvidia.com/en-us/data-center/h100/ (H100 SXM: 80 GB, 3.35 TB/s,
              989 TFLOP/s dense BF16 = half the 1,979 quoted with sparsity)
  H20_SHEET   https://willitrunai.com/es/gpus/h20-96gb (third-party: 96 GB, 4.0 TB/s,
              148 TFLOP/s FP16 dense)
  HF_CONFIGS  config.json of each model on Hugging Face (vocab_size, hidden_size,
              tie_word_embeddings): the input embedding is vocab x hidden
"""

import math
import statistics
from typing import NamedTuple

from experiments.model_shapes import MODELS, Model

QWEN_15B, QWEN_7B = MODELS[0], MODELS[1]
# R1-Distill-Qwen-1.5B: Qwen2.5-1.5B's layers with an untied output embedding
# (151,936 x 1,536 more parameters): 1.78B, as its model card says.
R1_15B = Model(
    "R1-Distill-Qwen-1.5B", 28, 12, 2, 1536, 8960, QWEN_15B.params + 151_936 * 1536, 131_072
)
R1_7B = Model("R1-Distill-Qwen-7B", 28, 28, 4, 3584, 18944, QWEN_7B.params, 131_072)
MATH_7B = Model("Qwen2.5-Math-7B", 28, 28, 4, 3584, 18944, QWEN_7B.params, 32_768)
# The input embedding (vocab x hidden, HF_CONFIGS; untied in all three) is looked up, one
# row per token: a decode step does not read it whole and no token multiplies it.
INPUT_EMBEDDING = {
    R1_15B.name: 151_936 * 1536,
    R1_7B.name: 152_064 * 3584,
    MATH_7B.name: 152_064 * 3584,
}


def multiplied(model):
    """N: the parameters a token multiplies and a decode step reads whole, the input
    embedding left out. Example: R1-Distill-Qwen-1.5B, 1.777e9 - 0.233e9 = 1.544e9."""
    return model.params - INPUT_EMBEDDING.get(model.name, 0)


class GPU(NamedTuple):
    name: str
    memory_gb: float  # GB = 1e9 bytes
    bandwidth: float  # HBM bytes per second
    flops: float  # dense BF16 FLOP per second
    source: str


# H800: NVIDIA publishes no separate sheet; it is the H100 SXM with less NVLink bandwidth
# and FP64 (H800_NOTE), so memory, bandwidth and BF16 FLOP/s are the H100 SXM's.
H800 = GPU(
    "H800", 80, 3.35e12, 989e12, "H100_SHEET, H800_NOTE (H800 = H100 SXM memory and compute)"
)
H20 = GPU("H20", 96, 4.0e12, 148e12, "H20_SHEET")

# MEMGAP's own step times (seconds per decode step: "Decode elapsed time" / 337 steps) and
# DRAM read shares, OPT-1.3B (24 layers, 32 heads of 64: 196,608 KV bytes a token) with
# prompts of 161 tokens and 338 new ones. Read back, they give the bandwidth that GPU
# delivered and the peak its counter shares imply (experiments.gpu_sweep.memgap_reread): a GPU
# of about 1.4-1.6 TB/s, not an H100 SXM, so nothing of it is applied to the presets.
MEMGAP_STEP = {
    1: 1.357165 / 337,
    32: 2.198139 / 337,
    64: 3.131637 / 337,
    128: 4.918801 / 337,
    256: 8.884489 / 337,
    512: 17.192362 / 337,
}
MEMGAP_SHARES = {1: 0.410, 32: 0.449, 64: 0.468, 128: 0.502, 256: 0.504, 512: 0.504}
MEMGAP_PROMPT, MEMGAP_NEW = 161, 338
MEMGAP_WEIGHTS = 2.4509 * 2**30

# Engines' own limits on responses at once (the KV memory may allow more).
VLLM_MAX_NUM_SEQS = 1024  # VLLM_LIMIT
SGLANG_MAX_RUNNING = 2048  # SGLANG_LIMIT: at least 2,048 when unset, as AReaL leaves it
PROMPT_TOKENS = 200  # ASSUMED: math prompts are short; unpublished for both runs
Z95 = 1.6448536  # the standard normal's 95% quantile


class Trainer(NamedTuple):
    """How a run trains: the passes over each token, and the share of peak FLOP/s they get
    once the walk charges it (the bound trains at peak)."""

    checkpointing: bool  # activations recomputed in the backward pass: one more forward
    logprob_passes: int  # forward passes before the update (recomputed log-probabilities)
    efficiency: float  # achieved / peak FLOP/s: MFU (VERL_DPSK, VERL_2579; the walk's)
    source: str


def passes(trainer):
    """Forward-pass equivalents per trained token: forward 1 + backward 2, plus 1 with
    gradient checkpointing, plus the log-probability passes. Example: 3 + 1 + 1 = 5."""
    return 3 + int(trainer.checkpointing) + trainer.logprob_passes


def forward_flops(model, context):
    """FLOPs of one forward pass per token (2 per multiplied parameter, plus attention):

        2 * N + 2 * layers * heads * head_dim * context,   N = multiplied(model)

    Attention: the token at position t multiplies its query with t keys and t values
    (4 * t * heads * head_dim FLOPs a layer), so over a sequence of T tokens each token
    costs 2 * T on average; over a batch context = E[T^2] / E[T]. Example: R1-Distill-1.5B
    (N = 1.544e9, 28 x 12 x 128) at context 10,000: 3.09e9 + 0.86e9 FLOPs."""
    return 2 * multiplied(model) + 2 * model.layers * model.heads * model.head_dim * context


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
    return math.exp(r * mu + (r * sigma) ** 2 / 2) * phi(a - r * sigma) + cap**r * (1 - phi(a))


def median_for_mean(mean, sigma, cap):
    """The lognormal median whose capped mean is `mean` (bisection on the log)."""
    low, high = math.log(1.0), math.log(cap)
    for _ in range(100):
        mid = (low + high) / 2
        low, high = (mid, high) if capped_moment(math.exp(mid), sigma, cap) < mean else (low, mid)
    return math.exp((low + high) / 2)


def shape_for_tail(mean, cap, z=Z95):
    """(median, sigma) of the lognormal whose capped mean is `mean` and whose share above
    the cap is 1 - Phi(z) (5% at z = 1.645): median = cap * exp(-z sigma), sigma by
    bisection (a wider shape puts the median lower and the capped mean lower)."""
    low, high = 0.01, 5.0
    for _ in range(100):
        sigma = (low + high) / 2
        m = capped_moment(cap * math.exp(-z * sigma), sigma, cap)
        low, high = (sigma, high) if m > mean else (low, sigma)
    sigma = (low + high) / 2
    return cap * math.exp(-z * sigma), sigma


def context(median, sigma, cap):
    """E[T^2] / E[T] for T = prompt + min(lognormal(median, sigma), cap), tokens: the mean
    causal context of a trained token is half of it (forward_flops)."""
    first, second = capped_moment(median, sigma, cap, 1), capped_moment(median, sigma, cap, 2)
    P = PROMPT_TOKENS
    return (P * P + 2 * P * first + second) / (P + first)


# ------------------------------------------------------------------ the set numbers
# One number per run is SET from a published one; every other published number is held out.
# AReaL 1.5B: the mean response from Fig. 7's k = 0 rate times Table 2's 41.0 h (one
# measurement: 128.7k x 41.0 = 356.6k x 14.8 within 0.02%) over the 250 x 512 x 16
# sequences of the 250-batch reading (docs/gpu-model.md), less the prompt.
AREAL_FIG7 = (
    (0, 128.7e3),
    (1, 269.3e3),
    (2, 356.6e3),
    (4, 356.6e3),
    (8, 371.7e3),
    (16, 382.4e3),
    (None, 396.8e3),
)  # (k, tokens per second); None: no bound
AREAL_SYNC_HOURS, AREAL_SEQUENCES = 41.0, 250 * 512 * 16
AREAL_MEAN_LEN = dict(AREAL_FIG7)[0] * AREAL_SYNC_HOURS * 3600 / AREAL_SEQUENCES - PROMPT_TOKENS
# AReaL 7B: from a source of its own, AREAL_V02 (95k tokens/s on 128 GPUs) with
# AREAL_V02_README (400 steps, ~90 h), over 400 x 512 x 16 sequences: the same model,
# cap and batch in AReaL v0.2 (ASSUMED to carry over to v0.3's run).
AREAL_7B_MEAN_LEN = 95e3 * 90 * 3600 / (400 * 512 * 16) - PROMPT_TOKENS
# The shape: AREAL_V02's "truncation rate remained below 5%", taken at 5% (ASSUMED: the
# bound of the statement; range 0-5%).
AREAL_MEDIAN, AREAL_SIGMA = shape_for_tail(AREAL_MEAN_LEN, 27_648)
AREAL_7B_MEDIAN, AREAL_7B_SIGMA = shape_for_tail(AREAL_7B_MEAN_LEN, 27_648)

# The trainer's efficiency (achieved / peak FLOP/s), from RL trainers measured apart from
# every run compared here (nothing from Fig. 7 or Table 2): VERL_DPSK's MFU 0.40, 0.37,
# 0.31 (Qwen3-30B-A3B on 8, 16, 32 GPUs) and 0.19 (DeepSeek-671B); VERL_2579's update_actor
# MFU 0.5 on one node and 0.17 on two. The band spans them; the point is their median,
# fixed before any comparison was computed. They are taken as they are, though verl's
# flops_counter.py counts forward + backward over both embeddings and attention at twice
# the causal count, where the lab adds the checkpointed pass and leaves the input embedding
# out: at equal MFU the lab's share would be about 0.95-1.22 of verl's at the presets' lengths.
TRAINER_MFUS = (0.40, 0.37, 0.31, 0.19, 0.5, 0.17)
MFU_LOW, MFU_HIGH = min(TRAINER_MFUS), max(TRAINER_MFUS)
MFU = round(statistics.median(TRAINER_MFUS), 6)  # 0.34
AREAL_SYNC_TRAINER = Trainer(True, 0, MFU, "AREAL_SYNC (checkpointing, no recomputed log-probs)")
AREAL_ASYNC_TRAINER = Trainer(
    True, 1, MFU, "AREAL_CFG (checkpointing, recompute_logprob for the decoupled loss)"
)
VERL_ASYNC_UPDATE = 113.16  # VERL_README, 64:64 update_actor seconds: verl's set number
VERL_SIGMA = AREAL_SIGMA  # ASSUMED: verl publishes no length statistics; AReaL 1.5B's shape
VERL_CAP = 28_672


def verl_set_mean(efficiency=MFU):
    """SET, verl: the mean response length whose batch (512 x 16 sequences) the async
    trainer (VERL_RUN: no offload, checkpointing by VERL_DEFAULTS, rollout log-probs, so
    4 passes, at `efficiency`) trains on 64 H20s in VERL_README's 113.16 s of
    update_actor. Bisection: the tokens a batch can have in that time fall as it grows."""
    trainer = Trainer(True, 0, efficiency, "")
    budget = VERL_ASYNC_UPDATE * 64 * H20.flops * efficiency
    low, high = 1.0, 28_000.0
    for _ in range(60):
        mean = (low + high) / 2
        tokens = 512 * 16 * (PROMPT_TOKENS + mean)
        c = context(median_for_mean(mean, VERL_SIGMA, VERL_CAP), VERL_SIGMA, VERL_CAP)
        fits = tokens * flops_per_token(MATH_7B, trainer, c) < budget
        low, high = (mean, high) if fits else (low, mean)
    return (low + high) / 2


VERL_MEAN_LEN = verl_set_mean()
VERL_COLOC_TRAINER = Trainer(True, 1, MFU, "VERL_COLOC (offload, checkpointing, old_log_prob pass)")
VERL_ASYNC_TRAINER = Trainer(
    True, 0, MFU, "VERL_RUN (no offload, rollout log-probs), VERL_DEFAULTS (checkpointing)"
)


# ------------------------------------------------------------------ the walk down
class Costs(NamedTuple):
    """What a real pipeline pays below the bound (all 0, and the trainer at peak, in it).

    overhead    seconds per decode step beyond the roofline (scheduling, sampling, launches)
    all_reduce  seconds per tensor-parallel all-reduce, 2 a layer a step when tp > 1
    efficiency  the trainer's achieved / peak FLOP/s (1 in the bound)
    save        seconds the trainer spends after each update writing the weights out
    realloc     seconds of the synchronous run's second save (param-realloc), each update
    transfer    seconds moving a batch from generation to training (synchronous)
    reload      seconds each engine pauses at each update to load the new weights
    node_read   seconds ONE node takes to read the weights from the shared store: every
                engine pauses this times the generating nodes (all read at once) more
    poll        seconds the asynchronous servers wait for the manager to post new weights
    prefill     share of peak FLOP/s at which an interrupted response's KV is recomputed
                (0: not charged)
    reward      seconds of reward computation between generation and training (synchronous)
    checkpoint  seconds of each checkpoint, one every CHECKPOINT_EVERY seconds
    validation  validations in the run (each one cap-length response, the pipeline stopped)
    """

    overhead: float = 0.0
    all_reduce: float = 0.0
    efficiency: float = 1.0
    save: float = 0.0
    realloc: float = 0.0
    transfer: float = 0.0
    reload: float = 0.0
    node_read: float = 0.0
    poll: float = 0.0
    prefill: float = 0.0
    reward: float = 0.0
    checkpoint: float = 0.0
    validation: float = 0.0


class Cost(NamedTuple):
    """One step of the walk: set `field` of Costs to `value` in the runs it applies to;
    `cheap` and `dear` are the ends of its stated range (the band's low and high hours)."""

    name: str
    field: str
    value: float
    applies: str  # "both", "sync" or "async"
    source: str
    cheap: float | None = None  # None: no range (the value is sourced as it is)
    dear: float | None = None


CHECKPOINT_EVERY = 600  # AREAL_CODE: ckpt_freq_secs 600 (both configurations)
# Per decode step, beyond reading the weights at the sheet's bandwidth: SGLANG_1401's
# 7.35 ms for Llama-3-8B at batch 1, minus its bf16 weight read counted as the model counts
# it, 2 * N B / 3.35e12 B/s (GPU of that PR ASSUMED to be an H100) = 2.87 ms. N leaves out
# the untied input embedding, 128,256 x 4,096 (HF_CONFIGS: Llama-3-8B's vocab_size,
# hidden_size, tie_word_embeddings false): 8.03e9 - 0.53e9 = 7.50e9. Counting all 8.03e9
# would leave 2.56 ms. (MEMGAP's batch-1 vLLM step, 4.03 ms reading 2.70 GB on a GPU of
# about 1.6 TB/s, leaves about 2.3 ms: the same size, a fifth less.)
LLAMA3_8B_N = 8.03e9 - 128_256 * 4096
STEP_OVERHEAD = 7.35e-3 - 2 * LLAMA3_8B_N / 3.35e12
# The shared store (AREAL_HW: "10TB shared storage (NAS)"): its aggregate rate is
# unpublished, ASSUMED 2 GB/s, range 1-5 GB/s. Every generating node reads one copy of the
# weights from it at each update (ASSUMED: a node's servers share the read through the page
# cache; one read per server would cost 8 times as much at TP 1).
STORAGE, STORAGE_FAST, STORAGE_SLOW = 2e9, 5e9, 1e9
GPUS_PER_NODE = 8  # AREAL_HW, and verl's H20 nodes
POLL = 5.0  # AREAL_CODE: the gserver manager sleeps 5 s between checks for new weights
TRANSFER = 3.0  # AREAL_V02: the transfer stays "below 3 seconds even in a 1,000-GPU cluster"


def stored(name, field, applies, nbytes, source):
    """A Cost of moving `nbytes` through the shared store, at its ASSUMED rate and range."""
    return Cost(
        name,
        field,
        nbytes / STORAGE,
        applies,
        f"{source}; {nbytes / 1e9:.1f} GB at 2 GB/s ASSUMED (range 1-5)",
        nbytes / STORAGE_FAST,
        nbytes / STORAGE_SLOW,
    )


def areal_walk(model):
    """AReaL's costs below the bound, in the order they are charged."""
    weights = 2 * model.params  # HF safetensors, bf16, every parameter
    return (
        Cost(
            "decode overhead",
            "overhead",
            STEP_OVERHEAD,
            "both",
            f"SGLANG_1401: {STEP_OVERHEAD * 1e3:.2f} ms a step beyond the weight read",
        ),
        Cost(
            "trainer efficiency",
            "efficiency",
            MFU,
            "both",
            f"VERL_DPSK, VERL_2579: median {MFU:.2f} of six RL trainers (range "
            f"{MFU_LOW}-{MFU_HIGH})",
            MFU_HIGH,
            MFU_LOW,
        ),
        stored(
            "weight save (param-sync-save)",
            "save",
            "both",
            weights,
            "AREAL_CODE model_worker.py 818-846",
        ),
        stored(
            "second save (param-realloc)",
            "realloc",
            "sync",
            weights,
            "AREAL_CODE model_worker.py 1132-1152: save, barrier, update_weights_from_disk",
        ),
        Cost(
            "data transfer",
            "transfer",
            TRANSFER,
            "sync",
            "AREAL_V02: 'below 3 seconds'; ASSUMED at 3 s (range 0-3)",
            0.0,
            TRANSFER,
        ),
        stored(
            "weight reload from the shared store",
            "node_read",
            "both",
            weights,
            "AREAL_HW (shared NAS), AREAL_CODE update_weights_from_disk; one read a node",
        ),
        Cost(
            "poll for new weights",
            "poll",
            POLL / 2,
            "async",
            "AREAL_CODE gserver_manager.py 314: a 5 s sleep; ASSUMED half on average, charged "
            "as a pause (range 0-5 s)",
            0.0,
            POLL,
        ),
        Cost(
            "KV recompute after an interrupt",
            "prefill",
            0.5,
            "async",
            "AREAL_V03 (interrupted requests recompute their KV); ASSUMED prefill at 0.5 "
            "of peak (range 0.3-0.7)",
            0.7,
            0.3,
        ),
        Cost(
            "reward on the critical path",
            "reward",
            10.0,
            "sync",
            "AREAL_CODE (sync: a rew_inf step; async: in the rollout workers); ASSUMED "
            "10 s a batch (range 2-30)",
            2.0,
            30.0,
        ),
        stored(
            "checkpoint every 600 s",
            "checkpoint",
            "both",
            16 * model.params,
            "AREAL_CODE ckpt_freq_secs 600; ASSUMED weights and Adam state",
        ),
    )


# verl validates before training and every test_freq = 20 parameter updates (VERL_RUN):
# 1 + 400 / 20 = 21 times in 400 steps. ASSUMED: each lasts one cap-length response at
# batch 1 on a TP 4 engine (AIME 2024's 30 prompts; range 0 to that).
VERL_VALIDATIONS = 1 + 400 // 20

VERL_WALK = (
    Cost(
        "decode overhead",
        "overhead",
        STEP_OVERHEAD,
        "both",
        "SGLANG_1401 (ASSUMED for vLLM: no batch-1 vLLM figure on H20 found)",
    ),
    Cost(
        "TP all-reduces",
        "all_reduce",
        10e-6,
        "both",
        "ASSUMED 10 us each (range 5-20), 2 a layer: 0.56 ms a step",
        5e-6,
        20e-6,
    ),
    Cost(
        "trainer efficiency",
        "efficiency",
        MFU,
        "both",
        f"VERL_DPSK, VERL_2579: median {MFU:.2f} of six RL trainers (range "
        f"{MFU_LOW}-{MFU_HIGH}); the set mean length moves with it",
        MFU_HIGH,
        MFU_LOW,
    ),
    Cost(
        "parameter sync",
        "reload",
        0.02,
        "async",
        "VERL_README:108 checkpoint_engine.enable default True; its table: Qwen2.5-Math-7B "
        "0.02 s (Megatron; ASSUMED for FSDP2)",
    ),
    Cost(
        "KV recompute after an interrupt",
        "prefill",
        0.5,
        "async",
        "VERL_RUN partial_rollout True; ASSUMED prefill at 0.5 of peak (range 0.3-0.7)",
        0.7,
        0.3,
    ),
    Cost(
        "reward on the critical path",
        "reward",
        10.0,
        "sync",
        "ASSUMED 10 s a batch (range 2-30), as AReaL's",
        2.0,
        30.0,
    ),
    Cost(
        "validation (test_freq 20)",
        "validation",
        VERL_VALIDATIONS,
        "both",
        "VERL_RUN test_freq=20, val_before_train=True: 21 in 400 steps; ASSUMED one "
        "cap-length response each (range 0 to that)",
        0.0,
        VERL_VALIDATIONS,
    ),
)


class Preset(NamedTuple):
    name: str
    system: str
    model: Model
    gpu: GPU
    gpus: int  # all GPUs of the run
    gen_gpus: int  # generating GPUs in the asynchronous run
    tp: int  # GPUs per generation engine (tensor parallel)
    memory_fraction: float  # of GPU memory the engine takes for weights + KV
    prompts: int  # B: groups per batch
    group_size: int  # responses per prompt
    max_len: int  # new tokens at most
    median_len: float  # of the lognormal, tokens (from the SET mean, see above)
    sigma: float  # its shape
    k: int  # staleness bound of the asynchronous run
    n_steps: int  # batches the published hours cover
    baseline: str  # "disaggregated" (same split, k = 0) or "colocated"
    sync_trainer: Trainer
    async_trainer: Trainer
    sync_hours: float  # published
    async_hours: float  # published
    curve: tuple  # published (k, trained tokens per second) pairs, or ()
    scaling: tuple  # published (colocated rows, async rows) at other sizes, or ()
    notes: tuple  # (what, source or ASSUMED ...) lines printed with the table
    engine_limit: int = 10**9  # responses an engine runs at once at most (its own limit)
    max_running: int | None = None  # groups started and not finished at most (None: no cap)
    pin: bool = False  # a group's responses on one engine, round-robin
    walk: tuple = ()  # the Costs charged one at a time below the bound
    set_number: str = ""  # the one published number the preset's lengths come from
    residual: str = ""  # what the residual likeliest holds (costs with no published size)
    sync_gen_gpus: int | None = None  # generating GPUs of a disaggregated synchronous baseline
    fit: str = ""  # the published number the preset was set from, as a check's name
    lengths_at: object = None  # efficiency -> the set mean response, if set at the efficiency


# Held out: what the presets are compared with. verl's rows by GPU count (colocated) and
# generating GPUs (async): seconds per step and its phases, hours for 400 steps (VERL_README).
VERL_COLOCATED = {
    32: dict(
        step=790.10,
        gen=357.41,
        old_log_prob=107.71,
        update_actor=269.80,
        hours=3 * 24 + 17 + 5 / 60,
    ),
    64: dict(
        step=365.28, gen=150.72, old_log_prob=70.26, update_actor=133.41, hours=24 + 17 + 32 / 60
    ),
    128: dict(
        step=356.30, gen=177.85, old_log_prob=53.92, update_actor=113.81, hours=24 + 16 + 48 / 60
    ),
}
VERL_ASYNC = {
    16: dict(step=294.77, update_actor=313.81, hours=24 + 9 + 26 / 60),
    32: dict(step=189.26, update_actor=156.98, hours=21 + 40 / 60),
    64: dict(step=150.63, update_actor=113.16, hours=17 + 22 / 60),
}


AREAL_NOTES = (
    ("8 x H800 per node", "AREAL_HW; H800 figures from H100_SHEET (H800_NOTE)"),
    ("512 prompts x 16, cap 27,648", "AREAL_V02, AREAL_CFG"),
    ("3/4 of the GPUs generate, SGLang TP 1", "AREAL_ALLOC"),
    ("staleness bound 4 for math", "AREAL_CFG; AREAL_V03 Table 3 (k = 4 scores Table 2's 42.2)"),
    (
        "sync baseline = a 1:1 split at k = 0 (3:1 printed as a sensitivity)",
        "AREAL_V03 (k = 0 is synchronous RL), AREAL_SYNC (d4p1m1+d2p2m1: 4 + 4), AREAL_V02_CFG "
        "(d64p1m1+d32p2m1: 64 + 64)",
    ),
    (
        "1000 PPO steps = 250 batches x 4 minibatches",
        "AREAL_V02_README (250 steps), AREAL_CFG (4 minibatches)",
    ),
    ("at most 512 groups in flight", "AREAL_CODE (max_concurrent_rollouts = train batch)"),
    ("a prompt's 16 samples on one server, round-robin", "AREAL_CODE (gserver_manager.py)"),
    ("engine limit 2,048 responses (not binding)", "SGLANG_LIMIT"),
    ("sync: checkpointing, no log-prob pass (4 passes)", "AREAL_SYNC"),
    ("async: checkpointing + recomputed log-probs (5 passes)", "AREAL_CFG"),
    ("length shape: 5% of responses at the cap", "AREAL_V02 ('below 5%'; ASSUMED at 5%)"),
    ("prompt 200 tokens", "ASSUMED: unpublished"),
)

PRESETS = {
    "areal-1.5b": Preset(
        "areal-1.5b",
        "AReaL v0.3, R1-Distill-Qwen-1.5B, 16 nodes",
        R1_15B,
        H800,
        128,
        96,
        1,
        0.8,
        512,
        16,
        27_648,
        AREAL_MEDIAN,
        AREAL_SIGMA,
        4,
        250,
        "disaggregated",
        AREAL_SYNC_TRAINER,
        AREAL_ASYNC_TRAINER,
        AREAL_SYNC_HOURS,
        14.8,
        AREAL_FIG7,
        (),
        AREAL_NOTES + (("SGLang memory fraction 0.8", "AREAL_CFG"),),
        SGLANG_MAX_RUNNING,
        512,
        True,
        areal_walk(R1_15B),
        "mean response = Fig. 7's k = 0 rate x Table 2's 41.0 h / 2,048,000 sequences - prompt",
        "prefill, the synchronous experiment's scheduling between workers, lengths that "
        "differ between the two runs (no published sizes); against Fig. 2 the model "
        "generates slower than AReaL, not faster",
        64,
        "synchronous hours",
    ),
    "areal-7b": Preset(
        "areal-7b",
        "AReaL v0.3, R1-Distill-Qwen-7B, 24 nodes",
        R1_7B,
        H800,
        192,
        144,
        1,
        0.7,
        512,
        16,
        27_648,
        AREAL_7B_MEDIAN,
        AREAL_7B_SIGMA,
        4,
        250,
        "disaggregated",
        AREAL_SYNC_TRAINER,
        AREAL_ASYNC_TRAINER,
        57.7,
        25.4,
        (),
        (),
        AREAL_NOTES + (("SGLang memory fraction 0.7", "AREAL_ALLOC"),),
        SGLANG_MAX_RUNNING,
        512,
        True,
        areal_walk(R1_7B),
        "none from this run: mean response from AREAL_V02's 95k tokens/s x 90 h over "
        "400 x 8,192 sequences - prompt",
        "the synchronous step's generation and the shared store's rate (no published sizes); "
        "checkpoints and reloads, the largest ASSUMED costs, the most uncertain",
        96,
        "",
    ),
    "verl-7b": Preset(
        "verl-7b",
        "verl fully async, Qwen2.5-Math-7B, 128 x H20",
        MATH_7B,
        H20,
        128,
        64,
        4,
        0.8,
        512,
        16,
        VERL_CAP,
        median_for_mean(VERL_MEAN_LEN, VERL_SIGMA, VERL_CAP),
        VERL_SIGMA,
        1,
        400,
        "colocated",
        VERL_COLOC_TRAINER,
        VERL_ASYNC_TRAINER,
        40 + 48 / 60,
        17 + 22 / 60,
        (),
        (VERL_COLOCATED, VERL_ASYNC),
        (
            ("H20 x 128, 64:64 split, 512 x 16, cap 28,672, 400 steps", "VERL_README, VERL_RUN"),
            ("vLLM TP 4, memory fraction 0.80, at most 1,024 responses", "VERL_RUN, VLLM_LIMIT"),
            (
                "staleness_threshold 0.5 -> k = 1",
                "VERL_RUN; ASSUMED: 0.5 lets the rollouter run "
                "half a batch ahead; the lab's whole-batch "
                "bound rounds it up",
            ),
            ("colocated: offload, checkpointing, old_log_prob", "VERL_COLOC"),
            ("async: no offload, checkpointing, rollout log-probs", "VERL_RUN, VERL_DEFAULTS"),
            ("lognormal shape as AReaL 1.5B's", "ASSUMED: verl publishes no length statistics"),
            ("prompt 200 tokens", "ASSUMED: unpublished"),
        ),
        VLLM_MAX_NUM_SEQS,
        None,
        False,
        VERL_WALK,
        "mean response from the 64:64 update_actor, 113.16 s, at the trainer efficiency",
        "the colocated trainer's offload to the CPU (published, its update_actor on 128 GPUs "
        "is as long as the non-offloaded one on 64); a fixed cost of old_log_prob; the hybrid "
        "engine's switches; generation at verl's unpublished lengths (a cap-length "
        "straggler or two would fill the colocated gen gap); in the 64:64 run the trainer "
        "waits for samples (the README's 33.14 s of gen)",
        None,
        "64:64: update_actor s",
        verl_set_mean,
    ),
}
