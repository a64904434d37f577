"""State objects of elastic training: what survives a failure.

commit() keeps a copy of the state in memory (on every rank); after a
failure the survivors restore() that copy, and sync() makes every rank,
including workers that just joined, equal to rank 0. Every rank counts its
commits since the last sync; when all ranks of the new world hold the same
commit (survivors of a failure), sync() broadcasts nothing; when only new
workers lack it, subclasses may stream it to them (_stream_state) while the
others go on.
"""
import copy
import os
import zlib

from ..basics import rank
from ..objects import allgather_object, broadcast_object
from ._worker import HostsUpdatedInterrupt, enabled, hosts_updated


class State:
    """Base class. Subclasses implement save, restore and sync."""

    def __init__(self):
        self._reset_callbacks = []
        # Commits since the first sync; None before it (a new worker's state
        # is nobody's commit).
        self._commit_id = None

    def register_reset_callbacks(self, callbacks):
        """Functions called (no arguments) after every re-initialisation, when
        the world size may have changed: e.g. to rescale the learning rate."""
        self._reset_callbacks.extend(callbacks)

    def on_reset(self):
        """Called by hvd.elastic.run after hvd was re-initialised."""
        self.reset()
        for callback in self._reset_callbacks:
            callback()

    def reset(self):
        """Hook for subclasses: rebuild what depends on the world size."""

    def commit(self):
        """Save the state, then raise HostsUpdatedInterrupt (on every rank
        alike) if the launcher changed the set of workers. Every rank must
        call it at the same step: it runs a broadcast."""
        self.save()
        self.check_host_updates()

    def check_host_updates(self):
        """Raise HostsUpdatedInterrupt on every rank if the launcher published
        a new round. Rank 0 asks the store and broadcasts the answer, so all
        ranks raise at the same step (a rank that raised alone would leave
        the others waiting in their next collective)."""
        updated = False
        if enabled() and rank() == 0:
            updated = hosts_updated()
        if broadcast_object(updated, root_rank=0, name="hvd.elastic.hosts_updated"):
            raise HostsUpdatedInterrupt()

    def save(self):
        raise NotImplementedError

    def restore(self):
        raise NotImplementedError

    def sync(self):
        raise NotImplementedError

    def restore_if_needed(self):
        """Go back to the last commit, copying only what changed since it
        (hvd.elastic.run(restore="if_needed")). Subclasses that can tell
        what changed override it; this one restores everything."""
        self.restore()

    def fingerprint(self):
        """A checksum of the current (not the committed) state, used by
        hvd.elastic.run(resume="current") to see whether every survivor
        holds the same state. Subclasses fold in what they keep."""
        return 0

    def _counted_save(self):
        if self._commit_id is not None:
            self._commit_id += 1

    def finish_pending(self):
        """Wait for work a commit left running in the background (an
        asynchronous copy, the commit's transfer to new workers); called by
        hvd.elastic.run before hvd is shut down and re-initialised."""

    def _need_broadcast(self):
        """Whether sync() must send anything (see _sync_plan)."""
        return self._sync_plan()[0] != "none"

    def _sync_plan(self):
        """What sync() must do, the same on every rank: ("none", []) when
        every rank holds the same commit (survivors that restored it);
        ("stream", new_ranks) when every rank but some new workers (no
        commit yet) holds rank 0's commit; ("broadcast", []) otherwise (the
        first sync, or a failure inside commit() that some ranks completed
        and others not). HVD_ELASTIC_STREAM_JOIN=0 turns "stream" into
        "broadcast"."""
        ids = allgather_object(self._commit_id, name="hvd.elastic.commit_id")
        return plan_for(ids)

    def keep_current_if_agreed(self):
        """For resume="current": keep the current state when every rank that
        was in the job before holds the same one (no update half applied);
        else restore the last commit. Returns True when kept."""
        mine = (self._commit_id, self.fingerprint() if self._commit_id is not None else None)
        views = allgather_object(mine, name="hvd.elastic.fingerprint")
        known = [v for v in views if v[0] is not None]
        kept = bool(known) and all(v[1] == known[0][1] for v in known)
        if kept and self._commit_id is not None:
            # The current state becomes everybody's next commit.
            self._commit_id = max(v[0] for v in known)
            self.save()
        elif not kept:
            self.restore()
        return kept


def env_flag(name, default):
    """A boolean environment variable, spelled as the core's are (1, true,
    yes, on / 0, false, no, off, empty)."""
    value = os.environ.get(name)
    if value is None:
        return default
    word = value.strip().lower()
    if word in ("1", "true", "yes", "on"):
        return True
    if word in ("0", "false", "no", "off", ""):
        return False
    raise ValueError("%s=%r: expected 1/true/yes/on or 0/false/no/off" % (name, value))


def plan_for(ids):
    """_sync_plan for the gathered commit ids of every rank (None: a rank
    without a commit)."""
    if ids[0] is None or any(i is not None and i != ids[0] for i in ids):
        return "broadcast", []
    new_ranks = [r for r, i in enumerate(ids) if i is None]
    if not new_ranks:
        return "none", []
    if not env_flag("HVD_ELASTIC_STREAM_JOIN", True):
        return "broadcast", []
    return "stream", new_ranks


class ObjectState(State):
    """Picklable values as attributes: ObjectState(epoch=0, batch=0, w=array).

    save() deep-copies them; restore() puts the copies back; sync() sets
    every rank to rank 0's last saved values."""

    def __init__(self, **kwargs):
        self._saved_state = {}
        super().__init__()
        for name, value in kwargs.items():
            setattr(self, name, value)
        self._names = list(kwargs)
        self.save()

    def _values(self):
        return {name: getattr(self, name) for name in self._names}

    def save(self):
        self._saved_state = copy.deepcopy(self._values())
        self._counted_save()

    def restore(self):
        self._restore_values()

    def fingerprint(self):
        import pickle
        return zlib.crc32(pickle.dumps(self._values()))

    def sync(self):
        plan, new_ranks = self._sync_plan()
        if plan == "none":
            return
        if plan == "stream":
            self._stream_state(new_ranks)
        else:
            self._broadcast_state()
        self._commit_id = broadcast_object(self._commit_id or 0, root_rank=0,
                                           name="hvd.elastic.commit_id")

    def _broadcast_state(self):
        """Make every rank equal to rank 0's last commit."""
        if self._names:
            self._saved_state = broadcast_object(self._saved_state, root_rank=0,
                                                 name="hvd.elastic.object_state")
            self._restore_values()

    def _stream_state(self, new_ranks):
        """Give rank 0's last commit to `new_ranks`, whose commit is the only
        one missing. Subclasses stream large state; plain values are small
        enough to broadcast."""
        self._broadcast_state()

    def _restore_values(self):
        # Not restore(): subclasses extend restore() with more state, which
        # sync() must not roll back after broadcasting it.
        for name, value in copy.deepcopy(self._saved_state).items():
            setattr(self, name, value)
