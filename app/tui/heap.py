"""The TUI's heap after start-up, settled for the cyclic collector.

A running TUI holds a large, long-lived heap (Textual's widgets, styles and caches, the loaded
modules, the conversation's drawn lines): about 150,000 tracked objects, which every full
collection walks again, about 45 ms each time, a full collection every four or five demo turns.
Once the first frame is drawn, what survived start-up is collected once and frozen (the collector
no longer walks it), and the oldest generation is collected a quarter as often. Measured over 300
demo turns: full collections 9.6 -> 1.8 ms a turn, for about 3 MB more memory (cyclic garbage
waits longer). A demo turn makes about 17,000 new tracked objects (strips and their caches, styles,
messages), most dead within the turn: collecting the youngest generation every 20,000 rather than
every 700 (25 young and 2.3 middle collections a turn, 6 ms, walking objects that would have died
anyway) costs 3.4 ms a turn in all, each young collection under 2 ms. `restore` undoes all of it
when the app ends, so a process that goes on (tests, the benchmarks' headless baseline) runs with
the settings it had.

Before that, the `ctxtui` command holds the collector off from the moment it knows it opens the
TUI (`hold`) until that first collection: start-up builds the whole heap, and the collections
that ran while it grew walked it again and again, about 35 ms of the first paint. Cyclic garbage
made meanwhile is collected by `settle`, a moment later; `release` turns the collector back on
when the app ends without a first frame (a setting error, the trust question answered "quit")."""
from __future__ import annotations

import gc
from dataclasses import dataclass

# the oldest generation is collected after this many collections of the middle one (Python's: 10)
OLDEST_EVERY = 40
# the youngest is collected after this many new tracked objects (Python's: 700)
YOUNG_EVERY = 20_000


@dataclass(frozen=True)
class Settled:
    """The collector's settings before `settle`, to put back."""
    threshold: tuple[int, int, int]

    def restore(self) -> None:
        gc.unfreeze()
        gc.set_threshold(*self.threshold)


_held = False


def hold() -> None:
    """No automatic collection until `settle` (or `release`); a no-op when the collector is off."""
    global _held
    if gc.isenabled():
        gc.disable()
        _held = True


def release() -> None:
    """The collector back on, if `hold` turned it off and `settle` has not."""
    global _held
    if _held:
        gc.enable()
        _held = False


def settle() -> Settled:
    """Collect once, freeze what is left, and collect the oldest generation less often (and turn
    the collector back on when `hold` held it)."""
    young, middle, oldest = gc.get_threshold()
    gc.collect()
    gc.freeze()
    gc.set_threshold(max(young, YOUNG_EVERY), middle, max(oldest, OLDEST_EVERY))
    release()
    return Settled((young, middle, oldest))
