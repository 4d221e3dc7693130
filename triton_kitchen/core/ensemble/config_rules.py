"""Triton 2.51's rules for one model's config outside ensembles, each reporting Triton's own wording.

From ``model_config_utils.cc``: the scheduling parts of ``ValidateModelConfig`` (dynamic batching's
priorities, queue policies and ``preserve_ordering``; sequence batching's control tensors and strategies;
the response cache), ``ValidateModelIOConfig`` (``ValidateIOShape`` with reshape, formats, shape tensors,
non-linear formats, ``ValidateBatchIO``) and ``ValidateInstanceGroup`` after ``NormalizeInstanceGroup``.
Each ``check_*`` reports into a collector and returns False at the first error, as Triton stops there.
"""

from __future__ import annotations

from functools import partial

from tritonclient.grpc import model_config_pb2 as mc

from triton_kitchen.core.config import ModelEntry
from triton_kitchen.core.ensemble.problems import Collector, dims_str, msg
from triton_kitchen.core.versions import TritonVersion

WILDCARD = -1
MIN_COMPUTE_CAPABILITY = "6.000000"  # Triton's default, as std::to_string prints it
_SEQ = mc.ModelSequenceBatching.Control


# -- dynamic batching --------------------------------------------------------------------------------------
def check_dynamic_batching(e: ModelEntry, c: Collector, name: str) -> bool:
    cfg = e.config
    if not cfg.HasField("dynamic_batching"):
        return True
    db = cfg.dynamic_batching
    line = partial(e.line, "dynamic_batching", 0)
    for i, size in enumerate(db.preferred_batch_size):
        if size <= 0 or size > cfg.max_batch_size:
            c.error(
                "bad_preferred_batch_size",
                msg("bad_preferred_batch_size", size=size, max_batch_size=cfg.max_batch_size),
                line=partial(e.line, "dynamic_batching", 0, "preferred_batch_size", i),
                triton=(
                    f"dynamic batching preferred size must be positive for {name}"
                    if size <= 0
                    else f"dynamic batching preferred size must be <= max batch size for {name}"
                ),
                size=size,
                max_batch_size=cfg.max_batch_size,
            )
            return False
    levels = db.priority_levels
    if levels:
        if db.default_priority_level == 0 or db.default_priority_level > levels:
            c.error(
                "bad_default_priority",
                msg("bad_default_priority", level=db.default_priority_level, levels=levels),
                line=partial(e.line, "dynamic_batching", 0, "default_priority_level", 0, default=line()),
                triton=f"default priority level must be in range [1, {levels}] for {name}",
                level=db.default_priority_level,
                levels=levels,
            )
            return False
        for level in db.priority_queue_policy:
            if level == 0 or level > levels:
                c.error(
                    "bad_queue_policy_level",
                    msg("bad_queue_policy_level", level=level, levels=levels),
                    line=partial(e.line, "dynamic_batching", 0, "priority_queue_policy", 0, default=line()),
                    triton=f"priority queue policy must have priority level in range [1, {levels}] for {name}",
                    level=level,
                    levels=levels,
                )
                return False
    if db.preserve_ordering:
        if levels > 1:
            c.error(
                "ordering_with_priorities",
                msg("ordering_with_priorities", levels=levels),
                line=partial(e.line, "dynamic_batching", 0, "preserve_ordering", 0, default=line()),
                triton=f"Only one priority level is allowed when 'preserve_ordering' is true for {name}",
                levels=levels,
            )
            return False
        policies = [db.default_queue_policy] + list(db.priority_queue_policy.values())
        for policy in policies:
            if (
                policy.default_timeout_microseconds != 0
                and policy.timeout_action == mc.ModelQueuePolicy.DELAY
            ):
                c.error(
                    "ordering_with_delay",
                    msg("ordering_with_delay"),
                    line=partial(e.line, "dynamic_batching", 0, "preserve_ordering", 0, default=line()),
                    triton=(
                        "Queue policy can not have DELAY as timeout action when 'preserve_ordering' is true "
                        f"for {name}"
                    ),
                )
                return False
    return True


