"""Triton Kitchen: teach NVIDIA Triton Inference Server with a real server, real models and real numbers."""

__version__ = "0.1.0"
