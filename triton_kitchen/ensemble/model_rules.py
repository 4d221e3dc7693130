"""Rules Triton applies to one config on its own, in Triton's order: poll (name, backend, batch sizes,
the ensemble's scheduling and data flow), then load (versions, model files).

``ValidateModelConfig`` and ``ValidateEnsembleSchedulingConfig`` of Triton's ``model_config_utils.cc``;
nothing here needs the step models' configs (``validate.py`` checks those).
"""

from __future__ import annotations

import os
from functools import partial
from pathlib import Path

from triton_kitchen.config import ENSEMBLE_PLATFORM, ConfigError, ModelEntry
from triton_kitchen.ensemble.data_flow import _check_data_flow
from triton_kitchen.ensemble.problems import (
    Problem,
    Repo,
    _Collector,
    _dims_str,
    _m,
    _map_line,
    _step,
    _step_path,
    config_error_msg,
    has_errors,
)

KNOWN_PLATFORMS = {
    "tensorrt_plan": "tensorrt",
    "tensorflow_graphdef": "tensorflow",
    "tensorflow_savedmodel": "tensorflow",
    "onnxruntime_onnx": "onnxruntime",
    "pytorch_libtorch": "pytorch",
    "torch_aoti": "pytorch",
}


# file in a version directory -> backend Triton infers when the config names none
BACKEND_FILES = {
    "model.savedmodel": "tensorflow",
    "model.graphdef": "tensorflow",
    "model.plan": "tensorrt",
    "model.onnx": "onnxruntime",
    "model.xml": "openvino",
    "model.pt": "pytorch",
    "model.py": "python",
}


def validate_config_file(path: str | os.PathLike) -> list[Problem]:
    """A config file on its own (no model directory, no repository): the rules that need neither."""
    from triton_kitchen.config import locate, parse_config

    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as e:
        msg = _m("unreadable_file", reason=e.strerror or str(e))
        return [Problem("error", "unreadable", msg.render("en"), {}, 1, None, None, str(p), msg)]
    try:
        cfg = parse_config(data, p)
    except ConfigError as e:
        return [
            Problem(
                "error",
                e.code,
                e.message,
                e.params,
                e.line or 1,
                e.triton_message,
                None,
                str(p),
                config_error_msg(e),
            )
        ]
    text = data.decode("utf-8", errors="replace")
    entry = ModelEntry(
        name=cfg.name or p.stem,
        path=p.parent,
        config_path=p,
        config=cfg,
        text=text,
        locations=locate(text),
        standalone=True,
    )
    c = _Collector(entry)
    _check_model(entry, c)
    if cfg.HasField("ensemble_scheduling"):
        c.warning("no_repository", _m("no_repository"), line=entry.line("ensemble_scheduling", 0, default=1))
    return c.items


