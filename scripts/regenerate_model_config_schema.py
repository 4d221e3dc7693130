"""Regenerate ``triton_kitchen/core/model_config_r2607.py`` from a ``model_config.proto``: a development tool
(grpcio-tools' protoc, in a virtual environment of its own: see ``triton_kitchen/core/model_config_schema.py``),
kept out of the library so that the app never imports grpcio-tools."""

from __future__ import annotations

import base64
import hashlib
import sys
import tempfile
import textwrap
from pathlib import Path

from google.protobuf import descriptor_pb2


def _generate(proto: Path) -> str:
    """The source of ``model_config_r2607.py`` from a ``model_config.proto`` (runs grpcio-tools' protoc)."""
    from grpc_tools import protoc  # only here: a development tool, not a dependency

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "model_config.desc"
        (Path(tmp) / "model_config.proto").write_bytes(proto.read_bytes())
        rc = protoc.main(["protoc", f"-I{tmp}", f"--descriptor_set_out={out}", "model_config.proto"])
        if rc != 0:
            raise SystemExit(f"protoc failed ({rc}) on {proto}")
        fds = descriptor_pb2.FileDescriptorSet()
        fds.ParseFromString(out.read_bytes())
    data = fds.file[0].SerializeToString(deterministic=True)
    text = proto.read_text(encoding="utf-8")
    header = []
    for line in text.splitlines():
        if not line.startswith("//"):
            break
        header.append(("#" + line[2:]).rstrip())  # the license header, word for word
    b64 = base64.b64encode(data).decode("ascii")
    body = "\n".join(f'    "{chunk}"' for chunk in textwrap.wrap(b64, 100))
    return (
        "\n".join(header)
        + "\n\n"
        + '"""``protobuf/model_config.proto`` of triton-inference-server/common at branch r26.07 (commit ecb874c3),\n'
        + "the schema Triton 2.72 parses, compiled to a serialized ``FileDescriptorProto`` (base64). Generated:\n"
        + "do not edit. Regenerate as ``triton_kitchen/core/model_config_schema.py`` says (grpcio-tools' protoc)::\n\n"
        + "    python scripts/regenerate_model_config_schema.py model_config.proto > \\\n"
        + "        triton_kitchen/core/model_config_r2607.py\n\n"
        + "The license above is the proto file's own header.\n"
        + '"""\n\n'
        + "# the sha256 of the .proto file it was compiled from\n"
        + f'PROTO_SHA256 = "{hashlib.sha256(proto.read_bytes()).hexdigest()}"\n'
        + "SERIALIZED = (\n"
        + body
        + "\n)\n"
    )


if __name__ == "__main__":  # pragma: no cover - a development tool
    if len(sys.argv) != 2:
        raise SystemExit("usage: python scripts/regenerate_model_config_schema.py PATH/TO/model_config.proto")
    sys.stdout.write(_generate(Path(sys.argv[1])))
