#include "compiler/frontend/llm/decoder_weights.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "arch/activation.hpp"
#include "support/error.hpp"

namespace npusim {

namespace {

// SplitMix64 (Steele, Lea, Flood 2014): a small, well-mixed generator.
struct Draws {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  float uniform(float lo, float hi) {
    return lo + (hi - lo) * static_cast<float>((next() >> 40) * (1.0 / (1ull << 24)));
  }
};

uint64_t name_hash(const std::string& s) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

struct Role {
  std::string key;
  std::vector<int64_t> shape;  // npusim layout
  float lo, hi;
};

// Every parameter the configuration has, with its shape and its seeded range.
std::vector<Role> roles(const DecoderConfig& c) {
  const int64_t h = c.hidden, q = int64_t(c.heads) * c.head_dim(),
                kv = int64_t(c.kv_heads) * c.head_dim(), f = c.ffn;
  const float bh = 1.0f / std::sqrt(float(h)), bf = 1.0f / std::sqrt(float(f));
  std::vector<Role> r;
  r.push_back({"wte", {c.vocab, h}, -1.0f, 1.0f});
  if (!c.rotary) r.push_back({"wpe", {c.max_context, h}, -0.5f, 0.5f});
  if (!c.tied_embeddings) r.push_back({"lm_head", {h, c.vocab}, -bh, bh});
  auto norm = [&](const std::string& p) {
    r.push_back({p + ".g", {h}, 0.8f, 1.2f});
    if (!c.rms_norm) r.push_back({p + ".b", {h}, -0.1f, 0.1f});
  };
  auto dense = [&](const std::string& p, int64_t in, int64_t out, float bound) {
    r.push_back({p + ".w", {in, out}, -bound, bound});
    if (c.bias) r.push_back({p + ".b", {out}, -0.05f, 0.05f});
  };
  for (int i = 0; i < c.layers; ++i) {
    const std::string p = fmt::format("h{}.", i);
    norm(p + "ln1");
    dense(p + "q", h, q, bh);
    dense(p + "k", h, kv, bh);
    dense(p + "v", h, kv, bh);
    dense(p + "o", q, h, bh);
    norm(p + "ln2");
    if (c.swiglu) dense(p + "gate", h, f, bh);
    dense(p + "up", h, f, bh);
    dense(p + "down", f, h, bf);
  }
  norm("lnf");
  return r;
}

float half_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000) << 16;
  const int exp = (h >> 10) & 0x1f;
  const uint32_t mant = h & 0x3ff;
  float v;
  if (exp == 0) {
    v = std::ldexp(float(mant), -24);
  } else if (exp == 31) {
    v = mant ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
  } else {
    v = std::ldexp(float(mant | 0x400), exp - 25);
  }
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  bits |= sign;
  std::memcpy(&v, &bits, 4);
  return v;
}

// Where a Hugging Face tensor goes: our key, and whether it is stored [out, in] (Linear).
struct HfName {
  std::string hf, key;
  bool transposed = false;
};

std::vector<HfName> hf_names(const DecoderConfig& c) {
  std::vector<HfName> n;
  if (!c.rms_norm) {  // GPT-2: Conv1D weights are [in, out] already; c_attn is split below
    n.push_back({"wte.weight", "wte"});
    n.push_back({"wpe.weight", "wpe"});
    n.push_back({"ln_f.weight", "lnf.g"});
    n.push_back({"ln_f.bias", "lnf.b"});
    if (!c.tied_embeddings) n.push_back({"lm_head.weight", "lm_head", true});
    for (int i = 0; i < c.layers; ++i) {
      const std::string h = fmt::format("h.{}.", i), p = fmt::format("h{}.", i);
      auto add = [&](const std::string& module, const std::string& key) {
        n.push_back({h + module + ".weight", p + key + ".w"});
        if (c.bias) n.push_back({h + module + ".bias", p + key + ".b"});
      };
      n.push_back({h + "ln_1.weight", p + "ln1.g"});
      n.push_back({h + "ln_1.bias", p + "ln1.b"});
      add("attn.c_attn", "qkv");
      add("attn.c_proj", "o");
      n.push_back({h + "ln_2.weight", p + "ln2.g"});
      n.push_back({h + "ln_2.bias", p + "ln2.b"});
      add("mlp.c_fc", "up");
      add("mlp.c_proj", "down");
    }
    return n;
  }
  n.push_back({"model.embed_tokens.weight", "wte"});
  n.push_back({"model.norm.weight", "lnf.g"});
  if (!c.tied_embeddings) n.push_back({"lm_head.weight", "lm_head", true});
  for (int i = 0; i < c.layers; ++i) {
    const std::string h = fmt::format("model.layers.{}.", i), p = fmt::format("h{}.", i);
    n.push_back({h + "input_layernorm.weight", p + "ln1.g"});
    n.push_back({h + "post_attention_layernorm.weight", p + "ln2.g"});
    for (const char* x : {"q", "k", "v", "o"}) {
      n.push_back({h + "self_attn." + x + "_proj.weight", p + x + ".w", true});
      if (c.bias) n.push_back({h + "self_attn." + x + "_proj.bias", p + x + ".b"});
    }
    for (const char* x : {"gate", "up", "down"}) {
      n.push_back({h + "mlp." + x + "_proj.weight", p + x + ".w", true});
      if (c.bias) n.push_back({h + "mlp." + x + "_proj.bias", p + x + ".b"});
    }
  }
  return n;
}

}  // namespace

