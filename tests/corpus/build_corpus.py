"""Write the ensemble corpus: small model repositories, valid and broken.

Each case is a directory ``tests/corpus/<case>/`` that is itself a Triton model
repository, plus ``case.json``:

    {"load": "<model to load>", "about": "<what it shows>",
     "triton_loads": true|false, "triton_message": "<Triton's load error or null>"}

``triton_loads`` / ``triton_message`` are what the real server (2.51) said when the case
was loaded into it; ``tests/live/test_corpus_agreement_live.py`` re-checks them live and fails on any
disagreement with ``check``.  Run this script to regenerate the repositories (it keeps the
recorded verdicts of cases that already exist):

    python tests/corpus/build_corpus.py

Step models use the Python backend with one generic ``model.py`` (zeros of the configured
output shapes), the only backend the embedded server ships.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

HERE = Path(__file__).resolve().parent

MODEL_PY = '''\
"""Generic step model for the corpus: answers zeros of each configured output shape."""
import json

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        cfg = json.loads(args["model_config"])
        self.batching = cfg.get("max_batch_size", 0) > 0
        self.outputs = [
            (o["name"], [1 if d < 0 else d for d in o["dims"]], pb_utils.triton_string_to_numpy(o["data_type"]))
            for o in cfg.get("output", [])
        ]

    def execute(self, requests):
        responses = []
        for request in requests:
            tensors = []
            for name, dims, dtype in self.outputs:
                shape = ([1] if self.batching else []) + dims
                tensors.append(pb_utils.Tensor(name, np.zeros(shape, dtype=dtype)))
            responses.append(pb_utils.InferenceResponse(output_tensors=tensors))
        return responses
'''

DECOUPLED_MODEL_PY = '''\
"""Generic decoupled step model for the corpus: streams one response of zeros, then the final flag."""
import json

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        cfg = json.loads(args["model_config"])
        self.batching = cfg.get("max_batch_size", 0) > 0
        self.outputs = [
            (o["name"], [1 if d < 0 else d for d in o["dims"]], pb_utils.triton_string_to_numpy(o["data_type"]))
            for o in cfg.get("output", [])
        ]

    def execute(self, requests):
        for request in requests:
            sender = request.get_response_sender()
            tensors = []
            for name, dims, dtype in self.outputs:
                shape = ([1] if self.batching else []) + dims
                tensors.append(pb_utils.Tensor(name, np.zeros(shape, dtype=dtype)))
            sender.send(pb_utils.InferenceResponse(output_tensors=tensors))
            sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        return None
'''


# ---------------------------------------------------------------------------------------------
# small writers for config.pbtxt text


def _dims(dims):
    return "[ " + ", ".join(str(d) for d in dims) + " ]"


def _io(kind, tensors):
    if not tensors:
        return ""
    parts = []
    for t in tensors:
        name, dtype, dims = t[0], t[1], t[2]
        extra = t[3] if len(t) > 3 else ""
        body = f'    name: "{name}"\n    data_type: {dtype}\n    dims: {_dims(dims)}\n'
        if extra:
            body += f"    {extra}\n"
        parts.append("  {\n" + body + "  }")
    return f"{kind} [\n" + ",\n".join(parts) + "\n]\n"


def step_model(name, inputs, outputs, mbs=0, extra="", name_line=True):
    head = f'name: "{name}"\n' if name_line else ""
    text = (
        head + f'backend: "python"\nmax_batch_size: {mbs}\n' + _io("input", inputs) + _io("output", outputs)
    )
    return text + extra


def ensemble(name, inputs, outputs, steps, mbs=0, extra="", head_extra=""):
    lines = [f'name: "{name}"', 'platform: "ensemble"']
    if head_extra:
        lines.append(head_extra.rstrip("\n"))
    lines.append(f"max_batch_size: {mbs}")
    text = "\n".join(lines) + "\n" + _io("input", inputs) + _io("output", outputs)
    text += "ensemble_scheduling {\n  step [\n"
    parts = []
    for s in steps:
        model, version, imap, omap = s[0], s[1], s[2], s[3]
        body = f'      model_name: "{model}"\n'
        if version is not None:
            body += f"      model_version: {version}\n"
        for k, v in imap:
            body += f'      input_map {{ key: "{k}" value: "{v}" }}\n'
        for k, v in omap:
            body += f'      output_map {{ key: "{k}" value: "{v}" }}\n'
        parts.append("    {\n" + body + "    }")
    text += ",\n".join(parts) + "\n  ]\n}\n"
    return text + extra


F = "TYPE_FP32"
I32 = "TYPE_INT32"

# frequently used step models: name -> (inputs, outputs)


def unary(name, mbs=8, dtype=F, dims=(4,), out_dtype=None, out_dims=None, inp="INPUT", out="OUTPUT", **kw):
    return step_model(
        name, [(inp, dtype, list(dims))], [(out, out_dtype or dtype, list(out_dims or dims))], mbs, **kw
    )


def binary(name, mbs=8, dtype=F, dims=(4,)):
    return step_model(
        name, [("A", dtype, list(dims)), ("B", dtype, list(dims))], [("SUM", dtype, list(dims))], mbs
    )


IO4 = [("IN", F, [4])]
OUT4 = [("OUT", F, [4])]


def chain(*models, ens_in="IN", ens_out="OUT", version=-1):
    """Steps model1 -> model2 -> ... on unary models with INPUT/OUTPUT."""
    steps = []
    prev = ens_in
    for i, m in enumerate(models):
        nxt = ens_out if i == len(models) - 1 else f"t{i}"
        steps.append((m, version, [("INPUT", prev)], [("OUTPUT", nxt)]))
        prev = nxt
    return steps


CASES: dict[str, dict] = {}


def case(name, load, about, models, versions=None, empty_versions=None, decoupled=()):
    """models: dir name -> config text; versions: dir name -> list of version dirs (default [1])."""
    CASES[name] = {
        "load": load,
        "about": about,
        "models": models,
        "versions": versions or {},
        "decoupled": set(decoupled),
        "empty_versions": empty_versions or {},
    }


# ---------------------------------------------------------------------------------------------
# valid cases

case(
    "valid_chain",
    "ens",
    "two steps in a chain, batching everywhere",
    {
        "pre": unary("pre"),
        "cls": unary("cls"),
        "ens": ensemble("ens", IO4, OUT4, chain("pre", "cls"), mbs=8),
    },
)
case(
    "valid_single_step",
    "ens",
    "one step, the smallest ensemble",
    {
        "m": unary("m"),
        "ens": ensemble("ens", IO4, OUT4, chain("m"), mbs=8),
    },
)
case(
    "valid_diamond",
    "ens",
    "diamond: a -> (b, c) -> d",
    {
        "a": unary("a"),
        "b": unary("b"),
        "c": unary("c"),
        "d": binary("d"),
        "ens": ensemble(
            "ens",
            IO4,
            OUT4,
            [
                ("a", -1, [("INPUT", "IN")], [("OUTPUT", "x")]),
                ("b", -1, [("INPUT", "x")], [("OUTPUT", "y")]),
                ("c", -1, [("INPUT", "x")], [("OUTPUT", "z")]),
                ("d", -1, [("A", "y"), ("B", "z")], [("SUM", "OUT")]),
            ],
            mbs=8,
        ),
    },
)
case(
    "valid_fan_out_fan_in",
    "ens",
    "one input read by three branches, merged two by two",
    {
        "b1": unary("b1"),
        "b2": unary("b2"),
        "b3": unary("b3"),
        "j": binary("j"),
        "ens": ensemble(
            "ens",
            IO4,
            OUT4,
            [
                ("b1", -1, [("INPUT", "IN")], [("OUTPUT", "y1")]),
                ("b2", -1, [("INPUT", "IN")], [("OUTPUT", "y2")]),
                ("b3", -1, [("INPUT", "IN")], [("OUTPUT", "y3")]),
                ("j", -1, [("A", "y1"), ("B", "y2")], [("SUM", "s12")]),
                ("j", -1, [("A", "s12"), ("B", "y3")], [("SUM", "OUT")]),
            ],
            mbs=8,
        ),
    },
)
case(
    "valid_steps_out_of_order",
    "ens",
    "steps listed consumer first: Triton orders by data, not by list",
    {
        "pre": unary("pre"),
        "cls": unary("cls"),
        "post": unary("post"),
        "ens": ensemble(
            "ens",
            IO4,
            OUT4,
            [
                ("post", -1, [("INPUT", "t1")], [("OUTPUT", "OUT")]),
                ("cls", -1, [("INPUT", "t0")], [("OUTPUT", "t1")]),
                ("pre", -1, [("INPUT", "IN")], [("OUTPUT", "t0")]),
            ],
            mbs=8,
        ),
    },
)
case(
    "valid_two_outputs",
    "ens",
    "a step with two outputs, both ensemble outputs",
    {
        "split": step_model("split", [("INPUT", F, [4])], [("LEFT", F, [4]), ("RIGHT", F, [2])], 8),
        "ens": ensemble(
            "ens",
            IO4,
            [("L", F, [4]), ("R", F, [2])],
            [
                ("split", -1, [("INPUT", "IN")], [("LEFT", "L"), ("RIGHT", "R")]),
            ],
            mbs=8,
        ),
    },
)
case(
    "valid_version_pinned",
    "ens",
    "step pinned to version 2 of a model that has versions 1 and 2",
    {
        "m": unary("m", extra="version_policy: { all { } }\n"),
        "ens": ensemble("ens", IO4, OUT4, chain("m", version=2), mbs=8),
    },
    versions={"m": [1, 2]},
)
case(
    "valid_nested",
    "outer",
    "an ensemble used as a step of another ensemble",
    {
        "a": unary("a"),
        "b": unary("b"),
        "inner": ensemble(
            "inner",
            [("INPUT", F, [4])],
            [("OUTPUT", F, [4])],
            chain("a", "b", ens_in="INPUT", ens_out="OUTPUT"),
            mbs=8,
        ),
        "outer": ensemble("outer", IO4, OUT4, chain("inner", "a"), mbs=8),
    },
)
case(
    "valid_non_batching_step",
    "ens",
    "a non-batching step whose dims [-1, 4] match the batching ensemble's full shape [-1, 4]",
    {
        "nb": unary("nb", mbs=0, dims=(-1, 4)),
        "ens": ensemble("ens", IO4, OUT4, chain("nb"), mbs=8),
    },
)
case(
    "valid_wildcard_dims",
    "ens",
    "-1 in the ensemble input matches any size of the step",
    {
        "m": unary("m", dims=(4,)),
        "ens": ensemble("ens", [("IN", F, [-1])], [("OUT", F, [-1])], chain("m"), mbs=8),
    },
)
case(
    "valid_repeated_map_key",
    "ens",
    "input_map repeats key INPUT: protobuf keeps the last entry, which is valid (a warning)",
    {
        "m": unary("m"),
        "ens": ensemble(
            "ens", IO4, OUT4, [("m", -1, [("INPUT", "NOPE"), ("INPUT", "IN")], [("OUTPUT", "OUT")])], mbs=8
        ),
    },
)
case(
    "valid_unbatched",
    "ens",
    "max_batch_size 0 everywhere",
    {
        "m": unary("m", mbs=0),
        "n": unary("n", mbs=0),
        "ens": ensemble("ens", IO4, OUT4, chain("m", "n"), mbs=0),
    },
)
case(
    "valid_step_larger_batch",
    "ens",
    "a step may allow a larger batch than the ensemble",
    {
        "m": unary("m", mbs=16),
        "ens": ensemble("ens", IO4, OUT4, chain("m"), mbs=4),
    },
)
case(
    "valid_optional_input",
    "ens",
    "an optional step input may stay unmapped",
    {
        "m": step_model(
            "m", [("INPUT", F, [4]), ("EXTRA", F, [4], "optional: true")], [("OUTPUT", F, [4])], 8
        ),
        "ens": ensemble("ens", IO4, OUT4, chain("m"), mbs=8),
    },
)
case(
    "valid_name_omitted",
    "ens",
    "configs without name: Triton takes the directory name",
    {
        "m": unary("m", name_line=False),
        "ens": ensemble("ens", IO4, OUT4, chain("m"), mbs=8).replace('name: "ens"\n', ""),
    },
)
case(
    "valid_partial_output_map",
    "ens",
    "a step output nobody needs may stay unmapped",
    {
        "split": step_model("split", [("INPUT", F, [4])], [("LEFT", F, [4]), ("RIGHT", F, [4])], 8),
        "ens": ensemble("ens", IO4, OUT4, [("split", -1, [("INPUT", "IN")], [("LEFT", "OUT")])], mbs=8),
    },
)
case(
    "valid_decoupled_step",
    "ens",
    "a decoupled step inside an ensemble",
    {
        "stream": unary("stream", mbs=0, extra="model_transaction_policy { decoupled: true }\n"),
        "ens": ensemble("ens", IO4, OUT4, chain("stream"), mbs=0),
    },
    decoupled=["stream"],
)
case(
    "valid_same_model_twice",
    "ens",
    "one model used by two steps",
    {
        "m": unary("m"),
        "ens": ensemble("ens", IO4, OUT4, chain("m", "m"), mbs=8),
    },
)
case(
    "valid_int_types",
    "ens",
    "INT32 -> FP32 conversion step, dims differ per tensor",
    {
        "cast": unary("cast", dtype=I32, dims=(3, 2), out_dtype=F, out_dims=(6,)),
        "ens": ensemble("ens", [("IN", I32, [3, 2])], [("OUT", F, [6])], chain("cast"), mbs=8),
    },
)
case(
    "valid_ensemble_input_to_output_step",
    "ens",
    "an ensemble input read by two steps, two outputs",
    {
        "m": unary("m"),
        "n": unary("n"),
        "ens": ensemble(
            "ens",
            IO4,
            [("O1", F, [4]), ("O2", F, [4])],
            [
                ("m", -1, [("INPUT", "IN")], [("OUTPUT", "O1")]),
                ("n", -1, [("INPUT", "IN")], [("OUTPUT", "O2")]),
            ],
            mbs=8,
        ),
    },
)

# ---------------------------------------------------------------------------------------------
# broken cases

case(
    "unknown_step_model",
    "ens",
    "a step names a model that is not in the repository",
    {
        "m": unary("m"),
        "ens": ensemble("ens", IO4, OUT4, chain("m", "missing"), mbs=8),
    },
)
case(
    "version_omitted",
    "ens",
    "model_version omitted means version 0, which does not exist",
    {
        "m": unary("m"),
        "ens": ensemble("ens", IO4, OUT4, chain("m", version=None), mbs=8),
    },
)
case(
    "version_pinned_missing",
    "ens",
    "step pinned to version 3, only version 1 on disk",
    {
        "m": unary("m"),
        "ens": ensemble("ens", IO4, OUT4, chain("m", version=3), mbs=8),
    },
)
case(
    "version_not_served",
    "ens",
    "version 1 is on disk but the default policy (latest 1) serves only version 2",
    {
        "m": unary("m"),
        "ens": ensemble("ens", IO4, OUT4, chain("m", version=1), mbs=8),
    },
    versions={"m": [1, 2]},
)
case(
    "unmapped_step_input",
    "ens",
    "a step input is not mapped",
    {
        "d": binary("d"),
        "ens": ensemble("ens", IO4, [("OUT", F, [4])], [("d", -1, [("A", "IN")], [("SUM", "OUT")])], mbs=8),
    },
)
case(
    "map_to_missing_input",
    "ens",
    "input_map key names an input the step model does not have",
    {
        "m": unary("m"),
        "ens": ensemble(
            "ens", IO4, OUT4, [("m", -1, [("INPUT", "IN"), ("INPUT_TYPO", "IN")], [("OUTPUT", "OUT")])], mbs=8
        ),
    },
)
case(
    "map_reversed",
    "ens",
    "input_map written ensemble -> model, the tutorial prose's mistake",
    {
        "m": unary("m"),
        "ens": ensemble("ens", IO4, OUT4, [("m", -1, [("IN", "INPUT")], [("OUT", "OUTPUT")])], mbs=8),
    },
)
case(
    "map_reversed_mid_chain",
    "ens",
    "chapter 2's example with the middle step's input_map reversed: Triton names the output, not the map",
    {
        "pre": unary("pre"),
        "cls": unary("cls", inp="input", out="logits"),
        "post": unary("post", inp="logits", out="labels"),
        "ens": ensemble(
            "ens",
            IO4,
            [("LABELS", F, [4])],
            [
                ("pre", -1, [("INPUT", "IN")], [("OUTPUT", "pixels")]),
                ("cls", -1, [("pixels", "input")], [("logits", "raw_logits")]),
                ("post", -1, [("logits", "raw_logits")], [("labels", "LABELS")]),
            ],
            mbs=8,
        ),
    },
)
case(
    "map_from_missing_output",
    "ens",
    "output_map key names an output the step model does not have",
    {
        "m": unary("m"),
        "ens": ensemble("ens", IO4, OUT4, [("m", -1, [("INPUT", "IN")], [("PROBS", "OUT")])], mbs=8),
    },
)
case(
    "output_not_written",
    "ens",
    "an ensemble output no step writes",
    {
        "m": unary("m"),
        "ens": ensemble("ens", IO4, [("OUT", F, [4]), ("EXTRA", F, [4])], chain("m"), mbs=8),
    },
)
case(
    "tensor_written_twice",
    "ens",
    "two steps write the same ensemble tensor",
    {
        "m": unary("m"),
        "n": unary("n"),
        "ens": ensemble(
            "ens",
            IO4,
            OUT4,
            [
                ("m", -1, [("INPUT", "IN")], [("OUTPUT", "OUT")]),
                ("n", -1, [("INPUT", "IN")], [("OUTPUT", "OUT")]),
            ],
            mbs=8,
        ),
    },
)
case(
    "tensor_written_twice_one_step",
    "ens",
    "two outputs of one step mapped to the same tensor",
    {
        "split": step_model("split", [("INPUT", F, [4])], [("LEFT", F, [4]), ("RIGHT", F, [4])], 8),
        "ens": ensemble(
            "ens", IO4, OUT4, [("split", -1, [("INPUT", "IN")], [("LEFT", "OUT"), ("RIGHT", "OUT")])], mbs=8
        ),
    },
)
case(
    "unused_ensemble_input",
    "ens",
    "an ensemble input no step reads",
    {
        "m": unary("m"),
        "ens": ensemble("ens", [("IN", F, [4]), ("SPARE", F, [4])], OUT4, chain("m"), mbs=8),
    },
)
case(
    "unused_intermediate_tensor",
    "ens",
    "a step writes a tensor nobody reads",
    {
        "split": step_model("split", [("INPUT", F, [4])], [("LEFT", F, [4]), ("RIGHT", F, [4])], 8),
        "ens": ensemble(
            "ens", IO4, OUT4, [("split", -1, [("INPUT", "IN")], [("LEFT", "OUT"), ("RIGHT", "waste")])], mbs=8
        ),
    },
)
case(
    "dtype_mismatch",
    "ens",
    "INT32 ensemble input into an FP32 step input",
    {
        "m": unary("m"),
        "ens": ensemble("ens", [("IN", I32, [4])], OUT4, chain("m"), mbs=8),
    },
)
case(
    "dtype_mismatch_between_steps",
    "ens",
    "a step writes FP32, the next reads INT32",
    {
        "a": unary("a"),
        "b": unary("b", dtype=I32, out_dtype=F),
        "ens": ensemble("ens", IO4, OUT4, chain("a", "b"), mbs=8),
    },
)
case(
    "dims_mismatch",
    "ens",
    "[4] written, [5] read",
    {
        "a": unary("a"),
        "b": unary("b", dims=(5,), out_dims=(4,)),
        "ens": ensemble("ens", IO4, OUT4, chain("a", "b"), mbs=8),
    },
)
case(
    "warn_implicit_batch_dim",
    "ens",
    "non-batching step with dims [4] in a batching ensemble: Triton accepts it (dims equal without the batch "
    "dimension), check warns",
    {
        "nb": unary("nb", mbs=0),
        "ens": ensemble("ens", IO4, OUT4, chain("nb"), mbs=8),
    },
)
case(
    "rank_mismatch",
    "ens",
    "[4] vs [2,2]: same element count, different shape",
    {
        "m": unary("m", dims=(2, 2), out_dims=(4,)),
        "ens": ensemble("ens", IO4, OUT4, chain("m"), mbs=8),
    },
)
case(
    "max_batch_size_too_small",
    "ens",
    "a step allows batch 4, the ensemble 8",
    {
        "m": unary("m", mbs=4),
        "ens": ensemble("ens", IO4, OUT4, chain("m"), mbs=8),
    },
)
case(
    "forbidden_dynamic_batching",
    "ens",
    "dynamic_batching on an ensemble",
    {
        "m": unary("m"),
        "ens": ensemble("ens", IO4, OUT4, chain("m"), mbs=8, extra="dynamic_batching { }\n"),
    },
)
case(
    "forbidden_instance_group",
    "ens",
    "instance_group on an ensemble",
    {
        "m": unary("m"),
        "ens": ensemble(
            "ens", IO4, OUT4, chain("m"), mbs=8, extra="instance_group [ { kind: KIND_CPU count: 2 } ]\n"
        ),
    },
)
case(
    "forbidden_optimization",
    "ens",
    "optimization on an ensemble",
    {
        "m": unary("m"),
        "ens": ensemble(
            "ens",
            IO4,
            OUT4,
            chain("m"),
            mbs=8,
            extra="optimization { input_pinned_memory { enable: false } }\n",
        ),
    },
)
case(
    "forbidden_model_warmup",
    "ens",
    "model_warmup on an ensemble",
    {
        "m": unary("m"),
        "ens": ensemble(
            "ens",
            IO4,
            OUT4,
            chain("m"),
            mbs=8,
            extra=(
                'model_warmup [ { name: "w" batch_size: 1 inputs { key: "IN" value: '
                "{ data_type: TYPE_FP32 dims: [ 4 ] zero_data: true } } } ]\n"
            ),
        ),
    },
)
case(
    "forbidden_backend",
    "ens",
    "backend set on an ensemble",
    {
        "m": unary("m"),
        "ens": ensemble("ens", IO4, OUT4, chain("m"), mbs=8, head_extra='backend: "python"'),
    },
)
case(
    "cycle_two_steps",
    "ens",
    "two steps feed each other: a cycle",
    {
        "a": binary("a"),
        "b": unary("b"),
        "ens": ensemble(
            "ens",
            IO4,
            OUT4,
            [
                ("a", -1, [("A", "IN"), ("B", "back")], [("SUM", "OUT")]),
                ("b", -1, [("INPUT", "OUT")], [("OUTPUT", "back")]),
            ],
            mbs=8,
        ),
    },
)
case(
    "cycle_three_steps",
    "ens",
    "a -> b -> c -> a, the output read from b",
    {
        "a": binary("a"),
        "b": unary("b"),
        "c": unary("c"),
        "ens": ensemble(
            "ens",
            IO4,
            OUT4,
            [
                ("a", -1, [("A", "IN"), ("B", "z")], [("SUM", "x")]),
                ("b", -1, [("INPUT", "x")], [("OUTPUT", "y")]),
                ("c", -1, [("INPUT", "y")], [("OUTPUT", "z")]),
                ("b", -1, [("INPUT", "y")], [("OUTPUT", "OUT")]),
            ],
            mbs=8,
        ),
    },
)
case(
    "cycle_self_loop",
    "ens",
    "a step reads its own output",
    {
        "a": binary("a"),
        "ens": ensemble("ens", IO4, OUT4, [("a", -1, [("A", "IN"), ("B", "OUT")], [("SUM", "OUT")])], mbs=8),
    },
)
case(
    "name_directory_mismatch",
    "ens",
    "config name differs from its directory",
    {
        "m": unary("m"),
        "ens": ensemble("ensemble_model", IO4, OUT4, chain("m"), mbs=8),
    },
)
case(
    "step_name_directory_mismatch",
    "ens",
    "a step model's config name differs from its directory",
    {
        "m": unary("other_name"),
        "ens": ensemble("ens", IO4, OUT4, chain("m"), mbs=8),
    },
)
case(
    "syntax_error",
    "ens",
    "a missing closing brace",
    {
        "m": unary("m"),
        "ens": ensemble("ens", IO4, OUT4, chain("m"), mbs=8).rstrip("\n")[:-1],
    },
)
case(
    "unknown_field",
    "ens",
    "a misspelled field name",
    {
        "m": unary("m"),
        "ens": ensemble("ens", IO4, OUT4, chain("m"), mbs=8).replace("max_batch_size", "max_batch"),
    },
)
case(
    "bad_enum",
    "ens",
    "a data type that does not exist",
    {
        "m": unary("m"),
        "ens": ensemble("ens", [("IN", "TYPE_FLOAT", [4])], OUT4, chain("m"), mbs=8),
    },
)
case(
    "ensemble_without_version_dir",
    "ens",
    "an ensemble needs an (empty) version directory",
    {
        "m": unary("m"),
        "ens": ensemble("ens", IO4, OUT4, chain("m"), mbs=8),
    },
    versions={"ens": []},
)
case(
    "nested_cycle",
    "outer",
    "ensembles that contain each other",
    {
        "a": unary("a"),
        "inner": ensemble("inner", IO4, OUT4, chain("outer"), mbs=8),
        "outer": ensemble("outer", IO4, OUT4, chain("inner"), mbs=8),
    },
)
case(
    "nested_inner_broken",
    "outer",
    "the inner ensemble of a nested pair is broken",
    {
        "a": unary("a"),
        "inner": ensemble("inner", IO4, OUT4, [("a", -1, [("INPUT", "IN")], [("OUTPUT", "WRONG")])], mbs=8),
        "outer": ensemble("outer", IO4, OUT4, chain("inner"), mbs=8),
    },
)
case(
    "nested_shape_mismatch",
    "outer",
    "the inner ensemble's output shape does not match the next step",
    {
        "a": unary("a"),
        "b": unary("b", dims=(8,), out_dims=(4,)),
        "inner": ensemble(
            "inner",
            [("INPUT", F, [4])],
            [("OUTPUT", F, [4])],
            chain("a", ens_in="INPUT", ens_out="OUTPUT"),
            mbs=8,
        ),
        "outer": ensemble("outer", IO4, OUT4, chain("inner", "b"), mbs=8),
    },
)
case(
    "missing_output_map",
    "ens",
    "a step without output_map",
    {
        "m": unary("m"),
        "ens": ensemble("ens", IO4, OUT4, [("m", -1, [("INPUT", "IN")], [])], mbs=8),
    },
)
case(
    "missing_model_name",
    "ens",
    "a step without model_name",
    {
        "m": unary("m"),
        "ens": ensemble("ens", IO4, OUT4, chain("m"), mbs=8).replace('      model_name: "m"\n', ""),
    },
)
case(
    "inconsistent_consumers",
    "ens",
    "one tensor read as [4] by one step and [8] by another",
    {
        "a": unary("a"),
        "b": unary("b", dims=(8,), out_dims=(4,)),
        "j": binary("j"),
        "ens": ensemble(
            "ens",
            IO4,
            OUT4,
            [
                ("a", -1, [("INPUT", "IN")], [("OUTPUT", "y")]),
                ("b", -1, [("INPUT", "IN")], [("OUTPUT", "z")]),
                ("j", -1, [("A", "y"), ("B", "z")], [("SUM", "OUT")]),
            ],
            mbs=8,
        ),
    },
)
case(
    "decoupled_fan_in",
    "ens",
    "one step receives inputs from two different decoupled models",
    {
        "s1": unary("s1", mbs=0, extra="model_transaction_policy { decoupled: true }\n"),
        "s2": unary("s2", mbs=0, extra="model_transaction_policy { decoupled: true }\n"),
        "j": binary("j", mbs=0),
        "ens": ensemble(
            "ens",
            IO4,
            OUT4,
            [
                ("s1", -1, [("INPUT", "IN")], [("OUTPUT", "y")]),
                ("s2", -1, [("INPUT", "IN")], [("OUTPUT", "z")]),
                ("j", -1, [("A", "y"), ("B", "z")], [("SUM", "OUT")]),
            ],
            mbs=0,
        ),
    },
    decoupled=["s1", "s2"],
)
case(
    "warn_wildcard_not_transitive",
    "ens",
    "ensemble input [-1] read as [4] by one step and [5] by another: Triton compares each with the first "
    "declaration only and accepts; check warns",
    {
        "a": unary("a"),
        "b": unary("b", dims=(5,), out_dims=(4,)),
        "j": binary("j"),
        "ens": ensemble(
            "ens",
            [("IN", F, [-1])],
            OUT4,
            [
                ("a", -1, [("INPUT", "IN")], [("OUTPUT", "y")]),
                ("b", -1, [("INPUT", "IN")], [("OUTPUT", "z")]),
                ("j", -1, [("A", "y"), ("B", "z")], [("SUM", "OUT")]),
            ],
            mbs=8,
        ),
    },
)
case(
    "valid_version_policy_specific",
    "ens",
    "versions 1, 2, 3 on disk, policy serves 1 and 3, step pins 3",
    {
        "m": unary("m", extra="version_policy: { specific { versions: [ 1, 3 ] } }\n"),
        "ens": ensemble("ens", IO4, OUT4, chain("m", version=3), mbs=8),
    },
    versions={"m": [1, 2, 3]},
)
case(
    "valid_reshape",
    "ens",
    "ensemble input reshaped: Triton compares the reshape with the step",
    {
        "m": unary("m", dims=(2, 2)),
        "ens": ensemble(
            "ens", [("IN", F, [4], "reshape: { shape: [ 2, 2 ] }")], [("OUT", F, [2, 2])], chain("m"), mbs=8
        ),
    },
)
case(
    "io_without_dims",
    "ens",
    "an ensemble output without dims",
    {
        "m": unary("m"),
        "ens": ensemble("ens", IO4, OUT4, chain("m"), mbs=8).replace(
            '    name: "OUT"\n    data_type: TYPE_FP32\n    dims: [ 4 ]\n',
            '    name: "OUT"\n    data_type: TYPE_FP32\n',
        ),
    },
)
case(
    "io_zero_dim",
    "ens",
    "a step input with a 0 dimension",
    {
        "m": unary("m", dims=(0,), out_dims=(4,)),
        "ens": ensemble("ens", [("IN", F, [-1])], OUT4, chain("m"), mbs=8),
    },
)
case(
    "negative_max_batch_size",
    "ens",
    "max_batch_size -1 on the ensemble",
    {
        "m": unary("m"),
        "ens": ensemble("ens", IO4, OUT4, chain("m"), mbs=-1),
    },
)
case(
    "step_writes_ensemble_input",
    "ens",
    "a step writes the tensor that is also an ensemble input",
    {
        "m": unary("m"),
        "n": unary("n"),
        "ens": ensemble(
            "ens",
            IO4,
            OUT4,
            [
                ("m", -1, [("INPUT", "IN")], [("OUTPUT", "OUT")]),
                ("n", -1, [("INPUT", "OUT")], [("OUTPUT", "IN")]),
            ],
            mbs=8,
        ),
    },
)
case(
    "empty_steps",
    "ens",
    "ensemble_scheduling without any step",
    {
        "ens": 'name: "ens"\nplatform: "ensemble"\nmax_batch_size: 8\n'
        + _io("input", IO4)
        + _io("output", OUT4)
        + "ensemble_scheduling { }\n",
    },
)


# ---------------------------------------------------------------------------------------------


def write_case(name: str, spec: dict) -> None:
    root = HERE / name
    old = {}
    meta = root / "case.json"
    if meta.exists():
        old = json.loads(meta.read_text())
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    for model, text in spec["models"].items():
        mdir = root / model
        mdir.mkdir()
        (mdir / "config.pbtxt").write_text(text)
        is_ensemble = 'platform: "ensemble"' in text or "ensemble_scheduling" in text
        for v in spec["versions"].get(model, [1]):
            vdir = mdir / str(v)
            vdir.mkdir()
            if is_ensemble:
                (vdir / ".gitkeep").write_text("")
            else:
                body = DECOUPLED_MODEL_PY if model in spec["decoupled"] else MODEL_PY
                (vdir / "model.py").write_text(body)
        for v in spec["empty_versions"].get(model, []):
            (mdir / str(v)).mkdir()
            (mdir / str(v) / ".gitkeep").write_text("")
    record = {
        "load": spec["load"],
        "about": spec["about"],
        "triton_loads": old.get("triton_loads"),
        "triton_message": old.get("triton_message"),
    }
    meta.write_text(json.dumps(record, indent=2) + "\n")


def main() -> None:
    for name, spec in CASES.items():
        write_case(name, spec)
    print(f"wrote {len(CASES)} cases under {HERE}")


if __name__ == "__main__":
    main()
