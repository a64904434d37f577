// HVD_OP_ADASUM through the C API, under mpirun or hvdrun with 2 to 6
// ranks: its defining properties on known vectors (orthogonal gradients add,
// identical ones average, parallel ones give their mean at any number of
// ranks), hand-computed cases, fused tensors combined one by one, random
// vectors against a reference tree in double, scale factors, a joined rank,
// process sets, and the refusals (integer tensors, reducescatter). Every
// rank must get the same bits. Collectives always run on every rank (EXPECT,
// not ASSERT, after them) so a failure never leaves a peer waiting.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstdio>
#include <memory>
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

bool PowerOfTwo(int n) {
  return n > 0 && (n & (n - 1)) == 0;
}

hvd_status Wait(hvd_handle h) {
  return hvdtest::WaitAndRelease(h, 60000);
}

hvd_status Adasum(const char* name, Tensor& in, Tensor& out, const hvd_op_options* o = nullptr) {
  hvd_handle h;
  hvd_status s = hvd_allreduce_async(name, in.dl(), out.dl(), HVD_OP_ADASUM, o, &h);
  return s != HVD_OK ? s : Wait(h);
}

using Vec = std::vector<double>;

// The published pairwise combination, in double, for groups standing for
// wa and wb ranks (equal weights: Adasum's own formula).
Vec Combine(const Vec& a, const Vec& b, int wa = 1, int wb = 1) {
  double dot = 0, na = 0, nb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    dot += a[i] * b[i];
    na += a[i] * a[i];
    nb += b[i] * b[i];
  }
  const double tiny = std::sqrt(DBL_MIN);
  const double fa = static_cast<double>(wa) / (wa + wb), fb = 1 - fa;
  const double ca = na >= tiny ? 1 - fa * dot / na : 1;
  const double cb = nb >= tiny ? 1 - fb * dot / nb : 1;
  Vec out(a.size());
  for (size_t i = 0; i < a.size(); ++i) out[i] = ca * a[i] + cb * b[i];
  return out;
}

// With p the largest power of two <= n: ranks p..n-1 first combine into
// ranks 0..n-p-1 (which then stand for two ranks), then ranks 0+1, 2+3, ...
// and pairs of pairs, each group weighted by the ranks it stands for.
Vec Tree(std::vector<Vec> v) {
  size_t p = 1;
  while (2 * p <= v.size()) p *= 2;
  std::vector<int> w(p, 1);
  for (size_t r = p; r < v.size(); ++r) {
    v[r - p] = Combine(v[r - p], v[r]);
    w[r - p] = 2;
  }
  v.resize(p);
  while (v.size() > 1) {
    std::vector<Vec> next;
    std::vector<int> next_w;
    for (size_t i = 0; i < v.size(); i += 2) {
      next.push_back(Combine(v[i], v[i + 1], w[i], w[i + 1]));
      next_w.push_back(w[i] + w[i + 1]);
    }
    v = next;
    w = next_w;
  }
  return v[0];
}

// Expects every rank to hold rank 0's bits of `t` (a float tensor).
void ExpectSameBitsEverywhere(const Tensor& t, T type, int64_t count, const char* name) {
  Tensor from0(type, {count});
  for (int64_t i = 0; i < count; ++i) from0.Set(i, t.Get(i));
  hvd_handle h;
  ASSERT_EQ(hvd_broadcast_async(name, from0.dl(), 0, nullptr, &h), HVD_OK) << hvd_last_error();
  ASSERT_EQ(Wait(h), HVD_OK) << hvd_last_error();
  for (int64_t i = 0; i < count; ++i) EXPECT_EQ(t.Get(i), from0.Get(i)) << name << " element " << i;
}

// Deterministic values in [-1, 1) for rank r, tensor t, element i.
double Random(int r, int t, int64_t i) {
  uint64_t x = (static_cast<uint64_t>(r) * 1000003u + static_cast<uint64_t>(t)) * 2654435761u +
               static_cast<uint64_t>(i) * 40503u + 12345u;
  x ^= x >> 13;
  x *= 0x9e3779b97f4a7c15ull;
  x ^= x >> 29;
  return static_cast<double>(x % 2000001) / 1000000.0 - 1.0;
}

