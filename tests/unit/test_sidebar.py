"""ui/sidebar.py without a server: the server log's harmless GPU lines hidden on a CPU machine.

The sidebar on a running app (log, moved ports, remote advice, a hanging remote): tests/live/test_sidebar_live.py."""

from __future__ import annotations


def test_split_log_hides_the_harmless_gpu_lines():
    from ui.sidebar import split_log

    log = "\n".join(
        [
            'I1130 19:51:52.647370 2 server.cc:674] "started"',
            'E1130 19:51:52.647371 2 model_lifecycle.cc:1] "unable to create stream for tta_ensemble: CUDA driver '
            'version is insufficient for CUDA runtime version"',
            'W1130 23:12:22.387142 9302 pinned_memory_manager.cc:273] "Unable to allocate pinned system memory, '
            'pinned memory pool will not be available: CUDA driver version is insufficient for CUDA runtime version"',
            'E1130 23:12:22.387254 9302 server.cc:241] "CudaDriverHelper has not been initialized."',
            'W1205 10:41:30.120003 9302 pinned_memory_manager.cc:170] "failed to allocate pinned system memory: '
            'no pinned memory pool, falling back to non-pinned system memory"',
            'E1130 19:51:53.000000 2 model_repository_manager.cc:1] "failed to load classifier"',
        ]
    )
    shown, n = split_log(log, hide_gpu_lines=True)
    assert (
        n == 4
        and "CUDA" not in shown
        and "pinned" not in shown
        and "failed to load classifier" in shown
        and "started" in shown
    )
    shown, n = split_log(log, hide_gpu_lines=False)
    assert n == 4 and shown == log
