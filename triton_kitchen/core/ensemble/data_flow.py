"""Data flow inside one ensemble: which tensors are written, read, unused, never ready, or go round a cycle.

:func:`_triton_data_flow` replicates Triton's own check (its first error message, word for word);
:func:`check_data_flow` reports every problem, each explained, and keeps Triton's wording on the first.
"""

from __future__ import annotations

from collections import defaultdict, deque

from triton_kitchen.core.config import ModelEntry
from triton_kitchen.core.ensemble.problems import (
    Collector,
    Repo,
    has_errors,
    key_of,
    map_line,
    msg,
    step_path,
    step_ref,
    value_line,
)


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
            message = f"output '{out.name}' for ensemble '{name}' is not written"
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
                message += f": at least one of its depending tensors, '{last}', is not connected"
            return message
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


def check_data_flow(e: ModelEntry, c: Collector, repo: Repo | None = None) -> bool:
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
        return step_ref(i, steps[i].model_name)

    # unused ensemble inputs
    for k, t in enumerate(ens_inputs):
        if t not in read_by and t not in producer:
            as_key = [i for i, s in enumerate(steps) if _swap_makes_sense(s, t, repo)]
            hint = None
            if as_key:
                i = as_key[0]
                hint = msg("unused_input_reversed", step=label(i), tensor=t, value=steps[i].input_map[t])
            c.error(
                "unused_input",
                msg("unused_input", tensor=t, hint=hint),
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
            walk = msg("cycle_hop", step=label(a), tensor=t, rest=walk)
        if len(order) == 1:
            text = msg("cycle_self", step=label(order[0]), tensor=via[0])
        else:
            text = msg("cycle", walk=walk)
        c.error(
            "cycle",
            text,
            line=e.line(*step_path(order[0])),
            steps=[steps[i].model_name for i in order],
            step_indexes=order,
            tensors=via,
        )
    # tensors read but never written
    for t, readers in read_by.items():
        if t not in producer and t not in ens_inputs:
            for i in readers:
                key = key_of(steps[i].input_map, t)
                hint = None
                if _swap_makes_sense(steps[i], key, repo):
                    hint = msg("unconnected_reversed", model=steps[i].model_name, tensor=t, map_key=key)
                c.error(
                    "unconnected_tensor",
                    msg("unconnected_tensor", step=label(i), tensor=t, hint=hint),
                    line=value_line(e, i, "input_map", t),
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
            extra = msg("output_read_by", step=label(reader[0])) if reader else None
            c.error(
                "output_not_written",
                msg("output_not_written", tensor=t, extra=extra),
                line=e.line("output", k),
                tensor=t,
            )
        elif t not in ready and producer[t] not in in_cycle and not has_errors(c.items[before:]):
            c.error(
                "output_not_written",
                msg("output_never_written", tensor=t, step=label(producer[t])),
                line=e.line("output", k),
                tensor=t,
            )
    # a step that writes an ensemble input: Triton accepts it (the input is ready from the start)
    for t, i in producer.items():
        if t in ens_inputs:
            c.warning(
                "writes_ensemble_input",
                msg("writes_ensemble_input", step=label(i), tensor=t),
                line=map_line(e, i, "output_map", key_of(steps[i].output_map, t)),
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
                msg("unused_tensor", step=label(i), tensor=t),
                line=map_line(e, i, "output_map", key_of(steps[i].output_map, t)),
                tensor=t,
                step=i,
            )
    new = [p for p in c.items[before:] if p.is_error]
    if triton and not new:  # should not happen; keep Triton's verdict anyway
        c.error("data_flow", msg("data_flow", text=triton), triton=triton)
        new = [p for p in c.items[before:] if p.is_error]
    if triton and new:
        new[0].triton_message = triton
    return not new
