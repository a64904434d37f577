// Data-parallel training of a small MLP on the digits (examples/data/digits.txt)
// with LibTorch and hvd: the C++ twin of examples/python/torch_digits.py
// (same model, split, batches and optimizer).
//
//   hvdrun -np 2 ./torch_digits
//   mpirun -np 2 ./torch_digits
//
// Every rank trains on its own shard of each epoch's batches;
// hvd::torch::DistributedOptimizer averages the gradients, so all ranks keep
// identical weights. Rank 0 prints the loss and held-out accuracy per epoch;
// the exit status is non-zero on every rank if the final accuracy is below
// --target. --init FILE starts from saved weights, --save FILE writes the
// final ones (raw float32 of each parameter in order, as the Python script's
// --save-init and --save do).
#include <hvd/hvd.h>
#include <torch/torch.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <hvd/torch.hpp>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#ifndef HVD_DIGITS_FILE
#define HVD_DIGITS_FILE "digits.txt"
#endif

namespace {

struct Args {
  int epochs = 20;
  int batch_size = 32;  // per rank
  double lr = 0.05;     // per rank; scaled by size
  double target = 0.95;
  std::string data = HVD_DIGITS_FILE;
  std::string init;
  std::string save;
};

Args parse_args(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) throw std::invalid_argument("missing value after " + flag);
    const std::string value = argv[++i];
    if (flag == "--epochs") {
      a.epochs = std::stoi(value);
    } else if (flag == "--batch-size") {
      a.batch_size = std::stoi(value);
    } else if (flag == "--lr") {
      a.lr = std::stod(value);
    } else if (flag == "--target") {
      a.target = std::stod(value);
    } else if (flag == "--data") {
      a.data = value;
    } else if (flag == "--init") {
      a.init = value;
    } else if (flag == "--save") {
      a.save = value;
    } else {
      throw std::invalid_argument("unknown option " + flag);
    }
  }
  return a;
}

struct Data {
  torch::Tensor x_train, y_train, x_test, y_test;
};

// digits.txt: a label and 64 pixels (0..16 as 0-9a-g) per line; the same
// fixed split on every rank, 20% held out (the permutation of the Python script).
Data load_data(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::vector<float> pixels;
  std::vector<int64_t> labels;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    if (line.size() != 65)
      throw std::runtime_error(path + ": a line of " + std::to_string(line.size()) +
                               " characters, not 65");
    labels.push_back(line[0] - '0');
    for (std::size_t i = 1; i < line.size(); ++i) {
      const char c = line[i];
      const int v = c <= '9' ? c - '0' : c - 'a' + 10;
      pixels.push_back(static_cast<float>(v) / 16.0f);
    }
  }
  const auto n = static_cast<int64_t>(labels.size());
  const torch::Tensor x = torch::from_blob(pixels.data(), {n, 64}, torch::kFloat32).clone();
  const torch::Tensor y = torch::from_blob(labels.data(), {n}, torch::kInt64).clone();
  const torch::Tensor order = torch::randperm(n, at::make_generator<at::CPUGeneratorImpl>(0));
  const int64_t n_test = n / 5;
  const torch::Tensor test = order.slice(0, 0, n_test), train = order.slice(0, n_test);
  return {x.index_select(0, train), y.index_select(0, train), x.index_select(0, test),
          y.index_select(0, test)};
}

// Raw float32, every parameter in order.
void save_parameters(const torch::nn::Module& model, const std::string& path) {
  std::ofstream out(path, std::ios::binary);
  for (const auto& p : model.parameters()) {
    const torch::Tensor t = p.detach().contiguous();
    out.write(static_cast<const char*>(t.data_ptr()), static_cast<std::streamsize>(t.nbytes()));
  }
  if (!out) throw std::runtime_error("cannot write " + path);
}

