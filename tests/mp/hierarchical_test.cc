// Hierarchical CPU allreduce (core/dataplane/decorators/hierarchical_cpu_comm.h) across hosts, any
// placement, even or not: run by tests/launcher/hierarchical_test.sh under
// hvdrun -H and hvdrun --mpi over network-namespace hosts, with a small
// HVD_ALLREDUCE_CHUNK_BYTES so that modest tensors already go through the
// pipeline in many chunks. Exact results on every rank: every dtype and
// reduction, sizes from empty to many chunks (and fewer elements than
// shares), in place, many tensors fused (plain, and averaged and scaled in
// separate buffers), a process set spanning hosts, and
// the collectives that pass through to the flat communicator.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "hvd/hvd.h"
#include "hvd_test_main.h"
#include "test_tensor.h"

using hvdtest::N;
using hvdtest::R;
using hvdtest::T;
using hvdtest::Tensor;

namespace {

hvd_status Wait(hvd_handle h) {
  return hvdtest::WaitAndRelease(h, 120000);
}

// Small values: sums over 6 ranks fit every dtype exactly.
double V(int r, int64_t i) {
  return 1 + (r + i) % 3;
}

double Expected(hvd_reduce_op op, int64_t i, const std::vector<int>& ranks) {
  double sum = 0, mn = 1e9, mx = -1e9;
  for (int r : ranks) {
    sum += V(r, i);
    mn = std::min(mn, V(r, i));
    mx = std::max(mx, V(r, i));
  }
  if (op == HVD_OP_MIN) return mn;
  if (op == HVD_OP_MAX) return mx;
  if (op == HVD_OP_AVERAGE) return sum / static_cast<double>(ranks.size());
  return sum;
}

std::vector<int> World() {
  std::vector<int> all;
  for (int r = 0; r < N(); ++r) all.push_back(r);
  return all;
}

// Reduces a fresh tensor of n elements; returns how many elements differ.
int64_t Check(T t, int64_t n, hvd_reduce_op op, bool in_place, const std::string& name,
              const std::vector<int>& ranks = World(), int32_t set = 0) {
  Tensor in(t, {n}), out(t, {n});
  for (int64_t i = 0; i < n; ++i) in.Set(i, V(R(), i));
  hvd_op_options o = HVD_OP_OPTIONS_INIT;
  o.process_set = set;
  hvd_handle h;
  Tensor& dst = in_place ? in : out;
  EXPECT_EQ(hvd_allreduce_async(name.c_str(), in.dl(), dst.dl(), op, &o, &h), HVD_OK)
      << hvd_last_error();
  EXPECT_EQ(Wait(h), HVD_OK) << name << ": " << hvd_last_error();
  const double tol = t == T::f16 || t == T::bf16 ? 2e-2 : 1e-6;
  int64_t bad = 0;
  for (int64_t i = 0; i < n; ++i) {
    double e = Expected(op, i, ranks);
    if (!hvdtest::IsFloat(t) && op == HVD_OP_AVERAGE) e = std::trunc(e);
    if (std::fabs(dst.Get(i) - e) > tol * std::max(1.0, e)) {
      if (bad++ < 3) ADD_FAILURE() << name << " element " << i << ": " << dst.Get(i) << " != " << e;
    }
  }
  return bad;
}

TEST(Hierarchical, EveryTypeOpAndSize) {
  // 1 and 5 elements: fewer than or about the number of shares; 4099 and
  // 70001: several pipeline chunks with a short last one.
  for (T t : hvdtest::AllTypes()) {
    for (hvd_reduce_op op : {HVD_OP_SUM, HVD_OP_MIN, HVD_OP_MAX, HVD_OP_AVERAGE}) {
      for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{5}, int64_t{4099}, int64_t{70001}}) {
        std::string name = std::string("h.") + hvdtest::Name(t) + "." + std::to_string(op) + "." +
                           std::to_string(n);
        EXPECT_EQ(Check(t, n, op, false, name), 0) << name;
      }
    }
  }
}

TEST(Hierarchical, InPlaceLarge) {
  EXPECT_EQ(Check(T::f32, 300007, HVD_OP_SUM, true, "h.inplace.f32"), 0);
  EXPECT_EQ(Check(T::f64, 100003, HVD_OP_AVERAGE, true, "h.inplace.f64"), 0);
}

TEST(Hierarchical, ManyTensorsFused) {
  const int kCount = 64;
  std::vector<std::unique_ptr<Tensor>> ins, outs;
  std::vector<hvd_handle> hs(kCount);
  for (int k = 0; k < kCount; ++k) {
    const int64_t n = 1 + (k * 7919) % 20000;
    ins.push_back(std::make_unique<Tensor>(T::f32, std::vector<int64_t>{n}));
    outs.push_back(std::make_unique<Tensor>(T::f32, std::vector<int64_t>{n}));
    for (int64_t i = 0; i < n; ++i) ins[k]->Set(i, V(R(), i + k));
    const std::string name = "h.fused." + std::to_string(k);
    ASSERT_EQ(
        hvd_allreduce_async(name.c_str(), ins[k]->dl(), outs[k]->dl(), HVD_OP_SUM, nullptr, &hs[k]),
        HVD_OK)
        << hvd_last_error();
  }
  for (int k = 0; k < kCount; ++k) {
    ASSERT_EQ(Wait(hs[k]), HVD_OK) << hvd_last_error();
    int64_t bad = 0;
    for (int64_t i = 0; i < outs[k]->n(); ++i) {
      bad += outs[k]->Get(i) != Expected(HVD_OP_SUM, i + k, World());
    }
    EXPECT_EQ(bad, 0) << "tensor " << k;
  }
}

