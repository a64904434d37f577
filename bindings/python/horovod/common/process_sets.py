"""horovod.common.process_sets: hvd's process sets."""
from hvd import (ProcessSet, add_process_set, global_process_set,  # noqa: F401
                 remove_process_set)
