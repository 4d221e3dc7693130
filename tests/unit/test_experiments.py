"""Experiments without a server: each outcome's prediction is one the code checks.

The tests that need the server, the app or a browser: tests/live/test_experiments_live.py."""

from __future__ import annotations

from triton_kitchen.labs import experiments


def test_the_outcomes_predictions_are_checked_against():
    """Chapter 3's "which cascade ran the fine model" and chapter 8's "is gRPC 2x faster", from measurements."""
    from triton_kitchen.labs.demo import speed_outcome

    def call(coarse: int, fine: int) -> experiments.CascadeCall:
        return experiments.CascadeCall(None, {"classifier_coarse": coarse, "classifier": fine}, None)

    assert experiments.fine_model_outcome(call(1, 1), call(1, 0)) == "ensemble_only"
    assert experiments.fine_model_outcome(call(1, 1), call(1, 1)) == "both"
    assert experiments.fine_model_outcome(call(1, 0), call(1, 1)) == "bls_only"
    assert experiments.fine_model_outcome(call(1, 0), call(1, 0)) == "neither"
    assert experiments.fine_model_outcome(call(2, 1), call(1, 0)) is None  # someone else used the cascades
    answered_from_tier_two = experiments.CascadeCall(None, {"classifier_coarse": 1, "classifier": 3}, 2)
    assert experiments.fine_model_outcome(call(1, 1), answered_from_tier_two) == "both"
    answered_from_tier_one = experiments.CascadeCall(None, {"classifier_coarse": 1, "classifier": 3}, 1)
    assert experiments.fine_model_outcome(call(1, 1), answered_from_tier_one) == "ensemble_only"  # others' 3
    assert speed_outcome({"grpc": [2.0, 3.0, 4.0], "http-binary": [6.0, 7.0]}) == "grpc_2x"
    assert speed_outcome({"grpc": [3.0], "http-binary": [4.0, 5.0]}) == "close"
    assert speed_outcome({"grpc": [9.0], "http-binary": [4.0]}) == "http_2x"
    assert speed_outcome({"grpc": [], "http-binary": [4.0]}) is None
    meal = {"image_classifier": 1, "preprocess": 1, "classifier": 2, "postprocess": 1}  # 2: a neighbour's too
    assert experiments.MealCall(None, meal).outcome() == "four"
    assert experiments.MealCall(None, {**meal, "image_classifier": 0}).outcome() == "three"
    assert experiments.MealCall(None, {}).outcome() is None  # statistics closed: no reveal
