//===- KernelUtil.h - helpers shared by the reference kernels -------------===//
//
// Element types as C++ types (Num<T>: how an element is loaded into the
// type it is computed in and stored back), dispatch from a DType to a C++
// type, broadcasting, axis handling and reading small integer inputs.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_CPU_KERNELS_KERNELUTIL_H
#define LLMC_RUNTIME_CPU_KERNELS_KERNELUTIL_H

#include "runtime/src/cpu/Kernel.h"
#include "runtime/src/cpu/Numeric.h"
#include "runtime/src/cpu/Scratch.h"

#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

namespace llmc::cpu {

/// How elements of storage type T are computed: 16-bit floats in float,
/// everything else in itself.
template <typename T> struct Num {
  using C = T;
  static C load(T v) { return v; }
  static T store(C v) { return v; }
};
template <> struct Num<Half> {
  using C = float;
  static float load(Half v) { return halfToFloat(v.bits); }
  static Half store(float v) { return Half{floatToHalf(v)}; }
};
template <> struct Num<BFloat16> {
  using C = float;
  static float load(BFloat16 v) { return bf16ToFloat(v.bits); }
  static BFloat16 store(float v) { return BFloat16{floatToBf16(v)}; }
};

template <typename T> struct Tag { using type = T; };

template <typename T>
constexpr bool isFloatLike =
    std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, Half> ||
    std::is_same_v<T, BFloat16>;

/// Calls f(Tag<T>{}) for the C++ storage type of a float dtype.
template <typename F> Status visitFloat(DType t, F &&f) {
  switch (t) {
  case DType::Float: return f(Tag<float>{});
  case DType::Double: return f(Tag<double>{});
  case DType::Float16: return f(Tag<Half>{});
  case DType::BFloat16: return f(Tag<BFloat16>{});
  default:
    return Status::error(std::string("unsupported element type ") + dtypeName(t) +
                         " (expected a floating-point type)");
  }
}

/// Calls f(Tag<T>{}) for the C++ storage type of an integer dtype (not i4).
template <typename F> Status visitInteger(DType t, F &&f) {
  switch (t) {
  case DType::Int8: return f(Tag<int8_t>{});
  case DType::Int16: return f(Tag<int16_t>{});
  case DType::Int32: return f(Tag<int32_t>{});
  case DType::Int64: return f(Tag<int64_t>{});
  case DType::UInt8: return f(Tag<uint8_t>{});
  case DType::UInt16: return f(Tag<uint16_t>{});
  case DType::UInt32: return f(Tag<uint32_t>{});
  case DType::UInt64: return f(Tag<uint64_t>{});
  default:
    return Status::error(std::string("unsupported element type ") + dtypeName(t) +
                         " (expected an integer type)");
  }
}

/// Floats and integers (not bool).
template <typename F> Status visitNumeric(DType t, F &&f) {
  if (isFloat(t))
    return visitFloat(t, std::forward<F>(f));
  return visitInteger(t, std::forward<F>(f));
}

/// A C++ unsigned integer type of the given byte size, for type-agnostic
/// copies.
template <size_t Bytes> struct UIntOfSize;
template <> struct UIntOfSize<1> { using type = uint8_t; };
template <> struct UIntOfSize<2> { using type = uint16_t; };
template <> struct UIntOfSize<4> { using type = uint32_t; };
template <> struct UIntOfSize<8> { using type = uint64_t; };

/// Calls f(Tag<U>{}) with an unsigned type of the element size of `t`: for
/// kernels that only move elements.
template <typename F> Status visitBytes(DType t, F &&f) {
  switch (storageSize(t)) {
  case 1: return f(Tag<uint8_t>{});
  case 2: return f(Tag<uint16_t>{});
  case 4: return f(Tag<uint32_t>{});
  case 8: return f(Tag<uint64_t>{});
  default:
    return Status::error(std::string("unsupported element type ") + dtypeName(t));
  }
}

/// Maps `axis` into [0, rank).
inline Status normalizeAxis(const KernelCall &call, int64_t &axis, int64_t rank,
                            const char *what = "axis") {
  if (axis < -rank || axis >= rank)
    return call.fail(std::string(what) + " " + std::to_string(axis) +
                     " is out of range for rank " + std::to_string(rank));
  if (axis < 0)
    axis += rank;
  return Status::ok();
}

/// The values of a 1-D (or scalar) integer input, e.g. a shape or axes.
template <typename Ints>
Status readInts(const KernelCall &call, const Tensor &t, Ints &out, const char *what) {
  out.clear();
  if (t.rank() > 1)
    return call.fail(std::string(what) + " must be 1-D, got " + t.describe());
  if (t.dtype() == DType::Int64) {
    out.assign(t.data<int64_t>(), t.data<int64_t>() + t.numel());
  } else if (t.dtype() == DType::Int32) {
    for (int64_t i = 0; i < t.numel(); ++i)
      out.push_back(t.data<int32_t>()[i]);
  } else {
    return call.fail(std::string(what) + " must be int32 or int64, got " + t.describe());
  }
  return Status::ok();
}

/// One integer from a scalar (or single-element) input.
inline Status readScalarInt(const KernelCall &call, const Tensor &t, int64_t &out,
                            const char *what) {
  Shape v;
  if (t.numel() != 1)
    return call.fail(std::string(what) + " must have one element, got " + t.describe());
  Tensor flat = t.view({1});
  LLMC_RETURN_IF_ERROR(readInts(call, flat, v, what));
  out = v[0];
  return Status::ok();
}

/// Row-major strides of a shape (in elements).
inline Shape stridesOf(const Shape &shape) {
  Shape s(shape.size(), 1);
  for (int64_t i = int64_t(shape.size()) - 2; i >= 0; --i)
    s[size_t(i)] = s[size_t(i) + 1] * shape[size_t(i) + 1];
  return s;
}

/// Multidirectional broadcasting of input shapes: the output shape and, per
/// input, its element strides over the output dims (0 where broadcast).
struct Broadcast {
  Shape out;
  InlineVector<Shape, 4> strides;
  int64_t count = 0;

