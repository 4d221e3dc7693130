"""Ensembles: validation by Triton's own rules, the DAG (steps, tensors, stages) and memory.

The rules follow Triton 2.51's loader (``model_config_utils.cc``: ``ValidateModelConfig``,
``ValidateEnsembleSchedulingConfig``; ``ensemble_utils.cc``: ``ValidateEnsembleConfig``;
the repository manager's dependency checks) and were checked against the real server on the
corpus in ``tests/corpus``.  Triton stops at its first error; :func:`validate_model` reports
every problem it finds, each with a stable ``code``, an English ``message``, ``params`` (the
facts, for programs), a best-effort ``line`` and, where known, Triton's own wording
(``triton_message``).  The explanation itself comes from the ``[problem]`` string tables of
``lessons/<lang>/ui.toml``: :meth:`Problem.text` renders it in another language (``message``
is its English rendering, the ``check`` output).  Steps are counted from 1 in every
explanation, as in the DAG and the lessons (``params`` keep 0-based indexes, Triton's own
wording counts from 0).  Warnings explain things Triton accepts silently (a repeated map key,
a shape that only matches without the batch dimension); they never change the verdict.

Conventions (as in Triton): the key of ``input_map``/``output_map`` is the step model's
tensor, the value the ensemble tensor; ``model_version`` omitted is 0, not -1.

Layout (imports run one way, top to bottom): ``problems`` (:class:`Problem`, :class:`Msg`, the rule-writing
API :class:`Collector` and :func:`msg`, shared helpers), ``autofill`` (what Triton fills in before checking),
``config_rules`` (one config's field rules), ``tensor_nodes`` (each ensemble tensor's producer and consumers),
``data_flow`` (tensors inside one ensemble), ``model_rules`` (one config on its own), ``validate`` (the public
checks and the rules that need the step models), ``dag`` (:class:`Dag`, :func:`build_dag`), ``memory``
(:func:`inflight_memory`). Import from ``triton_kitchen.core.ensemble``; the modules are its parts.
"""

from __future__ import annotations

from triton_kitchen.core.ensemble.dag import Dag, DagStep, DagTensor, build_dag
from triton_kitchen.core.ensemble.memory import MemoryEstimate, inflight_memory
from triton_kitchen.core.ensemble.model_rules import BACKEND_FILES, KNOWN_PLATFORMS, validate_config_file
from triton_kitchen.core.ensemble.problems import (
    DEFAULT_OPTIONS,
    CheckOptions,
    Msg,
    Problem,
    Repo,
    config_error_msg,
    has_errors,
)
from triton_kitchen.core.ensemble.validate import validate_model, validate_repository
from triton_kitchen.core.tensors import format_bytes, tensor_bytes

__all__ = [
    "BACKEND_FILES",
    "DEFAULT_OPTIONS",
    "KNOWN_PLATFORMS",
    "CheckOptions",
    "Dag",
    "DagStep",
    "DagTensor",
    "MemoryEstimate",
    "Msg",
    "Problem",
    "Repo",
    "build_dag",
    "config_error_msg",
    "format_bytes",
    "has_errors",
    "inflight_memory",
    "tensor_bytes",
    "validate_config_file",
    "validate_model",
    "validate_repository",
]
