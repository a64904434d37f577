"""horovod.torch.elastic: hvd.torch.elastic under Horovod's names."""
from hvd.torch.elastic import (ElasticSampler, HostsUpdatedInterrupt, ObjectState,  # noqa: F401
                               State, TorchState, run)

__all__ = ["TorchState", "ElasticSampler", "run"]
