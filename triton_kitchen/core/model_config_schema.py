"""``inference.ModelConfig`` as each Triton version parses it.

Triton 2.51 parses ``model_config.proto`` of triton-inference-server/common at r24.10; tritonclient 2.51's
``model_config_pb2`` is that schema.  Later versions parse later schemas, which add fields: a config that uses
one is refused by an older server with protobuf's own "has no field named" error.  The newest schema this
project knows (common r26.07, what Triton 2.72 parses) ships compiled in :mod:`model_config_r2607`;
the schema of an older version is that one less the fields :data:`FIELDS_SINCE` dates after it.

The classes are built in a private ``DescriptorPool`` from the compiled descriptor, not imported from a
generated ``_pb2`` module, for two reasons: tritonclient's ``model_config_pb2`` already holds
``inference.ModelConfig`` in protobuf's default pool (a second ``model_config.proto`` there is a duplicate
symbol), and a descriptor is plain data, so no protoc-generated code has to match the installed protobuf
runtime.  Triton 2.51 itself gets tritonclient's own class: :func:`model_config_class` of 2.51 is
``model_config_pb2.ModelConfig`` (``tests/unit/test_check_versions.py`` checks that the derived 2.51 schema
equals it field for field).

    cls = model_config_class(TritonVersion(2, 72))
    text_format.Parse('model_metrics { }', cls())

To regenerate :mod:`model_config_r2607` from a proto file: grpcio-tools' protoc, in a virtual environment of its
own (it wants a newer protobuf than tritonclient 2.51 pins), ahead of the project's on the path::

    python3 -m venv /tmp/gt && /tmp/gt/bin/pip install grpcio-tools
    PYTHONPATH=.:$(/tmp/gt/bin/python -c 'import site; print(site.getsitepackages()[0])') \\
        python scripts/regenerate_model_config_schema.py PATH/TO/model_config.proto > \\
        triton_kitchen/core/model_config_r2607.py
"""

from __future__ import annotations

import base64
import functools

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from tritonclient.grpc import model_config_pb2

from triton_kitchen.core.model_config_r2607 import SERIALIZED
from triton_kitchen.core.versions import EMBEDDED, TritonVersion

__all__ = ["FIELDS_SINCE", "model_config_class", "newer_field_since"]

# (message, field) -> the first Triton version whose schema has it, with where that is seen: the common
# repository's protobuf/model_config.proto at the release branch (git show rYY.MM:protobuf/model_config.proto)
# and the commit that added it.  These are every field of r26.07 that r24.10 lacks (a diff of the two files).
FIELDS_SINCE: dict[tuple[str, str], tuple[TritonVersion, str]] = {
    ("inference.ModelConfig", "model_metrics"): (
        TritonVersion(2, 52),
        "common r24.11 protobuf/model_config.proto (commit 3948525, 'Per-model metric customization (#126)')",
    ),
    ("inference.ModelEnsembling", "max_inflight_requests"): (
        TritonVersion(2, 63),
        "common r25.11 protobuf/model_config.proto (commit 6a318ca, 'Add support for max_inflight_requests', #141)",
    ),
}


def newer_field_since(message: str, field: str) -> TritonVersion | None:
    """The first version that parses ``message.field``, when it is one the newest schema added."""
    found = FIELDS_SINCE.get((message, field))
    return found[0] if found else None


def _newest_file() -> descriptor_pb2.FileDescriptorProto:
    fdp = descriptor_pb2.FileDescriptorProto()
    fdp.ParseFromString(base64.b64decode(SERIALIZED))
    return fdp


def _find_message(fdp: descriptor_pb2.FileDescriptorProto, full_name: str) -> descriptor_pb2.DescriptorProto:
    parts = full_name.removeprefix(f"{fdp.package}.").split(".")
    messages = fdp.message_type
    for part in parts:
        msg = next(m for m in messages if m.name == part)
        messages = msg.nested_type
    return msg


@functools.cache
def _class_for(version: TritonVersion):
    fdp = _newest_file()
    for (message, field), (since, _source) in FIELDS_SINCE.items():
        if version < since:
            msg = _find_message(fdp, message)
            kept = [f for f in msg.field if f.name != field]
            del msg.field[:]
            msg.field.extend(kept)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("inference.ModelConfig"))


def derived_class(version: TritonVersion):
    """The ModelConfig class built from the newest schema for ``version`` (2.51's too: what the tests compare)."""
    return _class_for(version)


def model_config_class(version: TritonVersion | None = None):
    """The ``ModelConfig`` message class that Triton ``version`` parses (None: the embedded 2.51)."""
    if version is None or version <= EMBEDDED:
        return model_config_pb2.ModelConfig
    # one class per distinct schema, not per version: 2.52 .. 2.62 share theirs
    key = max((since for since, _ in FIELDS_SINCE.values() if since <= version), default=EMBEDDED)
    return _class_for(key)
