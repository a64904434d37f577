#include "core/observability/autotune/bayesian_optimizer.h"

#include <algorithm>
#include <cmath>

namespace hvd {

BayesianOptimizer::BayesianOptimizer(int dims, double xi, double noise, unsigned seed)
    : dims_(dims), xi_(xi), gp_(0.25, noise), rng_(seed) {}

void BayesianOptimizer::AddSample(const std::vector<double>& x, double score) {
  xs_.push_back(x);
  ys_.push_back(score);
}

double BayesianOptimizer::ExpectedImprovement(double mean, double stddev, double best, double xi) {
  if (stddev <= 0) return 0;
  const double imp = mean - best - xi;
  const double z = imp / stddev;
  const double cdf = 0.5 * std::erfc(-z / std::sqrt(2.0));
  const double pdf = std::exp(-0.5 * z * z) / std::sqrt(2 * M_PI);
  return imp * cdf + stddev * pdf;
}

std::vector<double> BayesianOptimizer::Next() {
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<double> x(static_cast<size_t>(dims_));
  if (xs_.size() < 3) {
    for (auto& v : x) v = u(rng_);
    return x;
  }
  Eigen::MatrixXd xm(static_cast<Eigen::Index>(xs_.size()), dims_);
  Eigen::VectorXd ym(static_cast<Eigen::Index>(ys_.size()));
  for (size_t i = 0; i < xs_.size(); ++i) {
    for (int d = 0; d < dims_; ++d) xm(static_cast<Eigen::Index>(i), d) = xs_[i][d];
    ym(static_cast<Eigen::Index>(i)) = ys_[i];
  }
  gp_.Fit(xm, ym);
  // Scores are standardised inside the GP; express xi in score units.
  const double best = *std::max_element(ys_.begin(), ys_.end());
  const double spread = std::max(1e-12, std::fabs(best));
  double best_ei = -1;
  Eigen::VectorXd c(dims_);
  for (int k = 0; k < 2000; ++k) {
    for (int d = 0; d < dims_; ++d) c(d) = u(rng_);
    double mean, sd;
    gp_.Predict(c, &mean, &sd);
    double ei = ExpectedImprovement(mean, sd, best, xi_ * spread);
    if (ei > best_ei) {
      best_ei = ei;
      for (int d = 0; d < dims_; ++d) x[static_cast<size_t>(d)] = c(d);
    }
  }
  return x;
}

std::vector<double> BayesianOptimizer::Best() const {
  if (ys_.empty()) return std::vector<double>(static_cast<size_t>(dims_), 0.5);
  auto it = std::max_element(ys_.begin(), ys_.end());
  return xs_[static_cast<size_t>(it - ys_.begin())];
}

}  // namespace hvd
