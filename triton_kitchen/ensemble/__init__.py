"""Ensembles: validation by Triton's own rules, the DAG (steps, tensors, stages) and memory.

The rules follow Triton 2.51's loader (``model_config_utils.cc``: ``ValidateModelConfig``,
``ValidateEnsembleSchedulingConfig``; ``ensemble_utils.cc``: ``ValidateEnsembleConfig``;
the repository manager's dependency checks) and were checked against the real server on the
corpus in ``tests/corpus``.  Triton stops at its first error; :func:`validate_model` reports
every problem it finds, each with a stable ``code``, an English ``message``, ``params`` (the
facts, for programs), a best-effort ``line`` and, where known, Triton's own wording
(``triton_message``).  The explanation itself comes from the ``[problem]`` string tables of
``lessons/<lang>/ui.toml``: :meth:`Problem.text` renders it in another language (``message``
is its English rendering, the ``check`` output).  Steps are counted from 1 in every
explanation, as in the DAG and the lessons (``params`` keep 0-based indexes, Triton's own
wording counts from 0).  Warnings explain things Triton accepts silently (a repeated map key,
a shape that only matches without the batch dimension); they never change the verdict.

Conventions (as in Triton): the key of ``input_map``/``output_map`` is the step model's
tensor, the value the ensemble tensor; ``model_version`` omitted is 0, not -1.
"""

from __future__ import annotations

import os
from collections import defaultdict, deque
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path

from triton_kitchen.config import (
    DTYPE_SIZES,
    ENSEMBLE_PLATFORM,
    ConfigError,
    ModelEntry,
    dtype_name,
    load_repository,
    read_model_dir,
)

Repo = dict[str, ModelEntry]

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


# ---------------------------------------------------------------------------------------------
# problems


@dataclass
class Msg:
    """An explanation not yet in words: a ``[problem]`` key of ``lessons/<lang>/ui.toml`` and its
    arguments (strings, numbers, lists, or other :class:`Msg` rendered in the same language)."""

    key: str
    args: dict = field(default_factory=dict)

    def render(self, lang: str = "en") -> str:
        from triton_kitchen.lessons import t

        return t("problem." + self.key, lang, **{k: _render_arg(v, lang) for k, v in self.args.items()})


def _render_arg(value, lang: str):
    if isinstance(value, Msg):
        return value.render(lang)
    if value is None:
        return ""
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value) if value else Msg("none").render(lang)
    return value


def _m(table_key: str, /, **args) -> Msg:
    return Msg(table_key, args)


def _step(i: int, model: str | None = None) -> Msg:
    """Step ``i`` of the config's list (0-based) as people count it: "step 1 (preprocess)"."""
    return _m("step", n=i + 1, model=model) if model else _m("step_bare", n=i + 1)


_BAD_VALUE_KEYS = {"integer": "cfg_bad_integer", "float": "cfg_bad_float", "boolean": "cfg_bad_boolean",
                   "enum": "cfg_bad_enum", "range": "cfg_out_of_range"}


def config_error_msg(err: ConfigError) -> Msg:
    """The explanation of a :class:`ConfigError` (a file protobuf cannot read) from its code and params.

    config.py writes the English ``err.message``; when the table's English rendering is not that text
    word for word, the message is shown as written (so the ``check`` output never changes here).
    """
    p, short = err.params, (lambda typ: str(typ).split(".")[-1])
    msg = None
    if err.code == "unknown_field":
        hint = _m("did_you_mean_dq", hint=p["suggestion"]) if p.get("suggestion") else None
        msg = _m("cfg_unknown_field", field=p.get("field"), type=short(p.get("type")), hint=hint)
    elif err.code == "unknown_enum":
        hint = _m("did_you_mean_dq", hint=p["suggestion"]) if p.get("suggestion") else None
        msg = _m("cfg_unknown_enum", value=p.get("value"), type=short(p.get("type")), hint=hint)
    elif err.code == "oneof_conflict":
        a, b = p.get("field"), p.get("other")
        if p.get("oneof") == "scheduling_choice":
            extra = _m("cfg_oneof_ensemble") if "ensemble_scheduling" in (a, b) else None
            msg = _m("cfg_oneof_scheduler", field=a, other=b, extra=extra)
        else:
            msg = _m("cfg_oneof", field=a, other=b, oneof=p.get("oneof"))
    elif err.code == "duplicate_field":
        msg = _m("cfg_duplicate_field", field=p.get("field"))
    elif err.code == "bad_value" and p.get("kind") in _BAD_VALUE_KEYS:
        msg = _m(_BAD_VALUE_KEYS[p["kind"]], value=p.get("value"))
    elif err.code == "syntax" and p.get("expected"):
        msg = _m("cfg_expected_end", expected=p["expected"])
        if msg.render("en") != err.message:
            msg = _m("cfg_expected_before", expected=p["expected"], token=repr(err.token))
    elif err.code == "unreadable" and p.get("reason") == "encoding":
        msg = _m("cfg_not_utf8")
    elif err.code == "no_config":
        msg = _m("cfg_no_config")
    if msg is None or msg.render("en") != err.message:
        msg = _m("cfg_syntax" if err.code == "syntax" else "cfg_other", text=err.message)
    return msg


@dataclass
class Problem:
    """One finding.  ``severity`` is ``"error"`` (Triton would not load it) or ``"warning"``."""

    severity: str
    code: str
    message: str
    params: dict = field(default_factory=dict)
    line: int | None = None
    triton_message: str | None = None
    model: str | None = None
    path: str | None = None
    msg: Msg | None = field(default=None, repr=False, compare=False)  # ``message`` before rendering

    @property
    def is_error(self) -> bool:
        return self.severity == "error"

    def text(self, lang: str = "en") -> str:
        """The explanation in ``lang`` ("zh" or "en"); Triton's own wording stays in ``triton_message``."""
        return self.msg.render(lang) if self.msg is not None else self.message

    def format(self, path: str | None = None) -> str:
        """``PATH:LINE: severity: message`` (the ``check`` output line)."""
        return f"{path or self.path or '<config>'}:{self.line or 1}: {self.severity}: {self.message}"

    def to_dict(self) -> dict:
        d = asdict(self)
        d.pop("msg")
        return d


def has_errors(problems: list[Problem]) -> bool:
    return any(p.is_error for p in problems)


class _Collector:
    def __init__(self, entry: ModelEntry) -> None:
        self.entry = entry
        self.items: list[Problem] = []

    def add(self, severity, code, message: Msg | str, line=None, triton=None, **params) -> Problem:
        if callable(line):  # positions are looked up only for problems actually reported
            line = line()
        msg = message if isinstance(message, Msg) else None
        p = Problem(
            severity,
            code,
            msg.render("en") if msg is not None else message,
            params,
            line if line is not None else self.entry.line("name", 0, default=1),
            triton,
            self.entry.name,
            str(self.entry.config_path),
            msg,
        )
        self.items.append(p)
        return p

    def error(self, code, message, line=None, triton=None, **params) -> Problem:
        return self.add("error", code, message, line, triton, **params)

    def warning(self, code, message, line=None, triton=None, **params) -> Problem:
        return self.add("warning", code, message, line, triton, **params)


