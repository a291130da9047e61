// The ring all-reduce of data-parallel training (compiler/lowering/ring_allreduce.hpp): the
// instructions it appends, executed in program order by a small interpreter of their DMA, COPY and
// ELTWISE semantics (arch/isa.hpp), leave the ring's sum in the reduced output, bit for bit
// ring_sum_bf16, which equals the exact sum for small integers; the links carry 2 (N - 1) times
// the tensor, each core's DMA loads its partial once and the sums are stored once. Uneven chunks
// (3 cores), empty chunks (32 cores on 320 elements) and pieces (a small unified buffer).
#include "compiler/lowering/ring_allreduce.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "arch/activation.hpp"
#include "npusim/compile_target.hpp"

namespace {

using npusim::BufferId;
using npusim::Program;

struct Case {
  int cores;
  uint64_t elements;
  uint64_t ub_bytes;
};

class RingAllReduce : public ::testing::TestWithParam<Case> {};

TEST_P(RingAllReduce, SumsEveryCoresPartialOverTheLinks) {
  const Case c = GetParam();
  npusim::Target t;
  t.hw = "tpu-v4-like-core";
  npusim::HwConfig hw = npusim::target_hardware(t);
  hw.cores = c.cores;
  hw.unified_buffer.capacity_bytes = c.ub_bytes;
  const int n = c.cores;
  const uint64_t bytes = 2 * c.elements;

  // A data-parallel program's output: core k's partial at its own off-chip address.
  Program p;
  p.cores = n;
  p.dtype = npusim::DataType::kBf16;
  npusim::TensorPlacement out;
  out.name = "g";
  out.batch = n;
  out.dims = {int(c.elements)};
  out.element_bytes = 2;
  std::vector<uint8_t> dram(uint64_t(n) * 2 * bytes + (1 << 16), 0);
  std::vector<std::vector<uint16_t>> parts(static_cast<size_t>(n));
  for (int k = 0; k < n; ++k) {
    npusim::TensorPart part;
    part.dram_addr = uint64_t(k) * bytes;
    part.batch = 1;
    part.core = k;
    out.parts.push_back(part);
    for (uint64_t i = 0; i < c.elements; ++i) {
      // Small integers: every sum is exact in bf16, whatever the order.
      parts[size_t(k)].push_back(npusim::float_to_bf16_bits(float((i * 7 + uint64_t(k)) % 13)));
    }
    std::memcpy(dram.data() + part.dram_addr, parts[size_t(k)].data(), bytes);
  }
  p.outputs.push_back(out);
  p.dram_bytes = uint64_t(n) * bytes;

  const npusim::AllReduceSummary s = npusim::append_ring_allreduce(p, hw, {0});
  ASSERT_EQ(s.reduced_outputs, std::vector<size_t>{1});
  const npusim::TensorPlacement& sum = p.outputs.at(1);
  ASSERT_GE(dram.size(), sum.dram_addr + bytes);
  EXPECT_EQ(s.link_bytes, 2 * uint64_t(n - 1) * bytes);
  EXPECT_EQ(s.dram_read_bytes, uint64_t(n) * bytes);
  EXPECT_EQ(s.dram_write_bytes, bytes);

  // Execute in program order (every dependency names an earlier instruction).
  std::vector<std::vector<uint8_t>> ub(size_t(n), std::vector<uint8_t>(c.ub_bytes, 0));
  std::vector<uint64_t> link(static_cast<size_t>(n), 0);
  for (const npusim::Instruction& in : p.instructions) {
    for (uint32_t d : in.deps) ASSERT_LT(d, in.id);
    auto& mine = ub.at(size_t(in.core));
    if (const auto* dma = std::get_if<npusim::DmaOp>(&in.op)) {
      ASSERT_EQ(dma->buffer, BufferId::kUnified);
      ASSERT_LE(dma->buffer_addr + dma->bytes(), c.ub_bytes);
      if (in.unit == npusim::UnitKind::kDmaLoad) {
        std::memcpy(mine.data() + dma->buffer_addr, dram.data() + dma->dram_addr, dma->bytes());
      } else {
        std::memcpy(dram.data() + dma->dram_addr, mine.data() + dma->buffer_addr, dma->bytes());
      }
    } else if (const auto* copy = std::get_if<npusim::CopyOp>(&in.op)) {
      ASSERT_EQ(copy->dst_core, (in.core + 1) % n);  // one hop along the ring
      ASSERT_LE(copy->dst_addr + copy->bytes, c.ub_bytes);
      std::memcpy(ub.at(size_t(copy->dst_core)).data() + copy->dst_addr,
                  mine.data() + copy->src_addr, copy->bytes);
      link[size_t(in.core)] += copy->bytes;
    } else {
      const auto& e = std::get<npusim::EltwiseOp>(in.op);
      ASSERT_EQ(e.kind, npusim::EltwiseKind::kAdd);
      ASSERT_EQ(e.rows, 1);
      for (int i = 0; i < e.cols; ++i) {
        uint16_t a, b;
        std::memcpy(&a, mine.data() + e.a_ub_addr + 2 * i, 2);
        std::memcpy(&b, mine.data() + e.b_ub_addr + 2 * i, 2);
        const uint16_t r = npusim::float_to_bf16_bits(npusim::bf16_bits_to_float(a) +
                                                      npusim::bf16_bits_to_float(b));
        std::memcpy(mine.data() + e.out_ub_addr + 2 * i, &r, 2);
      }
    }
  }
  uint64_t total = 0;
  for (uint64_t b : link) total += b;
  EXPECT_EQ(total, s.link_bytes);

  std::vector<uint16_t> got(c.elements);
  std::memcpy(got.data(), dram.data() + sum.dram_addr, bytes);
  const std::vector<uint16_t> want =
      npusim::ring_sum_bf16(parts, npusim::allreduce_piece_bytes(hw));
  EXPECT_EQ(got, want);
  for (uint64_t i = 0; i < c.elements; ++i) {
    float exact = 0;
    for (int k = 0; k < n; ++k) exact += float((i * 7 + uint64_t(k)) % 13);
    ASSERT_EQ(npusim::bf16_bits_to_float(got[i]), exact) << i;
  }
  // The all-gather: every core ends with the whole sum in its buffer (one piece: at address 0).
  if (bytes <= npusim::allreduce_piece_bytes(hw)) {
    for (int k = 0; k < n; ++k) {
      EXPECT_EQ(std::memcmp(ub[size_t(k)].data(), got.data(), bytes), 0) << "core " << k;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cores, RingAllReduce,
                         ::testing::Values(Case{2, 1000, 16 << 20}, Case{3, 1000, 16 << 20},
                                           Case{4, 20000, 64 << 10}, Case{32, 320, 64 << 10}),
                         [](const ::testing::TestParamInfo<Case>& param) {
                           return "cores" + std::to_string(param.param.cores) + "_elements" +
                                  std::to_string(param.param.elements);
                         });

}  // namespace
