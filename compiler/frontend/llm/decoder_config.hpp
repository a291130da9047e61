// A decoder-only transformer (GPT-2, Llama and their relatives) described by a small JSON file
// (docs/llm.md "The model family"): its dimensions and its flavour (norm, activation, positions).
// The built-in ones live in workloads/llm/ (npusim generate --workload gpt2-small).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace npusim {

struct DecoderConfig {
  std::string name, description;
  int layers = 0, hidden = 0, heads = 0, kv_heads = 0, ffn = 0, vocab = 0, max_context = 0;
  bool rms_norm = false;        // RMSNorm (Llama) or LayerNorm (GPT-2)
  bool swiglu = false;          // SwiGLU FFN (Llama) or GELU FFN (GPT-2)
  bool gelu_tanh = false;       // the GELU FFN's GELU in its tanh approximation (GPT-2's)
  bool rotary = false;          // rotary positions (Llama) or a learned position table (GPT-2)
  bool bias = true;             // projections with biases (GPT-2) or without (Llama)
  bool tied_embeddings = true;  // the output projection is the token embedding transposed
  float norm_epsilon = 1e-5f;
  float rope_theta = 10000.0f;

  int head_dim() const { return hidden / heads; }
  int group() const { return heads / kv_heads; }  // query heads per KV head
  uint64_t parameters() const;                    // weights and biases, tied ones once
};

// Parses and checks a decoder description (every problem at once, "file: /pointer: ...").
DecoderConfig parse_decoder_config(const nlohmann::json& root, const std::string& origin);
// A built-in decoder (workloads/llm/NAME.json) or a JSON file; nullopt-like: throws UserError
// naming the spec and the built-in names when it is neither.
DecoderConfig load_decoder_config(const std::string& spec);
// Whether `spec` names a built-in decoder or a JSON file that describes one ("kind": "decoder").
bool is_decoder_spec(const std::string& spec);
// The built-in decoders' names.
std::vector<std::string> decoder_names();

}  // namespace npusim
