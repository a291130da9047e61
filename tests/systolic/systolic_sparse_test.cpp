// N:M sparse tiles on a weight-stationary array (models/systolic/sparsity.hpp): the pe and fast
// fidelities agree on cycles and bits for random sparse and dense tiles in one sequence, the
// values equal a naive product, a sparse tile takes the cycles of a dense tile of Kc rows, and a
// tile whose weights break the structure is an internal error in both fidelities.
#include <string>

#include "models/systolic/sparsity.hpp"
#include "support/error.hpp"
#include "systolic_test_util.hpp"

namespace npusim::systolic::testing {
namespace {

ArrayParams sparse_params(int rows, int cols, bool double_buffer, int n_keep, int m_group) {
  ArrayParams p{rows, cols, Dataflow::kWeightStationary, double_buffer};
  p.sparse_n = n_keep;
  p.sparse_m = m_group;
  return p;
}

// Zeroes weights so that every group of M rows of each column keeps at most N (sometimes fewer,
// sometimes none), at random positions.
void impose_structure(std::mt19937& rng, TileBuffers& b, int n_keep, int m_group) {
  for (int n = 0; n < b.shape.n; ++n) {
    for (int k0 = 0; k0 < b.shape.k; k0 += m_group) {
      const int len = std::min(m_group, b.shape.k - k0);
      int keep = static_cast<int>(rng() % (n_keep + 1));
      for (int k = k0; k < k0 + len; ++k) {
        const bool stays = keep > 0 && static_cast<int>(rng() % (k0 + len - k)) < keep;
        if (stays) {
          --keep;
          continue;
        }
        const size_t at = static_cast<size_t>(k) * b.ldw + n;
        if (b.elem == Elem::kInt8) {
          b.w8[at] = 0;
        } else {
          b.w16[at] = rng() % 2 ? 0x8000 : 0;  // either zero
        }
      }
    }
  }
}

// acc (+)= a x w, adding each output's products of non-zero weights in k order (the arithmetic of
// array_model.hpp; a sparse tile adds no product of a zero weight).
void naive_product(TileBuffers& b) {
  const TileShape& t = b.shape;
  for (int m = 0; m < t.m; ++m) {
    for (int n = 0; n < t.n; ++n) {
      const size_t out = static_cast<size_t>(m) * b.ldacc + n;
      if (b.elem == Elem::kInt8) {
        uint32_t sum = 0;
        for (int k = 0; k < t.k; ++k) {
          sum += static_cast<uint32_t>(b.a8[static_cast<size_t>(m) * b.lda + k] *
                                       b.w8[static_cast<size_t>(k) * b.ldw + n]);
        }
        b.acc_int[out] =
            static_cast<int32_t>(b.accumulate ? static_cast<uint32_t>(b.acc_int[out]) + sum : sum);
        continue;
      }
      const Half16Format f = b.elem == Elem::kBf16 ? Half16Format::kBf16 : Half16Format::kFp16;
      float sum = 0.0f;
      for (int k = 0; k < t.k; ++k) {
        const float w = half16_to_float(f, b.w16[static_cast<size_t>(k) * b.ldw + n]);
        if (w == 0.0f) continue;
        sum = sum + half16_to_float(f, b.a16[static_cast<size_t>(m) * b.lda + k]) * w;
      }
      b.acc_float[out] = b.accumulate ? b.acc_float[out] + sum : sum;
    }
  }
}

void check_sparse_sequence(int rows, int cols, bool double_buffer, int n_keep, int m_group,
                           Elem elem, uint32_t seed, bool wavefront = false) {
  ArrayParams params = sparse_params(rows, cols, double_buffer, n_keep, m_group);
  params.weight_load_wavefront = wavefront;
  SCOPED_TRACE("array " + std::to_string(rows) + "x" + std::to_string(cols) + " " +
               std::to_string(n_keep) + ":" + std::to_string(m_group) +
               (double_buffer ? " double-buffered " : " single ") +
               (wavefront ? "wavefront " : "") + elem_name(elem) + " seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  auto fast = make_array_model(params, Fidelity::kFast);
  auto pe = make_array_model(params, Fidelity::kPe);
  const int k_sparse = rows / n_keep * m_group;  // the most K a sparse tile covers
  uint64_t issue = 0;
  int sparse_tiles = 0;
  const int tiles = 16;
  for (int i = 0; i < tiles; ++i) {
    TileShape shape;
    shape.sparse = rng() % 4 != 0;
    shape.m = 1 + static_cast<int>(rng() % (3 * rows));
    shape.k = 1 + static_cast<int>(rng() % (shape.sparse ? k_sparse : rows));
    if (rng() % 4 == 0) shape.k = shape.sparse ? k_sparse : rows;
    shape.n = 1 + static_cast<int>(rng() % cols);
    sparse_tiles += shape.sparse;
    SCOPED_TRACE("tile " + std::to_string(i) + ": M=" + std::to_string(shape.m) +
                 " K=" + std::to_string(shape.k) + " N=" + std::to_string(shape.n) +
                 (shape.sparse ? " sparse" : " dense"));
    ASSERT_TRUE(tile_fits(params, shape));
    TileBuffers for_fast = TileBuffers::random(rng, shape, elem);
    if (shape.sparse) impose_structure(rng, for_fast, n_keep, m_group);
    TileBuffers for_pe = for_fast, expected = for_fast;
    naive_product(expected);
    const TileTiming tf = for_fast.run(*fast, issue);
    const TileTiming tp = for_pe.run(*pe, issue);
    expect_same_timing(tf, tp);
    EXPECT_TRUE(for_fast.same_results(for_pe));
    if (elem == Elem::kInt8 || shape.sparse) {
      EXPECT_TRUE(for_fast.same_results(expected));
    }
    if (::testing::Test::HasFailure()) return;
    issue = next_issue_cycle(rng, tf);
  }
  expect_same_counts(fast->stats(), pe->stats(), tiles);
  EXPECT_EQ(fast->stats().stationary_rows_loaded, pe->stats().stationary_rows_loaded);
  EXPECT_EQ(fast->stats().sparse_tiles, static_cast<uint64_t>(sparse_tiles));
  EXPECT_EQ(pe->stats().sparse_tiles, static_cast<uint64_t>(sparse_tiles));
}

TEST(SystolicSparse, FastEqualsPeOnRandomSparseAndDenseTiles) {
  struct Case {
    int rows, cols, n_keep, m_group;
  };
  const Case cases[] = {{8, 8, 2, 4}, {5, 3, 2, 4}, {6, 7, 1, 4}, {4, 4, 2, 8},
                        {7, 5, 3, 4}, {1, 4, 1, 2}, {12, 9, 2, 4}};
  uint32_t seed = 2500;
  for (const Case& c : cases) {
    for (const bool db : {true, false}) {
      for (const Elem e : {Elem::kInt8, Elem::kBf16, Elem::kFp16}) {
        check_sparse_sequence(c.rows, c.cols, db, c.n_keep, c.m_group, e, seed++);
        if (HasFailure()) return;
      }
    }
  }
}

// Wavefront weight loads: the metadata registers shift with the weights, row by row.
TEST(SystolicSparse, FastEqualsPeWithWavefrontLoads) {
  uint32_t seed = 2700;
  for (const bool db : {true, false}) {
    for (const Elem e : {Elem::kInt8, Elem::kBf16}) {
      check_sparse_sequence(8, 8, db, 2, 4, e, seed++, true);
      check_sparse_sequence(7, 5, db, 3, 4, e, seed++, true);
      if (HasFailure()) return;
    }
  }
}

TEST(SystolicSparse, RowsOfASparseTile) {
  EXPECT_EQ(sparse_rows(16, 2, 4), 8);
  EXPECT_EQ(sparse_rows(17, 2, 4), 9);   // a last group of 1 row keeps 1 slot
  EXPECT_EQ(sparse_rows(19, 2, 4), 10);  // ... of 3 rows, 2
  EXPECT_EQ(sparse_rows(8, 1, 8), 1);
  const ArrayParams p = sparse_params(4, 4, true, 2, 4);
  EXPECT_TRUE(tile_fits(p, {3, 8, 4, true}));
  EXPECT_FALSE(tile_fits(p, {3, 9, 4, true}));                  // 5 rows of slots
  EXPECT_FALSE(tile_fits(p, {3, 8, 4, false}));                 // dense: K <= 4
  EXPECT_FALSE(tile_fits(ArrayParams{4, 4}, {3, 4, 4, true}));  // a dense-only array
}

// A sparse tile of K rows takes exactly the cycles of a dense tile of Kc rows (the ws rule with
// K = Kc), in both fidelities; so a K-deep product takes half the tiles at 2:4.
TEST(SystolicSparse, CyclesOfADenseTileOfKcRows) {
  const ArrayParams sparse = sparse_params(8, 8, true, 2, 4);
  const ArrayParams dense{8, 8, Dataflow::kWeightStationary, true};
  for (const Fidelity fidelity : {Fidelity::kFast, Fidelity::kPe}) {
    auto a = make_array_model(sparse, fidelity);
    auto b = make_array_model(dense, fidelity);
    uint64_t issue_a = 0, issue_b = 0;
    for (int i = 0; i < 5; ++i) {
      const TileShape s{20 + i, 12 + i, 8, true};  // Kc = 6, 7, 8, 8, 8
      const TileShape d{20 + i, sparse_rows(s.k, 2, 4), 8, false};
      const TileTiming ta = a->time_only(s, DataType::kInt8, i > 0, issue_a);
      const TileTiming tb = b->time_only(d, DataType::kInt8, i > 0, issue_b);
      EXPECT_EQ(ta.start_cycle, tb.start_cycle);
      EXPECT_EQ(ta.done_cycle, tb.done_cycle);
      EXPECT_EQ(ta.next_issue_cycle, tb.next_issue_cycle);
      issue_a = ta.next_issue_cycle, issue_b = tb.next_issue_cycle;
    }
    EXPECT_EQ(a->stats().macs, b->stats().macs);
  }
  // M = 256, K = 64, N = 8 on an 8x8 array: 8 dense tiles of K = 8, or 4 sparse ones of K = 16
  // (8 rows of slots each); the streamed rows dominate, so the sparse product takes about half.
  auto sparse_fast = make_array_model(sparse, Fidelity::kFast);
  auto dense_fast = make_array_model(dense, Fidelity::kFast);
  uint64_t s_issue = 0, d_issue = 0;
  for (int k0 = 0; k0 < 64; k0 += 16)
    s_issue = sparse_fast->time_only({256, 16, 8, true}, DataType::kInt8, k0 > 0, s_issue)
                  .next_issue_cycle;
  for (int k0 = 0; k0 < 64; k0 += 8)
    d_issue = dense_fast->time_only({256, 8, 8, false}, DataType::kInt8, k0 > 0, d_issue)
                  .next_issue_cycle;
  const double ratio =
      double(sparse_fast->stats().last_done_cycle) / double(dense_fast->stats().last_done_cycle);
  EXPECT_LE(ratio, 0.6);
  EXPECT_GT(ratio, 0.45);
}

TEST(SystolicSparse, WeightsWithoutTheStructureAreAnInternalError) {
  const ArrayParams p = sparse_params(4, 4, true, 2, 4);
  std::vector<int8_t> a(8 * 8, 1), w(8 * 4, 0);
  std::vector<int32_t> acc(8 * 4, 0);
  w[0 * 4 + 1] = w[1 * 4 + 1] = w[3 * 4 + 1] = 5;  // column 1: 3 non-zeros in rows 0..3
  for (const Fidelity fidelity : {Fidelity::kFast, Fidelity::kPe}) {
    auto model = make_array_model(p, fidelity);
    try {
      model->execute_int8({2, 8, 4, true}, {a.data(), 8, w.data(), 4, acc.data(), 4, false}, 0);
      ADD_FAILURE() << "expected an internal error, fidelity " << to_string(fidelity);
    } catch (const InternalError& e) {
      EXPECT_NE(
          std::string(e.what()).find("column 1 has more than 2 non-zero weights in rows 0..3"),
          std::string::npos)
          << e.what();
    }
  }
}

}  // namespace
}  // namespace npusim::systolic::testing
