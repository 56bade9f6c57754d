// Unit tests of the dense math operators: MatMul, FC, ReduceSum, ReduceMean, Scale, WeightedSum and Sigmoid.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "moka/exec/simple_net.h"
#include "ops_test_util.h"

namespace moka {
namespace {

using test::expect_error;
using test::feed;
using test::fetch;
using test::run_op;
using test::vals;
using I64 = std::vector<int64_t>;
using F = std::vector<float>;
using D = std::vector<double>;

Tensor mat(I64 shape, F v) { return Tensor::from_vector<float>(std::move(shape), v); }

// ----------------------------------------------------------------------------------------------- MatMul

// A = [[1,2,3],[4,5,6]], B = [[7,8],[9,10],[11,12]]: A * B = [[58,64],[139,154]].
const F kA = {1, 2, 3, 4, 5, 6};
const F kAt = {1, 4, 2, 5, 3, 6};  // A^T stored 3 x 2
const F kB = {7, 8, 9, 10, 11, 12};
const F kBt = {7, 9, 11, 8, 10, 12};  // B^T stored 2 x 3
const F kAB = {58, 64, 139, 154};

TEST(DenseMathOps, MatMulPlain) {
  Workspace ws;
  feed(ws, "a", mat({2, 3}, kA));
  feed(ws, "b", mat({3, 2}, kB));
  run_op(ws, "MatMul", {"a", "b"}, {"y"});
  EXPECT_EQ(fetch(ws, "y"), mat({2, 2}, kAB));
}

TEST(DenseMathOps, MatMulTransposes) {
  Workspace ws;
  feed(ws, "a", mat({2, 3}, kA));
  feed(ws, "at", mat({3, 2}, kAt));
  feed(ws, "b", mat({3, 2}, kB));
  feed(ws, "bt", mat({2, 3}, kBt));
  run_op(ws, "MatMul", {"at", "b"}, {"y1"}, {make_arg("trans_a", 1)});
  EXPECT_EQ(fetch(ws, "y1"), mat({2, 2}, kAB));
  run_op(ws, "MatMul", {"a", "bt"}, {"y2"}, {make_arg("trans_b", 1)});
  EXPECT_EQ(fetch(ws, "y2"), mat({2, 2}, kAB));
  run_op(ws, "MatMul", {"at", "bt"}, {"y3"}, {make_arg("trans_a", 1), make_arg("trans_b", 1)});
  EXPECT_EQ(fetch(ws, "y3"), mat({2, 2}, kAB));
  // B^T * A^T = (A B)^T = [[58,139],[64,154]].
  run_op(ws, "MatMul", {"b", "a"}, {"y4"}, {make_arg("trans_a", 1), make_arg("trans_b", 1)});
  EXPECT_EQ(fetch(ws, "y4"), mat({2, 2}, {58, 139, 64, 154}));
}

TEST(DenseMathOps, MatMulFlattensAtTheAxes) {
  Workspace ws;
  // A [1,2,3] flattened at axis 2 is the 2 x 3 A above; at axis -1 too.
  feed(ws, "a3", mat({1, 2, 3}, kA));
  feed(ws, "b", mat({3, 2}, kB));
  run_op(ws, "MatMul", {"a3", "b"}, {"y"}, {make_arg("axis_a", 2)});
  EXPECT_EQ(fetch(ws, "y"), mat({2, 2}, kAB));
  run_op(ws, "MatMul", {"a3", "b"}, {"y"}, {make_arg("axis_a", -1)});
  EXPECT_EQ(fetch(ws, "y"), mat({2, 2}, kAB));
  // With the default axis_a = 1, A [1,2,3] is 1 x 6: it does not fit B's 3 rows.
  expect_error<TypeError>(
      [&] {
        run_op(ws, "MatMul", {"a3", "b"}, {"y"});
      },
      {"MatMul", "dimension mismatch", "\"a3\"", "float32[1,2,3]", "1 x 6", "\"b\"", "float32[3,2]"});
  // axis_a = 0: A [2,3] is one row [1..6]; B [2,3,1] at axis_b = 2 is a 6 x 1 column of ones.
  feed(ws, "a", mat({2, 3}, kA));
  feed(ws, "ones", mat({2, 3, 1}, F(6, 1.0f)));
  run_op(ws, "MatMul", {"a", "ones"}, {"s"}, {make_arg("axis_a", 0), make_arg("axis_b", 2)});
  EXPECT_EQ(fetch(ws, "s"), mat({1, 1}, {21}));
  // B [3,1,2] at axis_b = 1 is 3 x 2 (the B above); trans_b then gives 2 x 3.
  feed(ws, "b3", mat({3, 1, 2}, kB));
  run_op(ws, "MatMul", {"a", "b3"}, {"y5"});
  EXPECT_EQ(fetch(ws, "y5"), mat({2, 2}, kAB));
  feed(ws, "bt3", mat({2, 3, 1}, kBt));
  run_op(ws, "MatMul", {"a", "bt3"}, {"y6"}, {make_arg("axis_b", -2), make_arg("trans_b", 1)});
  EXPECT_EQ(fetch(ws, "y6"), mat({2, 2}, kAB));
}

TEST(DenseMathOps, MatMulDouble) {
  Workspace ws;
  feed(ws, "a", Tensor::from_vector<double>({2, 2}, {0.5, 1, 2, -1}));
  feed(ws, "b", Tensor::from_vector<double>({2, 1}, {4, 0.25}));
  run_op(ws, "MatMul", {"a", "b"}, {"y"});
  EXPECT_EQ(fetch(ws, "y"), Tensor::from_vector<double>({2, 1}, {2.25, 7.75}));
}

TEST(DenseMathOps, MatMulEmptyInnerDimensionGivesZeros) {
  Workspace ws;
  feed(ws, "a", mat({2, 0}, {}));
  feed(ws, "b", mat({0, 3}, {}));
  feed(ws, "y", mat({1}, {42}));
  run_op(ws, "MatMul", {"a", "b"}, {"y"});
  EXPECT_EQ(fetch(ws, "y"), mat({2, 3}, F(6, 0.0f)));
  feed(ws, "e", mat({0, 2}, {}));
  feed(ws, "b2", mat({2, 3}, kA));
  run_op(ws, "MatMul", {"e", "b2"}, {"z"});
  EXPECT_EQ(fetch(ws, "z").shape(), (I64{0, 3}));
}

// The blocked kernels against the textbook loop (each output sums its products in k order from zero):
// bitwise equal for every transpose, on shapes that cover the narrow-output, direct-panel, packed-panel,
// partial-panel and several-depth-block paths.
template <class T>
void check_against_triple_loop(int64_t M, int64_t N, int64_t K, bool ta, bool tb, std::mt19937& rng) {
  std::uniform_real_distribution<double> dist(-1, 1);
  std::vector<T> a(static_cast<std::size_t>(M * K)), b(static_cast<std::size_t>(K * N));
  for (auto& v : a) v = static_cast<T>(dist(rng));
  for (auto& v : b) v = static_cast<T>(dist(rng));
  // a holds op(A) as stored: M x K, or K x M when transposed.
  auto A = [&](int64_t i, int64_t k) {
    return ta ? a[static_cast<std::size_t>(k * M + i)] : a[static_cast<std::size_t>(i * K + k)];
  };
  auto B = [&](int64_t k, int64_t j) {
    return tb ? b[static_cast<std::size_t>(j * K + k)] : b[static_cast<std::size_t>(k * N + j)];
  };
  std::vector<T> want(static_cast<std::size_t>(M * N));
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      T s = 0;
      for (int64_t k = 0; k < K; ++k) s += A(i, k) * B(k, j);
      want[static_cast<std::size_t>(i * N + j)] = s;
    }
  Workspace ws;
  feed(ws, "a", Tensor::from_vector<T>(ta ? I64{K, M} : I64{M, K}, a));
  feed(ws, "b", Tensor::from_vector<T>(tb ? I64{N, K} : I64{K, N}, b));
  run_op(ws, "MatMul", {"a", "b"}, {"y"},
         {make_arg("trans_a", static_cast<int64_t>(ta)), make_arg("trans_b", static_cast<int64_t>(tb))});
  EXPECT_EQ(fetch(ws, "y"), Tensor::from_vector<T>({M, N}, want))
      << "M=" << M << " N=" << N << " K=" << K << " trans_a=" << ta << " trans_b=" << tb;
}

TEST(DenseMathOps, MatMulKernelsMatchTheTripleLoopBitwise) {
  std::mt19937 rng(7);
  const int64_t shapes[][3] = {{1, 1, 1},     {5, 1, 7},   {37, 3, 300}, {5, 32, 9},  {5, 33, 9},
                               {37, 35, 300}, {16, 16, 1}, {64, 64, 64}, {3, 17, 513}};
  for (const auto& s : shapes)
    for (int t = 0; t < 4; ++t) {
      check_against_triple_loop<float>(s[0], s[1], s[2], (t & 1) != 0, (t & 2) != 0, rng);
      check_against_triple_loop<double>(s[0], s[1], s[2], (t & 1) != 0, (t & 2) != 0, rng);
    }
}

TEST(DenseMathOps, MatMulRerunsWithNewShapes) {
  Workspace ws;
  feed(ws, "a", mat({2, 3}, kA));
  feed(ws, "b", mat({3, 2}, kB));
  NetDef net;
  net.name = "n";
  net.op.push_back(make_op("MatMul", {"a", "b"}, {"y"}));
  SimpleNet* n = create_net(ws, net);
  n->run();
  EXPECT_EQ(fetch(ws, "y"), mat({2, 2}, kAB));
  feed(ws, "a", mat({1, 3}, {1, 0, 0}));
  n->run();
  EXPECT_EQ(fetch(ws, "y"), mat({1, 2}, {7, 8}));
}

TEST(DenseMathOps, MatMulErrors) {
  Workspace ws;
  feed(ws, "a", mat({2, 3}, kA));
  feed(ws, "b", mat({2, 2}, {1, 2, 3, 4}));
  feed(ws, "v", mat({3}, {1, 2, 3}));
  feed(ws, "s", Tensor::scalar<float>(1));
  feed(ws, "i", Tensor::from_vector<int32_t>({3, 2}, {1, 2, 3, 4, 5, 6}));
  feed(ws, "d", Tensor::from_vector<double>({3, 2}, {1, 2, 3, 4, 5, 6}));
  expect_error<TypeError>(
      [&] {
        run_op(ws, "MatMul", {"a", "b"}, {"y"});
      },
      {"MatMul: dimension mismatch", "\"a\" (float32[2,3], 2 x 3", "has 3 columns", "\"b\"", "float32[2,2]",
       "has 2 rows"});
  expect_error<TypeError>(
      [&] {
        run_op(ws, "MatMul", {"a", "b"}, {"y"}, {make_arg("trans_b", 1)});
      },
      {"MatMul: dimension mismatch", "trans B"});
  expect_error<TypeError>([&] { run_op(ws, "MatMul", {"a", "i"}, {"y"}); }, {"MatMul", "B \"i\"", "int32"});
  expect_error<TypeError>(
      [&] {
        run_op(ws, "MatMul", {"i", "a"}, {"y"});
      },
      {"MatMul", "A \"i\"", "dtype int32", "float32 (float) and float64 (double) only"});
  expect_error<TypeError>(
      [&] {
        run_op(ws, "MatMul", {"a", "d"}, {"y"});
      },
      {"MatMul", "\"d\"", "float64", "\"a\"", "float32", "must be the same"});
  expect_error<InvalidInput>(
      [&] {
        run_op(ws, "MatMul", {"a", "b"}, {"y"}, {make_arg("axis_a", 2)});
      },
      {"MatMul", "\"axis_a\" = 2", "out of range", "\"a\"", "float32[2,3]", "-2..1"});
  expect_error<InvalidInput>(
      [&] {
        run_op(ws, "MatMul", {"a", "b"}, {"y"}, {make_arg("axis_b", -3)});
      },
      {"MatMul", "\"axis_b\" = -3", "out of range", "\"b\""});
  // A 1-D input has no axis 1 (as in Caffe2); a 0-d input has no axis at all.
  expect_error<InvalidInput>([&] { run_op(ws, "MatMul", {"v", "b"}, {"y"}); }, {"MatMul", "\"axis_a\" = 1", "\"v\""});
  expect_error<InvalidInput>(
      [&] {
        run_op(ws, "MatMul", {"s", "b"}, {"y"}, {make_arg("axis_a", 0)});
      },
      {"MatMul", "\"s\"", "0-d"});
  ws.create_blob("not_a_tensor");
  expect_error<TypeError>([&] { run_op(ws, "MatMul", {"a", "not_a_tensor"}, {"y"}); }, {"not_a_tensor"});
  // Not in place; unknown arguments and wrong arities are refused by the schema.
  expect_error<InvalidInput>([&] { run_op(ws, "MatMul", {"a", "b"}, {"a"}); }, {"does not work in place"});
  expect_error<InvalidInput>([&] { run_op(ws, "MatMul", {"a"}, {"y"}); }, {"MatMul takes"});
  expect_error<InvalidInput>(
      [&] {
        run_op(ws, "MatMul", {"a", "b"}, {"y"}, {make_arg("transpose", 1)});
      },
      {"unknown argument \"transpose\""});
  expect_error<InvalidInput>([&] { run_op(ws, "MatMul", {"a", "b"}, {"y"}, {make_arg("trans_a", 0.5)}); }, {"trans_a"});
}

// ----------------------------------------------------------------------------------------------- FC

// X = [[1,2,3],[4,5,6]], W = [[1,0,-1],[2,1,0]], b = [10,20]: X W^T + b = [[8,24],[8,33]].
TEST(DenseMathOps, FCPlain) {
  Workspace ws;
  feed(ws, "x", mat({2, 3}, kA));
  feed(ws, "w", mat({2, 3}, {1, 0, -1, 2, 1, 0}));
  feed(ws, "b", mat({2}, {10, 20}));
  run_op(ws, "FC", {"x", "w", "b"}, {"y"});
  EXPECT_EQ(fetch(ws, "y"), mat({2, 2}, {8, 24, 8, 33}));
}

TEST(DenseMathOps, FCAxes) {
  Workspace ws;
  F x12;
  for (int i = 1; i <= 12; ++i) x12.push_back(static_cast<float>(i));
  feed(ws, "w", mat({2, 3}, {1, 0, -1, 2, 1, 0}));
  feed(ws, "b", mat({2}, {10, 20}));
  // X [2,2,3] at axis 2: four rows [1,2,3] .. [10,11,12]; Y keeps X's leading [2,2].
  feed(ws, "x", mat({2, 2, 3}, x12));
  run_op(ws, "FC", {"x", "w", "b"}, {"y"}, {make_arg("axis", 2)});
  EXPECT_EQ(fetch(ws, "y"), mat({2, 2, 2}, {8, 24, 8, 33, 8, 42, 8, 51}));
  run_op(ws, "FC", {"x", "w", "b"}, {"y"}, {make_arg("axis", -1)});
  EXPECT_EQ(fetch(ws, "y"), mat({2, 2, 2}, {8, 24, 8, 33, 8, 42, 8, 51}));
  // X [2,1,3] at the default axis 1: two rows of 3.
  feed(ws, "x2", mat({2, 1, 3}, kA));
  run_op(ws, "FC", {"x2", "w", "b"}, {"y2"});
  EXPECT_EQ(fetch(ws, "y2"), mat({2, 2}, {8, 24, 8, 33}));
  // W [1,2,3] at axis_w 2 is [2, 3]; W [2,3,1] at the default axis_w 1 is [2, 3] too.
  feed(ws, "w3", mat({1, 2, 3}, {1, 0, -1, 2, 1, 0}));
  run_op(ws, "FC", {"x2", "w3", "b"}, {"y3"}, {make_arg("axis_w", 2)});
  EXPECT_EQ(fetch(ws, "y3"), mat({2, 2}, {8, 24, 8, 33}));
  feed(ws, "w4", mat({2, 3, 1}, {1, 0, -1, 2, 1, 0}));
  run_op(ws, "FC", {"x2", "w4", "b"}, {"y4"});
  EXPECT_EQ(fetch(ws, "y4"), mat({2, 2}, {8, 24, 8, 33}));
  // axis 0: all of X is one row of 6 (W must then be [N, 6]).
  feed(ws, "w6", mat({1, 6}, {1, 1, 1, 1, 1, 1}));
  feed(ws, "b1", mat({1}, {0.5f}));
  run_op(ws, "FC", {"x2", "w6", "b1"}, {"y5"}, {make_arg("axis", 0)});
  EXPECT_EQ(fetch(ws, "y5"), mat({1}, {21.5f}));
}

TEST(DenseMathOps, FCOneOutputDouble) {
  // Logistic regression's shape: N = 1.
  Workspace ws;
  feed(ws, "x", Tensor::from_vector<double>({3, 2}, {1, 2, 3, 4, -1, 0.5}));
  feed(ws, "w", Tensor::from_vector<double>({1, 2}, {0.5, -2}));
  feed(ws, "b", Tensor::from_vector<double>({1}, {1}));
  run_op(ws, "FC", {"x", "w", "b"}, {"y"});
  EXPECT_EQ(fetch(ws, "y"), Tensor::from_vector<double>({3, 1}, {-2.5, -5.5, -0.5}));
}

TEST(DenseMathOps, FCErrors) {
  Workspace ws;
  feed(ws, "x", mat({2, 3}, kA));
  feed(ws, "w", mat({2, 3}, {1, 0, -1, 2, 1, 0}));
  feed(ws, "w4", mat({2, 4}, F(8, 1.0f)));
  feed(ws, "b", mat({2}, {10, 20}));
  feed(ws, "b3", mat({3}, {1, 2, 3}));
  feed(ws, "b21", mat({2, 1}, {1, 2}));
  feed(ws, "bs", Tensor::scalar<float>(1));
  feed(ws, "bd", Tensor::from_vector<double>({2}, {1, 2}));
  feed(ws, "xi", Tensor::from_vector<int64_t>({2, 3}, {1, 2, 3, 4, 5, 6}));
  expect_error<TypeError>(
      [&] {
        run_op(ws, "FC", {"x", "w4", "b"}, {"y"});
      },
      {"FC: dimension mismatch", "\"x\" (float32[2,3])", "2 x 3", "\"w4\" (float32[2,4])", "2 x 4"});
  expect_error<TypeError>(
      [&] {
        run_op(ws, "FC", {"x", "w", "b3"}, {"y"});
      },
      {"FC: bias b \"b3\" (float32[3])", "N = 2", "\"w\""});
  expect_error<TypeError>([&] { run_op(ws, "FC", {"x", "w", "bs"}, {"y"}); }, {"FC: bias b \"bs\" (float32[])"});
  // Caffe2 takes a b of N elements along its first dimension, whatever its rank.
  run_op(ws, "FC", {"x", "w", "b21"}, {"y"});
  EXPECT_EQ(fetch(ws, "y"), mat({2, 2}, {-1, 6, -1, 15}));
  expect_error<TypeError>(
      [&] {
        run_op(ws, "FC", {"xi", "w", "b"}, {"y"});
      },
      {"FC", "X \"xi\"", "int64", "float32 (float) and float64 (double) only"});
  expect_error<TypeError>(
      [&] {
        run_op(ws, "FC", {"x", "w", "bd"}, {"y"});
      },
      {"FC", "b \"bd\"", "float64", "X \"x\"", "must be the same"});
  expect_error<InvalidInput>(
      [&] {
        run_op(ws, "FC", {"x", "w", "b"}, {"y"}, {make_arg("axis", 2)});
      },
      {"FC", "\"axis\" = 2", "out of range", "\"x\""});
  expect_error<InvalidInput>(
      [&] {
        run_op(ws, "FC", {"x", "w", "b"}, {"y"}, {make_arg("axis_w", -3)});
      },
      {"FC", "\"axis_w\" = -3", "\"w\""});
  expect_error<InvalidInput>([&] { run_op(ws, "FC", {"x", "w"}, {"y"}); }, {"FC takes"});
  expect_error<InvalidInput>([&] { run_op(ws, "FC", {"x", "w", "b"}, {"x"}); }, {"does not work in place"});
}

// ----------------------------------------------------------------------------------------------- ReduceSum, ReduceMean

TEST(DenseMathOps, ReduceAllByDefault) {
  Workspace ws;
  feed(ws, "x", mat({2, 3}, kA));
  run_op(ws, "ReduceSum", {"x"}, {"s"});
  EXPECT_EQ(fetch(ws, "s"), mat({1, 1}, {21}));
  run_op(ws, "ReduceMean", {"x"}, {"m"});
  EXPECT_EQ(fetch(ws, "m"), mat({1, 1}, {3.5f}));
  run_op(ws, "ReduceSum", {"x"}, {"s0"}, {make_arg("keepdims", 0)});
  EXPECT_EQ(fetch(ws, "s0"), Tensor::scalar<float>(21));
  run_op(ws, "ReduceMean", {"x"}, {"m0"}, {make_arg("axes", I64{0, 1}), make_arg("keepdims", 0)});
  EXPECT_EQ(fetch(ws, "m0"), Tensor::scalar<float>(3.5f));
  run_op(ws, "ReduceSum", {"x"}, {"s2"}, {make_arg("axes", I64{})});
  EXPECT_EQ(fetch(ws, "s2"), mat({1, 1}, {21}));
}

TEST(DenseMathOps, ReduceOneAxis) {
  Workspace ws;
  feed(ws, "x", mat({2, 3}, kA));  // [[1,2,3],[4,5,6]]
  run_op(ws, "ReduceSum", {"x"}, {"c"}, {make_arg("axes", I64{0})});
  EXPECT_EQ(fetch(ws, "c"), mat({1, 3}, {5, 7, 9}));
  run_op(ws, "ReduceSum", {"x"}, {"c0"}, {make_arg("axes", I64{0}), make_arg("keepdims", 0)});
  EXPECT_EQ(fetch(ws, "c0"), mat({3}, {5, 7, 9}));
  run_op(ws, "ReduceMean", {"x"}, {"cm"}, {make_arg("axes", I64{0}), make_arg("keepdims", 0)});
  EXPECT_EQ(fetch(ws, "cm"), mat({3}, {2.5f, 3.5f, 4.5f}));
  run_op(ws, "ReduceSum", {"x"}, {"r"}, {make_arg("axes", I64{1})});
  EXPECT_EQ(fetch(ws, "r"), mat({2, 1}, {6, 15}));
  run_op(ws, "ReduceMean", {"x"}, {"rm"}, {make_arg("axes", I64{-1}), make_arg("keepdims", 0)});
  EXPECT_EQ(fetch(ws, "rm"), mat({2}, {2, 5}));
}

TEST(DenseMathOps, ReduceThreeDimensions) {
  // x[i][j][k] = 1 + 6i + 2j + k, shape [2,3,2].
  Workspace ws;
  F x;
  for (int i = 1; i <= 12; ++i) x.push_back(static_cast<float>(i));
  feed(ws, "x", mat({2, 3, 2}, x));
  // Both ends: sum over i and k = 18 + 8j.
  run_op(ws, "ReduceSum", {"x"}, {"e"}, {make_arg("axes", I64{0, 2}), make_arg("keepdims", 0)});
  EXPECT_EQ(fetch(ws, "e"), mat({3}, {18, 26, 34}));
  run_op(ws, "ReduceMean", {"x"}, {"em"}, {make_arg("axes", I64{2, 0})});
  EXPECT_EQ(fetch(ws, "em"), mat({1, 3, 1}, {4.5f, 6.5f, 8.5f}));
  // Middle: sum over j = 9 + 18i + 3k.
  run_op(ws, "ReduceSum", {"x"}, {"m"}, {make_arg("axes", I64{1})});
  EXPECT_EQ(fetch(ws, "m"), mat({2, 1, 2}, {9, 12, 27, 30}));
  run_op(ws, "ReduceMean", {"x"}, {"mm"}, {make_arg("axes", I64{-2}), make_arg("keepdims", 0)});
  EXPECT_EQ(fetch(ws, "mm"), mat({2, 2}, {3, 4, 9, 10}));
  // Leading two: sum over i and j = 36 + k... [1+3+5+7+9+11, 2+4+..+12] = [36, 42].
  run_op(ws, "ReduceSum", {"x"}, {"l"}, {make_arg("axes", I64{0, 1}), make_arg("keepdims", 0)});
  EXPECT_EQ(fetch(ws, "l"), mat({2}, {36, 42}));
  // Trailing two: [1+..+6, 7+..+12] = [21, 57].
  run_op(ws, "ReduceSum", {"x"}, {"t"}, {make_arg("axes", I64{1, 2})});
  EXPECT_EQ(fetch(ws, "t"), mat({2, 1, 1}, {21, 57}));
}

TEST(DenseMathOps, ReduceSizeOneScalarAndEmpty) {
  Workspace ws;
  feed(ws, "x", mat({2, 1, 3}, kA));
  run_op(ws, "ReduceSum", {"x"}, {"y"}, {make_arg("axes", I64{1})});
  EXPECT_EQ(fetch(ws, "y"), mat({2, 1, 3}, kA));
  run_op(ws, "ReduceMean", {"x"}, {"y0"}, {make_arg("axes", I64{1}), make_arg("keepdims", 0)});
  EXPECT_EQ(fetch(ws, "y0"), mat({2, 3}, kA));
  feed(ws, "s", Tensor::scalar<double>(2.5));
  run_op(ws, "ReduceSum", {"s"}, {"ss"});
  EXPECT_EQ(fetch(ws, "ss"), Tensor::scalar<double>(2.5));
  run_op(ws, "ReduceMean", {"s"}, {"sm"}, {make_arg("keepdims", 0)});
  EXPECT_EQ(fetch(ws, "sm"), Tensor::scalar<double>(2.5));
  // No elements: a sum of nothing is 0, and so is its mean (Caffe2).
  feed(ws, "e", mat({0, 3}, {}));
  run_op(ws, "ReduceSum", {"e"}, {"es"}, {make_arg("axes", I64{0})});
  EXPECT_EQ(fetch(ws, "es"), mat({1, 3}, {0, 0, 0}));
  run_op(ws, "ReduceMean", {"e"}, {"em"}, {make_arg("keepdims", 0)});
  EXPECT_EQ(fetch(ws, "em"), Tensor::scalar<float>(0));
  run_op(ws, "ReduceMean", {"e"}, {"er"}, {make_arg("axes", I64{1})});
  EXPECT_EQ(fetch(ws, "er").shape(), (I64{0, 1}));
}

TEST(DenseMathOps, ReduceDouble) {
  Workspace ws;
  feed(ws, "x", Tensor::from_vector<double>({2, 2}, {0.25, 0.5, 1, 2}));
  run_op(ws, "ReduceSum", {"x"}, {"s"}, {make_arg("axes", I64{0}), make_arg("keepdims", 0)});
  EXPECT_EQ(fetch(ws, "s"), Tensor::from_vector<double>({2}, {1.25, 2.5}));
  run_op(ws, "ReduceMean", {"x"}, {"m"}, {make_arg("keepdims", 0)});
  EXPECT_EQ(fetch(ws, "m"), Tensor::scalar<double>(0.9375));
}

TEST(DenseMathOps, ReduceLongRunsAndColumns) {
  Workspace ws;
  // 100003 ones (a multiple of 16 plus 3): every partial sum is an exact integer.
  feed(ws, "ones", mat({100003}, F(100003, 1.0f)));
  run_op(ws, "ReduceSum", {"ones"}, {"s"}, {make_arg("keepdims", 0)});
  EXPECT_EQ(fetch(ws, "s"), Tensor::scalar<float>(100003));
  run_op(ws, "ReduceMean", {"ones"}, {"m"}, {make_arg("keepdims", 0)});
  EXPECT_EQ(fetch(ws, "m"), Tensor::scalar<float>(1));
  // [1000, 3] of 0.5 over axis 0, and [3, 1000] over axis 1.
  feed(ws, "c", mat({1000, 3}, F(3000, 0.5f)));
  run_op(ws, "ReduceSum", {"c"}, {"cs"}, {make_arg("axes", I64{0}), make_arg("keepdims", 0)});
  EXPECT_EQ(fetch(ws, "cs"), mat({3}, {500, 500, 500}));
  feed(ws, "r", mat({3, 1000}, F(3000, 0.5f)));
  run_op(ws, "ReduceMean", {"r"}, {"rm"}, {make_arg("axes", I64{1}), make_arg("keepdims", 0)});
  EXPECT_EQ(fetch(ws, "rm"), mat({3}, {0.5f, 0.5f, 0.5f}));
}

TEST(DenseMathOps, ReduceSumHasItsDocumentedOrder) {
  // 2^24 followed by 16 ones. In float a running sum stays at 2^24 (each + 1 rounds back to it); the
  // documented order (16 interleaved partial sums, combined l + 8, l + 4, l + 2, l + 1, then the tail)
  // adds the ones among themselves first: 2^24+0 (lane 8's one is lost), +2, +4, +8, then + 1 for the
  // tail, 16777231, which rounds to even: 16777232.
  Workspace ws;
  F x(17, 1.0f);
  x[0] = 16777216.0f;
  feed(ws, "x", mat({17}, x));
  run_op(ws, "ReduceSum", {"x"}, {"s"}, {make_arg("keepdims", 0)});
  EXPECT_EQ(fetch(ws, "s").item<float>(), 16777232.0f);
  // The same every run.
  for (int i = 0; i < 3; ++i) {
    run_op(ws, "ReduceSum", {"x"}, {"s2"}, {make_arg("keepdims", 0)});
    EXPECT_EQ(fetch(ws, "s2"), fetch(ws, "s"));
  }
}

TEST(DenseMathOps, ReduceErrors) {
  Workspace ws;
  feed(ws, "x", mat({2, 3}, kA));
  feed(ws, "s", Tensor::scalar<float>(1));
  feed(ws, "i", Tensor::from_vector<int32_t>({2}, {1, 2}));
  feed(ws, "b", Tensor::from_vector<bool>({2}, {true, false}));
  for (const char* op : {"ReduceSum", "ReduceMean"}) {
    expect_error<InvalidInput>([&] { run_op(ws, op, {"x"}, {"y"}, {make_arg("axes", I64{2})}); },
                               {op, "axis 2", "\"axes\" (2)", "out of range", "\"x\" (float32[2,3])", "-2..1"});
    expect_error<InvalidInput>(
        [&] {
          run_op(ws, op, {"x"}, {"y"}, {make_arg("axes", I64{0, -3})});
        },
        {op, "axis -3", "(0, -3)"});
    expect_error<InvalidInput>(
        [&] {
          run_op(ws, op, {"x"}, {"y"}, {make_arg("axes", I64{1, -1})});
        },
        {op, "\"axes\" (1, -1)", "dimension 1", "twice"});
    expect_error<InvalidInput>([&] { run_op(ws, op, {"s"}, {"y"}, {make_arg("axes", I64{0})}); },
                               {op, "axis 0", "\"s\" (float32[])", "0 dimensions"});
    expect_error<TypeError>([&] { run_op(ws, op, {"i"}, {"y"}); },
                            {op, "\"i\"", "int32", "float32 (float) and float64 (double) only"});
    expect_error<TypeError>([&] { run_op(ws, op, {"b"}, {"y"}); }, {op, "\"b\"", "bool"});
    expect_error<InvalidInput>([&] { run_op(ws, op, {"x"}, {"x"}); }, {"does not work in place"});
    expect_error<InvalidInput>([&] { run_op(ws, op, {"x"}, {"y"}, {make_arg("axes", int64_t{1})}); }, {"axes"});
  }
}

// ----------------------------------------------------------------------------------------------- Scale

TEST(DenseMathOps, Scale) {
  Workspace ws;
  feed(ws, "x", mat({3}, {1, 2, -3}));
  run_op(ws, "Scale", {"x"}, {"y"}, {make_arg("scale", 2.5)});
  EXPECT_EQ(fetch(ws, "y"), mat({3}, {2.5f, 5, -7.5f}));
  run_op(ws, "Scale", {"x"}, {"d"});  // default scale 1
  EXPECT_EQ(fetch(ws, "d"), mat({3}, {1, 2, -3}));
  run_op(ws, "Scale", {"x"}, {"z"}, {make_arg("scale", int64_t{-2})});  // an integer scale is accepted
  EXPECT_EQ(fetch(ws, "z"), mat({3}, {-2, -4, 6}));
  // The scale is rounded to float for a float input, and kept whole for a double input.
  feed(ws, "f", mat({1}, {3}));
  run_op(ws, "Scale", {"f"}, {"f1"}, {make_arg("scale", 0.1)});
  EXPECT_EQ(fetch(ws, "f1").item<float>(), 3.0f * 0.1f);
  feed(ws, "g", Tensor::from_vector<double>({2, 1}, {3, -1}));
  run_op(ws, "Scale", {"g"}, {"g1"}, {make_arg("scale", 0.1)});
  EXPECT_EQ(fetch(ws, "g1"), Tensor::from_vector<double>({2, 1}, {3 * 0.1, -0.1}));
}

TEST(DenseMathOps, ScaleInPlace) {
  Workspace ws;
  feed(ws, "x", mat({2, 2}, {1, 2, 3, 4}));
  run_op(ws, "Scale", {"x"}, {"x"}, {make_arg("scale", 0.5)});
  EXPECT_EQ(fetch(ws, "x"), mat({2, 2}, {0.5f, 1, 1.5f, 2}));
}

TEST(DenseMathOps, ScaleErrors) {
  Workspace ws;
  feed(ws, "i", Tensor::from_vector<int64_t>({2}, {1, 2}));
  feed(ws, "x", mat({1}, {1}));
  expect_error<TypeError>([&] { run_op(ws, "Scale", {"i"}, {"y"}, {make_arg("scale", 2.0)}); },
                          {"Scale", "\"i\"", "int64", "float32 (float) and float64 (double) only"});
  expect_error<InvalidInput>([&] { run_op(ws, "Scale", {"x"}, {"y"}, {make_arg("scale", "two")}); }, {"scale"});
}

// ----------------------------------------------------------------------------------------------- WeightedSum

TEST(DenseMathOps, WeightedSum) {
  Workspace ws;
  feed(ws, "x0", mat({3}, {1, 2, 3}));
  feed(ws, "w0", mat({1}, {2}));
  feed(ws, "x1", mat({3}, {10, 20, 30}));
  feed(ws, "w1", Tensor::scalar<float>(0.5f));  // a 0-d weight has one element too
  feed(ws, "x2", mat({3}, {1, 1, 1}));
  feed(ws, "w2", mat({1, 1}, {-1}));
  run_op(ws, "WeightedSum", {"x0", "w0"}, {"y1"});
  EXPECT_EQ(fetch(ws, "y1"), mat({3}, {2, 4, 6}));
  run_op(ws, "WeightedSum", {"x0", "w0", "x1", "w1"}, {"y2"});
  EXPECT_EQ(fetch(ws, "y2"), mat({3}, {7, 14, 21}));
  run_op(ws, "WeightedSum", {"x0", "w0", "x1", "w1", "x2", "w2"}, {"y3"});
  EXPECT_EQ(fetch(ws, "y3"), mat({3}, {6, 13, 20}));
  // The same X twice.
  run_op(ws, "WeightedSum", {"x0", "w0", "x0", "w2"}, {"y4"});
  EXPECT_EQ(fetch(ws, "y4"), mat({3}, {1, 2, 3}));
}

TEST(DenseMathOps, WeightedSumInPlaceOnX0) {
  // The SGD update: param = 1 * param + (-lr) * grad.
  Workspace ws;
  feed(ws, "param", mat({2, 2}, {1, 2, 3, 4}));
  feed(ws, "one", mat({1}, {1}));
  feed(ws, "grad", mat({2, 2}, {10, 20, 30, 40}));
  feed(ws, "neg_lr", mat({1}, {-0.5f}));
  run_op(ws, "WeightedSum", {"param", "one", "grad", "neg_lr"}, {"param"});
  EXPECT_EQ(fetch(ws, "param"), mat({2, 2}, {-4, -8, -12, -16}));
  run_op(ws, "WeightedSum", {"param", "neg_lr"}, {"param"});
  EXPECT_EQ(fetch(ws, "param"), mat({2, 2}, {2, 4, 6, 8}));
}

TEST(DenseMathOps, WeightedSumDoubleWithFloatWeights) {
  Workspace ws;
  feed(ws, "x0", Tensor::from_vector<double>({2}, {1, 0.5}));
  feed(ws, "w0", mat({1}, {0.25f}));
  feed(ws, "x1", Tensor::from_vector<double>({2}, {4, 8}));
  feed(ws, "w1", mat({1}, {-1}));
  run_op(ws, "WeightedSum", {"x0", "w0", "x1", "w1"}, {"y"});
  EXPECT_EQ(fetch(ws, "y"), Tensor::from_vector<double>({2}, {-3.75, -7.875}));
}

TEST(DenseMathOps, WeightedSumErrors) {
  Workspace ws;
  feed(ws, "x0", mat({3}, {1, 2, 3}));
  feed(ws, "w0", mat({1}, {2}));
  feed(ws, "x1", mat({3}, {10, 20, 30}));
  feed(ws, "x13", mat({1, 3}, {10, 20, 30}));
  feed(ws, "xd", Tensor::from_vector<double>({3}, {1, 2, 3}));
  feed(ws, "xi", Tensor::from_vector<int32_t>({3}, {1, 2, 3}));
  feed(ws, "w2", mat({2}, {1, 2}));
  feed(ws, "we", mat({0}, {}));
  feed(ws, "wd", Tensor::from_vector<double>({1}, {1}));
  expect_error<InvalidInput>(
      [&] {
        run_op(ws, "WeightedSum", {"x0", "w0", "x1"}, {"y"});
      },
      {"WeightedSum", "even number of inputs", "got 3"});
  expect_error<InvalidInput>([&] { run_op(ws, "WeightedSum", {"x0"}, {"y"}); }, {"WeightedSum takes"});
  expect_error<TypeError>(
      [&] {
        run_op(ws, "WeightedSum", {"x0", "w0", "x1", "w2"}, {"y"});
      },
      {"WeightedSum", "input 3 (weight_1, \"w2\", float32[2])", "exactly one element"});
  expect_error<TypeError>(
      [&] {
        run_op(ws, "WeightedSum", {"x0", "we"}, {"y"});
      },
      {"WeightedSum", "weight_0, \"we\"", "exactly one element"});
  expect_error<TypeError>(
      [&] {
        run_op(ws, "WeightedSum", {"x0", "wd"}, {"y"});
      },
      {"WeightedSum", "weight_0, \"wd\"", "dtype float64", "weights must be float32"});
  expect_error<TypeError>(
      [&] {
        run_op(ws, "WeightedSum", {"x0", "w0", "x13", "w0"}, {"y"});
      },
      {"WeightedSum", "X_1, \"x13\", float32[1,3]", "different shape", "\"x0\" (float32[3])"});
  expect_error<TypeError>(
      [&] {
        run_op(ws, "WeightedSum", {"x0", "w0", "xd", "w0"}, {"y"});
      },
      {"WeightedSum", "X_1, \"xd\"", "dtype float64", "\"x0\"", "float32"});
  expect_error<TypeError>(
      [&] {
        run_op(ws, "WeightedSum", {"xi", "w0"}, {"y"});
      },
      {"WeightedSum", "X_0 \"xi\"", "int32", "float32 (float) and float64 (double) only"});
  // In place only on X_0 (Caffe2: "put the output as input #0"); never on a weight.
  expect_error<InvalidInput>(
      [&] {
        run_op(ws, "WeightedSum", {"x0", "w0", "x1", "w0"}, {"x1"});
      },
      {"input 2 and output 0 are both \"x1\""});
  expect_error<InvalidInput>(
      [&] {
        run_op(ws, "WeightedSum", {"x0", "w0"}, {"w0"});
      },
      {"input 1 and output 0 are both \"w0\""});
  // Nothing was written by the failed runs.
  const Tensor* y = ws.blob("y").tensor_or_null();
  EXPECT_TRUE(y == nullptr || !y->defined());
}

// ----------------------------------------------------------------------------------------------- Sigmoid

TEST(DenseMathOps, Sigmoid) {
  Workspace ws;
  const float l3 = std::log(3.0f);
  feed(ws, "x", mat({5}, {0, l3, -l3, 100, -100}));
  run_op(ws, "Sigmoid", {"x"}, {"y"});
  const auto y = vals<float>(fetch(ws, "y"));
  EXPECT_EQ(y[0], 0.5f);
  EXPECT_FLOAT_EQ(y[1], 0.75f);
  EXPECT_FLOAT_EQ(y[2], 0.25f);
  EXPECT_EQ(y[3], 1.0f);
  EXPECT_EQ(y[4], 0.0f);  // exp(100) overflows float: 1 / inf
  feed(ws, "d", Tensor::from_vector<double>({2, 1}, {std::log(3.0), -100}));
  run_op(ws, "Sigmoid", {"d"}, {"e"});
  const auto e = vals<double>(fetch(ws, "e"));
  EXPECT_DOUBLE_EQ(e[0], 0.75);
  EXPECT_DOUBLE_EQ(e[1], 1 / (1 + std::exp(100.0)));
  EXPECT_EQ(fetch(ws, "e").shape(), (I64{2, 1}));
  feed(ws, "n", mat({1}, {std::numeric_limits<float>::quiet_NaN()}));
  run_op(ws, "Sigmoid", {"n"}, {"nn"});
  EXPECT_TRUE(std::isnan(fetch(ws, "nn").item<float>()));
}

TEST(DenseMathOps, SigmoidInPlace) {
  Workspace ws;
  feed(ws, "x", mat({2}, {0, 0}));
  run_op(ws, "Sigmoid", {"x"}, {"x"});
  EXPECT_EQ(fetch(ws, "x"), mat({2}, {0.5f, 0.5f}));
}

TEST(DenseMathOps, SigmoidErrors) {
  Workspace ws;
  feed(ws, "i", Tensor::from_vector<int8_t>({1}, {1}));
  feed(ws, "s", Tensor::from_vector<std::string>({1}, {"a"}));
  expect_error<TypeError>([&] { run_op(ws, "Sigmoid", {"i"}, {"y"}); }, {"Sigmoid", "\"i\"", "int8"});
  expect_error<TypeError>([&] { run_op(ws, "Sigmoid", {"s"}, {"y"}); }, {"Sigmoid", "\"s\"", "string"});
  expect_error<InvalidInput>([&] { run_op(ws, "Sigmoid", {"i"}, {"y"}, {make_arg("scale", 1.0)}); },
                             {"unknown argument \"scale\""});
}

// ----------------------------------------------------------------------------------------------- Schemas, a net

TEST(DenseMathOps, SchemasHaveCaffe2sArgumentsAndDefaults) {
  register_all_operators();
  const auto& reg = OperatorRegistry::global();
  auto def = [&](const char* type, const char* arg) {
    const OpSchema* s = reg.schema(type);
    EXPECT_NE(s, nullptr) << type;
    const ArgSpec* a = s ? s->find_arg(arg) : nullptr;
    EXPECT_NE(a, nullptr) << type << "." << arg;
    return a ? a->default_text : std::string("<none>");
  };
  EXPECT_EQ(def("MatMul", "axis_a"), "1");
  EXPECT_EQ(def("MatMul", "axis_b"), "1");
  EXPECT_EQ(def("MatMul", "trans_a"), "0");
  EXPECT_EQ(def("MatMul", "trans_b"), "0");
  EXPECT_EQ(def("FC", "axis"), "1");
  EXPECT_EQ(def("FC", "axis_w"), "1");
  EXPECT_EQ(def("ReduceSum", "keepdims"), "1");
  EXPECT_EQ(def("ReduceMean", "keepdims"), "1");
  EXPECT_EQ(def("ReduceMean", "axes"), "[] (all)");
  EXPECT_EQ(def("Scale", "scale"), "1.0");
  for (const char* t : {"MatMul", "FC", "ReduceSum", "ReduceMean", "Scale", "WeightedSum", "Sigmoid"}) {
    const OpSchema* s = reg.schema(t);
    ASSERT_NE(s, nullptr) << t;
    EXPECT_NE(s->doc().find("float"), std::string::npos) << t << " doc says which dtypes";
    EXPECT_TRUE(s->is_fiber_safe()) << t;
  }
  EXPECT_EQ(reg.schema("WeightedSum")->max_inputs(), OpSchema::kUnbounded);
  EXPECT_EQ(reg.schema("FC")->min_inputs(), 3);
}

TEST(DenseMathOps, LogisticRegressionStepInANet) {
  // One SGD step of logistic regression, with hand-computed values: x = [[1, 2], [-1, 0]], w = [[0, 0]],
  // b = [0], labels 1 and 0. p = sigmoid(0) = 0.5 for both rows; dlogit = p - label = [-0.5, 0.5] / 2
  // (ReduceMean) = [-0.25, 0.25]; dw = dlogit^T x = [-0.25 - 0.25, -0.5] = [-0.5, -0.5]; db = 0;
  // with lr = 1: w = [0.5, 0.5], b = 0.
  Workspace ws;
  feed(ws, "x", mat({2, 2}, {1, 2, -1, 0}));
  feed(ws, "w", mat({1, 2}, {0, 0}));
  feed(ws, "b", mat({1}, {0}));
  feed(ws, "label", mat({2, 1}, {1, 0}));
  feed(ws, "one", mat({1}, {1}));
  feed(ws, "neg_one", mat({1}, {-1}));
  feed(ws, "neg_lr", mat({1}, {-1}));
  NetDef net;
  net.name = "step";
  net.op = {
      make_op("FC", {"x", "w", "b"}, {"logit"}),
      make_op("Sigmoid", {"logit"}, {"p"}),
      make_op("WeightedSum", {"p", "one", "label", "neg_one"}, {"diff"}),
      make_op("Scale", {"diff"}, {"dlogit"}, {make_arg("scale", 0.5)}),  // 1 / batch
      make_op("MatMul", {"dlogit", "x"}, {"dw"}, {make_arg("trans_a", 1)}),
      make_op("ReduceSum", {"dlogit"}, {"db"}, {make_arg("axes", I64{0}), make_arg("keepdims", 0)}),
      make_op("WeightedSum", {"w", "one", "dw", "neg_lr"}, {"w"}),
      make_op("WeightedSum", {"b", "one", "db", "neg_lr"}, {"b"}),
      make_op("ReduceMean", {"p"}, {"mean_p"}, {make_arg("keepdims", 0)}),
  };
  run_net_once(ws, net);
  EXPECT_EQ(fetch(ws, "dlogit"), mat({2, 1}, {-0.25f, 0.25f}));
  EXPECT_EQ(fetch(ws, "dw"), mat({1, 2}, {-0.5f, -0.5f}));
  EXPECT_EQ(fetch(ws, "w"), mat({1, 2}, {0.5f, 0.5f}));
  EXPECT_EQ(fetch(ws, "b"), mat({1}, {0}));
  EXPECT_EQ(fetch(ws, "mean_p"), Tensor::scalar<float>(0.5f));
}

}  // namespace
}  // namespace moka
