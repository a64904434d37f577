"""
    Hvd

Julia binding of hvd: `init`, topology queries and blocking collectives on
contiguous CPU arrays. The `ccall` layer, `LibHvd`, is generated from the
shared SWIG interface (see bindings/julia/README.md).

Arrays are handed to hvd as C row-major tensors with their dimensions
reversed, so hvd's dimension 0 is Julia's *last* dimension: `allgather`
concatenates along the last dimension (e.g. columns of a features x samples
matrix).
"""
module Hvd

using Libdl
include("LibHvd.jl")
using .LibHvd

export HvdError, ReduceOp, Sum, Average, Min, Max, Product, Adasum, P2POp

"""An hvd error: the C status code and the message of `hvd_last_error`."""
struct HvdError <: Exception
    code::Cint
    message::String
end

function Base.showerror(io::IO, e::HvdError)
    print(io, "HvdError(", unsafe_string(LibHvd.hvd_status_string(e.code)), "): ", e.message)
end

"""
    ReduceOp

The reduction of `allreduce!`: `Sum`, `Average`, `Min`, `Max`, `Product`,
or `Adasum` (floats, any number of ranks).
"""
@enum ReduceOp::Cint begin
    Sum = LibHvd.HVD_OP_SUM
    Average = LibHvd.HVD_OP_AVERAGE
    Min = LibHvd.HVD_OP_MIN
    Max = LibHvd.HVD_OP_MAX
    Product = LibHvd.HVD_OP_PRODUCT
    Adasum = LibHvd.HVD_OP_ADASUM   # allreduce of floats, any number of ranks
end

function __init__()
    # An installed copy (share/julia/Hvd) names libhvd's folder relative to
    # itself in deps/libhvd_dir; HVD_LIBRARY_DIR (e.g. a build tree's capi/)
    # goes before it. Neither needs LD_LIBRARY_PATH.
    marker = joinpath(@__DIR__, "..", "deps", "libhvd_dir")
    isfile(marker) && pushfirst!(Libdl.DL_LOAD_PATH, normpath(joinpath(@__DIR__, "..", readchomp(marker))))
    dir = get(ENV, "HVD_LIBRARY_DIR", "")
    isempty(dir) || pushfirst!(Libdl.DL_LOAD_PATH, dir)
end

# Must run right after the failing call: the message is per thread and is
# replaced by the next hvd call.
function check(status)
    status == LibHvd.HVD_OK && return nothing
    throw(HvdError(status, unsafe_string(LibHvd.hvd_last_error())))
end

function topology(value)
    value < 0 && throw(HvdError(LibHvd.HVD_ERR_NOT_INITIALIZED, unsafe_string(LibHvd.hvd_last_error())))
    return Int(value)
end

"""
    init()

Starts hvd (collective: every rank calls it), with the configuration from
`HVD_*` variables and rank and size from the launcher (hvdrun, mpirun).
"""
init() = check(LibHvd.hvd_init())
"""
    shutdown()

Finishes pending work, stops hvd's background thread; `init` may be called
again afterwards.
"""
shutdown() = check(LibHvd.hvd_shutdown())
"""
    is_initialized() -> Bool

Whether `init` has run and `shutdown` has not.
"""
is_initialized() = LibHvd.hvd_is_initialized() != 0
"""
    version() -> String

The library's version, e.g. `"1.0.0"`.
"""
version() = unsafe_string(LibHvd.hvd_version())
"""
    rank() -> Int

This process's rank, 0 to `size() - 1`.
"""
rank() = topology(LibHvd.hvd_rank())
"""
    size() -> Int

The number of ranks (call it as `Hvd.size()`, not `Base.size`).
"""
size() = topology(LibHvd.hvd_size())   # Hvd.size(), not Base.size
"""
    local_rank() -> Int

This process's rank among the ranks of its host.
"""
local_rank() = topology(LibHvd.hvd_local_rank())
"""
    local_size() -> Int

The number of ranks on this host.
"""
local_size() = topology(LibHvd.hvd_local_size())
"""
    is_homogeneous() -> Bool

Whether every host runs the same number of ranks.
"""
is_homogeneous() = topology(LibHvd.hvd_is_homogeneous()) == 1   # same number of ranks per host
"""
    barrier()

Blocks until every rank has reached the barrier.
"""
barrier() = check(LibHvd.hvd_barrier(Int32(0)))

# ------------------------------------------------------------- tensors

const Element = Union{UInt8, Int8, Int16, Int32, Int64, Float16, Float32, Float64, Bool}

# DLPack's kDLBool (DLPack 0.8; hvd's dlpack.h may predate it). hvd reduces
# Bool logically: Sum/Max are or, Min/Product are and.
const DL_BOOL = 0x06

