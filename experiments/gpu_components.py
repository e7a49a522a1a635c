"""The GPU model's components, checked first (given): generation alone against AReaL v0.3.

Fig. 2 (batched generation of the 1.5B model on 8 to 128 GPUs) and Fig. 5 (generation on 4
nodes with and without interruptible generation) are generation throughputs measured
apart from the runs the presets compare with. Each is predicted at its published
configuration with every unpublished setting at the assumption stated below (fixed before
the comparison was computed), and again with each setting at the other end of its range.
The sources' short names (AREAL_V03, AREAL_ALLOC, ...) are experiments/gpu_sources.py's.
Nothing in the model is set from these numbers; run.py --preset prints them and writes
them to the JSON's top-level "gpu_components".
"""

import math

from experiments.gpu_model import GpuRun, at_mean, costs, lengths, run, walk_costs
from experiments.gpu_sources import GPUS_PER_NODE, PRESETS, PROMPT_TOKENS
from gpu_core import GpuSettings, Linear, run_gpu_simulation
from lab.input_checks import unchecked

# Generation throughput measured apart from the runs, never used to set anything: each is
# predicted at its published configuration, each unpublished setting at a stated
# assumption (fixed before the comparison was computed) and moved, one at a time, to the
# other end of its range.
#   AREAL_V03 Fig. 2 (assets/gen_scaling_trend.png): "Strong scaling of batched generation
#   throughput for a 1.5B LRM", million tokens/s on 8 to 128 GPUs. The bars carry no printed
#   values: read from the figure's axis. Its right panel is a sketch without numbers. The
#   blog's text around it (blog/AReaL_v0_3.md lines 49-55 at ea9b799) gives only the
#   reason: spreading one batch over more GPUs shrinks each GPU's decoding batch. The
#   AReaL paper's NeurIPS 2025 version (assets/paper.pdf, added in 4ae18cf) keeps that
#   sentence in its Section 2.2 but not the plot; its Table 3 generation settings (512
#   prompts x 16, 27,648 new tokens at most, fp16 KV cache) and Appendix B.4's SGLang
#   v0.4.6 are the training runs', not this figure's. Unpublished: the batch, the
#   lengths and cap, the TP, the engine's settings, and whether prompt tokens are counted
#   (AReaL's own rollout counter, realhf/system/rollout_worker.py lines 310-314 at
#   ea9b799, sums each sample's prompt and response; counting the 200-token prompt here
#   would add about 2% to the predictions).
GEN_SCALING = {8: 0.13e6, 16: 0.23e6, 32: 0.40e6, 64: 0.62e6, 128: 0.64e6}
#   AREAL_V03 Fig. 5 (assets/interrupt_gen_ablation.png): "interruptible generation leads
#   to a 12% and 17% throughput increase for 1.5B and 7B models respectively on 4 nodes";
#   tokens/s printed on the bars. Unpublished: the split of the 32 GPUs, the lengths.
INTERRUPT_GEN = {
    ("areal-1.5b", True): 231e3,
    ("areal-1.5b", False): 207e3,
    ("areal-7b", True): 130e3,
    ("areal-7b", False): 111e3,
}
INTERRUPT_GPUS = 32
# ASSUMED for both figures: the preset's model, GPU, memory fraction, batch (512 x 16),
# TP 1 (AREAL_ALLOC) and lengths (its lognormal, 5% at the 27,648 cap); the walk's decode
# overhead. Range of the lengths: a mean of 4,100 tokens, the lowest of AREAL_V01's curve
# for the 1.5B model, at the preset's shape (at_mean keeps sigma and moves the median), which
# leaves 0.4% of the responses at the cap instead of 5%.
COMPONENT_SHORT_MEAN = 4_100
# ASSUMED for Fig. 5: 24 of the 32 GPUs generate (AREAL_ALLOC's 3/4, the asynchronous
# benchmark's split); range 16 (AREAL_V02_CFG's 32-GPU 1.5B configuration,
# sglang.d16p1m1+d8p2m1). Non-interruptible: each batch drains (the controller "must wait
# for the longest response"), then every engine reloads; interruptible: the asynchronous
# run at k = 4 under the walk's costs, its trainer never binding (the figure measures
# generation).
INTERRUPT_GEN_GPUS, INTERRUPT_GEN_GPUS_LOW = 24, 16


