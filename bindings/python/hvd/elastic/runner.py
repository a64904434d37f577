"""hvd.elastic.run: the retry loop around a training function."""
import functools
import logging

from .. import basics
from .._errors import HvdInternalError, HvdShutdownError, HvdTimeoutError
from ._worker import HostsUpdatedInterrupt

_log = logging.getLogger("hvd.elastic")

# What a lost or hung peer looks like to this rank: the lost peer itself
# (HvdPeerLostError, an HvdInternalError), a peer that froze (timeout), or a
# peer that shut hvd down after its own failure.
_RECOVERABLE = (HvdInternalError, HvdTimeoutError, HvdShutdownError)


def _reinit():
    try:
        basics.shutdown()
    except Exception as exc:  # a broken world may report its error again here
        _log.debug("hvd.shutdown during elastic reset: %s", exc)
    basics.init()


def run(func):
    """Decorator: ``func(state, *args, **kwargs)`` is retried until it
    returns. Before each attempt the state is synced from rank 0 (initialising
    hvd first if needed). On a lost peer the state is restored to its last
    commit; on HostsUpdatedInterrupt it is kept. Either way hvd is shut down
    and re-initialised (joining the launcher's next round) and the state's
    reset callbacks run. Other exceptions propagate."""

    @functools.wraps(func)
    def wrapper(state, *args, **kwargs):
        if not basics.is_initialized():
            basics.init()
        reset_needed = False
        while True:
            if reset_needed:
                try:
                    _reinit()
                except _RECOVERABLE as exc:
                    # E.g. a peer of the joined round vanished before the
                    # world was built: this worker asks for the next round.
                    _log.warning("re-initialisation failed (%s); trying the next round", exc)
                    continue
                state.on_reset()
            try:
                state.sync()
                return func(state, *args, **kwargs)
            except HostsUpdatedInterrupt:
                _log.info("workers changed; re-forming the job")
            except _RECOVERABLE as exc:
                _log.warning("collective failed (%s); restoring the last commit", exc)
                state.restore()
            reset_needed = True

    return wrapper
