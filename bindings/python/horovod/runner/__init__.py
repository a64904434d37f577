"""horovod.runner: Horovod's launcher is hvdrun (installed also as horovodrun)."""
