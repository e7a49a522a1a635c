"""The GPU model's components, checked first (given): generation alone against AReaL v0.3.

Fig. 2 (batched generation of the 1.5B model on 8 to 128 GPUs) and Fig. 5 (generation on 4
nodes with and without interruptible generation) are generation throughputs measured
apart from the runs the presets compare with. Each is predicted at its published
configuration with every unpublished setting at the assumption experiments/gpu_sources.py
states (fixed before the comparison was computed), and again with each setting at the
other end of its range. Nothing in the model is set from these numbers; run.py --preset
prints them and writes them to the JSON's top-level "gpu_components".
"""
import math

from experiments.gpu_model import GpuRun, at_mean, costs, lengths, run, walk_costs
from experiments.gpu_sources import (COMPONENT_SHORT_MEAN, GEN_SCALING, GPUS_PER_NODE,
                                     INTERRUPT_GEN, INTERRUPT_GEN_GPUS, INTERRUPT_GEN_GPUS_LOW,
                                     INTERRUPT_GPUS, PRESETS, PROMPT_TOKENS)
from gpu_core import GpuSettings, Linear, run_gpu_simulation
from lab.input_checks import unchecked


def batched_generation(scheduler, memory, preset, gen_gpus, c):
    """Generated tokens per second of one batch from empty engines on gen_gpus GPUs, under
    the decode costs of c, nothing else running: the batch's response tokens over the time
    its last response ends (the trainer costs nothing: k = 0, one update of 0 seconds)."""
    step, _, slots, _ = costs(memory, preset, 1, preset.sync_trainer, c, True)
    settings = GpuSettings(gen_gpus // preset.tp, slots, preset.prompts, 0, 1, preset.group_size,
                           step, Linear(0.0, 0.0), prompt=PROMPT_TOKENS,
                           max_running=preset.max_running, pin=preset.pin)
    r = run_gpu_simulation(settings, lengths(preset), unchecked(scheduler.may_start),
                           unchecked(scheduler.take_batch))
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
        values = [component(scheduler, memory, p, gpus, None)
                  for p in (areal, short["areal-1.5b"])]
        rows.append(component_row(f"Fig. 2: 1.5B on {gpus} GPUs", "AREAL_V03 Fig. 2 (read "
                                  "from the figure)", published, values))
    for (name, interruptible), published in INTERRUPT_GEN.items():
        p = PRESETS[name]
        values = [component(scheduler, memory, q, g, interruptible)
                  for q, g in ((p, INTERRUPT_GEN_GPUS), (p, INTERRUPT_GEN_GPUS_LOW),
                               (short[name], INTERRUPT_GEN_GPUS))]
        what = "interruptible" if interruptible else "non-interruptible"
        rows.append(component_row(f"Fig. 5: {name[6:]} {what}, 4 nodes", "AREAL_V03 Fig. 5",
                                  published, values))
    return rows


def component_row(name, source, published, values):
    """A component's row (the JSON's gpu_components): values[0] at the stated assumptions."""
    return dict(name=name, source=source, published=published, predicted=values[0],
                low=min(values), high=max(values), ratio=values[0] / published)