TEST(Adasum, OrthogonalGradientsAdd) {
  for (T t : {T::f32, T::f64}) {
    // Rank r: (r + 1) at element 2r, zeros elsewhere.
    Tensor in(t, {2 * N()}), out(t, {2 * N()});
    in.Set(2 * R(), R() + 1);
    ASSERT_EQ(Adasum("adasum.orthogonal", in, out), HVD_OK) << hvd_last_error();
    for (int64_t i = 0; i < 2 * N(); ++i) {
      EXPECT_EQ(out.Get(i), i % 2 == 0 ? static_cast<double>(i / 2 + 1) : 0.0) << "element " << i;
    }
  }
}

TEST(Adasum, IdenticalGradientsAverage) {
  const double v[] = {0.5, -1.25, 3, 0, 96, -0.0625, 7};
  for (T t : {T::f16, T::bf16, T::f32, T::f64}) {
    Tensor in(t, {7}), out(t, {7});
    for (int64_t i = 0; i < 7; ++i) in.Set(i, v[i]);
    ASSERT_EQ(Adasum("adasum.identical", in, out), HVD_OK) << hvd_last_error();
    for (int64_t i = 0; i < 7; ++i) {
      if (t == T::f64 && !PowerOfTwo(N())) {
        // Unequal weights (1/3, 2/3, ...) round in double: within an ulp or
        // two of the value; narrower types round back to it exactly.
        EXPECT_NEAR(out.Get(i), v[i], 4 * DBL_EPSILON * std::fabs(v[i])) << "element " << i;
      } else {
        EXPECT_EQ(out.Get(i), v[i]) << Name(t) << " element " << i;
      }
    }
  }
}

// Rank r holds c_r a: the result is the mean of the n vectors (what
// Horovod's test_stability and test_parallel expect), at any number of
// ranks, with the same bits on every rank. Factors spread over many orders
// of magnitude, as in test_stability_2.
TEST(Adasum, ParallelGradientsGiveTheMean) {
  for (T t : {T::f16, T::f32, T::f64}) {
    for (int64_t count : {int64_t{1}, int64_t{5}, int64_t{1000}}) {
      for (double spread : {1.0, 1e6}) {
        if (t == T::f16 && spread > 1) continue;  // 1e12 overflows float16
        auto factor = [&](int r) { return (1.0 + 0.37 * r) * std::pow(spread, r % 3); };
        Tensor in(t, {count}), out(t, {count});
        std::vector<double> a(static_cast<size_t>(count)), expect(a.size());
        for (int64_t i = 0; i < count; ++i) {
          a[i] = Random(99, 0, i) + 0.5 * (i % 2 ? 1 : -1);
          in.Set(i, factor(R()) * a[i]);
        }
        // The reference starts from the rounded inputs the ranks sent.
        Tensor one(t, {1});
        for (int64_t i = 0; i < count; ++i) {
          double sum = 0;
          for (int r = 0; r < N(); ++r) {
            one.Set(0, factor(r) * a[i]);
            sum += one.Get(0);
          }
          expect[i] = sum / N();
        }
        ASSERT_EQ(Adasum("adasum.parallel", in, out), HVD_OK) << hvd_last_error();
        const double tol = t == T::f64 ? 1e-13 : t == T::f32 ? 1e-6 : 2e-3;
        double norm = 0;
        for (double e : expect) norm = std::max(norm, std::fabs(e));
        for (int64_t i = 0; i < count; ++i) {
          EXPECT_NEAR(out.Get(i), expect[i], tol * norm)
              << Name(t) << " count " << count << " spread " << spread << " element " << i;
        }
        ExpectSameBitsEverywhere(out, t, count, "adasum.parallel.check");
      }
    }
  }
}

