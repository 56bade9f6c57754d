// Dense math operators a small model needs: MatMul, FC, ReduceSum, ReduceMean, Scale, WeightedSum, Sigmoid.
//
// Float and double only. Every result has one fixed summation order, the same on every CPU and in both
// builds of the loops (baseline x86-64 and AVX2, picked once per process as in elementwise_loops.h): a
// matrix product adds A(i,0)*B(0,j), A(i,1)*B(1,j), ... in k order starting from zero, exactly as the
// textbook triple loop does (the kernels only change which outputs are computed side by side), and a
// reduction sums each contiguous run in 16 interleaved partial sums combined by a fixed tree
// (lane_sum below). No FMA is used, so both builds round identically.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "moka/core/error.h"
#include "moka/operators/registry.h"
#include "operators/builtin.h"
#include "operators/elementwise_loops.h"

namespace moka {

namespace {

// ---------------------------------------------------------------------------------------------------
// Checks shared by the operators.

bool is_float_dtype(DType t) { return t == DType::Float || t == DType::Double; }

// Input i as a float or double tensor; TypeError naming the operator, the input and its dtype otherwise.
const Tensor& float_input(const OperatorBase& op, std::size_t i, const char* role) {
  const Tensor& t = op.input(i);
  if (!is_float_dtype(t.dtype()))
    throw TypeError(
        fmt::format("{}: input {} \"{}\" ({}) has dtype {}; {} accepts float32 (float) and float64 (double) only",
                    op.type(), role, op.input_name(i), t.describe(), dtype_name(t.dtype()), op.type()));
  return t;
}

// Input i, which must have the dtype of input j (already checked to be float or double).
const Tensor& same_dtype_input(const OperatorBase& op, std::size_t i, const char* role, std::size_t j,
                               const char* role_j) {
  const Tensor& t = float_input(op, i, role);
  const Tensor& o = op.input(j);
  if (t.dtype() != o.dtype())
    throw TypeError(
        fmt::format("{}: input {} \"{}\" ({}) has dtype {} but input {} \"{}\" ({}) has dtype {}; they must "
                    "be the same",
                    op.type(), role, op.input_name(i), t.describe(), dtype_name(t.dtype()), role_j, op.input_name(j),
                    o.describe(), dtype_name(o.dtype())));
  return t;
}

// Caffe2's canonical_axis_index: axis in [-ndim, ndim), negative counting from the end.
std::size_t canonical_axis(const OperatorBase& op, const char* arg, int64_t axis, std::size_t in, const char* role) {
  const Tensor& t = op.input(in);
  const auto ndim = static_cast<int64_t>(t.ndim());
  if (axis < -ndim || axis >= ndim) {
    if (ndim == 0)
      throw InvalidInput(
          fmt::format("{}: argument \"{}\" = {} is out of range: input {} \"{}\" ({}) is 0-d, so it has no "
                      "axis to flatten at",
                      op.type(), arg, axis, role, op.input_name(in), t.describe()));
    throw InvalidInput(
        fmt::format("{}: argument \"{}\" = {} is out of range for input {} \"{}\" ({}), which has {} "
                    "dimensions (valid: {}..{})",
                    op.type(), arg, axis, role, op.input_name(in), t.describe(), ndim, -ndim, ndim - 1));
  }
  return static_cast<std::size_t>(axis < 0 ? axis + ndim : axis);
}

// Products of the dimensions before / from `axis` (the rows and columns of the 2-D view at that axis).
int64_t size_to_dim(const Tensor& t, std::size_t axis) {
  int64_t n = 1;
  for (std::size_t i = 0; i < axis; ++i) n *= t.dim(i);
  return n;
}
int64_t size_from_dim(const Tensor& t, std::size_t axis) {
  int64_t n = 1;
  for (std::size_t i = axis; i < t.ndim(); ++i) n *= t.dim(i);
  return n;
}

// ---------------------------------------------------------------------------------------------------
// Matrix product C = op(A) * op(B), C M x N contiguous, op(A)(i, k) = a.p[i * a.rs + k * a.cs].

template <class T>
struct View {
  const T* p;
  int64_t rs;  // step between rows
  int64_t cs;  // step between columns
};

// 32-byte vectors of GCC's vector extension: one AVX register, or two SSE registers in the baseline build.
// `type` is the register value; `unaligned` the same for loads and stores at any element address.
template <class T>
struct VecOf;
template <>
struct VecOf<float> {
  typedef float type __attribute__((vector_size(32)));
  typedef float unaligned __attribute__((vector_size(32), aligned(4), may_alias));
};
template <>
struct VecOf<double> {
  typedef double type __attribute__((vector_size(32)));
  typedef double unaligned __attribute__((vector_size(32), aligned(8), may_alias));
};
template <class T>
using Vec = typename VecOf<T>::type;
template <class T>
using VecU = typename VecOf<T>::unaligned;

constexpr int kPanelVecs = 2;  // a panel is kPanelVecs vectors wide: 16 floats or 8 doubles
template <class T>
constexpr int64_t kVecLanes = static_cast<int64_t>(32 / sizeof(T));
template <class T>
constexpr int64_t kPanelCols = kPanelVecs* kVecLanes<T>;
constexpr int64_t kDepthBlock = 256;  // k is walked in blocks of this many, so a packed panel stays in L1
constexpr int64_t kColumnRows = 8;    // rows computed side by side by the narrow-output kernel
// Outputs narrower than this go column by column (a matrix times a vector); wider ones by panels.
constexpr int64_t kNarrowCols = 4;
// With fewer rows than this a panel is read from B in place instead of being packed first.
constexpr int64_t kPackRows = 16;

// C[i0 .. i0+MR, j0 .. j0+nr) over k in [k0, k0+kc): MR x kPanelCols accumulators in registers, loaded
// from C (or zero for the first depth block), each getting its products in k order, then stored back.
// `panel` holds B(k0+k, j0 .. j0+kPanelCols) at panel + k * ldp (zero-padded past nr when packed).
template <class T, int MR>
[[gnu::always_inline]] inline void micro_kernel(const View<T>& a, int64_t i0, int64_t k0, int64_t kc, const T* panel,
                                                int64_t ldp, T* c, int64_t ldc, int64_t nr, bool first) {
  using V = Vec<T>;
  using VU = VecU<T>;
  constexpr int64_t NR = kPanelCols<T>;
  constexpr int64_t L = kVecLanes<T>;
  V acc[MR][kPanelVecs];
  for (int r = 0; r < MR; ++r) {
    const T* cr = c + (i0 + r) * ldc;
    if (first) {
      for (int v = 0; v < kPanelVecs; ++v) acc[r][v] = V{};
    } else if (nr == NR) {
      for (int v = 0; v < kPanelVecs; ++v) acc[r][v] = *reinterpret_cast<const VU*>(cr + v * L);
    } else {
      T tmp[NR] = {};
      for (int64_t j = 0; j < nr; ++j) tmp[j] = cr[j];
      for (int v = 0; v < kPanelVecs; ++v) acc[r][v] = *reinterpret_cast<const VU*>(tmp + v * L);
    }
  }
  const T* ar[MR];
  for (int r = 0; r < MR; ++r) ar[r] = a.p + (i0 + r) * a.rs + k0 * a.cs;
  const int64_t acs = a.cs;
  for (int64_t k = 0; k < kc; ++k) {
    const T* pk = panel + k * ldp;
    V b[kPanelVecs];
    for (int v = 0; v < kPanelVecs; ++v) b[v] = *reinterpret_cast<const VU*>(pk + v * L);
    for (int r = 0; r < MR; ++r) {
      const T x = ar[r][k * acs];
      for (int v = 0; v < kPanelVecs; ++v) acc[r][v] += b[v] * x;
    }
  }
  for (int r = 0; r < MR; ++r) {
    T* cr = c + (i0 + r) * ldc;
    if (nr == NR) {
      for (int v = 0; v < kPanelVecs; ++v) *reinterpret_cast<VU*>(cr + v * L) = acc[r][v];
    } else {
      T tmp[NR];
      for (int v = 0; v < kPanelVecs; ++v) *reinterpret_cast<VU*>(tmp + v * L) = acc[r][v];
      for (int64_t j = 0; j < nr; ++j) cr[j] = tmp[j];
    }
  }
}

// Column j of C for rows [i0, i0+R): R independent sums, each over k in order.
template <class T, int R>
[[gnu::always_inline]] inline void column_kernel(const View<T>& a, const View<T>& b, int64_t i0, int64_t j, int64_t K,
                                                 T* c, int64_t ldc) {
  T acc[R];
  for (int r = 0; r < R; ++r) acc[r] = T(0);
  const T* ar = a.p + i0 * a.rs;
  const T* bj = b.p + j * b.cs;
  for (int64_t k = 0; k < K; ++k) {
    const T y = bj[k * b.rs];
    for (int r = 0; r < R; ++r) acc[r] += ar[r * a.rs + k * a.cs] * y;
  }
  for (int r = 0; r < R; ++r) c[(i0 + r) * ldc + j] = acc[r];
}

// `scratch` holds at least kDepthBlock * kPanelCols<T> elements. MR: rows per micro-tile (6 x 2
// accumulators fit the 16 AVX registers; the baseline build, whose vectors take two SSE registers each,
// uses 2); the last M % MR rows go by 4, 2 and 1.
template <class T, int MR>
[[gnu::always_inline]] inline void gemm_body(int64_t M, int64_t N, int64_t K, const View<T>& a, const View<T>& b, T* c,
                                             T* scratch) {
  constexpr int64_t NR = kPanelCols<T>;
  if (M == 0 || N == 0) return;
  if (K == 0) {
    for (int64_t i = 0; i < M * N; ++i) c[i] = T(0);
    return;
  }
  if (N < kNarrowCols) {
    for (int64_t j = 0; j < N; ++j) {
      int64_t i = 0;
      for (; i + kColumnRows <= M; i += kColumnRows) column_kernel<T, kColumnRows>(a, b, i, j, K, c, N);
      for (; i < M; ++i) column_kernel<T, 1>(a, b, i, j, K, c, N);
    }
    return;
  }
  const bool pack = M >= kPackRows || b.cs != 1;
  for (int64_t k0 = 0; k0 < K; k0 += kDepthBlock) {
    const int64_t kc = std::min(kDepthBlock, K - k0);
    for (int64_t j0 = 0; j0 < N; j0 += NR) {
      const int64_t nr = std::min(NR, N - j0);
      const T* panel;
      int64_t ldp;
      if (pack || nr != NR) {
        for (int64_t k = 0; k < kc; ++k) {
          const T* src = b.p + (k0 + k) * b.rs + j0 * b.cs;
          T* dst = scratch + k * NR;
          int64_t j = 0;
          for (; j < nr; ++j) dst[j] = src[j * b.cs];
          for (; j < NR; ++j) dst[j] = T(0);
        }
        panel = scratch;
        ldp = NR;
      } else {
        panel = b.p + k0 * b.rs + j0;
        ldp = b.rs;
      }
      const bool first = k0 == 0;
      T* cj = c + j0;
      int64_t i = 0;
      for (; i + MR <= M; i += MR) micro_kernel<T, MR>(a, i, k0, kc, panel, ldp, cj, N, nr, first);
      if constexpr (MR > 4) {
        if (i + 4 <= M) {
          micro_kernel<T, 4>(a, i, k0, kc, panel, ldp, cj, N, nr, first);
          i += 4;
        }
      }
      if constexpr (MR > 2) {
        if (i + 2 <= M) {
          micro_kernel<T, 2>(a, i, k0, kc, panel, ldp, cj, N, nr, first);
          i += 2;
        }
      }
      for (; i < M; ++i) micro_kernel<T, 1>(a, i, k0, kc, panel, ldp, cj, N, nr, first);
    }
  }
}

template <class T>
void gemm_baseline(int64_t M, int64_t N, int64_t K, const View<T>& a, const View<T>& b, T* c, T* scratch) {
  gemm_body<T, 2>(M, N, K, a, b, c, scratch);
}
#ifdef MOKA_ELEMENTWISE_AVX2
template <class T>
[[gnu::target("avx2")]] void gemm_avx2(int64_t M, int64_t N, int64_t K, const View<T>& a, const View<T>& b, T* c,
                                       T* scratch) {
  gemm_body<T, 6>(M, N, K, a, b, c, scratch);
}
#endif

template <class T>
void gemm(int64_t M, int64_t N, int64_t K, const View<T>& a, const View<T>& b, T* c, std::vector<T>& scratch) {
  const auto need = static_cast<std::size_t>(kDepthBlock * kPanelCols<T>);
  if (scratch.size() < need) scratch.resize(need);
#ifdef MOKA_ELEMENTWISE_AVX2
  if (detail::kCpuHasAvx2) return gemm_avx2<T>(M, N, K, a, b, c, scratch.data());
#endif
  gemm_baseline<T>(M, N, K, a, b, c, scratch.data());
}

// Per-dtype scratch of a matrix-product operator (the packed panel), kept between runs.
struct GemmScratch {
  std::vector<float> f;
  std::vector<double> d;
  std::vector<float>& of(float) { return f; }
  std::vector<double>& of(double) { return d; }
};

// ---------------------------------------------------------------------------------------------------
// MatMul

class MatMulOp final : public OperatorBase {
 public:
  MatMulOp(const OperatorDef& def, Workspace* ws) : OperatorBase(def, ws) {
    axis_a_ = args().get_int("axis_a", 1);
    axis_b_ = args().get_int("axis_b", 1);
    trans_a_ = args().get_int("trans_a", 0) != 0;
    trans_b_ = args().get_int("trans_b", 0) != 0;
  }

