"""What the course teaches that depends on Triton's version, as data: one :class:`Fact` per behaviour, with the
first version where it holds and where that is seen; and, per language, the phrases that state it in the
lessons and what differs on a server of another range (``lessons/<lang>/version_facts.toml``).

A lesson paragraph, callout, quiz item or verdict string that contains a fact's phrase names the range it
holds for with a range marker (:data:`RANGE_MARKER`): ``(Triton 2.51–2.67)`` or ``(Triton 2.68+)`` in English,
``（Triton 2.51–2.67）`` or ``（Triton 2.68 起）`` in Chinese (``tests/unit/test_version_facts.py``).

    differences(TritonVersion.parse("2.68"))      # the facts whose behaviour on 2.68 is not 2.51's
    texts("zh")["client_shm"]["differs"]           # what the sidebar says about one of them
"""

from __future__ import annotations

import functools
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from triton_kitchen.core.versions import EMBEDDED, NEWEST, TritonVersion

__all__ = ["FACTS", "RANGE_MARKER", "Fact", "differences", "server_notes", "texts"]

LESSONS = Path(__file__).resolve().parents[2] / "lessons"

# "Triton 2.51–2.67", "Triton 2.68+" (en) and "Triton 2.68 起" (zh): the range a sentence holds for
RANGE_MARKER = re.compile(r"Triton (\d+\.\d+)(?:–(\d+\.\d+)|\+| 起)")


@dataclass(frozen=True)
class Fact:
    key: str  # its table in lessons/<lang>/version_facts.toml
    since: TritonVersion | None  # the first version where it holds (None: not a server behaviour)
    source: str  # where that is seen: a file at a branch, a commit, a pull request
    changed: bool = True  # False: the same in 2.51 and the newest version checked (the row says so)
    until: TritonVersion | None = None  # for a no-difference row: the newest version it was checked on

    def holds_on(self, version: TritonVersion) -> bool:
        return self.since is None or version >= self.since

    def differs_on(self, version: TritonVersion) -> bool:
        """Whether a server of ``version`` behaves otherwise than the embedded 2.51 here."""
        return self.changed and self.since is not None and self.holds_on(version) != self.holds_on(EMBEDDED)


V = TritonVersion
FACTS: tuple[Fact, ...] = (
    Fact(
        "client_shm",
        V(2, 68),
        "server r26.04 src/command_line_parser.cc (--allow-client-shm, 'Default is false') and "
        "src/shared_memory_manager.h (commit d78c99c, 'Disable client shared memory by default and enable it "
        "explicitly with --allow-client-shm=true', server #8721/#8739)",
    ),
    Fact(
        "stub_dead_model_not_ready",
        V(2, 64),
        "core r25.12 (commit 8dbcc96, cherry-pick of core #461: TRITONBACKEND_ModelInstanceReady) and python_backend "
        "r25.12 (397eddf, python_backend #423/#425: the stub's liveness); both branches before the v2.64.0 tag",
    ),
    Fact(
        "strict_readiness_dead_stub",
        V(2, 68),
        "core r26.04 (commit 53fc26e, '/v2/health/ready returns 200 when Python backend stub is dead', core #473): "
        "under --strict-readiness=true IsReady() asks each READY model's backend",
    ),
    Fact(
        "compute_capability_75",
        V(2, 52),
        "server r24.11 CMakeLists.txt: TRITON_MIN_COMPUTE_CAPABILITY 7.5 (6.0 at r24.10; server #7757)",
    ),
    Fact(
        "tensorflow_backend_gone",
        V(2, 56),
        "server r25.03 build.py no longer builds the tensorflow backend (commit 1f6aed23f, server #8113); "
        "r25.03's qa/L0_model_config TRIALS drop both TensorFlow platforms",
    ),
    Fact(
        "model_metrics",
        V(2, 52),
        "common r24.11 protobuf/model_config.proto (commit 3948525, common #126); core r24.11 "
        "ValidateModelMetrics (core #405)",
    ),
    Fact(
        "max_inflight_requests",
        V(2, 63),
        "common r25.11 protobuf/model_config.proto (commit 6a318ca, common #141); core r25.11 ensemble_scheduler.cc",
    ),
    Fact(
        "dynamo_triton_name",
        None,
        "NVIDIA's product page (developer.nvidia.com/dynamo: 'NVIDIA Dynamo-Triton, formerly NVIDIA Triton Inference "
        "Server'); a name, not a server behaviour: GET /v2 still answers name 'triton'",
    ),
    Fact(
        "ensemble_missing_output",
        V(2, 51),
        "core r24.10 and r26.06 src/ensemble_scheduler/ensemble_scheduler.cc (commit bfec7c6, 'Allow missing ensemble "
        "output(s)', core #399/#402): already in 2.51",
        changed=False,
        until=NEWEST,
    ),
    Fact(
        "load_model_needs_explicit",
        V(2, 51),
        "server r24.10 and r26.08 src/command_line_parser.cc: \"Error: Use of '--load-model' requires setting "
        "'--model-control-mode=explicit' as well.\"",
        changed=False,
        until=NEWEST,
    ),
)


@functools.cache
def texts(lang: str) -> dict[str, dict]:
    """``lessons/<lang>/version_facts.toml``: per fact, ``phrases`` (how the lessons state it), ``fact`` (the
    row in words) and ``differs`` (what the sidebar says on a server where it is otherwise; ``{version}``)."""
    with open(LESSONS / lang / "version_facts.toml", "rb") as f:
        return tomllib.load(f)


def differences(version: TritonVersion) -> list[Fact]:
    """The facts whose behaviour on a server of ``version`` is not the embedded 2.51's, in table order."""
    return [fact for fact in FACTS if fact.differs_on(version)]


def marker_covers(text: str, fact: Fact) -> bool:
    """Whether ``text`` names a range that starts or ends at ``fact``'s version boundary."""
    if fact.since is None:
        return True
    before = str(TritonVersion(fact.since.major, fact.since.minor - 1))
    for m in RANGE_MARKER.finditer(text):
        start, end = m.group(1), m.group(2)
        if start == str(fact.since) or end == before:
            return True
    return False


def server_notes(version_text: str, lang: str = "en") -> list[str]:
    """What differs from the course's 2.51 on a server that reports ``version_text`` (``GET /v2``'s
    ``version``, e.g. ``2.68.0``), one sentence per fact in ``lang``; none for 2.51 or a version not read."""
    try:
        version = TritonVersion.parse(version_text)
    except ValueError:
        return []
    table = texts(lang)
    return [table[f.key]["differs"].format(version=version) for f in differences(version)]