void load_parameters(torch::nn::Module& model, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  torch::NoGradGuard no_grad;
  for (auto& p : model.parameters()) {
    torch::Tensor t = torch::empty_like(p);
    in.read(static_cast<char*>(t.data_ptr()), static_cast<std::streamsize>(t.nbytes()));
    if (!in) throw std::runtime_error(path + " is shorter than the model's parameters");
    p.copy_(t);
  }
  if (in.peek() != std::char_traits<char>::eof()) {
    throw std::runtime_error(path + " is longer than the model's parameters");
  }
}

int train(const Args& args) {
  const int rank = hvd_rank(), size = hvd_size();
  const Data data = load_data(args.data);

  torch::manual_seed(rank);  // deliberately different; broadcast below fixes it
  torch::nn::Sequential model(torch::nn::Linear(64, 128), torch::nn::ReLU(),
                              torch::nn::Linear(128, 10));
  if (!args.init.empty()) load_parameters(*model, args.init);
  // Linear scaling: the global batch is size times bigger.
  torch::optim::SGD sgd(model->parameters(),
                        torch::optim::SGDOptions(args.lr * size).momentum(0.9));
  hvd::torch::DistributedOptimizer opt(sgd, model->named_parameters());
  hvd::torch::broadcast_parameters(*model, 0);

  // Equal batch counts on all ranks (a rank with an extra batch would wait
  // for the others in its allreduce).
  const int64_t global_batch = static_cast<int64_t>(args.batch_size) * size;
  const int64_t n_train = data.x_train.size(0);
  const int64_t steps = n_train / global_batch;
  double accuracy = 0.0;
  for (int epoch = 0; epoch < args.epochs; ++epoch) {
    model->train();
    const torch::Tensor perm =
        torch::randperm(n_train, at::make_generator<at::CPUGeneratorImpl>(epoch));
    torch::Tensor total = torch::zeros({1});
    for (int64_t step = 0; step < steps; ++step) {
      const torch::Tensor batch = perm.slice(0, step * global_batch, (step + 1) * global_batch)
                                      .slice(0, rank, global_batch, size);
      opt.zero_grad();
      torch::Tensor loss = torch::nn::functional::cross_entropy(
          model->forward(data.x_train.index_select(0, batch)), data.y_train.index_select(0, batch));
      loss.backward();
      opt.step();
      total += loss.detach();
    }
    total = total / static_cast<double>(steps);
    const double mean_loss = hvd::torch::allreduce_(total, "epoch_loss").item<double>();

    model->eval();
    {
      torch::NoGradGuard no_grad;
      accuracy = model->forward(data.x_test)
                     .argmax(1)
                     .eq(data.y_test)
                     .to(torch::kFloat64)
                     .mean()
                     .item<double>();
    }
    if (rank == 0) {
      std::printf("epoch %2d  loss %.4f  held-out accuracy %.4f\n", epoch + 1, mean_loss, accuracy);
      std::fflush(stdout);
    }
  }
  if (!args.save.empty() && rank == 0) save_parameters(*model, args.save);

  // Every rank decides on rank 0's number, so all exit the same way.
  torch::Tensor acc = torch::full({1}, accuracy, torch::kFloat64);
  accuracy = hvd::torch::broadcast_(acc, 0, "final_accuracy").item<double>();
  if (rank == 0) {
    std::printf("final held-out accuracy %.4f (target %.2f, %d ranks)\n", accuracy, args.target,
                size);
    std::fflush(stdout);
  }
  return accuracy >= args.target ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  torch::set_num_threads(1);  // ranks share the cores
  if (hvd_init() != HVD_OK) {
    std::fprintf(stderr, "torch_digits: hvd_init failed: %s\n", hvd_last_error());
    return 1;
  }
  int status = 1;
  try {
    status = train(parse_args(argc, argv));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "torch_digits: rank %d: %s\n", hvd_rank(), e.what());
    hvd_shutdown();
    return 1;
  }
  hvd_shutdown();
  return status;
}
