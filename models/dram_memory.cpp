#include "models/dram_memory.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <tuple>

#include "models/dram/memory_stats.hpp"
#include "support/error.hpp"

namespace npusim {

DramMemory::DramMemory(sc_core::sc_module_name name, uint64_t bytes, std::string preset,
                       dram::MemoryConfig config, const CoreClock& clock)
    : OffChipMemoryInterface(name, bytes, clock),
      preset_(std::move(preset)),
      memory_(std::move(config)),
      crossing_(clock.period().value() / sc_core::sc_time(1, sc_core::SC_PS).value(),
                static_cast<uint64_t>(std::llround(memory_.config().timing.tck_ns * 1000.0))),
      burst_bytes_(uint64_t(memory_.config().org.access_bytes())) {
  NPUSIM_CHECK(crossing_.memory_period_ps() > 0, "{}: memory tCK rounds to 0 ps", name);
  memory_.set_callback([this](uint64_t id, uint64_t cycle) {
    completed_.push_back({static_cast<uint32_t>(id), cycle});
  });
  SC_HAS_PROCESS(DramMemory);
  // A method, not a thread: one activation per wake-up, without a context switch.
  SC_METHOD(step);
  sensitive << arrival_event_;
  dont_initialize();
  SC_METHOD(clear_commands);  // waveforms only: never triggered without them
  sensitive << clear_event_;
  dont_initialize();
}

void DramMemory::record_to(timeline::Timeline& timeline) {
  timeline_ = &timeline;
  channel_tracks_.clear();
  for (int c = 0; c < memory_.channels(); ++c) {
    channel_tracks_.push_back(
        timeline.add_track(fmt::format("dram ch{}", c), timeline::TrackKind::kMemoryChannel, c));
  }
  std::vector<std::string> names;
  for (int k = 0; k < dram::kCommandKinds; ++k)
    names.push_back(dram::command_name(dram::Command(k)));
  timeline.set_command_names(std::move(names));
  if (timeline_->filter().detail == timeline::Detail::kBursts) {
    record_commands_ = true;
    observe_commands();
  }
}

void DramMemory::trace_waveforms(sc_core::sc_trace_file* file) {
  const std::string prefix = "dram";
  const size_t n = size_t(memory_.channels());
  waves_ = std::make_unique<Waves>();
  waves_->command.assign(n, 0);
  waves_->bank.assign(n, 0);
  waves_->set_at.assign(n, 0);
  for (size_t c = 0; c < n; ++c) {
    sc_core::sc_trace(file, waves_->command[c], fmt::format("{}.ch{}.command", prefix, c), 3);
    sc_core::sc_trace(file, waves_->bank[c], fmt::format("{}.ch{}.bank", prefix, c), 8);
  }
  observe_commands();
}

void DramMemory::observe_commands() {
  for (int c = 0; c < memory_.channels(); ++c) {
    memory_.set_command_observer(
        c, [this, c](dram::Command cmd, uint32_t bank, uint32_t row, uint64_t cycle) {
          on_command(c, cmd, bank, row, cycle);
        });
  }
}

void DramMemory::on_command(int channel, dram::Command cmd, uint32_t bank, uint32_t row,
                            uint64_t cycle) {
  if (record_commands_) commands_.push_back({uint32_t(channel), cmd, bank, row, cycle});
  if (waves_ && sc_core::sc_is_running()) {
    waves_->command[size_t(channel)] = 1u + unsigned(cmd);
    waves_->bank[size_t(channel)] = bank;
    waves_->set_at[size_t(channel)] = clock_.now();
    clear_event_.notify(clock_.period());
  }
}

void DramMemory::clear_commands() {
  const uint64_t now = clock_.now();
  for (size_t c = 0; c < waves_->command.size(); ++c) {
    if (waves_->set_at[c] < now) waves_->command[c] = 0;
  }
}

tlm::tlm_sync_enum DramMemory::nb_transport_fw(int initiator, tlm::tlm_generic_payload& payload,
                                               tlm::tlm_phase& phase, sc_core::sc_time& delay) {
  NPUSIM_CHECK(phase == tlm::BEGIN_REQ, "{}: unexpected phase {} from initiator {}", name(),
               int(phase), initiator);
  const uint64_t addr = payload.get_address();
  const uint64_t len = payload.get_data_length();
  const uint64_t burst = burst_bytes_;
  NPUSIM_CHECK(len > 0 && addr % burst + len <= burst,
               "{}: access [{:#x}, {:#x}) is not inside one {}-byte burst", name(), addr,
               addr + len, burst);
  move_bytes(payload);
  // Inside step() the simulated time is its wake-up's cycle.
  const uint64_t arrival = (in_step_ ? step_now_ : clock_.now()) + clock_.to_cycles(delay);
  arrivals_.push(initiator, arrival, &payload);
  // An earlier pending notification wins; step() re-derives the rest. A request sent from inside
  // step() (from a completion it delivers) needs none: step() looks at the arrivals before it
  // returns.
  if (!in_step_) arrival_event_.notify(delay);
  return tlm::TLM_ACCEPTED;
}

bool DramMemory::deliver(uint64_t c, bool early) {
  sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
  if (early) delay = clock_.cycles(c - step_now_);
  // Nothing completes meanwhile (only advance_to() adds completions), and nothing is admitted: the
  // in-flight entries stay put.
  while (delivered_ < completed_.size()) {
    const Completion done = completed_[delivered_];
    NPUSIM_CHECK(crossing_.seen_core_cycle(done.memory_cycle) == c,
                 "{}: completion at memory cycle {} delivered at core cycle {}", name(),
                 done.memory_cycle, c);
    const InFlight& f = in_flight_[done.slot];
    if (early) {
      const auto* ext = f.payload->get_extension<EarlyResponseExtension>();
      if (ext == nullptr || !ext->initiator->response_is_quiet(*f.payload)) return false;
    }
    ++delivered_;
    free_slots_.push_back(done.slot);
    if (timeline_) {
      const uint64_t addr = f.payload->get_address();
      timeline_->memory_bytes(channel_tracks_[size_t(memory_.mapper().map(addr).channel)], c,
                              f.payload->get_data_length());
    }
    tlm::tlm_phase phase = tlm::BEGIN_RESP;
    sc_core::sc_time t = delay;
    f.payload->set_response_status(tlm::TLM_OK_RESPONSE);
    // The initiator may send new requests from inside this call; they arrive at cycle >= c.
    const tlm::tlm_sync_enum r = socket[f.initiator]->nb_transport_bw(*f.payload, phase, t);
    NPUSIM_CHECK(r == tlm::TLM_COMPLETED, "{}: initiator {} did not complete its response", name(),
                 f.initiator);
  }
  completed_.clear();
  delivered_ = 0;
  return true;
}

bool DramMemory::advance(uint64_t c, bool early) {
  const uint64_t target = crossing_.entry_memory_cycle(c);
  if (target > memory_.now()) {
    NPUSIM_CHECK(completed_.empty(), "{}: {} completions left undelivered before core cycle {}",
                 name(), completed_.size() - delivered_, c);
    const bool in_flight = in_flight_.size() > free_slots_.size();
    memory_.advance_to(target);
    order_completions(memory_.waiting_ended_at());
    record_commands(in_flight, memory_.waiting_ended_at());
  }
  return deliver(c, early);
}

void DramMemory::record_commands(bool in_flight, uint64_t waiting_ended_at) {
  if (commands_.empty()) return;
  // The order of the rule for completions, per core cycle the commands are seen at while bursts
  // are in flight (the process then wakes at each), else over the whole stretch.
  auto key = [&](const CommandRecord& x) {
    const uint64_t group = in_flight ? crossing_.seen_core_cycle(x.cycle) : 0;
    return x.cycle < waiting_ended_at ? std::tuple(group, 0, x.cycle, uint64_t(x.channel))
                                      : std::tuple(group, 1, uint64_t(x.channel), x.cycle);
  };
  std::stable_sort(commands_.begin(), commands_.end(),
                   [&](const CommandRecord& x, const CommandRecord& y) { return key(x) < key(y); });
  for (const CommandRecord& x : commands_) {
    const uint64_t core = crossing_.core_cycle_of(x.cycle);
    if (timeline_->commands_wanted(core)) {
      timeline_->command({channel_tracks_[x.channel], core, uint8_t(x.cmd), x.bank, x.row});
    }
  }
  commands_.clear();
}

void DramMemory::order_completions(uint64_t waiting_ended_at) {
  // The memory reports completions channel by channel. Completions of one core cycle reach the
  // initiators in the order of the rule: while requests wait for queue slots (memory cycles before
  // `waiting_ended_at`) by memory cycle, then channel; after that by channel, then memory cycle.
  if (waiting_ended_at == 0 || completed_.size() < 2) return;
  auto key = [&](const Completion& x) {
    const uint64_t ch = in_flight_[x.slot].address.channel;
    return x.memory_cycle < waiting_ended_at ? std::tuple(0, x.memory_cycle, ch)
                                             : std::tuple(1, ch, x.memory_cycle);
  };
  // Insertion sort: stable, no allocation, linear on the (few, nearly ordered) completions.
  for (size_t i = 1; i < completed_.size(); ++i) {
    const Completion x = completed_[i];
    const auto k = key(x);
    size_t j = i;
    for (; j > 0 && k < key(completed_[j - 1]); --j) completed_[j] = completed_[j - 1];
    completed_[j] = x;
  }
}

void DramMemory::admit_arrivals(uint64_t c) {
  arrivals_.take(c, [this, c](int initiator, const ArrivalQueues::Arrival& a) {
    NPUSIM_CHECK(a.cycle == c, "{}: request arriving at core cycle {} seen at {}", name(), a.cycle,
                 c);
    uint32_t slot;
    if (!free_slots_.empty()) {
      slot = free_slots_.back();
      free_slots_.pop_back();
    } else {
      slot = static_cast<uint32_t>(in_flight_.size());
      in_flight_.emplace_back();
    }
    InFlight& f = in_flight_[slot];
    f.payload = a.payload;
    f.initiator = initiator;
    f.address = memory_.mapper().map(a.payload->get_address());
    f.is_write = a.payload->is_write();
    memory_.add_or_wait(f.address, f.is_write, slot);
  });
}

void DramMemory::step() {
  ++wake_ups_;
  const uint64_t now = clock_.now();
  step_now_ = now;
  // Early responses need every completion delivered with the same effects as at its own cycle.
  const bool early_responses = !waves_ && timeline_ == nullptr;
  // A pending arrival notification would only bound the look-ahead: `next` covers the arrivals.
  if (early_responses) arrival_event_.cancel();
  in_step_ = true;
  uint64_t c = now, next = dram::kNever;
  uint64_t horizon = 0;  // the first core cycle another process has activity at, once known
  bool horizon_known = false;
  while (true) {
    if (!advance(c, c > now)) {  // a response that is not quiet: deliver it at its cycle
      next = c;
      break;
    }
    NPUSIM_CHECK(arrivals_.empty() || arrivals_.earliest() >= c,
                 "{}: request arriving at core cycle {} missed (now {})", name(),
                 arrivals_.earliest(), c);
    if (!arrivals_.empty() && arrivals_.earliest() == c) {
      // Requests of cycle c may still come from processes that run later in this cycle (a queue
      // starting an instruction); admitting them all at once, by initiator, keeps the order of
      // simultaneous requests independent of the kernel's process order. (Ahead of the simulated
      // time no other process runs.)
      if (c == now && sc_core::sc_pending_activity_at_current_time()) {
        in_step_ = false;
        next_trigger(sc_core::SC_ZERO_TIME);
        return;
      }
      admit_arrivals(c);
    }
    next = dram::kNever;
    if (!arrivals_.empty()) next = arrivals_.earliest();
    // Requests in the controllers or waiting for them: every slot not free (advance() delivered
    // every completion seen by now), without asking each channel for its queues. Only completions
    // need the process awake (advance() issues the commands before them when it next runs), unless
    // waveforms show every command at its own cycle.
    if (in_flight_.size() > free_slots_.size()) {
      const uint64_t e = waves_ ? memory_.next_event_cycle() : memory_.next_completion_bound();
      if (e != dram::kNever) next = std::min(next, std::max(c + 1, crossing_.seen_core_cycle(e)));
    }
    if (next == dram::kNever || !early_responses) break;
    if (!horizon_known) {
      const sc_core::sc_time t = sc_core::sc_time_to_pending_activity();
      horizon = now + clock_.to_cycles(t);  // floor: a cycle no later than that activity
      horizon_known = true;
    }
    if (next >= horizon) break;
    c = next;
  }
  in_step_ = false;
  if (next == dram::kNever) {
    next_trigger(arrival_event_);
  } else {
    next_trigger(clock_.cycles(next - now), arrival_event_);
  }
}

dram::MemoryStats DramMemory::finish(uint64_t end_cycle) {
  NPUSIM_CHECK(arrivals_.empty() && memory_.outstanding() == 0,
               "{}: {} requests still in flight at the end", name(),
               arrivals_.size() + memory_.outstanding());
  const uint64_t target = crossing_.entry_memory_cycle(end_cycle);
  if (target > memory_.now()) {
    memory_.advance_to(target);
    record_commands(false, 0);
  }
  return memory_.stats();
}

void DramMemory::register_stats(stats::Registry& reg, const std::string& prefix,
                                uint64_t end_cycle) {
  stats::Registry figures;  // captured by value: include() copies them
  dram::register_memory_stats(figures, preset_, memory_.config(), finish(end_cycle),
                              dram::channel_bursts(memory_));
  reg.include(prefix, figures);
}

std::optional<OffChipMemoryInterface::Energy> DramMemory::energy() const {
  const auto s = memory_.stats();
  return Energy{s.act_energy_pj + s.read_energy_pj + s.write_energy_pj,
                s.background_energy_pj + s.refresh_energy_pj};
}

}  // namespace npusim
