"""Watch one request move through an ensemble: animation frames and a Gantt chart from its real trace.

    run = flow.send(endpoint, "tta_ensemble", image=jpeg)       # live: traced (embedded) or statistics (remote)
    run = flow.recorded()[0]                                    # offline: a real trace shipped with the app
    fig = flow.animation(run, lang="zh")                        # plotly figure with frames and controls
    fig = flow.gantt(run, lang="zh")

``run`` (FlowRun, send, send_config, record, recorded), ``timeline`` (hops, frames and their captions on
the trace's timestamps), ``figures`` (the two plotly figures). The DAG (steps, tensors, stages) is
:func:`triton_kitchen.core.ensemble.build_dag`'s; positions are :func:`triton_kitchen.tools.diagram.compute_layout`'s.
"""

from triton_kitchen.tools.flow.figures import (
    GANTT_PHASES,
    PHASE_COLORS,
    SPEEDS,
    STATE_COLORS,
    Point,
    animation,
    animation_title,
    gantt,
    gantt_rows,
    positions,
)
from triton_kitchen.tools.flow.run import (
    EDITED_PREFIX,
    RECORDED_TRACE,
    FlowError,
    FlowRun,
    array_bytes,
    attach,
    record,
    recorded,
    send,
    send_config,
    step_models,
    tensor_shapes,
)
from triton_kitchen.tools.flow.timeline import (
    PACINGS,
    Frame,
    Hop,
    caption,
    frame_times,
    frames,
    hops,
    key_times,
    step_phase,
    tensor_label,
)

__all__ = [
    "EDITED_PREFIX",
    "GANTT_PHASES",
    "PACINGS",
    "PHASE_COLORS",
    "RECORDED_TRACE",
    "SPEEDS",
    "STATE_COLORS",
    "FlowError",
    "FlowRun",
    "Frame",
    "Hop",
    "Point",
    "animation",
    "animation_title",
    "array_bytes",
    "attach",
    "caption",
    "frame_times",
    "frames",
    "gantt",
    "gantt_rows",
    "hops",
    "key_times",
    "positions",
    "record",
    "recorded",
    "send",
    "send_config",
    "step_models",
    "step_phase",
    "tensor_label",
    "tensor_shapes",
]
