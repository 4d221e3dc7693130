"""The public checks (:func:`validate_model`, :func:`validate_repository`) and the rules that need the step
models' configs: step models present and valid, versions, batch sizes, tensor mapping and consistency
(``ValidateEnsembleConfig`` of Triton's ``ensemble_utils.cc``), decoupled steps feeding one step.

:func:`_validate` and :func:`_check_dependencies` recurse into each other (a step may be an ensemble).
"""

from __future__ import annotations

import difflib
import os
from collections import defaultdict, deque
from functools import partial

from triton_kitchen.core.config import ModelEntry, load_repository
from triton_kitchen.core.ensemble.model_rules import check_model
from triton_kitchen.core.ensemble.problems import (
    DEFAULT_OPTIONS,
    CheckOptions,
    Collector,
    Msg,
    Problem,
    Repo,
    as_repo,
    compare_dims,
    dims_str,
    find_io,
    has_errors,
    map_line,
    msg,
    step_path,
    step_ref,
)
from triton_kitchen.core.ensemble.tensor_nodes import (
    build_tensor_nodes,
    decoupled_message,
    ensemble_decoupled_label,
)


def validate_repository(
    path: str | os.PathLike | Repo, config_name: str | None = None, options: CheckOptions = DEFAULT_OPTIONS
) -> list[Problem]:
    """Problems of every model of a repository (each model once)."""
    repo = path if isinstance(path, dict) else load_repository(path, config_name, version=options.version)
    cache: dict = {"options": options}
    out: list[Problem] = []
    for name in repo:
        out += _validate(name, repo, cache, ())
    return out


def validate_model(
    name: str,
    repo: Repo | str | os.PathLike,
    with_dependencies: bool = False,
    options: CheckOptions = DEFAULT_OPTIONS,
) -> list[Problem]:
    """Problems of one model of ``repo`` (a step of an ensemble is checked against its config).

    With ``with_dependencies`` the step models' own problems (recursively) follow.
    """
    repo = as_repo(repo, options.version)
    cache: dict = {"options": options}
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


def _step_models(entry: ModelEntry | None) -> list[str]:
    if entry is None or entry.config is None or not entry.config.HasField("ensemble_scheduling"):
        return []
    return [s.model_name for s in entry.config.ensemble_scheduling.step if s.model_name]


def _validate(name: str, repo: Repo, cache: dict, stack: tuple) -> list[Problem]:
    key = ("model", name)  # the cache also holds the options under "options"
    if key in cache:
        return cache[key]
    cache[key] = []  # provisional (recursion guard)
    entry = repo[name]
    c = Collector(entry, cache.get("options", DEFAULT_OPTIONS))
    check_model(entry, c, repo)
    if not has_errors(c.items) and entry.config is not None and entry.config.HasField("ensemble_scheduling"):
        _check_dependencies(entry, repo, c, cache, stack + (name,))
    cache[key] = c.items
    return c.items


