"""horovod.torch.elastic.sampler."""
from hvd.torch.elastic import ElasticSampler  # noqa: F401
