// hvd for LibTorch (PyTorch's C++ frontend): a header-only layer over the C
// ABI in hvd/hvd.h, so a C++ program needs only libhvd and LibTorch.
//
//   hvd_init();
//   auto model = torch::nn::Sequential(...);
//   torch::optim::SGD sgd(model->parameters(), torch::optim::SGDOptions(lr * hvd_size()));
//   hvd::torch::DistributedOptimizer opt(sgd, model->named_parameters());
//   hvd::torch::broadcast_parameters(*model, 0);
//   for (...) { opt.zero_grad(); loss(model->forward(x)).backward(); opt.step(); }
//
// Gradients are allreduced (averaged) in the background as soon as autograd
// has accumulated each one, overlapping communication with the rest of the
// backward pass; step() waits for them and then runs the wrapped optimizer.
// Errors are thrown as hvd::torch::Error with hvd's one-line message.
// Tensors must be contiguous CPU (or, with a CUDA build, CUDA) tensors of a
// dtype hvd reduces.
#ifndef HVD_TORCH_HPP
#define HVD_TORCH_HPP

#include <ATen/DLConvertor.h>
#include <hvd/hvd.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/variable.h>
#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

#include <cstddef>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace hvd {
namespace torch {

/// An hvd call failed; status() is its hvd_status, what() hvd's message.
class Error : public std::runtime_error {
 public:
  Error(hvd_status status, const std::string& message)
      : std::runtime_error(message), status_(status) {}
  hvd_status status() const noexcept { return status_; }

 private:
  hvd_status status_;
};

namespace detail {

inline void check(hvd_status status, const std::string& what) {
  if (status == HVD_OK) return;
  throw Error(status, "hvd: " + what + " failed on rank " + std::to_string(hvd_rank()) + ": " +
                          hvd_status_string(status) + ": " + hvd_last_error());
}

struct DLPackDeleter {
  void operator()(DLManagedTensor* t) const {
    if (t != nullptr && t->deleter != nullptr) t->deleter(t);
  }
};
// Owns a reference to the tensor's storage for as long as hvd may use it.
using DLPackPtr = std::unique_ptr<DLManagedTensor, DLPackDeleter>;

inline DLPackPtr to_dlpack(const at::Tensor& tensor, const std::string& name) {
  if (!tensor.defined()) {
    throw Error(HVD_ERR_INVALID_ARGUMENT, "hvd: tensor '" + name + "' is undefined");
  }
  if (!tensor.is_contiguous()) {
    throw Error(HVD_ERR_INVALID_ARGUMENT, "hvd: tensor '" + name + "' is not contiguous");
  }
  // detach: the data is shared, autograd is not involved.
  return DLPackPtr(at::toDLPack(tensor.detach()));
}

}  // namespace detail

/// One running collective on a tensor. wait() throws on failure; destroying
/// a running one waits for it (hvd writes into the tensor until then).
class Pending {
 public:
  Pending() = default;
  Pending(hvd_handle handle, detail::DLPackPtr tensor, std::string what)
      : handle_(handle), tensor_(std::move(tensor)), what_(std::move(what)) {}
  Pending(Pending&& other) noexcept { *this = std::move(other); }
  Pending& operator=(Pending&& other) noexcept {
    if (this != &other) {
      finish();
      handle_ = std::exchange(other.handle_, 0);
      tensor_ = std::move(other.tensor_);
      what_ = std::move(other.what_);
    }
    return *this;
  }
  Pending(const Pending&) = delete;
  Pending& operator=(const Pending&) = delete;
  ~Pending() { finish(); }

  bool valid() const noexcept { return handle_ != 0; }

  void wait() {
    if (handle_ == 0) return;
    const hvd_status status = hvd_wait(handle_, -1);
    const std::string message = status == HVD_OK ? "" : hvd_last_error();
    hvd_release(std::exchange(handle_, 0));
    tensor_.reset();
    if (status != HVD_OK) {
      throw Error(status, "hvd: " + what_ + " failed on rank " + std::to_string(hvd_rank()) + ": " +
                              hvd_status_string(status) + ": " + message);
    }
  }

