//===- Numeric.h - 16- and 8-bit floating-point formats ------------------===//
//
// Bit-exact conversions between float and the narrow formats ONNX uses:
// IEEE half, bfloat16 (both round to nearest even) and the four float8
// formats of ONNX's Cast table (E4M3FN, E4M3FNUZ, E5M2, E5M2FNUZ), with and
// without saturation. Plain C++.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_CPU_NUMERIC_H
#define LLMC_RUNTIME_CPU_NUMERIC_H

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace llmc::cpu {

inline uint32_t floatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

inline float bitsFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

/// IEEE 754 binary16 -> binary32 (exact).
inline float halfToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  if (exp == 0x1f) // inf / nan
    return bitsFloat(sign | 0x7f800000 | (man << 13));
  if (exp == 0) {
    if (man == 0)
      return bitsFloat(sign);
    // Subnormal: value = man * 2^-24.
    float f = float(man) * 5.9604644775390625e-8f;
    return sign ? -f : f;
  }
  return bitsFloat(sign | ((exp + 112) << 23) | (man << 13));
}

/// binary32 -> binary16, round to nearest even; overflow gives infinity.
inline uint16_t floatToHalf(float f) {
  uint32_t u = floatBits(f);
  uint32_t sign = (u >> 16) & 0x8000;
  uint32_t abs = u & 0x7fffffff;
  if (abs >= 0x7f800000) // inf / nan (keep a quiet nan)
    return uint16_t(sign | 0x7c00 | (abs > 0x7f800000 ? 0x200 | ((abs >> 13) & 0x3ff) : 0));
  if (abs >= 0x477ff000) // rounds to >= 65520: infinity
    return uint16_t(sign | 0x7c00);
  if (abs < 0x38800000) { // below the smallest normal half: subnormal or zero
    // Scale to units of 2^-24 and round to nearest even.
    float scaled = bitsFloat(abs) * 16777216.0f; // exact: power of two
    float r = std::nearbyint(scaled);            // default rounding: ties to even
    return uint16_t(sign | uint32_t(r));
  }
  // Normal: drop 13 mantissa bits with round to nearest even.
  uint32_t rounded = abs + 0xfff + ((abs >> 13) & 1);
  return uint16_t(sign | ((rounded - 0x38000000) >> 13));
}

inline float bf16ToFloat(uint16_t b) { return bitsFloat(uint32_t(b) << 16); }

/// binary32 -> bfloat16, round to nearest even; nan stays a quiet nan.
inline uint16_t floatToBf16(float f) {
  uint32_t u = floatBits(f);
  if ((u & 0x7fffffff) > 0x7f800000)
    return uint16_t((u >> 16) | 0x40);
  u += 0x7fff + ((u >> 16) & 1);
  return uint16_t(u >> 16);
}

/// The float8 formats of ONNX.
enum class Float8Kind { E4M3FN, E4M3FNUZ, E5M2, E5M2FNUZ };

struct Float8Format {
  int expBits, manBits, bias;
  bool hasInf;   // E5M2 only
  bool unsignedZero; // "UZ": no -0, 0x80 is the one nan
  float maxFinite;
};

inline Float8Format float8Format(Float8Kind k) {
  switch (k) {
  case Float8Kind::E4M3FN: return {4, 3, 7, false, false, 448.0f};
  case Float8Kind::E4M3FNUZ: return {4, 3, 8, false, true, 240.0f};
  case Float8Kind::E5M2: return {5, 2, 15, true, false, 57344.0f};
  case Float8Kind::E5M2FNUZ: return {5, 2, 16, false, true, 57344.0f};
  }
  return {4, 3, 7, false, false, 448.0f};
}

/// float8 -> float (exact).
inline float float8ToFloat(uint8_t v, Float8Kind kind) {
  Float8Format f = float8Format(kind);
  if (f.unsignedZero && v == 0x80)
    return NAN;
  bool neg = v & 0x80;
  int exp = (v >> f.manBits) & ((1 << f.expBits) - 1);
  int man = v & ((1 << f.manBits) - 1);
  int maxExp = (1 << f.expBits) - 1;
  if (kind == Float8Kind::E4M3FN && exp == maxExp && man == (1 << f.manBits) - 1)
    return neg ? -NAN : NAN;
  if (kind == Float8Kind::E5M2 && exp == maxExp)
    return man ? (neg ? -NAN : NAN) : (neg ? -INFINITY : INFINITY);
  double value = exp == 0 ? std::ldexp(double(man), 1 - f.bias - f.manBits)
                          : std::ldexp(double((1 << f.manBits) | man), exp - f.bias - f.manBits);
  return float(neg ? -value : value);
}

