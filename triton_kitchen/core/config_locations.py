"""Where each field of a ``config.pbtxt`` sits (line, column) and its literal value, by field path.

Protobuf's Python parser keeps no source positions, so a token walk over text that protobuf has already
accepted maps field paths to lines afterwards; it only *locates*, the semantics are protobuf's. It keeps
every map entry, repeated keys included (protobuf keeps the last one), which the validator warns about.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from google.protobuf import text_format

__all__ = ["Locations", "locate"]


@dataclass
class Locations:
    """Line/column of fields, by path, e.g. ``("ensemble_scheduling", 0, "step", 2, "input_map", 0, "key")``.

    Every element of a repeated field (and every map entry, repeated keys included) gets
    its own index, in file order; singular fields have index 0.
    """

    where: dict[tuple, tuple[int, int]] = field(default_factory=dict)
    values: dict[tuple, str] = field(default_factory=dict)

    def line(self, *path, default: int | None = None) -> int | None:
        p = tuple(path)
        while p:
            if p in self.where:
                return self.where[p][0]
            p = p[:-1]
        return default

    def count(self, *path) -> int:
        n = 0
        while tuple(path) + (n,) in self.where:
            n += 1
        return n

    def value(self, *path) -> str | None:
        return self.values.get(tuple(path))


def locate(text: str) -> Locations:
    """Token walk over text that protobuf has already accepted; best effort, never raises."""
    loc = Locations()
    try:
        tok = text_format.Tokenizer(text.split("\n"))
        _walk(tok, (), loc)
    except Exception:  # noqa: BLE001 - locations are a nicety; never fail because of them
        pass
    return loc


def _walk(tok, prefix: tuple, loc: Locations) -> None:
    counters: dict[str, int] = {}
    while not tok.AtEnd() and tok.token not in ("}", ">"):
        line, col = tok._line + 1, tok._column + 1
        if tok.token == "[":  # extension or Any type URL
            parts = []
            tok.NextToken()
            while not tok.AtEnd() and tok.token != "]":
                parts.append(tok.token)
                tok.NextToken()
            tok.NextToken()
            name = "[" + "".join(parts) + "]"
        else:
            name = tok.token
            tok.NextToken()
        tok.TryConsume(":")

        def element(name=name, line=line, col=col):
            idx = counters.get(name, 0)
            counters[name] = idx + 1
            key = prefix + (name, idx)
            loc.where[key] = (line, col)
            return key

        if tok.token == "[":
            tok.NextToken()
            while not tok.AtEnd() and tok.token != "]":
                line, col = tok._line + 1, tok._column + 1
                key = element(line=line, col=col)
                _value(tok, key, loc)
                tok.TryConsume(",")
            tok.NextToken()
        else:
            key = element()
            _value(tok, key, loc)
        if not tok.TryConsume(","):
            tok.TryConsume(";")


def _value(tok, key: tuple, loc: Locations) -> None:
    if tok.token in ("{", "<"):
        tok.NextToken()
        _walk(tok, key, loc)
        tok.NextToken()  # closing brace
    elif tok.token[:1] in ("'", '"'):
        loc.values[key] = tok.ConsumeString()
    else:
        loc.values[key] = tok.token
        tok.NextToken()