 private:
  void finish() noexcept {
    if (handle_ == 0) return;
    hvd_wait(handle_, -1);
    hvd_release(std::exchange(handle_, 0));
    tensor_.reset();
  }

  hvd_handle handle_ = 0;
  detail::DLPackPtr tensor_;
  std::string what_;
};

/// Starts an in-place allreduce of `tensor` under `name` (the same on every rank).
inline Pending allreduce_async_(const at::Tensor& tensor, const std::string& name,
                                hvd_reduce_op op = HVD_OP_AVERAGE) {
  detail::DLPackPtr dl = detail::to_dlpack(tensor, name);
  hvd_handle handle = 0;
  detail::check(
      hvd_allreduce_async(name.c_str(), &dl->dl_tensor, &dl->dl_tensor, op, nullptr, &handle),
      "allreduce of '" + name + "'");
  return Pending(handle, std::move(dl), "allreduce of '" + name + "'");
}

/// Allreduces `tensor` in place and returns it.
inline at::Tensor allreduce_(const at::Tensor& tensor, const std::string& name,
                             hvd_reduce_op op = HVD_OP_AVERAGE) {
  allreduce_async_(tensor, name, op).wait();
  return tensor;
}

/// Starts copying root's `tensor` into `tensor` on every other rank.
inline Pending broadcast_async_(const at::Tensor& tensor, int root, const std::string& name) {
  detail::DLPackPtr dl = detail::to_dlpack(tensor, name);
  hvd_handle handle = 0;
  detail::check(hvd_broadcast_async(name.c_str(), &dl->dl_tensor, root, nullptr, &handle),
                "broadcast of '" + name + "'");
  return Pending(handle, std::move(dl), "broadcast of '" + name + "'");
}

/// Broadcasts `tensor` from root in place and returns it.
inline at::Tensor broadcast_(const at::Tensor& tensor, int root, const std::string& name) {
  broadcast_async_(tensor, root, name).wait();
  return tensor;
}

/// Copies root's values into every tensor of `named` (all started at once,
/// then waited for). Names must be the same on every rank.
inline void broadcast_parameters(const ::torch::OrderedDict<std::string, at::Tensor>& named,
                                 int root) {
  std::vector<Pending> pending;
  pending.reserve(named.size());
  for (const auto& item : named) {
    pending.push_back(broadcast_async_(item.value(), root, "broadcast." + item.key()));
  }
  for (Pending& p : pending) p.wait();
}

/// Copies root's parameters and buffers (a model's state) to every rank.
inline void broadcast_parameters(const ::torch::nn::Module& module, int root) {
  broadcast_parameters(module.named_parameters(), root);
  broadcast_parameters(module.named_buffers(), root);
}

/// Wraps a torch::optim optimizer: the gradient of every named parameter is
/// allreduced with `op` (average by default) as soon as backward() has
/// accumulated it, and step() waits for all of them before the wrapped
/// optimizer's step. One backward pass per step (so not LBFGS, whose step
/// closure runs backward again); a parameter that received no gradient
/// contributes zeros, so every rank reduces the same tensors.
/// The optimizer and the parameters must outlive this object.
class DistributedOptimizer {
 public:
  DistributedOptimizer(::torch::optim::Optimizer& optimizer,
                       const ::torch::OrderedDict<std::string, at::Tensor>& named_parameters,
                       hvd_reduce_op op = HVD_OP_AVERAGE)
      : optimizer_(optimizer), state_(std::make_shared<State>()) {
    state_->op = op;
    for (const auto& item : named_parameters) {
      const at::Tensor& p = item.value();
      if (!p.requires_grad()) continue;
      if (!p.is_leaf()) {
        throw Error(HVD_ERR_INVALID_ARGUMENT,
                    "hvd: DistributedOptimizer: parameter '" + item.key() + "' is not a leaf");
      }
      const std::size_t index = state_->params.size();
      state_->params.push_back(Param{p, "grad." + item.key(), Pending()});
      // The AccumulateGrad node writes p.grad; a post hook on it sees the
      // accumulated gradient. The tensor keeps only a weak reference to the
      // node, so it is kept alive here (or the hook would vanish with it).
      std::shared_ptr<::torch::autograd::Node> acc = ::torch::autograd::impl::grad_accumulator(p);
      acc->add_post_hook(std::make_unique<Hook>(state_, index));
      accumulators_.push_back(std::move(acc));
    }
  }
  DistributedOptimizer(const DistributedOptimizer&) = delete;
  DistributedOptimizer& operator=(const DistributedOptimizer&) = delete;
  ~DistributedOptimizer() {
    // Hooks outlive this object inside the autograd nodes: make them no-ops.
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->active = false;
  }

