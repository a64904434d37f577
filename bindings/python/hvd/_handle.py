"""Handles of asynchronous operations.

A Handle owns one hvd_handle plus the Python objects whose memory the
operation uses. Memory must outlive the operation, so a Handle dropped while
its operation is still running is parked in `_orphans` and released by a
later sweep once the operation has finished, never freed under hvd's feet.
"""
import threading

from . import hvd_c as _c
from ._errors import HvdTimeoutError, error_for

_orphans = []  # (hvd_handle, keepalive) of dropped, still running operations
_orphans_lock = threading.Lock()


def sweep_orphans(force=False):
    """Release dropped handles whose operations finished (all if force: after
    shutdown every operation has finished)."""
    with _orphans_lock:
        still = []
        for hid, keep in _orphans:
            if force or _c.hvd_poll(hid) != _c.HVD_IN_PROGRESS:
                _c.hvd_release(hid)
            else:
                still.append((hid, keep))
        _orphans[:] = still


class Handle:
    """The pending result of an *_async call.

    poll() -> bool: finished? (never blocks). wait(timeout=None) -> result:
    blocks (without holding the GIL) and returns the operation's result, or
    raises its error as an HvdError. release(): forget the handle early."""

    def __init__(self, hid, keep, finish=None):
        self._id = hid
        self._keep = keep          # objects whose memory the operation uses
        self._finish = finish      # hid -> result; called once on success
        self._done = False
        self._result = None
        self._error = None

    def poll(self):
        if self._done:
            return True
        status = _c.hvd_poll(self._id)
        if status == _c.HVD_IN_PROGRESS:
            return False
        self._complete(status)
        return True

    def wait(self, timeout=None):
        if not self._done:
            ms = -1 if timeout is None else max(0, int(timeout * 1000))
            status = _c.hvd_wait(self._id, ms)
            if status == _c.HVD_ERR_TIMEOUT and _c.hvd_poll(self._id) == _c.HVD_IN_PROGRESS:
                # Our wait ran out; the operation goes on and may be waited on again.
                raise HvdTimeoutError("hvd: operation still running after %ss" % timeout, status)
            self._complete(status)
        if self._error is not None:
            raise self._error
        return self._result

    def _complete(self, status):
        try:
            if status == _c.HVD_OK:
                if self._finish is not None:
                    self._result = self._finish(self._id)
            else:
                self._error = error_for(status)  # reads hvd_last_error first
        except Exception as exc:  # a failed finish must still release below
            self._error = exc
        finally:
            self._done = True
            _c.hvd_release(self._id)
            self._keep = None
            self._finish = None

    def release(self):
        """Forget the operation; its result is discarded. Memory stays
        referenced until it completes."""
        if self._done:
            return
        self._done = True
        with _orphans_lock:
            _orphans.append((self._id, self._keep))
        self._keep = None
        self._finish = None

    def __del__(self):
        try:
            self.release()
        except Exception:  # interpreter shutdown: modules may be gone
            pass


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