TEST(Adasum, HandComputed) {
  if (N() > 4) GTEST_SKIP() << "hand-computed for 2, 3 and 4 ranks";
  Tensor in(T::f64, {2}), out(T::f64, {2});
  double expect[2];
  if (N() == 4) {
    // (1,0) and (0,1) are orthogonal: (1,1). (2,0) and (2,0) are equal: (2,0).
    // Then a = (1,1), b = (2,0): a.b = 2, |a|^2 = 2, |b|^2 = 4, so
    // (1 - 2/4) a + (1 - 2/8) b = 0.5 (1,1) + 0.75 (2,0) = (2, 0.5).
    const double g[4][2] = {{1, 0}, {0, 1}, {2, 0}, {2, 0}};
    in.Set(0, g[R()][0]);
    in.Set(1, g[R()][1]);
    expect[0] = 2;
    expect[1] = 0.5;
  } else if (N() == 3) {
    // Rank 2 hands (2,0) to rank 0, equal to its own: (2,0), standing for
    // 2 ranks. Then a = (2,0) (weight 2 of 3), b = (1,1): a.b = 2,
    // |a|^2 = 4, |b|^2 = 2: (1 - 2/3 * 2/4) a + (1 - 1/3 * 2/2) b
    // = 2/3 (2,0) + 2/3 (1,1) = (2, 2/3).
    const double g[3][2] = {{2, 0}, {1, 1}, {2, 0}};
    in.Set(0, g[R()][0]);
    in.Set(1, g[R()][1]);
    expect[0] = 2;
    expect[1] = 2.0 / 3;
  } else {
    // a = (3,0), b = (1,1): a.b = 3, |a|^2 = 9, |b|^2 = 2:
    // (1 - 3/18) (3,0) + (1 - 3/4) (1,1) = (2.5 + 0.25, 0.25).
    const double g[2][2] = {{3, 0}, {1, 1}};
    in.Set(0, g[R()][0]);
    in.Set(1, g[R()][1]);
    expect[0] = 2.75;
    expect[1] = 0.25;
  }
  ASSERT_EQ(Adasum("adasum.hand", in, out), HVD_OK) << hvd_last_error();
  EXPECT_NEAR(out.Get(0), expect[0], 1e-15);
  EXPECT_NEAR(out.Get(1), expect[1], 1e-15);
}

// Tensors of one grouped (fused) allreduce combine with their own dot
// products: an orthogonal tensor and an identical one keep their answers.
// Random tensors of awkward sizes match the reference tree, and every rank
// gets the same bits.
TEST(Adasum, FusedTensorsCombineOneByOne) {
  const std::vector<int64_t> sizes = {2 * N(), 3, 1, 7, 1001, 2};
  std::vector<std::unique_ptr<Tensor>> ins, outs;
  for (size_t t = 0; t < sizes.size(); ++t) {
    ins.push_back(std::make_unique<Tensor>(T::f32, std::vector<int64_t>{sizes[t]}));
    outs.push_back(std::make_unique<Tensor>(T::f32, std::vector<int64_t>{sizes[t]}));
  }
  ins[0]->Set(2 * R(), R() + 1);                          // orthogonal
  for (int64_t i = 0; i < 3; ++i) ins[1]->Set(i, i + 1);  // identical
  for (size_t t = 2; t < sizes.size(); ++t) {
    for (int64_t i = 0; i < sizes[t]; ++i) ins[t]->Set(i, Random(R(), static_cast<int>(t), i));
  }
  std::vector<const DLTensor*> in_dl;
  std::vector<DLTensor*> out_dl;
  std::vector<std::string> names;
  std::vector<const char*> cnames;
  for (size_t t = 0; t < sizes.size(); ++t) {
    in_dl.push_back(ins[t]->dl());
    out_dl.push_back(outs[t]->dl());
    names.push_back("adasum.fused." + std::to_string(t));
  }
  for (auto& n : names) cnames.push_back(n.c_str());
  hvd_handle h;
  ASSERT_EQ(hvd_grouped_allreduce_async(cnames.data(), in_dl.data(), out_dl.data(),
                                        static_cast<int>(sizes.size()), HVD_OP_ADASUM, nullptr, &h),
            HVD_OK)
      << hvd_last_error();
  ASSERT_EQ(Wait(h), HVD_OK) << hvd_last_error();

  // Every rank must hold the same bits: compare with rank 0's result.
  Tensor last(T::f32, {1001}), from0(T::f32, {1001});
  for (int64_t i = 0; i < 1001; ++i) last.Set(i, outs[4]->Get(i));
  ASSERT_EQ(hvd_broadcast_async("adasum.fused.check", last.dl(), 0, nullptr, &h), HVD_OK);
  ASSERT_EQ(Wait(h), HVD_OK) << hvd_last_error();

  for (int64_t i = 0; i < 2 * N(); ++i) {
    EXPECT_EQ(outs[0]->Get(i), i % 2 == 0 ? static_cast<double>(i / 2 + 1) : 0.0);
  }
  for (int64_t i = 0; i < 3; ++i) EXPECT_EQ(outs[1]->Get(i), i + 1);
  for (size_t t = 2; t < sizes.size(); ++t) {
    std::vector<Vec> per_rank(static_cast<size_t>(N()), Vec(static_cast<size_t>(sizes[t])));
    for (int r = 0; r < N(); ++r) {
      for (int64_t i = 0; i < sizes[t]; ++i) {
        // The reference starts from the float32 inputs the ranks sent.
        per_rank[r][i] = static_cast<float>(Random(r, static_cast<int>(t), i));
      }
    }
    const Vec expect = Tree(per_rank);
    for (int64_t i = 0; i < sizes[t]; ++i) {
      EXPECT_NEAR(outs[t]->Get(i), expect[i], 1e-5 * std::max(1.0, std::fabs(expect[i])))
          << "tensor " << t << " element " << i;
    }
  }
  for (int64_t i = 0; i < 1001; ++i) EXPECT_EQ(outs[4]->Get(i), last.Get(i)) << "element " << i;
}