def _check_dependencies(e: ModelEntry, repo: Repo, c: Collector, cache: dict, stack: tuple) -> None:
    cfg = e.config
    name = e.config_name
    steps = cfg.ensemble_scheduling.step

    # 1. step models present and valid (the repository manager's dependency graph)
    missing = sorted({s.model_name for s in steps if s.model_name not in repo})
    missing_msg = f"ensemble {name} contains models that are not available or ambiguous: {', '.join(missing)}"
    broken: set[str] = set()
    for i, s in enumerate(steps):
        mname = s.model_name
        line = partial(e.line, *step_path(i), "model_name", 0)
        if mname not in repo:
            hint = _close(mname, list(repo))
            c.error(
                "unknown_model",
                msg(
                    "unknown_model",
                    step=step_ref(i),
                    model=mname,
                    hint=msg("did_you_mean", hint=hint) if hint else None,
                ),
                line=line,
                triton=missing_msg,
                step=i,
                model=mname,
                suggestion=hint,
            )
            continue
        if mname in stack:
            cyc = list(stack[stack.index(mname) :]) + [mname]
            c.error(
                "ensemble_cycle",
                msg("ensemble_cycle", chain=" -> ".join(cyc)),
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
                msg("step_model_invalid", step=step_ref(i), model=mname, reason=first.msg or first.message),
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
        omitted = (step_path(i) + ("model_version", 0)) not in e.locations.where and bool(e.locations.where)
        triton = f"ensemble '{name}' depends on '{s.model_name}' whose required version {v} is not loaded."
        if v == 0 and omitted:
            c.error(
                "version_omitted",
                msg(
                    "version_omitted", step=step_ref(i, s.model_name), model=s.model_name, served=list(served)
                ),
                line=e.line(*step_path(i)),
                triton=triton,
                step=i,
                model=s.model_name,
                served=served,
            )
        else:
            c.error(
                "version_not_available",
                msg(
                    "version_not_available",
                    step=step_ref(i),
                    version=v,
                    model=s.model_name,
                    served=list(served),
                    disk=msg("version_on_disk", versions=list(sub.versions))
                    if sub.versions != served
                    else None,
                ),
                line=e.line(*step_path(i), "model_version", 0),
                triton=triton,
                step=i,
                model=s.model_name,
                version=v,
                served=served,
            )
    if has_errors(c.items):
        return

    # a step model without config.pbtxt that Triton completes from its model file at load: its tensors and
    # batch size are known only then, so the checks that compare the ensemble with it cannot run here
    filled = [(i, s) for i, s in enumerate(steps) if repo[s.model_name].config is None]
    for i, s in filled:
        c.warning(
            "step_config_filled_at_load",
            msg("step_config_filled_at_load", step=step_ref(i, s.model_name), model=s.model_name),
            line=e.line(*step_path(i)),
            step=i,
            model=s.model_name,
        )
    if filled:
        return

    # 3. batch sizes, tensor mapping and consistency (ValidateEnsembleConfig), in step order
    def on_error(i, code, triton, mp, map_key, **params):
        s = steps[i]
        line = map_line(e, i, mp, map_key) if mp else e.line(*step_path(i))
        c.error(
            code,
            _explain(code, i, s.model_name, params, name),
            line=line,
            triton=triton,
            step=i,
            model=s.model_name,
            **params,
        )

    def on_warning(i, tensor, old, new, mp, key):
        s = steps[i]
        bat, non = (old, new) if old.batching else (new, old)
        c.warning(
            "implicit_batch_dim",
            msg(
                "implicit_batch_dim",
                tensor=tensor,
                batched=bat.model,
                batched_shape=dims_str(bat.full),
                unbatched=non.model,
                unbatched_shape=dims_str(non.full),
            ),
            line=map_line(e, i, mp, key),
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
                msg(
                    "max_batch_size_too_small",
                    step=step_ref(i, s.model_name),
                    step_max_batch_size=scfg.max_batch_size,
                    max_batch_size=cfg.max_batch_size,
                ),
                line=e.line(*step_path(i)),
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
    build_tensor_nodes(e, repo, frozenset(stack), on_error, on_warning)
    if has_errors(c.items):
        return
    _warn_hidden_mismatches(e, repo, c)

    # 4. decoupled steps feeding one step
    detail: dict = {}
    _, err = ensemble_decoupled_label(e, repo, frozenset(stack), detail)
    if err:
        c.error(
            "decoupled_fan_in",
            decoupled_message(e, repo, detail),
            line=e.line("ensemble_scheduling", 0),
            triton=err,
            step_model=detail.get("receiver"),
            sources=detail.get("sources"),
        )


_POLL_CODES = {
    "syntax",
    "unknown_field",
    "unknown_enum",
    "bad_value",
    "duplicate_field",
    "oneof_conflict",
    "unreadable",
    "no_config",
    "name_mismatch",
    "no_backend",
    "unknown_platform",
    "ensemble_backend",
    "negative_max_batch_size",
    "bad_preferred_batch_size",
    "scheduling_not_ensemble",
    "ensemble_forbidden_field",
    "no_steps",
    "step_missing_field",
    "tensor_written_twice",
    "unused_input",
    "cycle",
    "unconnected_tensor",
    "output_not_written",
    "unused_tensor",
    "data_flow",
    "ensemble_without_steps",
}


def _close(word: str, choices: list[str]) -> str | None:
    best = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    return best[0] if best else None


def _explain(code: str, i: int, model: str, p: dict, ens: str) -> Msg:
    who = step_ref(i, model)
    if code == "dtype_mismatch":
        return msg(
            "dtype_mismatch",
            tensor=p["tensor"],
            first_model=p["first_model"],
            first_type=p["first_type"],
            second_model=p["second_model"],
            second_type=p["second_type"],
            step=who,
        )
    if code == "shape_mismatch":
        none = None
        for key, model in (("first_shape", "first_model"), ("second_shape", "second_model")):
            if not [d for d in p[key]] or p[key] == [-1] and p[model] == ens:
                none = msg("shape_no_dims", model=p[model], tensor=p["tensor"])
        return msg(
            "shape_mismatch",
            tensor=p["tensor"],
            first_shape=dims_str(p["first_shape"]),
            first_model=p["first_model"],
            second_shape=dims_str(p["second_shape"]),
            second_model=p["second_model"],
            step=who,
            none=none,
        )
    if code in ("map_to_missing_input", "map_from_missing_output"):
        kind = "input" if code == "map_to_missing_input" else "output"
        names = p[kind + "s"]
        hint = _close(p["key"], names)
        rev = msg(f"map_key_is_{kind}_name", names=list(names))
        if p["tensor"] in names:  # the value is the step model's tensor: swapping key and value fixes it
            rev = msg(f"map_{kind}_reversed", tensor=p["tensor"], map_key=p["key"])
        elif hint:
            rev = msg("did_you_mean", hint=hint)
        return msg(code, step=who, map_key=p["key"], model=model, hint=rev)
    if code == "unmapped_input":
        return msg("unmapped_input", step=who, input=p["input"], model=model)
    return msg("unexplained", step=who, code=code)


def _warn_hidden_mismatches(e: ModelEntry, repo: Repo, c: Collector) -> None:
    """Shapes Triton never compares: it checks each use of a tensor against the first declaration
    only, so [4] and [5] both pass against a declared [-1] although they cannot both be right."""
    decls: dict[str, list[tuple[int, str, list[int], list[int]]]] = defaultdict(list)
    for i, s in enumerate(e.config.ensemble_scheduling.step):
        scfg = repo[s.model_name].config
        b = scfg.max_batch_size > 0
        for kind, mp in (("input", s.input_map), ("output", s.output_map)):
            for key, tensor in mp.items():
                io = find_io(scfg, kind, key)
                if io is not None:
                    decls[tensor].append(
                        (i, s.model_name, list(io.dims), ([-1] if b else []) + list(io.dims))
                    )
    for tensor, ds in decls.items():
        for a in range(len(ds)):
            for b in range(a + 1, len(ds)):
                (i, m1, d1, f1), (j, m2, d2, f2) = ds[a], ds[b]
                if not compare_dims(d1, d2) and not compare_dims(f1, f2):
                    c.warning(
                        "hidden_shape_mismatch",
                        msg(
                            "hidden_shape_mismatch",
                            tensor=tensor,
                            first=step_ref(i, m1),
                            first_shape=dims_str(f1),
                            second=step_ref(j, m2),
                            second_shape=dims_str(f2),
                        ),
                        line=e.line(*step_path(j)),
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
