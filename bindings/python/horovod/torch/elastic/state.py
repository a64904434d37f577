"""horovod.torch.elastic.state."""
from hvd.torch.elastic import ObjectState, State, TorchState  # noqa: F401