  bool run() override {
    const Tensor& A = float_input(*this, 0, "A");
    const Tensor& B = same_dtype_input(*this, 1, "B", 0, "A");
    const std::size_t ax_a = canonical_axis(*this, "axis_a", axis_a_, 0, "A");
    const std::size_t ax_b = canonical_axis(*this, "axis_b", axis_b_, 1, "B");
    const int64_t a0 = size_to_dim(A, ax_a), a1 = size_from_dim(A, ax_a);
    const int64_t b0 = size_to_dim(B, ax_b), b1 = size_from_dim(B, ax_b);
    const int64_t M = trans_a_ ? a1 : a0, K = trans_a_ ? a0 : a1;
    const int64_t KB = trans_b_ ? b1 : b0, N = trans_b_ ? b0 : b1;
    if (K != KB)
      throw TypeError(fmt::format(
          "MatMul: dimension mismatch: {}A \"{}\" ({}, {} x {} flattened at axis_a = {}) has {} columns but {}B "
          "\"{}\" ({}, {} x {} flattened at axis_b = {}) has {} rows",
          trans_a_ ? "trans " : "", input_name(0), A.describe(), a0, a1, axis_a_, K, trans_b_ ? "trans " : "",
          input_name(1), B.describe(), b0, b1, axis_b_, KB));
    shape_.assign({M, N});
    Tensor& Y = output(0);
    Y.resize(A.dtype(), shape_);
    if (A.dtype() == DType::Float)
      compute<float>(A, B, Y, M, N, K, a1, b1);
    else
      compute<double>(A, B, Y, M, N, K, a1, b1);
    return true;
  }

