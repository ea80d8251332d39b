"""The buffer rule of parley.h (ask for the size with cap = 0, then fill) as two helpers."""

import ctypes

from .errors import check


def read_ids(call, check=check, likely_cap=0):
    """`call(ids, cap, needed)` fills int32 ids; returns them as a list. `check` turns a
    failed status into its exception. With `likely_cap`, a first call with that room saves
    the call that asks for the size when it is enough."""
    needed = ctypes.c_size_t(0)
    if likely_cap > 0:
        ids = (ctypes.c_int32 * likely_cap)()
        check(call(ids, likely_cap, ctypes.byref(needed)))
        if needed.value <= likely_cap:
            return ids[:needed.value]
    else:
        check(call(None, 0, ctypes.byref(needed)))
    while True:
        cap = needed.value
        ids = (ctypes.c_int32 * max(cap, 1))()
        check(call(ids, cap, ctypes.byref(needed)))
        if needed.value <= cap:  # else it grew in between: ask again
            return ids[:needed.value]


def read_text(call, check=check):
    """`call(buf, cap, needed)` fills a NUL-terminated string; returns it decoded. `check`
    as for read_ids."""
    needed = ctypes.c_size_t(0)
    check(call(None, 0, ctypes.byref(needed)))
    while True:
        cap = needed.value
        buf = ctypes.create_string_buffer(max(cap, 1))
        check(call(buf, cap, ctypes.byref(needed)))
        if needed.value <= cap:
            # A token may end inside a UTF-8 sequence; show that, do not fail on it.
            return buf.raw[:max(needed.value - 1, 0)].decode("utf-8", errors="replace")
