"""This worker's view of the elastic launcher (the C functions hvd_elastic_*)."""
from .. import hvd_c as _c
from .._errors import check


class HostsUpdatedInterrupt(Exception):
    """The launcher changed the set of workers (hosts added or lost). Raised
    by State.commit / State.check_host_updates on every rank at the same
    step; hvd.elastic.run catches it and re-initialises without restoring
    (the state was just committed)."""


def enabled():
    """True when this process was started as an elastic worker (HVD_ELASTIC=1)."""
    return bool(_c.hvd_elastic_enabled())


def current_round():
    """The launcher's round this worker joined at its last hvd.init (-1 before)."""
    return int(_c.hvd_elastic_round())


def hosts_updated():
    """True when the launcher published a round newer than the joined one.
    Asks the rendezvous store: call it once per commit, on one rank."""
    status, updated = _c.hvd_elastic_hosts_updated()
    check(status)
    return bool(updated)
