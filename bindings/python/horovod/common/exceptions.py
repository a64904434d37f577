"""horovod.common.exceptions: hvd's exceptions under Horovod's names."""
from hvd import HvdInternalError as HorovodInternalError  # noqa: F401
from hvd.elastic import HostsUpdatedInterrupt  # noqa: F401