 private:
  template <class T>
  void compute(const Tensor& A, const Tensor& B, Tensor& Y, int64_t M, int64_t N, int64_t K, int64_t a1, int64_t b1) {
    // A is stored a0 x a1 row-major: op(A)(i, k) is A[i][k], or A[k][i] when transposed; B likewise.
    const View<T> a{A.data<T>(), trans_a_ ? 1 : a1, trans_a_ ? a1 : 1};
    const View<T> b{B.data<T>(), trans_b_ ? 1 : b1, trans_b_ ? b1 : 1};
    gemm<T>(M, N, K, a, b, Y.mutable_data<T>(), scratch_.of(T{}));
  }

  int64_t axis_a_ = 1, axis_b_ = 1;
  bool trans_a_ = false, trans_b_ = false;
  std::vector<int64_t> shape_;
  GemmScratch scratch_;
};

// ---------------------------------------------------------------------------------------------------
// FC

class FCOp final : public OperatorBase {
 public:
  FCOp(const OperatorDef& def, Workspace* ws) : OperatorBase(def, ws) {
    axis_ = args().get_int("axis", 1);
    axis_w_ = args().get_int("axis_w", 1);
  }

  bool run() override {
    const Tensor& X = float_input(*this, 0, "X");
    const Tensor& W = same_dtype_input(*this, 1, "W", 0, "X");
    const Tensor& b = same_dtype_input(*this, 2, "b", 0, "X");
    const std::size_t ax = canonical_axis(*this, "axis", axis_, 0, "X");
    const std::size_t ax_w = canonical_axis(*this, "axis_w", axis_w_, 1, "W");
    const int64_t M = size_to_dim(X, ax), K = size_from_dim(X, ax);
    const int64_t N = size_to_dim(W, ax_w), KW = size_from_dim(W, ax_w);
    if (K != KW)
      throw TypeError(fmt::format(
          "FC: dimension mismatch: X \"{}\" ({}) is {} x {} flattened at axis = {}, W \"{}\" ({}) is {} x {} flattened "
          "at axis_w = {}; X's columns ({}) must equal W's columns ({}) (W is [N, K])",
          input_name(0), X.describe(), M, K, axis_, input_name(1), W.describe(), N, KW, axis_w_, K, KW));
    if (b.ndim() == 0 || b.dim(0) != N || b.numel() != N)
      throw TypeError(
          fmt::format("FC: bias b \"{}\" ({}) must have N = {} elements along its first dimension (one per "
                      "row of W \"{}\", {})",
                      input_name(2), b.describe(), N, input_name(1), W.describe()));
    shape_.assign(X.shape().begin(), X.shape().begin() + static_cast<std::ptrdiff_t>(ax));
    shape_.push_back(N);
    Tensor& Y = output(0);
    Y.resize(X.dtype(), shape_);
    if (X.dtype() == DType::Float)
      compute<float>(X, W, b, Y, M, N, K);
    else
      compute<double>(X, W, b, Y, M, N, K);
    return true;
  }

