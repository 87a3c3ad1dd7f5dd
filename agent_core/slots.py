"""A dataclass's repr, `copy` and (for `ValueSlots`) equality for classes whose fields are their
`__slots__`, each with its own `__init__`. The status line and `ctxtui usage` run again and again,
and importing dataclasses (with inspect and ast) was a sixth of their start."""
from __future__ import annotations


class Slots:
    """repr and `copy` (dataclasses.replace); compared by identity."""

    __slots__: tuple[str, ...] = ()

    def copy(self, **changes):
        """A shallow copy with `changes`."""
        return type(self)(**{**{n: getattr(self, n) for n in self.__slots__}, **changes})

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{n}={getattr(self, n)!r}' for n in self.__slots__)})"


class ValueSlots(Slots):
    """Also compared field by field, and so unhashable, as a dataclass is."""

    __slots__: tuple[str, ...] = ()
    __hash__ = None     # type: ignore[assignment]

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, n) == getattr(other, n) for n in self.__slots__)