def _as_repo(repo: Repo | str | os.PathLike) -> Repo:
    if isinstance(repo, dict):
        return repo
    return load_repository(repo)


def _dims_str(dims) -> str:
    return "[" + ",".join(str(d) for d in dims) + "]"


def _compare_dims(a, b) -> bool:
    """Triton's CompareDimsWithWildcard: same rank, each pair equal or either -1."""
    if len(a) != len(b):
        return False
    return all(x == y or x == -1 or y == -1 for x, y in zip(a, b, strict=True))


def _step_path(i: int) -> tuple:
    return ("ensemble_scheduling", 0, "step", i)


# ---------------------------------------------------------------------------------------------
# validation


def validate_repository(path: str | os.PathLike | Repo, config_name: str | None = None) -> list[Problem]:
    """Problems of every model of a repository (each model once)."""
    repo = path if isinstance(path, dict) else load_repository(path, config_name)
    cache: dict[str, list[Problem]] = {}
    out: list[Problem] = []
    for name in repo:
        out += _validate(name, repo, cache, ())
    return out


def validate_model(name: str, repo: Repo | str | os.PathLike, with_dependencies: bool = False) -> list[Problem]:
    """Problems of one model of ``repo`` (a step of an ensemble is checked against its config).

    With ``with_dependencies`` the step models' own problems (recursively) follow.
    """
    repo = _as_repo(repo)
    cache: dict[str, list[Problem]] = {}
    out = list(_validate(name, repo, cache, ()))
    if with_dependencies:
        seen = {name}
        todo = deque(_step_models(repo.get(name)))
        while todo:
            dep = todo.popleft()
            if dep in seen or dep not in repo:
                continue
            seen.add(dep)
            out += _validate(dep, repo, cache, ())
            todo.extend(_step_models(repo[dep]))
    return out


def validate_ensemble(name: str, repo: Repo | str | os.PathLike) -> list[Problem]:
    """Problems of the ensemble ``name`` checked against the step models found in ``repo``."""
    return validate_model(name, repo)


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
        return [Problem("error", e.code, e.message, e.params, e.line or 1, e.triton_message, None, str(p),
                        config_error_msg(e))]
    text = data.decode("utf-8", errors="replace")
    entry = ModelEntry(name=cfg.name or p.stem, path=p.parent, config_path=p, config=cfg, text=text,
                       locations=locate(text), standalone=True)
    c = _Collector(entry)
    _check_model(entry, c)
    if cfg.HasField("ensemble_scheduling"):
        c.warning("no_repository", _m("no_repository"),
                  line=entry.line("ensemble_scheduling", 0, default=1))
    return c.items


def is_valid(name: str, repo: Repo | str | os.PathLike) -> bool:
    """Triton's verdict as predicted: would loading ``name`` (and its steps) succeed?"""
    repo = _as_repo(repo)
    return not has_errors(validate_model(name, repo, with_dependencies=True))


def _step_models(entry: ModelEntry | None) -> list[str]:
    if entry is None or entry.config is None or not entry.config.HasField("ensemble_scheduling"):
        return []
    return [s.model_name for s in entry.config.ensemble_scheduling.step if s.model_name]


def _validate(name: str, repo: Repo, cache: dict, stack: tuple) -> list[Problem]:
    if name in cache:
        return cache[name]
    cache[name] = []  # provisional (recursion guard)
    entry = repo[name]
    c = _Collector(entry)
    _check_model(entry, c, repo)
    if not has_errors(c.items) and entry.config is not None and entry.config.HasField("ensemble_scheduling"):
        _check_dependencies(entry, repo, c, cache, stack + (name,))
    cache[name] = c.items
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
            c.error(err.code, config_error_msg(err), line=err.line or 1, triton=err.triton_message, **err.params)
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
            label = _m("io_unnamed", kind=_m("kind_" + kind), n=i + 1) if not io.name else _m(
                "io_named", kind=_m("kind_" + kind), name=io.name)
            if not io.name:
                c.error("io_no_name", _m("io_no_name", label=label), line=line,
                        triton=f"model {kind} must specify 'name' for {name}")
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
        ("instance_group", len(cfg.instance_group) != 0, f"instance group should not be specified for ensemble '{name}'"),
        ("optimization", cfg.HasField("optimization"), f"optimization should not be specified for ensemble '{name}'"),
        ("model_warmup", len(cfg.model_warmup) != 0, f"model_warmup can not be specified for ensemble '{name}'"),
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
                        _m("repeated_map_key", step=_step(i, step.model_name), map=mp, map_key=key,
                           first=seen[key][0], value=val, kept=kept),
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
                    msg = _m("tensor_written_twice", tensor=tensor, first=_step(first, steps[first].model_name),
                             second=_step(i, step.model_name))
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
        if len(set(step.output_map.values())) < len(step.output_map):
            # two outputs of one step mapped to one tensor (reported above for the second key)
            pass
    if not ok:
        return False
    return _check_data_flow(e, c, repo)


def _map_line(e: ModelEntry, i: int, mp: str, key: str) -> int | None:
    n = e.locations.count(*_step_path(i), mp)
    found = None
    for j in range(n):
        if e.locations.value(*_step_path(i), mp, j, "key", 0) == key:
            found = j
    if found is not None:
        return e.line(*_step_path(i), mp, found)
    return e.line(*_step_path(i))


def _triton_data_flow(cfg, name: str) -> str | None:
    """Faithful replica of Triton's data-flow check; returns its first error message or None."""
    tensors: dict[str, dict] = {}

    def node(t, is_out):
        if t not in tensors:
            tensors[t] = {"out": is_out, "ready": False, "prev": [], "next": []}
        return tensors[t]

    for step in cfg.ensemble_scheduling.step:
        outs = []
        for _, t in step.output_map.items():
            n = node(t, True)
            n["out"] = True
            outs.append(t)
        for _, t in step.input_map.items():
            node(t, False)
            for o in outs:
                tensors[o]["prev"].append(t)
                tensors[t]["next"].append(o)
    queue = deque()
    for inp in cfg.input:
        if inp.name not in tensors:
            return f"ensemble input '{inp.name}' for ensemble {name}' is not used"
        tensors[inp.name]["ready"] = True
        queue.append(inp.name)
    while queue:
        cur = queue.popleft()
        for nxt in tensors[cur]["next"]:
            if tensors[nxt]["ready"]:
                continue
            if all(tensors[p]["ready"] for p in tensors[nxt]["prev"]):
                tensors[nxt]["ready"] = True
                queue.append(nxt)
    outputs = set()
    for out in cfg.output:
        if out.name not in tensors:
            return f"ensemble output '{out.name}' for ensemble {name}' is not used"
        n = tensors[out.name]
        if not n["ready"]:
            msg = f"output '{out.name}' for ensemble '{name}' is not written"
            prev = n["prev"]
            last = out.name
            seen: set[str] = set()
            while prev:
                nodes, prev = prev, None
                for p in nodes:
                    if not tensors[p]["ready"] and p not in seen:
                        seen.add(p)
                        last = p
                        prev = tensors[p]["prev"]
                        break
            if last != out.name:
                msg += f": at least one of its depending tensors, '{last}', is not connected"
            return msg
        outputs.add(out.name)
    for t, n in tensors.items():
        if t in outputs:
            continue
        if not n["ready"] or not n["next"]:
            return f"ensemble tensor '{t}' is unused in ensemble '{name}'"
    return None


