"""Horovod's module names over hvd (docs/migrating-from-horovod.md).

`import horovod.torch as hvd` loads hvd.torch, so a Horovod 0.28 script
runs unchanged. This package is a layer of names only: every function it
exports is hvd's own. It ships apart from hvd (python3-hvd-horovod-compat,
or the build tree's python/horovod); remove it to get "no module named
horovod" back.
"""
import os as _os

import hvd as _hvd

__version__ = _hvd.__version__

# horovodrun gives every rank HOROVOD_RANK, HOROVOD_SIZE, ... and Horovod
# programs (and Horovod's tests) read them to learn they run under Gloo;
# hvdrun names them HVD_*. Mirror them, never overriding what is set.
for _name in ("RANK", "SIZE", "LOCAL_RANK", "LOCAL_SIZE", "CROSS_RANK", "CROSS_SIZE",
              "HOSTNAME"):
    if "HVD_" + _name in _os.environ and "HOROVOD_" + _name not in _os.environ:
        _os.environ["HOROVOD_" + _name] = _os.environ["HVD_" + _name]
