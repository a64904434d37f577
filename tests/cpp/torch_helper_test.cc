// hvd/torch.hpp on 2 ranks, exact values per rank: the autograd hooks start
// every gradient's allreduce during backward(), step() applies the average,
// a parameter unused on one rank is reduced with zeros there, a second
// backward before step() and a non-contiguous tensor are errors, and
// broadcast_parameters copies rank 0's parameters and buffers.
#include <hvd/hvd.h>
#include <torch/torch.h>

#include <cstdio>
#include <hvd/torch.hpp>
#include <stdexcept>
#include <string>

namespace {

int failures = 0;

#define EXPECT(cond)                                                                              \
  do {                                                                                            \
    if (!(cond)) {                                                                                \
      std::fprintf(stderr, "rank %d: %s:%d: EXPECT(%s) failed\n", hvd_rank(), __FILE__, __LINE__, \
                   #cond);                                                                        \
      ++failures;                                                                                 \
    }                                                                                             \
  } while (0)

struct Net : torch::nn::Module {
  Net() {
    w = register_parameter("w", torch::zeros({3}));
    b = register_parameter("b", torch::zeros({1}));
    unused = register_parameter("unused", torch::zeros({2}));
    count = register_buffer("count", torch::zeros({1}, torch::kInt64));
  }
  torch::Tensor w, b, unused, count;
};

void gradients_are_averaged_during_backward(int rank) {
  Net net;
  torch::optim::SGD sgd(net.parameters(), torch::optim::SGDOptions(1.0));
  hvd::torch::DistributedOptimizer opt(sgd, net.named_parameters());
  sgd.zero_grad();
  // loss = sum(w * x) + k * b: dL/dw = x = rank+1 per element, dL/db = k.
  const float x = static_cast<float>(rank + 1);
  torch::Tensor loss = (net.w * x).sum() + net.b.sum() * (rank == 0 ? 4.0f : 0.0f);
  // "unused" gets a gradient on rank 0 only: rank 1 must still reduce it (zeros).
  if (rank == 0) loss = loss + net.unused.sum() * 6.0f;
  EXPECT(opt.started() == 0);
  loss.backward();
  // The hooks ran inside backward(): every gradient in the graph is in flight.
  EXPECT(opt.started() == (rank == 0 ? 3u : 2u));
  opt.step();
  EXPECT(opt.started() == 0);
  // SGD with lr 1: parameter = -mean gradient; mean of rank+1 over 2 ranks = 1.5.
  EXPECT(torch::equal(net.w, torch::full({3}, -1.5f)));
  EXPECT(torch::equal(net.b, torch::full({1}, -2.0f)));
  EXPECT(torch::equal(net.unused, torch::full({2}, -3.0f)));
  EXPECT(torch::equal(net.w.grad(), torch::full({3}, 1.5f)));

  // A second backward pass before step() is refused with hvd's status.
  sgd.zero_grad();
  (net.w * x).sum().backward();
  bool threw = false;
  try {
    (net.w * x).sum().backward();
  } catch (const std::exception& e) {
    threw = std::string(e.what()).find("computed twice before step()") != std::string::npos;
  }
  EXPECT(threw);
  opt.step();  // the ranks stay in step: both reduce every gradient once
}

void broadcast_copies_root(int rank) {
  Net net;
  {
    torch::NoGradGuard no_grad;
    net.w.fill_(static_cast<float>(10 + rank));
    net.count.fill_(100 + rank);
  }
  hvd::torch::broadcast_parameters(net, 0);
  EXPECT(torch::equal(net.w, torch::full({3}, 10.0f)));
  EXPECT(net.count.item<int64_t>() == 100);
}

void errors_name_the_tensor() {
  const torch::Tensor t = torch::zeros({4, 4}).t();  // not contiguous
  try {
    hvd::torch::allreduce_(t, "transposed");
    EXPECT(false);
  } catch (const hvd::torch::Error& e) {
    EXPECT(e.status() == HVD_ERR_INVALID_ARGUMENT);
    EXPECT(std::string(e.what()).find("'transposed' is not contiguous") != std::string::npos);
  }
}

}  // namespace

int main() {
  torch::set_num_threads(1);
  if (hvd_init() != HVD_OK) {
    std::fprintf(stderr, "hvd_init: %s\n", hvd_last_error());
    return 1;
  }
  const int rank = hvd_rank();
  if (hvd_size() != 2) {
    std::fprintf(stderr, "run me on 2 ranks, not %d\n", hvd_size());
    return 1;
  }
  try {
    gradients_are_averaged_during_backward(rank);
    broadcast_copies_root(rank);
    errors_name_the_tensor();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: %s\n", rank, e.what());
    ++failures;
  }
  hvd_shutdown();
  if (failures == 0) std::printf("rank %d: all checks passed\n", rank);
  return failures == 0 ? 0 : 1;
}