// Fused tensors in separate buffers take the staged path (each chunk of the
// fusion buffer packed just before its reduce-scatter and unpacked after its
// allgather, beside the cross-host step): tensors of 0, 1 and up to 30000
// elements straddling chunk boundaries, every third one in place, averaged
// with pre- and postscale factors.
TEST(Hierarchical, FusedStagedScaled) {
  const int kCount = 40;
  std::vector<std::unique_ptr<Tensor>> ins, outs;
  std::vector<hvd_handle> hs(kCount);
  hvd_op_options o = HVD_OP_OPTIONS_INIT;
  o.prescale_factor = 0.5;
  o.postscale_factor = 4.0;
  auto in_place = [](int k) { return k % 3 == 0; };
  for (int k = 0; k < kCount; ++k) {
    const int64_t n = k % 5 == 0 ? 0 : k % 5 == 1 ? 1 : 1 + (k * 7919) % 30000;
    ins.push_back(std::make_unique<Tensor>(T::f32, std::vector<int64_t>{n}));
    outs.push_back(std::make_unique<Tensor>(T::f32, std::vector<int64_t>{n}));
    for (int64_t i = 0; i < n; ++i) ins[k]->Set(i, V(R(), i + k));
    Tensor& dst = in_place(k) ? *ins[k] : *outs[k];
    const std::string name = "h.staged." + std::to_string(k);
    ASSERT_EQ(hvd_allreduce_async(name.c_str(), ins[k]->dl(), dst.dl(), HVD_OP_AVERAGE, &o, &hs[k]),
              HVD_OK)
        << hvd_last_error();
  }
  for (int k = 0; k < kCount; ++k) {
    ASSERT_EQ(Wait(hs[k]), HVD_OK) << hvd_last_error();
    const Tensor& dst = in_place(k) ? *ins[k] : *outs[k];
    int64_t bad = 0;
    for (int64_t i = 0; i < dst.n(); ++i) {
      const double e = 2 * Expected(HVD_OP_AVERAGE, i + k, World());
      if (std::fabs(dst.Get(i) - e) > 1e-5 * e && bad++ < 3) {
        ADD_FAILURE() << "tensor " << k << " element " << i << ": " << dst.Get(i) << " != " << e;
      }
    }
    EXPECT_EQ(bad, 0) << "tensor " << k;
  }
}

// A set of the first and the last two ranks spans two hosts in every
// placement the script uses; its data communicator goes hierarchical too.
TEST(Hierarchical, ProcessSetAcrossHosts) {
  // The first two ranks and the last two (all three at np=3).
  const std::set<int32_t> chosen = {0, 1, N() - 2, N() - 1};
  std::vector<int32_t> members(chosen.begin(), chosen.end());
  int32_t id = -1;
  ASSERT_EQ(hvd_add_process_set(members.data(), static_cast<int>(members.size()), &id), HVD_OK)
      << hvd_last_error();
  if (hvd_process_set_included(id) == 1) {
    std::vector<int> ranks(members.begin(), members.end());
    EXPECT_EQ(Check(T::i32, 50021, HVD_OP_SUM, false, "h.set.i32", ranks, id), 0);
    EXPECT_EQ(Check(T::f32, 3, HVD_OP_MAX, false, "h.set.f32", ranks, id), 0);
  }
  EXPECT_EQ(hvd_remove_process_set(id), HVD_OK) << hvd_last_error();
}

TEST(Hierarchical, OtherCollectivesPassThrough) {
  Tensor b(T::f64, {1000});
  for (int64_t i = 0; i < b.n(); ++i) b.Set(i, R() * 1000 + i);
  hvd_handle h;
  const int root = N() - 1;
  ASSERT_EQ(hvd_broadcast_async("h.bcast", b.dl(), root, nullptr, &h), HVD_OK) << hvd_last_error();
  ASSERT_EQ(Wait(h), HVD_OK) << hvd_last_error();
  int64_t bad = 0;
  for (int64_t i = 0; i < b.n(); ++i) bad += b.Get(i) != root * 1000 + i;
  EXPECT_EQ(bad, 0);

  // Reducescatter of N rows of 3: rank r gets row r of the sum.
  Tensor rs(T::i64, {N(), 3});
  for (int64_t i = 0; i < rs.n(); ++i) rs.Set(i, V(R(), i));
  ASSERT_EQ(hvd_reducescatter_async("h.rs", rs.dl(), HVD_OP_SUM, nullptr, &h), HVD_OK)
      << hvd_last_error();
  ASSERT_EQ(hvd_wait(h, 120000), HVD_OK) << hvd_last_error();
  DLTensor res;
  ASSERT_EQ(hvd_result(h, &res), HVD_OK) << hvd_last_error();
  ASSERT_EQ(res.shape[0], 1);
  const auto* got = static_cast<const int64_t*>(res.data);
  for (int64_t j = 0; j < 3; ++j) {
    EXPECT_EQ(got[j], Expected(HVD_OP_SUM, R() * 3 + j, World())) << "row element " << j;
  }
  hvd_release(h);
}

}  // namespace

int main(int argc, char** argv) {
  return hvdtest::RunTestsWithHvd(argc, argv);
}
