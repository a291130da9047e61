#include "compiler/reference/reference_gemm.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include "compiler/reference/reference_loops.hpp"
#include "support/error.hpp"

#ifdef NPUSIM_HAVE_DNNL
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>
#endif

namespace npusim::reference_gemm {

namespace {

// Rows of the im2col matrix built at a time: bounds its memory to about this many bytes.
constexpr uint64_t kIm2colBytes = uint64_t{4} << 20;
// Groups narrower than this (depthwise convolutions) run the plain loops: a GEMM per group of a
// few columns costs more than the loop.
constexpr int kMinGroupColumns = 8;

void plain_gemm(const int8_t* a, const int8_t* w, int32_t* acc, uint64_t rows, int K, int N,
                bool transposed) {
  for (uint64_t r = 0; r < rows; ++r) {
    int32_t* o = acc + r * N;
    const int8_t* ar = a + r * K;
    if (transposed) {
      for (int n = 0; n < N; ++n) {
        int32_t s = 0;
        for (int k = 0; k < K; ++k) s += int32_t(ar[k]) * w[size_t(n) * K + k];
        o[n] = s;
      }
      continue;
    }
    std::fill(o, o + N, 0);
    for (int k = 0; k < K; ++k) {
      const int32_t v = ar[k];
      const int8_t* wr = w + size_t(k) * N;
      for (int n = 0; n < N; ++n) o[n] += v * wr[n];
    }
  }
}

// C (rows x N, leading dimension ldc) = A (rows x K, lda) * B (K x N, ldb; N x K when transposed).
void library_gemm(const int8_t* a, int64_t lda, const int8_t* b, int64_t ldb, bool transposed,
                  int32_t* c, int64_t ldc, int64_t rows, int64_t K, int64_t N) {
#ifdef NPUSIM_HAVE_DNNL
  const int32_t no_offset = 0;
  const dnnl_status_t status = dnnl_gemm_s8s8s32('N', transposed ? 'T' : 'N', 'F', rows, N, K, 1.0f,
                                                 a, lda, 0, b, ldb, 0, 0.0f, c, ldc, &no_offset);
  NPUSIM_CHECK(status == dnnl_success, "oneDNN s8 GEMM {}x{}x{} failed with status {}", rows, K, N,
               int(status));
#else
  (void)a, (void)lda, (void)b, (void)ldb, (void)transposed, (void)c, (void)ldc, (void)rows, (void)K,
      (void)N;
  NPUSIM_CHECK(false, "reference_gemm: built without oneDNN");
#endif
}

// Row r of the im2col matrix of group g: the window of output position r (b, oz, oy, ox), in
// (kernel depth, row, col, channel) order, zeros where the window leaves the input.
struct Im2col {
  const Layer& l;
  const int8_t* x;
  int C, D, H, W, OD, OH, OW, cin_g;
  int columns() const { return l.kernel[0] * l.kernel[1] * l.kernel[2] * cin_g; }
  void row(uint64_t r, int g, int8_t* out) const {
    const int ox = int(r % OW), oy = int(r / OW % OH), oz = int(r / OW / OH % OD);
    const uint64_t b = r / OW / OH / OD;
    const auto& k = l.kernel;
    for (int fz = 0; fz < k[0]; ++fz) {
      const int iz = oz * l.strides[0] - l.pads_begin[0] + fz * l.dilation[0];
      for (int fy = 0; fy < k[1]; ++fy) {
        const int iy = oy * l.strides[1] - l.pads_begin[1] + fy * l.dilation[1];
        for (int fx = 0; fx < k[2]; ++fx, out += cin_g) {
          const int ix = ox * l.strides[2] - l.pads_begin[2] + fx * l.dilation[2];
          if (iz < 0 || iz >= D || iy < 0 || iy >= H || ix < 0 || ix >= W) {
            std::memset(out, 0, size_t(cin_g));
            continue;
          }
          const int8_t* px = x + (((b * D + iz) * H + iy) * uint64_t(W) + ix) * C + g * cin_g;
          std::memcpy(out, px, size_t(cin_g));
        }
      }
    }
  }
};

}  // namespace

bool available() {
#ifdef NPUSIM_HAVE_DNNL
  static const bool vnni = [] {
    // One thread, the simulation's own: Debian's oneDNN runs on OpenMP, whose idle workers spin
    // while the simulator runs (a third of the CPU time on this 2-core machine), and sweeps run
    // one simulation per core anyway. Set once, for the thread that runs the reference.
    omp_set_num_threads(1);
    const unsigned isa = unsigned(dnnl_get_effective_cpu_isa());
    const auto has = [isa](dnnl_cpu_isa_t level) { return (isa & level) == unsigned(level); };
    return has(dnnl_cpu_isa_avx512_core_vnni) || has(dnnl_cpu_isa_avx2_vnni);
  }();
  return vnni;
#else
  return false;
#endif
}

void gemm(const int8_t* a, const int8_t* w, int32_t* acc, uint64_t rows, int K, int N,
          bool transposed) {
  if (rows == 0 || N == 0) return;
  if (!available() || K == 0) {
    plain_gemm(a, w, acc, rows, K, N, transposed);
    return;
  }
  library_gemm(a, K, w, transposed ? K : N, transposed, acc, N, int64_t(rows), K, N);
}

void conv(const Layer& l, int batch, const int8_t* x, const int8_t* w, int32_t* acc) {
  const TensorShape &in = l.in_shapes[0], &out = l.out_shape;
  const int G = l.groups, N = l.filters, cout_g = N / G;
  if (!available() || cout_g < kMinGroupColumns) {
    reference_loops::conv(l, batch, x, w, acc);
    return;
  }
  const Im2col cols{l,      x,       in.last(), in.d(),  in.h(),
                    in.w(), out.d(), out.h(),   out.w(), in.last() / G};
  const uint64_t rows = uint64_t(batch) * out.d() * out.h() * out.w();
  const int K = cols.columns();
  const bool pointwise = l.kernel[0] * l.kernel[1] * l.kernel[2] == 1 && G == 1 &&
                         l.strides[0] == 1 && l.strides[1] == 1 && l.strides[2] == 1 &&
                         l.pads_begin[0] == 0 && l.pads_begin[1] == 0 && l.pads_begin[2] == 0 &&
                         in.d() == out.d() && in.h() == out.h() && in.w() == out.w();
  if (pointwise) {  // a 1x1 convolution is the input (rows x C) times the weights (C x N)
    library_gemm(x, K, w, N, false, acc, N, int64_t(rows), K, N);
    return;
  }
  const uint64_t chunk = std::max<uint64_t>(1, kIm2colBytes / uint64_t(K));
  std::vector<int8_t> a(std::min(rows, chunk) * K);
  for (int g = 0; g < G; ++g) {
    for (uint64_t r0 = 0; r0 < rows; r0 += chunk) {
      const uint64_t n = std::min(chunk, rows - r0);
      for (uint64_t r = 0; r < n; ++r) cols.row(r0 + r, g, a.data() + r * K);
      // Weights of group g: row (window position, channel c) at w[row * N + g * cout_g].
      library_gemm(a.data(), K, w + g * cout_g, N, false, acc + r0 * N + g * cout_g, N, int64_t(n),
                   K, cout_g);
    }
  }
}

}  // namespace npusim::reference_gemm
