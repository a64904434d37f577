"""State objects of elastic training: what survives a failure.

commit() keeps a copy of the state in memory (on every rank); after a
failure the survivors restore() that copy, and sync() makes every rank,
including workers that just joined, equal to rank 0.
"""
import copy

from ..basics import rank
from ..objects import broadcast_object
from ._worker import HostsUpdatedInterrupt, enabled, hosts_updated


class State:
    """Base class. Subclasses implement save, restore and sync."""

    def __init__(self):
        self._reset_callbacks = []

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

    def restore(self):
        self._restore_values()

    def sync(self):
        if self._names:
            self._saved_state = broadcast_object(self._saved_state, root_rank=0,
                                                 name="hvd.elastic.object_state")
            self._restore_values()

    def _restore_values(self):
        # Not restore(): subclasses extend restore() with more state, which
        # sync() must not roll back after broadcasting it.
        for name, value in copy.deepcopy(self._saved_state).items():
            setattr(self, name, value)
