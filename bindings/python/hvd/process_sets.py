"""Process sets: collectives over a subset of the ranks."""
from . import hvd_c as _c
from ._errors import check, HvdInvalidArgument


class ProcessSet:
    """A set of ranks. Create it with the ranks, register it with
    add_process_set (collective over all ranks), then pass it as
    `process_set=` to any collective."""

    def __init__(self, ranks):
        self.ranks = sorted(int(r) for r in ranks)
        self.process_set_id = None  # assigned by add_process_set

    def _id(self):
        if self.process_set_id is None:
            raise HvdInvalidArgument("process set %s was not added (hvd.add_process_set)" % self.ranks)
        return self.process_set_id

    def rank(self):
        """This rank's rank inside the set, -1 if not a member."""
        return _c.hvd_process_set_rank(self._id())

    def size(self):
        return _c.hvd_process_set_size(self._id())

    def included(self):
        return bool(_c.hvd_process_set_included(self._id()))

    def __repr__(self):
        return "ProcessSet(id=%s, ranks=%s)" % (self.process_set_id, self.ranks)


class _GlobalProcessSet(ProcessSet):
    """All ranks (id 0); exists without registration."""

    def __init__(self):
        super().__init__([])
        self.process_set_id = 0

    def __repr__(self):
        return "global_process_set"


global_process_set = _GlobalProcessSet()
_added = []  # sets registered in this hvd session, unregistered by shutdown


def add_process_set(process_set):
    """Register a ProcessSet (or a list of ranks); collective over all ranks.
    Returns the ProcessSet with its id assigned."""
    ps = process_set if isinstance(process_set, ProcessSet) else ProcessSet(process_set)
    status, new_id = _c.hvd_add_process_set(ps.ranks)
    check(status)
    ps.process_set_id = new_id
    _added.append(ps)
    return ps


def remove_process_set(process_set):
    """Unregister a set; collective over all ranks."""
    check(_c.hvd_remove_process_set(process_set._id()))
    process_set.process_set_id = None
    if process_set in _added:
        _added.remove(process_set)


def set_id(process_set):
    """The C id of a process_set argument (None means all ranks)."""
    return 0 if process_set is None else process_set._id()


def _forget_all():
    for ps in _added:
        ps.process_set_id = None
    _added.clear()