 private:
  template <class T>
  void compute(const Tensor& X, const Tensor& W, const Tensor& b, Tensor& Y, int64_t M, int64_t N, int64_t K) {
    // Y = X * W^T: op(B)(k, n) = W[n][k].
    const View<T> a{X.data<T>(), K, 1};
    const View<T> w{W.data<T>(), 1, K};
    T* py = Y.mutable_data<T>();
    gemm<T>(M, N, K, a, w, py, scratch_.of(T{}));
    const T* pb = b.data<T>();
    for (int64_t i = 0; i < M; ++i) {
      T* row = py + i * N;
      for (int64_t j = 0; j < N; ++j) row[j] += pb[j];
    }
  }

  int64_t axis_ = 1, axis_w_ = 1;
  std::vector<int64_t> shape_;
  GemmScratch scratch_;
};

// ---------------------------------------------------------------------------------------------------
// ReduceSum, ReduceMean

constexpr int kSumLanes = 16;

// x[0] + ... + x[n-1] in a fixed order: element k goes to partial sum k % 16 (all but the last n % 16
// elements), the 16 partial sums are combined pairwise (lane l with lane l + 8, then + 4, + 2, + 1),
// and the last n % 16 elements, summed in order, are added last.
template <class T>
[[gnu::always_inline]] inline T lane_sum(const T* x, int64_t n) {
  T acc[kSumLanes];
  for (int l = 0; l < kSumLanes; ++l) acc[l] = T(0);
  int64_t k = 0;
  for (; k + kSumLanes <= n; k += kSumLanes)
    for (int l = 0; l < kSumLanes; ++l) acc[l] += x[k + l];
  for (int w = kSumLanes / 2; w >= 1; w /= 2)
    for (int l = 0; l < w; ++l) acc[l] += acc[l + w];
  T tail = T(0);
  for (; k < n; ++k) tail += x[k];
  return acc[0] + tail;
}

// The reduction in the merged form built by ReduceOp: `outer` groups of dimensions (sizes and steps in
// y; a reduced group steps 0), then one innermost group of `inner` elements, reduced or not. y (zeroed
// by the caller) receives the sums.
struct ReducePlan {
  std::vector<int64_t> sizes;    // outer groups, outermost first
  std::vector<int64_t> y_steps;  // y step of each outer group
  int64_t inner = 1;
  bool inner_reduced = false;
};

template <class T>
[[gnu::always_inline]] inline void reduce_body(const ReducePlan& plan, const T* x, T* y, int64_t outer_count,
                                               int64_t* index) {
  const std::size_t ng = plan.sizes.size();
  for (std::size_t g = 0; g < ng; ++g) index[g] = 0;
  int64_t yo = 0;
  const int64_t inner = plan.inner;
  for (int64_t o = 0; o < outer_count; ++o) {
    const T* xb = x + o * inner;
    if (plan.inner_reduced) {
      y[yo] += lane_sum(xb, inner);
    } else {
      T* yb = y + yo;
      for (int64_t c = 0; c < inner; ++c) yb[c] += xb[c];
    }
    // Next outer position (odometer, innermost group fastest).
    for (std::size_t g = ng; g-- > 0;) {
      yo += plan.y_steps[g];
      if (++index[g] < plan.sizes[g]) break;
      yo -= plan.y_steps[g] * plan.sizes[g];
      index[g] = 0;
    }
  }
}

template <class T>
void reduce_baseline(const ReducePlan& plan, const T* x, T* y, int64_t outer_count, int64_t* index) {
  reduce_body<T>(plan, x, y, outer_count, index);
}
#ifdef MOKA_ELEMENTWISE_AVX2
template <class T>
[[gnu::target("avx2")]] void reduce_avx2(const ReducePlan& plan, const T* x, T* y, int64_t outer_count,
                                         int64_t* index) {
  reduce_body<T>(plan, x, y, outer_count, index);
}
#endif

template <bool kMean>
class ReduceOp final : public OperatorBase {
 public:
  ReduceOp(const OperatorDef& def, Workspace* ws) : OperatorBase(def, ws) {
    axes_arg_ = args().get_ints("axes", {});
    keepdims_ = args().get_int("keepdims", 1) != 0;
  }

