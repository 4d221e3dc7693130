"""The classifier ONNX built from the weights package: structure, batching, real photos, the safe reader."""

from __future__ import annotations

import io
import json
import os
import pickle
import struct
import subprocess
import sys
import types
from collections import OrderedDict
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from triton_kitchen.core.imaging import preprocess
from triton_kitchen.core.samples import sample_image
from triton_kitchen.models import build
from triton_kitchen.models.checkpoint import (
    CheckpointError,
    UnsafeCheckpointError,
    load_legacy_state_dict,
    read_legacy_state_dict,
)

ROOT = Path(__file__).resolve().parents[2]

# sample photo -> the ImageNet class ids its top-1 may be
PHOTOS = {
    "chelsea": {281, 282, 285},  # tabby / tiger cat / Egyptian cat
    "coffee": {967},  # espresso
    "camera": {872},  # tripod
    "stereo_motorcycle": {665},  # moped
}


def with_configs(repo: Path) -> Path:
    """An empty repository holding just the two ONNX models' config.pbtxt (ensure_onnx builds only those)."""
    for name in build.MODELS:
        (repo / name).mkdir(parents=True, exist_ok=True)
        (repo / name / "config.pbtxt").write_text(
            (ROOT / "model_repository" / name / "config.pbtxt").read_text()
        )
    return repo


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    repo = with_configs(tmp_path_factory.mktemp("model_repository"))
    info = build.ensure_onnx(repo)
    return repo, info


def session(path: Path) -> ort.InferenceSession:
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 2
    return ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])


@pytest.fixture(scope="module")
def full(built):
    return session(Path(built[1]["models"]["classifier"]["path"]))


@pytest.fixture(scope="module")
def coarse(built):
    return session(Path(built[1]["models"]["classifier_coarse"]["path"]))


@pytest.fixture(scope="module")
def photos():
    return {name: preprocess(sample_image(name)) for name in PHOTOS}


def softmax(z):
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


# --- the build -------------------------------------------------------------------------------


def test_build_writes_both_models_with_stamps(built):
    repo, info = built
    for name in ("classifier", "classifier_coarse"):
        m = info["models"][name]
        assert m["built"] is True
        assert Path(m["path"]) == repo / name / "1" / "model.onnx"
        stamp = json.loads((repo / name / "1" / "model.onnx.stamp").read_text())
        assert stamp["builder_version"] == build.BUILDER_VERSION
        assert stamp["onnx_bytes"] == m["bytes"] == os.path.getsize(m["path"])
        assert 15e6 < m["bytes"] < 25e6
    # nothing but the model and its stamp: no config.pbtxt, no lock or temp files
    assert sorted(p.name for p in (repo / "classifier" / "1").iterdir()) == ["model.onnx", "model.onnx.stamp"]


def test_build_is_skipped_when_fresh_and_redone_when_stale(tmp_path):
    with_configs(tmp_path)
    first = build.ensure_onnx(tmp_path)
    assert all(m["built"] for m in first["models"].values())
    second = build.ensure_onnx(tmp_path)
    assert not any(m["built"] for m in second["models"].values())
    assert second["load_s"] == 0.0
    stamp = tmp_path / "classifier" / "1" / "model.onnx.stamp"
    stamp.write_text(stamp.read_text().replace(build.BUILDER_VERSION, "older-builder"))
    third = build.ensure_onnx(tmp_path)
    assert third["models"]["classifier"]["built"] and not third["models"]["classifier_coarse"]["built"]
    (tmp_path / "classifier_coarse" / "1" / "model.onnx").write_bytes(b"half a file")
    fourth = build.ensure_onnx(tmp_path)
    assert fourth["models"]["classifier_coarse"]["built"] and not fourth["models"]["classifier"]["built"]


def test_project_root_is_accepted(tmp_path):
    with_configs(tmp_path / "model_repository")
    info = build.ensure_onnx(tmp_path)
    assert Path(info["repository"]) == tmp_path / "model_repository"
    assert (tmp_path / "model_repository" / "classifier_coarse" / "1" / "model.onnx").is_file()


