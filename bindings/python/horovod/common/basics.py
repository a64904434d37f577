"""horovod.common.basics: hvd's start/stop and topology functions."""
from hvd.basics import *  # noqa: F401,F403
