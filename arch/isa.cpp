#include "arch/isa.hpp"

#include <fmt/format.h>

namespace npusim {

const char* to_string(UnitKind kind) {
  switch (kind) {
    case UnitKind::kDmaLoad:
      return "dma_load";
    case UnitKind::kDmaStore:
      return "dma_store";
    case UnitKind::kMatrix:
      return "mxu";
    case UnitKind::kVector:
      return "vpu";
    case UnitKind::kHost:
      return "host_cpu";
    case UnitKind::kHostLink:
      return "host_link";
    case UnitKind::kLink:
      return "link";
  }
  return "?";
}

const char* to_string(BufferId id) {
  switch (id) {
    case BufferId::kDram:
      return "dram";
    case BufferId::kUnified:
      return "ub";
    case BufferId::kWeight:
      return "wb";
    case BufferId::kAccumulator:
      return "acc";
  }
  return "?";
}

namespace {
struct OpcodeName {
  const Instruction& instr;
  const char* operator()(const DmaOp&) const {
    return instr.unit == UnitKind::kDmaLoad ? "DMA_LOAD" : "DMA_STORE";
  }
  const char* operator()(const MatmulOp&) const { return "MATMUL"; }
  const char* operator()(const RequantOp&) const { return "REQUANT"; }
  const char* operator()(const PoolOp& p) const { return p.average ? "AVGPOOL" : "MAXPOOL"; }
  const char* operator()(const SoftmaxOp&) const { return "SOFTMAX"; }
  const char* operator()(const LayerNormOp& l) const { return l.rms ? "RMSNORM" : "LAYERNORM"; }
  const char* operator()(const LutOp&) const { return "LUT"; }
  const char* operator()(const CopyOp&) const { return "COPY"; }
  const char* operator()(const EltwiseOp& e) const {
    switch (e.kind) {
      case EltwiseKind::kAdd:
        return "ADD";
      case EltwiseKind::kMul:
        return "MUL";
      case EltwiseKind::kRescale:
        return "RESCALE";
    }
    return "?";
  }
  const char* operator()(const Fp32Op& f) const {
    switch (f.kind) {
      case Fp32Kind::kAxpby:
        return "F32_AXPBY";
      case Fp32Kind::kMul:
        return "F32_MUL";
      case Fp32Kind::kDiv:
        return "F32_DIV";
      case Fp32Kind::kSqrt:
        return "F32_SQRT";
      case Fp32Kind::kCopy:
        return "F32_COPY";
    }
    return "?";
  }
  const char* operator()(const HostOp& h) const {
    switch (h.phase) {
      case HostPhase::kToHost:
        return "TO_HOST";
      case HostPhase::kCompute:
        return "HOST_OP";
      case HostPhase::kToDevice:
        return "TO_DEVICE";
    }
    return "?";
  }
};

std::string lut_text(int lut) { return lut >= 0 ? fmt::format(" lut {}", lut) : ""; }

struct Operands {
  const Instruction& instr;
  std::string operator()(const DmaOp& d) const {
    std::string box = fmt::format("{}x{}x{}", d.count[2], d.count[1], d.count[0]);
    std::string strides = fmt::format("stride {},{}", d.dram_stride[1], d.dram_stride[0]);
    if (d.indexed) {
      return fmt::format("{}[{:#x}] <- dram[{:#x} + id * {}] {} rows of {} ids dram[{:#x}] < {}",
                         to_string(d.buffer), d.buffer_addr, d.dram_addr, d.dram_stride[0],
                         d.count[1], d.count[0], d.index_addr, d.index_rows);
    }
    if (instr.unit == UnitKind::kDmaLoad) {
      const std::string expand =
          d.format != WeightFormat::kDense
              ? fmt::format(" {} {}x{}x{}B", to_string(d.format), d.dense.rows,
                            d.dense.row_elements, d.dense.element_bytes)
              : std::string();
      return fmt::format("{}[{:#x}] <- dram[{:#x}] {} {}{}{}", to_string(d.buffer), d.buffer_addr,
                         d.dram_addr, box, strides, d.transpose ? " transposed" : "", expand);
    }
    return fmt::format("dram[{:#x}] <- {}[{:#x}] {} {}", d.dram_addr, to_string(d.buffer),
                       d.buffer_addr, box, strides);
  }
  std::string operator()(const MatmulOp& m) const {
    const auto& a = m.a;
    std::string depth = a.slab_d > 1 || a.kernel_d > 1
                            ? fmt::format(" depth {}/{} z{}", a.slab_d, a.kernel_d, a.origin_z)
                            : "";
    std::string group = a.window_c != a.slab_c ? fmt::format(" ch {}+{}", a.c0, a.window_c) : "";
    return fmt::format(
        "acc[{:#x}]{} <- ub[{:#x}] im2col(slab {}x{}x{} win {}x{} s{},{} d{},{} org {},{} ow {} m0 "
        "{} "
        "k0 {}{}{}) x wb[{:#x}] ld {} m={} k={} n={}{}{}",
        m.acc_addr, m.accumulate ? " +=" : "", a.ub_addr, a.slab_h, a.slab_w, a.slab_c, a.kernel_h,
        a.kernel_w, a.stride_h, a.stride_w, a.dilation_h, a.dilation_w, a.origin_y, a.origin_x,
        a.out_w, a.m0, a.k0, depth, group, m.wb_addr, m.w_ld, m.m, m.k, m.n,
        m.sparse_n > 0 ? fmt::format(" sparse {}:{}", m.sparse_n, m.sparse_m) : "",
        m.fp8 != Fp8Format::kNone ? fmt::format(" fp8-{} a*2^{}", to_string(m.fp8), m.a_scale_exp)
                                  : "");
  }
  std::string operator()(const RequantOp& r) const {
    return fmt::format("ub[{:#x}] <- acc[{:#x}]{} m={} n={} scales {}+{} clamp [{}, {}]{}",
                       r.out_ub_addr, r.acc_addr,
                       r.has_bias ? fmt::format(" + bias ub[{:#x}]", r.bias_ub_addr) : "", r.m, r.n,
                       r.table, r.channel0, r.lo, r.hi, lut_text(r.lut));
  }
  std::string operator()(const PoolOp& p) const {
    return fmt::format(
        "ub[{:#x}] <- ub[{:#x}] slab {}x{}x{}x{} win {}x{}x{} s{},{} org {},{},{} "
        "out {}x{}{}",
        p.out_ub_addr, p.in_ub_addr, p.slab_d, p.slab_h, p.slab_w, p.c, p.window_d, p.window_h,
        p.window_w, p.stride_h, p.stride_w, p.origin_z, p.origin_y, p.origin_x, p.out_h, p.out_w,
        p.out_ld > 0 ? fmt::format(" ld {}", p.out_ld) : "");
  }
  std::string operator()(const SoftmaxOp& s) const {
    return fmt::format("ub[{:#x}] <- ub[{:#x}] rows {} length {}", s.out_ub_addr, s.in_ub_addr,
                       s.rows, s.length);
  }
  std::string operator()(const LayerNormOp& l) const {
    return fmt::format("ub[{:#x}] <- ub[{:#x}] rows {} length {} params ub[{:#x}]", l.out_ub_addr,
                       l.in_ub_addr, l.rows, l.length, l.params_ub_addr);
  }
  std::string operator()(const LutOp& l) const {
    return fmt::format("ub[{:#x}] <- lut {} ub[{:#x}] n {}", l.out_ub_addr, l.lut, l.in_ub_addr,
                       l.elements);
  }
  std::string operator()(const CopyOp& c) const {
    return fmt::format("core{}.ub[{:#x}] <- ub[{:#x}] n {}", c.dst_core, c.dst_addr, c.src_addr,
                       c.bytes);
  }
  std::string operator()(const EltwiseOp& e) const {
    return fmt::format("ub[{:#x}] ld {} <- ub[{:#x}] ld {}{} {}x{} clamp [{}, {}]{}", e.out_ub_addr,
                       e.out_ld, e.a_ub_addr, e.a_ld,
                       e.kind == EltwiseKind::kRescale
                           ? std::string()
                           : fmt::format(", ub[{:#x}] ld {}", e.b_ub_addr, e.b_ld),
                       e.rows, e.cols, e.lo, e.hi, lut_text(e.lut));
  }
  std::string operator()(const Fp32Op& f) const {
    auto fmt_of = [](bool bf16) { return bf16 ? "bf16" : "f32"; };
    return fmt::format(
        "ub[{:#x}] ld {} {} <- ub[{:#x}] ld {} {}{} {}x{} ra {:g} rb {:g}", f.out_ub_addr, f.out_ld,
        fmt_of(f.out_bf16), f.a_ub_addr, f.a_ld, fmt_of(f.a_bf16),
        !f.reads_b() ? std::string()
        : f.b_scalar ? fmt::format(", scalar ub[{:#x}]", f.b_ub_addr)
                     : fmt::format(", ub[{:#x}] ld {} {}", f.b_ub_addr, f.b_ld, fmt_of(f.b_bf16)),
        f.rows, f.cols, f.ra, f.rb);
  }
  std::string operator()(const HostOp& h) const {
    if (h.phase == HostPhase::kCompute) return fmt::format("flops {} bytes {}", h.flops, h.bytes);
    std::string ranges;
    for (const DramRange& r : h.dram) {
      ranges += fmt::format("{}dram[{:#x}, {:#x})", ranges.empty() ? "" : " ", r.begin, r.end);
    }
    return fmt::format("{} bytes {} {}", h.phase == HostPhase::kToHost ? "<-" : "->", h.bytes,
                       ranges);
  }
};
}  // namespace

const char* opcode_name(const Instruction& instr) {
  return std::visit(OpcodeName{instr}, instr.op);
}

std::string to_assembly(const Instruction& instr) {
  // As the SoC names its units: mxu0, mxu1...; dma_load, dma_load1... (queue 0 without a number).
  std::string unit = to_string(instr.unit);
  if (instr.unit == UnitKind::kMatrix || instr.unit_index > 0) {
    unit += std::to_string(instr.unit_index);
  }
  std::string deps;
  for (uint32_t d : instr.deps) {
    if (!deps.empty()) deps += ',';
    deps += std::to_string(d);
  }
  return fmt::format("{:>7}  {:<9} {:<9} {}{}", instr.id, unit, opcode_name(instr),
                     std::visit(Operands{instr}, instr.op),
                     deps.empty() ? "" : fmt::format("  wait({})", deps));
}

}  // namespace npusim
