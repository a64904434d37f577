"""horovod.common: the framework-neutral names, from hvd."""
