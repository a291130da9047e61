#include "serving/scheduler.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <numeric>

#include "support/error.hpp"

namespace npusim::serving {

int64_t StepShape::prefill_tokens() const {
  int64_t n = 0;
  for (const auto& c : prefill) n += c.tokens;
  return n;
}

StepCost AffineStepCost::cost(const StepShape& shape) {
  const int64_t prefill = shape.prefill_tokens();
  const auto decode = static_cast<int64_t>(shape.decode_contexts.size());
  const int64_t context =
      std::accumulate(shape.decode_contexts.begin(), shape.decode_contexts.end(), int64_t(0));
  StepCost c;
  c.seconds = fixed_s_ + prefill_token_s_ * double(prefill) + decode_token_s_ * double(decode) +
              context_token_s_ * double(context);
  c.energy_j = energy_per_token_j_ * double(prefill + decode);
  return c;
}

namespace {

enum class Phase { kNotArrived, kWaiting, kPrefill, kDecode, kFinished };

struct Live {
  Phase phase = Phase::kNotArrived;
  int64_t target = 0;     // positions the current prefill computes (prompt + tokens so far)
  int64_t computed = 0;   // positions of the current prefill computed so far
  int64_t kv_tokens = 0;  // positions whose KV is in the cache
  int64_t blocks = 0;     // blocks held
  int64_t admitted = 0;   // admission sequence number (later admitted: preempted first)
};

int64_t blocks_for(int64_t tokens, int64_t block_tokens) {
  return (tokens + block_tokens - 1) / block_tokens;
}

std::string where(const Request& r, const std::string& path) {
  if (path.empty() || r.line == 0) return fmt::format("request '{}'", r.id);
  return fmt::format("{}:{}: request '{}'", path, r.line, r.id);
}

void check_config(const ServingConfig& c) {
  std::vector<std::string> errors;
  if (c.max_batch < 1) errors.push_back(fmt::format("max batch {}: expected >= 1", c.max_batch));
  if (c.kv_block_tokens < 1) {
    errors.push_back(fmt::format("KV block {} tokens: expected >= 1", c.kv_block_tokens));
  }
  if (c.kv_capacity_blocks < 1) {
    errors.push_back(
        fmt::format("KV cache of {} blocks: expected >= 1 block", c.kv_capacity_blocks));
  }
  if (c.max_step_tokens < c.max_batch) {
    errors.push_back(
        fmt::format("{} tokens per step: expected at least the max batch {} (one "
                    "decode token per running request)",
                    c.max_step_tokens, c.max_batch));
  }
  if (!errors.empty()) throw UserErrors(errors);
}

}  // namespace

ServingResult simulate_serving(const std::vector<Request>& requests, const ServingConfig& config,
                               StepCostModel& cost_model, const std::string& trace_path) {
  check_config(config);
  const int64_t bt = config.kv_block_tokens;
  std::vector<std::string> errors;
  for (const auto& r : requests) {
    // The most KV a request ever holds: its prompt and every generated token but the last.
    const int64_t most = r.prompt_tokens + r.output_tokens - 1;
    if (blocks_for(most, bt) > config.kv_capacity_blocks) {
      errors.push_back(fmt::format(
          "{}: needs {} KV blocks of {} tokens for {} prompt and {} output tokens; the cache "
          "holds {} blocks",
          where(r, trace_path), blocks_for(most, bt), bt, r.prompt_tokens, r.output_tokens,
          config.kv_capacity_blocks));
    }
    if (config.max_context > 0 && r.prompt_tokens + r.output_tokens > config.max_context) {
      errors.push_back(
          fmt::format("{}: {} prompt and {} output tokens exceed the model's context "
                      "of {} positions",
                      where(r, trace_path), r.prompt_tokens, r.output_tokens, config.max_context));
    }
  }
  if (!errors.empty()) throw UserErrors(errors);

  const size_t n = requests.size();
  std::vector<size_t> by_arrival(n);
  std::iota(by_arrival.begin(), by_arrival.end(), size_t(0));
  std::stable_sort(by_arrival.begin(), by_arrival.end(), [&](size_t a, size_t b) {
    return requests[a].arrival_s < requests[b].arrival_s;
  });

  ServingResult result;
  result.requests.resize(n);
  std::vector<Live> live(n);
  std::deque<size_t> waiting;
  std::vector<size_t> running;  // admission order
  int64_t free_blocks = config.kv_capacity_blocks;
  int64_t admissions = 0;
  size_t next_arrival = 0, finished = 0;
  double now = 0;

  auto release = [&](size_t i) {
    free_blocks += live[i].blocks;
    live[i].blocks = 0;
    live[i].kv_tokens = 0;
    live[i].computed = 0;
  };
  auto preempt_latest = [&]() {
    NPUSIM_CHECK(!running.empty(), "serving: preemption with nothing running");
    const size_t victim = running.back();
    running.pop_back();
    release(victim);
    live[victim].phase = Phase::kWaiting;
    waiting.push_front(victim);
    ++result.requests[victim].preemptions;
    ++result.preemptions;
    return victim;
  };

  while (finished < n) {
    while (next_arrival < n && requests[by_arrival[next_arrival]].arrival_s <= now) {
      const size_t i = by_arrival[next_arrival++];
      live[i].phase = Phase::kWaiting;
      waiting.push_back(i);
    }
    StepRecord rec;
    rec.start_s = now;
    rec.waiting = static_cast<int64_t>(waiting.size());

    // 2. Decode slots: each decoding request's next position needs room in its blocks.
    std::vector<size_t> decoders;
    for (size_t k = 0; k < running.size(); ++k) {
      const size_t i = running[k];
      if (live[i].phase != Phase::kDecode) continue;
      const int64_t need = blocks_for(live[i].kv_tokens + 1, bt) - live[i].blocks;
      bool self_preempted = false;
      while (need > free_blocks) {
        if (preempt_latest() == i) {
          self_preempted = true;
          break;
        }
      }
      if (self_preempted) break;  // it was the last admitted: nothing after it runs
      free_blocks -= need;
      live[i].blocks += need;
      decoders.push_back(i);
    }
    // A preemption may have removed a request already in `decoders`.
    std::erase_if(decoders, [&](size_t i) { return live[i].phase != Phase::kDecode; });

    // 3. Prefill chunks within the step's token budget.
    StepShape shape;
    for (size_t i : decoders) shape.decode_contexts.push_back(live[i].kv_tokens + 1);
    int64_t budget = config.max_step_tokens - static_cast<int64_t>(decoders.size());
    std::vector<std::pair<size_t, int64_t>> chunks;
    auto take_chunk = [&](size_t i) {
      const int64_t take = std::min(budget, live[i].target - live[i].computed);
      if (take <= 0) return;
      chunks.emplace_back(i, take);
      shape.prefill.push_back({take, live[i].computed});
      budget -= take;
    };
    for (size_t i : running) {
      if (live[i].phase == Phase::kPrefill) take_chunk(i);
    }
    while (budget > 0 && !waiting.empty() &&
           static_cast<int64_t>(running.size()) < config.max_batch) {
      const size_t i = waiting.front();
      const auto& r = requests[i];
      const int64_t target = r.prompt_tokens + result.requests[i].tokens;
      const int64_t need = blocks_for(target, bt);
      if (need > free_blocks) break;
      waiting.pop_front();
      free_blocks -= need;
      live[i] = Live{Phase::kPrefill, target, 0, 0, need, admissions++};
      running.push_back(i);
      take_chunk(i);
    }

    if (decoders.empty() && chunks.empty()) {
      // Nothing can run: every arrived request is waiting for room that only a finishing request
      // frees, which cannot happen with nothing running; so nothing has arrived yet.
      NPUSIM_CHECK(running.empty() && waiting.empty() && next_arrival < n,
                   "serving: no step can run at {} s with {} running and {} waiting", now,
                   running.size(), waiting.size());
      now = requests[by_arrival[next_arrival]].arrival_s;
      continue;
    }

    // 4. The step.
    const StepCost cost = cost_model.cost(shape);
    NPUSIM_CHECK(cost.seconds > 0, "serving: a step of {} prefill and {} decode tokens costs {} s",
                 shape.prefill_tokens(), shape.decode_contexts.size(), cost.seconds);
    const double end = now + cost.seconds;
    rec.end_s = end;
    rec.prefill_tokens = shape.prefill_tokens();
    rec.decode_tokens = static_cast<int64_t>(decoders.size());
    rec.running = static_cast<int64_t>(running.size());
    rec.kv_blocks_used = config.kv_capacity_blocks - free_blocks;
    rec.energy_j = cost.energy_j;
    result.peak_kv_blocks = std::max(result.peak_kv_blocks, rec.kv_blocks_used);
    result.steps.push_back(rec);

    auto emit = [&](size_t i) {
      auto& out = result.requests[i];
      ++out.tokens;
      if (out.first_token_s < 0) out.first_token_s = end;
      if (out.tokens == requests[i].output_tokens) {
        out.finish_s = end;
        live[i].phase = Phase::kFinished;
        release(i);
        ++finished;
      }
    };
    for (size_t i : decoders) {
      ++live[i].kv_tokens;
      emit(i);
    }
    for (auto [i, take] : chunks) {
      live[i].computed += take;
      live[i].kv_tokens = live[i].computed;
      if (live[i].computed == live[i].target) {
        live[i].phase = Phase::kDecode;
        emit(i);
      }
    }
    std::erase_if(running, [&](size_t i) { return live[i].phase == Phase::kFinished; });
    int64_t held = 0;
    for (size_t i : running) held += live[i].blocks;
    NPUSIM_CHECK(held + free_blocks == config.kv_capacity_blocks && free_blocks >= 0,
                 "serving: {} blocks held and {} free of {}", held, free_blocks,
                 config.kv_capacity_blocks);
    now = end;
  }
  return result;
}

}  // namespace npusim::serving
