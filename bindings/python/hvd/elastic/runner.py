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


def run(func=None, *, resume="commit", restore="always"):
    """Decorator: ``func(state, *args, **kwargs)`` is retried until it
    returns. Before each attempt the state is synced from rank 0 (initialising
    hvd first if needed; nothing is sent when every rank already holds the
    same commit). On a lost peer hvd is shut down and re-initialised in
    place (the survivors form the launcher's next, smaller round; no process
    restarts) and the state goes back to its last commit; on
    HostsUpdatedInterrupt it is kept. Either way the state's reset callbacks
    run. Other exceptions propagate.

    resume="current" (opt-in, use as ``@hvd.elastic.run(resume="current")``):
    after a lost peer, keep the current state instead of the last commit
    when every survivor holds exactly the same one (a failure in a
    collective before any rank applied the step's update); otherwise the
    last commit as usual.

    restore="if_needed" (opt-in): going back to the last commit copies only
    what changed since it (state.restore_if_needed()). A failure raised
    before optimizer.step() began, e.g. in backward or in the gradient
    allreduce, then copies no parameter and no optimizer state. It relies
    on tensors being changed in place by torch operations (as torch.optim
    does), which it sees by their version counters; a change made through
    `.data` or by other code writing the memory is not seen."""
    if resume not in ("commit", "current"):
        raise ValueError("hvd.elastic.run: resume must be 'commit' or 'current', not %r" % (resume,))
    if restore not in ("always", "if_needed"):
        raise ValueError("hvd.elastic.run: restore must be 'always' or 'if_needed', not %r" %
                         (restore,))
    if func is None:
        return lambda f: run(f, resume=resume, restore=restore)

    @functools.wraps(func)
    def wrapper(state, *args, **kwargs):
        if not basics.is_initialized():
            basics.init()
        reset_needed = False
        agree = False  # resume="current": compare the survivors' states first
        while True:
            if reset_needed:
                # A commit's background copy or its transfer to a new worker
                # must be over before the world they use goes away.
                try:
                    state.finish_pending()
                except _RECOVERABLE as exc:
                    _log.warning("background work of the last commit failed: %s", exc)
                try:
                    _reinit()
                except _RECOVERABLE as exc:
                    # E.g. a peer of the joined round vanished before the
                    # world was built: this worker asks for the next round.
                    _log.warning("re-initialisation failed (%s); trying the next round", exc)
                    continue
                state.on_reset()
            try:
                if agree:
                    agree = False
                    if state.keep_current_if_agreed():
                        _log.info("every survivor holds the same state; going on from it")
                state.sync()
                return func(state, *args, **kwargs)
            except HostsUpdatedInterrupt:
                _log.info("workers changed; re-forming the job")
            except _RECOVERABLE as exc:
                _log.warning("collective failed (%s); re-forming the job", exc)
                if resume == "current":
                    agree = True
                elif restore == "if_needed":
                    state.restore_if_needed()
                else:
                    state.restore()
            reset_needed = True

    return wrapper