const std::vector<float>& DecoderWeights::at(const std::string& key) const {
  auto it = tensors.find(key);
  NPUSIM_CHECK(it != tensors.end(), "decoder weights ({}): no tensor '{}'", source, key);
  return it->second;
}

DecoderWeights seeded_decoder_weights(const DecoderConfig& c, uint64_t seed) {
  DecoderWeights w;
  w.source = fmt::format("seed {}", seed);
  for (const Role& r : roles(c)) {
    Draws d{seed ^ name_hash("decoder:" + r.key)};
    uint64_t n = 1;
    for (int64_t s : r.shape) n *= uint64_t(s);
    std::vector<float>& t = w.tensors[r.key];
    t.resize(n);
    for (float& x : t) x = d.uniform(r.lo, r.hi);
  }
  return w;
}

DecoderWeights read_decoder_safetensors(const std::string& path, const DecoderConfig& c) {
  const std::string where = fmt::format("--weights {}", path);
  std::ifstream f(path, std::ios::binary);
  if (!f) throw UserError(fmt::format("{}: cannot open the file", where));
  f.seekg(0, std::ios::end);
  const uint64_t size = uint64_t(f.tellg());
  f.seekg(0);
  uint8_t len_bytes[8];
  if (size < 8 || !f.read(reinterpret_cast<char*>(len_bytes), 8)) {
    throw UserError(fmt::format("{}: shorter than the 8-byte header length", where));
  }
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | len_bytes[i];
  if (header_len == 0 || header_len > size - 8 || header_len > (100ull << 20)) {
    throw UserError(fmt::format("{}: header length {} does not fit the file's {} bytes", where,
                                header_len, size));
  }
  std::string text(header_len, '\0');
  f.read(text.data(), std::streamsize(header_len));
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw UserError(
        fmt::format("{}: header (bytes 8 to {}): not JSON: {}", where, 8 + header_len, e.what()));
  }
  if (!header.is_object())
    throw UserError(fmt::format("{}: header: expected a JSON object", where));
  const uint64_t data_start = 8 + header_len, data_size = size - data_start;
  // GPT2LMHeadModel's state dict prefixes the body with "transformer."
  auto entry_of = [&](const std::string& name) -> const nlohmann::json* {
    for (const std::string& n : {name, "transformer." + name}) {
      if (header.contains(n)) return &header[n];
    }
    return nullptr;
  };
  std::map<std::string, std::vector<int64_t>> expected;
  for (const Role& r : roles(c)) expected[r.key] = r.shape;
  const int64_t h = c.hidden, q = int64_t(c.heads) * c.head_dim(),
                kv = int64_t(c.kv_heads) * c.head_dim();
  if (!c.rms_norm) {
    for (int i = 0; i < c.layers; ++i) {
      expected[fmt::format("h{}.qkv.w", i)] = {h, q + 2 * kv};
      if (c.bias) expected[fmt::format("h{}.qkv.b", i)] = {q + 2 * kv};
    }
  }
  DecoderWeights w;
  w.source = path;
  std::vector<std::string> missing;
  for (const HfName& n : hf_names(c)) {
    const nlohmann::json* e = entry_of(n.hf);
    if (!e) {
      missing.push_back(n.hf);
      continue;
    }
    const std::string at = fmt::format("{}: tensor '{}'", where, n.hf);
    if (!e->is_object() || !e->contains("dtype") || !e->contains("shape") ||
        !e->contains("data_offsets") || !(*e)["dtype"].is_string() || !(*e)["shape"].is_array() ||
        !(*e)["data_offsets"].is_array() || (*e)["data_offsets"].size() != 2) {
      throw UserError(fmt::format("{}: expected an object with dtype, shape and data_offsets", at));
    }
    const std::string dtype = (*e)["dtype"];
    int bytes = 0;
    if (dtype == "F32") bytes = 4;
    if (dtype == "F16" || dtype == "BF16") bytes = 2;
    if (bytes == 0) {
      throw UserError(fmt::format("{}: dtype {}: npusim reads F32, F16 and BF16", at, dtype));
    }
    std::vector<int64_t> shape;
    for (const auto& d : (*e)["shape"]) {
      if (!d.is_number_integer() || d.get<int64_t>() < 0)
        throw UserError(fmt::format("{}: shape: expected non-negative integers", at));
      shape.push_back(d.get<int64_t>());
    }
    std::vector<int64_t> want = expected.at(n.key);
    if (n.transposed && want.size() == 2) std::swap(want[0], want[1]);
    if (n.key == "wpe" && shape.size() == 2 && shape[1] == want[1] && shape[0] >= want[0]) {
      want[0] = shape[0];  // a longer position table than max_context is fine
    }
    if (shape != want) {
      throw UserError(fmt::format("{}: shape [{}], expected [{}] for {}", at,
                                  fmt::join(shape, ", "), fmt::join(want, ", "), c.name));
    }
    const auto& off = (*e)["data_offsets"];
    if (!off[0].is_number_unsigned() || !off[1].is_number_unsigned()) {
      throw UserError(fmt::format("{}: data_offsets: expected two non-negative integers", at));
    }
    const uint64_t begin = off[0], end = off[1];
    uint64_t elements = 1;
    for (int64_t d : shape) elements *= uint64_t(d);
    if (begin > end || end > data_size || end - begin != elements * uint64_t(bytes)) {
      throw UserError(fmt::format(
          "{}: data_offsets [{}, {}] do not hold {} {} values inside the data's {} bytes", at,
          begin, end, elements, dtype, data_size));
    }
    std::vector<uint8_t> raw(end - begin);
    f.seekg(std::streamoff(data_start + begin));
    if (!f.read(reinterpret_cast<char*>(raw.data()), std::streamsize(raw.size()))) {
      throw UserError(fmt::format("{}: cannot read its bytes", at));
    }
    std::vector<float> v(elements);
    for (uint64_t k = 0; k < elements; ++k) {
      if (bytes == 4) {
        std::memcpy(&v[k], &raw[k * 4], 4);
      } else {
        uint16_t b;
        std::memcpy(&b, &raw[k * 2], 2);
        v[k] = dtype == "BF16" ? bf16_bits_to_float(b) : half_to_float(b);
      }
      if (!std::isfinite(v[k])) {
        throw UserError(fmt::format("{}: element {} is not finite", at, k));
      }
    }
    if (n.key == "wpe") v.resize(uint64_t(c.max_context) * uint64_t(h));
    if (n.transposed) {  // [out, in] -> [in, out]
      const uint64_t out = uint64_t(shape[0]), in = uint64_t(shape[1]);
      std::vector<float> t(v.size());
      for (uint64_t o = 0; o < out; ++o)
        for (uint64_t i = 0; i < in; ++i) t[i * out + o] = v[o * in + i];
      v = std::move(t);
    }
    w.tensors[n.key] = std::move(v);
  }
  if (!missing.empty()) {
    const size_t shown = std::min<size_t>(missing.size(), 5);
    throw UserError(fmt::format("{}: {} tensor(s) of {} missing: {}{}", where, missing.size(),
                                c.name,
                                fmt::join(missing.begin(), missing.begin() + long(shown), ", "),
                                missing.size() > shown ? ", ..." : ""));
  }
  // GPT-2's c_attn holds q, k and v side by side: [hidden, q | k | v].
  if (!c.rms_norm) {
    for (int i = 0; i < c.layers; ++i) {
      const std::string p = fmt::format("h{}.", i);
      const std::vector<float> qkv = std::move(w.tensors.at(p + "qkv.w"));
      const std::vector<float> qkv_b =
          c.bias ? std::move(w.tensors.at(p + "qkv.b")) : std::vector<float>();
      w.tensors.erase(p + "qkv.w");
      w.tensors.erase(p + "qkv.b");
      const int64_t cols = q + 2 * kv;
      const int64_t begin[3] = {0, q, q + kv}, width[3] = {q, kv, kv};
      const char* names[3] = {"q", "k", "v"};
      for (int s = 0; s < 3; ++s) {
        std::vector<float>& m = w.tensors[p + names[s] + ".w"];
        m.resize(uint64_t(h * width[s]));
        for (int64_t r = 0; r < h; ++r)
          for (int64_t j = 0; j < width[s]; ++j)
            m[uint64_t(r * width[s] + j)] = qkv[uint64_t(r * cols + begin[s] + j)];
        if (c.bias) {
          w.tensors[p + names[s] + ".b"].assign(qkv_b.begin() + begin[s],
                                                qkv_b.begin() + begin[s] + width[s]);
        }
      }
    }
  }
  return w;
}

}  // namespace npusim
