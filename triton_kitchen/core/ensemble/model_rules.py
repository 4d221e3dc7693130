"""Rules Triton applies to one config on its own, in Triton's order: poll (name, backend, batch sizes,
the ensemble's scheduling and data flow), then load (versions, model files).

``ValidateModelConfig`` and ``ValidateEnsembleSchedulingConfig`` of Triton's ``model_config_utils.cc``;
nothing here needs the step models' configs (``validate.py`` checks those).
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

from triton_kitchen.core.config import ENSEMBLE_PLATFORM, ConfigError, ModelEntry
from triton_kitchen.core.ensemble import autofill, config_rules
from triton_kitchen.core.ensemble.data_flow import check_data_flow
from triton_kitchen.core.ensemble.problems import (
    DEFAULT_OPTIONS,
    CheckOptions,
    Collector,
    Problem,
    Repo,
    config_error_msg,
    has_errors,
    map_line,
    msg,
    step_path,
    step_ref,
)
from triton_kitchen.core.versions import EMBEDDED

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


def validate_config_file(path: str | os.PathLike, options: CheckOptions | None = None) -> list[Problem]:
    """A config file on its own (no model directory, no repository): the rules that need neither."""
    from triton_kitchen.core.config import parse_config
    from triton_kitchen.core.config_locations import locate

    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as e:
        message = msg("unreadable_file", reason=e.strerror or str(e))
        return [Problem("error", "unreadable", message.render("en"), {}, 1, None, None, str(p), message)]
    try:
        cfg = parse_config(data, p, options.version if options else None)
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
    c = Collector(entry, options or DEFAULT_OPTIONS)
    check_model(entry, c)
    if cfg.HasField("ensemble_scheduling"):
        c.warning("no_repository", msg("no_repository"), line=entry.line("ensemble_scheduling", 0, default=1))
    return c.items


def check_model(e: ModelEntry, c: Collector, repo: Repo | None = None) -> None:
    """Rules Triton applies to a config on its own, in Triton's order: the repository poll (fill in,
    ``ValidateModelConfig``, inputs and outputs when auto-complete is off, the folder's name), then the load
    (versions, the backend library, instance groups, inputs and outputs, model files).

    ``repo`` (when known) only sharpens the explanations: the step models' tensor names."""
    opts = c.options
    if e.error is not None:
        err = e.error
        if err.code == "no_config":
            _check_missing_config(e, c)
        else:
            c.error(
                err.code, config_error_msg(err), line=err.line or 1, triton=err.triton_message, **err.params
            )
        return
    cfg = e.config
    is_ens = cfg.platform == ENSEMBLE_PLATFORM
    done = autofill.complete(e, c.options.version)
    name = done.name

    # -- poll: what Triton fills in, then ValidateModelConfig
    if done.invalid_name and not is_ens:
        _invalid_name(e, c)
        return
    platform, backend = done.platform, done.backend
    if not e.standalone and not backend and not is_ens:
        c.error(
            "unknown_platform",
            msg("unknown_platform", model=name, platform=platform),
            line=e.line("platform", 0),
            triton=f"unexpected platform type '{platform}' for {name}",
            platform=platform,
        )
        return
    if cfg.backend and is_ens:
        c.error(
            "ensemble_backend",
            msg("ensemble_backend", model=name, backend=cfg.backend),
            line=e.line("backend", 0),
            triton=f"Ensemble model '{name}' must have platform type 'ensemble' and empty backend type",
            backend=cfg.backend,
        )
        return
    if backend in autofill.TYPED_BACKENDS and autofill.PLATFORM_BACKEND.get(platform) != backend:
        c.error(
            "platform_backend_pair",
            msg("platform_backend_pair", platform=platform, backend=backend),
            line=e.line("backend", 0, default=e.line("platform", 0)),
            triton=f"unexpected 'platform' and 'backend' pair, got:{platform}, {backend}",
            platform=platform,
            backend=backend,
        )
        return
    if cfg.max_batch_size < 0:
        c.error(
            "negative_max_batch_size",
            msg("negative_max_batch_size", value=cfg.max_batch_size),
            line=e.line("max_batch_size", 0),
            triton=f"'max_batch_size' must be non-negative value for {name}",
            value=cfg.max_batch_size,
        )
        return
    if not config_rules.check_dynamic_batching(e, c, name):
        return
    if not config_rules.check_sequence_batching(e, c, name):
        return
    if cfg.HasField("ensemble_scheduling"):
        if not _check_ensemble_config(e, c, repo):
            return
    elif is_ens:
        c.error(
            "ensemble_without_steps",
            msg("ensemble_without_steps", model=name),
            line=e.line("platform", 0),
            triton=f"ensemble scheduling must be set for ensemble {name} whose platform is {ENSEMBLE_PLATFORM}",
        )
        return
    if not config_rules.check_decoupled_cache(e, c, name):
        return
    if not config_rules.check_model_metrics(e, c, opts.version):
        return
    # inputs and outputs: at the poll when auto-complete is off, else when the model loads (a backend may
    # complete them from the model file first).  An ensemble's own are compared with its steps' instead.
    autofilled = opts.autofill and (
        autofill.fills_from_model_file(e, done)
        if done.backend != "python"
        else autofill.python_auto_completes(e, done)
    )
    if not is_ens and not config_rules.check_io(e, c, name, platform, autofilled):
        return

    # -- poll: the folder's name must be the config's
    if cfg.name and cfg.name != e.name and not e.standalone:
        c.error(
            "name_mismatch",
            msg("name_mismatch", name=cfg.name, directory=e.name),
            line=e.line("name", 0),
            triton=f"unexpected directory name '{e.name}' for model '{cfg.name}', directory name must equal model name",
            name=cfg.name,
            directory=e.name,
        )
        return

    # -- load: versions, backend library, instance groups, model files
    if has_errors(c.items) or e.standalone:
        return
    served = e.served_versions
    if not served:
        if not e.versions:
            message = msg("no_version_dir_ensemble" if is_ens else "no_version_dir", model=name)
        else:
            message = msg("no_version_policy", model=name, versions=list(e.versions))
        c.error(
            "no_version",
            message,
            line=e.line("version_policy", 0),
            triton=f"at least one version must be available under the version policy of model '{name}'",
            versions=e.versions,
        )
        return
    if is_ens:
        return
    if not _check_backend_library(e, c, name, backend, opts):
        return
    if not config_rules.check_instance_groups(e, c, name, platform, backend, opts.gpus):
        return
    if backend == "python":
        fname = cfg.default_model_filename or "model.py"
        for v in served:
            if fname not in e.files.get(v, []):
                c.error(
                    "missing_model_file",
                    msg("missing_model_file", version=v, model=name, file=fname),
                    triton=None,
                    version=v,
                    file=fname,
                )


