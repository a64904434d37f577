// Bayesian optimisation over a box: a Gaussian-process surrogate and the
// expected-improvement acquisition (maximising the score).
#pragma once

#include <random>
#include <vector>

#include "core/observability/autotune/gaussian_process.h"

namespace hvd {

class BayesianOptimizer {
 public:
  // dims: number of parameters, each normalised to [0,1]. xi: exploration.
  BayesianOptimizer(int dims, double xi, double noise, unsigned seed);

  void AddSample(const std::vector<double>& x, double score);
  // The next point to evaluate: random for the first few samples, then the
  // maximiser of expected improvement over random candidates.
  std::vector<double> Next();
  // The best point sampled so far (by measured score).
  std::vector<double> Best() const;
  size_t samples() const { return xs_.size(); }

  static double ExpectedImprovement(double mean, double stddev, double best, double xi);

 private:
  int dims_;
  double xi_;
  GaussianProcess gp_;
  std::mt19937 rng_;
  std::vector<std::vector<double>> xs_;
  std::vector<double> ys_;
};

}  // namespace hvd
