//===- Elementwise.cpp - unary, binary and variadic elementwise kernels --===//
//
// 16-bit floats are computed in float and rounded back per operation (as
// numpy and the ONNX reference do); f64 in double; integers in their own
// type with two's-complement wrap-around, never signed-overflow UB. Integer
// division by zero is an error.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/cpu/kernels/Kernels.h"
#include "runtime/src/cpu/kernels/KernelUtil.h"

#include <algorithm>
#include <cmath>

namespace llmc::cpu {

namespace {

constexpr int64_t kGrain = 16384;

//===----------------------------------------------------------------------===//
// Unary
//===----------------------------------------------------------------------===//

/// out[i] = store(op(load(in[i]))) over floating-point elements.
template <typename Op> Status unaryFloat(KernelCall &call, Op op) {
  const Tensor &x = *call.input(0);
  return visitFloat(x.dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    Tensor &y = call.outputs[0];
    LLMC_RETURN_IF_ERROR(Tensor::allocate(x.dtype(), x.shape(), y));
    const T *in = x.data<T>();
    T *out = y.mutableData<T>();
    call.pool->parallelFor(x.numel(), kGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i)
        out[i] = Num<T>::store(op(Num<T>::load(in[i])));
    });
    return Status::ok();
  });
}

/// Same over floats and integers.
template <typename Op> Status unaryNumeric(KernelCall &call, Op op) {
  const Tensor &x = *call.input(0);
  return visitNumeric(x.dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    Tensor &y = call.outputs[0];
    LLMC_RETURN_IF_ERROR(Tensor::allocate(x.dtype(), x.shape(), y));
    const T *in = x.data<T>();
    T *out = y.mutableData<T>();
    call.pool->parallelFor(x.numel(), kGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i)
        out[i] = Num<T>::store(op(Num<T>::load(in[i])));
    });
    return Status::ok();
  });
}

/// Two's-complement negation without signed overflow.
template <typename C> C wrapNeg(C v) {
  if constexpr (std::is_integral_v<C>)
    return C(std::make_unsigned_t<C>(0) - std::make_unsigned_t<C>(v));
  else
    return -v;
}

template <typename C> C softplus(C x) {
  // log(1 + e^x) without overflow for large x.
  return x > C(20) ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
}

template <typename C> C sigmoid(C x) {
  return x >= 0 ? C(1) / (C(1) + std::exp(-x)) : std::exp(x) / (C(1) + std::exp(x));
}

template <typename C> C geluErf(C x) {
  return C(0.5) * x * (C(1) + std::erf(x * C(0.70710678118654752440)));
}

template <typename C> C geluTanh(C x) {
  const C k = C(0.79788456080286535588); // sqrt(2 / pi)
  return C(0.5) * x * (C(1) + std::tanh(k * (x + C(0.044715) * x * x * x)));
}

#define FLOAT_UNARY(NAME, EXPR)                                                 \
  Status NAME(KernelCall &call) {                                              \
    return unaryFloat(call, [](auto x) { return EXPR; });                       \
  }

FLOAT_UNARY(sqrtKernel, std::sqrt(x))
FLOAT_UNARY(reciprocalKernel, decltype(x)(1) / x)
FLOAT_UNARY(expKernel, std::exp(x))
FLOAT_UNARY(logKernel, std::log(x))
FLOAT_UNARY(tanhKernel, std::tanh(x))
FLOAT_UNARY(erfKernel, std::erf(x))
FLOAT_UNARY(sigmoidKernel, sigmoid(x))
FLOAT_UNARY(ceilKernel, std::ceil(x))
FLOAT_UNARY(floorKernel, std::floor(x))
FLOAT_UNARY(roundKernel, std::nearbyint(x)) // ties to even
FLOAT_UNARY(sinKernel, std::sin(x))
FLOAT_UNARY(cosKernel, std::cos(x))
FLOAT_UNARY(softplusKernel, softplus(x))
FLOAT_UNARY(hardSwishKernel,
            x * std::max(decltype(x)(0),
                         std::min(decltype(x)(1), x / decltype(x)(6) + decltype(x)(0.5))))
FLOAT_UNARY(mishKernel, x * std::tanh(softplus(x)))
#undef FLOAT_UNARY

