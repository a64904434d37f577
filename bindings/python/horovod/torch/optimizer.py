"""horovod.torch.optimizer: hvd.torch's names."""
from hvd.torch import DistributedOptimizer  # noqa: F401
