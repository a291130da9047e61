// Early responses: a memory may deliver a burst's response (nb_transport_bw, BEGIN_RESP) while the
// simulated time is still before the core cycle the burst completes at, with the delay up to that
// cycle annotated, when nothing else in the simulation can run in between. It saves the memory's
// process a wake-up per completion cycle while a DMA queue streams bursts through its window.
//
// Contract: an initiator that can take such responses attaches an EarlyResponseExtension to its
// payloads. Before delivering a response early the memory asks response_is_quiet(payload): true
// promises that handling it now, at the annotated cycle, only changes the initiator's own state and
// sends new requests (with delays from the current simulated time), and notifies no event and
// reports nothing to the rest of the simulation; so it is handled exactly as it would be at that
// cycle. A payload without the extension, or a response that is not quiet, is delivered at its
// cycle. The memory only delivers early when no other process has activity pending before or at the
// completion cycle (sc_time_to_pending_activity), so everything the response reads is what it would
// read then.
#pragma once

#include <tlm>

namespace npusim {

class EarlyResponses {
 public:
  virtual bool response_is_quiet(const tlm::tlm_generic_payload& payload) const = 0;

 protected:
  ~EarlyResponses() = default;
};

struct EarlyResponseExtension : tlm::tlm_extension<EarlyResponseExtension> {
  explicit EarlyResponseExtension(const EarlyResponses* owner) : initiator(owner) {}
  tlm::tlm_extension_base* clone() const override { return new EarlyResponseExtension(initiator); }
  void copy_from(const tlm::tlm_extension_base& other) override {
    initiator = static_cast<const EarlyResponseExtension&>(other).initiator;
  }
  const EarlyResponses* initiator;
};

}  // namespace npusim
