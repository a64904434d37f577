#include "core/observability/autotune/autotuner.h"

#include <algorithm>
#include <cmath>

#include "core/common/logging.h"

namespace hvd {
namespace {

using Clock = std::chrono::steady_clock;

double Normalize(double value, double lo, double hi) {
  return std::clamp((std::log2(std::max(value, 1e-9)) - lo) / (hi - lo), 0.0, 1.0);
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

Autotuner::Autotuner(const Config& config, int rank) : rank_(rank) {
  params_.fusion_threshold_bytes = config.fusion_threshold_bytes;
  params_.cycle_time_ms = config.cycle_time_ms;
  params_.allreduce_chunk_bytes = config.allreduce_chunk_bytes;
  // Ranges (log2): fusion 1..128 MiB, cycle 0.1..10 ms, chunk 512 KiB..32 MiB.
  dims_ = {{20, 27, config.fusion_threshold_fixed},
           {std::log2(0.1), std::log2(10.0), config.cycle_time_fixed},
           {19, 25, false}};
  point_ = {
      Normalize(static_cast<double>(params_.fusion_threshold_bytes), dims_[0].lo, dims_[0].hi),
      Normalize(params_.cycle_time_ms, dims_[1].lo, dims_[1].hi),
      Normalize(static_cast<double>(params_.allreduce_chunk_bytes), dims_[2].lo, dims_[2].hi)};
  int free_dims = 0;
  for (const auto& d : dims_) free_dims += d.fixed ? 0 : 1;
  optimizer_ = std::make_unique<BayesianOptimizer>(free_dims, 0.01, 0.8, 1234u);
  if (rank_ == 0 && !config.autotune_log.empty()) {
    log_.reset(std::fopen(config.autotune_log.c_str(), "w"));
    if (!log_) {
      HVD_LOG(kWarning) << "HVD_AUTOTUNE_LOG: cannot open '" << config.autotune_log << "'";
    } else {
      std::fprintf(log_.get(),
                   "sample,phase,fusion_threshold_bytes,cycle_time_ms,allreduce_chunk_bytes,"
                   "score_bytes_per_us\n");
    }
  }
  sample_start_ = Clock::now();
}

Autotuner::~Autotuner() = default;

TunedParams Autotuner::FromPoint(const std::vector<double>& x) const {
  auto value = [&](size_t i) {
    return std::exp2(dims_[i].lo + x[i] * (dims_[i].hi - dims_[i].lo));
  };
  TunedParams p = params_;
  if (!dims_[0].fixed) p.fusion_threshold_bytes = static_cast<int64_t>(value(0));
  if (!dims_[1].fixed) p.cycle_time_ms = value(1);
  if (!dims_[2].fixed) p.allreduce_chunk_bytes = static_cast<int64_t>(value(2));
  return p;
}

std::vector<double> Autotuner::FreePoint(const std::vector<double>& full) const {
  std::vector<double> v;
  for (size_t i = 0; i < dims_.size(); ++i) {
    if (!dims_[i].fixed) v.push_back(full[i]);
  }
  return v;
}

std::vector<double> Autotuner::FullPoint(const std::vector<double>& free) const {
  std::vector<double> v = point_;
  size_t k = 0;
  for (size_t i = 0; i < dims_.size(); ++i) {
    if (!dims_[i].fixed) v[i] = free[k++];
  }
  return v;
}

bool Autotuner::Record(int64_t bytes) {
  if (done_ || bytes <= 0) return false;
  bytes_ += bytes;
  if (++steps_ < kStepsPerSample) return false;
  const double us = std::chrono::duration<double, std::micro>(Clock::now() - sample_start_).count();
  Decide(us > 0 ? static_cast<double>(bytes_) / us : 0.0);
  if (done_) {
    HVD_LOG(kInfo) << "autotune finished: fusion threshold " << params_.fusion_threshold_bytes
                   << " B, cycle time " << params_.cycle_time_ms << " ms, allreduce chunk "
                   << params_.allreduce_chunk_bytes << " B";
    Log(0, "final");
  }
  steps_ = 0;
  bytes_ = 0;
  sample_start_ = Clock::now();
  return true;
}

void Autotuner::Log(double score, const char* phase) {
  if (!log_) return;
  std::fprintf(log_.get(), "%d,%s,%lld,%.4f,%lld,%.3f\n", samples_, phase,
               static_cast<long long>(params_.fusion_threshold_bytes), params_.cycle_time_ms,
               static_cast<long long>(params_.allreduce_chunk_bytes), score);
  std::fflush(log_.get());
}

void Autotuner::Decide(double score) {
  ++samples_;
  if (samples_ <= kWarmupSamples) {
    Log(score, "warmup");
    return;
  }
  Log(score, "sample");
  eval_scores_.push_back(score);
  if (static_cast<int>(eval_scores_.size()) < kSamplesPerEvaluation) return;
  optimizer_->AddSample(FreePoint(point_), Median(eval_scores_));
  eval_scores_.clear();
  if (++evaluations_ >= kEvaluations) {
    point_ = FullPoint(optimizer_->Best());
    done_ = true;
  } else {
    point_ = FullPoint(optimizer_->Next());
  }
  params_ = FromPoint(point_);
}

}  // namespace hvd
