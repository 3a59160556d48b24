//===- Cast.cpp - Cast and CastLike between every supported type ---------===//
//
// ONNX Cast rules: float -> float rounds to nearest even (float8 follows the
// saturate table in Numeric.h); float -> integer truncates toward zero
// (out-of-range values are undefined in ONNX: here they clamp, never UB);
// integer -> integer keeps the low bits (two's complement); anything -> bool
// is "non-zero"; int4/uint4 and int2/uint2 keep the low 4 / 2 bits of the
// integer value; float4 E2M1 rounds to nearest even and saturates at 6;
// float8 E8M0 follows `round_mode` and `saturate` as ONNX's reference does.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/cpu/kernels/Kernels.h"
#include "runtime/src/cpu/kernels/KernelUtil.h"

namespace llmc::cpu {

namespace {

/// One element on its way between two types: an exact integer or a double
/// (exact for every float type llmc supports).
struct Value {
  bool isInt;
  bool isUnsigned;
  int64_t i;
  uint64_t u;
  double f;
};

struct Bool8 { uint8_t v; };
/// Sub-byte integers, one per byte (sign-extended when signed).
template <int Bits, bool Signed> struct SubByte { uint8_t v; };
using Int4 = SubByte<4, true>;
using UInt4 = SubByte<4, false>;
using Int2 = SubByte<2, true>;
using UInt2 = SubByte<2, false>;
template <Float8Kind K> struct F8 { uint8_t bits; };
struct F4E2M1 { uint8_t bits; };
struct F8E8M0 { uint8_t bits; };

template <typename T> struct IsSubByte : std::false_type {};
template <int B, bool S> struct IsSubByte<SubByte<B, S>> : std::true_type {};
template <int B, bool S> constexpr int kBitsOf(SubByte<B, S>) { return B; }
template <int B, bool S> constexpr bool kSignedOf(SubByte<B, S>) { return S; }

/// How floats are rounded into the narrow float types.
struct CastOptions {
  bool saturate;
  const char *roundMode; // float8 E8M0: "up", "down" or "nearest"
};

template <typename T> Value decode(T v) {
  if constexpr (std::is_same_v<T, Bool8>)
    return {true, false, v.v ? 1 : 0, uint64_t(v.v ? 1 : 0), 0};
  else if constexpr (IsSubByte<T>::value) {
    int64_t i = int64_t(kSignedOf(v) ? int64_t(int8_t(v.v)) : int64_t(v.v));
    return {true, !kSignedOf(v), i, uint64_t(i), 0};
  } else if constexpr (std::is_same_v<T, F4E2M1>)
    return {false, false, 0, 0, double(float4ToFloat(v.bits))};
  else if constexpr (std::is_same_v<T, F8E8M0>)
    return {false, false, 0, 0, double(float8E8M0ToFloat(v.bits))};
  else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>)
    return {true, false, int64_t(v), uint64_t(int64_t(v)), 0};
  else if constexpr (std::is_integral_v<T>)
    return {true, true, int64_t(v), uint64_t(v), 0};
  else if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>)
    return {false, false, 0, 0, double(Num<T>::load(v))};
  else if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>)
    return {false, false, 0, 0, double(v)};
  else // float8
    return {false, false, 0, 0, double(float8ToFloat(v.bits, kindOf(v)))};
}

template <Float8Kind K> constexpr Float8Kind kindOf(F8<K>) { return K; }

/// Float -> integer: truncate, NaN -> 0, clamp to [lo, hi] (undefined in ONNX).
template <typename I> I truncateTo(double f) {
  if (std::isnan(f))
    return 0;
  double t = std::trunc(f);
  if (t <= double(std::numeric_limits<I>::lowest()))
    return std::numeric_limits<I>::lowest();
  if (t >= double(std::numeric_limits<I>::max()))
    return std::numeric_limits<I>::max();
  return I(t);
}

/// The low `Bits` bits of an integer, sign-extended when `Signed`.
template <int Bits, bool Signed> SubByte<Bits, Signed> wrapSubByte(int64_t v) {
  uint8_t low = uint8_t(v & ((1 << Bits) - 1));
  if (Signed && (low >> (Bits - 1)))
    low = uint8_t(low | ~((1 << Bits) - 1));
  return {low};
}

