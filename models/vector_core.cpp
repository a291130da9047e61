#include "models/vector_core.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "arch/activation.hpp"
#include "arch/float_ops.hpp"
#include "arch/quant.hpp"
#include "support/error.hpp"

namespace npusim {

namespace {

struct CycleRule {
  const VectorUnitConfig& c;
  uint64_t g(uint64_t elements) const { return (elements + c.lanes - 1) / c.lanes; }
  uint64_t latency() const { return c.pipeline_latency_cycles; }
  uint64_t operator()(const RequantOp& r) const { return latency() + g(uint64_t(r.m) * r.n); }
  uint64_t operator()(const LutOp& l) const { return latency() + g(l.elements); }
  uint64_t operator()(const EltwiseOp& e) const { return latency() + uint64_t(e.rows) * g(e.cols); }
  uint64_t operator()(const PoolOp& p) const {
    const uint64_t groups = g(uint64_t(p.out_h) * p.out_w * p.c);
    const uint64_t window = uint64_t(p.window_d) * p.window_h * p.window_w;
    return latency() + groups * window + (p.average ? c.transcendental_cycles * groups : 0);
  }
  uint64_t operator()(const SoftmaxOp& s) const {
    const uint64_t t = c.transcendental_cycles;
    return latency() + uint64_t(s.rows) * (g(s.length) * (1 + 2 * t) + t);
  }
  uint64_t operator()(const LayerNormOp& l) const {
    const uint64_t passes = l.rms ? 3 : 4;
    return latency() + uint64_t(l.rows) * (g(l.length) * passes + c.transcendental_cycles);
  }
  // fp32 elements go through the lanes at half the bf16 rate: a lane's datapath carries one
  // 32-bit value or two bf16 ones. A divide is one transcendental-length pass (iterative), a
  // square root of a quotient two.
  uint64_t operator()(const Fp32Op& f) const {
    const uint64_t lanes = std::max<uint64_t>(1, c.lanes / 2);
    const uint64_t groups = (uint64_t(f.cols) + lanes - 1) / lanes;
    const uint64_t passes = f.kind == Fp32Kind::kDiv    ? c.transcendental_cycles
                            : f.kind == Fp32Kind::kSqrt ? 2 * c.transcendental_cycles
                                                        : 1;
    return latency() + uint64_t(f.rows) * groups * std::max<uint64_t>(1, passes);
  }
  uint64_t operator()(const DmaOp&) const { return unsupported(); }
  uint64_t operator()(const CopyOp&) const { return unsupported(); }
  uint64_t operator()(const MatmulOp&) const { return unsupported(); }
  uint64_t operator()(const HostOp&) const { return unsupported(); }
  static uint64_t unsupported() {
    NPUSIM_CHECK(false, "the vector unit was given a DMA, MATMUL or host instruction");
    return 0;
  }
};

// The pooling window walk over a slab, shared by the int8 and bf16 paths: `load` widens an
// element, `finish(acc, divisor)` makes the output (divisor 0 for max pooling).
template <class T, class Acc, class Load, class Finish>
void pool_slab(const PoolOp& p, const T* in, T* out, Acc lowest, Load load, Finish finish) {
  const int window = p.window_d * p.window_h * p.window_w;
  std::vector<Acc> acc(p.c);
  for (int oy = 0; oy < p.out_h; ++oy) {
    for (int ox = 0; ox < p.out_w; ++ox) {
      std::fill(acc.begin(), acc.end(), p.average ? Acc(0) : lowest);
      int count = 0;
      const int y0 = p.origin_y + oy * p.stride_h, x0 = p.origin_x + ox * p.stride_w;
      for (int z = std::max(p.origin_z, 0); z < std::min(p.origin_z + p.window_d, p.slab_d); ++z)
        for (int y = std::max(y0, 0); y < std::min(y0 + p.window_h, p.slab_h); ++y)
          for (int x = std::max(x0, 0); x < std::min(x0 + p.window_w, p.slab_w); ++x) {
            ++count;
            const T* i = in + ((int64_t(z) * p.slab_h + y) * p.slab_w + x) * p.c;
            for (int c = 0; c < p.c; ++c) {
              acc[c] = p.average ? acc[c] + load(i[c]) : std::max(acc[c], load(i[c]));
            }
          }
      T* o = out + (int64_t(oy) * p.out_w + ox) * p.out_stride();
      const int divisor = p.average ? (p.count_include_pad ? window : count) : 0;
      for (int c = 0; c < p.c; ++c) o[c] = finish(acc[c], divisor);
    }
  }
}

struct Executor {
  OnChipBuffers& b;
  const Program& program;
  uint32_t id;
  bool values;  // false: claim the ranges, compute nothing (--values off)
  bool bf16() const { return program.dtype == DataType::kBf16; }
  uint16_t* ub16(uint64_t addr, uint64_t elements) const {
    return reinterpret_cast<uint16_t*>(b.bytes(BufferId::kUnified, addr, elements * 2, id));
  }
  // The bf16 path: every operation computes in fp32 and rounds its result to bf16.
  uint64_t requant_bf16(const RequantOp& r) const {
    const auto* acc = reinterpret_cast<const float*>(
        b.bytes(BufferId::kAccumulator, r.acc_addr, (uint64_t(r.m - 1) * r.acc_ld + r.n) * 4, id));
    const float* bias = r.has_bias ? reinterpret_cast<const float*>(b.bytes(
                                         BufferId::kUnified, r.bias_ub_addr, uint64_t(r.n) * 4, id))
                                   : nullptr;
    uint16_t* out = ub16(r.out_ub_addr, uint64_t(r.m - 1) * r.out_ld + r.n);
    if (!values) return uint64_t(r.m) * r.n;
    for (int i = 0; i < r.m; ++i) {
      for (int j = 0; j < r.n; ++j) {
        const float v = acc[int64_t(i) * r.acc_ld + j] + (bias ? bias[j] : 0.0f);
        out[int64_t(i) * r.out_ld + j] =
            float_to_bf16_bits(apply_activation(r.activation, v, r.clip_min, r.clip_max));
      }
    }
    return uint64_t(r.m) * r.n;
  }
  uint64_t lut_bf16(const LutOp& l) const {
    const uint16_t* in = ub16(l.in_ub_addr, l.elements);
    uint16_t* out = ub16(l.out_ub_addr, l.elements);
    if (!values) return l.elements;
    for (uint64_t i = 0; i < l.elements; ++i) {
      out[i] = float_to_bf16_bits(
          apply_activation(l.activation, bf16_bits_to_float(in[i]), l.clip_min, l.clip_max));
    }
    return l.elements;
  }
  uint64_t eltwise_bf16(const EltwiseOp& e) const {
    const uint16_t* a = ub16(e.a_ub_addr, uint64_t(e.rows - 1) * e.a_ld + e.cols);
    const uint16_t* bb = e.kind == EltwiseKind::kRescale
                             ? nullptr
                             : ub16(e.b_ub_addr, uint64_t(e.rows - 1) * e.b_ld + e.cols);
    uint16_t* out = ub16(e.out_ub_addr, uint64_t(e.rows - 1) * e.out_ld + e.cols);
    if (!values) return uint64_t(e.rows) * e.cols;
    for (int r = 0; r < e.rows; ++r) {
      for (int c = 0; c < e.cols; ++c) {
        const float x = bf16_bits_to_float(a[int64_t(r) * e.a_ld + c]);
        float v = x;
        if (e.kind != EltwiseKind::kRescale) {
          const float y = bf16_bits_to_float(bb[int64_t(r) * e.b_ld + c]);
          v = e.kind == EltwiseKind::kAdd ? x + y : x * y;
        }
        out[int64_t(r) * e.out_ld + c] =
            float_to_bf16_bits(apply_activation(e.activation, v, e.clip_min, e.clip_max));
      }
    }
    return uint64_t(e.rows) * e.cols;
  }
  uint64_t pool_bf16(const PoolOp& p) const {
    const uint16_t* in = ub16(p.in_ub_addr, uint64_t(p.slab_d) * p.slab_h * p.slab_w * p.c);
    uint16_t* out = ub16(p.out_ub_addr, p.out_span());
    if (!values) return uint64_t(p.out_h) * p.out_w * p.c;
    pool_slab(p, in, out, -INFINITY, bf16_bits_to_float, [](float acc, int divisor) {
      return float_to_bf16_bits(divisor == 0 ? acc : acc / static_cast<float>(divisor));
    });
    return uint64_t(p.out_h) * p.out_w * p.c;
  }
  // Softmax and layer norm: one row at a time through fp32.
  template <class RowOp>
  uint64_t rows_bf16(uint64_t in_addr, uint64_t out_addr, int rows, int length, RowOp op) const {
    const uint64_t n = uint64_t(rows) * length;
    const uint16_t* in = ub16(in_addr, n);
    uint16_t* out = ub16(out_addr, n);
    if (!values) return n;
    std::vector<float> x(length), y(length);
    for (int r = 0; r < rows; ++r) {
      for (int i = 0; i < length; ++i) x[i] = bf16_bits_to_float(in[int64_t(r) * length + i]);
      op(x.data(), y.data());
      for (int i = 0; i < length; ++i) out[int64_t(r) * length + i] = float_to_bf16_bits(y[i]);
    }
    return n;
  }
  int8_t* ub8(uint64_t addr, uint64_t bytes) const {
    return reinterpret_cast<int8_t*>(b.bytes(BufferId::kUnified, addr, bytes, id));
  }
  const int8_t* table(int lut) const {
    if (lut < 0) return nullptr;
    NPUSIM_CHECK(size_t(lut) < program.luts.size() && program.luts[lut].size() == 256,
                 "instruction {}: no table {}", id, lut);
    return program.luts[lut].data();
  }
  uint64_t operator()(const RequantOp& r) const {
    if (bf16()) return requant_bf16(r);
    NPUSIM_CHECK(size_t(r.table) < program.requant_tables.size() &&
                     size_t(r.channel0) + r.n <= program.requant_tables[r.table].size(),
                 "instruction {}: requant table {} too short", id, r.table);
    const QuantMultiplier* scales = program.requant_tables[r.table].data() + r.channel0;
    const auto* acc = reinterpret_cast<const int32_t*>(
        b.bytes(BufferId::kAccumulator, r.acc_addr, (uint64_t(r.m - 1) * r.acc_ld + r.n) * 4, id));
    const int32_t* bias = r.has_bias
                              ? reinterpret_cast<const int32_t*>(b.bytes(
                                    BufferId::kUnified, r.bias_ub_addr, uint64_t(r.n) * 4, id))
                              : nullptr;
    const int8_t* lut = table(r.lut);
    int8_t* out = ub8(r.out_ub_addr, uint64_t(r.m - 1) * r.out_ld + r.n);
    if (!values) return uint64_t(r.m) * r.n;
    for (int i = 0; i < r.m; ++i) {
      const int32_t* a = acc + int64_t(i) * r.acc_ld;
      int8_t* o = out + int64_t(i) * r.out_ld;
      for (int j = 0; j < r.n; ++j) {
        o[j] = epilogue_value(a[j], bias ? bias[j] : 0, scales[j], r.lo, r.hi, lut);
      }
    }
    return uint64_t(r.m) * r.n;
  }
  uint64_t operator()(const LutOp& l) const {
    if (bf16()) return lut_bf16(l);
    const int8_t* in = ub8(l.in_ub_addr, l.elements);
    int8_t* out = ub8(l.out_ub_addr, l.elements);
    const int8_t* lut = table(l.lut);
    if (!values) return l.elements;
    for (uint64_t i = 0; i < l.elements; ++i) out[i] = lut[in[i] + 128];
    return l.elements;
  }
  uint64_t operator()(const EltwiseOp& e) const {
    if (bf16()) return eltwise_bf16(e);
    const int8_t* a = ub8(e.a_ub_addr, uint64_t(e.rows - 1) * e.a_ld + e.cols);
    const int8_t* bb = e.kind == EltwiseKind::kRescale
                           ? nullptr
                           : ub8(e.b_ub_addr, uint64_t(e.rows - 1) * e.b_ld + e.cols);
    int8_t* out = ub8(e.out_ub_addr, uint64_t(e.rows - 1) * e.out_ld + e.cols);
    const int8_t* lut = table(e.lut);
    if (!values) return uint64_t(e.rows) * e.cols;
    for (int r = 0; r < e.rows; ++r) {
      const int8_t* ar = a + int64_t(r) * e.a_ld;
      int8_t* o = out + int64_t(r) * e.out_ld;
      for (int c = 0; c < e.cols; ++c) {
        int8_t v = 0;
        switch (e.kind) {
          case EltwiseKind::kAdd:
            v = add_int8(ar[c], bb[int64_t(r) * e.b_ld + c], e.ra, e.rb, e.lo, e.hi);
            break;
          case EltwiseKind::kMul:
            v = mul_int8(ar[c], bb[int64_t(r) * e.b_ld + c], e.ra, e.lo, e.hi);
            break;
          case EltwiseKind::kRescale:
            v = saturate_round(ar[c] * e.ra, e.lo, e.hi);
            break;
        }
        o[c] = lut ? lut[v + 128] : v;
      }
    }
    return uint64_t(e.rows) * e.cols;
  }
  uint64_t operator()(const PoolOp& p) const {
    if (bf16()) return pool_bf16(p);
    const int8_t* in = ub8(p.in_ub_addr, uint64_t(p.slab_d) * p.slab_h * p.slab_w * p.c);
    int8_t* out = ub8(p.out_ub_addr, p.out_span());
    if (!values) return uint64_t(p.out_h) * p.out_w * p.c;
    pool_slab(
        p, in, out, int32_t{-128}, [](int8_t v) { return int32_t{v}; },
        [](int32_t acc, int divisor) {
          return divisor == 0 ? static_cast<int8_t>(acc) : average_int8(acc, divisor);
        });
    return uint64_t(p.out_h) * p.out_w * p.c;
  }
  uint64_t operator()(const SoftmaxOp& s) const {
    if (bf16()) {
      return rows_bf16(s.in_ub_addr, s.out_ub_addr, s.rows, s.length,
                       [&](const float* x, float* y) { softmax_f32(x, y, s.length); });
    }
    const uint64_t bytes = uint64_t(s.rows) * s.length;
    const int8_t* in = ub8(s.in_ub_addr, bytes);
    int8_t* out = ub8(s.out_ub_addr, bytes);
    if (!values) return bytes;
    for (int r = 0; r < s.rows; ++r) {
      softmax_int8(in + int64_t(r) * s.length, out + int64_t(r) * s.length, s.length,
                   s.input_scale);
    }
    return bytes;
  }
  uint64_t operator()(const LayerNormOp& l) const {
    const auto* params = reinterpret_cast<const float*>(
        b.bytes(BufferId::kUnified, l.params_ub_addr, uint64_t(l.length) * 8, id));
    if (bf16()) {
      return rows_bf16(l.in_ub_addr, l.out_ub_addr, l.rows, l.length,
                       [&](const float* x, float* y) {
                         layernorm_f32(x, y, l.length, params, params + l.length, l.epsilon, l.rms);
                       });
    }
    const uint64_t bytes = uint64_t(l.rows) * l.length;
    const int8_t* in = ub8(l.in_ub_addr, bytes);
    int8_t* out = ub8(l.out_ub_addr, bytes);
    if (!values) return bytes;
    for (int r = 0; r < l.rows; ++r) {
      layernorm_int8(in + int64_t(r) * l.length, out + int64_t(r) * l.length, l.length,
                     l.input_scale, params, params + l.length, l.epsilon, l.inv_output_scale,
                     l.rms);
    }
    return bytes;
  }
  // fp32 element-wise work, the same in a bf16 or an int8 program: each operation rounded to fp32
  // as the host's float arithmetic rounds it (no fused multiply-add).
  uint64_t operator()(const Fp32Op& f) const {
    const auto span = [&](int ld, int bytes) {
      return (uint64_t(f.rows - 1) * uint64_t(ld) + uint64_t(f.cols)) * uint64_t(bytes);
    };
    const uint8_t* a = b.bytes(BufferId::kUnified, f.a_ub_addr, span(f.a_ld, f.a_bytes()), id);
    const uint8_t* bb =
        !f.reads_b() ? nullptr
        : f.b_scalar ? b.bytes(BufferId::kUnified, f.b_ub_addr, 4, id)
                     : b.bytes(BufferId::kUnified, f.b_ub_addr, span(f.b_ld, f.b_bytes()), id);
    uint8_t* out = b.bytes(BufferId::kUnified, f.out_ub_addr, span(f.out_ld, f.out_bytes()), id);
    const uint64_t n = uint64_t(f.rows) * uint64_t(f.cols);
    if (!values) return n;
    const auto load = [](const uint8_t* p, bool bf16) {
      if (bf16) {
        uint16_t h;
        std::memcpy(&h, p, 2);
        return bf16_bits_to_float(h);
      }
      float v;
      std::memcpy(&v, p, 4);
      return v;
    };
    for (int r = 0; r < f.rows; ++r) {
      for (int c = 0; c < f.cols; ++c) {
        const float x = load(a + (int64_t(r) * f.a_ld + c) * f.a_bytes(), f.a_bf16);
        const float y = !f.reads_b() ? 0.0f
                        : f.b_scalar ? load(bb, false)
                                     : load(bb + (int64_t(r) * f.b_ld + c) * f.b_bytes(), f.b_bf16);
        float v = x;
        switch (f.kind) {
          case Fp32Kind::kAxpby: {
            const float ax = x * f.ra, by = y * f.rb;
            v = ax + by;
            break;
          }
          case Fp32Kind::kMul: {
            const float ax = x * f.ra;
            v = ax * y;
            break;
          }
          case Fp32Kind::kDiv: {
            const float ax = x * f.ra;
            v = ax / y;
            break;
          }
          case Fp32Kind::kSqrt: {
            const float q = x / y;
            v = std::sqrt(q) + f.ra;
            break;
          }
          case Fp32Kind::kCopy:
            break;
        }
        uint8_t* o = out + (int64_t(r) * f.out_ld + c) * f.out_bytes();
        if (f.out_bf16) {
          const uint16_t h = float_to_bf16_bits(v);
          std::memcpy(o, &h, 2);
        } else {
          std::memcpy(o, &v, 4);
        }
      }
    }
    return n;
  }
  uint64_t operator()(const DmaOp&) const { return CycleRule::unsupported(); }
  uint64_t operator()(const CopyOp&) const { return CycleRule::unsupported(); }
  uint64_t operator()(const MatmulOp&) const { return CycleRule::unsupported(); }
  uint64_t operator()(const HostOp&) const { return CycleRule::unsupported(); }
};

}  // namespace

uint64_t vector_cycles(const VectorUnitConfig& config, const Operation& op) {
  return std::visit(CycleRule{config}, op);
}

uint64_t vector_execute(OnChipBuffers& buffers, const Program& program, const Instruction& instr,
                        bool compute_values) {
  return std::visit(Executor{buffers, program, instr.id, compute_values}, instr.op);
}

}  // namespace npusim
