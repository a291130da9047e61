#include "models/vector_core.hpp"

#include <algorithm>
#include <cstring>

#include "arch/quant.hpp"
#include "support/error.hpp"

namespace npusim {

namespace {

struct CycleRule {
  const VectorUnitConfig& c;
  uint64_t groups(uint64_t elements) const { return (elements + c.lanes - 1) / c.lanes; }
  uint64_t operator()(const RequantOp& r) const {
    return c.pipeline_latency_cycles + groups(uint64_t(r.m) * r.n);
  }
  uint64_t operator()(const ReluOp& r) const { return c.pipeline_latency_cycles + groups(r.elements); }
  uint64_t operator()(const PoolOp& p) const {
    return c.pipeline_latency_cycles +
           groups(uint64_t(p.out_h) * p.out_w * p.c) * p.window_h * p.window_w;
  }
  uint64_t operator()(const SoftmaxOp& s) const {
    const uint64_t t = c.transcendental_cycles;
    return c.pipeline_latency_cycles + uint64_t(s.rows) * (groups(s.length) * (1 + 2 * t) + t);
  }
  uint64_t operator()(const DmaOp&) const { return unsupported(); }
  uint64_t operator()(const MatmulOp&) const { return unsupported(); }
  static uint64_t unsupported() {
    NPUSIM_CHECK(false, "the vector unit was given a DMA or MATMUL instruction");
    return 0;
  }
};

struct Executor {
  OnChipBuffers& b;
  uint32_t id;
  int8_t* ub8(uint64_t addr, uint64_t bytes) const {
    return reinterpret_cast<int8_t*>(b.bytes(BufferId::kUnified, addr, bytes, id));
  }
  uint64_t operator()(const RequantOp& r) const {
    const auto* acc = reinterpret_cast<const int32_t*>(b.bytes(
        BufferId::kAccumulator, r.acc_addr, (uint64_t(r.m - 1) * r.acc_ld + r.n) * 4, id));
    const auto* bias = reinterpret_cast<const int32_t*>(
        b.bytes(BufferId::kUnified, r.bias_ub_addr, uint64_t(r.n) * 4, id));
    int8_t* out = ub8(r.out_ub_addr, uint64_t(r.m - 1) * r.out_ld + r.n);
    for (int i = 0; i < r.m; ++i) {
      const int32_t* a = acc + int64_t(i) * r.acc_ld;
      int8_t* o = out + int64_t(i) * r.out_ld;
      for (int j = 0; j < r.n; ++j) o[j] = requantize(a[j] + bias[j], r.scale, r.relu);
    }
    return uint64_t(r.m) * r.n;
  }
  uint64_t operator()(const ReluOp& r) const {
    const int8_t* in = ub8(r.in_ub_addr, r.elements);
    int8_t* out = ub8(r.out_ub_addr, r.elements);
    for (uint64_t i = 0; i < r.elements; ++i) out[i] = std::max<int8_t>(in[i], 0);
    return r.elements;
  }
  uint64_t operator()(const PoolOp& p) const {
    const int8_t* in = ub8(p.in_ub_addr, uint64_t(p.slab_h) * p.slab_w * p.c);
    int8_t* out = ub8(p.out_ub_addr, uint64_t(p.out_h) * p.out_w * p.c);
    for (int oy = 0; oy < p.out_h; ++oy) {
      for (int ox = 0; ox < p.out_w; ++ox) {
        int8_t* o = out + (int64_t(oy) * p.out_w + ox) * p.c;
        std::fill(o, o + p.c, INT8_MIN);
        const int y0 = p.origin_y + oy * p.stride_h, x0 = p.origin_x + ox * p.stride_w;
        for (int y = std::max(y0, 0); y < std::min(y0 + p.window_h, p.slab_h); ++y) {
          for (int x = std::max(x0, 0); x < std::min(x0 + p.window_w, p.slab_w); ++x) {
            const int8_t* i = in + (int64_t(y) * p.slab_w + x) * p.c;
            for (int c = 0; c < p.c; ++c) o[c] = std::max(o[c], i[c]);
          }
        }
      }
    }
    return uint64_t(p.out_h) * p.out_w * p.c;
  }
  uint64_t operator()(const SoftmaxOp& s) const {
    const uint64_t bytes = uint64_t(s.rows) * s.length;
    const int8_t* in = ub8(s.in_ub_addr, bytes);
    int8_t* out = ub8(s.out_ub_addr, bytes);
    for (int r = 0; r < s.rows; ++r) {
      softmax_int8(in + int64_t(r) * s.length, out + int64_t(r) * s.length, s.length,
                   s.input_scale);
    }
    return bytes;
  }
  uint64_t operator()(const DmaOp&) const { return CycleRule::unsupported(); }
  uint64_t operator()(const MatmulOp&) const { return CycleRule::unsupported(); }
};

}  // namespace

uint64_t vector_cycles(const VectorUnitConfig& config, const Operation& op) {
  return std::visit(CycleRule{config}, op);
}

uint64_t vector_execute(OnChipBuffers& buffers, const Instruction& instr) {
  return std::visit(Executor{buffers, instr.id}, instr.op);
}

}  // namespace npusim
