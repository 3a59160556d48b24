//===- Reductions.cpp - Reduce{Mean,Sum,Max,Min,Prod,L2,SumSquare} --------===//
//
// Floating-point reductions accumulate in double, integer ones in 64 bits.
// An empty reduction gives the operation's identity (0, 1, -inf/+inf).
//
//===----------------------------------------------------------------------===//
#include "runtime/src/cpu/kernels/Kernels.h"
#include "runtime/src/cpu/kernels/KernelUtil.h"

#include <algorithm>

namespace llmc::cpu {

namespace {

enum class ReduceKind { Mean, Sum, Max, Min, Prod, L2, SumSquare };

template <ReduceKind K> Status reduceKernel(KernelCall &call) {
  const Tensor &x = *call.input(0);
  bool keep = call.attrs->getInt("keepdims", 1) != 0;
  bool noop = call.attrs->getInt("noop_with_empty_axes", 0) != 0;
  Shape axes;
  if (call.has(1))
    LLMC_RETURN_IF_ERROR(readInts(call, *call.input(1), axes, "axes"));
  if (axes.empty() && noop) {
    call.outputs[0] = x;
    return Status::ok();
  }
  InlineVector<bool, 8> reduced(size_t(x.rank()), axes.empty());
  for (int64_t a : axes) {
    LLMC_RETURN_IF_ERROR(normalizeAxis(call, a, x.rank(), "reduction axis"));
    if (reduced[size_t(a)])
      return call.fail("reduction axis " + std::to_string(a) + " is repeated");
    reduced[size_t(a)] = true;
  }
  Shape outShape, kept; // kept: the output shape with reduced dims as 1
  int64_t count = 1;
  for (int64_t d = 0; d < x.rank(); ++d) {
    bool r = reduced[size_t(d)];
    kept.push_back(r ? 1 : x.dim(d));
    if (r)
      count *= x.dim(d);
    if (!r || keep)
      outShape.push_back(r ? 1 : x.dim(d));
  }
  // Strides of the output (over the input's dims, 0 on reduced ones).
  Shape keptStrides = stridesOf(kept), outStrides(kept.size());
  for (size_t d = 0; d < kept.size(); ++d)
    outStrides[d] = reduced[d] ? 0 : keptStrides[d];
  Broadcast walk;
  walk.out = x.shape();
  walk.strides = {outStrides};
  walk.count = x.numel();
  Tensor &y = call.outputs[0];
  auto run = [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    using C = typename Num<T>::C;
    using Acc = std::conditional_t<
        std::is_integral_v<C>, std::conditional_t<std::is_unsigned_v<C>, uint64_t, int64_t>,
        double>;
    if constexpr (std::is_integral_v<C>)
      if (K == ReduceKind::L2 || K == ReduceKind::Mean)
        if (count == 0)
          return call.fail("cannot average an empty reduction of integers");
    LLMC_RETURN_IF_ERROR(Tensor::allocate(x.dtype(), outShape, y));
    Acc identity = 0;
    if (K == ReduceKind::Prod)
      identity = 1;
    // (Separate branches: a ?: would pass int64's max through a double,
    // which rounds it to 2^63, out of range.)
    else if (K == ReduceKind::Max) {
      if constexpr (std::is_integral_v<C>)
        identity = Acc(std::numeric_limits<C>::lowest());
      else
        identity = -std::numeric_limits<double>::infinity();
    } else if (K == ReduceKind::Min) {
      if constexpr (std::is_integral_v<C>)
        identity = Acc(std::numeric_limits<C>::max());
      else
        identity = std::numeric_limits<double>::infinity();
    }
    Acc *acc = threadScratch<Acc>(kScratchAcc, y.numel());
    std::fill(acc, acc + y.numel(), identity);
    const T *in = x.data<T>();
    walk.forRange<1>(0, x.numel(), [&](int64_t i, const std::array<int64_t, 1> &o) {
      Acc v = Acc(Num<T>::load(in[i]));
      Acc &a = acc[o[0]];
      // Integers wrap around (in unsigned arithmetic: signed overflow is UB).
      auto add = [](Acc x, Acc y) -> Acc {
        if constexpr (std::is_integral_v<Acc>)
          return Acc(uint64_t(x) + uint64_t(y));
        else
          return x + y;
      };
      auto mul = [](Acc x, Acc y) -> Acc {
        if constexpr (std::is_integral_v<Acc>)
          return Acc(uint64_t(x) * uint64_t(y));
        else
          return x * y;
      };
      switch (K) {
      case ReduceKind::Mean: case ReduceKind::Sum: a = add(a, v); break;
      case ReduceKind::Prod: a = mul(a, v); break;
      case ReduceKind::L2: case ReduceKind::SumSquare: a = add(a, mul(v, v)); break;
      case ReduceKind::Max:
        if constexpr (!std::is_integral_v<Acc>)
          if (std::isnan(v) || std::isnan(a)) {
            a = std::numeric_limits<double>::quiet_NaN();
            break;
          }
        a = std::max(a, v);
        break;
      case ReduceKind::Min:
        if constexpr (!std::is_integral_v<Acc>)
          if (std::isnan(v) || std::isnan(a)) {
            a = std::numeric_limits<double>::quiet_NaN();
            break;
          }
        a = std::min(a, v);
        break;
      }
    });
    T *out = y.mutableData<T>();
    for (int64_t i = 0; i < y.numel(); ++i) {
      Acc a = acc[size_t(i)];
      if (K == ReduceKind::Mean)
        a = count ? Acc(a / Acc(count)) : Acc(NAN);
      if constexpr (!std::is_integral_v<Acc>)
        if (K == ReduceKind::L2)
          a = std::sqrt(a);
      if constexpr (std::is_integral_v<Acc>)
        if (K == ReduceKind::L2)
          a = Acc(std::sqrt(double(a)));
      out[i] = Num<T>::store(C(a));
    }
    return Status::ok();
  };
  // bool reduces as 0/1 under max (any) and min (all).
  if (x.dtype() == DType::Bool && (K == ReduceKind::Max || K == ReduceKind::Min))
    return run(Tag<uint8_t>{});
  return visitNumeric(x.dtype(), run);
}

} // namespace

void addReductionKernels(KernelTable &table) {
  table.add("onnx.reduce_mean", reduceKernel<ReduceKind::Mean>);
  table.add("onnx.reduce_sum", reduceKernel<ReduceKind::Sum>);
  table.add("onnx.reduce_max", reduceKernel<ReduceKind::Max>);
  table.add("onnx.reduce_min", reduceKernel<ReduceKind::Min>);
  table.add("onnx.reduce_prod", reduceKernel<ReduceKind::Prod>);
  table.add("onnx.reduce_l2", reduceKernel<ReduceKind::L2>);
  table.add("onnx.reduce_sum_square", reduceKernel<ReduceKind::SumSquare>);
}

} // namespace llmc::cpu