Status absKernel(KernelCall &call) {
  return unaryNumeric(call, [](auto x) -> decltype(x) {
    using C = decltype(x);
    if constexpr (std::is_unsigned_v<C>)
      return x;
    else if constexpr (std::is_integral_v<C>)
      return x < 0 ? wrapNeg(x) : x;
    else
      return std::fabs(x);
  });
}

Status negKernel(KernelCall &call) {
  return unaryNumeric(call, [](auto x) { return wrapNeg(x); });
}

Status signKernel(KernelCall &call) {
  return unaryNumeric(call, [](auto x) -> decltype(x) {
    using C = decltype(x);
    if constexpr (!std::is_integral_v<C>)
      if (std::isnan(x))
        return x;
    return x > C(0) ? C(1) : (x < C(0) ? C(-1) : C(0));
  });
}

Status reluKernel(KernelCall &call) {
  // NaN stays NaN (the comparison is false), as numpy.maximum(x, 0) gives.
  return unaryNumeric(call, [](auto x) { return x < decltype(x)(0) ? decltype(x)(0) : x; });
}

Status geluKernel(KernelCall &call) {
  std::string approx = call.attrs->getString("approximate", "none");
  if (approx == "tanh")
    return unaryFloat(call, [](auto x) { return geluTanh(x); });
  return unaryFloat(call, [](auto x) { return geluErf(x); });
}

Status leakyReluKernel(KernelCall &call) {
  double alpha = call.attrs->getFloat("alpha", 0.01);
  return unaryFloat(call, [alpha](auto x) {
    return x < decltype(x)(0) ? decltype(x)(alpha) * x : x;
  });
}

Status eluKernel(KernelCall &call) {
  double alpha = call.attrs->getFloat("alpha", 1.0);
  return unaryFloat(call, [alpha](auto x) {
    return x < decltype(x)(0) ? decltype(x)(alpha) * (std::exp(x) - decltype(x)(1)) : x;
  });
}

Status hardSigmoidKernel(KernelCall &call) {
  double alpha = call.attrs->getFloat("alpha", 0.2), beta = call.attrs->getFloat("beta", 0.5);
  return unaryFloat(call, [alpha, beta](auto x) {
    using C = decltype(x);
    return std::max(C(0), std::min(C(1), C(alpha) * x + C(beta)));
  });
}

Status swishKernel(KernelCall &call) {
  double alpha = call.attrs->getFloat("alpha", 1.0);
  return unaryFloat(call, [alpha](auto x) { return x * sigmoid(decltype(x)(alpha) * x); });
}

Status quickGeluKernel(KernelCall &call) {
  double alpha = call.attrs->getFloat("alpha", 1.702);
  return unaryFloat(call, [alpha](auto x) { return x * sigmoid(decltype(x)(alpha) * x); });
}



/// A boolean output computed from each floating-point element.
template <typename Pred> Status floatPredicate(KernelCall &call, Pred pred) {
  const Tensor &x = *call.input(0);
  return visitFloat(x.dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    Tensor &y = call.outputs[0];
    LLMC_RETURN_IF_ERROR(Tensor::allocate(DType::Bool, x.shape(), y));
    const T *in = x.data<T>();
    uint8_t *out = y.mutableData<uint8_t>();
    for (int64_t i = 0; i < x.numel(); ++i)
      out[i] = pred(Num<T>::load(in[i])) ? 1 : 0;
    return Status::ok();
  });
}

Status isNanKernel(KernelCall &call) {
  return floatPredicate(call, [](auto x) { return std::isnan(x); });
}

Status isInfKernel(KernelCall &call) {
  bool neg = call.attrs->getInt("detect_negative", 1), pos = call.attrs->getInt("detect_positive", 1);
  return floatPredicate(call, [neg, pos](auto x) {
    return std::isinf(x) && ((x < 0 && neg) || (x > 0 && pos));
  });
}

Status notKernel(KernelCall &call) {
  const Tensor &x = *call.input(0);
  if (x.dtype() != DType::Bool)
    return call.fail("Not takes bool, got " + x.describe());
  Tensor &y = call.outputs[0];
  LLMC_RETURN_IF_ERROR(Tensor::allocate(DType::Bool, x.shape(), y));
  for (int64_t i = 0; i < x.numel(); ++i)
    y.mutableData<uint8_t>()[i] = !x.data<uint8_t>()[i];
  return Status::ok();
}

