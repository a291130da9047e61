// A decoder's real-valued parameters by role, in npusim's layouts (dense weights [in][out]): drawn
// from a seed, or read from a safetensors file with Hugging Face's tensor names for GPT-2
// (`h.{i}.attn.c_attn.weight`, Conv1D [in, out]) and Llama (`model.layers.{i}.self_attn.q_proj
// .weight`, Linear [out, in]). docs/llm.md "Weights" lists the names.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "compiler/frontend/llm/decoder_config.hpp"

namespace npusim {

// Keys: "wte" [vocab][hidden], "wpe" [max_context][hidden] (learned positions), "lm_head"
// [hidden][vocab] (untied only), "lnf.g", "lnf.b", and per layer i "h{i}." + "ln1.g", "ln1.b",
// "q.w" [hidden][heads * head_dim], "q.b", "k.w", "k.b", "v.w", "v.b" ([hidden][kv_heads *
// head_dim]), "o.w" [hidden][hidden], "o.b", "ln2.g", "ln2.b", "up.w" [hidden][ffn], "up.b",
// "gate.w" (SwiGLU), "down.w" [ffn][hidden], "down.b". LayerNorm betas and biases are absent
// for RMSNorm and bias-free models.
struct DecoderWeights {
  std::map<std::string, std::vector<float>> tensors;
  std::string source;  // "seed N" or the file

  const std::vector<float>& at(const std::string& key) const;
  bool has(const std::string& key) const { return tensors.count(key) != 0; }
};

// Pseudo-random parameters from the seed (uniform, scaled by 1 / sqrt(fan in)).
DecoderWeights seeded_decoder_weights(const DecoderConfig& config, uint64_t seed);
// The parameters in a safetensors file (F32, F16 or BF16), checked against the configuration;
// a bad file is a UserError naming the file and the tensor or header place.
DecoderWeights read_decoder_safetensors(const std::string& path, const DecoderConfig& config);

}  // namespace npusim
