#include "models/matrix_unit.hpp"

#include <algorithm>

#include "arch/activation.hpp"
#include "arch/fp8.hpp"
#include "models/im2col.hpp"
#include "support/error.hpp"

namespace npusim {

namespace {
// The array's view of a tile's operands: gathered activations, weights and accumulators.
template <class Operands, class Element, class Accumulator>
Operands operands_of(const MatmulOp& op, const uint8_t* a, const uint8_t* w, uint8_t* acc) {
  Operands o;
  o.a = reinterpret_cast<const Element*>(a);
  o.lda = op.k;
  o.w = reinterpret_cast<const Element*>(w);
  o.ldw = op.w_ld;
  o.acc = reinterpret_cast<Accumulator*>(acc);
  o.ldacc = op.acc_ld;
  o.accumulate = op.accumulate;
  return o;
}
}  // namespace

MatrixUnit::MatrixUnit(sc_core::sc_module_name name, const Program& program,
                       std::vector<uint32_t> stream, Scoreboard& scoreboard, const CoreClock& clock,
                       OnChipBuffers& buffers, const systolic::ArrayParams& array,
                       systolic::Fidelity fidelity, bool compute_values)
    : ExecutionUnit(name, program, std::move(stream), scoreboard, clock),
      buffers_(buffers),
      params_(array),
      array_(systolic::make_array_model(array, fidelity)),
      compute_values_(compute_values) {}

void MatrixUnit::execute(const Instruction& instr) {
  const auto* op = std::get_if<MatmulOp>(&instr.op);
  NPUSIM_CHECK(op != nullptr, "{}: instruction {} is not a MATMUL", name(), instr.id);
  const systolic::TileShape shape{op->m, op->k, op->n, op->sparse_n > 0};
  NPUSIM_CHECK(
      !shape.sparse || (op->sparse_n == params_.sparse_n && op->sparse_m == params_.sparse_m),
      "{}: instruction {}: a {}:{} sparse tile on a {}:{} array", name(), instr.id, op->sparse_n,
      op->sparse_m, params_.sparse_n, params_.sparse_m);
  NPUSIM_CHECK(systolic::tile_fits(params_, shape),
               "{}: instruction {}: tile {}x{}x{} does not fit", name(), instr.id, op->m, op->k,
               op->n);
  NPUSIM_CHECK(op->acc_addr % 4 == 0, "{}: instruction {}: unaligned accumulator address {:#x}",
               name(), instr.id, op->acc_addr);
  const auto& v = op->a;
  const bool bf16 = program_.dtype == DataType::kBf16;
  const int eb = bf16 ? 2 : 1;
  const uint8_t* slab =
      buffers_.bytes(BufferId::kUnified, v.ub_addr,
                     uint64_t(v.slab_d) * v.slab_h * v.slab_w * v.slab_c * eb, instr.id);
  if (compute_values_) {
    a_.resize(static_cast<size_t>(op->m) * op->k * eb);
    gather_activations(v, slab, op->m, op->k, a_.data(), eb);
    if (op->fp8 != Fp8Format::kNone) round_to_fp8_inputs(*op);
  }
  const uint8_t* w = buffers_.bytes(BufferId::kWeight, op->wb_addr,
                                    (uint64_t(op->k - 1) * op->w_ld + op->n) * eb, instr.id);
  uint8_t* acc = buffers_.bytes(BufferId::kAccumulator, op->acc_addr,
                                (uint64_t(op->m - 1) * op->acc_ld + op->n) * 4, instr.id);

  const uint64_t issue = clock_.now();
  systolic::TileTiming t;
  if (!compute_values_) {
    t = array_->time_only(shape, program_.dtype, op->accumulate, issue);
  } else {
    t = bf16 ? array_->execute_bf16(shape,
                                    operands_of<systolic::Half16TileOperands, uint16_t, float>(
                                        *op, a_.data(), w, acc),
                                    issue)
             : array_->execute_int8(
                   shape,
                   operands_of<systolic::Int8TileOperands, int8_t, int32_t>(*op, a_.data(), w, acc),
                   issue);
  }
  NPUSIM_CHECK(
      t.start_cycle >= issue && t.done_cycle >= t.start_cycle && t.next_issue_cycle >= issue,
      "{}: instruction {}: array timing out of order (issue {}, start {}, done {}, next {})",
      name(), instr.id, issue, t.start_cycle, t.done_cycle, t.next_issue_cycle);
  // Tiles retire in order: a short tile (small K) may drain before a longer one issued earlier,
  // but its completion token waits for its predecessor's, so dependents see in-order completion.
  last_done_ = std::max(last_done_, t.done_cycle);
  macs_ += uint64_t(op->m) * op->k * op->n;
  if (op->fp8 != Fp8Format::kNone) fp8_macs_ += uint64_t(op->m) * op->k * op->n;
  add_busy(instr, t.busy_cycles);
  complete(instr, t.start_cycle, last_done_);
  wait(clock_.cycles(t.next_issue_cycle - issue));
}

// The array's input conversion of an fp8 tile: each bf16 activation rounded to the format with
// the layer's scale; the result is exact in bf16, and the array's fp8 x fp8 products equal its
// bf16 x bf16 products of the same values (arch/fp8.hpp), so the bf16 datapath computes them.
void MatrixUnit::round_to_fp8_inputs(const MatmulOp& op) {
  NPUSIM_CHECK(program_.dtype == DataType::kBf16, "{}: an fp8 tile in a {} program", name(),
               to_string(program_.dtype));
  auto* a = reinterpret_cast<uint16_t*>(a_.data());
  for (size_t i = 0; i < size_t(op.m) * op.k; ++i)
    a[i] = float_to_bf16_bits(round_to_fp8(bf16_bits_to_float(a[i]), op.fp8, op.a_scale_exp));
}

void MatrixUnit::register_stats(stats::Registry& reg, const std::string& prefix) const {
  ExecutionUnit::register_stats(reg, prefix);
  const systolic::ArrayStats& a = array_->stats();
  reg.counter(prefix + ".tiles", "count", "tiles the systolic array executed", a.tiles);
  reg.counter(prefix + ".macs", "count",
              "multiply-accumulates performed, all data types (an N:M sparse tile: its slots)",
              a.macs);
  reg.counter(prefix + ".int8_macs", "count", "int8 x int8 multiply-accumulates", a.int8_macs);
  reg.counter(prefix + ".bf16_macs", "count", "bf16 x bf16 multiply-accumulates", a.bf16_macs);
  reg.counter(prefix + ".fp16_macs", "count", "fp16 x fp16 multiply-accumulates", a.fp16_macs);
  if (fp8_macs_ > 0) {
    reg.counter(prefix + ".fp8_macs", "count",
                "fp8 x fp8 multiply-accumulates (--dtype fp8-*; bf16_macs counts them too, the "
                "model's array computes them on its bf16 datapath)",
                fp8_macs_);
  }
  reg.counter(prefix + ".stationary_rows_loaded", "count",
              "rows shifted into the stationary register bank (ws/is: K per tile)",
              a.stationary_rows_loaded);
  reg.counter(prefix + ".accumulator_writes", "count", "accumulator words written (M x N per tile)",
              a.accumulator_writes);
  reg.counter(prefix + ".accumulator_reads", "count",
              "accumulator words read back to accumulate (M x N per accumulating tile)",
              a.accumulator_reads);
}

}  // namespace npusim