def _check_model(e: ModelEntry, c: _Collector, repo: Repo | None = None) -> None:
    """Rules Triton applies to a config on its own, in Triton's order (poll, then load).

    ``repo`` (when known) only sharpens the explanations: the step models' tensor names."""
    if e.error is not None:
        err = e.error
        if err.code == "no_config":
            c.error(
                "no_config",
                _m("no_config", model=e.name),
                line=1,
                triton=None,
                model=e.name,
            )
        else:
            c.error(
                err.code, config_error_msg(err), line=err.line or 1, triton=err.triton_message, **err.params
            )
        return
    cfg = e.config
    name = e.config_name
    is_ens = cfg.platform == ENSEMBLE_PLATFORM

    # -- poll: name and directory
    if cfg.name and cfg.name != e.name and not e.standalone:
        c.error(
            "name_mismatch",
            _m("name_mismatch", name=cfg.name, directory=e.name),
            line=e.line("name", 0),
            triton=f"unexpected directory name '{e.name}' for model '{cfg.name}', directory name must equal model name",
            name=cfg.name,
            directory=e.name,
        )
        return

    # -- poll: backend / platform (after Triton's auto-complete)
    backend = cfg.backend
    if not backend and not is_ens and not e.standalone:
        backend = KNOWN_PLATFORMS.get(cfg.platform, "")
        if not backend and not cfg.platform:
            files = e.files.get(min(e.versions, key=str), []) if e.versions else []
            if cfg.default_model_filename:
                backend = BACKEND_FILES.get(cfg.default_model_filename, "")
            else:
                for fname, be in BACKEND_FILES.items():
                    if fname in files:
                        backend = be
                        break
            if not backend:
                c.error(
                    "no_backend",
                    _m("no_backend", model=name, files=list(BACKEND_FILES)),
                    triton=(
                        f"Invalid model name: Could not determine backend for model '{name}' with no backend in "
                        "model configuration. Expected model name of the form 'model.<backend_name>'."
                    ),
                    model=name,
                )
                return
        elif not backend:
            c.error(
                "unknown_platform",
                _m("unknown_platform", model=name, platform=cfg.platform),
                line=e.line("platform", 0),
                triton=f"unexpected platform type '{cfg.platform}' for {name}",
                platform=cfg.platform,
            )
            return
    if cfg.backend and is_ens:
        c.error(
            "ensemble_backend",
            _m("ensemble_backend", model=name, backend=cfg.backend),
            line=e.line("backend", 0),
            triton=f"Ensemble model '{name}' must have platform type 'ensemble' and empty backend type",
            backend=cfg.backend,
        )
        return
    if cfg.max_batch_size < 0:
        c.error(
            "negative_max_batch_size",
            _m("negative_max_batch_size", value=cfg.max_batch_size),
            line=e.line("max_batch_size", 0),
            triton=f"'max_batch_size' must be non-negative value for {name}",
            value=cfg.max_batch_size,
        )
        return
    if cfg.HasField("dynamic_batching"):
        for i, size in enumerate(cfg.dynamic_batching.preferred_batch_size):
            if size <= 0 or size > cfg.max_batch_size:
                c.error(
                    "bad_preferred_batch_size",
                    _m("bad_preferred_batch_size", size=size, max_batch_size=cfg.max_batch_size),
                    line=e.line("dynamic_batching", 0, "preferred_batch_size", i),
                    triton=(
                        f"dynamic batching preferred size must be positive for {name}"
                        if size <= 0
                        else f"dynamic batching preferred size must be <= max batch size for {name}"
                    ),
                    size=size,
                    max_batch_size=cfg.max_batch_size,
                )
                return

    if cfg.HasField("ensemble_scheduling"):
        if not _check_ensemble_config(e, c, repo):
            return
    elif is_ens:
        c.error(
            "ensemble_without_steps",
            _m("ensemble_without_steps", model=name),
            line=e.line("platform", 0),
            triton=f"ensemble scheduling must be set for ensemble {name} whose platform is {ENSEMBLE_PLATFORM}",
        )
        return

    # -- inputs and outputs (checked when a backend loads the model; Triton does not check an
    # ensemble's own, whose shapes are compared with its steps' instead)
    for kind in ("input", "output") if not is_ens else ():
        for i, io in enumerate(getattr(cfg, kind)):
            line = partial(e.line, kind, i)
            label = (
                _m("io_unnamed", kind=_m("kind_" + kind), n=i + 1)
                if not io.name
                else _m("io_named", kind=_m("kind_" + kind), name=io.name)
            )
            if not io.name:
                c.error(
                    "io_no_name",
                    _m("io_no_name", label=label),
                    line=line,
                    triton=f"model {kind} must specify 'name' for {name}",
                )
            elif io.data_type == 0:
                c.error(
                    "io_no_data_type",
                    _m("io_no_data_type", label=label),
                    line=line,
                    triton=f"model {kind} '{io.name}' must specify 'data_type' for {name}",
                    tensor=io.name,
                )
            elif len(io.dims) == 0:
                c.error(
                    "io_no_dims",
                    _m("io_no_dims", label=label),
                    line=line,
                    triton=f"model {kind} '{io.name}' must specify 'dims' for {name}",
                    tensor=io.name,
                )
            elif any(d < 1 and d != -1 for d in io.dims):
                c.error(
                    "io_bad_dims",
                    _m("io_bad_dims", label=label, dims=_dims_str(io.dims)),
                    line=partial(e.line, kind, i, "dims", 0),
                    triton=(
                        f"model {kind} '{io.name}' dimension must be integer >= 1, or -1 to indicate a "
                        f"variable-size dimension for {name}"
                    ),
                    tensor=io.name,
                    dims=list(io.dims),
                )

    # -- load: versions and files
    if has_errors(c.items) or e.standalone:
        return
    served = e.served_versions
    if not served:
        if not e.versions:
            msg = _m("no_version_dir_ensemble" if is_ens else "no_version_dir", model=name)
        else:
            msg = _m("no_version_policy", model=name, versions=list(e.versions))
        c.error(
            "no_version",
            msg,
            line=e.line("version_policy", 0),
            triton=f"at least one version must be available under the version policy of model '{name}'",
            versions=e.versions,
        )
        return
    if backend == "python" and not is_ens:
        fname = cfg.default_model_filename or "model.py"
        for v in served:
            if fname not in e.files.get(v, []):
                c.error(
                    "missing_model_file",
                    _m("missing_model_file", version=v, model=name, file=fname),
                    triton=None,
                    version=v,
                    file=fname,
                )