  bool run() override {
    const Tensor& X = float_input(*this, 0, "data");
    const std::size_t ndim = X.ndim();
    reduced_.assign(ndim, 0);
    if (axes_arg_.empty()) {
      std::fill(reduced_.begin(), reduced_.end(), 1);
    } else {
      for (const int64_t axis : axes_arg_) {
        const auto nd = static_cast<int64_t>(ndim);
        if (axis < -nd || axis >= nd)
          throw InvalidInput(
              fmt::format("{}: axis {} in argument \"axes\" ({}) is out of range for input \"{}\" ({}), "
                          "which has {} dimensions{}",
                          type(), axis, fmt::join(axes_arg_, ", "), input_name(0), X.describe(), nd,
                          nd == 0 ? "" : fmt::format(" (valid: {}..{})", -nd, nd - 1)));
        const auto a = static_cast<std::size_t>(axis < 0 ? axis + nd : axis);
        if (reduced_[a])
          throw InvalidInput(fmt::format("{}: argument \"axes\" ({}) names dimension {} of input \"{}\" ({}) twice",
                                         type(), fmt::join(axes_arg_, ", "), a, input_name(0), X.describe()));
        reduced_[a] = 1;
      }
    }
    // Output shape, and the count of elements each output sums.
    shape_.clear();
    int64_t count = 1;
    for (std::size_t i = 0; i < ndim; ++i) {
      if (reduced_[i]) {
        count *= X.dim(i);
        if (keepdims_) shape_.push_back(1);
      } else {
        shape_.push_back(X.dim(i));
      }
    }
    Tensor& Y = output(0);
    Y.resize(X.dtype(), shape_);
    if (X.dtype() == DType::Float)
      compute<float>(X, Y, count);
    else
      compute<double>(X, Y, count);
    return true;
  }