# -- sequence batching -------------------------------------------------------------------------------------
def _control_error(batcher, name: str, kind: int, typed: bool) -> str | None:
    """Get(Boolean|Typed)SequenceControlProperties: Triton's message for the first fault, else None."""
    kind_name = _SEQ.Kind.Name(kind)
    seen_tensors: set[str] = set()
    seen = False
    for ci in batcher.control_input:
        if not ci.name:
            return f"sequence batching control tensor must have a name for {name}"
        if ci.name in seen_tensors:
            return f"sequence batching control tensor '{ci.name}' is specified for multiple control kinds for {name}"
        seen_tensors.add(ci.name)
        for ctl in ci.control:
            if ctl.kind != kind:
                continue
            if seen:
                return f"sequence batching specifies multiple {kind_name} tensors for {name}"
            seen = True
            counts = [len(ctl.int32_false_true), len(ctl.fp32_false_true), len(ctl.bool_false_true)]
            if typed:
                if any(counts):
                    return (
                        "sequence batching must not specify either 'int32_false_true', 'fp32_false_true' or "
                        f"'bool_false_true' for {kind_name} for {name}"
                    )
                if ctl.data_type not in (
                    mc.TYPE_UINT64,
                    mc.TYPE_INT64,
                    mc.TYPE_UINT32,
                    mc.TYPE_INT32,
                    mc.TYPE_STRING,
                ):
                    return (
                        f"unexpected data type for control {kind_name} for {name}. Allowed data types are "
                        "TYPE_UINT64, TYPE_INT64, TYPE_UINT32, TYPE_INT32 and TYPE_STRING"
                    )
                continue
            if not any(counts):
                return (
                    "sequence batching must specify either 'int32_false_true', 'fp32_false_true' or "
                    f"'bool_false_true' for {kind_name} for {name}"
                )
            if sum(1 for n in counts if n) > 1:
                return (
                    "sequence batching specifies more than one from 'int32_false_true', 'fp32_false_true' and "
                    f"'bool_false_true' for {kind_name} for {name}"
                )
            for field, n in zip(
                ("int32_false_true", "fp32_false_true", "bool_false_true"), counts, strict=True
            ):
                if n and n != 2:
                    return f"sequence batching control '{field}' must have exactly 2 entries for {kind_name} for {name}"
    return None


def check_sequence_batching(e: ModelEntry, c: Collector, name: str) -> bool:
    cfg = e.config
    if not cfg.HasField("sequence_batching"):
        return True
    sb = cfg.sequence_batching
    line = partial(e.line, "sequence_batching", 0)
    if cfg.response_cache.enable:
        c.error(
            "cache_with_sequence",
            msg("cache_with_sequence"),
            line=partial(e.line, "response_cache", 0),
            triton=(
                f"Response Cache does not currently support model {name} with sequence batching scheduler. "
                "Please disable the response cache."
            ),
        )
        return False
    for kind, typed in (
        (_SEQ.CONTROL_SEQUENCE_START, False),
        (_SEQ.CONTROL_SEQUENCE_END, False),
        (_SEQ.CONTROL_SEQUENCE_READY, False),
        (_SEQ.CONTROL_SEQUENCE_CORRID, True),
    ):
        triton = _control_error(sb, name, kind, typed)
        if triton:
            c.error(
                "sequence_control",
                msg("sequence_control", kind=_SEQ.Kind.Name(kind)),
                line=partial(e.line, "sequence_batching", 0, "control_input", 0, default=line()),
                triton=triton,
                kind=_SEQ.Kind.Name(kind),
            )
            return False
    if sb.HasField("oldest"):
        for size in sb.oldest.preferred_batch_size:
            if size <= 0 or size > cfg.max_batch_size:
                c.error(
                    "bad_sequence_preferred_size",
                    msg("bad_preferred_batch_size", size=size, max_batch_size=cfg.max_batch_size),
                    line=line,
                    triton=(
                        f"sequence batching preferred batch size must be positive for {name}"
                        if size <= 0
                        else f"sequence batching preferred batch size must be <= max batch size for {name}"
                    ),
                    size=size,
                )
                return False
    if sb.HasField("direct"):
        u = sb.direct.minimum_slot_utilization
        if u < 0.0 or u > 1.0:
            c.error(
                "bad_slot_utilization",
                msg("bad_slot_utilization", value=u),
                line=line,
                triton=f"sequence batching minimum slot utilization must be in range (0.0, 1.0] for {name}",
                value=u,
            )
            return False
    return True


