"""Elastic training: keep training when workers die or hosts come and go.

Start the job with ``hvdrun --min-np A --max-np B --host-discovery-script S``
(or ``--elastic -H ...``) and wrap the training function::

    import hvd, hvd.elastic

    hvd.init()
    state = hvd.elastic.ObjectState(epoch=0, batch=0, weights=w)

    @hvd.elastic.run
    def train(state):
        while state.epoch < epochs:
            ...                     # collectives
            state.batch += 1
            state.commit()          # save; may raise HostsUpdatedInterrupt

    train(state)

When a peer is lost, the collectives raise HvdInternalError; ``run`` restores
the last commit, re-initialises hvd (joining the launcher's next round with
the survivors), syncs the state from rank 0 (nothing to send when every
rank holds the same commit; streamed to joining workers) and calls
``train`` again.
When hosts were added, ``commit`` raises HostsUpdatedInterrupt on every rank
at the same step and ``run`` re-initialises without restoring. See
docs/elastic.md.
"""
from ._worker import HostsUpdatedInterrupt, current_round, enabled, hosts_updated
from .runner import run
from .state import ObjectState, State

__all__ = ["HostsUpdatedInterrupt", "ObjectState", "State", "current_round", "enabled",
           "hosts_updated", "run"]