 private:
  template <class T>
  void compute(const Tensor& X, Tensor& Y, int64_t count) {
    T* py = Y.mutable_data<T>();
    const int64_t ny = Y.numel();
    for (int64_t i = 0; i < ny; ++i) py[i] = T(0);
    if (X.numel() == 0) return;  // Caffe2: a sum over no elements is 0, and so is their mean
    // Merge neighbouring dimensions of the same kind (size-1 dimensions are either), so that the loops
    // below see alternating groups with the contiguous innermost one last.
    plan_.sizes.clear();
    plan_.y_steps.clear();
    groups_.clear();
    for (std::size_t i = 0; i < X.ndim(); ++i) {
      const int64_t d = X.dim(i);
      if (d == 1) continue;
      const bool red = reduced_[i] != 0;
      if (!groups_.empty() && groups_.back().second == red)
        groups_.back().first *= d;
      else
        groups_.emplace_back(d, red);
    }
    if (groups_.empty()) groups_.emplace_back(1, true);  // one element
    plan_.inner = groups_.back().first;
    plan_.inner_reduced = groups_.back().second;
    int64_t y_step = plan_.inner_reduced ? 1 : plan_.inner;
    int64_t outer_count = 1;
    plan_.sizes.resize(groups_.size() - 1);
    plan_.y_steps.resize(groups_.size() - 1);
    for (std::size_t g = groups_.size() - 1; g-- > 0;) {
      plan_.sizes[g] = groups_[g].first;
      plan_.y_steps[g] = groups_[g].second ? 0 : y_step;
      if (!groups_[g].second) y_step *= groups_[g].first;
      outer_count *= groups_[g].first;
    }
    index_.resize(plan_.sizes.size());
    const T* px = X.data<T>();
#ifdef MOKA_ELEMENTWISE_AVX2
    if (detail::kCpuHasAvx2)
      reduce_avx2<T>(plan_, px, py, outer_count, index_.data());
    else
#endif
      reduce_baseline<T>(plan_, px, py, outer_count, index_.data());
    if constexpr (kMean) {
      if (count != 1) {
        const T n = static_cast<T>(count);
        for (int64_t i = 0; i < ny; ++i) py[i] /= n;
      }
    }
  }

  std::vector<int64_t> axes_arg_;
  bool keepdims_ = true;
  std::vector<char> reduced_;
  std::vector<int64_t> shape_;
  std::vector<std::pair<int64_t, bool>> groups_;
  std::vector<int64_t> index_;
  ReducePlan plan_;
};

// ---------------------------------------------------------------------------------------------------
// Scale, WeightedSum, Sigmoid: elementwise, in place allowed (the output may be input 0).

struct MulFn {
  template <class T>
  static T apply(T a, T b) {
    return a * b;
  }
};

class ScaleOp final : public OperatorBase {
 public:
  ScaleOp(const OperatorDef& def, Workspace* ws) : OperatorBase(def, ws) {
    // The schema's Float type lets a string through (for fills); a scale must be a number.
    const Argument* a = args().find("scale");
    if (a != nullptr && a->s && !a->f && !a->i)
      throw InvalidInput(fmt::format("Scale: argument \"scale\" must be a number (f or i), got s = \"{}\"", *a->s));
    scale_ = args().get_float("scale", 1.0);
  }

  bool run() override {
    const Tensor& X = float_input(*this, 0, "X");
    Tensor& Y = output(0);
    Y.resize(X.dtype(), X.shape());  // in place: no-op
    const int64_t n = X.numel();
    if (X.dtype() == DType::Float)
      detail::elementwise_right<MulFn>(X.data<float>(), static_cast<float>(scale_), Y.mutable_data<float>(), n);
    else
      detail::elementwise_right<MulFn>(X.data<double>(), scale_, Y.mutable_data<double>(), n);
    return true;
  }

