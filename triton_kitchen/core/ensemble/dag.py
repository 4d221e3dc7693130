"""The DAG of an ensemble: steps with their stages, tensors with type, shape and bytes, nested expansion."""

from __future__ import annotations

import os
from collections import defaultdict
from dataclasses import dataclass, field
from enum import IntEnum
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

from triton_kitchen.core.config import ConfigError, ModelEntry, load_repository, read_model_dir
from triton_kitchen.core.ensemble.problems import Problem, Repo, as_repo, find_io, step_path
from triton_kitchen.core.ensemble.tensor_nodes import is_decoupled
from triton_kitchen.core.ensemble.validate import validate_model
from triton_kitchen.core.tensors import dtype_name, tensor_bytes


class TypeSource(IntEnum):
    """Where a DAG tensor's type and shape were read; a lower value is more authoritative and wins."""

    ENSEMBLE_IO = 0  # the ensemble's own input/output declaration
    PRODUCER = 1  # the output of the step that writes the tensor
    CONSUMER = 2  # the input of the first step that reads it
    UNKNOWN = 3


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
        return (
            [f"in:{t}" for t in self.inputs] + [s.id for s in self.steps] + [f"out:{t}" for t in self.outputs]
        )

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
        """The ``dag --format json`` document (ARCHITECTURE.md)."""
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
    """Set each step's stage: 1 + the latest stage among the steps it reads from (1: reads only ensemble
    inputs).  A step that reads a tensor nobody writes, or sits on or after a cycle, never runs (None)."""
    producer: dict[str, str] = {}
    for s in steps:
        for t in s.output_map.values():
            producer.setdefault(t, s.id)
    available = set(ens_inputs) | set(producer)
    # an ensemble input is ready from the start, even when a step also writes it
    reads_from = {
        s.id: {producer[t] for t in s.input_map.values() if t in producer and t not in ens_inputs}
        for s in steps
    }
    sorter = TopologicalSorter(reads_from)
    try:
        sorter.prepare()
    except CycleError:
        pass  # get_ready() still hands out every step before the cycle
    by_id = {s.id: s for s in steps}
    stage: dict[str, int] = {}
    n = 0
    # get_ready() batches, each marked done as a whole, are the stages
    while ready := sorter.get_ready():
        n += 1
        runnable = [i for i in ready if all(t in available for t in by_id[i].input_map.values())]
        stage.update((i, n) for i in runnable)
        sorter.done(*runnable)  # the others never run, nor does anything after them
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
        raise ConfigError(
            f"no model '{name}' in the repository", code="unknown_model", params={"model": name}
        )
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
    return str(name), as_repo(repo)


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
                line=entry.line(*step_path(i)),
                is_ensemble=bool(scfg is not None and scfg.HasField("ensemble_scheduling")),
                decoupled=is_decoupled(s.model_name, repo) if scfg is not None else False,
                max_batch_size=scfg.max_batch_size if scfg is not None else 0,
            )
        )
    _compute_stages(steps, [i.name for i in cfg.input])
    ens_batch = cfg.max_batch_size > 0
    order: list[str] = []
    info: dict[str, dict] = {}

    def touch(t):
        if t not in info:
            info[t] = {
                "producer": None,
                "consumers": [],
                "type": None,
                "dims": None,
                "batched": False,
                "src": TypeSource.UNKNOWN,
            }
            order.append(t)
        return info[t]

    for io in cfg.input:
        d = touch(io.name)
        d["type"], d["dims"] = _io_info(io)
        d["batched"], d["src"] = ens_batch, TypeSource.ENSEMBLE_IO
    for s, sc in zip(steps, steps_cfg, strict=True):
        sub = repo.get(s.model)
        scfg = sub.config if sub is not None else None
        sbatch = bool(scfg and scfg.max_batch_size > 0)
        for key, t in sc.input_map.items():
            d = touch(t)
            d["consumers"].append(s.id)
            io = find_io(scfg, "input", key)
            if io is not None and d["src"] > TypeSource.CONSUMER:
                d.update(
                    type=dtype_name(io.data_type), dims=list(io.dims), batched=sbatch, src=TypeSource.CONSUMER
                )
        for key, t in sc.output_map.items():
            d = touch(t)
            if d["producer"] is None:
                d["producer"] = s.id
            io = find_io(scfg, "output", key)
            if io is not None and d["src"] > TypeSource.PRODUCER:
                d.update(
                    type=dtype_name(io.data_type), dims=list(io.dims), batched=sbatch, src=TypeSource.PRODUCER
                )
    for io in cfg.output:
        d = touch(io.name)
        d["type"], d["dims"] = _io_info(io)
        d["batched"], d["src"] = ens_batch, TypeSource.ENSEMBLE_IO
    inputs = [i.name for i in cfg.input]
    outputs = [o.name for o in cfg.output]
    tensors = []
    for t in order:
        d = info[t]
        kind = "input" if t in inputs else "output" if t in outputs else "intermediate"
        nbytes = tensor_bytes(d["type"], d["dims"], 1) if d["type"] and d["dims"] is not None else None
        tensors.append(
            DagTensor(
                t,
                d["producer"],
                sorted(set(d["consumers"]), key=d["consumers"].index),
                d["type"],
                d["dims"],
                nbytes,
                kind,
                d["batched"],
            )
        )
    return Dag(entry.config_name, inputs, outputs, steps, tensors, cfg.max_batch_size)


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
    return Dag(
        dag.name,
        dag.inputs,
        dag.outputs,
        new_steps,
        list(all_tensors.values()),
        dag.max_batch_size,
        dag.problems,
        True,
    )