  static Status make(const KernelCall &call, const InlineVector<const Shape *, 4> &shapes,
                     Broadcast &b) {
    size_t rank = 0;
    for (const Shape *s : shapes)
      rank = std::max(rank, s->size());
    b.out.assign(rank, 1);
    for (const Shape *s : shapes) {
      size_t off = rank - s->size();
      for (size_t i = 0; i < s->size(); ++i) {
        int64_t d = (*s)[i], &o = b.out[off + i];
        if (d == o || d == 1)
          continue;
        if (o != 1)
          return call.fail("shapes " + shapeString(*shapes[0]) + " and " + shapeString(*s) +
                           " are not broadcast-compatible");
        o = d;
      }
    }
    b.strides.clear();
    for (const Shape *s : shapes) {
      Shape st(rank, 0), own = stridesOf(*s);
      size_t off = rank - s->size();
      for (size_t i = 0; i < s->size(); ++i)
        st[off + i] = (*s)[i] == 1 ? 0 : own[i];
      b.strides.push_back(st);
    }
    b.count = numElements(b.out);
    return Status::ok();
  }

  /// Calls f(outIndex, inIndex[N]) for output elements [begin, end).
  template <size_t N, typename F> void forRange(int64_t begin, int64_t end, F &&f) const {
    size_t rank = out.size();
    std::array<int64_t, N> in{};
    Shape idx(rank, 0);
    // Starting multi-index and input offsets for `begin`.
    int64_t rest = begin;
    for (int64_t d = int64_t(rank) - 1; d >= 0; --d) {
      int64_t dim = out[size_t(d)];
      idx[size_t(d)] = dim ? rest % dim : 0;
      rest = dim ? rest / dim : 0;
      for (size_t k = 0; k < N; ++k)
        in[k] += idx[size_t(d)] * strides[k][size_t(d)];
    }
    for (int64_t o = begin; o < end; ++o) {
      f(o, in);
      // Advance the multi-index.
      for (int64_t d = int64_t(rank) - 1; d >= 0; --d) {
        size_t ud = size_t(d);
        for (size_t k = 0; k < N; ++k)
          in[k] += strides[k][ud];
        if (++idx[ud] < out[ud])
          break;
        for (size_t k = 0; k < N; ++k)
          in[k] -= strides[k][ud] * out[ud];
        idx[ud] = 0;
      }
    }
  }

  /// forRange over all elements, in parallel chunks.
  template <size_t N, typename F> void forEach(ThreadPool &pool, F &&f) const {
    pool.parallelFor(count, 16384, [&](int64_t b, int64_t e) { forRange<N>(b, e, f); });
  }
};

/// A tensor's elements as f32 (any float type; an error for others).
inline Status toF32([[maybe_unused]] const KernelCall &call, const Tensor &t,
                    std::vector<float> &out) {
  out.resize(size_t(t.numel()));
  return visitFloat(t.dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    const T *p = t.data<T>();
    for (int64_t i = 0; i < t.numel(); ++i)
      out[size_t(i)] = float(Num<T>::load(p[i]));
    return Status::ok();
  });
}

/// A new tensor of `type` and `shape` from its f32 values.
inline Status fromF32(DType type, const Shape &shape, const float *values, Tensor &out) {
  LLMC_RETURN_IF_ERROR(Tensor::allocateUninitialized(type, shape, out));
  return visitFloat(type, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    T *p = out.mutableData<T>();
    for (int64_t i = 0; i < out.numel(); ++i)
      p[i] = Num<T>::store(typename Num<T>::C(values[i]));
    return Status::ok();
  });
}
inline Status fromF32(DType type, const Shape &shape, const std::vector<float> &values,
                      Tensor &out) {
  if (int64_t(values.size()) != numElements(shape))
    return Status::error("fromF32: " + std::to_string(values.size()) + " values for " +
                         shapeString(shape));
  return fromF32(type, shape, values.data(), out);
}

/// C[M,N] (row stride ldc) = A[M,K] * B[K,N] in f32; element (r, c) of A is
/// a[r * aRowStride + c * aColStride], likewise for B. Blocked, vectorised,
/// shared among the pool's threads (Linalg.cpp).
void gemmF32(ThreadPool &pool, int64_t m, int64_t n, int64_t k, const float *a,
             int64_t aRowStride, int64_t aColStride, const float *b, int64_t bRowStride,
             int64_t bColStride, float *c, int64_t ldc);

} // namespace llmc::cpu

#endif // LLMC_RUNTIME_CPU_KERNELS_KERNELUTIL_H