def _step_graph(steps, ens_inputs=()) -> tuple[dict[int, set[int]], dict[str, int]]:
    """Step i -> step j when j reads a tensor i writes (ensemble inputs are ready from the start,
    so a step that writes one does not hold anybody up)."""
    producer: dict[str, int] = {}
    for i, s in enumerate(steps):
        for t in s.output_map.values():
            producer.setdefault(t, i)
    succ: dict[int, set[int]] = {i: set() for i in range(len(steps))}
    for j, s in enumerate(steps):
        for t in s.input_map.values():
            if t in producer and t not in ens_inputs:
                succ[producer[t]].add(j)
    return succ, producer


def _cycles(succ: dict[int, set[int]]) -> list[list[int]]:
    """Strongly connected components that are cycles (size > 1 or a self-loop), Tarjan's algorithm."""
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    on: set[int] = set()
    stack: list[int] = []
    out: list[list[int]] = []
    counter = [0]

    def visit(v: int) -> None:
        work = [(v, iter(sorted(succ[v])))]
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        while work:
            node, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(succ[w]))))
                    advanced = True
                    break
                if w in on:
                    low[node] = min(low[node], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == node:
                        break
                if len(comp) > 1 or node in succ[node]:
                    out.append(sorted(comp))

    for v in sorted(succ):
        if v not in index:
            visit(v)
    return sorted(out)


def _cycle_order(comp: list[int], succ: dict[int, set[int]]) -> list[int]:
    """A closed walk through the component, starting at its first step (for the message)."""
    members = set(comp)
    start = comp[0]
    # BFS back to start inside the component
    prev: dict[int, int] = {}
    queue = deque([start])
    seen = {start}
    while queue:
        v = queue.popleft()
        for w in sorted(succ[v]):
            if w == start:
                path = [v]
                while path[-1] != start:
                    path.append(prev[path[-1]])
                return list(reversed(path))
            if w in members and w not in seen:
                seen.add(w)
                prev[w] = v
                queue.append(w)
    return comp


def _swap_makes_sense(step, key: str, repo: Repo | None) -> bool:
    """Would swapping ``input_map { key: KEY value: ... }`` fix it?  Only when the key is not an input of
    the step model but the value is; without the step model's config nothing is known, so no."""
    sub = (repo or {}).get(step.model_name)
    if sub is None or sub.config is None or key not in step.input_map:
        return False
    names = {io.name for io in sub.config.input}
    return key not in names and step.input_map[key] in names


def _check_data_flow(e: ModelEntry, c: _Collector, repo: Repo | None = None) -> bool:
    cfg = e.config
    name = e.config_name
    steps = cfg.ensemble_scheduling.step
    triton = _triton_data_flow(cfg, name)
    before = len(c.items)
    ens_inputs = [i.name for i in cfg.input]
    succ, producer = _step_graph(steps, set(ens_inputs))
    ens_outputs = [o.name for o in cfg.output]
    read_by: dict[str, list[int]] = defaultdict(list)
    for i, s in enumerate(steps):
        for t in s.input_map.values():
            read_by[t].append(i)

    def label(i):
        return _step(i, steps[i].model_name)

    # unused ensemble inputs
    for k, t in enumerate(ens_inputs):
        if t not in read_by and t not in producer:
            as_key = [i for i, s in enumerate(steps) if _swap_makes_sense(s, t, repo)]
            hint = None
            if as_key:
                i = as_key[0]
                hint = _m("unused_input_reversed", step=label(i), tensor=t, value=steps[i].input_map[t])
            c.error(
                "unused_input",
                _m("unused_input", tensor=t, hint=hint),
                line=e.line("input", k),
                tensor=t,
                reversed_in_step=as_key[0] if as_key else None,
            )
    # cycles
    in_cycle: set[int] = set()
    for comp in _cycles(succ):
        order = _cycle_order(comp, succ)
        in_cycle.update(comp)
        via = []
        for a, b in zip(order, order[1:] + order[:1], strict=True):
            ts = sorted(set(steps[a].output_map.values()) & set(steps[b].input_map.values()))
            via.append(ts[0] if ts else "?")
        walk = label(order[0])
        for a, t in reversed(list(zip(order, via, strict=True))):
            walk = _m("cycle_hop", step=label(a), tensor=t, rest=walk)
        if len(order) == 1:
            text = _m("cycle_self", step=label(order[0]), tensor=via[0])
        else:
            text = _m("cycle", walk=walk)
        c.error(
            "cycle",
            text,
            line=e.line(*_step_path(order[0])),
            steps=[steps[i].model_name for i in order],
            step_indexes=order,
            tensors=via,
        )
    # tensors read but never written
    for t, readers in read_by.items():
        if t not in producer and t not in ens_inputs:
            for i in readers:
                key = _key_of(steps[i].input_map, t)
                hint = None
                if _swap_makes_sense(steps[i], key, repo):
                    hint = _m("unconnected_reversed", model=steps[i].model_name, tensor=t, map_key=key)
                c.error(
                    "unconnected_tensor",
                    _m("unconnected_tensor", step=label(i), tensor=t, hint=hint),
                    line=_value_line(e, i, "input_map", t),
                    tensor=t,
                    step=i,
                    model=steps[i].model_name,
                )
    # reachability (which steps can ever run)
    ready = set(ens_inputs)
    ran: set[int] = set()
    changed = True
    while changed:
        changed = False
        for i, s in enumerate(steps):
            if i not in ran and all(t in ready for t in s.input_map.values()):
                ran.add(i)
                ready.update(s.output_map.values())
                changed = True
    # ensemble outputs
    for k, t in enumerate(ens_outputs):
        if t not in producer:
            reader = read_by.get(t)
            extra = _m("output_read_by", step=label(reader[0])) if reader else None
            c.error(
                "output_not_written",
                _m("output_not_written", tensor=t, extra=extra),
                line=e.line("output", k),
                tensor=t,
            )
        elif t not in ready and producer[t] not in in_cycle and not has_errors(c.items[before:]):
            c.error(
                "output_not_written",
                _m("output_never_written", tensor=t, step=label(producer[t])),
                line=e.line("output", k),
                tensor=t,
            )
    # a step that writes an ensemble input: Triton accepts it (the input is ready from the start)
    for t, i in producer.items():
        if t in ens_inputs:
            c.warning(
                "writes_ensemble_input",
                _m("writes_ensemble_input", step=label(i), tensor=t),
                line=_map_line(e, i, "output_map", _key_of(steps[i].output_map, t)),
                tensor=t,
                step=i,
            )
    # written but unused
    for t, i in producer.items():
        if t in ens_outputs:
            continue
        if t not in read_by:
            c.error(
                "unused_tensor",
                _m("unused_tensor", step=label(i), tensor=t),
                line=_map_line(e, i, "output_map", _key_of(steps[i].output_map, t)),
                tensor=t,
                step=i,
            )
    new = [p for p in c.items[before:] if p.is_error]
    if triton and not new:  # should not happen; keep Triton's verdict anyway
        c.error("data_flow", _m("data_flow", text=triton), triton=triton)
        new = [p for p in c.items[before:] if p.is_error]
    if triton and new:
        new[0].triton_message = triton
    return not new


def _key_of(mapping, value) -> str:
    for k, v in mapping.items():
        if v == value:
            return k
    return ""


def _value_line(e: ModelEntry, i: int, mp: str, value: str) -> int | None:
    for j in range(e.locations.count(*_step_path(i), mp)):
        if e.locations.value(*_step_path(i), mp, j, "value", 0) == value:
            return e.line(*_step_path(i), mp, j)
    return e.line(*_step_path(i))


# -- dependency checks (need the step models' configs) ---------------------------------------


def _is_decoupled(name: str, repo: Repo, seen: frozenset = frozenset()) -> bool:
    entry = repo.get(name)
    if entry is None or entry.config is None or name in seen:
        return False
    cfg = entry.config
    if cfg.HasField("ensemble_scheduling"):
        return _ensemble_decoupled_label(entry, repo, seen | {name})[0]
    return cfg.model_transaction_policy.decoupled


class _TNode:
    __slots__ = ("model", "batching", "dtype", "dims", "full", "decoupled", "label", "visited", "prev", "next", "sibling")

    def __init__(self, model, batching=False, dtype=0, dims=()):
        self.model = model
        self.batching = batching
        self.dtype = dtype
        self.dims = list(dims)
        self.full = ([-1] if batching else []) + list(dims)
        self.decoupled = False
        self.label = 0
        self.visited = False
        self.prev: list[_TNode] = []
        self.next: list[_TNode] = []
        self.sibling: _TNode | None = None


def _build_tensor_nodes(entry: ModelEntry, repo: Repo, seen: frozenset, on_error=None, on_warning=None):
    """ValidateTensorMapping over all steps; calls on_error(step, code, msg, triton, params)."""
    cfg = entry.config
    ens = entry.config_name
    batching = cfg.max_batch_size > 0
    nodes: dict[str, _TNode] = {}
    for io in cfg.input:
        dims = io.reshape.shape if io.HasField("reshape") else io.dims
        nodes[io.name] = _TNode(ens, batching, io.data_type, dims)
    sink = _TNode(ens)
    for io in cfg.output:
        dims = io.reshape.shape if io.HasField("reshape") else io.dims
        n = nodes.setdefault(io.name, _TNode(ens, batching, io.data_type, dims))
        sink.prev.append(n)
        n.next.append(sink)

    def consistent(tensor, old: _TNode, new: _TNode, i, key, mp):
        if old.dtype != new.dtype:
            msg = (
                f"in ensemble {ens}, ensemble tensor {tensor}: inconsistent data type: {dtype_name(old.dtype)} is "
                f"inferred from model {old.model} while {dtype_name(new.dtype)} is inferred from model {new.model}"
            )
            if on_error:
                on_error(i, "dtype_mismatch", msg, mp, key, tensor=tensor, first_model=old.model,
                         first_type=dtype_name(old.dtype), second_model=new.model, second_type=dtype_name(new.dtype))
            return False
        if not _compare_dims(old.dims, new.dims) and not _compare_dims(old.full, new.full):
            msg = (
                f"in ensemble {ens}, ensemble tensor {tensor}: inconsistent shape: {_dims_str(old.full)} is inferred "
                f"from model {old.model} while {_dims_str(new.full)} is inferred from model {new.model}"
            )
            if on_error:
                on_error(i, "shape_mismatch", msg, mp, key, tensor=tensor, first_model=old.model,
                         first_shape=old.full, second_model=new.model, second_shape=new.full)
            return False
        if (
            on_warning
            and old.batching != new.batching
            and _compare_dims(old.dims, new.dims)
            and not _compare_dims(old.full, new.full)
        ):
            on_warning(i, tensor, old, new, mp, key)
        return True

    for i, step in enumerate(cfg.ensemble_scheduling.step):
        scfg = repo[step.model_name].config if step.model_name in repo else None
        if scfg is None:
            continue
        sb = scfg.max_batch_size > 0
        mid = step.model_name
        in_names = {io.name for io in scfg.input}
        bad = False
        for key, tensor in step.input_map.items():
            if key not in in_names:
                if on_error:
                    on_error(i, "map_to_missing_input",
                             f"in ensemble {ens}, ensemble tensor {tensor} is mapping to non-existing input {key} "
                             f"in model {mid}", "input_map", key, tensor=tensor, key=key,
                             inputs=sorted(in_names))
                bad = True
        if bad:
            continue
        for io in scfg.input:
            if io.name in step.input_map:
                tensor = step.input_map[io.name]
                new = _TNode(mid, sb, io.data_type, io.dims)
                if tensor in nodes:
                    if not consistent(tensor, nodes[tensor], new, i, io.name, "input_map"):
                        bad = True
                else:
                    nodes[tensor] = new
            elif not io.optional:
                if on_error:
                    on_error(i, "unmapped_input",
                             f"in ensemble {ens}, input {io.name} in model {mid} is not mapped to any ensemble tensors",
                             None, None, input=io.name)
                bad = True
        if bad:
            continue
        out_names = {io.name for io in scfg.output}
        for key, tensor in step.output_map.items():
            if key not in out_names:
                if on_error:
                    on_error(i, "map_from_missing_output",
                             f"in ensemble {ens}, ensemble tensor {tensor} is mapped from non-existing output {key} "
                             f"in model {step.model_name}", "output_map", key, tensor=tensor, key=key,
                             outputs=sorted(out_names))
                bad = True
        if bad:
            continue
        sibling = _TNode(mid)
        for io in scfg.output:
            for key, tensor in step.output_map.items():
                if key != io.name:
                    continue
                new = _TNode(mid, sb, io.data_type, io.dims)
                if tensor in nodes:
                    if not consistent(tensor, nodes[tensor], new, i, key, "output_map"):
                        bad = True
                        continue
                else:
                    nodes[tensor] = new
                nodes[tensor].sibling = sibling
        if bad:
            continue
        dec = _is_decoupled(step.model_name, repo, seen)
        for tensor in step.output_map.values():
            n = nodes.get(tensor)
            if n is None:
                continue
            n.decoupled = dec
            for t_in in step.input_map.values():
                p = nodes.get(t_in)
                if p is not None:
                    n.prev.append(p)
                    p.next.append(n)
    return nodes


def _ensemble_decoupled_label(entry: ModelEntry, repo: Repo, seen: frozenset) -> tuple[bool, str | None]:
    """(is the ensemble decoupled, Triton's decoupled error or None) — the BFS of ValidateEnsembleConfig."""
    nodes = _build_tensor_nodes(entry, repo, seen)
    label = 0
    queue = deque()
    for io in entry.config.input:
        n = nodes.get(io.name)
        if n is None:
            continue
        n.visited = True
        queue.append(n)
    while queue:
        cur = queue[0]
        for nxt in cur.next:
            if nxt.visited:
                continue
            if all(p.visited for p in nxt.prev):
                prev_label = nxt.prev[0].label
                for p in nxt.prev:
                    if p.label != prev_label:
                        return label != 0, (
                            f"in ensemble {entry.config_name}, step of model '{nxt.model}' receives inputs "
                            "originated from different decoupled models"
                        )
                if nxt.sibling is not None:
                    if nxt.sibling.visited:
                        nxt.label = nxt.sibling.label
                    else:
                        if nxt.decoupled:
                            label += 1
                            nxt.label = label
                        else:
                            nxt.label = prev_label
                        nxt.sibling.label = nxt.label
                        nxt.sibling.visited = True
                else:
                    if nxt.decoupled:
                        label += 1
                        nxt.label = label
                    else:
                        nxt.label = prev_label
                nxt.visited = True
                queue.append(nxt)
        queue.popleft()
    return label != 0, None


def _check_dependencies(e: ModelEntry, repo: Repo, c: _Collector, cache: dict, stack: tuple) -> None:
    cfg = e.config
    name = e.config_name
    steps = cfg.ensemble_scheduling.step

    # 1. step models present and valid (the repository manager's dependency graph)
    missing = sorted({s.model_name for s in steps if s.model_name not in repo})
    missing_msg = f"ensemble {name} contains models that are not available or ambiguous: {', '.join(missing)}"
    broken: set[str] = set()
    for i, s in enumerate(steps):
        mname = s.model_name
        line = partial(e.line, *_step_path(i), "model_name", 0)
        if mname not in repo:
            hint = _close(mname, list(repo))
            c.error(
                "unknown_model",
                _m("unknown_model", step=_step(i), model=mname, hint=_m("did_you_mean", hint=hint) if hint else None),
                line=line,
                triton=missing_msg,
                step=i,
                model=mname,
                suggestion=hint,
            )
            continue
        if mname in stack:
            cyc = list(stack[stack.index(mname):]) + [mname]
            c.error(
                "ensemble_cycle",
                _m("ensemble_cycle", chain=" -> ".join(cyc)),
                line=line,
                triton=f"circular dependency between ensembles: {mname} -> ... -> {name} -> {mname}",
                chain=cyc,
            )
            broken.add(mname)
            continue
        if mname in broken:
            continue
        sub = _validate(mname, repo, cache, stack)
        errs = [p for p in sub if p.is_error]
        if errs:
            first = errs[0]
            cyc = next((p for p in errs if p.code == "ensemble_cycle"), None)
            if cyc is not None:
                triton = cyc.triton_message
            elif first.code in _POLL_CODES:
                triton = f"ensemble {name} contains models that are not available or ambiguous: {mname}"
            elif first.code.startswith("io_"):
                v = max(repo[mname].served_versions, default=1)
                triton = (
                    f"ensemble '{name}' depends on '{mname}' which has no loaded version. Model '{mname}' loading "
                    f"failed with error: version {v} is at UNAVAILABLE state: Invalid argument: "
                    f"{first.triton_message};"
                )
            else:
                triton = (
                    f"ensemble '{name}' depends on '{mname}' which is not valid. Model '{mname}' failed with error: "
                    f"{first.triton_message or first.message}"
                )
            c.error(
                "step_model_invalid",
                _m("step_model_invalid", step=_step(i), model=mname, reason=first.msg or first.message),
                line=line,
                triton=triton,
                step=i,
                model=mname,
                reason=first.code,
            )
            broken.add(mname)
    if has_errors(c.items):
        return

    # 2. versions
    for i, s in enumerate(steps):
        sub = repo[s.model_name]
        served = sub.served_versions
        v = s.model_version
        ok = bool(served) if v == -1 else v in served
        if ok:
            continue
        omitted = (_step_path(i) + ("model_version", 0)) not in e.locations.where and bool(e.locations.where)
        triton = f"ensemble '{name}' depends on '{s.model_name}' whose required version {v} is not loaded."
        if v == 0 and omitted:
            c.error(
                "version_omitted",
                _m("version_omitted", step=_step(i, s.model_name), model=s.model_name, served=list(served)),
                line=e.line(*_step_path(i)),
                triton=triton,
                step=i,
                model=s.model_name,
                served=served,
            )
        else:
            c.error(
                "version_not_available",
                _m("version_not_available", step=_step(i), version=v, model=s.model_name, served=list(served),
                   disk=_m("version_on_disk", versions=list(sub.versions)) if sub.versions != served else None),
                line=e.line(*_step_path(i), "model_version", 0),
                triton=triton,
                step=i,
                model=s.model_name,
                version=v,
                served=served,
            )
    if has_errors(c.items):
        return

    # 3. batch sizes, tensor mapping and consistency (ValidateEnsembleConfig), in step order
    def on_error(i, code, triton, mp, map_key, **params):
        s = steps[i]
        line = _map_line(e, i, mp, map_key) if mp else e.line(*_step_path(i))
        c.error(code, _explain(code, i, s.model_name, params, name), line=line, triton=triton, step=i,
                model=s.model_name, **params)

    def on_warning(i, tensor, old, new, mp, key):
        s = steps[i]
        bat, non = (old, new) if old.batching else (new, old)
        c.warning(
            "implicit_batch_dim",
            _m("implicit_batch_dim", tensor=tensor, batched=bat.model, batched_shape=_dims_str(bat.full),
               unbatched=non.model, unbatched_shape=_dims_str(non.full)),
            line=_map_line(e, i, mp, key),
            tensor=tensor,
            step=i,
            model=s.model_name,
            batched_model=bat.model,
            batched_shape=bat.full,
            unbatched_model=non.model,
            unbatched_shape=non.full,
        )

    for i, s in enumerate(steps):
        scfg = repo[s.model_name].config
        if scfg.max_batch_size != 0 and scfg.max_batch_size < cfg.max_batch_size:
            c.error(
                "max_batch_size_too_small",
                _m("max_batch_size_too_small", step=_step(i, s.model_name), step_max_batch_size=scfg.max_batch_size,
                   max_batch_size=cfg.max_batch_size),
                line=e.line(*_step_path(i)),
                triton=(
                    f"ensemble {name} allows maximum batch size {cfg.max_batch_size}, but it contains model "
                    f"{s.model_name} which only allows maximum batch size to be {scfg.max_batch_size}"
                ),
                step=i,
                model=s.model_name,
                step_max_batch_size=scfg.max_batch_size,
                max_batch_size=cfg.max_batch_size,
            )
    if has_errors(c.items):
        return
    _build_tensor_nodes(e, repo, frozenset(stack), on_error, on_warning)
    if has_errors(c.items):
        return
    _warn_hidden_mismatches(e, repo, c)

    # 4. decoupled steps feeding one step
    _, err = _ensemble_decoupled_label(e, repo, frozenset(stack))
    if err:
        c.error("decoupled_fan_in", _decoupled_message(e, repo), line=e.line("ensemble_scheduling", 0), triton=err)


def _warn_hidden_mismatches(e: ModelEntry, repo: Repo, c: _Collector) -> None:
    """Shapes Triton never compares: it checks each use of a tensor against the first declaration
    only, so [4] and [5] both pass against a declared [-1] although they cannot both be right."""
    decls: dict[str, list[tuple[int, str, list[int], list[int]]]] = defaultdict(list)
    for i, s in enumerate(e.config.ensemble_scheduling.step):
        scfg = repo[s.model_name].config
        b = scfg.max_batch_size > 0
        for kind, mp in (("input", s.input_map), ("output", s.output_map)):
            for key, tensor in mp.items():
                io = _find_io(scfg, kind, key)
                if io is not None:
                    decls[tensor].append((i, s.model_name, list(io.dims), ([-1] if b else []) + list(io.dims)))
    for tensor, ds in decls.items():
        for a in range(len(ds)):
            for b in range(a + 1, len(ds)):
                (i, m1, d1, f1), (j, m2, d2, f2) = ds[a], ds[b]
                if not _compare_dims(d1, d2) and not _compare_dims(f1, f2):
                    c.warning(
                        "hidden_shape_mismatch",
                        _m("hidden_shape_mismatch", tensor=tensor, first=_step(i, m1), first_shape=_dims_str(f1),
                           second=_step(j, m2), second_shape=_dims_str(f2)),
                        line=e.line(*_step_path(j)),
                        tensor=tensor,
                        first_step=i,
                        second_step=j,
                        first_shape=f1,
                        second_shape=f2,
                    )
                    break
            else:
                continue
            break


_POLL_CODES = {
    "syntax", "unknown_field", "unknown_enum", "bad_value", "duplicate_field", "oneof_conflict", "unreadable",
    "no_config", "name_mismatch", "no_backend", "unknown_platform", "ensemble_backend", "negative_max_batch_size",
    "bad_preferred_batch_size", "scheduling_not_ensemble", "ensemble_forbidden_field", "no_steps",
    "step_missing_field", "tensor_written_twice", "unused_input", "cycle", "unconnected_tensor",
    "output_not_written", "unused_tensor", "data_flow", "ensemble_without_steps",
}


def _close(word: str, choices: list[str]) -> str | None:
    import difflib

    best = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    return best[0] if best else None


def _explain(code: str, i: int, model: str, p: dict, ens: str) -> Msg:
    who = _step(i, model)
    if code == "dtype_mismatch":
        return _m("dtype_mismatch", tensor=p["tensor"], first_model=p["first_model"], first_type=p["first_type"],
                  second_model=p["second_model"], second_type=p["second_type"], step=who)
    if code == "shape_mismatch":
        none = None
        for key, model in (("first_shape", "first_model"), ("second_shape", "second_model")):
            if not [d for d in p[key]] or p[key] == [-1] and p[model] == ens:
                none = _m("shape_no_dims", model=p[model], tensor=p["tensor"])
        return _m("shape_mismatch", tensor=p["tensor"], first_shape=_dims_str(p["first_shape"]),
                  first_model=p["first_model"], second_shape=_dims_str(p["second_shape"]),
                  second_model=p["second_model"], step=who, none=none)
    if code in ("map_to_missing_input", "map_from_missing_output"):
        kind = "input" if code == "map_to_missing_input" else "output"
        names = p[kind + "s"]
        hint = _close(p["key"], names)
        rev = _m(f"map_key_is_{kind}_name", names=list(names))
        if p["tensor"] in names:  # the value is the step model's tensor: swapping key and value fixes it
            rev = _m(f"map_{kind}_reversed", tensor=p["tensor"], map_key=p["key"])
        elif hint:
            rev = _m("did_you_mean", hint=hint)
        return _m(code, step=who, map_key=p["key"], model=model, hint=rev)
    if code == "unmapped_input":
        return _m("unmapped_input", step=who, input=p["input"], model=model)
    return _m("unexplained", step=who, code=code)


def _decoupled_message(e: ModelEntry, repo: Repo) -> Msg:
    names = sorted({s.model_name for s in e.config.ensemble_scheduling.step if _is_decoupled(s.model_name, repo)})
    return _m("decoupled_fan_in", models=names)


# ---------------------------------------------------------------------------------------------
# memory


def tensor_bytes(data_type: str | int, dims, batch: int = 1, wildcard: int | None = None) -> int | None:
    """Bytes of one tensor: ``batch`` x product(dims) x element size.

    ``-1`` dims count as ``wildcard`` when given, else the size is unknown (None); so is
    ``TYPE_STRING``.  ``tensor_bytes("TYPE_FP32", [3, 224, 224], batch=8)`` is 4,816,896.
    """
    name = data_type if isinstance(data_type, str) else dtype_name(data_type)
    if not name.startswith("TYPE_"):
        name = "TYPE_" + name.upper()
    size = DTYPE_SIZES.get(name)
    if size is None:
        return None
    n = 1
    for d in dims:
        d = int(d)
        if d < 0:
            if wildcard is None:
                return None
            d = wildcard
        n *= d
    return n * size * max(int(batch), 0)


def format_bytes(n: int | float | None) -> str:
    """SI units, as the tutorial writes them: 4816896 -> '4.8 MB'."""
    if n is None:
        return "?"
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(n) >= scale:
            v = n / scale
            return f"{v:.1f} {unit}" if v < 100 else f"{v:.0f} {unit}"
    return f"{int(n)} B"


@dataclass
class MemoryEstimate:
    """Memory Triton holds for an ensemble's tensors, computed from the configs (not measured)."""

    batch_size: int
    in_flight: int
    per_tensor: dict[str, int | None]  # tensor -> bytes for one request of ``batch_size``
    per_request: int  # sum of the known per-tensor bytes
    total: int  # per_request x in_flight
    unknown: list[str]  # tensors whose size the config does not fix (-1 dims, strings)
    include_io: bool = False


def inflight_memory(
    dag: Dag, batch_size: int = 1, n_in_flight: int = 1, include_io: bool = False, wildcard: int | None = None
) -> MemoryEstimate:
    """Bytes of the intermediate tensors of ``n_in_flight`` requests of ``batch_size`` each.

    The tutorial's example: one [3,224,224] FP32 tensor at batch 8 is about 4.8 MB; 64 such
    requests in flight hold about 300 MB.
    """
    per: dict[str, int | None] = {}
    for t in dag.tensors:
        if not include_io and t.kind != "intermediate":
            continue
        if t.data_type is None or t.dims is None:
            per[t.name] = None
            continue
        per[t.name] = tensor_bytes(t.data_type, t.dims, batch_size if t.batched else 1, wildcard)
    known = sum(v for v in per.values() if v is not None)
    return MemoryEstimate(
        batch_size, n_in_flight, per, known, known * n_in_flight, sorted(k for k, v in per.items() if v is None), include_io
    )


# ---------------------------------------------------------------------------------------------
# the DAG


@dataclass
class DagStep:
    id: str
    model: str
    version: int
    input_map: dict[str, str]
    output_map: dict[str, str]
    stage: int | None  # depth from the ensemble inputs (1 = reads only ensemble inputs); None: never runs
    index: int = 0  # position in the config's step list (or in the flattened list)
    line: int | None = None
    group: str | None = None  # id of the nested-ensemble step this one was expanded from
    is_ensemble: bool = False
    decoupled: bool = False
    max_batch_size: int = 0

    def to_json(self) -> dict:
        return {
            "id": self.id,
            "model": self.model,
            "version": self.version,
            "input_map": dict(self.input_map),
            "output_map": dict(self.output_map),
            "stage": self.stage,
        }


@dataclass
class DagTensor:
    name: str
    producer: str | None  # step id; None for ensemble inputs (and tensors nobody writes)
    consumers: list[str]  # step ids
    data_type: str | None
    dims: list[int] | None  # as declared (without the batch dimension of a batching model)
    bytes: int | None  # per request (batch 1); None when the config does not fix it
    kind: str = "intermediate"  # "input" | "output" | "intermediate"
    batched: bool = False  # carries the batch dimension in front of ``dims``

    def to_json(self) -> dict:
        return {
            "name": self.name,
            "producer": self.producer,
            "consumers": list(self.consumers),
            "data_type": self.data_type,
            "dims": list(self.dims) if self.dims is not None else None,
        }


@dataclass
class Dag:
    name: str
    inputs: list[str]
    outputs: list[str]
    steps: list[DagStep]
    tensors: list[DagTensor]
    max_batch_size: int = 0
    problems: list[Problem] = field(default_factory=list)
    expanded: bool = False

    def step(self, step_id: str) -> DagStep:
        for s in self.steps:
            if s.id == step_id:
                return s
        raise KeyError(step_id)

    def tensor(self, name: str) -> DagTensor:
        for t in self.tensors:
            if t.name == name:
                return t
        raise KeyError(name)

    @property
    def stages(self) -> list[list[str]]:
        """Step ids per stage, stage 1 first; steps of one stage may run at the same time."""
        n = max((s.stage or 0 for s in self.steps), default=0)
        out: list[list[str]] = [[] for _ in range(n)]
        for s in self.steps:
            if s.stage:
                out[s.stage - 1].append(s.id)
        return out

    def nodes(self) -> list[str]:
        """Node ids: ``in:<tensor>`` per ensemble input, the step ids, ``out:<tensor>`` per output."""
        return [f"in:{t}" for t in self.inputs] + [s.id for s in self.steps] + [f"out:{t}" for t in self.outputs]

    def edges(self) -> list[tuple[str, str, str]]:
        """(source node, target node, tensor name) for every tensor hop."""
        out = []
        for t in self.tensors:
            src = f"in:{t.name}" if t.kind == "input" else t.producer
            if src is None:
                continue
            for c in t.consumers:
                out.append((src, c, t.name))
            if t.name in self.outputs:
                out.append((src, f"out:{t.name}", t.name))
        return out

    def to_json(self) -> dict:
        """The ``dag --format json`` document (DESIGN.md)."""
        return {
            "inputs": list(self.inputs),
            "outputs": list(self.outputs),
            "steps": [s.to_json() for s in self.steps],
            "tensors": [t.to_json() for t in self.tensors],
        }


def _assign_ids(models: list[str]) -> list[str]:
    counts: dict[str, int] = defaultdict(int)
    for m in models:
        counts[m] += 1
    seen: dict[str, int] = defaultdict(int)
    ids = []
    for m in models:
        seen[m] += 1
        ids.append(m if counts[m] == 1 else f"{m}#{seen[m]}")
    return ids


def _compute_stages(steps: list[DagStep], ens_inputs: list[str]) -> None:
    producer = {}
    for s in steps:
        for t in s.output_map.values():
            producer.setdefault(t, s)
    stage: dict[str, int] = {}
    ready = set(ens_inputs)
    remaining = list(steps)
    progress = True
    while progress and remaining:
        progress = False
        for s in list(remaining):
            ins = list(s.input_map.values())
            if all(t in ready for t in ins):
                deps = [stage[producer[t].id] for t in ins if t in producer and producer[t].id in stage]
                stage[s.id] = 1 + max(deps, default=0)
                ready.update(t for t in s.output_map.values() if producer.get(t) is s)
                remaining.remove(s)
                progress = True
    for s in steps:
        s.stage = stage.get(s.id)


def build_dag(
    name: str | os.PathLike,
    repo: Repo | str | os.PathLike | None = None,
    expand: bool = False,
    validate: bool = True,
) -> Dag:
    """The DAG of ensemble ``name`` (a model of ``repo``, or a path to its directory / config.pbtxt).

    Tensor types and shapes come from the ensemble's inputs/outputs and, for intermediate
    tensors, from the producing (else consuming) step model's config.  ``expand`` replaces
    nested-ensemble steps by their own steps (ids ``outer_step/inner_step``).
    Raises :class:`ConfigError` when the ensemble's config cannot be read.
    """
    name, repo = _resolve(name, repo)
    entry = repo.get(name)
    if entry is None:
        raise ConfigError(f"no model '{name}' in the repository", code="unknown_model", params={"model": name})
    if entry.error is not None:
        raise entry.error
    if not entry.config.HasField("ensemble_scheduling"):
        raise ConfigError(
            f"model '{name}' is not an ensemble (no ensemble_scheduling)",
            path=str(entry.config_path),
            code="not_ensemble",
            params={"model": name},
        )
    dag = _build_one(entry, repo)
    if expand:
        dag = _expand(dag, repo, (name,))
    if validate:
        dag.problems = validate_model(name, repo, with_dependencies=True)
    return dag


def _resolve(name, repo) -> tuple[str, Repo]:
    if repo is None:
        p = Path(name)
        if p.is_file():
            p = p.parent
        return p.name, load_repository(p.parent) if p.parent != p else {p.name: read_model_dir(p)}
    return str(name), _as_repo(repo)


def _io_info(io) -> tuple[str, list[int]]:
    dims = list(io.reshape.shape) if io.HasField("reshape") else list(io.dims)
    return dtype_name(io.data_type), dims


def _build_one(entry: ModelEntry, repo: Repo) -> Dag:
    cfg = entry.config
    steps_cfg = list(cfg.ensemble_scheduling.step)
    ids = _assign_ids([s.model_name for s in steps_cfg])
    steps: list[DagStep] = []
    for i, (sid, s) in enumerate(zip(ids, steps_cfg, strict=True)):
        sub = repo.get(s.model_name)
        scfg = sub.config if sub is not None else None
        steps.append(
            DagStep(
                id=sid,
                model=s.model_name,
                version=s.model_version,
                input_map=dict(sorted(s.input_map.items())),
                output_map=dict(sorted(s.output_map.items())),
                stage=None,
                index=i,
                line=entry.line(*_step_path(i)),
                is_ensemble=bool(scfg is not None and scfg.HasField("ensemble_scheduling")),
                decoupled=_is_decoupled(s.model_name, repo) if scfg is not None else False,
                max_batch_size=scfg.max_batch_size if scfg is not None else 0,
            )
        )
    _compute_stages(steps, [i.name for i in cfg.input])
    ens_batch = cfg.max_batch_size > 0
    order: list[str] = []
    info: dict[str, dict] = {}

    def touch(t):
        if t not in info:
            info[t] = {"producer": None, "consumers": [], "type": None, "dims": None, "batched": False, "src": 9}
            order.append(t)
        return info[t]

    for io in cfg.input:
        d = touch(io.name)
        d["type"], d["dims"] = _io_info(io)
        d["batched"], d["src"] = ens_batch, 0
    for s, sc in zip(steps, steps_cfg, strict=True):
        sub = repo.get(s.model)
        scfg = sub.config if sub is not None else None
        sbatch = bool(scfg and scfg.max_batch_size > 0)
        for key, t in sc.input_map.items():
            d = touch(t)
            d["consumers"].append(s.id)
            io = _find_io(scfg, "input", key)
            if io is not None and d["src"] > 2:
                d["type"], d["dims"], d["batched"], d["src"] = dtype_name(io.data_type), list(io.dims), sbatch, 2
        for key, t in sc.output_map.items():
            d = touch(t)
            if d["producer"] is None:
                d["producer"] = s.id
            io = _find_io(scfg, "output", key)
            if io is not None and d["src"] > 1:
                d["type"], d["dims"], d["batched"], d["src"] = dtype_name(io.data_type), list(io.dims), sbatch, 1
    for io in cfg.output:
        d = touch(io.name)
        d["type"], d["dims"] = _io_info(io)
        d["batched"], d["src"] = ens_batch, 0
    inputs = [i.name for i in cfg.input]
    outputs = [o.name for o in cfg.output]
    tensors = []
    for t in order:
        d = info[t]
        kind = "input" if t in inputs else "output" if t in outputs else "intermediate"
        nbytes = tensor_bytes(d["type"], d["dims"], 1) if d["type"] and d["dims"] is not None else None
        tensors.append(DagTensor(t, d["producer"], sorted(set(d["consumers"]), key=d["consumers"].index),
                                 d["type"], d["dims"], nbytes, kind, d["batched"]))
    return Dag(entry.config_name, inputs, outputs, steps, tensors, cfg.max_batch_size)


def _find_io(cfg, kind, name):
    if cfg is None:
        return None
    for io in getattr(cfg, kind):
        if io.name == name:
            return io
    return None


def _expand(dag: Dag, repo: Repo, stack: tuple) -> Dag:
    """Replace nested-ensemble steps by their steps; inner tensors get ``<step id>/`` prefixes."""
    if not any(s.is_ensemble for s in dag.steps):
        return dag
    new_steps: list[DagStep] = []
    tensors = {t.name: t for t in dag.tensors}
    extra: dict[str, DagTensor] = {}
    replaced: dict[str, tuple[dict[str, list[str]], dict[str, str]]] = {}
    for s in dag.steps:
        entry = repo.get(s.model)
        if not s.is_ensemble or entry is None or s.model in stack or entry.error is not None:
            new_steps.append(s)
            continue
        inner = _expand(_build_one(entry, repo), repo, stack + (s.model,))
        prefix = s.id + "/"

        def rename(t, s=s, inner=inner, prefix=prefix):
            if t in inner.inputs and t in s.input_map:
                return s.input_map[t]
            if t in inner.outputs and t in s.output_map:
                return s.output_map[t]
            return prefix + t

        consumers_in: dict[str, list[str]] = defaultdict(list)
        producers_out: dict[str, str] = {}
        for st in inner.steps:
            ns = DagStep(
                id=prefix + st.id,
                model=st.model,
                version=st.version,
                input_map={k: rename(v) for k, v in st.input_map.items()},
                output_map={k: rename(v) for k, v in st.output_map.items()},
                stage=None,
                line=st.line,
                group=st.group and prefix + st.group or s.id,
                is_ensemble=st.is_ensemble,
                decoupled=st.decoupled,
                max_batch_size=st.max_batch_size,
            )
            new_steps.append(ns)
            for v in ns.input_map.values():
                consumers_in[v].append(ns.id)
            for v in ns.output_map.values():
                producers_out.setdefault(v, ns.id)
        replaced[s.id] = (consumers_in, producers_out)
        for it in inner.tensors:
            nm = rename(it.name)
            if nm in tensors or nm in extra:
                continue
            extra[nm] = DagTensor(nm, None, [], it.data_type, it.dims, it.bytes, "intermediate", it.batched)
    for i, s in enumerate(new_steps):
        s.index = i
    # recompute producers/consumers from the flattened maps
    all_tensors = dict(tensors)
    all_tensors.update(extra)
    for t in all_tensors.values():
        t.producer = None
        t.consumers = []
    for s in new_steps:
        for v in s.input_map.values():
            if v in all_tensors and s.id not in all_tensors[v].consumers:
                all_tensors[v].consumers.append(s.id)
        for v in s.output_map.values():
            if v in all_tensors and all_tensors[v].producer is None:
                all_tensors[v].producer = s.id
    _compute_stages(new_steps, dag.inputs)
    return Dag(dag.name, dag.inputs, dag.outputs, new_steps, list(all_tensors.values()), dag.max_batch_size,
               dag.problems, True)


def dag_summary(dag: Dag) -> dict:
    """Counts the app shows beside the picture."""
    return {
        "steps": len(dag.steps),
        "stages": len(dag.stages),
        "widest_stage": max((len(s) for s in dag.stages), default=0),
        "tensors": len(dag.tensors),
        "bytes_per_request": sum(t.bytes or 0 for t in dag.tensors if t.kind == "intermediate"),
        "unknown_sizes": [t.name for t in dag.tensors if t.bytes is None],
    }


__all__ = [
    "Dag",
    "DagStep",
    "DagTensor",
    "MemoryEstimate",
    "Problem",
    "build_dag",
    "dag_summary",
    "format_bytes",
    "has_errors",
    "inflight_memory",
    "is_valid",
    "tensor_bytes",
    "validate_config_file",
    "validate_ensemble",
    "validate_model",
    "validate_repository",
]
