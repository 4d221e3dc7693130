"""The memory estimate: bytes an ensemble's tensors hold per request and with many requests in flight."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from triton_kitchen.core.tensors import tensor_bytes

if TYPE_CHECKING:
    from triton_kitchen.core.ensemble.dag import Dag


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
        batch_size,
        n_in_flight,
        per,
        known,
        known * n_in_flight,
        sorted(k for k, v in per.items() if v is None),
        include_io,
    )
