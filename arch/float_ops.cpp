#include "arch/float_ops.hpp"

#include <algorithm>
#include <cmath>

namespace npusim {

void softmax_f32(const float* in, float* out, int n) {
  if (n <= 0) return;
  const float m = *std::max_element(in, in + n);
  float sum = 0.0f;
  for (int i = 0; i < n; ++i) sum += std::exp(in[i] - m);
  const float inv = 1.0f / sum;
  for (int i = 0; i < n; ++i) out[i] = std::exp(in[i] - m) * inv;
}

void layernorm_f32(const float* in, float* out, int n, const float* gamma, const float* beta,
                   float epsilon, bool rms) {
  float mean = 0.0f;
  if (!rms) {
    for (int i = 0; i < n; ++i) mean += in[i];
    mean /= static_cast<float>(n);
  }
  float var = 0.0f;
  for (int i = 0; i < n; ++i) var += (in[i] - mean) * (in[i] - mean);
  var /= static_cast<float>(n);
  const float inv_std = 1.0f / std::sqrt(var + epsilon);
  for (int i = 0; i < n; ++i) out[i] = (in[i] - mean) * inv_std * gamma[i] + beta[i];
}

}  // namespace npusim
