#include "compiler/frontend/llm/decoder_config.hpp"

#include <fmt/format.h>

#include <filesystem>

#include "support/embedded_files.hpp"
#include "support/error.hpp"
#include "support/json_reader.hpp"

namespace npusim {

namespace {
constexpr int kDecoderSchemaVersion = 1;
}  // namespace

uint64_t DecoderConfig::parameters() const {
  const uint64_t h = uint64_t(hidden), d = uint64_t(head_dim()), kv = uint64_t(kv_heads) * d;
  uint64_t layer = h * h + 2 * h * kv + h * h;  // q, k, v, o
  layer += (swiglu ? 3 : 2) * h * uint64_t(ffn);
  if (bias) layer += h + 2 * kv + h + uint64_t(ffn) * (swiglu ? 2 : 1) + h;
  layer += (rms_norm ? 1 : 2) * 2 * h;  // two norms
  uint64_t total = uint64_t(layers) * layer + uint64_t(vocab) * h + (rms_norm ? 1 : 2) * h;
  if (!rotary) total += uint64_t(max_context) * h;
  if (!tied_embeddings) total += uint64_t(vocab) * h;
  return total;
}

DecoderConfig parse_decoder_config(const nlohmann::json& root, const std::string& origin) {
  JsonDiagnostics diag(origin);
  ObjectReader top(diag, &root, "", true);
  DecoderConfig c;
  if (auto v = top.integer_required("schema_version", 1, 1000); v && *v != kDecoderSchemaVersion) {
    diag.error("/schema_version", fmt::format("expected {} (the version this npusim reads), got {}",
                                              kDecoderSchemaVersion, *v));
  }
  top.choice_required("kind", {"decoder"});
  c.name = top.string("name", "decoder");
  c.description = top.string("description", "");
  c.layers = int(top.integer_required("layers", 1, 1024).value_or(0));
  c.hidden = int(top.integer_required("hidden", 1, 1 << 16).value_or(0));
  c.heads = int(top.integer_required("heads", 1, 1024).value_or(0));
  c.kv_heads = int(top.integer("kv_heads", c.heads > 0 ? c.heads : 1, 1, 1024));
  c.ffn = int(top.integer_required("ffn", 1, 1 << 18).value_or(0));
  c.vocab = int(top.integer_required("vocab", 2, 1 << 22).value_or(0));
  c.max_context = int(top.integer_required("max_context", 1, 1 << 20).value_or(0));
  c.rms_norm = top.choice("norm", "layer", {"layer", "rms"}) == "rms";
  const std::string activation = top.choice("activation", "gelu", {"gelu", "gelu_tanh", "swiglu"});
  c.swiglu = activation == "swiglu";
  c.gelu_tanh = activation == "gelu_tanh";
  c.rotary = top.choice("positions", "learned", {"learned", "rotary"}) == "rotary";
  c.bias = top.boolean("bias", !c.rms_norm);
  c.tied_embeddings = top.boolean("tied_embeddings", true);
  c.norm_epsilon = float(top.number("norm_epsilon", 1e-5, 0.0, 1.0));
  c.rope_theta = float(top.number("rope_theta", 10000.0, 1.0, 1e9));
  top.finish();
  if (c.heads > 0 && c.hidden > 0 && c.hidden % c.heads != 0) {
    diag.error("/heads", fmt::format("hidden {} is not a multiple of heads {}", c.hidden, c.heads));
  }
  if (c.heads > 0 && c.kv_heads > 0 && c.heads % c.kv_heads != 0) {
    diag.error("/kv_heads",
               fmt::format("heads {} is not a multiple of kv_heads {}", c.heads, c.kv_heads));
  }
  if (c.rotary && c.heads > 0 && c.hidden % c.heads == 0 && c.head_dim() % 2 != 0) {
    diag.error("/positions",
               fmt::format("rotary positions need an even head size, got {}", c.head_dim()));
  }
  diag.throw_if_errors();
  return c;
}

bool is_decoder_spec(const std::string& spec) {
  if (find_embedded_file("llm", spec)) return true;
  std::error_code ec;
  if (spec.size() < 5 || spec.compare(spec.size() - 5, 5, ".json") != 0 ||
      !std::filesystem::is_regular_file(spec, ec)) {
    return false;
  }
  try {
    const nlohmann::json j = parse_json_file(spec);
    return j.is_object() && j.value("kind", "") == "decoder";
  } catch (const UserError&) {
    return false;
  }
}

DecoderConfig load_decoder_config(const std::string& spec) {
  if (const EmbeddedFile* f = find_embedded_file("llm", spec)) {
    const std::string origin = fmt::format("workloads/llm/{}.json", spec);
    return parse_decoder_config(parse_json_text(f->text, origin), origin);
  }
  std::error_code ec;
  if (!std::filesystem::is_regular_file(spec, ec)) {
    throw UserError(
        fmt::format("--workload '{}': no such file and no such decoder (built-in decoders: {})",
                    spec, embedded_file_names_joined("llm")));
  }
  return parse_decoder_config(parse_json_file(spec), spec);
}

std::vector<std::string> decoder_names() { return embedded_file_names("llm"); }

}  // namespace npusim
