#include "core/observability/autotune/gaussian_process.h"

#include <algorithm>
#include <cmath>

namespace hvd {

double GaussianProcess::Kernel(const Eigen::VectorXd& a, const Eigen::VectorXd& b) const {
  return std::exp(-(a - b).squaredNorm() / (2 * length_ * length_));
}

void GaussianProcess::Fit(const Eigen::MatrixXd& x, const Eigen::VectorXd& y) {
  x_ = x;
  const Eigen::Index n = x.rows();
  y_mean_ = y.mean();
  const double var = n > 1 ? (y.array() - y_mean_).square().sum() / (n - 1) : 0.0;
  y_scale_ = var > 0 ? std::sqrt(var) : 1.0;
  Eigen::VectorXd ys = (y.array() - y_mean_) / y_scale_;
  Eigen::MatrixXd k(n, n);
  for (Eigen::Index i = 0; i < n; ++i) {
    for (Eigen::Index j = 0; j < n; ++j) k(i, j) = Kernel(x.row(i), x.row(j));
  }
  k.diagonal().array() += noise_;
  llt_.compute(k);
  alpha_ = llt_.solve(ys);
}

void GaussianProcess::Predict(const Eigen::VectorXd& x, double* mean, double* stddev) const {
  const Eigen::Index n = x_.rows();
  Eigen::VectorXd ks(n);
  for (Eigen::Index i = 0; i < n; ++i) ks(i) = Kernel(x_.row(i), x);
  const double mu = ks.dot(alpha_);
  const Eigen::VectorXd v = llt_.matrixL().solve(ks);
  const double var = std::max(1e-12, 1.0 - v.squaredNorm());
  *mean = mu * y_scale_ + y_mean_;
  *stddev = std::sqrt(var) * y_scale_;
}

}  // namespace hvd
