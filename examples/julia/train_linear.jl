# Data-parallel training of y = w'x + b with Hvd.jl: each rank owns a shard
# and the ranks average their gradients with allreduce!.
# NOT RUN in hvd's CI (no Julia there); see README.md in this folder.
#
#   mpirun -np 2 julia --project=bindings/julia/Hvd examples/julia/train_linear.jl
using Hvd
using Random

const TRUE_W = [2.0, -3.0, 0.5]
const TRUE_B = 1.0

function main()
    Hvd.init()
    rank = Hvd.rank()
    rng = MersenneTwister(1234 + rank)           # a different shard per rank
    n = 256
    X = 2 .* rand(rng, length(TRUE_W), n) .- 1   # features x samples
    y = TRUE_W' * X .+ TRUE_B .+ 0.01 .* randn(rng, 1, n)

    params = rank == 0 ? randn(MersenneTwister(7), length(TRUE_W) + 1) : zeros(length(TRUE_W) + 1)
    Hvd.broadcast!(params, 0)                    # identical replicas to start

    loss = NaN
    for step in 0:300
        w, b = params[1:end-1], params[end]
        err = w' * X .+ b .- y                   # 1 x n
        grad = vcat(vec(2 .* X * err' ./ n), 2 * sum(err) / n, sum(abs2, err) / n)
        Hvd.allreduce!(grad; op = Hvd.Average)   # the one line of distribution
        loss = grad[end]
        params .-= 0.1 .* grad[1:end-1]
        rank == 0 && step % 50 == 0 && println("step $step  loss $(round(loss; digits = 6))")
    end
    converged = loss < 1e-3 && maximum(abs.(params .- [TRUE_W; TRUE_B])) < 0.05
    rank == 0 && println("params $(params)  ", converged ? "converged" : "NOT converged")
    Hvd.shutdown()
    exit(converged ? 0 : 1)
end

main()
