"""Byte-level tokenizer: a token is one byte of the UTF-8 text (ids 0-255), plus two specials.

``BOS`` (256) starts a document and ``EOS`` (257) ends one; the vocabulary has :data:`VOCAB_SIZE` = 258 ids.
Any UTF-8 text encodes (Chinese characters take 3 tokens each, most English letters 1); ``decode`` skips the
specials and replaces bytes that are not valid UTF-8 with U+FFFD, never raising. :class:`StreamDecoder` turns
tokens into text as they arrive and holds back the bytes of a character not yet complete, so a stream never
shows half a character.

Imported inside Triton's Python stub (Python 3.10): numpy and the standard library only.
"""

from __future__ import annotations

import codecs

BYTES = 256
BOS = 256
EOS = 257
VOCAB_SIZE = 258
SPECIALS = {BOS: "<bos>", EOS: "<eos>"}


def encode(text: str, bos: bool = False, eos: bool = False) -> list[int]:
    """The UTF-8 bytes of ``text`` as ids, with ``BOS`` before and ``EOS`` after when asked."""
    ids = list(text.encode("utf-8"))
    return ([BOS] if bos else []) + ids + ([EOS] if eos else [])


def decode(ids) -> str:
    """The text of ``ids``: specials are left out, bytes that are not valid UTF-8 become U+FFFD."""
    return bytes(int(i) for i in ids if 0 <= int(i) < BYTES).decode("utf-8", errors="replace")


class StreamDecoder:
    """Incremental decoding: ``push(token)`` returns the text that is complete now (maybe ``""``), holding back
    the bytes of a character that is still arriving; ``flush()`` returns what is left at the end (an incomplete
    sequence there becomes U+FFFD). A byte that can never start or continue a character is replaced at once."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def push(self, token: int) -> str:
        token = int(token)
        if not 0 <= token < BYTES:
            return ""
        return self._decoder.decode(bytes([token]))

    def push_many(self, tokens) -> str:
        return "".join(self.push(t) for t in tokens)

    def flush(self) -> str:
        return self._decoder.decode(b"", final=True)