dtype(::Type{T}) where {T <: Union{Int8, Int16, Int32, Int64}} = LibHvd.DLDataType(LibHvd.kDLInt, 8 * sizeof(T), 1)
dtype(::Type{UInt8}) = LibHvd.DLDataType(LibHvd.kDLUInt, 8, 1)
dtype(::Type{Bool}) = LibHvd.DLDataType(DL_BOOL, 8, 1)
dtype(::Type{T}) where {T <: Union{Float16, Float32, Float64}} = LibHvd.DLDataType(LibHvd.kDLFloat, 8 * sizeof(T), 1)

julia_type(d::LibHvd.DLDataType) =
    d.code == LibHvd.kDLFloat ? Dict(16 => Float16, 32 => Float32, 64 => Float64)[d.bits] :
    d.code == LibHvd.kDLInt ? Dict(8 => Int8, 16 => Int16, 32 => Int32, 64 => Int64)[d.bits] :
    d.code == LibHvd.kDLUInt && d.bits == 8 ? UInt8 :
    d.code == DL_BOOL && d.bits == 8 ? Bool :
    throw(HvdError(LibHvd.HVD_ERR_INTERNAL, "result dtype $(d.code)/$(d.bits) has no Julia type"))

# A DLTensor over A; `shape` (reversed dims) must outlive every use of it.
function tensor(A::Array{T}, shape::Vector{Int64}) where {T <: Element}
    LibHvd.DLTensor(pointer(A), LibHvd.DLDevice(LibHvd.kDLCPU, 0), Cint(length(shape)),
                    dtype(T), pointer(shape), Ptr{Int64}(C_NULL), UInt64(0))
end

dims_of(A) = Int64[reverse(Base.size(A))...]
cname(name) = name === nothing ? Ptr{Cchar}(C_NULL) : name

# Blocks until the operation finishes, runs `f(handle)` on success, releases.
function finish(handle::LibHvd.hvd_handle, f = h -> nothing)
    try
        check(LibHvd.hvd_wait(handle, Int64(-1)))
        return f(handle)
    finally
        LibHvd.hvd_release(handle)
    end
end

# ---------------------------------------------------------- collectives

"""
    allreduce!(A; op=Average, name=nothing) -> A

Reduces `A` across ranks in place.
"""
function allreduce!(A::Array{<:Element}; op::ReduceOp = Average, name = nothing)
    shape = dims_of(A)
    handle = Ref{LibHvd.hvd_handle}(0)
    GC.@preserve A shape begin
        t = Ref(tensor(A, shape))
        GC.@preserve t begin
            check(LibHvd.hvd_allreduce_async(cname(name), t, t, Cint(op), C_NULL, handle))
            finish(handle[])
        end
    end
    return A
end

"""
    allgather(A; name=nothing) -> Array

Concatenates every rank's `A` along the last dimension, in rank order (the
last dimension may differ per rank, the others must match).
"""
function allgather(A::Array{<:Element}; name = nothing)
    shape = dims_of(A)
    handle = Ref{LibHvd.hvd_handle}(0)
    GC.@preserve A shape begin
        t = Ref(tensor(A, shape))
        GC.@preserve t begin
            check(LibHvd.hvd_allgather_async(cname(name), t, C_NULL, handle))
            return finish(handle[], copy_result)
        end
    end
end

# Copies hvd's result `index` (valid until hvd_release) into a new Julia array.
function copy_result(handle, index = 0)
    r = Ref{LibHvd.DLTensor}()
    check(LibHvd.hvd_result_at(handle, Cint(index), r))
    dims = reverse([unsafe_load(r[].shape, i) for i in 1:r[].ndim])
    T = julia_type(r[].dtype)
    view = unsafe_wrap(Array, Ptr{T}(r[].data + r[].byte_offset), Tuple(dims))
    return copy(view)
end

"""
    broadcast!(A, root; name=nothing) -> A

Overwrites `A` on every rank with the `A` of rank `root`.
"""
function broadcast!(A::Array{<:Element}, root::Integer; name = nothing)
    shape = dims_of(A)
    handle = Ref{LibHvd.hvd_handle}(0)
    GC.@preserve A shape begin
        t = Ref(tensor(A, shape))
        GC.@preserve t begin
            check(LibHvd.hvd_broadcast_async(cname(name), t, Cint(root), C_NULL, handle))
            finish(handle[])
        end
    end
    return A
end

# Submits a grouped operation over `As` through `submit(names, tensors,
# handle)`, waits, and copies out result i for each array.
function grouped(submit, As, names)
    isempty(As) && throw(HvdError(LibHvd.HVD_ERR_INVALID_ARGUMENT, "grouped operations need at least one array"))
    shapes = [dims_of(A) for A in As]
    strs = names === nothing ? String[] : [String(n) for n in names]
    handle = Ref{LibHvd.hvd_handle}(0)
    GC.@preserve As shapes strs begin
        ts = [tensor(As[i], shapes[i]) for i in eachindex(As)]
        cnames = names === nothing ? Ptr{Ptr{Cchar}}(C_NULL) : [Ptr{Cchar}(pointer(n)) for n in strs]
        GC.@preserve ts cnames begin
            ptrs = [pointer(ts, i) for i in eachindex(ts)]
            GC.@preserve ptrs begin
                check(submit(cnames, ptrs, handle))
                return finish(handle[], h -> [copy_result(h, i - 1) for i in eachindex(As)])
            end
        end
    end
