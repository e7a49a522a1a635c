"""The experiments room (given): one module per experiment that run.py can run, in print order.

An experiment is a module with these names (part1_memory.py is the smallest example):

    KEY       its key in rl_systems.json, "drop_stale"
    LABEL     how messages and placeholders name it, "Drop stale"
    TASK      the task it needs, "2": a failure points at that task's tests
    SECONDS   its wall-clock seconds with the reference and the default flags, measured on
              a busy 2-core machine (a quiet one takes about a third); run.py allows 5 times
              this, times work(settings), and at least the harness's TIME_LIMIT
    FLAG      the option that asks for it ("drop_stale" for --drop-stale); None for the
              parts that always run (Parts 1-3 and Task 3c's masking)
    arguments(parser)   adds its own command-line options
    work(settings)      how many times the default's work the options ask for (>= 1)
    run(settings, results)  its result, a dict of plain numbers; it takes the task modules
                        from grading.load, and may read an earlier experiment's result.
                        settings (settings.Settings, built once by run.py) holds the model
                        families' settings (simulation, toy) and the options, of which an
                        experiment reads only its own
    show(result)        prints the result in full
    short(result)       (Parts 1-3 only) the result in one line, printed after a flag's section
    draw(results, path) (flags only) its own figure; the parts share rl_systems.png
                        (main_figure.py), so they have panel functions instead

A new experiment is one module here plus one line in REGISTRY (and its snapshot in
tools/snapshots/ and its section in the docs). The other modules of this room are what
several experiments share: settings (the model families' settings and their options),
model_shapes (the real models), gpu_model and gpu_sources (the GPU cost model and its
sources), staleness_maths, training and ppo (the toy's policy moving under lag), printing and
plotting.
"""
from experiments import (c_sweep, drop_stale, equal_hardware, gpu_sweep, learning_curves,
                         length_sweep, part1_memory, part2_scheduling, part3_mismatch,
                         part3c_masking, ppo_curves, preset, staleness, step_grid, timeline)

# Print order: the parts first, then the flags' sections.
REGISTRY = (part1_memory, part2_scheduling, part3_mismatch, part3c_masking,
            drop_stale, equal_hardware, timeline, preset, gpu_sweep, c_sweep, length_sweep,
            staleness, learning_curves, step_grid, ppo_curves)
PARTS = tuple(e for e in REGISTRY if e.FLAG is None)
FLAGS = tuple(e for e in REGISTRY if e.FLAG is not None)
