// Row operations of the vector unit's fp32 lanes on the bf16 path, shared by the model and the
// reference so both compute the same bits (each in index order).
#pragma once

namespace npusim {

void softmax_f32(const float* in, float* out, int n);
// `rms`: RMSNorm (no mean subtracted: in / sqrt(mean(in^2) + epsilon) * gamma + beta).
void layernorm_f32(const float* in, float* out, int n, const float* gamma, const float* beta,
                   float epsilon, bool rms = false);

}  // namespace npusim
