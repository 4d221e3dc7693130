"""The course's own small language model: a byte-level tokenizer (``tokenizer``), a numpy decoder-only
transformer with a KV cache (``network``), its training text built from the lessons (``corpus``) and the
training script that writes ``weights.npz`` (``train``)."""
