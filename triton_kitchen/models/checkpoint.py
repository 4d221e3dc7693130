"""Safe reader for PyTorch's legacy (pre-1.6, non-zip) ``.pth`` checkpoints, without PyTorch.

The legacy format written by ``torch.save(..., _use_new_zipfile_serialization=False)`` is:

1. a pickle holding the magic number ``0x1950a86a20f9469cfc6c``;
2. a pickle holding the protocol version (1001);
3. a pickle holding ``sys_info`` (``little_endian``, ``type_sizes``, ...);
4. the object itself (here a state_dict: an ``OrderedDict`` of tensors). Tensors are rebuilt
   by ``torch._utils._rebuild_tensor_v2(storage, offset, size, stride, ...)`` and storages are
   *persistent ids* ``('storage', <torch.FloatStorage>, key, location, numel, view_metadata)``;
5. a pickle holding the list of storage keys;
6. the raw storages, in the order of that list: per storage an int64 element count, then the
   element bytes.

``pickle`` can run arbitrary code, so the unpickler here only resolves a short allow-list of
globals (``collections.OrderedDict``, ``torch._utils._rebuild_tensor_v2`` /
``_rebuild_tensor`` and the ``torch.*Storage`` type names) to harmless stand-ins, and refuses
everything else with :class:`UnsafeCheckpointError`.
"""

from __future__ import annotations

import collections
import pickle
import struct
from dataclasses import dataclass
from os import PathLike
from typing import Any, BinaryIO

import numpy as np

__all__ = ["CheckpointError", "UnsafeCheckpointError", "load_legacy_state_dict", "read_legacy_state_dict"]

MAGIC_NUMBER = 0x1950A86A20F9469CFC6C
PROTOCOL_VERSION = 1001

# torch storage type name -> numpy dtype (without byte order)
_STORAGE_DTYPES = {
    "FloatStorage": "f4",
    "DoubleStorage": "f8",
    "HalfStorage": "f2",
    "BFloat16Storage": "u2",  # widened to float32 after reading
    "LongStorage": "i8",
    "IntStorage": "i4",
    "ShortStorage": "i2",
    "CharStorage": "i1",
    "ByteStorage": "u1",
    "BoolStorage": "?",
}


class CheckpointError(ValueError):
    """The file is not a legacy torch checkpoint this reader understands."""


class UnsafeCheckpointError(CheckpointError):
    """The pickle asks for a global outside the allow-list (it could run code)."""


@dataclass(frozen=True)
class _StorageType:
    name: str


@dataclass
class _StorageRef:
    key: str
    storage_type: _StorageType
    numel: int
    view: tuple[str, int, int] | None  # (root key, offset, size) for old storage views


@dataclass
class _TensorRef:
    storage: _StorageRef
    offset: int
    size: tuple[int, ...]
    stride: tuple[int, ...]


def _rebuild_tensor_v2(
    storage, storage_offset, size, stride, requires_grad=False, backward_hooks=None, *rest
):
    return _rebuild_tensor(storage, storage_offset, size, stride)


def _rebuild_tensor(storage, storage_offset, size, stride):
    if not isinstance(storage, _StorageRef):
        raise CheckpointError(f"tensor rebuilt from {type(storage).__name__}, expected a storage")
    return _TensorRef(
        storage, int(storage_offset), tuple(int(s) for s in size), tuple(int(s) for s in stride)
    )


class _RestrictedUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if module == "collections" and name == "OrderedDict":
            return collections.OrderedDict
        if module == "torch._utils" and name == "_rebuild_tensor_v2":
            return _rebuild_tensor_v2
        if module == "torch._utils" and name == "_rebuild_tensor":
            return _rebuild_tensor
        if module == "torch" and name in _STORAGE_DTYPES:
            return _StorageType(name)
        raise UnsafeCheckpointError(
            f"refusing to load global {module}.{name}: only OrderedDict, "
            "torch._utils._rebuild_tensor_v2 and torch.*Storage are allowed"
        )

    def persistent_load(self, pid: Any) -> _StorageRef:
        if not (isinstance(pid, tuple) and len(pid) == 6 and pid[0] == "storage"):
            raise CheckpointError(f"unexpected persistent id {pid!r:.80}")
        _, storage_type, key, _location, numel, view = pid
        if not isinstance(storage_type, _StorageType):
            raise CheckpointError(f"persistent id names {storage_type!r:.80}, not a storage type")
        if view is not None:
            view = (str(view[0]), int(view[1]), int(view[2]))
        return _StorageRef(str(key), storage_type, int(numel), view)