template <typename T> T encode(const Value &v, const CastOptions &opts) {
  if constexpr (std::is_same_v<T, Bool8>) {
    return Bool8{uint8_t(v.isInt ? v.u != 0 : v.f != 0)};
  } else if constexpr (IsSubByte<T>::value) {
    int64_t i = v.isInt ? v.i : truncateTo<int64_t>(v.f);
    return wrapSubByte<kBitsOf(T{}), kSignedOf(T{})>(i);
  } else if constexpr (std::is_integral_v<T>) {
    if (v.isInt)
      return T(v.u); // keeps the low bits
    return truncateTo<T>(v.f);
  } else {
    double f = v.isInt ? (v.isUnsigned ? double(v.u) : double(v.i)) : v.f;
    if constexpr (std::is_same_v<T, double>)
      return f;
    else if constexpr (std::is_same_v<T, float>)
      return float(f);
    else if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>)
      return Num<T>::store(float(f));
    else if constexpr (std::is_same_v<T, F4E2M1>)
      return T{floatToFloat4(float(f))};
    else if constexpr (std::is_same_v<T, F8E8M0>)
      return T{floatToFloat8E8M0(float(f), opts.roundMode, opts.saturate)};
    else
      return T{floatToFloat8(float(f), kindOf(T{}), opts.saturate)};
  }
}

/// Calls f(Tag<T>{}) for any supported storage type (castable types).
template <typename F> Status visitAny(DType t, F &&f) {
  switch (t) {
  case DType::Bool: return f(Tag<Bool8>{});
  case DType::Int4: return f(Tag<Int4>{});
  case DType::UInt4: return f(Tag<UInt4>{});
  case DType::Int2: return f(Tag<Int2>{});
  case DType::UInt2: return f(Tag<UInt2>{});
  case DType::Float4E2M1: return f(Tag<F4E2M1>{});
  case DType::Float8E8M0: return f(Tag<F8E8M0>{});
  case DType::Float8E4M3FN: return f(Tag<F8<Float8Kind::E4M3FN>>{});
  case DType::Float8E4M3FNUZ: return f(Tag<F8<Float8Kind::E4M3FNUZ>>{});
  case DType::Float8E5M2: return f(Tag<F8<Float8Kind::E5M2>>{});
  case DType::Float8E5M2FNUZ: return f(Tag<F8<Float8Kind::E5M2FNUZ>>{});
  default: return visitNumeric(t, std::forward<F>(f));
  }
}

Status castTo(KernelCall &call, const Tensor &x, DType to) {
  std::string roundMode = call.attrs->getString("round_mode", "up");
  if (roundMode != "up" && roundMode != "down" && roundMode != "nearest")
    return call.fail("round_mode must be \"up\", \"down\" or \"nearest\", got \"" + roundMode +
                     "\"");
  CastOptions opts{call.attrs->getInt("saturate", 1) != 0, roundMode.c_str()};
  Tensor &y = call.outputs[0];
  if (x.dtype() == to) { // same type: the values as they are
    y = x;
    return Status::ok();
  }
  return visitAny(x.dtype(), [&](auto from) -> Status {
    using S = typename decltype(from)::type;
    return visitAny(to, [&](auto dest) -> Status {
      using D = typename decltype(dest)::type;
      static_assert(sizeof(S) == 1 || !std::is_class_v<S> || std::is_same_v<S, Half> ||
                    std::is_same_v<S, BFloat16>);
      LLMC_RETURN_IF_ERROR(Tensor::allocate(to, x.shape(), y));
      const S *in = static_cast<const S *>(x.raw());
      D *out = static_cast<D *>(y.mutableRaw());
      call.pool->parallelFor(x.numel(), 16384, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i)
          out[i] = encode<D>(decode(in[i]), opts);
      });
      return Status::ok();
    });
  });
}

Status castKernel(KernelCall &call) {
  std::optional<int64_t> to = call.attrs->optInt("to");
  if (!to)
    return call.fail("missing attribute 'to'");
  if (storageSize(DType(*to)) == 0)
    return call.fail("unsupported target type " + std::to_string(*to));
  return castTo(call, *call.input(0), DType(*to));
}

Status castLikeKernel(KernelCall &call) {
  return castTo(call, *call.input(0), call.input(1)->dtype());
}

} // namespace

void addCastKernels(KernelTable &table) {
  table.add("onnx.cast", castKernel);
  table.add("onnx.cast_like", castLikeKernel);
}

} // namespace llmc::cpu