Status identityKernel(KernelCall &call) {
  call.outputs[0] = *call.input(0); // shares storage: tensors are immutable
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// Binary with broadcasting
//===----------------------------------------------------------------------===//

/// out = op(a, b) with broadcasting; `op` gets and returns compute values,
/// and may fail through `error` (e.g. integer division by zero).
template <typename Op>
Status binaryNumeric(KernelCall &call, const Tensor &a, const Tensor &b, Tensor &out, Op op) {
  if (a.dtype() != b.dtype())
    return call.fail("operands have different element types: " + a.describe() + " and " +
                     b.describe());
  Broadcast bc;
  LLMC_RETURN_IF_ERROR(Broadcast::make(call, {&a.shape(), &b.shape()}, bc));
  return visitNumeric(a.dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    LLMC_RETURN_IF_ERROR(Tensor::allocate(a.dtype(), bc.out, out));
    const T *pa = a.data<T>(), *pb = b.data<T>();
    T *po = out.mutableData<T>();
    std::atomic<bool> bad{false};
    bc.forEach<2>(*call.pool, [&](int64_t o, const std::array<int64_t, 2> &in) {
      bool ok = true;
      po[o] = Num<T>::store(op(Num<T>::load(pa[in[0]]), Num<T>::load(pb[in[1]]), ok));
      if (!ok)
        bad = true;
    });
    if (bad)
      return call.fail("integer division by zero");
    return Status::ok();
  });
}

template <typename C> C wrapAdd(C a, C b) {
  if constexpr (std::is_integral_v<C>)
    return C(std::make_unsigned_t<C>(a) + std::make_unsigned_t<C>(b));
  else
    return a + b;
}
template <typename C> C wrapSub(C a, C b) {
  if constexpr (std::is_integral_v<C>)
    return C(std::make_unsigned_t<C>(a) - std::make_unsigned_t<C>(b));
  else
    return a - b;
}
template <typename C> C wrapMul(C a, C b) {
  if constexpr (std::is_integral_v<C>) {
    using U = std::make_unsigned_t<C>;
    // Promote narrow types so the product of two unsigned shorts cannot
    // overflow int.
    using W = std::conditional_t<(sizeof(U) < sizeof(unsigned)), unsigned, U>;
    return C(U(W(U(a)) * W(U(b))));
  } else {
    return a * b;
  }
}

template <typename C> C divide(C a, C b, bool &ok) {
  if constexpr (std::is_integral_v<C>) {
    if (b == 0) {
      ok = false;
      return 0;
    }
    if constexpr (std::is_signed_v<C>)
      if (a == std::numeric_limits<C>::min() && b == C(-1))
        return a; // the wrapped quotient
    return a / b; // C++ truncates toward zero, as ONNX integer Div does
  } else {
    return a / b;
  }
}

Status addKernel(KernelCall &call) {
  return binaryNumeric(call, *call.input(0), *call.input(1), call.outputs[0],
                       [](auto a, auto b, bool &) { return wrapAdd(a, b); });
}
Status subKernel(KernelCall &call) {
  return binaryNumeric(call, *call.input(0), *call.input(1), call.outputs[0],
                       [](auto a, auto b, bool &) { return wrapSub(a, b); });
}
Status mulKernel(KernelCall &call) {
  return binaryNumeric(call, *call.input(0), *call.input(1), call.outputs[0],
                       [](auto a, auto b, bool &) { return wrapMul(a, b); });
}
Status divKernel(KernelCall &call) {
  return binaryNumeric(call, *call.input(0), *call.input(1), call.outputs[0],
                       [](auto a, auto b, bool &ok) { return divide(a, b, ok); });
}

Status modKernel(KernelCall &call) {
  bool fmod = call.attrs->getInt("fmod", 0) != 0;
  return binaryNumeric(call, *call.input(0), *call.input(1), call.outputs[0],
                       [fmod](auto a, auto b, bool &ok) -> decltype(a) {
                         using C = decltype(a);
                         if constexpr (std::is_integral_v<C>) {
                           if (b == 0) {
                             ok = false;
                             return 0;
                           }
                           C r;
                           if constexpr (std::is_signed_v<C>)
                             r = (b == C(-1)) ? C(0) : C(a % b);
                           else
                             r = C(a % b);
                           // fmod = 0: the sign of the divisor (Python %).
                           if (!fmod && r != 0 && ((r < 0) != (b < 0)))
                             r = wrapAdd(r, b);
                           return r;
                         } else {
                           C r = std::fmod(a, b);
                           if (!fmod && r != 0 && ((r < 0) != (b < 0)))
                             r += b;
                           return r;
                         }
                       });
}