def check_decoupled_cache(e: ModelEntry, c: Collector, name: str) -> bool:
    cfg = e.config
    if cfg.model_transaction_policy.decoupled and cfg.response_cache.enable:
        c.error(
            "cache_with_decoupled",
            msg("cache_with_decoupled"),
            line=partial(e.line, "response_cache", 0),
            triton=(
                f"Response Cache does not currently support model {name} with 'decoupled' transaction policy. "
                "Please disable the response cache."
            ),
        )
        return False
    return True


# -- model_metrics (Triton 2.52 on) -------------------------------------------------------------------------
# The first version that parses and checks ``model_metrics``: ValidateModelMetrics came with the field (core
# r24.11 src/model_config_utils.cc, 'Per-model customization of histogram metric buckets', core #405).
MODEL_METRICS_SINCE = TritonVersion(2, 52)
# the histogram families a model's metric_control may set (core r24.11 .. r26.06 src/metric_model_reporter.h
# metric_map_): any other family is a warning when the model loads
CUSTOMIZABLE_METRIC_FAMILIES = frozenset({"nv_inference_first_response_histogram_ms"})


def check_model_metrics(e: ModelEntry, c: Collector, version: TritonVersion) -> bool:
    """ValidateModelMetrics (the poll, in ValidateModelConfig's last step), then MetricModelReporter's warning
    on a family Triton core cannot customise (the load)."""
    cfg = e.config
    if version < MODEL_METRICS_SINCE or "model_metrics" not in cfg.DESCRIPTOR.fields_by_name:
        return True
    if not cfg.HasField("model_metrics"):
        return True
    for i, control in enumerate(cfg.model_metrics.metric_control):
        where = partial(e.line, "model_metrics", 0, "metric_control", i)
        problem = None
        if not control.HasField("metric_identifier"):
            problem = ("metrics_no_identifier", "metric control must specify 'metric_identifier'")
        elif not control.metric_identifier.family:
            problem = ("metrics_no_family", "metric identifier must specify non-empty 'family'")
        elif not control.HasField("histogram_options"):
            problem = ("metrics_no_histogram", "metric control must specify 'histogram_options'")
        elif not len(control.histogram_options.buckets):
            problem = ("metrics_no_buckets", "histogram options must specify non-empty 'buckets'")
        if problem:
            c.error(problem[0], msg(problem[0], n=i + 1), line=where, triton=problem[1])
            return False
    for i, control in enumerate(cfg.model_metrics.metric_control):
        family = control.metric_identifier.family
        if family not in CUSTOMIZABLE_METRIC_FAMILIES:
            c.warning(
                "metrics_family_not_customizable",
                msg(
                    "metrics_family_not_customizable",
                    family=family,
                    known=sorted(CUSTOMIZABLE_METRIC_FAMILIES),
                ),
                line=partial(e.line, "model_metrics", 0, "metric_control", i),
                triton=f"Metric family '{family}' in 'metric_identifier' is not a customizable metric in Triton core.",
                family=family,
            )
    return True


# -- inputs and outputs ------------------------------------------------------------------------------------
def _element_count(dims) -> int:
    """GetElementCount: -1 when any dimension is variable, 0 for no dimensions."""
    count = 0
    for d in dims:
        if d == WILDCARD:
            return WILDCARD
        count = d if count == 0 else count * d
    return count


def _chunks(dims) -> list[int]:
    out, cur = [], 1
    for d in dims:
        if d == WILDCARD:
            out.append(cur)
            cur = 1
        else:
            cur *= d
    return out + [cur]


def _shape_fault(io, max_batch_size: int, kind: str) -> tuple[str, str] | None:
    """ValidateIOShape: (code, Triton's message without the model name), or None."""
    if not io.name:
        return "io_no_name", f"model {kind} must specify 'name'"
    prefix = f"model {kind} '{io.name}' "
    if io.data_type == 0:
        return "io_no_data_type", prefix + "must specify 'data_type'"
    if len(io.dims) == 0:
        return "io_no_dims", prefix + "must specify 'dims'"
    has_reshape = io.HasField("reshape")
    if has_reshape and len(io.reshape.shape) == 0 and max_batch_size == 0:
        return (
            "reshape_empty",
            prefix + "cannot have empty reshape for non-batching model as scalar tensors are not supported",
        )
    if any(d < 1 and d != WILDCARD for d in io.dims):
        return (
            "io_bad_dims",
            prefix + "dimension must be integer >= 1, or -1 to indicate a variable-size dimension",
        )
    if not has_reshape:
        return None
    if any(d < 1 and d != WILDCARD for d in io.reshape.shape):
        return (
            "reshape_bad_dims",
            prefix + "reshape dimensions must be integer >= 1, or -1 to indicate a variable-size dimension",
        )
    dims_size, reshape_size = _element_count(io.dims), _element_count(io.reshape.shape)
    if dims_size != reshape_size and (reshape_size != 0 or dims_size != 1):
        return "reshape_size", prefix + "has different size for dims and reshape"
    if dims_size == WILDCARD:
        a, b = _chunks(io.dims), _chunks(io.reshape.shape)
        if len(a) != len(b):
            return (
                "reshape_variable",
                prefix + "has different number of variable-size dimensions for dims and reshape",
            )
        if a != b:
            return "reshape_size", prefix + "has different size for dims and reshape"
    return None


