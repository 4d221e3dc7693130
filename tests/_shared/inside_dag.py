"""Helpers shared by tests/unit/test_inside_dag.py and tests/live/test_inside_dag_live.py."""

from __future__ import annotations

from triton_kitchen.labs import inside_dag

PRUNED_FILL = f'fillcolor="{inside_dag.PRUNED.fill}"'


def dot_node(dot: str, node_id: str) -> str:
    line = next(x for x in dot.splitlines() if x.strip().startswith(f'"{node_id}" ['))
    return line