def _check_ensemble_config(e: ModelEntry, c: _Collector, repo: Repo | None = None) -> bool:
    """ValidateEnsembleSchedulingConfig: the ensemble on its own, no step configs needed."""
    cfg = e.config
    name = e.config_name
    if cfg.platform != ENSEMBLE_PLATFORM:
        c.error(
            "scheduling_not_ensemble",
            _m("scheduling_not_ensemble", model=name, platform=cfg.platform),
            line=e.line("ensemble_scheduling", 0),
            triton=f"ensemble scheduling cannot be set for model '{name}' whose platform is not {ENSEMBLE_PLATFORM}",
        )
        return False
    forbidden = [
        (
            "instance_group",
            len(cfg.instance_group) != 0,
            f"instance group should not be specified for ensemble '{name}'",
        ),
        (
            "optimization",
            cfg.HasField("optimization"),
            f"optimization should not be specified for ensemble '{name}'",
        ),
        (
            "model_warmup",
            len(cfg.model_warmup) != 0,
            f"model_warmup can not be specified for ensemble '{name}'",
        ),
    ]
    bad = False
    for fld, present, triton in forbidden:
        if present:
            c.error(
                "ensemble_forbidden_field",
                _m("ensemble_forbidden_field", model=name, field=fld),
                line=e.line(fld, 0),
                triton=triton,
                field=fld,
            )
            bad = True
    if bad:
        return False
    steps = cfg.ensemble_scheduling.step
    if len(steps) == 0:
        c.error(
            "no_steps",
            _m("no_steps", model=name),
            line=e.line("ensemble_scheduling", 0),
            triton=f"must specify 'step' for ensemble '{name}'",
        )
        return False

    # repeated map keys: protobuf keeps the last entry silently
    for i, step in enumerate(steps):
        for mp in ("input_map", "output_map"):
            seen: dict[str, tuple[str, int]] = {}
            for j in range(e.locations.count(*_step_path(i), mp)):
                key = e.locations.value(*_step_path(i), mp, j, "key", 0)
                val = e.locations.value(*_step_path(i), mp, j, "value", 0)
                if key is None:
                    continue
                if key in seen:
                    kept = getattr(step, mp).get(key, val)
                    c.warning(
                        "repeated_map_key",
                        _m(
                            "repeated_map_key",
                            step=_step(i, step.model_name),
                            map=mp,
                            map_key=key,
                            first=seen[key][0],
                            value=val,
                            kept=kept,
                        ),
                        line=e.line(*_step_path(i), mp, j),
                        step=i,
                        model=step.model_name,
                        map=mp,
                        key=key,
                        first=seen[key][0],
                        kept=kept,
                    )
                seen[key] = (val, j)

    # BuildEnsembleGraph: required fields, one writer per tensor
    written: dict[str, int] = {}
    ok = True
    for i, step in enumerate(steps):
        sline = e.line(*_step_path(i))
        for fld in ("model_name", "input_map", "output_map"):
            missing = not step.model_name if fld == "model_name" else len(getattr(step, fld)) == 0
            if missing:
                c.error(
                    "step_missing_field",
                    _m("step_missing_field", step=_step(i, step.model_name), field=fld),
                    line=sline,
                    triton=f"must specify '{fld}' in step {i} of ensemble '{name}'",
                    step=i,
                    field=fld,
                )
                ok = False
                break
        if not ok:
            continue
        for key, tensor in step.output_map.items():
            if tensor in written:
                first = written[tensor]
                if first == i:
                    msg = _m("tensor_written_twice_same", tensor=tensor, step=_step(i, step.model_name))
                else:
                    msg = _m(
                        "tensor_written_twice",
                        tensor=tensor,
                        first=_step(first, steps[first].model_name),
                        second=_step(i, step.model_name),
                    )
                c.error(
                    "tensor_written_twice",
                    msg,
                    line=_map_line(e, i, "output_map", key),
                    triton=f"ensemble tensor '{tensor}' can appear in an output map only once for ensemble '{name}' step {i}",
                    tensor=tensor,
                    step=i,
                    first_step=first,
                )
                ok = False
            else:
                written[tensor] = i
    if not ok:
        return False
    return _check_data_flow(e, c, repo)
