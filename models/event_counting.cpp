#include "models/event_counting.hpp"

#include <algorithm>
#include <bit>
#include <variant>

#include "support/error.hpp"

namespace npusim {

namespace {

uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

// Port-word accesses of `rows` rows of `row_bytes` bytes through a port of `port` bytes: the bytes
// moved in whole port words. A partial row costs its share of a word (the sub-arrays it does not
// address stay idle), so a narrow operand is not charged the full port.
uint64_t accesses(uint64_t rows, uint64_t row_bytes, uint64_t port) {
  return ceil_div(rows * row_bytes, port);
}

EnergyEvent read_of(BufferId id) {
  switch (id) {
    case BufferId::kUnified:
      return EnergyEvent::kUnifiedRead;
    case BufferId::kWeight:
      return EnergyEvent::kWeightRead;
    case BufferId::kAccumulator:
      return EnergyEvent::kAccumulatorRead;
    case BufferId::kDram:
      break;
  }
  NPUSIM_CHECK(false, "off-chip memory is not an on-chip buffer");
  return EnergyEvent::kUnifiedRead;
}
// The write event follows its read event in EnergyEvent.
EnergyEvent write_of(BufferId id) { return EnergyEvent(size_t(read_of(id)) + 1); }

struct Counter {
  UnitKind unit;
  DataType dtype;
  const BufferPorts& p;
  EventCounts& c;

  uint64_t eb() const { return size_bytes(dtype); }
  void ub_read(uint64_t rows, uint64_t row_bytes) {
    c[EnergyEvent::kUnifiedRead] += accesses(rows, row_bytes, p.unified);
  }
  void ub_write(uint64_t rows, uint64_t row_bytes) {
    c[EnergyEvent::kUnifiedWrite] += accesses(rows, row_bytes, p.unified);
  }
  // Per element of `elements`: add/mul, compares, tables, reductions.
  void per_element(uint64_t elements, uint64_t add_mul, uint64_t compare, uint64_t table,
                   uint64_t reduction) {
    c[EnergyEvent::kVectorAddMul] += elements * add_mul;
    c[EnergyEvent::kVectorCompare] += elements * compare;
    c[EnergyEvent::kVectorTable] += elements * table;
    c[EnergyEvent::kVectorReduction] += elements * reduction;
  }