// Tensors smaller than the number of ranks, alone (not fused): the halving
// leaves some ranks empty slices; results still match the reference.
TEST(Adasum, TinyTensorsMatchTheReference) {
  for (int64_t count : {int64_t{1}, int64_t{2}, int64_t{3}, int64_t{N() + 1}}) {
    Tensor in(T::f64, {count}), out(T::f64, {count});
    std::vector<Vec> per_rank(static_cast<size_t>(N()), Vec(static_cast<size_t>(count)));
    for (int r = 0; r < N(); ++r) {
      for (int64_t i = 0; i < count; ++i) per_rank[r][i] = Random(r, 7, i);
    }
    for (int64_t i = 0; i < count; ++i) in.Set(i, per_rank[R()][i]);
    ASSERT_EQ(Adasum("adasum.tiny", in, out), HVD_OK) << hvd_last_error();
    const Vec expect = Tree(per_rank);
    for (int64_t i = 0; i < count; ++i) {
      EXPECT_NEAR(out.Get(i), expect[i], 1e-13 * std::max(1.0, std::fabs(expect[i])))
          << "count " << count << " element " << i;
    }
    ExpectSameBitsEverywhere(out, T::f64, count, "adasum.tiny.check");
  }
}

TEST(Adasum, ScaleFactorsApplyBeforeAndAfter) {
  Tensor x(T::f64, {3});
  for (int64_t i = 0; i < 3; ++i) x.Set(i, i + 1.0);
  hvd_op_options o = HVD_OP_OPTIONS_INIT;
  o.prescale_factor = 2;
  o.postscale_factor = 0.25;
  // In place: input and output are the same tensor.
  ASSERT_EQ(Adasum("adasum.scaled", x, x, &o), HVD_OK) << hvd_last_error();
  for (int64_t i = 0; i < 3; ++i) {
    // Off powers of two, equal vectors come back within an ulp or two.
    EXPECT_NEAR(x.Get(i), (i + 1.0) * 0.5, PowerOfTwo(N()) ? 0.0 : 4 * DBL_EPSILON * (i + 1.0));
  }
}

TEST(Adasum, JoinedRankContributesNothing) {
  // The last rank joins at once: it counts as zeros, and adasum(a, 0) = a.
  int last = -1;
  if (R() != N() - 1) {
    Tensor in(T::f32, {4}), out(T::f32, {4});
    for (int64_t i = 0; i < 4; ++i) in.Set(i, 1.5 * (i + 1));
    EXPECT_EQ(Adasum("adasum.join", in, out), HVD_OK) << hvd_last_error();
    for (int64_t i = 0; i < 4; ++i) EXPECT_EQ(out.Get(i), 1.5 * (i + 1));
  }
  EXPECT_EQ(hvd_join(0, &last), HVD_OK) << hvd_last_error();
  EXPECT_EQ(hvd_barrier(0), HVD_OK) << hvd_last_error();
}

