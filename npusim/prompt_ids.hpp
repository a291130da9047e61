// Prompt ids drawn from a seed, uniform over a vocabulary (SplitMix64): what npusim generate
// prompts a decoder with when no --input is given, and what npusim serve prices prefill programs
// with (an embedding lookup's addresses, and so its DRAM timing, depend on the ids).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace npusim {

std::vector<int32_t> seeded_prompt_ids(uint64_t seed, size_t count, int vocab);

}  // namespace npusim
