"""Tensors between an ensemble's steps, as Triton's ``ensemble_utils.cc`` builds them: every ensemble tensor's
producer, consumers, type and shape (:func:`build_tensor_nodes`), and which steps are decoupled (stream
their answers), with the messages for a decoupled step that feeds another.
"""

from __future__ import annotations

from collections import deque

from triton_kitchen.core.config import ModelEntry
from triton_kitchen.core.ensemble.problems import (
    Msg,
    Repo,
    compare_dims,
    dims_str,
    msg,
    step_ref,
)
from triton_kitchen.core.tensors import dtype_name


def is_decoupled(name: str, repo: Repo, seen: frozenset = frozenset()) -> bool:
    entry = repo.get(name)
    if entry is None or entry.config is None or name in seen:
        return False
    cfg = entry.config
    if cfg.HasField("ensemble_scheduling"):
        return ensemble_decoupled_label(entry, repo, seen | {name})[0]
    return cfg.model_transaction_policy.decoupled


class _TNode:
    __slots__ = (
        "model",
        "batching",
        "dtype",
        "dims",
        "full",
        "decoupled",
        "label",
        "visited",
        "prev",
        "next",
        "sibling",
    )

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


def build_tensor_nodes(entry: ModelEntry, repo: Repo, seen: frozenset, on_error=None, on_warning=None):
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
                on_error(
                    i,
                    "dtype_mismatch",
                    msg,
                    mp,
                    key,
                    tensor=tensor,
                    first_model=old.model,
                    first_type=dtype_name(old.dtype),
                    second_model=new.model,
                    second_type=dtype_name(new.dtype),
                )
            return False
        if not compare_dims(old.dims, new.dims) and not compare_dims(old.full, new.full):
            msg = (
                f"in ensemble {ens}, ensemble tensor {tensor}: inconsistent shape: {dims_str(old.full)} is inferred "
                f"from model {old.model} while {dims_str(new.full)} is inferred from model {new.model}"
            )
            if on_error:
                on_error(
                    i,
                    "shape_mismatch",
                    msg,
                    mp,
                    key,
                    tensor=tensor,
                    first_model=old.model,
                    first_shape=old.full,
                    second_model=new.model,
                    second_shape=new.full,
                )
            return False
        if (
            on_warning
            and old.batching != new.batching
            and compare_dims(old.dims, new.dims)
            and not compare_dims(old.full, new.full)
        ):
            on_warning(i, tensor, old, new, mp, key)
        return True

    def unknown_keys(
        i: int, mapping, names: set[str], code: str, field: str, names_key: str, message
    ) -> bool:
        """Report every key of an input_map/output_map that names no tensor of the step's model (Triton's
        message, its wording per map); True when there was one."""
        bad = False
        for key, tensor in mapping.items():
            if key not in names:
                if on_error:
                    on_error(
                        i,
                        code,
                        message(tensor, key),
                        field,
                        key,
                        tensor=tensor,
                        key=key,
                        **{names_key: sorted(names)},
                    )
                bad = True
        return bad

    for i, step in enumerate(cfg.ensemble_scheduling.step):
        scfg = repo[step.model_name].config if step.model_name in repo else None
        if scfg is None:
            continue
        sb = scfg.max_batch_size > 0
        mid = step.model_name
        in_names = {io.name for io in scfg.input}
        if unknown_keys(
            i,
            step.input_map,
            in_names,
            "map_to_missing_input",
            "input_map",
            "inputs",
            lambda tensor, key, mid=mid: (
                f"in ensemble {ens}, ensemble tensor {tensor} is mapping to "
                f"non-existing input {key} in model {mid}"
            ),
        ):
            continue
        bad = False
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
                    on_error(
                        i,
                        "unmapped_input",
                        f"in ensemble {ens}, input {io.name} in model {mid} is not mapped to any ensemble tensors",
                        None,
                        None,
                        input=io.name,
                    )
                bad = True
        if bad:
            continue
        out_names = {io.name for io in scfg.output}
        if unknown_keys(
            i,
            step.output_map,
            out_names,
            "map_from_missing_output",
            "output_map",
            "outputs",
            lambda tensor, key, mid=mid: (
                f"in ensemble {ens}, ensemble tensor {tensor} is mapped from "
                f"non-existing output {key} in model {mid}"
            ),
        ):
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
        dec = is_decoupled(step.model_name, repo, seen)
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


def ensemble_decoupled_label(
    entry: ModelEntry, repo: Repo, seen: frozenset, detail: dict | None = None
) -> tuple[bool, str | None]:
    """(is the ensemble decoupled, Triton's decoupled error or None) — the BFS of ValidateEnsembleConfig.

    On the error, ``detail`` (when given) gets the receiving step (its 0-based index) and, per stream of
    responses that meets there, the decoupled step it started at (None: the ensemble's own inputs)."""
    nodes = build_tensor_nodes(entry, repo, seen)
    producer = {
        t: i for i, st in enumerate(entry.config.ensemble_scheduling.step) for t in st.output_map.values()
    }
    name_of = {id(n): t for t, n in nodes.items()}
    label = 0
    origin: dict[int, int | None] = {}  # label -> the decoupled step whose responses carry it
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
                        if detail is not None:
                            detail["receiver"] = producer.get(name_of.get(id(nxt)), -1)  # -1: the outputs
                            detail["sources"] = sorted(
                                {origin.get(q.label) for q in nxt.prev}, key=lambda k: (k is not None, k or 0)
                            )
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
                            origin[label] = producer.get(name_of.get(id(nxt)))
                        else:
                            nxt.label = prev_label
                        nxt.sibling.label = nxt.label
                        nxt.sibling.visited = True
                else:
                    if nxt.decoupled:
                        label += 1
                        nxt.label = label
                        origin[label] = producer.get(name_of.get(id(nxt)))
                    else:
                        nxt.label = prev_label
                nxt.visited = True
                queue.append(nxt)
        queue.popleft()
    return label != 0, None


def decoupled_message(e: ModelEntry, repo: Repo, detail: dict | None = None) -> Msg:
    """The receiving step and the steps whose streams of responses meet there (from ``detail``)."""
    steps = list(e.config.ensemble_scheduling.step)
    if detail and detail.get("receiver") is not None:
        sources = [
            step_ref(k, steps[k].model_name) if k is not None else msg("ensemble_inputs")
            for k in detail["sources"]
        ]
        i = detail["receiver"]
        at = step_ref(i, steps[i].model_name) if i >= 0 else msg("ensemble_outputs")
        return msg("decoupled_fan_in_at", step=at, sources=sources)
    names = sorted({s.model_name for s in steps if is_decoupled(s.model_name, repo)})
    return msg("decoupled_fan_in", models=names)