def _io_fault(io, max_batch_size: int, platform: str, kind: str) -> tuple[str, str] | None:
    """ValidateModelInput / ValidateModelOutput."""
    fault = _shape_fault(io, max_batch_size, kind)
    if fault:
        return fault
    if (
        kind == "input"
        and io.format in (mc.ModelInput.FORMAT_NHWC, mc.ModelInput.FORMAT_NCHW)
        and len(io.dims) != 3
    ):
        return "format_dims", "model input NHWC/NCHW require 3 dims"
    if platform != "tensorrt_plan" and io.is_shape_tensor:
        return "shape_tensor_not_trt", "shape tensors are only supported for TensorRT platform"
    if io.is_non_linear_format_io:
        if platform != "tensorrt_plan":
            return "non_linear_not_trt", "Non-linear IO format is only supported for the TensorRT platform"
        if len(io.dims) != 3:
            return "non_linear_dims", f"Non-linear IO format {kind} requires 3 dims"
    return None


# missing facts a backend may complete from the model file when auto-complete is on
AUTOFILLABLE = frozenset({"io_no_data_type", "io_no_dims"})


def check_io(e: ModelEntry, c: Collector, name: str, platform: str, autofilled: bool) -> bool:
    """ValidateModelIOConfig.  With ``autofilled`` (the backend completes the config from the model file),
    a missing data type or dims is a warning: Triton fills it in before it checks."""
    cfg = e.config
    ok = True
    for kind in ("input", "output"):
        for i, io in enumerate(getattr(cfg, kind)):
            fault = _io_fault(io, cfg.max_batch_size, platform, kind)
            if not fault:
                continue
            code, triton = fault
            label = (
                msg("io_named", kind=msg("kind_" + kind), name=io.name)
                if io.name
                else msg("io_unnamed", kind=msg("kind_" + kind), n=i + 1)
            )
            params = {"tensor": io.name} if io.name else {}
            if code == "io_bad_dims":
                params["dims"] = list(io.dims)
            if autofilled and code in AUTOFILLABLE:
                c.warning(
                    code + "_autofill",
                    msg(code + "_autofill", label=label),
                    line=partial(e.line, kind, i),
                    **params,
                )
                continue
            c.error(
                code,
                msg(
                    code,
                    label=label,
                    dims=dims_str(io.dims),
                    reshape=dims_str(io.reshape.shape),
                    platform=platform,
                ),
                line=partial(e.line, kind, i),
                triton=f"{triton} for {name}",
                **params,
            )
            return False
    return ok and check_batch_io(e, c, name)


