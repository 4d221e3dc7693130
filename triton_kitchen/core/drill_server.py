"""A small tritonserver of a drill's own, on drill_repository/ (free ports, stopped when the run ends), and the
inputs of its ``slow_drill`` model. Drills that kill a stub, cancel requests or start a server that must fail use
it, so the class's server and models are never touched (chapters 7 and 10).

    with own_server([SLOW_DRILL]) as srv:
        client = grpcclient.InferenceServerClient(srv.endpoint.grpc_url)
        client.infer(SLOW_DRILL, slow_inputs(800))   # sleeps 800 ms in the model
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import tritonclient.grpc as grpcclient

from triton_kitchen.core.catalog import DRILL_REPOSITORY
from triton_kitchen.core.server import EmbeddedServer

START_TIMEOUT_S = 60.0


@contextlib.contextmanager
def own_server(
    load: list[str], extra_args: tuple[str, ...] = (), repo: Path = DRILL_REPOSITORY
) -> Iterator[EmbeddedServer]:
    """A tritonserver of this run's own on ``repo`` (explicit mode, loading ``load``), stopped and its folder
    removed when the block ends. Raises ServerStartError (with the log's errors) when it does not start."""
    srv = EmbeddedServer(
        repo=repo,
        http_port=0,
        grpc_port=0,
        metrics_port=0,
        load_models=load,
        extra_args=extra_args,
        build_models=False,
    )
    try:
        srv.start(timeout=START_TIMEOUT_S)
        yield srv
    finally:
        srv.stop()


def slow_inputs(ms: int, poll: bool = False, module=grpcclient) -> list:
    """slow_drill's two inputs: sleep ``ms`` milliseconds; with ``poll``, ask request.is_cancelled() every
    10 ms and stop early. ``module``: tritonclient.grpc or tritonclient.http."""
    a = module.InferInput("MS", [1, 1], "INT32")
    a.set_data_from_numpy(np.array([[ms]], dtype=np.int32))
    b = module.InferInput("POLL", [1, 1], "BOOL")
    b.set_data_from_numpy(np.array([[poll]], dtype=bool))
    return [a, b]
