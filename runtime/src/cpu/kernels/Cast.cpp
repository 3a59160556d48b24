//===- Cast.cpp - Cast and CastLike between every supported type ---------===//
//
// ONNX Cast rules: float -> float rounds to nearest even (float8 follows the
// saturate table in Numeric.h); float -> integer truncates toward zero
// (out-of-range values are undefined in ONNX: here they clamp, never UB);
// integer -> integer keeps the low bits (two's complement); anything -> bool
// is "non-zero"; int4/uint4 keep the low 4 bits of the integer value.
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
struct Int4 { int8_t v; };
struct UInt4 { uint8_t v; };
template <Float8Kind K> struct F8 { uint8_t bits; };

template <typename T> Value decode(T v) {
  if constexpr (std::is_same_v<T, Bool8>)
    return {true, false, v.v ? 1 : 0, uint64_t(v.v ? 1 : 0), 0};
  else if constexpr (std::is_same_v<T, Int4>)
    return {true, false, v.v, uint64_t(int64_t(v.v)), 0};
  else if constexpr (std::is_same_v<T, UInt4>)
    return {true, true, v.v, v.v, 0};
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

/// The low 4 bits of an integer, as a signed or unsigned 4-bit value.
int8_t wrapInt4(int64_t v) { return int8_t(int8_t((v & 0xf) << 4) >> 4); }
uint8_t wrapUInt4(int64_t v) { return uint8_t(v & 0xf); }

template <typename T> T encode(const Value &v, bool saturate) {
  if constexpr (std::is_same_v<T, Bool8>) {
    return Bool8{uint8_t(v.isInt ? v.u != 0 : v.f != 0)};
  } else if constexpr (std::is_same_v<T, Int4> || std::is_same_v<T, UInt4>) {
    int64_t i = v.isInt ? v.i : truncateTo<int64_t>(v.f);
    if constexpr (std::is_same_v<T, Int4>)
      return Int4{wrapInt4(i)};
    else
      return UInt4{wrapUInt4(i)};
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
    else
      return T{floatToFloat8(float(f), kindOf(T{}), saturate)};
  }
}

/// Calls f(Tag<T>{}) for any supported storage type (castable types).
template <typename F> Status visitAny(DType t, F &&f) {
  switch (t) {
  case DType::Bool: return f(Tag<Bool8>{});
  case DType::Int4: return f(Tag<Int4>{});
  case DType::UInt4: return f(Tag<UInt4>{});
  case DType::Float8E4M3FN: return f(Tag<F8<Float8Kind::E4M3FN>>{});
  case DType::Float8E4M3FNUZ: return f(Tag<F8<Float8Kind::E4M3FNUZ>>{});
  case DType::Float8E5M2: return f(Tag<F8<Float8Kind::E5M2>>{});
  case DType::Float8E5M2FNUZ: return f(Tag<F8<Float8Kind::E5M2FNUZ>>{});
  default: return visitNumeric(t, std::forward<F>(f));
  }
}

Status castTo(KernelCall &call, const Tensor &x, DType to) {
  bool saturate = call.attrs->getInt("saturate", 1) != 0;
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
          out[i] = encode<D>(decode(in[i]), saturate);
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