  /// Waits for every gradient's allreduce, submitting those whose hook did
  /// not run (unused parameters: zeros) so that all ranks match.
  void synchronize() {
    std::lock_guard<std::mutex> lock(state_->mutex);
    for (Param& param : state_->params) {
      if (!param.pending.valid()) param.pending = start(param, state_->op);
    }
    for (Param& param : state_->params) param.pending.wait();
  }

  /// synchronize(), then the wrapped optimizer's step.
  at::Tensor step(::torch::optim::Optimizer::LossClosure closure = nullptr) {
    synchronize();
    return optimizer_.step(std::move(closure));
  }

  void zero_grad() { optimizer_.zero_grad(); }

  /// How many gradients' allreduces have been started since the last step.
  std::size_t started() const {
    std::lock_guard<std::mutex> lock(state_->mutex);
    std::size_t n = 0;
    for (const Param& param : state_->params) n += param.pending.valid() ? 1 : 0;
    return n;
  }

  ::torch::optim::Optimizer& optimizer() noexcept { return optimizer_; }

 private:
  struct Param {
    at::Tensor tensor;
    std::string name;
    Pending pending;
  };
  struct State {
    mutable std::mutex mutex;  // autograd may run hooks on its own threads
    std::vector<Param> params;
    hvd_reduce_op op = HVD_OP_AVERAGE;
    bool active = true;
  };

  static Pending start(Param& param, hvd_reduce_op op) {
    at::Tensor& grad = param.tensor.mutable_grad();
    if (!grad.defined()) {
      grad = at::zeros_like(param.tensor);
    } else if (!grad.is_contiguous()) {
      grad = grad.contiguous();
    }
    return allreduce_async_(grad, param.name, op);
  }

  struct Hook : ::torch::autograd::FunctionPostHook {
    Hook(std::shared_ptr<State> state, std::size_t index) : state(std::move(state)), index(index) {}
    ::torch::autograd::variable_list operator()(
        const ::torch::autograd::variable_list& outputs,
        const ::torch::autograd::variable_list& /*inputs*/) override {
      std::lock_guard<std::mutex> lock(state->mutex);
      if (!state->active) return outputs;
      Param& param = state->params[index];
      if (param.pending.valid()) {
        throw Error(HVD_ERR_INVALID_ARGUMENT,
                    "hvd: DistributedOptimizer: gradient of '" + param.name +
                        "' computed twice before step() (one backward pass per step)");
      }
      param.pending = start(param, state->op);
      return outputs;
    }
    std::shared_ptr<State> state;
    std::size_t index;
  };

  ::torch::optim::Optimizer& optimizer_;
  std::shared_ptr<State> state_;
  std::vector<std::shared_ptr<::torch::autograd::Node>> accumulators_;
};

}  // namespace torch
}  // namespace hvd

#endif  // HVD_TORCH_HPP