/// float -> float8 with ONNX Cast semantics: round to nearest even; beyond
/// the largest finite value (after rounding) saturate to it, or give inf
/// (E5M2) / nan without `saturate`.
inline uint8_t floatToFloat8(float x, Float8Kind kind, bool saturate) {
  Float8Format f = float8Format(kind);
  uint8_t nanCode = f.unsignedZero ? 0x80 : 0x7f;
  bool neg = std::signbit(x);
  uint8_t sign = neg ? 0x80 : 0;
  if (std::isnan(x))
    return f.unsignedZero ? 0x80 : uint8_t(sign | 0x7f);
  double a = std::fabs(double(x));
  auto overflow = [&]() -> uint8_t {
    if (saturate)
      return uint8_t(sign | (kind == Float8Kind::E4M3FN ? 0x7e
                             : kind == Float8Kind::E5M2 ? 0x7b
                                                        : 0x7f));
    if (f.hasInf)
      return uint8_t(sign | 0x7c);
    return f.unsignedZero ? nanCode : uint8_t(sign | nanCode);
  };
  if (std::isinf(a))
    return overflow();
  int emin = 1 - f.bias; // smallest normal exponent
  int e;
  std::frexp(a, &e);     // a = m * 2^e, m in [0.5, 1)
  int exp = std::max(e - 1, emin);
  double spacing = std::ldexp(1.0, exp - f.manBits);
  double q = std::nearbyint(a / spacing); // ties to even
  double r = q * spacing;
  if (r > double(f.maxFinite))
    return overflow();
  if (r == 0)
    return f.unsignedZero ? 0 : sign;
  int re;
  std::frexp(r, &re);
  int rexp = re - 1;
  uint32_t bits;
  if (rexp < emin) { // subnormal
    bits = uint32_t(r / std::ldexp(1.0, emin - f.manBits));
  } else {
    uint32_t man = uint32_t(r / std::ldexp(1.0, rexp - f.manBits)) - (1u << f.manBits);
    bits = (uint32_t(rexp + f.bias) << f.manBits) | man;
  }
  // r != 0, so the magnitude bits are non-zero and a UZ format's 0x80 (nan)
  // cannot come out of a negative number.
  return uint8_t(sign | bits);
}

/// float4 E2M1 (low 4 bits of `v`: sign, 2 exponent bits with bias 1, 1
/// mantissa bit) -> float (exact).
inline float float4ToFloat(uint8_t v) {
  static constexpr float kMagnitude[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  float m = kMagnitude[v & 7];
  return (v & 8) ? -m : m;
}

/// float -> float4 E2M1 as ONNX Cast does (ml_dtypes): round to nearest
/// even, saturate at +-6 (infinities too), NaN to 0x8.
inline uint8_t floatToFloat4(float x) {
  if (std::isnan(x))
    return 0x8;
  uint8_t sign = std::signbit(x) ? 8 : 0;
  double a = std::fabs(double(x));
  if (a >= 6.0)
    return uint8_t(sign | 7);
  // Spacing 0.5 below 2, 1 in [2, 4), 2 in [4, 6].
  double spacing = a < 2.0 ? 0.5 : a < 4.0 ? 1.0 : 2.0;
  double r = std::nearbyint(a / spacing) * spacing; // ties to even
  static constexpr double kMagnitude[8] = {0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0};
  for (uint8_t code = 0; code < 8; ++code)
    if (kMagnitude[code] == r)
      return uint8_t(sign | code);
  return uint8_t(sign | 7);
}

/// float8 E8M0 (a power of two 2^(v - 127); 0xff is NaN) -> float (exact:
/// 2^-127 is a float subnormal).
inline float float8E8M0ToFloat(uint8_t v) {
  return v == 0xff ? NAN : std::ldexp(1.0f, int(v) - 127);
}

/// float -> float8 E8M0 as ONNX's reference (onnx.numpy_helper.to_float8e8m0)
/// does it: the float's exponent field, rounded by the mantissa per
/// `roundMode` ("up", "down", "nearest"); with `saturate` rounding never
/// passes 0xfe. NaN and infinities give 0xff; the sign is ignored.
inline uint8_t floatToFloat8E8M0(float x, const char *roundMode, bool saturate) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  uint32_t exponent = (bits >> 23) & 0xff;
  if (exponent == 0xff)
    return 0xff;
  uint32_t mantissa = bits & 0x7fffff;
  bool roundUp = false;
  if (roundMode[0] == 'u') { // up
    roundUp = mantissa != 0;
  } else if (roundMode[0] == 'n') { // nearest: guard, round, sticky, lsb
    bool g = bits & 0x400000, r = bits & 0x200000, st = bits & 0x1fffff;
    roundUp = g && (r || st || exponent > 0);
  }
  if (roundUp && !(saturate && exponent == 0xfe))
    ++exponent;
  return uint8_t(exponent);
}

/// A 16-bit float in storage, converted through float.
struct Half {
  uint16_t bits;
};
struct BFloat16 {
  uint16_t bits;
};

/// One row of an int8 KV cache (llm.quantized_cache_update): the scale
/// s = max|x| / 127 and q = x / s rounded to nearest even (in [-127, 127]);
/// a row of zeros gives zeros and s = 0. Returns s; the row reads back as
/// q * s.
inline float quantizeKvRow(const float *x, int64_t n, int8_t *q) {
  float amax = 0.f;
  for (int64_t i = 0; i < n; ++i)
    amax = std::max(amax, std::fabs(x[i]));
  float s = amax / 127.f;
  for (int64_t i = 0; i < n; ++i)
    q[i] = s > 0.f ? int8_t(std::clamp(std::nearbyint(x[i] / s), -127.f, 127.f)) : int8_t(0);
  return s;
}

} // namespace llmc::cpu

#endif // LLMC_RUNTIME_CPU_NUMERIC_H