TEST(Adasum, ProcessSets) {
  // Ranks 1 and N-1 (a set of two; of one when N == 2) and, with 4 ranks
  // or more, ranks 0..2 (a set of three).
  std::vector<int32_t> pair = {1};
  if (N() > 2) pair.push_back(N() - 1);
  int32_t pair_id = -1, three_id = -1;
  ASSERT_EQ(hvd_add_process_set(pair.data(), static_cast<int>(pair.size()), &pair_id), HVD_OK)
      << hvd_last_error();
  std::vector<int32_t> three = {0, 1, 2};
  if (N() >= 4) {
    ASSERT_EQ(hvd_add_process_set(three.data(), 3, &three_id), HVD_OK) << hvd_last_error();
  }
  hvd_op_options o = HVD_OP_OPTIONS_INIT;
  if (hvd_process_set_included(pair_id) == 1) {
    const int me = hvd_process_set_rank(pair_id);
    Tensor in(T::f32, {4}), out(T::f32, {4});
    in.Set(me, 10.0 + me);  // orthogonal within the set
    o.process_set = pair_id;
    EXPECT_EQ(Adasum("adasum.set", in, out, &o), HVD_OK) << hvd_last_error();
    for (int64_t i = 0; i < 4; ++i) {
      EXPECT_EQ(out.Get(i), i < static_cast<int64_t>(pair.size()) ? 10.0 + i : 0.0);
    }
  }
  if (three_id >= 0 && hvd_process_set_included(three_id) == 1) {
    // Orthogonal within the set: the sum. Parallel (1, 2, 3 times v): the mean.
    const int me = hvd_process_set_rank(three_id);
    Tensor in(T::f32, {4}), out(T::f32, {4});
    in.Set(me, 10.0 + me);
    o.process_set = three_id;
    EXPECT_EQ(Adasum("adasum.three", in, out, &o), HVD_OK) << hvd_last_error();
    for (int64_t i = 0; i < 4; ++i) EXPECT_EQ(out.Get(i), i < 3 ? 10.0 + i : 0.0);
    Tensor par(T::f64, {2}), mean(T::f64, {2});
    par.Set(0, (me + 1) * 1.5);
    par.Set(1, (me + 1) * -0.25);
    EXPECT_EQ(Adasum("adasum.three.parallel", par, mean, &o), HVD_OK) << hvd_last_error();
    EXPECT_NEAR(mean.Get(0), 3.0, 1e-15);
    EXPECT_NEAR(mean.Get(1), -0.5, 1e-15);
  }
  EXPECT_EQ(hvd_barrier(0), HVD_OK) << hvd_last_error();
  EXPECT_EQ(hvd_remove_process_set(pair_id), HVD_OK) << hvd_last_error();
  if (three_id >= 0) {
    EXPECT_EQ(hvd_remove_process_set(three_id), HVD_OK) << hvd_last_error();
  }
}

// Refusals come at submission, on every rank alike, before any negotiation;
// any number of ranks is accepted (Horovod refuses all but powers of two).
TEST(Adasum, RefusedWhereItIsUndefined) {
  hvd_handle h = 0;
  Tensor f(T::f32, {4}), fo(T::f32, {4});
  hvd_status s = hvd_allreduce_async("adasum.refused", f.dl(), fo.dl(), HVD_OP_ADASUM, nullptr, &h);
  EXPECT_EQ(s, HVD_OK) << hvd_last_error();
  if (s == HVD_OK) {
    EXPECT_EQ(Wait(h), HVD_OK) << hvd_last_error();
  }
  Tensor i32(T::i32, {4}), i32o(T::i32, {4});
  EXPECT_EQ(hvd_allreduce_async("adasum.int", i32.dl(), i32o.dl(), HVD_OP_ADASUM, nullptr, &h),
            HVD_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(std::string(hvd_last_error()),
            "hvd_allreduce_async: HVD_OP_ADASUM needs a floating-point input, got int32");
  EXPECT_EQ(hvd_reducescatter_async("adasum.rs", f.dl(), HVD_OP_ADASUM, nullptr, &h),
            HVD_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(hvd_allreduce_async("adasum.bad", f.dl(), fo.dl(), static_cast<hvd_reduce_op>(6),
                                nullptr, &h),
            HVD_ERR_INVALID_ARGUMENT);
}

}  // namespace

int main(int argc, char** argv) {
  return hvdtest::RunTestsWithHvd(argc, argv);
}