def _invalid_name(e: ModelEntry, c: Collector) -> None:
    c.error(
        "no_backend",
        msg("no_backend", model=e.name, files=list(BACKEND_FILES)),
        line=0 if e.config is None else None,
        triton=(
            f"Invalid model name: Could not determine backend for model '{e.name}' with no backend in "
            "model configuration. Expected model name of the form 'model.<backend_name>'."
        ),
        model=e.name,
    )


def _check_missing_config(e: ModelEntry, c: Collector) -> None:
    """No config.pbtxt: with auto-complete on, Triton fills one in from the model file where the backend can
    (reported on the folder itself, line 0)."""
    done = autofill.complete(e, c.options.version)
    if done.invalid_name:
        _invalid_name(e, c)
        return
    can_fill = c.options.autofill and autofill.fills_from_model_file(e, done)
    if can_fill:
        c.warning("no_config_autofill", msg("no_config_autofill", model=e.name, backend=done.backend), line=0)
        return
    c.error(
        "no_config",
        msg("no_config", model=e.name)
        if not done.backend
        else msg("no_config_backend", model=e.name, backend=done.backend),
        line=0,
        triton=f"model configuration is not provided for model '{e.name}'" if done.backend else None,
        model=e.name,
    )


def _check_backend_library(e: ModelEntry, c: Collector, name: str, backend: str, opts) -> bool:
    """Where Triton looks for the backend library when it loads the model (``runtime``)."""
    runtime = e.config.runtime
    if opts.backend_directory is not None:  # the server's own folder: only what is in it
        known = set(opts.backends) | set(_subdirs(opts.backend_directory))
    else:
        # the embedded server's own backends count for its version only
        local = _local_backends() if opts.version == EMBEDDED else frozenset()
        known = set(autofill.container_backends(opts.version)) | set(opts.backends) | local
    if runtime and autofill.escapes(runtime):
        c.error(
            "runtime_escapes",
            msg("runtime_escapes", runtime=runtime),
            line=e.line("runtime", 0),
            triton=f"backend library name '{runtime}' escapes backend directory",
            runtime=runtime,
        )
        return False
    if autofill.library_found(e, backend, runtime, known, opts.backend_directory):
        return True
    image = autofill.NGC_IMAGE_BACKENDS.get(backend)
    if (
        image
        and opts.backend_directory is None
        and runtime in ("", f"libtriton_{backend}.so", autofill.PYTHON)
    ):
        # written for another image: whether it loads depends on the server's backends, which check cannot see
        key = "backend_in_other_image" if image.startswith("nvcr.io/") else "backend_built_separately"
        c.note(
            "backend_in_other_image",
            msg(key, backend=backend, image=image),
            line=e.line("backend", 0, default=e.line("name", 0, default=1)),
            backend=backend,
            image=image,
        )
        return True
    if runtime:
        c.error(
            "runtime_not_found",
            msg("runtime_not_found", runtime=runtime, backend=backend),
            line=e.line("runtime", 0),
            triton=f"unable to find backend library '{runtime}' for model '{name}'",
            runtime=runtime,
        )
    else:
        c.error(
            "unknown_backend",
            msg("unknown_backend", backend=backend, known=sorted(known), version=str(opts.version))
            if opts.backend_directory is None
            else msg("unknown_backend_dir", backend=backend, dir=opts.backend_directory),
            line=e.line("backend", 0, default=e.line("name", 0, default=1)),
            triton=(
                f"unable to find backend library for backend '{backend}', try specifying runtime on the model "
                "configuration."
            ),
            backend=backend,
        )
    return False


