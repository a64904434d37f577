"""horovod.runner.util."""
