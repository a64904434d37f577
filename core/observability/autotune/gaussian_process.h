// Gaussian-process regression with a squared-exponential kernel: the
// surrogate model autotune fits to (parameters -> score) samples.
#pragma once

#include <Eigen/Dense>
#include <vector>

namespace hvd {

class GaussianProcess {
 public:
  // length_scale over inputs normalised to [0,1]; noise is added to the
  // diagonal (scores are noisy measurements).
  GaussianProcess(double length_scale, double noise) : length_(length_scale), noise_(noise) {}

  // Inputs: one row per sample. Scores are standardised internally.
  void Fit(const Eigen::MatrixXd& x, const Eigen::VectorXd& y);
  // Posterior mean and standard deviation in the units of y.
  void Predict(const Eigen::VectorXd& x, double* mean, double* stddev) const;
  bool fitted() const { return x_.rows() > 0; }

 private:
  double Kernel(const Eigen::VectorXd& a, const Eigen::VectorXd& b) const;

  double length_;
  double noise_;
  Eigen::MatrixXd x_;
  Eigen::VectorXd alpha_;
  Eigen::LLT<Eigen::MatrixXd> llt_;
  double y_mean_ = 0, y_scale_ = 1;
};

}  // namespace hvd
