"""horovod.torch.compression: hvd.torch's names."""
from hvd.torch import Compression, Compressor  # noqa: F401