/// Pow: the result has the base's type; the exponent may be another type.
Status powKernel(KernelCall &call) {
  const Tensor &x = *call.input(0), &y = *call.input(1);
  Broadcast bc;
  LLMC_RETURN_IF_ERROR(Broadcast::make(call, {&x.shape(), &y.shape()}, bc));
  return visitNumeric(x.dtype(), [&](auto xtag) -> Status {
    using TX = typename decltype(xtag)::type;
    return visitNumeric(y.dtype(), [&](auto ytag) -> Status {
      using TY = typename decltype(ytag)::type;
      Tensor &out = call.outputs[0];
      LLMC_RETURN_IF_ERROR(Tensor::allocate(x.dtype(), bc.out, out));
      const TX *px = x.data<TX>();
      const TY *py = y.data<TY>();
      TX *po = out.mutableData<TX>();
      bc.forEach<2>(*call.pool, [&](int64_t o, const std::array<int64_t, 2> &in) {
        auto base = Num<TX>::load(px[in[0]]);
        auto exponent = Num<TY>::load(py[in[1]]);
        using CX = decltype(base);
        if constexpr (std::is_integral_v<CX> && std::is_integral_v<decltype(exponent)>) {
          // Integer power by squaring, wrapping like the other integer ops.
          CX result = 1, b = base;
          if (exponent < 0) {
            result = (base == 1) ? 1 : (base == CX(-1) ? ((exponent % 2) ? CX(-1) : 1) : 0);
          } else {
            for (uint64_t e = uint64_t(exponent); e; e >>= 1) {
              if (e & 1)
                result = wrapMul(result, b);
              b = wrapMul(b, b);
            }
          }
          po[o] = result;
        } else if constexpr (std::is_integral_v<CX>) {
          double r = std::pow(double(base), double(exponent));
          po[o] = std::isfinite(r) && r >= double(std::numeric_limits<CX>::min()) &&
                          r <= double(std::numeric_limits<CX>::max())
                      ? CX(r)
                      : CX(0);
        } else {
          po[o] = Num<TX>::store(CX(std::pow(base, CX(exponent))));
        }
      });
      return Status::ok();
    });
  });
}

/// A boolean output of a comparison of numeric or bool operands.
template <typename Cmp> Status compare(KernelCall &call, Cmp cmp) {
  const Tensor &a = *call.input(0), &b = *call.input(1);
  if (a.dtype() != b.dtype())
    return call.fail("operands have different element types: " + a.describe() + " and " +
                     b.describe());
  Broadcast bc;
  LLMC_RETURN_IF_ERROR(Broadcast::make(call, {&a.shape(), &b.shape()}, bc));
  Tensor &out = call.outputs[0];
  LLMC_RETURN_IF_ERROR(Tensor::allocate(DType::Bool, bc.out, out));
  uint8_t *po = out.mutableData<uint8_t>();
  auto run = [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    const T *pa = a.data<T>(), *pb = b.data<T>();
    bc.forEach<2>(*call.pool, [&](int64_t o, const std::array<int64_t, 2> &in) {
      po[o] = cmp(Num<T>::load(pa[in[0]]), Num<T>::load(pb[in[1]])) ? 1 : 0;
    });
    return Status::ok();
  };
  if (a.dtype() == DType::Bool)
    return run(Tag<uint8_t>{});
  return visitNumeric(a.dtype(), run);
}

Status equalKernel(KernelCall &call) { return compare(call, [](auto a, auto b) { return a == b; }); }
Status lessKernel(KernelCall &call) { return compare(call, [](auto a, auto b) { return a < b; }); }
Status lessOrEqualKernel(KernelCall &call) {
  return compare(call, [](auto a, auto b) { return a <= b; });
}
Status greaterKernel(KernelCall &call) { return compare(call, [](auto a, auto b) { return a > b; }); }
Status greaterOrEqualKernel(KernelCall &call) {
  return compare(call, [](auto a, auto b) { return a >= b; });
}

