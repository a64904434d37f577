"""horovod.common.elastic: hvd.elastic's state classes and run."""
from hvd.elastic import ObjectState, State, run  # noqa: F401
