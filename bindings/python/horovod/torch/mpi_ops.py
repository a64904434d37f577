"""horovod.torch.mpi_ops: hvd.torch's collectives under Horovod's
signatures.

Most names are hvd.torch's own. Where Horovod's positional order differs
(allreduce and its forms take `average` second; reducescatter takes
`process_set` before the scale factors; join takes a device), a one-line
adapter passes the arguments to hvd.torch by keyword, so Horovod's calls
such as allreduce_(t, None, "name", hvd.Sum) mean what they meant."""
import hvd.torch as _h
from hvd.torch import (Adasum, Average, Compression, Handle, HorovodInternalError,  # noqa: F401
                       Max, Min, Product, ProcessSet, Sum, add_process_set, allgather,
                       allgather_async, alltoall, alltoall_async, barrier, broadcast,
                       broadcast_, broadcast_async, broadcast_async_, ccl_built, cross_rank,
                       cross_size, cuda_built, ddl_built, global_process_set, gloo_built,
                       gloo_enabled, grouped_allgather, grouped_allgather_async, init,
                       is_homogeneous, is_initialized, local_rank, local_size, mpi_built,
                       mpi_enabled, mpi_threads_supported, nccl_built, poll, rank,
                       remove_process_set, rocm_built, shutdown, size, sparse_allreduce_async,
                       start_timeline, stop_timeline, synchronize)

_all = global_process_set


def allreduce(tensor, average=None, name=None, compression=Compression.none, op=None,
              prescale_factor=1.0, postscale_factor=1.0, process_set=_all):
    return _h.allreduce(tensor, name=name, op=op, prescale_factor=prescale_factor,
                        postscale_factor=postscale_factor, process_set=process_set,
                        average=average, compression=compression)


def allreduce_async(tensor, average=None, name=None, op=None, prescale_factor=1.0,
                    postscale_factor=1.0, process_set=_all):
    return _h.allreduce_async(tensor, name=name, op=op, prescale_factor=prescale_factor,
                              postscale_factor=postscale_factor, process_set=process_set,
                              average=average)


def allreduce_(tensor, average=None, name=None, op=None, prescale_factor=1.0,
               postscale_factor=1.0, process_set=_all):
    return _h.allreduce_(tensor, name=name, op=op, prescale_factor=prescale_factor,
                         postscale_factor=postscale_factor, process_set=process_set,
                         average=average)


def allreduce_async_(tensor, average=None, name=None, op=None, prescale_factor=1.0,
                     postscale_factor=1.0, process_set=_all):
    return _h.allreduce_async_(tensor, name=name, op=op, prescale_factor=prescale_factor,
                               postscale_factor=postscale_factor, process_set=process_set,
                               average=average)


def grouped_allreduce(tensors, average=None, name=None, compression=Compression.none, op=None,
                      prescale_factor=1.0, postscale_factor=1.0, process_set=_all):
    return _h.grouped_allreduce(tensors, name=name, op=op, prescale_factor=prescale_factor,
                                postscale_factor=postscale_factor, process_set=process_set,
                                average=average, compression=compression)


def grouped_allreduce_async(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                            postscale_factor=1.0, process_set=_all):
    return _h.grouped_allreduce_async(tensors, name=name, op=op,
                                      prescale_factor=prescale_factor,
                                      postscale_factor=postscale_factor,
                                      process_set=process_set, average=average)


def grouped_allreduce_(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                       postscale_factor=1.0, process_set=_all):
    return _h.grouped_allreduce_(tensors, name=name, op=op, prescale_factor=prescale_factor,
                                 postscale_factor=postscale_factor, process_set=process_set,
                                 average=average)


def grouped_allreduce_async_(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                             postscale_factor=1.0, process_set=_all):
    return _h.grouped_allreduce_async_(tensors, name=name, op=op,
                                       prescale_factor=prescale_factor,
                                       postscale_factor=postscale_factor,
                                       process_set=process_set, average=average)


def reducescatter(tensor, name=None, compression=Compression.none, op=Average,
                  process_set=_all, prescale_factor=1.0, postscale_factor=1.0):
    return _h.reducescatter(tensor, name=name, op=op, prescale_factor=prescale_factor,
                            postscale_factor=postscale_factor, process_set=process_set,
                            compression=compression)


def reducescatter_async(tensor, name=None, op=Average, process_set=_all, prescale_factor=1.0,
                        postscale_factor=1.0):
    return _h.reducescatter_async(tensor, name=name, op=op, prescale_factor=prescale_factor,
                                  postscale_factor=postscale_factor, process_set=process_set)


def grouped_reducescatter(tensors, name=None, compression=Compression.none, op=Average,
                          process_set=_all, prescale_factor=1.0, postscale_factor=1.0):
    return _h.grouped_reducescatter(tensors, name=name, op=op,
                                    prescale_factor=prescale_factor,
                                    postscale_factor=postscale_factor, process_set=process_set,
                                    compression=compression)


def grouped_reducescatter_async(tensors, name=None, op=Average, process_set=_all,
                                prescale_factor=1.0, postscale_factor=1.0):
    return _h.grouped_reducescatter_async(tensors, name=name, op=op,
                                          prescale_factor=prescale_factor,
                                          postscale_factor=postscale_factor,
                                          process_set=process_set)


def join(device=-1):
    """The rank that joined last. `device` (Horovod's CUDA device for the
    zeros it feeds) is not needed: hvd joins on the host."""
    return _h.join()