def _subdirs(path: str) -> list[str]:
    try:
        return [d.name for d in os.scandir(path) if d.is_dir()]
    except OSError:
        return []


@functools.cache
def _local_backends() -> frozenset[str]:
    return frozenset(autofill.local_backends())


def _check_ensemble_config(e: ModelEntry, c: Collector, repo: Repo | None = None) -> bool:
    """ValidateEnsembleSchedulingConfig: the ensemble on its own, no step configs needed."""
    cfg = e.config
    name = e.config_name
    if cfg.platform != ENSEMBLE_PLATFORM:
        c.error(
            "scheduling_not_ensemble",
            msg("scheduling_not_ensemble", model=name, platform=cfg.platform),
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
                msg("ensemble_forbidden_field", model=name, field=fld),
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
            msg("no_steps", model=name),
            line=e.line("ensemble_scheduling", 0),
            triton=f"must specify 'step' for ensemble '{name}'",
        )
        return False

    # repeated map keys: protobuf keeps the last entry silently
    for i, step in enumerate(steps):
        for mp in ("input_map", "output_map"):
            seen: dict[str, tuple[str, int]] = {}
            for j in range(e.locations.count(*step_path(i), mp)):
                key = e.locations.value(*step_path(i), mp, j, "key", 0)
                val = e.locations.value(*step_path(i), mp, j, "value", 0)
                if key is None:
                    continue
                if key in seen:
                    kept = getattr(step, mp).get(key, val)
                    c.warning(
                        "repeated_map_key",
                        msg(
                            "repeated_map_key",
                            step=step_ref(i, step.model_name),
                            map=mp,
                            map_key=key,
                            first=seen[key][0],
                            value=val,
                            kept=kept,
                        ),
                        line=e.line(*step_path(i), mp, j),
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
        sline = e.line(*step_path(i))
        for fld in ("model_name", "input_map", "output_map"):
            missing = not step.model_name if fld == "model_name" else len(getattr(step, fld)) == 0
            if missing:
                c.error(
                    "step_missing_field",
                    msg("step_missing_field", step=step_ref(i, step.model_name), field=fld),
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
                    message = msg(
                        "tensor_written_twice_same", tensor=tensor, step=step_ref(i, step.model_name)
                    )
                else:
                    message = msg(
                        "tensor_written_twice",
                        tensor=tensor,
                        first=step_ref(first, steps[first].model_name),
                        second=step_ref(i, step.model_name),
                    )
                c.error(
                    "tensor_written_twice",
                    message,
                    line=map_line(e, i, "output_map", key),
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
    return check_data_flow(e, c, repo)
