// Iteration-level (continuous) batching of LLM requests over a paged KV cache, as vLLM schedules
// them (Kwon et al., "Efficient Memory Management for Large Language Model Serving with
// PagedAttention", SOSP 2023; Yu et al., "Orca", OSDI 2022). Plain C++: what one step of the chip
// costs comes from a StepCostModel (in a run, the simulated prefill and decode programs; in tests,
// a formula), so the schedule can be checked by hand. docs/serving.md states the policy.
//
// The policy, step by step (every step is one pass of the model over a batch of tokens):
//  1. Requests that have arrived join the waiting queue in arrival order (trace order for ties).
//  2. Every running request that is decoding needs the KV cache of its context plus one token; a
//     request crossing a block boundary takes a free block. With none free, the running request
//     admitted last is preempted (recompute: its blocks are freed and it goes back to the head of
//     the waiting queue; when admitted again, its prompt and the tokens it generated are prefilled
//     anew, and that prefill emits its next token).
//  3. The step's token budget (`max_step_tokens`) less one token per decoding request goes to
//     prefill, in chunks: first to running requests whose prefill is unfinished (admission order),
//     then to waiting requests admitted in queue order while fewer than `max_batch` run and the
//     free blocks hold the whole prompt's KV (a request that does not fit stops admission: first
//     come, first served).
//  4. The step takes what the cost model says. At its end each decoding request has one more
//     token, a request whose prefill finished has its next token (its first token: the
//     time to first token ends here), and a request with all its tokens finishes and frees its
//     blocks.
//  5. With nothing to run, time moves to the next arrival.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "serving/request_trace.hpp"

namespace npusim::serving {

struct ServingConfig {
  int64_t max_batch = 64;          // requests running at once (prefilling or decoding)
  int64_t kv_block_tokens = 16;    // tokens per KV-cache block
  int64_t kv_capacity_blocks = 0;  // blocks the off-chip memory holds for the KV cache
  int64_t max_step_tokens = 2048;  // tokens one step processes: decode tokens + prefill chunks
  int64_t max_context = 0;         // the model's context window in tokens (0: no limit)
};

// One request's prefill work in a step: `tokens` positions whose KV cache is computed, after
// `context_before` positions computed in earlier steps (chunked prefill attends to them).
struct PrefillChunk {
  int64_t tokens = 0;
  int64_t context_before = 0;
};

// What one step runs: prefill chunks and one decode token per decoding request, each decode
// token attending to `decode_contexts[i]` positions (the cached ones and itself).
struct StepShape {
  std::vector<PrefillChunk> prefill;
  std::vector<int64_t> decode_contexts;
  int64_t prefill_tokens() const;
};

struct StepCost {
  double seconds = 0;
  double energy_j = 0;
};

// Contract: cost() is a pure function of the shape (the same shape costs the same), seconds > 0.
class StepCostModel {
 public:
  virtual ~StepCostModel() = default;
  virtual StepCost cost(const StepShape& shape) = 0;
};

// A step's cost as a formula: fixed + per prefill token + per decode token + per position a
// decode token attends to. For tests (a timeline computable by hand) and first estimates.
class AffineStepCost : public StepCostModel {
 public:
  AffineStepCost(double fixed_s, double prefill_token_s, double decode_token_s,
                 double context_token_s, double energy_per_token_j = 0)
      : fixed_s_(fixed_s),
        prefill_token_s_(prefill_token_s),
        decode_token_s_(decode_token_s),
        context_token_s_(context_token_s),
        energy_per_token_j_(energy_per_token_j) {}
  StepCost cost(const StepShape& shape) override;

 private:
  double fixed_s_, prefill_token_s_, decode_token_s_, context_token_s_, energy_per_token_j_;
};

struct RequestOutcome {
  double first_token_s = -1;  // end of the step that emitted its first token
  double finish_s = -1;       // end of the step that emitted its last token
  int64_t tokens = 0;         // tokens generated
  int64_t preemptions = 0;
};

struct StepRecord {
  double start_s = 0, end_s = 0;
  int64_t prefill_tokens = 0;
  int64_t decode_tokens = 0;
  int64_t running = 0;         // requests running during the step
  int64_t waiting = 0;         // arrived requests waiting when it started
  int64_t kv_blocks_used = 0;  // during the step
  double energy_j = 0;
};

struct ServingResult {
  std::vector<RequestOutcome> requests;  // in trace order
  std::vector<StepRecord> steps;
  int64_t preemptions = 0;
  int64_t peak_kv_blocks = 0;
};

// Replays the trace. A request that could never run (its prompt and output need more KV blocks
// than the cache holds, or more positions than the context) is a user error naming it.
ServingResult simulate_serving(const std::vector<Request>& requests, const ServingConfig& config,
                               StepCostModel& cost_model, const std::string& trace_path = "");

}  // namespace npusim::serving
