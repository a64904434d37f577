// Online tuning of fusion threshold, cycle time and allreduce chunk size
// (HVD_AUTOTUNE=1). Runs on the world set's coordinator: each decision that
// runs collectives is a step; 10 steps are a sample scored in bytes reduced
// per microsecond; an evaluation is the median of 5 samples. Bayesian
// optimisation (Gaussian process, expected improvement) picks each next
// setting, which the coordinator sends in its decision stream, so every rank
// switches at the same point. Values fixed in the environment are not tuned.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "core/common/config.h"
#include "core/observability/autotune/bayesian_optimizer.h"
#include "core/observability/autotune/tuned_params.h"

namespace hvd {

class Autotuner {
 public:
  static constexpr int kWarmupSamples = 3;
  static constexpr int kStepsPerSample = 10;
  static constexpr int kSamplesPerEvaluation = 5;
  static constexpr int kEvaluations = 20;

  Autotuner(const Config& config, int rank);
  ~Autotuner();
  Autotuner(const Autotuner&) = delete;
  Autotuner& operator=(const Autotuner&) = delete;

  const TunedParams& params() const { return params_; }
  bool done() const { return done_; }

  // After each step with the bytes it decided to move. True when a sample
  // ended and params() changed: the caller sends the new values to every rank.
  bool Record(int64_t bytes);

 private:
  struct Dim {
    double lo, hi;  // log2 of the value range
    bool fixed;
  };
  TunedParams FromPoint(const std::vector<double>& x) const;
  std::vector<double> FreePoint(const std::vector<double>& full) const;
  std::vector<double> FullPoint(const std::vector<double>& free) const;
  void Decide(double score);  // rank 0
  void Log(double score, const char* phase);

  int rank_;
  TunedParams params_;
  std::vector<Dim> dims_;
  std::vector<double> point_;  // current point, all dims, in [0,1]
  std::unique_ptr<BayesianOptimizer> optimizer_;
  int64_t steps_ = 0;
  int64_t bytes_ = 0;
  std::chrono::steady_clock::time_point sample_start_;
  int samples_ = 0;  // completed samples, warm-up included
  int evaluations_ = 0;
  std::vector<double> eval_scores_;
  bool done_ = false;
  struct FileCloser {
    void operator()(std::FILE* f) const { std::fclose(f); }
  };
  std::unique_ptr<std::FILE, FileCloser> log_;
};

}  // namespace hvd
