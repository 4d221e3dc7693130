"""The course's models: their names, and the repository's models in the order the course shows them.

Every page that lists the repository asks here (``models``, ``model_names``, ``ensemble_names``), so
the browser, the labs and the diagrams agree on which models exist and in which order; :func:`fingerprint`
tells a cache when a config file changed.  Reading the files is :mod:`triton_kitchen.core.config`'s job.

    catalog.model_names()                         # image_classifier, preprocess, classifier, ...
    catalog.ensemble_names()                      # image_classifier, ensemble_pipeline, tta_ensemble, ...
"""

from __future__ import annotations

import os
from pathlib import Path

from triton_kitchen.core.config import ModelEntry, load_repository
from triton_kitchen.core.server import DEFAULT_REPOSITORY

# chapter 1's set meal: one ensemble of three steps
IMAGE_CLASSIFIER = "image_classifier"
PREPROCESS = "preprocess"
CLASSIFIER = "classifier"
POSTPROCESS = "postprocess"
# chapters 2 and 4: the tutorial's own pipeline (a preprocessed tensor in, probabilities out)
ENSEMBLE_PIPELINE = "ensemble_pipeline"
# chapter 3's patterns: parallel (test-time augmentation) and cascade (ensemble and BLS)
TTA_ENSEMBLE = "tta_ensemble"
HFLIP = "hflip"
FUSE_LOGITS = "fuse_logits"
CASCADE_ENSEMBLE = "cascade_ensemble"
CLASSIFIER_COARSE = "classifier_coarse"
CASCADE_SELECT = "cascade_select"
CASCADE_BLS = "cascade_bls"
# pruning: a step that feeds only an output the client may leave out
SECOND_OPINION = "second_opinion"
# chapters 5 and 6: a decoupled model that streams tokens
STREAMER = "streamer"
# chapter 10's drills (loaded for them, never called by another chapter): the response cache, warm-up
CACHE_DRILL = "cache_drill"
WARMUP_DRILL = "warmup_drill"
# chapter 9's stateful drill: a running sum per sequence (sequence batcher), and the same code without it
RUNNING_SUM = "running_sum"
RUNNING_SUM_PLAIN = "running_sum_plain"
# and an ensemble with a stateful step: a stateless step (2 instances) -> running_sum's code with its own slots
RUNNING_SUM_ENSEMBLE = "running_sum_ensemble"
RUNNING_SUM_SCALE = "running_sum_scale"
RUNNING_SUM_STEP = "running_sum_step"
# chapter 9's shapes drill (rows of any length; ragged; one model per bucket), chapter 3's Python backend inside
SHAPES_DRILL = "shapes_drill"
SHAPES_RAGGED = "shapes_ragged"
SHAPES_BUCKET_SHORT = "shapes_bucket_short"
SHAPES_BUCKET_LONG = "shapes_bucket_long"

# The drills' models are loaded when a drill first sends to them, not when the app's server starts: each is its own
# stub process (two for those with 2 instances), and all of them loaded at start doubled the server's processes,
# start-up CPU and memory. core/on_demand.py loads them; the course's other models stay loaded from the start.
LOADED_ON_FIRST_USE = (
    SHAPES_DRILL,
    SHAPES_RAGGED,
    SHAPES_BUCKET_SHORT,
    SHAPES_BUCKET_LONG,
    CACHE_DRILL,
    WARMUP_DRILL,
    RUNNING_SUM,
    RUNNING_SUM_PLAIN,
    RUNNING_SUM_ENSEMBLE,
    RUNNING_SUM_SCALE,
    RUNNING_SUM_STEP,
)
# the LLM lab: the course's tiny language model under request-level and under in-flight batching
TINY_LM = "tiny_lm"
TINY_LM_IFB = "tiny_lm_ifb"

# drill_repository/: models the app's own server never loads; chapters 7 and 10 start a small server of their own
# on it for one run (to cancel requests to a slow model, to kill a stub), so the class's models are never touched
DRILL_REPOSITORY = DEFAULT_REPOSITORY.parent / "drill_repository"
SLOW_DRILL = "slow_drill"  # sleeps MS ms per request and answers with its stub's pid
BROKEN_DRILL = "broken_drill"  # its initialize() raises: a model that fails to load, on purpose

# the order the course meets them; a model the course does not know comes after, by name
COURSE_ORDER = (
    IMAGE_CLASSIFIER,
    PREPROCESS,
    CLASSIFIER,
    POSTPROCESS,
    ENSEMBLE_PIPELINE,
    TTA_ENSEMBLE,
    HFLIP,
    FUSE_LOGITS,
    CASCADE_ENSEMBLE,
    CLASSIFIER_COARSE,
    CASCADE_SELECT,
    CASCADE_BLS,
    SECOND_OPINION,
    STREAMER,
    CACHE_DRILL,
    WARMUP_DRILL,
    RUNNING_SUM,
    RUNNING_SUM_PLAIN,
    RUNNING_SUM_ENSEMBLE,
    RUNNING_SUM_SCALE,
    RUNNING_SUM_STEP,
    TINY_LM,
    TINY_LM_IFB,
    SHAPES_DRILL,
    SHAPES_RAGGED,
    SHAPES_BUCKET_SHORT,
    SHAPES_BUCKET_LONG,
)


def course_order(names, first: tuple[str, ...] = ()) -> list[str]:
    """``names`` in the course's order (``first`` before everything else); unknown names last, sorted."""
    rank: dict[str, int] = {}
    for name in (*first, *COURSE_ORDER):
        rank.setdefault(name, len(rank))
    return sorted(set(names), key=lambda n: (rank.get(n, len(rank)), n))


def models(
    repo: str | os.PathLike = DEFAULT_REPOSITORY, max_bytes: int | None = None
) -> dict[str, ModelEntry]:
    """Every model folder of ``repo`` that has a ``config.pbtxt``, read, in the course's order."""
    found = {
        name: entry
        for name, entry in load_repository(repo, max_bytes=max_bytes).items()
        if entry.error is None or entry.error.code != "no_config"
    }
    return {name: found[name] for name in course_order(found)}


def model_names(
    repo: str | os.PathLike = DEFAULT_REPOSITORY, first: tuple[str, ...] = (), leave_out: tuple[str, ...] = ()
) -> list[str]:
    """The names of :func:`models`, ``first`` first, without ``leave_out``."""
    return [n for n in course_order(models(repo), first) if n not in leave_out]


def ensemble_names(repo: str | os.PathLike = DEFAULT_REPOSITORY) -> list[str]:
    """The repository's ensembles (configs that parse and schedule steps), in the course's order; a drill's ensemble
    (loaded on first use, and sent its drill's own requests, not the labs' images) is left out."""
    return [
        name for name, entry in models(repo).items() if entry.is_ensemble and name not in LOADED_ON_FIRST_USE
    ]


def fingerprint(repo: str | os.PathLike = DEFAULT_REPOSITORY) -> tuple:
    """The repository's config files as ``(model, mtime_ns)`` pairs: a cache key that changes with any file."""
    return tuple(sorted((p.parent.name, p.stat().st_mtime_ns) for p in Path(repo).glob("*/config.pbtxt")))
