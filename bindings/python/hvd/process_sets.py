"""Process sets: collectives over a subset of the ranks."""
from . import hvd_c as _c
from ._errors import check, HvdInvalidArgument


class ProcessSet:
    """A set of ranks. Create it with the ranks, register it with
    add_process_set (collective over all ranks), then pass it as
    `process_set=` to any collective."""

    mpi_comm = None  # Horovod's attribute; hvd takes mpi4py communicators in init(comm=)

    def __init__(self, ranks):
        if isinstance(ranks, ProcessSet):
            ranks = ranks.ranks
        try:
            self.ranks = sorted(int(r) for r in ranks)
        except (TypeError, ValueError):
            raise HvdInvalidArgument("ProcessSet takes a list of ranks, not %r" % (ranks,)) from None
        self.process_set_id = None  # assigned by add_process_set

    def _id(self):
        if self.process_set_id is None:
            raise HvdInvalidArgument("process set %s was not added (hvd.add_process_set)" % self.ranks)
        return self.process_set_id

    def _empty(self):
        return not self.ranks and self.process_set_id is None

    def rank(self):
        """This rank's rank inside the set, -1 if not a member."""
        return -1 if self._empty() else _c.hvd_process_set_rank(self._id())

    def size(self):
        return 0 if self._empty() else _c.hvd_process_set_size(self._id())

    def included(self):
        if self.process_set_id is None:  # Horovod answers from the ranks alone
            from .basics import rank
            return rank() in self.ranks
        return bool(_c.hvd_process_set_included(self._id()))

    def __repr__(self):
        return "ProcessSet(id=%s, ranks=%s)" % (self.process_set_id, self.ranks)


class _GlobalProcessSet(ProcessSet):
    """All ranks (id 0); exists without registration."""

    def __init__(self):
        super().__init__([])
        self.process_set_id = 0

    @property
    def ranks(self):
        """Every rank of the job (empty before init), as in Horovod."""
        n = _c.hvd_size()
        return list(range(n)) if n > 0 else []

    @ranks.setter
    def ranks(self, _value):
        pass

    def __repr__(self):
        return "global_process_set"


global_process_set = _GlobalProcessSet()
# Sets registered in this hvd session, by their ranks: [id, how many
# add_process_set calls hold it]. Every rank adds and removes the same sets
# in the same order, so every rank's table agrees. shutdown() clears it.
_registered = {}
_added = []  # ProcessSet objects holding an id, unbound by shutdown


def add_process_set(process_set):
    """Register a ProcessSet (or a list of ranks); collective over all ranks.
    Returns the ProcessSet with its id assigned.

    As Horovod's callers expect: a set with the ranks of one registered
    already (or of all ranks) gets that set's id instead of an error, and
    remove_process_set unregisters it when every add has been undone. An
    empty rank list gives a ProcessSet that is not registered (no rank can
    use it)."""
    ps = process_set if isinstance(process_set, ProcessSet) else ProcessSet(process_set)
    key = tuple(ps.ranks)
    if ps is global_process_set or not key:
        return ps
    if list(key) == global_process_set.ranks:
        ps.process_set_id = 0
        return ps
    entry = _registered.get(key)
    if entry is not None:
        if ps.process_set_id != entry[0]:  # a second object for the same ranks
            entry[1] += 1
            ps.process_set_id = entry[0]
            _added.append(ps)
        return ps
    status, new_id = _c.hvd_add_process_set(ps.ranks)
    check(status)
    _registered[key] = [new_id, 1]
    ps.process_set_id = new_id
    _added.append(ps)
    return ps


def remove_process_set(process_set):
    """Unregister a set; collective over all ranks. Returns True if this
    call removed `process_set`'s registration, False if it held none (never
    added, removed already, or all ranks), as Horovod."""
    if process_set is global_process_set or process_set.process_set_id in (None, 0):
        if process_set is not global_process_set:
            process_set.process_set_id = None
        return False
    key = tuple(process_set.ranks)
    entry = _registered.get(key)
    if entry is not None and entry[0] == process_set.process_set_id:
        entry[1] -= 1
        if entry[1] == 0:
            del _registered[key]
            check(_c.hvd_remove_process_set(process_set.process_set_id))
    else:  # registered outside this table (e.g. an id set by hand): let hvd judge
        check(_c.hvd_remove_process_set(process_set._id()))
    process_set.process_set_id = None
    if process_set in _added:
        _added.remove(process_set)
    return True


def set_id(process_set):
    """The C id of a process_set argument (None means all ranks)."""
    return 0 if process_set is None else process_set._id()


def _forget_all():
    for ps in _added:
        ps.process_set_id = None
    _added.clear()
    _registered.clear()
