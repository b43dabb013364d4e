"""A compiled kernel's call without numba's dispatch, for the calls every tick makes.

Calling a numba dispatcher types each argument and looks up the compiled variant for those
types, then converts each argument and calls the variant: for a tick's compiled call that takes
a structure and a few values, the typing and the lookup cost more than the conversion. A caller
whose arguments keep their types from call to call resolves the variant once
(:func:`entry_point`) and calls it directly: the arguments are still converted as the
variant's types say, but nothing checks them against those types. So only for arguments whose
types cannot change: a structure made by a compiled constructor (its type is fixed where it is
made), Python floats and ints (a float's place also takes an int), and arrays the caller made
itself (float64, C-contiguous, writable) or checked to be so; or a kernel compiled for one
explicit signature, whose argument types say what each argument is converted to (an ``"A"``
array of any layout).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from numba import typeof


def entry_point(dispatcher: Any, args: tuple[Any, ...] | None = None) -> Callable[..., Any]:
    """The compiled variant of ``dispatcher`` for the types of ``args``, as a plain callable.

    Loaded from numba's cache, or compiled, when the dispatcher has none yet for those types
    (as its first call with ``args`` would).

    Args:
        dispatcher: a numba ``@njit`` function.
        args: example arguments, of the types every later call passes; None: the
            dispatcher's one explicit signature (given to ``@njit``, compiled as it was
            defined), whose arguments convert what a call passes (an ``"A"`` array takes any
            layout).

    Raises:
        ValueError: no ``args`` and the dispatcher has not exactly one compiled variant.

    Returns:
        The variant's entry point: call it with arguments of those types only. A
        ``dispatcher`` that is not one (a Python function that wraps it, as a benchmark's
        timer) is returned as it is.
    """
    if not hasattr(dispatcher, "compile"):
        return dispatcher
    if args is None:
        sigs = dispatcher.signatures
        if len(sigs) != 1:
            raise ValueError(f"{dispatcher.__name__} has {len(sigs)} compiled variants, not one")
        return dispatcher.overloads[sigs[0]].entry_point
    return dispatcher.compile(tuple(typeof(a) for a in args))


__all__ = ["entry_point"]
