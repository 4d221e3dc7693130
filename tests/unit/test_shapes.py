"""The shapes drill's rules without a server: where each way sends a row, what a bad setting says, how the
outcome is read from Triton's counts, and that the four drill models run one and the same model.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from triton_kitchen.core import catalog
from triton_kitchen.labs import shapes

ROOT = Path(__file__).resolve().parents[2]


def test_routes():
    assert shapes.route("unequal", 17) == (catalog.SHAPES_DRILL, 17)
    assert shapes.route("padded", 17, 200) == (catalog.SHAPES_DRILL, 200)
    assert shapes.route("ragged", 17) == (catalog.SHAPES_RAGGED, 17)
    assert shapes.route("buckets_one_model", 17) == (catalog.SHAPES_DRILL, 64)
    assert shapes.route("buckets", 17) == (catalog.SHAPES_BUCKET_SHORT, 64)
    assert shapes.route("buckets", 65) == (catalog.SHAPES_BUCKET_LONG, 128)
    assert shapes.models_of("buckets") == (catalog.SHAPES_BUCKET_SHORT, catalog.SHAPES_BUCKET_LONG)


def test_padding_shorter_than_the_longest_row_is_refused_with_its_own_code():
    with pytest.raises(shapes.ShapesError) as err:
        shapes.check(8, shapes.LONGEST - 1)
    assert err.value.code == "pad_short"
    with pytest.raises(shapes.ShapesError) as err:
        shapes.check(0, shapes.LONGEST)
    assert err.value.code == "bad_settings"
    shapes.check(8, shapes.LONGEST)


def test_padding_changes_no_row():
    x = shapes.row(5, 9, seed=3)
    assert x.shape == (1, 9) and (x[0, 5:] == 0).all() and (x[0, :5] != 0).all()


def _run(way, executions, inferences, clients=8):
    return shapes.ShapeRun(way, clients, 128, 1.0, inferences, [], executions, inferences, {})


@pytest.mark.parametrize(
    ("executions", "inferences", "outcome"), [(100, 104, "one"), (100, 250, "few"), (100, 420, "all")]
)
def test_outcome_from_tritons_counts(executions, inferences, outcome):
    assert shapes.ShapesResult([_run("unequal", executions, inferences)]).outcome() == outcome


def test_inside_outcome_and_calls():
    a = shapes.Answer
    listed = shapes.InsideResult([a(0, 7, 1, 2, 16), a(1, 7, 1, 2, 16), a(2, 9, 1, 1, 16)], [], 2)
    assert listed.outcome() == "list"
    assert listed.calls() == [(7, 1, 2, [0, 1]), (9, 1, 1, [2])]
    assert listed.pids() == [7, 9]
    assert shapes.InsideResult([a(0, 7, 1, 1, 16)], [], 2).outcome() == "one_each"


def test_the_drill_models_share_one_model_py():
    texts = {(ROOT / "model_repository" / m / "1" / "model.py").read_text() for m in shapes.DRILL_MODELS}
    assert len(texts) == 1


def test_stubs_are_read_from_the_process_table(tmp_path):
    proc, shm = tmp_path / "proc", tmp_path / "shm"
    shm.mkdir()
    (shm / "region_a").write_bytes(b"\0" * 1024)
    for pid, model, inst, region in (
        (11, "shapes_drill", "shapes_drill_0_0", "region_a"),
        (12, "hflip", "hflip_0_0", "r"),
    ):
        d = proc / str(pid)
        d.mkdir(parents=True)
        args = [
            f"/x/{shapes.STUB}",
            f"/repo/{model}/1/model.py",
            region,
            "1048576",
            "1048576",
            "1",
            "/x",
            "336",
            inst,
            "DEFAULT",
        ]
        (d / "cmdline").write_bytes("\0".join(args).encode() + b"\0")
    assert shapes.stubs("shapes_drill", proc=str(proc), shm=str(shm)) == [
        shapes.Stub(11, "shapes_drill_0_0", "region_a", 1024)
    ]


def test_stubs_of_one_server_only(tmp_path):
    """Two servers on one machine: a stub counts when the tritonserver it names descends from ``server_pid``."""
    proc, shm = tmp_path / "proc", tmp_path / "shm"
    shm.mkdir()
    tree = {20: 1, 21: 20, 30: 1, 31: 30}  # supervisor 20 -> tritonserver 21; another server 30 -> 31
    for pid, ppid in tree.items():
        (proc / str(pid)).mkdir(parents=True)
        (proc / str(pid) / "stat").write_text(f"{pid} (tritonserver x) S {ppid} 0 0")
    for pid, triton in ((41, 21), (42, 31)):
        d = proc / str(pid)
        d.mkdir()
        args = [
            f"/x/{shapes.STUB}",
            "/r/shapes_drill/1/model.py",
            f"reg{pid}",
            "1",
            "1",
            str(triton),
            "/x",
            "336",
        ]
        (d / "cmdline").write_bytes("\0".join([*args, f"shapes_drill_0_{pid}", "DEFAULT"]).encode())
    found = shapes.stubs("shapes_drill", 20, proc=str(proc), shm=str(shm))
    assert [s.pid for s in found] == [41]
    assert len(shapes.stubs("shapes_drill", proc=str(proc), shm=str(shm))) == 2


def test_one_run_at_a_time_on_one_servers_drill_models():
    """Triton's counts are per model: a second run while one holds the drill models is refused (code busy)."""
    from triton_kitchen.core.endpoint import Endpoint

    ep = Endpoint("h:1", "h:2")
    with shapes._one_run(ep):
        with pytest.raises(shapes.ShapesError) as err:
            with shapes._one_run(ep, wait_s=0.05):
                pass
        assert err.value.code == "busy"
        with shapes._one_run(Endpoint("h:3", "h:4"), wait_s=0.05):  # another server's drill models are free
            pass
    with shapes._one_run(ep, wait_s=0.05):  # released
        pass