def _unpickle(f: BinaryIO) -> Any:
    try:
        return _RestrictedUnpickler(f).load()
    except CheckpointError:
        raise
    except Exception as e:  # EOFError, UnpicklingError, ...
        raise CheckpointError(f"not a legacy torch checkpoint: {type(e).__name__}: {e}") from e


def read_legacy_state_dict(f: BinaryIO) -> dict[str, np.ndarray]:
    """Read a legacy torch checkpoint from a binary stream; return ``{name: np.ndarray}``."""
    if _unpickle(f) != MAGIC_NUMBER:
        raise CheckpointError(
            "bad magic number: not a legacy torch checkpoint (zip checkpoints are not supported)"
        )
    if _unpickle(f) != PROTOCOL_VERSION:
        raise CheckpointError("unsupported legacy protocol version")
    sys_info = _unpickle(f)
    order = "<" if not isinstance(sys_info, dict) or sys_info.get("little_endian", True) else ">"
    obj = _unpickle(f)
    keys = _unpickle(f)
    if not isinstance(keys, list):
        raise CheckpointError("storage key list missing")

    # Raw storages, in the order of `keys`: int64 element count, then the bytes.
    storages: dict[str, np.ndarray] = {}
    refs = _collect_storage_types(obj)
    for key in keys:
        key = str(key)
        if key not in refs:
            raise CheckpointError(f"storage {key} is not used by any tensor")
        dtype = np.dtype(order + _STORAGE_DTYPES[refs[key].name])
        header = f.read(8)
        if len(header) != 8:
            raise CheckpointError(f"truncated checkpoint: storage {key} header missing")
        (numel,) = struct.unpack(order + "q", header)
        nbytes = numel * dtype.itemsize
        data = f.read(nbytes)
        if numel < 0 or len(data) != nbytes:
            raise CheckpointError(f"truncated checkpoint: storage {key} wants {nbytes} bytes")
        arr = np.frombuffer(data, dtype=dtype)
        if refs[key].name == "BFloat16Storage":
            arr = (arr.astype(np.uint32) << 16).view(np.float32)
        storages[key] = arr.astype(arr.dtype.newbyteorder("="), copy=False)

    if not isinstance(obj, dict):
        raise CheckpointError(f"checkpoint holds {type(obj).__name__}, expected a state_dict")
    return {str(name): _materialize(t, storages) for name, t in obj.items()}


def load_legacy_state_dict(path: str | PathLike[str]) -> dict[str, np.ndarray]:
    """Read a legacy torch ``.pth`` file; return ``{name: np.ndarray}`` (C-contiguous copies)."""
    with open(path, "rb", buffering=1 << 20) as f:
        return read_legacy_state_dict(f)


def _collect_storage_types(obj: Any) -> dict[str, _StorageType]:
    out: dict[str, _StorageType] = {}
    if isinstance(obj, dict):
        for t in obj.values():
            if isinstance(t, _TensorRef):
                root = t.storage.view[0] if t.storage.view else t.storage.key
                out[root] = t.storage.storage_type
    return out


def _materialize(t: Any, storages: dict[str, np.ndarray]) -> np.ndarray:
    if not isinstance(t, _TensorRef):
        raise CheckpointError(f"state_dict value of type {type(t).__name__} is not a tensor")
    ref = t.storage
    if ref.view is not None:
        root, view_offset, view_size = ref.view
        flat = storages[root][view_offset : view_offset + view_size]
    else:
        flat = storages[ref.key]
    if len(t.size) != len(t.stride):
        raise CheckpointError("tensor size and stride disagree")
    if any(s <= 0 for s in t.size):
        return np.zeros(t.size, dtype=flat.dtype)
    # Highest element index touched must lie inside the storage.
    last = t.offset + sum((n - 1) * s for n, s in zip(t.size, t.stride, strict=True))
    if t.offset < 0 or any(s < 0 for s in t.stride) or last >= flat.size:
        raise CheckpointError("tensor reaches outside its storage")
    item = flat.itemsize
    view = np.lib.stride_tricks.as_strided(
        flat[t.offset :], shape=t.size, strides=tuple(s * item for s in t.stride), writeable=False
    )
    return np.array(view, copy=True, order="C")