  // The on-chip side of a copy: a load writes the buffer, a store reads it.
  void operator()(const DmaOp& d) {
    c[EnergyEvent::kDmaByte] += d.bytes();
    if (d.format != WeightFormat::kDense) c[EnergyEvent::kDecompressBit] += 8 * d.buffer_bytes();
    const uint64_t n = accesses(1, d.buffer_bytes(), port_bytes(p, d.buffer));
    c[unit == UnitKind::kDmaLoad ? write_of(d.buffer) : read_of(d.buffer)] += n;
  }
  void operator()(const CopyOp& copy) {
    c[EnergyEvent::kLinkByte] += copy.bytes;
    ub_read(1, copy.bytes);
    ub_write(1, copy.bytes);
  }
  void operator()(const MatmulOp& m) {
    // An N:M sparse tile occupies Kc stationary rows (models/systolic/sparsity.hpp).
    const uint64_t rows = m.sparse_n > 0 ? uint64_t(m.k / m.sparse_m) * m.sparse_n +
                                               uint64_t(std::min(m.sparse_n, m.k % m.sparse_m))
                                         : uint64_t(m.k);
    const uint64_t macs = uint64_t(m.m) * rows * m.n;
    c[m.fp8 != Fp8Format::kNone  ? EnergyEvent::kMacFp8
      : dtype == DataType::kBf16 ? EnergyEvent::kMacBf16
      : dtype == DataType::kFp16 ? EnergyEvent::kMacFp16
                                 : EnergyEvent::kMacInt8] += macs;
    c[EnergyEvent::kPeRegisterMove] += macs;
    c[EnergyEvent::kWeightRegisterLoad] += rows * m.n;
    if (m.sparse_n > 0) {
      c[EnergyEvent::kSparseSelectBit] += macs * uint64_t(m.sparse_m - 1) * 8 * eb();
      c[EnergyEvent::kMetadataBitLoad] +=
          rows * m.n * uint64_t(std::bit_width(unsigned(m.sparse_m - 1)));
    }
    ub_read(m.m, m.k * eb());
    c[EnergyEvent::kWeightRead] += accesses(m.k, m.n * eb(), p.weight);
    c[EnergyEvent::kAccumulatorWrite] += accesses(m.m, uint64_t(m.n) * 4, p.accumulators);
    if (m.accumulate)
      c[EnergyEvent::kAccumulatorRead] += accesses(m.m, uint64_t(m.n) * 4, p.accumulators);
  }
  void operator()(const RequantOp& r) {
    const uint64_t elements = uint64_t(r.m) * r.n;
    const bool table = r.lut >= 0 || r.activation != Activation::kNone;
    per_element(elements, 2, 2, table ? 1 : 0, 0);
    c[EnergyEvent::kAccumulatorRead] += accesses(r.m, uint64_t(r.n) * 4, p.accumulators);
    if (r.has_bias) ub_read(1, uint64_t(r.n) * 4);
    ub_write(r.m, r.n * eb());
  }
  void operator()(const LutOp& l) {
    per_element(l.elements, 0, 0, 1, 0);
    ub_read(1, l.elements * eb());
    ub_write(1, l.elements * eb());
  }
  void operator()(const EltwiseOp& e) {
    const uint64_t elements = uint64_t(e.rows) * e.cols;
    const uint64_t add_mul = e.kind == EltwiseKind::kAdd ? 3 : e.kind == EltwiseKind::kMul ? 2 : 1;
    const bool table = e.lut >= 0 || e.activation != Activation::kNone;
    per_element(elements, add_mul, 2, table ? 1 : 0, 0);
    ub_read(uint64_t(e.rows) * (e.kind == EltwiseKind::kRescale ? 1 : 2), e.cols * eb());
    ub_write(e.rows, e.cols * eb());
  }
  // fp32 element-wise work: each add and multiply one fp32 event; a divide or square root (an
  // iterative unit: a table seed and two Newton-Raphson steps of two multiply-adds each, then the
  // rounding correction) one table read and 5 fp32 events.
  void operator()(const Fp32Op& f) {
    const uint64_t elements = uint64_t(f.rows) * f.cols;
    uint64_t add_mul = 0, iterative = 0;
    switch (f.kind) {
      case Fp32Kind::kAxpby:
        add_mul = 3;
        break;
      case Fp32Kind::kMul:  // a x ra, then x b
        add_mul = 2;
        break;
      case Fp32Kind::kDiv:  // a x ra, then / b
        add_mul = 1;
        iterative = 1;
        break;
      case Fp32Kind::kSqrt:  // a / b, its square root, + ra
        add_mul = 1;
        iterative = 2;
        break;
      case Fp32Kind::kCopy:
        break;
    }
    c[EnergyEvent::kVectorFp32AddMul] += elements * (add_mul + 5 * iterative);
    c[EnergyEvent::kVectorTable] += elements * iterative;
    ub_read(f.rows, uint64_t(f.cols) * f.a_bytes());
    if (f.reads_b())
      ub_read(f.b_scalar ? 1 : f.rows, f.b_scalar ? 4 : uint64_t(f.cols) * f.b_bytes());
    ub_write(f.rows, uint64_t(f.cols) * f.out_bytes());
  }
  // The host and its link touch no part of the accelerator: no event (docs/heterogeneous.md says
  // why their energy is not modelled).
  void operator()(const HostOp&) {}
  void operator()(const PoolOp& pool) {
    const uint64_t outputs = uint64_t(pool.out_h) * pool.out_w * pool.c;
    const uint64_t window = uint64_t(pool.window_d) * pool.window_h * pool.window_w;
    if (pool.average) {
      per_element(outputs * window, 0, 0, 0, 1);
      per_element(outputs, 0, 0, 1, 0);
    } else {
      per_element(outputs * window, 0, 1, 0, 0);
    }
    // Each output pixel reads its window's rows of c channels.
    ub_read(uint64_t(pool.out_h) * pool.out_w * window, pool.c * eb());
    ub_write(uint64_t(pool.out_h) * pool.out_w, pool.c * eb());
  }
  void operator()(const SoftmaxOp& s) {
    per_element(uint64_t(s.rows) * s.length, 1, 1, 1, 1);
    per_element(s.rows, 0, 0, 1, 0);
    ub_read(s.rows, s.length * eb());
    ub_write(s.rows, s.length * eb());
  }
  void operator()(const LayerNormOp& l) {
    per_element(uint64_t(l.rows) * l.length, l.rms ? 3 : 4, 0, 0, l.rms ? 1 : 2);
    per_element(l.rows, 0, 0, 1, 0);
    ub_read(l.rows, l.length * eb());
    ub_read(2, uint64_t(l.length) * 4);  // gamma and beta
    ub_write(l.rows, l.length * eb());
  }
};

}  // namespace

void count_instruction_events(const Instruction& instr, DataType dtype, const BufferPorts& ports,
                              EventCounts& counts) {
  std::visit(Counter{instr.unit, dtype, ports, counts}, instr.op);
}

}  // namespace npusim
