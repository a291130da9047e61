#include "serving/scheduler.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <random>

#include "serving/metrics.hpp"
#include "support/error.hpp"

namespace npusim::serving {
namespace {

Request req(const std::string& id, double arrival, int64_t prompt, int64_t output) {
  Request r;
  r.id = id;
  r.arrival_s = arrival;
  r.prompt_tokens = prompt;
  r.output_tokens = output;
  return r;
}

ServingConfig config(int64_t max_batch, int64_t block, int64_t blocks, int64_t step_tokens) {
  ServingConfig c;
  c.max_batch = max_batch;
  c.kv_block_tokens = block;
  c.kv_capacity_blocks = blocks;
  c.max_step_tokens = step_tokens;
  return c;
}

// Step cost: 1 s + 0.1 s per prefill token + 0.5 s per decode token.
AffineStepCost simple_cost() { return AffineStepCost(1.0, 0.1, 0.5, 0.0, 2.0); }

TEST(Scheduler, TimelineByHand) {
  // A (arrives 0: 6 prompt, 3 output), B (arrives 0.5: 4 prompt, 2 output); batch 2, blocks of 4.
  // Step 1 [0, 1.6]: A's prefill, 6 tokens: 1 + 0.6. A's first token at 1.6.
  // Step 2 [1.6, 3.5]: A decodes (0.5); B (arrived) prefills 4 tokens (0.4): 1.9. A's 2nd token,
  //   B's first at 3.5.
  // Step 3 [3.5, 5.5]: A and B decode: 1 + 1.0. Both finish at 5.5.
  const std::vector<Request> trace{req("A", 0, 6, 3), req("B", 0.5, 4, 2)};
  auto cost = simple_cost();
  const auto r = simulate_serving(trace, config(2, 4, 100, 8), cost);
  ASSERT_EQ(r.steps.size(), 3u);
  EXPECT_DOUBLE_EQ(r.steps[0].end_s, 1.6);
  EXPECT_DOUBLE_EQ(r.steps[1].end_s, 3.5);
  EXPECT_DOUBLE_EQ(r.steps[2].end_s, 5.5);
  EXPECT_EQ(r.steps[1].prefill_tokens, 4);
  EXPECT_EQ(r.steps[1].decode_tokens, 1);
  // Blocks: A holds 2 (6 prompt positions, then 7 and 8), B 1 then 2 (its 5th position).
  EXPECT_EQ(r.steps[0].kv_blocks_used, 2);
  EXPECT_EQ(r.steps[1].kv_blocks_used, 3);
  EXPECT_EQ(r.steps[2].kv_blocks_used, 4);
  EXPECT_DOUBLE_EQ(r.requests[0].first_token_s, 1.6);
  EXPECT_DOUBLE_EQ(r.requests[0].finish_s, 5.5);
  EXPECT_DOUBLE_EQ(r.requests[1].first_token_s, 3.5);
  EXPECT_DOUBLE_EQ(r.requests[1].finish_s, 5.5);

  const auto s = summarize(trace, r);
  EXPECT_DOUBLE_EQ(s.ttft_s.max, 3.0);  // B: 3.5 - 0.5
  EXPECT_DOUBLE_EQ(s.ttft_s.p50, (1.6 + 3.0) / 2);
  EXPECT_DOUBLE_EQ(s.tpot_s.max, 2.0);  // B: (5.5 - 3.5) / 1; A: (5.5 - 1.6) / 2 = 1.95
  EXPECT_DOUBLE_EQ(s.tpot_s.mean, (1.95 + 2.0) / 2);
  EXPECT_DOUBLE_EQ(s.e2e_s.max, 5.5);
  EXPECT_DOUBLE_EQ(s.makespan_s, 5.5);
  EXPECT_EQ(s.generated_tokens, 5);
  EXPECT_DOUBLE_EQ(s.tokens_per_s, 5 / 5.5);
  // Energy: 2 J per token processed: 6 + (4 + 1) + 2 tokens.
  EXPECT_DOUBLE_EQ(s.energy_j, 26.0);
  EXPECT_DOUBLE_EQ(s.energy_per_token_j, 26.0 / 5);
  // Targets: TTFT <= 2 s keeps A only; TPOT <= 1.96 s keeps A only too.
  EXPECT_EQ(summarize(trace, r, 2.0, 0).requests_within_slo, 1);
  EXPECT_EQ(summarize(trace, r, 0, 1.96).requests_within_slo, 1);
  EXPECT_EQ(summarize(trace, r, 3.0, 2.0).requests_within_slo, 2);
  EXPECT_EQ(requests_csv(trace, r),
            "id,arrival_s,first_token_s,finish_s,ttft_s,tpot_s,e2e_s,prompt_tokens,"
            "output_tokens,preemptions\n"
            "A,0,1.6,5.5,1.6,1.95,5.5,6,3,0\n"
            "B,0.5,3.5,5.5,3,2,5,4,2,0\n");
}

TEST(Scheduler, LongPromptsArePrefilledInChunks) {
  // 4 tokens a step: a 10-token prompt takes chunks 4, 4, 2; its first token ends step 3.
  const std::vector<Request> trace{req("long", 0, 10, 1)};
  auto cost = simple_cost();
  const auto r = simulate_serving(trace, config(1, 4, 100, 4), cost);
  ASSERT_EQ(r.steps.size(), 3u);
  EXPECT_EQ(r.steps[0].prefill_tokens, 4);
  EXPECT_EQ(r.steps[2].prefill_tokens, 2);
  EXPECT_DOUBLE_EQ(r.requests[0].first_token_s, 1.4 + 1.4 + 1.2);
  EXPECT_DOUBLE_EQ(r.requests[0].finish_s, r.requests[0].first_token_s);
}

TEST(Scheduler, IdleUntilTheNextArrival) {
  const std::vector<Request> trace{req("late", 10, 2, 1)};
  auto cost = simple_cost();
  const auto r = simulate_serving(trace, config(1, 4, 100, 8), cost);
  ASSERT_EQ(r.steps.size(), 1u);
  EXPECT_DOUBLE_EQ(r.steps[0].start_s, 10);
  EXPECT_DOUBLE_EQ(r.requests[0].first_token_s, 11.2);
}

TEST(Scheduler, FullCacheMakesRequestsWait) {
  // 3 blocks of 4 positions. A (8 prompt, 2 output) takes 2 blocks, then the third for its 9th
  // position; B (8 prompt) needs 2 free blocks and waits until A finishes.
  // Step 1 [0, 1.8]: A prefill 8. Step 2 [1.8, 3.3]: A decodes, finishes. Step 3 [3.3, 5.1]: B.
  const std::vector<Request> trace{req("A", 0, 8, 2), req("B", 0, 8, 1)};
  auto cost = simple_cost();
  const auto r = simulate_serving(trace, config(2, 4, 3, 16), cost);
  ASSERT_EQ(r.steps.size(), 3u);
  EXPECT_EQ(r.steps[1].waiting, 1);
  EXPECT_EQ(r.steps[1].kv_blocks_used, 3);
  EXPECT_EQ(r.peak_kv_blocks, 3);
  EXPECT_DOUBLE_EQ(r.requests[0].finish_s, 3.3);
  EXPECT_DOUBLE_EQ(r.requests[1].first_token_s, 5.1);
  EXPECT_EQ(r.preemptions, 0);
}

TEST(Scheduler, PreemptionRecomputesTheLatestAdmitted) {
  // 4 blocks of 2 positions; A and B (2 prompt, 5 output each) both start.
  // Step 1: both prefill (1 block each), first tokens. Steps 2-3: both decode; step 2 takes a
  // block each (positions 3), so all 4 are held. Step 4: A's 5th position needs a 5th block:
  // B (admitted last) is preempted, its 2 blocks freed; A decodes alone. B waits: it needs 3
  // blocks for its prompt and 3 tokens. Step 5: A's last token (no new block), A finishes.
  // Step 6: B prefills 5 positions (2 + 3) anew and emits its 4th token. Step 7: its 5th.
  const std::vector<Request> trace{req("A", 0, 2, 5), req("B", 0, 2, 5)};
  auto cost = simple_cost();
  const auto r = simulate_serving(trace, config(2, 2, 4, 16), cost);
  ASSERT_EQ(r.steps.size(), 7u);
  EXPECT_EQ(r.preemptions, 1);
  EXPECT_EQ(r.requests[1].preemptions, 1);
  EXPECT_EQ(r.steps[3].decode_tokens, 1);
  EXPECT_EQ(r.steps[3].waiting, 0);  // B was preempted during step 4's scheduling
  EXPECT_EQ(r.steps[4].waiting, 1);
  EXPECT_EQ(r.steps[5].prefill_tokens, 5);
  EXPECT_EQ(r.steps[5].decode_tokens, 0);
  EXPECT_EQ(r.requests[1].tokens, 5);
  EXPECT_DOUBLE_EQ(r.requests[0].finish_s, r.steps[4].end_s);
  EXPECT_DOUBLE_EQ(r.requests[1].finish_s, r.steps[6].end_s);
  // B's first token stays the one of step 1.
  EXPECT_DOUBLE_EQ(r.requests[1].first_token_s, r.steps[0].end_s);
}

TEST(Scheduler, RequestsThatCanNeverRunAreUserErrors) {
  const std::vector<Request> trace{req("big", 0, 100, 30)};
  auto cost = simple_cost();
  try {
    simulate_serving(trace, config(2, 16, 4, 64), cost, "t.csv");
    FAIL() << "no error";
  } catch (const UserErrors& e) {
    ASSERT_EQ(e.messages().size(), 1u);
    EXPECT_EQ(e.messages()[0],
              "request 'big': needs 9 KV blocks of 16 tokens for 100 prompt and 30 output "
              "tokens; the cache holds 4 blocks");
  }
  auto c = config(2, 16, 100, 64);
  c.max_context = 64;
  EXPECT_THROW(simulate_serving(trace, c, cost), UserErrors);
  EXPECT_THROW(simulate_serving(trace, config(4, 16, 100, 2), cost), UserErrors);
}

TEST(Scheduler, InvariantsOnARandomTrace) {
  std::mt19937_64 rng(7);
  std::vector<Request> trace;
  double t = 0;
  for (int i = 0; i < 300; ++i) {
    t += std::exponential_distribution<double>(4.0)(rng);
    trace.push_back(
        req(fmt::format("r{}", i), t, 1 + int64_t(rng() % 300), 1 + int64_t(rng() % 120)));
  }
  const auto c = config(16, 16, 80, 512);
  AffineStepCost cost(0.01, 1e-4, 1e-3, 1e-6, 0.5);
  const auto r = simulate_serving(trace, c, cost);
  const auto again = simulate_serving(trace, c, cost);
  ASSERT_EQ(r.steps.size(), again.steps.size());
  EXPECT_GT(r.preemptions, 0);  // 80 blocks are tight for 16 requests of up to 420 positions
  for (size_t i = 0; i < trace.size(); ++i) {
    const auto& o = r.requests[i];
    EXPECT_EQ(o.tokens, trace[i].output_tokens) << trace[i].id;
    EXPECT_GT(o.first_token_s, trace[i].arrival_s) << trace[i].id;
    EXPECT_LE(o.first_token_s, o.finish_s) << trace[i].id;
    EXPECT_EQ(o.finish_s, again.requests[i].finish_s) << trace[i].id;
  }
  for (size_t k = 0; k < r.steps.size(); ++k) {
    const auto& s = r.steps[k];
    EXPECT_LE(s.kv_blocks_used, c.kv_capacity_blocks);
    EXPECT_LE(s.running, c.max_batch);
    EXPECT_LE(s.prefill_tokens + s.decode_tokens, c.max_step_tokens);
    if (k > 0) {
      EXPECT_GE(s.start_s, r.steps[k - 1].end_s);
    }
  }
  const auto sum = summarize(trace, r, 1.0, 0.05);
  EXPECT_LE(sum.ttft_s.p50, sum.ttft_s.p90);
  EXPECT_LE(sum.ttft_s.p90, sum.ttft_s.p99);
  EXPECT_LE(sum.ttft_s.p99, sum.ttft_s.max);
  EXPECT_LE(sum.requests_within_slo, sum.requests);
  EXPECT_LE(sum.mean_kv_blocks, double(c.kv_capacity_blocks));
}

}  // namespace
}  // namespace npusim::serving