def test_two_processes_building_at_once(tmp_path):
    with_configs(tmp_path)
    code = (
        "import json, sys; from triton_kitchen.models.build import ensure_onnx; "
        "print(json.dumps(ensure_onnx(sys.argv[1])))"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [
        subprocess.Popen([sys.executable, "-c", code, str(tmp_path)], stdout=subprocess.PIPE, env=env)
        for _ in range(2)
    ]
    results = [json.loads(p.communicate(timeout=120)[0]) for p in procs]
    assert all(p.returncode == 0 for p in procs)
    for name in ("classifier", "classifier_coarse"):
        assert sum(r["models"][name]["built"] for r in results) == 1  # the lock made one build, one wait
        onnx.checker.check_model(str(tmp_path / name / "1" / "model.onnx"))
    assert not list(tmp_path.rglob(".tmp-*"))


def test_labels_file_is_the_committed_data(tmp_path):
    out = build.write_labels(tmp_path / "labels.txt")
    lines = out.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 1000
    assert lines[281] == "tabby, tabby cat" and lines[967] == "espresso" and lines[665] == "moped"
    assert (ROOT / "model_repository" / "classifier" / "labels.txt").read_text(
        encoding="utf-8"
    ) == out.read_text(encoding="utf-8")


# --- the graph -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["classifier", "classifier_coarse"])
def test_graph_contract(built, name):
    model = onnx.load(built[1]["models"][name]["path"])
    onnx.checker.check_model(model)
    assert model.ir_version == 8
    assert [(o.domain, o.version) for o in model.opset_import] == [("", 17)]
    (inp,), (out,) = model.graph.input, model.graph.output
    assert inp.name == "input" and out.name == "logits"
    assert inp.type.tensor_type.elem_type == onnx.TensorProto.FLOAT == out.type.tensor_type.elem_type
    in_dims = [d.dim_param or d.dim_value for d in inp.type.tensor_type.shape.dim]
    out_dims = [d.dim_param or d.dim_value for d in out.type.tensor_type.shape.dim]
    assert in_dims == ["N", 3, "H", "W"] and out_dims == ["N", 1000]
    ops = {n.op_type for n in model.graph.node}
    assert "BatchNormalization" not in ops  # folded
    assert ("Resize" in ops) == (name == "classifier_coarse")
    convs = [n for n in model.graph.node if n.op_type == "Conv"]
    assert len(convs) == 1 + 16 * 3 - 1 + 1  # stem, blocks (block 0 has no expand conv), head
    assert "(x - 127) / 128" in {p.key: p.value for p in model.metadata_props}["input_normalization"]


@pytest.mark.parametrize("n", [1, 3])
def test_output_shape(full, coarse, n):
    x = np.random.default_rng(n).uniform(-1, 1, (n, 3, 224, 224)).astype(np.float32)
    for sess in (full, coarse):
        (y,) = sess.run(None, {"input": x})
        assert y.shape == (n, 1000) and y.dtype == np.float32 and np.isfinite(y).all()


def test_other_sizes_divisible_by_32(full):
    x = np.random.default_rng(0).uniform(-1, 1, (2, 3, 256, 320)).astype(np.float32)
    assert full.run(None, {"input": x})[0].shape == (2, 1000)


def test_batch_of_two_equals_two_singles(full, coarse, photos):
    x = np.stack([photos["chelsea"], photos["coffee"]])
    for sess in (full, coarse):
        (both,) = sess.run(None, {"input": x})
        singles = np.concatenate([sess.run(None, {"input": x[i : i + 1]})[0] for i in range(2)])
        np.testing.assert_allclose(both, singles, atol=1e-4)


# --- real photos -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(PHOTOS))
def test_full_model_top1(full, photos, name):
    p = softmax(full.run(None, {"input": photos[name][None]})[0][0])
    top = int(p.argmax())
    assert top in PHOTOS[name], f"{name}: top-1 {top} ({p[top]:.3f})"
    assert p[top] > 0.3


@pytest.mark.parametrize("name", sorted(PHOTOS))
def test_coarse_model_top1(coarse, photos, name):
    p = softmax(coarse.run(None, {"input": photos[name][None]})[0][0])
    top = int(p.argmax())
    assert top in PHOTOS[name], f"{name}: coarse top-1 {top} ({p[top]:.3f})"


def test_batch_of_all_photos(full, photos):
    x = np.stack([photos[n] for n in sorted(PHOTOS)])
    top = full.run(None, {"input": x})[0].argmax(axis=1)
    assert all(int(t) in PHOTOS[n] for t, n in zip(top, sorted(PHOTOS), strict=True))


# --- the checkpoint reader -------------------------------------------------------------------


def test_real_checkpoint_has_strided_tensors():
    sd = load_legacy_state_dict(build.weights_path())
    assert len([k for k in sd if k.endswith("_project_conv.weight")]) == 16
    w = sd["_conv_stem.weight"]
    assert w.shape == (32, 3, 3, 3) and w.dtype == np.float32 and w.flags.c_contiguous
    assert sd["_fc.weight"].shape == (1000, 1280)
    assert sd["_bn0.num_batches_tracked"].dtype == np.int64


class _Evil:
    def __reduce__(self):
        return (os.system, ("echo pwned > pwned.txt",))


def _legacy_file(obj, persistent_id=None, keys=(), storages=b"") -> bytes:
    buf = io.BytesIO()
    for header in (0x1950A86A20F9469CFC6C, 1001, {"protocol_version": 1001, "little_endian": True}):
        pickle.dump(header, buf, protocol=2)
    p = pickle.Pickler(buf, protocol=2)
    if persistent_id:
        p.persistent_id = persistent_id
    p.dump(obj)
    pickle.dump(list(keys), buf, protocol=2)
    return buf.getvalue() + storages


@pytest.mark.parametrize("where", ["state_dict", "magic"])
def test_reader_refuses_a_malicious_pickle(tmp_path, monkeypatch, where):
    monkeypatch.chdir(tmp_path)
    raw = _legacy_file({"w": _Evil()}) if where == "state_dict" else pickle.dumps(_Evil(), protocol=2)
    with pytest.raises(UnsafeCheckpointError, match=r"posix\.system|os\.system"):
        read_legacy_state_dict(io.BytesIO(raw))
    assert not (tmp_path / "pwned.txt").exists()
    assert issubclass(UnsafeCheckpointError, CheckpointError)


def test_reader_refuses_other_files(tmp_path):
    for raw in (b"", b"PK\x03\x04 a zip checkpoint", pickle.dumps(42, protocol=2)):
        with pytest.raises(CheckpointError):
            read_legacy_state_dict(io.BytesIO(raw))


def _fake_torch(monkeypatch):
    """Just enough of a `torch` module for pickle to write the legacy format's globals."""
    torch = types.ModuleType("torch")
    utils = types.ModuleType("torch._utils")

    class FloatStorage:
        pass

    class LongStorage:
        pass

    def _rebuild_tensor_v2(*args):
        raise AssertionError("never called while writing")

    for obj, module in (
        (FloatStorage, "torch"),
        (LongStorage, "torch"),
        (_rebuild_tensor_v2, "torch._utils"),
    ):
        obj.__module__, obj.__qualname__ = module, obj.__name__
    torch.FloatStorage, torch.LongStorage, torch._utils = FloatStorage, LongStorage, utils
    utils._rebuild_tensor_v2 = _rebuild_tensor_v2
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.setitem(sys.modules, "torch._utils", utils)
    return torch, utils


class _Tensor:
    def __init__(self, utils, storage, offset, size, stride):
        self.args = (utils._rebuild_tensor_v2, (storage, offset, size, stride, False, OrderedDict()))

    def __reduce__(self):
        return self.args


def test_reader_applies_strides_and_offsets(monkeypatch):
    torch, utils = _fake_torch(monkeypatch)
    base = np.arange(40, dtype=np.float32)
    storages = {"s0": ("storage", torch.FloatStorage, "s0", "cpu", 40, None)}
    longs = np.array([7], dtype=np.int64)
    storages["s1"] = ("storage", torch.LongStorage, "s1", "cpu", 1, None)

    class Ref:
        def __init__(self, key):
            self.key = key

    sd = OrderedDict(
        # a transposed 4x3 view starting at element 5: strides (1, 4) elements
        transposed=_Tensor(utils, Ref("s0"), 5, (4, 3), (1, 4)),
        # a 2x2 window with a row stride of 10, from element 12
        window=_Tensor(utils, Ref("s0"), 12, (2, 2), (10, 1)),
        scalar=_Tensor(utils, Ref("s1"), 0, (), ()),
    )
    raw = _legacy_file(
        sd,
        persistent_id=lambda o: storages[o.key] if isinstance(o, Ref) else None,
        keys=["s0", "s1"],
        storages=struct.pack("<q", 40) + base.tobytes() + struct.pack("<q", 1) + longs.tobytes(),
    )
    monkeypatch.delitem(sys.modules, "torch")
    monkeypatch.delitem(sys.modules, "torch._utils")
    out = read_legacy_state_dict(io.BytesIO(raw))
    expect_t = np.lib.stride_tricks.as_strided(base[5:], (4, 3), (4, 16))
    np.testing.assert_array_equal(out["transposed"], expect_t)
    assert out["transposed"][0].tolist() == [5.0, 9.0, 13.0]
    assert out["window"].tolist() == [[12.0, 13.0], [22.0, 23.0]]
    assert out["scalar"].shape == () and int(out["scalar"]) == 7
    assert all(a.flags.c_contiguous and a.flags.owndata for a in out.values())

    with pytest.raises(CheckpointError, match="truncated"):
        read_legacy_state_dict(io.BytesIO(raw[:-20]))


def test_models_missing_from_the_repository_are_not_built(tmp_path):
    (tmp_path / "hflip").mkdir()
    info = build.ensure_onnx(tmp_path)
    assert info["models"] == {} and not (tmp_path / "classifier").exists()