template <typename Op> Status logical(KernelCall &call, Op op) {
  const Tensor &a = *call.input(0), &b = *call.input(1);
  if (a.dtype() != DType::Bool || b.dtype() != DType::Bool)
    return call.fail("operands must be bool");
  Broadcast bc;
  LLMC_RETURN_IF_ERROR(Broadcast::make(call, {&a.shape(), &b.shape()}, bc));
  Tensor &out = call.outputs[0];
  LLMC_RETURN_IF_ERROR(Tensor::allocate(DType::Bool, bc.out, out));
  const uint8_t *pa = a.data<uint8_t>(), *pb = b.data<uint8_t>();
  uint8_t *po = out.mutableData<uint8_t>();
  bc.forEach<2>(*call.pool, [&](int64_t o, const std::array<int64_t, 2> &in) {
    po[o] = op(pa[in[0]] != 0, pb[in[1]] != 0) ? 1 : 0;
  });
  return Status::ok();
}

Status andKernel(KernelCall &call) { return logical(call, [](bool a, bool b) { return a && b; }); }
Status orKernel(KernelCall &call) { return logical(call, [](bool a, bool b) { return a || b; }); }
Status xorKernel(KernelCall &call) { return logical(call, [](bool a, bool b) { return a != b; }); }

//===----------------------------------------------------------------------===//
// Variadic: Min, Max, Sum, Mean
//===----------------------------------------------------------------------===//

template <typename Op> Status variadic(KernelCall &call, Op op, bool mean) {
  if (call.inputs.empty())
    return call.fail("needs at least one input");
  Tensor acc = *call.input(0);
  for (size_t k = 1; k < call.inputs.size(); ++k) {
    Tensor next;
    LLMC_RETURN_IF_ERROR(binaryNumeric(call, acc, *call.input(k), next, op));
    acc = next;
  }
  if (call.inputs.size() == 1) {
    // A copy, so that the result owns its storage like every other case.
    Tensor copy;
    LLMC_RETURN_IF_ERROR(Tensor::allocate(acc.dtype(), acc.shape(), copy));
    std::memcpy(copy.mutableRaw(), acc.raw(), acc.bytes());
    acc = copy;
  }
  if (mean && call.inputs.size() > 1) {
    double n = double(call.inputs.size());
    LLMC_RETURN_IF_ERROR(visitNumeric(acc.dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      T *p = acc.mutableData<T>();
      for (int64_t i = 0; i < acc.numel(); ++i) {
        auto v = Num<T>::load(p[i]);
        p[i] = Num<T>::store(decltype(v)(v / decltype(v)(n)));
      }
      return Status::ok();
    }));
  }
  call.outputs[0] = acc;
  return Status::ok();
}

template <typename C> C nanMin(C a, C b) {
  if constexpr (!std::is_integral_v<C>)
    if (std::isnan(a) || std::isnan(b))
      return std::numeric_limits<C>::quiet_NaN();
  return b < a ? b : a;
}
template <typename C> C nanMax(C a, C b) {
  if constexpr (!std::is_integral_v<C>)
    if (std::isnan(a) || std::isnan(b))
      return std::numeric_limits<C>::quiet_NaN();
  return a < b ? b : a;
}

Status minKernel(KernelCall &call) {
  return variadic(call, [](auto a, auto b, bool &) { return nanMin(a, b); }, false);
}
Status maxKernel(KernelCall &call) {
  return variadic(call, [](auto a, auto b, bool &) { return nanMax(a, b); }, false);
}
Status sumKernel(KernelCall &call) {
  return variadic(call, [](auto a, auto b, bool &) { return wrapAdd(a, b); }, false);
}
Status meanKernel(KernelCall &call) {
  return variadic(call, [](auto a, auto b, bool &) { return wrapAdd(a, b); }, true);
}

//===----------------------------------------------------------------------===//
// Where, Clip
//===----------------------------------------------------------------------===//