def _batch_io_fault(cfg) -> tuple[str, str, str, int] | None:
    """ValidateBatchIO: (code, Triton's message, field, index), or None."""
    inputs = {io.name for io in cfg.input}
    outputs = {io.name for io in cfg.output}
    for i, bi in enumerate(cfg.batch_input):
        kind = mc.BatchInput.Kind.Name(bi.kind)
        if len(bi.source_input) != 1:
            return (
                "batch_io_sources",
                f"batch input kind '{kind}' expects 1 source input, got {len(bi.source_input)}",
                "batch_input",
                i,
            )
        if bi.data_type not in (mc.TYPE_INT32, mc.TYPE_FP32):
            return (
                "batch_input_type",
                "batch input data type must be TYPE_INT32 or TYPE_FP32",
                "batch_input",
                i,
            )
        for src in bi.source_input:
            if src not in inputs:
                return "batch_io_unknown_source", f"unknown source input name '{src}'", "batch_input", i
    for i, bo in enumerate(cfg.batch_output):
        kind = mc.BatchOutput.Kind.Name(bo.kind)
        if len(bo.source_input) != 1:
            return (
                "batch_io_sources",
                f"batch output kind '{kind}' expects 1 source input, got {len(bo.source_input)}",
                "batch_output",
                i,
            )
        for src in bo.source_input:
            if src not in inputs:
                return "batch_io_unknown_source", f"unknown source input name '{src}'", "batch_output", i
        targets: set[str] = set()
        for t in bo.target_name:
            if t not in outputs:
                return "batch_output_unknown_target", f"unknown target output name '{t}'", "batch_output", i
            if t in targets:
                return (
                    "batch_output_target_twice",
                    f"target output name '{t}' can only be specified once",
                    "batch_output",
                    i,
                )
            targets.add(t)
    return None


def check_batch_io(e: ModelEntry, c: Collector, name: str) -> bool:
    fault = _batch_io_fault(e.config)
    if not fault:
        return True
    code, triton, field, i = fault
    c.error(code, msg(code, text=triton), line=partial(e.line, field, i), triton=f"{triton} for {name}")
    return False


# -- instance groups ---------------------------------------------------------------------------------------
def check_instance_groups(
    e: ModelEntry, c: Collector, name: str, platform: str, backend: str, gpus: int | None
) -> bool:
    """NormalizeInstanceGroup, then ValidateInstanceGroup.  ``gpus``: how many GPUs the server has (ids
    0..gpus-1); None when unknown, so that only what is wrong on every server is an error."""
    cfg = e.config
    supported = set(range(gpus)) if gpus is not None else None
    for i, g in enumerate(cfg.instance_group):
        gname = g.name or f"{name}_{i}"
        line = partial(e.line, "instance_group", i)
        kind = g.kind
        if kind == mc.ModelInstanceGroup.KIND_AUTO and supported is not None:
            on_gpu = bool(supported) and all(d in supported for d in g.gpus)
            kind = mc.ModelInstanceGroup.KIND_GPU if on_gpu else mc.ModelInstanceGroup.KIND_CPU
        kind_name = mc.ModelInstanceGroup.Kind.Name(kind)
        if g.count < 0:
            c.warning(
                "instance_count_default", msg("instance_count_default", group=gname, count=g.count), line=line
            )
        if kind in (mc.ModelInstanceGroup.KIND_CPU, mc.ModelInstanceGroup.KIND_MODEL) and len(g.gpus):
            c.error(
                "instance_kind_gpus",
                msg("instance_kind_gpus", group=gname, kind=kind_name, gpus=list(g.gpus)),
                line=line,
                triton=f"instance group {gname} of model {name} has kind {kind_name} but specifies one or more GPUs",
                group=gname,
            )
            return False
        if kind == mc.ModelInstanceGroup.KIND_GPU:
            if supported is not None and not supported:
                c.error(
                    "instance_no_gpus",
                    msg("instance_no_gpus", group=gname),
                    line=line,
                    triton=f"instance group {gname} of model {name} has kind KIND_GPU but no GPUs are available",
                    group=gname,
                )
                return False
            for gid in g.gpus:
                if gid < 0 or (supported is not None and gid not in supported):
                    have = ", ".join(str(d) for d in sorted(supported or ()))
                    c.error(
                        "instance_bad_gpu",
                        msg("instance_bad_gpu", group=gname, gpu=gid, gpus=gpus if gpus is not None else "?"),
                        line=partial(e.line, "instance_group", i, "gpus", 0, default=line()),
                        triton=(
                            f"instance group {gname} of model {name} specifies invalid or unsupported gpu id {gid}. "
                            "GPUs with at least the minimum required CUDA compute compatibility of "
                            f"{MIN_COMPUTE_CAPABILITY} are: {have}"
                        ),
                        group=gname,
                        gpu=gid,
                    )
                    return False
        if platform != "tensorrt_plan" and len(g.profile):
            c.error(
                "instance_profile_not_trt",
                msg("instance_profile_not_trt", group=gname),
                line=line,
                triton=(
                    f"instance group {gname} of model {name} and platform {platform}specifies profile field which "
                    "is only supported for TensorRT models"
                ),
                group=gname,
            )
            return False
    return True
