"""A deadline on the process's exit that holds while a native call keeps the GIL.

rclpy tears a node down in native calls that keep the GIL (``rcl_node_fini``, the context's
shutdown): when one of them never returns (a deadlock inside DDS, seen when many participants of
one domain leave at the same moment), no Python thread runs again and only a kill ends the
process. :class:`ExitDeadline` runs the deadline on a native thread of its own (a compiled C
callback started by ``pthread_create``): at the deadline it writes its line on stderr and ends
the process with ``_exit``, whatever the other threads hold.

The node arms it once its zero command is sent: what is left (the executor, the node's
handles, the context) releases DDS resources and commands nothing.
"""

from __future__ import annotations

import ctypes
import math
from typing import Any

import numpy as np
from numba import carray, cfunc, types

_LIBC = ctypes.CDLL(None)
# the C library's calls of the compiled thread, bound by name (a compiled function that holds
# ctypes pointers cannot be cached); the message's address as a 64-bit integer: the same
# register as a pointer on x86-64 and arm64
_usleep: Any = types.ExternalFunction("usleep", types.int32(types.uint32))
_write: Any = types.ExternalFunction("write", types.int64(types.int32, types.int64, types.int64))
_exit: Any = types.ExternalFunction("_exit", types.void(types.int32))
_pthread_create = _LIBC.pthread_create
_pthread_create.argtypes = [
    ctypes.POINTER(ctypes.c_ulong),
    ctypes.c_void_p,
    ctypes.c_void_p,
    ctypes.c_void_p,
]
_pthread_create.restype = ctypes.c_int
_pthread_detach = _LIBC.pthread_detach
_pthread_detach.argtypes = [ctypes.c_ulong]
_pthread_detach.restype = ctypes.c_int

#: [us] The longest single sleep of the deadline's thread (``usleep`` may refuse 1 s or more).
_STEP_US = 100_000


@cfunc(types.voidptr(types.voidptr), cache=True)
def _deadline_thread(arg: Any) -> Any:  # compiled: a pthread start routine
    """Sleep ``a[0]`` us, write ``a[3]`` bytes at address ``a[2]`` on fd 2, ``_exit(a[1])``."""
    a = carray(arg, 4, dtype=np.int64)
    left = a[0]
    while left > 0:
        step = min(left, _STEP_US)
        _usleep(step)
        left -= step
    _write(2, a[2], a[3])
    _exit(a[1])
    return arg


class ExitDeadline:
    """Ends the process with a status at a deadline, on a native thread that needs no GIL.

    Armed once; the process exiting first ends the thread with it. Keep the object alive until
    the process exits (it owns the thread's arguments and message).
    """

    def __init__(self) -> None:
        self._args = np.zeros(4, dtype=np.int64)
        self._message = b""
        self.armed = False

    def arm(self, seconds: float, status: int, message: str) -> None:
        """End the process with ``status`` after ``seconds`` [s], ``message`` on stderr first.

        Raises:
            ValueError: ``seconds`` not finite and > 0, or ``status`` outside 0-255.
            RuntimeError: armed already, or the thread could not start.
        """
        if self.armed:
            raise RuntimeError("the exit deadline is armed already")
        if not (math.isfinite(seconds) and seconds > 0.0):
            raise ValueError(f"the exit deadline must be finite and > 0 s, got {seconds!r}")
        if not 0 <= status <= 255:
            raise ValueError(f"exit status must be 0-255, got {status}")
        self._message = message.rstrip("\n").encode("utf-8", "replace") + b"\n"
        buf = ctypes.create_string_buffer(self._message, len(self._message))
        self._buf = buf  # kept alive: the thread reads it at the deadline
        self._args[:] = (
            round(seconds * 1e6),
            status,
            ctypes.addressof(buf),
            len(self._message),
        )
        tid = ctypes.c_ulong()
        rc = _pthread_create(
            ctypes.byref(tid), None, _deadline_thread.address, self._args.ctypes.data
        )
        if rc != 0:
            raise RuntimeError(f"the exit deadline's thread did not start (pthread_create: {rc})")
        _pthread_detach(tid.value)
        self.armed = True


__all__ = ["ExitDeadline"]