Status whereKernel(KernelCall &call) {
  const Tensor &c = *call.input(0), &x = *call.input(1), &y = *call.input(2);
  if (c.dtype() != DType::Bool)
    return call.fail("condition must be bool, got " + c.describe());
  if (x.dtype() != y.dtype())
    return call.fail("X and Y have different element types");
  Broadcast bc;
  LLMC_RETURN_IF_ERROR(Broadcast::make(call, {&c.shape(), &x.shape(), &y.shape()}, bc));
  return visitBytes(x.dtype(), [&](auto tag) -> Status {
    using U = typename decltype(tag)::type;
    Tensor &out = call.outputs[0];
    LLMC_RETURN_IF_ERROR(Tensor::allocate(x.dtype(), bc.out, out));
    const uint8_t *pc = c.data<uint8_t>();
    const U *px = x.data<U>(), *py = y.data<U>();
    U *po = out.mutableData<U>();
    bc.forEach<3>(*call.pool, [&](int64_t o, const std::array<int64_t, 3> &in) {
      po[o] = pc[in[0]] ? px[in[1]] : py[in[2]];
    });
    return Status::ok();
  });
}

Status clipKernel(KernelCall &call) {
  const Tensor &x = *call.input(0);
  const Tensor *lo = call.input(1), *hi = call.input(2);
  for (const Tensor *b : {lo, hi})
    if (b && (b->numel() != 1 || b->dtype() != x.dtype()))
      return call.fail("min and max must be scalars of the input's type, got " + b->describe());
  return visitNumeric(x.dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    using C = typename Num<T>::C;
    C l = lo ? Num<T>::load(lo->data<T>()[0]) : std::numeric_limits<C>::lowest();
    C h = hi ? Num<T>::load(hi->data<T>()[0]) : std::numeric_limits<C>::max();
    if constexpr (!std::is_integral_v<C>) {
      if (!lo)
        l = -std::numeric_limits<C>::infinity();
      if (!hi)
        h = std::numeric_limits<C>::infinity();
    }
    Tensor &out = call.outputs[0];
    LLMC_RETURN_IF_ERROR(Tensor::allocate(x.dtype(), x.shape(), out));
    const T *in = x.data<T>();
    T *po = out.mutableData<T>();
    for (int64_t i = 0; i < x.numel(); ++i) {
      C v = Num<T>::load(in[i]);
      // numpy.clip order: max bound applied last; NaN passes through.
      v = v < l ? l : v;
      v = v > h ? h : v;
      po[i] = Num<T>::store(v);
    }
    return Status::ok();
  });
}

//===----------------------------------------------------------------------===//
// Transformer-level activations (llm.gelu, llm.silu, llm.relu, llm.swiglu)
//===----------------------------------------------------------------------===//

Status llmGeluKernel(KernelCall &call) {
  if (call.attrs->getInt("approximate_tanh", 0))
    return unaryFloat(call, [](auto x) { return geluTanh(x); });
  return unaryFloat(call, [](auto x) { return geluErf(x); });
}

Status llmReluKernel(KernelCall &call) {
  if (call.attrs->getInt("squared", 0))
    return unaryFloat(call, [](auto x) { return x > 0 ? x * x : decltype(x)(0); });
  return unaryFloat(call, [](auto x) { return x > 0 ? x : decltype(x)(0); });
}

Status llmSiluKernel(KernelCall &call) {
  return unaryFloat(call, [](auto x) { return x * sigmoid(x); });
}

Status llmSwigluKernel(KernelCall &call) {
  const Tensor &gate = *call.input(0), &up = *call.input(1);
  if (gate.dtype() != up.dtype() || gate.shape() != up.shape())
    return call.fail("gate " + gate.describe() + " and up " + up.describe() +
                     " must have one type and shape");
  return visitFloat(gate.dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    Tensor &y = call.outputs[0];
    LLMC_RETURN_IF_ERROR(Tensor::allocate(gate.dtype(), gate.shape(), y));
    const T *g = gate.data<T>(), *u = up.data<T>();
    T *out = y.mutableData<T>();
    call.pool->parallelFor(gate.numel(), kGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        auto x = Num<T>::load(g[i]);
        out[i] = Num<T>::store(x * sigmoid(x) * Num<T>::load(u[i]));
      }
    });
    return Status::ok();
  });
}

//===----------------------------------------------------------------------===//
// com.microsoft FastGelu, BiasGelu
//===----------------------------------------------------------------------===//

