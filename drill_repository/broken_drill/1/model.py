"""Triton Python backend: a model that never loads. initialize() raises, so Triton marks it UNAVAILABLE."""


class TritonPythonModel:
    def initialize(self, args):
        raise RuntimeError("broken_drill fails to load on purpose (a drill for --exit-on-error)")

    def execute(self, requests):  # never reached
        return []
