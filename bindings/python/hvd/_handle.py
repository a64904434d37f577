"""Handles of asynchronous operations.

`Handle` is implemented in C (bindings/python/hvd_fast.c, module
hvd._hvd_fast) because every gradient of every training step gets one: it
owns one hvd_handle plus the Python objects whose memory the operation uses.
Memory must outlive the operation, so a Handle dropped (or released) while
its operation is still running is parked with those objects and released by
a later sweep once the operation has finished, never freed under hvd's feet.
"""
import threading

from . import _hvd_fast
from ._errors import HvdTimeoutError, error_for
from .process_sets import global_process_set

# The C side raises hvd's own exceptions and recognises the global set.
_hvd_fast.setup(global_process_set, error_for, HvdTimeoutError)

# Handle(hid, keep, finish=None): poll() -> bool (never blocks);
# wait(timeout=None) -> the result (finish(hid) on success), blocking without
# the GIL, raising the operation's error or HvdTimeoutError; release().
Handle = _hvd_fast.Handle


def sweep_orphans(force=False):
    """Release dropped handles whose operations finished (all if force: after
    shutdown every operation has finished)."""
    _hvd_fast.sweep(force)


class ThreadHandle:
    """Handle-like wrapper running a blocking call on a thread (barrier and
    join have no asynchronous C form); the C call releases the GIL."""

    def __init__(self, fn):
        self._result = None
        self._error = None
        self._thread = threading.Thread(target=self._run, args=(fn,), daemon=True)
        self._thread.start()

    def _run(self, fn):
        try:
            self._result = fn()
        except Exception as exc:
            self._error = exc

    def poll(self):
        return not self._thread.is_alive()

    def wait(self, timeout=None):
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise HvdTimeoutError("hvd: operation still running after %ss" % timeout)
        if self._error is not None:
            raise self._error
        return self._result

    def release(self):
        pass