/// y = f(x + bias) where bias (optional) is broadcast along the last dim.
template <typename F> Status biasActivation(KernelCall &call, const Tensor *bias, F f) {
  const Tensor &x = *call.input(0);
  if (bias && (bias->dtype() != x.dtype() || bias->rank() != 1 || x.rank() == 0 ||
               bias->dim(0) != x.dim(x.rank() - 1)))
    return call.fail("bias must be 1-D with the input's last dimension, got " +
                     bias->describe() + " for " + x.describe());
  return visitFloat(x.dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    Tensor &y = call.outputs[0];
    LLMC_RETURN_IF_ERROR(Tensor::allocate(x.dtype(), x.shape(), y));
    const T *in = x.data<T>();
    const T *pb = bias ? bias->data<T>() : nullptr;
    int64_t n = bias ? bias->numel() : 1;
    T *out = y.mutableData<T>();
    call.pool->parallelFor(x.numel(), kGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        auto v = Num<T>::load(in[i]);
        if (pb) // ONNX Runtime rounds the biased value to the element type first
          v = Num<T>::load(Num<T>::store(v + Num<T>::load(pb[i % n])));
        out[i] = Num<T>::store(f(v));
      }
    });
    return Status::ok();
  });
}

Status fastGeluKernel(KernelCall &call) {
  return biasActivation(call, call.input(1), [](auto x) { return geluTanh(x); });
}

Status biasGeluKernel(KernelCall &call) {
  return biasActivation(call, call.input(1), [](auto x) { return geluErf(x); });
}


} // namespace

void addElementwiseKernels(KernelTable &table) {
  table.add("onnx.abs", absKernel);
  table.add("onnx.neg", negKernel);
  table.add("onnx.sign", signKernel);
  table.add("onnx.relu", reluKernel);
  table.add("onnx.identity", identityKernel);
  table.add("onnx.sqrt", sqrtKernel);
  table.add("onnx.reciprocal", reciprocalKernel);
  table.add("onnx.exp", expKernel);
  table.add("onnx.log", logKernel);
  table.add("onnx.tanh", tanhKernel);
  table.add("onnx.erf", erfKernel);
  table.add("onnx.sigmoid", sigmoidKernel);
  table.add("onnx.ceil", ceilKernel);
  table.add("onnx.floor", floorKernel);
  table.add("onnx.round", roundKernel);
  table.add("onnx.sin", sinKernel);
  table.add("onnx.cos", cosKernel);
  table.add("onnx.softplus", softplusKernel);
  table.add("onnx.hard_swish", hardSwishKernel);
  table.add("onnx.mish", mishKernel);
  table.add("onnx.not", notKernel);
  table.add("onnx.gelu", geluKernel);
  table.add("gelu", llmGeluKernel);
  table.add("silu", llmSiluKernel);
  table.add("relu", llmReluKernel);
  table.add("swiglu", llmSwigluKernel);
  table.add("onnx.leaky_relu", leakyReluKernel);
  table.add("onnx.elu", eluKernel);
  table.add("onnx.hard_sigmoid", hardSigmoidKernel);
  table.add("onnx.swish", swishKernel);
  table.add("onnx.is_nan", isNanKernel);
  table.add("onnx.is_inf", isInfKernel);
  table.add("onnx.add", addKernel);
  table.add("onnx.sub", subKernel);
  table.add("onnx.mul", mulKernel);
  table.add("onnx.div", divKernel);
  table.add("onnx.mod", modKernel);
  table.add("onnx.pow", powKernel);
  table.add("onnx.and", andKernel);
  table.add("onnx.or", orKernel);
  table.add("onnx.xor", xorKernel);
  table.add("onnx.equal", equalKernel);
  table.add("onnx.less", lessKernel);
  table.add("onnx.less_or_equal", lessOrEqualKernel);
  table.add("onnx.greater", greaterKernel);
  table.add("onnx.greater_or_equal", greaterOrEqualKernel);
  table.add("onnx.min", minKernel);
  table.add("onnx.max", maxKernel);
  table.add("onnx.sum", sumKernel);
  table.add("onnx.mean", meanKernel);
  table.add("onnx.where", whereKernel);
  table.add("onnx.clip", clipKernel);
  table.add("ms.fast_gelu", fastGeluKernel);
  table.add("ms.bias_gelu", biasGeluKernel);
  table.add("ms.quick_gelu", quickGeluKernel);
}

} // namespace llmc::cpu