def batched_generation(scheduler, memory, preset, gen_gpus, c):
    """Generated tokens per second of one batch from empty engines on gen_gpus GPUs, under
    the decode costs of c, nothing else running: the batch's response tokens over the time
    its last response ends (the trainer costs nothing: k = 0, one update of 0 seconds)."""
    step, _, slots, _ = costs(memory, preset, 1, preset.sync_trainer, c, True)
    settings = GpuSettings(
        gen_gpus // preset.tp,
        slots,
        preset.prompts,
        0,
        1,
        preset.group_size,
        step,
        Linear(0.0, 0.0),
        prompt=PROMPT_TOKENS,
        max_running=preset.max_running,
        pin=preset.pin,
    )
    r = run_gpu_simulation(
        settings, lengths(preset), unchecked(scheduler.may_start), unchecked(scheduler.take_batch)
    )
    generated = r["batch_tokens"][0] - PROMPT_TOKENS * preset.prompts * preset.group_size
    return generated, r["updates"][0][1]


def interrupted_generation(scheduler, memory, preset, gen_gpus, gpus, c):
    """Generated tokens per second of the asynchronous run (k = the preset's) on gen_gpus of
    `gpus`, under the costs c but a trainer that never binds (no save, no checkpoint, an
    update of 0 seconds): what its engines make, interrupted at every update."""
    free = c._replace(efficiency=math.inf, save=0.0, checkpoint=0.0)
    setup = GpuRun(preset, gen_gpus, gpus - gen_gpus, preset.k, preset.async_trainer, free)
    result, _ = run(scheduler, memory, setup)
    sequences = preset.prompts * preset.group_size
    return (result["tokens_per_step"] - PROMPT_TOKENS * sequences) / result["seconds"]


def component(scheduler, memory, preset, gen_gpus, interruptible):
    """Generated tokens per second of preset's model: Fig. 2's batched generation
    (interruptible None), or Fig. 5's run on INTERRUPT_GPUS with or without interruptions.
    Without, a batch drains, then every engine reloads the weights (the walk's reload)."""
    c = walk_costs(preset, "async")[-1][1]
    if interruptible:
        return interrupted_generation(scheduler, memory, preset, gen_gpus, INTERRUPT_GPUS, c)
    tokens, seconds = batched_generation(scheduler, memory, preset, gen_gpus, c)
    if interruptible is None:
        return tokens / seconds
    nodes = math.ceil(gen_gpus / GPUS_PER_NODE)
    return tokens / (seconds + c.reload + nodes * c.node_read)


def gpu_components(scheduler, memory):
    """Each Fig. 2 and Fig. 5 point (GEN_SCALING, INTERRUPT_GEN) against the model at its
    stated assumptions (the point), and with each unpublished setting moved to the other
    end of its range, one at a time (low, high: the smallest and largest of them). Nothing
    in the model is set from these numbers."""
    rows = []
    areal = PRESETS["areal-1.5b"]
    short = dict((name, at_mean(p, COMPONENT_SHORT_MEAN)) for name, p in PRESETS.items())
    for gpus, published in GEN_SCALING.items():
        values = [component(scheduler, memory, p, gpus, None) for p in (areal, short["areal-1.5b"])]
        rows.append(
            component_row(
                f"Fig. 2: 1.5B on {gpus} GPUs",
                "AREAL_V03 Fig. 2 (read from the figure)",
                published,
                values,
            )
        )
    for (name, interruptible), published in INTERRUPT_GEN.items():
        p = PRESETS[name]
        values = [
            component(scheduler, memory, q, g, interruptible)
            for q, g in (
                (p, INTERRUPT_GEN_GPUS),
                (p, INTERRUPT_GEN_GPUS_LOW),
                (short[name], INTERRUPT_GEN_GPUS),
            )
        ]
        what = "interruptible" if interruptible else "non-interruptible"
        rows.append(
            component_row(
                f"Fig. 5: {name[6:]} {what}, 4 nodes", "AREAL_V03 Fig. 5", published, values
            )
        )
    return rows


def component_row(name, source, published, values):
    """A component's row (the JSON's gpu_components): values[0] at the stated assumptions."""
    return dict(
        name=name,
        source=source,
        published=published,
        predicted=values[0],
        low=min(values),
        high=max(values),
        ratio=values[0] / published,
    )
