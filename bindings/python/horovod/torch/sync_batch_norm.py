"""horovod.torch.sync_batch_norm: hvd.torch's names."""
from hvd.torch import SyncBatchNorm  # noqa: F401