 private:
  double scale_ = 1.0;
};

// y = w0 * x0 + w1 * x1 (two inputs), and y += w * x (each further input).
template <class T>
[[gnu::always_inline]] inline void axpby_body(T* y, const T* x0, T w0, const T* x1, T w1, int64_t n) {
  for (int64_t k = 0; k < n; ++k) y[k] = w0 * x0[k] + w1 * x1[k];
}
template <class T>
[[gnu::always_inline]] inline void axpy_body(T* y, const T* x, T w, int64_t n) {
  for (int64_t k = 0; k < n; ++k) y[k] += w * x[k];
}
template <class T>
void axpby_baseline(T* y, const T* x0, T w0, const T* x1, T w1, int64_t n) {
  axpby_body(y, x0, w0, x1, w1, n);
}
template <class T>
void axpy_baseline(T* y, const T* x, T w, int64_t n) {
  axpy_body(y, x, w, n);
}
#ifdef MOKA_ELEMENTWISE_AVX2
template <class T>
[[gnu::target("avx2")]] void axpby_avx2(T* y, const T* x0, T w0, const T* x1, T w1, int64_t n) {
  axpby_body(y, x0, w0, x1, w1, n);
}
template <class T>
[[gnu::target("avx2")]] void axpy_avx2(T* y, const T* x, T w, int64_t n) {
  axpy_body(y, x, w, n);
}
#endif
template <class T>
void axpby(T* y, const T* x0, T w0, const T* x1, T w1, int64_t n) {
#ifdef MOKA_ELEMENTWISE_AVX2
  if (detail::kCpuHasAvx2) return axpby_avx2(y, x0, w0, x1, w1, n);
#endif
  axpby_baseline(y, x0, w0, x1, w1, n);
}
template <class T>
void axpy(T* y, const T* x, T w, int64_t n) {
#ifdef MOKA_ELEMENTWISE_AVX2
  if (detail::kCpuHasAvx2) return axpy_avx2(y, x, w, n);
#endif
  axpy_baseline(y, x, w, n);
}

class WeightedSumOp final : public OperatorBase {
 public:
  WeightedSumOp(const OperatorDef& def, Workspace* ws) : OperatorBase(def, ws) {
    if (input_size() < 2 || input_size() % 2 != 0)
      throw InvalidInput(
          fmt::format("WeightedSum: needs an even number of inputs, at least 2 (X_0, weight_0, X_1, "
                      "weight_1, ...); got {}",
                      input_size()));
  }

  bool run() override {
    const Tensor& X0 = float_input(*this, 0, "X_0");
    const std::size_t pairs = input_size() / 2;
    for (std::size_t p = 0; p < pairs; ++p) {
      const std::size_t xi = 2 * p, wi = 2 * p + 1;
      if (p > 0) {
        const Tensor& X = input(xi);
        if (X.dtype() != X0.dtype())
          throw TypeError(
              fmt::format("WeightedSum: input {} (X_{}, \"{}\", {}) has dtype {} but X_0 \"{}\" ({}) has "
                          "dtype {}; every X must have the same dtype, float32 or float64",
                          xi, p, input_name(xi), X.describe(), dtype_name(X.dtype()), input_name(0), X0.describe(),
                          dtype_name(X0.dtype())));
        if (X.shape() != X0.shape())
          throw TypeError(
              fmt::format("WeightedSum: input {} (X_{}, \"{}\", {}) has a different shape than X_0 \"{}\" "
                          "({}); every X must have the same shape",
                          xi, p, input_name(xi), X.describe(), input_name(0), X0.describe()));
      }
      const Tensor& w = input(wi);
      if (w.dtype() != DType::Float)
        throw TypeError(
            fmt::format("WeightedSum: input {} (weight_{}, \"{}\", {}) has dtype {}; weights must be float32 "
                        "tensors of one element",
                        wi, p, input_name(wi), w.describe(), dtype_name(w.dtype())));
      if (w.numel() != 1)
        throw TypeError(
            fmt::format("WeightedSum: input {} (weight_{}, \"{}\", {}) must have exactly one element, not {}", wi, p,
                        input_name(wi), w.describe(), w.numel()));
    }
    if (X0.dtype() == DType::Float)
      compute<float>(X0);
    else
      compute<double>(X0);
    return true;
  }

 private:
  template <class T>
  void compute(const Tensor& X0) {
    // Weights are read before the output is resized: none of them can be the output (the schema allows
    // only X_0 in place), but read them first anyway, as every other input.
    const T w0 = static_cast<T>(input(1).data<float>()[0]);
    Tensor& Y = output(0);
    Y.resize(X0.dtype(), X0.shape());  // in place on X_0: no-op
    const int64_t n = X0.numel();
    T* py = Y.mutable_data<T>();
    const T* p0 = X0.data<T>();
    if (input_size() == 2) {
      detail::elementwise_right<MulFn>(p0, w0, py, n);
      return;
    }
    const T w1 = static_cast<T>(input(3).data<float>()[0]);
    axpby<T>(py, p0, w0, input(2).data<T>(), w1, n);
    for (std::size_t i = 4; i < input_size(); i += 2) {
      const T wi = static_cast<T>(input(i + 1).data<float>()[0]);
      axpy<T>(py, input(i).data<T>(), wi, n);
    }
  }
};

class SigmoidOp final : public OperatorBase {
 public:
  using OperatorBase::OperatorBase;

  bool run() override {
    const Tensor& X = float_input(*this, 0, "X");
    Tensor& Y = output(0);
    Y.resize(X.dtype(), X.shape());  // in place: no-op
    if (X.dtype() == DType::Float)
      compute<float>(X.data<float>(), Y.mutable_data<float>(), X.numel());
    else
      compute<double>(X.data<double>(), Y.mutable_data<double>(), X.numel());
    return true;
  }