end

"""
    grouped_allgather(As; names=nothing) -> Vector{Array}

Allgathers every array of `As` as one negotiated group (fused where their
element types match): result i concatenates every rank's `As[i]` along the
last dimension, in rank order.
"""
function grouped_allgather(As::AbstractVector{<:Array{<:Element}}; names = nothing)
    return grouped(As, names) do cnames, ptrs, handle
        LibHvd.hvd_grouped_allgather_async(cnames, ptrs, Cint(length(ptrs)), C_NULL, handle)
    end
end

"""
    grouped_reducescatter(As; op=Average, names=nothing) -> Vector{Array}

Reduces every array of `As` across ranks as one negotiated group and
returns this rank's block of each along the last dimension (`op`: Sum or
Average).
"""
function grouped_reducescatter(As::AbstractVector{<:Array{<:Element}}; op::ReduceOp = Average,
                               names = nothing)
    return grouped(As, names) do cnames, ptrs, handle
        LibHvd.hvd_grouped_reducescatter_async(cnames, ptrs, Cint(length(ptrs)), Cint(op), C_NULL,
                                               handle)
    end
end

# ------------------------------------------------------- point to point

"""
    send(A, dest; tag=0)

Sends `A` to rank `dest` and waits until it has gone (the receiver's array
must have the same size in bytes). Messages to one rank on one tag arrive
in order.
"""
function send(A::Array{<:Element}, dest::Integer; tag::Integer = 0)
    shape = dims_of(A)
    handle = Ref{LibHvd.hvd_handle}(0)
    GC.@preserve A shape begin
        t = Ref(tensor(A, shape))
        GC.@preserve t begin
            check(LibHvd.hvd_send_async(t, Cint(dest), Cint(tag), C_NULL, handle))
            finish(handle[])
        end
    end
    return nothing
end

"""
    recv!(A, src; tag=0) -> A

Receives the next message from rank `src` on `tag` into `A`, which must have
exactly the message's size in bytes.
"""
function recv!(A::Array{<:Element}, src::Integer; tag::Integer = 0)
    shape = dims_of(A)
    handle = Ref{LibHvd.hvd_handle}(0)
    GC.@preserve A shape begin
        t = Ref(tensor(A, shape))
        GC.@preserve t begin
            check(LibHvd.hvd_recv_async(t, Cint(src), Cint(tag), C_NULL, handle))
            finish(handle[])
        end
    end
    return A
end

"""
    P2POp(kind, A, peer; tag=0)

One message of `batch_isend_irecv`: `kind` is `:send` (send `A` to rank
`peer`) or `:recv` (receive the next message from rank `peer` on `tag` into
`A`, which must have exactly the message's size in bytes).
"""
struct P2POp
    kind::Symbol
    array::Array
    peer::Int
    tag::Int
    function P2POp(kind::Symbol, A::Array{<:Element}, peer::Integer; tag::Integer = 0)
        kind in (:send, :recv) || throw(ArgumentError("P2POp: kind must be :send or :recv, got :$kind"))
        return new(kind, A, Int(peer), Int(tag))
    end
end

"""
    batch_isend_irecv(ops::AbstractVector{P2POp})

Posts every send and receive of `ops` in order as one operation
(`hvd_batch_isend_irecv`) and waits until all are done; received arrays are
written in place. Posting a ring's send and receive together needs no
ordering of sends against receives to avoid a deadlock:

    Hvd.batch_isend_irecv([Hvd.P2POp(:send, mine, next), Hvd.P2POp(:recv, theirs, prev)])
"""
function batch_isend_irecv(ops::AbstractVector{P2POp})
    isempty(ops) && throw(HvdError(LibHvd.HVD_ERR_INVALID_ARGUMENT, "batch_isend_irecv: no ops"))
    arrays = [op.array for op in ops]
    shapes = [dims_of(A) for A in arrays]
    handle = Ref{LibHvd.hvd_handle}(0)
    GC.@preserve arrays shapes begin
        ts = [tensor(arrays[i], shapes[i]) for i in eachindex(arrays)]
        GC.@preserve ts begin
            cops = [LibHvd.hvd_p2p_op(Csize_t(sizeof(LibHvd.hvd_p2p_op)),
                                      op.kind === :send ? LibHvd.HVD_P2P_SEND : LibHvd.HVD_P2P_RECV,
                                      pointer(ts, i), Cint(op.peer), Cint(op.tag))
                    for (i, op) in enumerate(ops)]
            GC.@preserve cops begin
                check(LibHvd.hvd_batch_isend_irecv(cops, Cint(length(cops)), C_NULL, handle))
                finish(handle[])
            end
        end
    end
    return nothing
end

end # module
