"""Exceptions raised for hvd status codes; each carries the C message.

The hierarchy lets callers catch what they can handle: elastic training
catches HvdInternalError (a peer was lost or the backend failed) and restarts
from the last commit, while HvdMismatchError points at a program bug.
"""
from . import hvd_c as _c


class HvdError(RuntimeError):
    """Base class: an hvd call returned an error status."""

    def __init__(self, message, status=None):
        super().__init__(message)
        self.status = status
        self.message = message


class HvdNotInitializedError(HvdError):
    """hvd.init() has not been called (or hvd was shut down)."""


class HvdAlreadyInitializedError(HvdError):
    """hvd.init() was called twice without shutdown() in between."""


class HvdInvalidArgument(HvdError, ValueError):
    """A bad argument: dtype, layout, handle, rank, ..."""


class HvdMismatchError(HvdError):
    """Ranks disagree on the shape, dtype, op or root of a collective."""


class HvdShutdownError(HvdError):
    """hvd was (or is being) shut down while the operation was pending."""


class HvdInternalError(HvdError):
    """The job cannot go on as is: a backend failed, a peer was lost, or a
    bug in hvd. Elastic training catches this and restores its state."""


class HvdBackendError(HvdInternalError):
    """MPI, Gloo or NCCL reported an error."""


class HvdPeerLostError(HvdInternalError):
    """Another rank died or disconnected."""


class HvdTimeoutError(HvdError, TimeoutError):
    """A wait or a peer exceeded its timeout."""


class HvdUnsupportedError(HvdError, NotImplementedError):
    """Not available in this build or with this backend."""


_BY_STATUS = {
    _c.HVD_ERR_NOT_INITIALIZED: HvdNotInitializedError,
    _c.HVD_ERR_INVALID_ARGUMENT: HvdInvalidArgument,
    _c.HVD_ERR_MISMATCH: HvdMismatchError,
    _c.HVD_ERR_SHUT_DOWN: HvdShutdownError,
    _c.HVD_ERR_BACKEND: HvdBackendError,
    _c.HVD_ERR_PEER_LOST: HvdPeerLostError,
    _c.HVD_ERR_TIMEOUT: HvdTimeoutError,
    _c.HVD_ERR_UNSUPPORTED: HvdUnsupportedError,
    _c.HVD_ERR_INTERNAL: HvdInternalError,
    _c.HVD_ERR_ALREADY_INITIALIZED: HvdAlreadyInitializedError,
}


def error_for(status, message=None):
    """The exception for `status`. Read hvd_last_error() right after the
    failing call: any later hvd call on this thread may overwrite it."""
    if message is None:
        message = _c.hvd_last_error() or _c.hvd_status_string(status)
    return _BY_STATUS.get(status, HvdError)(message, status)


def check(status):
    """Raise for an error status; return non-error statuses unchanged."""
    if status < 0:
        raise error_for(status)
    return status