 private:
  template <class T>
  static void compute(const T* x, T* y, int64_t n) {
    for (int64_t k = 0; k < n; ++k) y[k] = T(1) / (T(1) + std::exp(-x[k]));
  }
};

}  // namespace

namespace detail {

void register_dense_math_ops(OperatorRegistry& reg) {
  reg.add(OpSchema("MatMul")
              .inputs(2)
              .outputs(1)
              .arg("axis_a", ArgType::Int,
                   "A is flattened to 2-D at this axis: rows = product of the dimensions before it, columns = product "
                   "of the rest (negative counts from the end)",
                   "1")
              .arg("axis_b", ArgType::Int, "the same for B", "1")
              .arg("trans_a", ArgType::Int, "non-zero: use the transpose of the flattened A", "0")
              .arg("trans_b", ArgType::Int, "non-zero: use the transpose of the flattened B", "0")
              .doc("Matrix product Y = op(A) * op(B) (inputs A, B; output Y). A and B are flattened to 2-D at "
                   "axis_a and axis_b, then transposed when trans_a / trans_b is set; op(A) is M x K, op(B) K x N and "
                   "Y is [M, N]. A and B are both float32 (float) or both float64 (double); other dtypes are a "
                   "TypeError. Each output sums its "
                   "K products in k order, so results are those of the plain triple loop on every CPU."),
          factory_of<MatMulOp>());
  reg.add(
      OpSchema("FC")
          .inputs(3)
          .outputs(1)
          .arg("axis", ArgType::Int, "X is flattened to 2-D [M, K] at this axis (negative counts from the end)", "1")
          .arg("axis_w", ArgType::Int, "W is flattened to 2-D [N, K] at this axis", "1")
          .doc("Fully connected layer Y = X * W^T + b (inputs X, W, b; output Y). X is flattened to [M, K] at "
               "axis, W to [N, K] at axis_w, b has N elements; Y has X's dimensions before axis followed by N. "
               "X, W and b are all float32 (float) or all float64 (double); other dtypes are a TypeError. Each output "
               "sums its K products "
               "in k order, then adds its bias."),
      factory_of<FCOp>());
  const char* const axes_doc = "dimensions to reduce (negative counts from the end); empty = all of them";
  const char* const keep_doc = "1: reduced dimensions stay, with size 1; 0: they are removed";
  reg.add(OpSchema("ReduceSum")
              .inputs(1)
              .outputs(1)
              .arg("axes", ArgType::Ints, axes_doc, "[] (all)")
              .arg("keepdims", ArgType::Int, keep_doc, "1")
              .doc("Sum of the input (data) over the dimensions in axes (output: reduced). Dtypes: float32 (float) or "
                   "float64 (double); others are a TypeError. Summing no elements gives 0. The summation order is "
                   "fixed (16 interleaved "
                   "partial sums over each contiguous run), the same on every CPU."),
          factory_of<ReduceOp<false>>());
  reg.add(OpSchema("ReduceMean")
              .inputs(1)
              .outputs(1)
              .arg("axes", ArgType::Ints, axes_doc, "[] (all)")
              .arg("keepdims", ArgType::Int, keep_doc, "1")
              .doc("Mean of the input (data) over the dimensions in axes (output: reduced): ReduceSum's sum divided "
                   "by the number of elements reduced. Dtypes: float32 (float) or float64 (double); others are a "
                   "TypeError. The mean of no "
                   "elements is 0, as in Caffe2."),
          factory_of<ReduceOp<true>>());
  reg.add(OpSchema("Scale")
              .inputs(1)
              .outputs(1)
              .allow_inplace({{0, 0}})
              .arg("scale", ArgType::Float, "the factor (rounded to float for a float input)", "1.0")
              .doc("Y = X * scale, elementwise (input X, output Y). Dtypes: float32 (float) or float64 (double); "
                   "others are a TypeError. Works "
                   "in place."),
          factory_of<ScaleOp>());
  reg.add(OpSchema("WeightedSum")
              .inputs(2, OpSchema::kUnbounded)
              .outputs(1)
              .allow_inplace({{0, 0}})
              .doc("Y = weight_0 * X_0 + weight_1 * X_1 + ... (inputs X_0, weight_0, X_1, weight_1, ...: an even "
                   "number, at least 2; output Y). Every X has one shape and one dtype, float32 (float) or float64 "
                   "(double); every weight is a float32 tensor of one element (other dtypes or sizes: TypeError). "
                   "Computed as w0 * X_0 + w1 * "
                   "X_1, then + w_i * X_i for each further pair in order. Works in place on X_0 only."),
          factory_of<WeightedSumOp>());
  reg.add(OpSchema("Sigmoid").inputs(1).outputs(1).allow_inplace({{0, 0}}).doc(
              "Y = 1 / (1 + exp(-X)), elementwise (input X, output Y). Dtypes: float32 (float) or float64 (double); "
              "others are a TypeError. Works in place."),
          factory_of<SigmoidOp>());
}

}  // namespace detail
}  // namespace moka
