//===- DataMovement.cpp - shape and layout kernels ------------------------===//
//
// Reshape-like operations return views of their input (tensors are
// immutable); the others copy elements without looking at their values, so
// they work for every element type.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/cpu/kernels/Kernels.h"
#include "runtime/src/cpu/kernels/KernelUtil.h"

#include <algorithm>

namespace llmc::cpu {

namespace {

/// Copies through a strided view: out[o] = in[offset + sum(idx_d * stride_d)].
Status stridedCopy(KernelCall &call, const Tensor &in, const Shape &outShape,
                   const Shape &inStrides, int64_t offset, Tensor &out) {
  Broadcast view;
  view.out = outShape;
  view.strides = {inStrides};
  view.count = numElements(outShape);
  if (view.count < 0)
    return call.fail("output shape overflows");
  return visitBytes(in.dtype(), [&](auto tag) -> Status {
    using U = typename decltype(tag)::type;
    LLMC_RETURN_IF_ERROR(Tensor::allocate(in.dtype(), outShape, out));
    const U *src = in.data<U>() + offset;
    U *dst = out.mutableData<U>();
    view.forEach<1>(*call.pool, [&](int64_t o, const std::array<int64_t, 1> &i) {
      dst[o] = src[i[0]];
    });
    return Status::ok();
  });
}

Status reshapeKernel(KernelCall &call) {
  const Tensor &data = *call.input(0);
  Shape spec;
  LLMC_RETURN_IF_ERROR(readInts(call, *call.input(1), spec, "shape"));
  bool allowZero = call.attrs->getInt("allowzero", 0) != 0;
  Shape out(spec.size());
  int64_t known = 1, inferAt = -1;
  for (size_t i = 0; i < spec.size(); ++i) {
    int64_t v = spec[i];
    if (v == -1) {
      if (inferAt >= 0)
        return call.fail("shape has more than one -1");
      inferAt = int64_t(i);
      continue;
    }
    if (v == 0 && !allowZero) {
      if (int64_t(i) >= data.rank())
        return call.fail("shape entry 0 at position " + std::to_string(i) +
                         " has no input dimension to copy (input " + data.describe() + ")");
      v = data.dim(int64_t(i));
    } else if (v < 0) {
      return call.fail("invalid shape entry " + std::to_string(v));
    }
    out[i] = v;
    if (__builtin_mul_overflow(known, v, &known))
      return call.fail("shape overflows");
  }
  if (inferAt >= 0) {
    if (known == 0 || data.numel() % known != 0)
      return call.fail("cannot reshape " + data.describe() + " to " + shapeString(spec));
    out[size_t(inferAt)] = data.numel() / known;
  } else if (known != data.numel()) {
    return call.fail("cannot reshape " + data.describe() + " to " + shapeString(spec));
  }
  call.outputs[0] = data.view(out);
  return Status::ok();
}

Status flattenKernel(KernelCall &call) {
  const Tensor &x = *call.input(0);
  int64_t axis = call.attrs->getInt("axis", 1);
  if (axis < -x.rank() || axis > x.rank())
    return call.fail("axis " + std::to_string(axis) + " is out of range");
  if (axis < 0)
    axis += x.rank();
  int64_t outer = 1;
  for (int64_t i = 0; i < axis; ++i)
    outer *= x.dim(i);
  call.outputs[0] = x.view({outer, outer ? x.numel() / outer : 0});
  if (outer == 0) { // the inner product still counts
    int64_t inner = 1;
    for (int64_t i = axis; i < x.rank(); ++i)
      inner *= x.dim(i);
    call.outputs[0] = x.view({0, inner});
  }
  return Status::ok();
}

Status squeezeKernel(KernelCall &call) {
  const Tensor &x = *call.input(0);
  InlineVector<bool, 8> drop(size_t(x.rank()), false);
  if (call.has(1)) {
    Shape axes;
    LLMC_RETURN_IF_ERROR(readInts(call, *call.input(1), axes, "axes"));
    for (int64_t a : axes) {
      LLMC_RETURN_IF_ERROR(normalizeAxis(call, a, x.rank()));
      if (x.dim(a) != 1)
        return call.fail("cannot squeeze dimension " + std::to_string(a) + " of " + x.describe());
      drop[size_t(a)] = true;
    }
  } else {
    for (int64_t i = 0; i < x.rank(); ++i)
      drop[size_t(i)] = x.dim(i) == 1;
  }
  Shape out;
  for (int64_t i = 0; i < x.rank(); ++i)
    if (!drop[size_t(i)])
      out.push_back(x.dim(i));
  call.outputs[0] = x.view(out);
  return Status::ok();
}

Status unsqueezeKernel(KernelCall &call) {
  const Tensor &x = *call.input(0);
  Shape axes;
  LLMC_RETURN_IF_ERROR(readInts(call, *call.input(1), axes, "axes"));
  int64_t rank = x.rank() + int64_t(axes.size());
  InlineVector<bool, 8> inserted(size_t(rank), false);
  for (int64_t a : axes) {
    LLMC_RETURN_IF_ERROR(normalizeAxis(call, a, rank));
    if (inserted[size_t(a)])
      return call.fail("axis " + std::to_string(a) + " is repeated");
    inserted[size_t(a)] = true;
  }
  Shape out;
  int64_t k = 0;
  for (int64_t i = 0; i < rank; ++i)
    out.push_back(inserted[size_t(i)] ? 1 : x.dim(k++));
  call.outputs[0] = x.view(out);
  return Status::ok();
}

Status transposeKernel(KernelCall &call) {
  const Tensor &x = *call.input(0);
  Shape perm;
  if (const std::vector<int64_t> *p = call.attrs->getInts("perm"))
    perm = *p;
  else
    for (int64_t i = x.rank() - 1; i >= 0; --i)
      perm.push_back(i);
  if (int64_t(perm.size()) != x.rank())
    return call.fail("perm does not match rank " + std::to_string(x.rank()));
  Shape in = stridesOf(x.shape()), outShape, strides;
  uint64_t seen = 0; // (no allocation: a compiled model calls this each step)
  for (int64_t p : perm) {
    if (p < 0 || p >= x.rank() || p >= 64 || (seen >> p & 1))
      return call.fail("invalid perm: not a permutation of 0 .. " + std::to_string(x.rank() - 1));
    seen |= uint64_t(1) << p;
    outShape.push_back(x.dim(p));
    strides.push_back(in[size_t(p)]);
  }
  return stridedCopy(call, x, outShape, strides, 0, call.outputs[0]);
}

Status concatKernel(KernelCall &call) {
  const Tensor &first = *call.input(0);
  int64_t axis = call.attrs->getInt("axis", 0);
  LLMC_RETURN_IF_ERROR(normalizeAxis(call, axis, first.rank()));
  Shape out = first.shape();
  out[size_t(axis)] = 0;
  for (const Tensor *t : call.inputs) {
    if (t->dtype() != first.dtype() || t->rank() != first.rank())
      return call.fail("inputs differ in type or rank: " + first.describe() + " and " +
                       t->describe());
    for (int64_t d = 0; d < t->rank(); ++d)
      if (d != axis && t->dim(d) != first.dim(d))
        return call.fail("inputs differ in dimension " + std::to_string(d) + ": " +
                         first.describe() + " and " + t->describe());
    out[size_t(axis)] += t->dim(axis);
  }
  Tensor &y = call.outputs[0];
  LLMC_RETURN_IF_ERROR(Tensor::allocate(first.dtype(), out, y));
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d)
    outer *= out[size_t(d)];
  for (int64_t d = axis + 1; d < int64_t(out.size()); ++d)
    inner *= out[size_t(d)];
  size_t es = storageSize(first.dtype());
  size_t rowBytes = size_t(out[size_t(axis)] * inner) * es;
  char *dst = static_cast<char *>(y.mutableRaw());
  size_t offset = 0;
  for (const Tensor *t : call.inputs) {
    size_t chunk = size_t(t->dim(axis) * inner) * es;
    const char *src = static_cast<const char *>(t->raw());
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(dst + size_t(o) * rowBytes + offset, src + size_t(o) * chunk, chunk);
    offset += chunk;
  }
  return Status::ok();
}

Status splitKernel(KernelCall &call) {
  const Tensor &x = *call.input(0);
  int64_t axis = call.attrs->getInt("axis", 0);
  LLMC_RETURN_IF_ERROR(normalizeAxis(call, axis, x.rank()));
  size_t n = call.outputs.size();
  int64_t d = x.dim(axis);
  Shape sizes;
  if (call.has(1)) {
    LLMC_RETURN_IF_ERROR(readInts(call, *call.input(1), sizes, "split"));
    int64_t total = 0;
    for (int64_t s : sizes) {
      if (s < 0)
        return call.fail("split sizes must be >= 0");
      total += s;
    }
    if (sizes.size() != n || total != d)
      return call.fail("split sizes " + shapeString(sizes) + " do not divide dimension " +
                       std::to_string(d) + " into " + std::to_string(n) + " outputs");
  } else {
    int64_t chunk = (d + int64_t(n) - 1) / int64_t(n);
    for (size_t i = 0; i < n; ++i)
      sizes.push_back(std::max<int64_t>(0, std::min(chunk, d - chunk * int64_t(i))));
  }
  Shape strides = stridesOf(x.shape());
  int64_t start = 0;
  for (size_t i = 0; i < n; ++i) {
    Shape shape = x.shape();
    shape[size_t(axis)] = sizes[i];
    LLMC_RETURN_IF_ERROR(
        stridedCopy(call, x, shape, strides, start * strides[size_t(axis)], call.outputs[i]));
    start += sizes[i];
  }
  return Status::ok();
}

Status sliceKernel(KernelCall &call) {
  const Tensor &x = *call.input(0);
  Shape starts, ends, axes, steps;
  LLMC_RETURN_IF_ERROR(readInts(call, *call.input(1), starts, "starts"));
  LLMC_RETURN_IF_ERROR(readInts(call, *call.input(2), ends, "ends"));
  if (call.has(3)) {
    LLMC_RETURN_IF_ERROR(readInts(call, *call.input(3), axes, "axes"));
  } else {
    for (size_t i = 0; i < starts.size(); ++i)
      axes.push_back(int64_t(i));
  }
  if (call.has(4))
    LLMC_RETURN_IF_ERROR(readInts(call, *call.input(4), steps, "steps"));
  else
    steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() ||
      steps.size() != starts.size())
    return call.fail("starts, ends, axes and steps differ in length");
  Shape outShape = x.shape(), inStrides = stridesOf(x.shape()), strides = inStrides;
  int64_t offset = 0;
  InlineVector<bool, 8> seen(size_t(x.rank()), false);
  for (size_t i = 0; i < starts.size(); ++i) {
    int64_t a = axes[i];
    LLMC_RETURN_IF_ERROR(normalizeAxis(call, a, x.rank()));
    if (seen[size_t(a)])
      return call.fail("axis " + std::to_string(a) + " is repeated");
    seen[size_t(a)] = true;
    int64_t dim = x.dim(a), step = steps[i], s = starts[i], e = ends[i];
    if (step == 0)
      return call.fail("step must not be 0");
    // ONNX clamping: negative indices count from the end.
    if (s < 0)
      s = s < -dim ? -1 : s + dim;
    if (e < 0)
      e = e < -dim ? -1 : e + dim;
    int64_t count;
    if (step > 0) {
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      count = e <= s ? 0 : int64_t(1 + uint64_t(e - s - 1) / uint64_t(step));
    } else {
      s = std::clamp<int64_t>(s, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      uint64_t stride = uint64_t(0) - uint64_t(step);
      count = s <= e ? 0 : int64_t(1 + uint64_t(s - e - 1) / stride);
    }
    outShape[size_t(a)] = count;
    if (count > 0) {
      offset += s * inStrides[size_t(a)];
      strides[size_t(a)] = inStrides[size_t(a)] * step;
    }
  }
  return stridedCopy(call, x, outShape, strides, offset, call.outputs[0]);
}

Status expandKernel(KernelCall &call) {
  const Tensor &x = *call.input(0);
  Shape shape;
  LLMC_RETURN_IF_ERROR(readInts(call, *call.input(1), shape, "shape"));
  for (int64_t d : shape)
    if (d < 0)
      return call.fail("shape has a negative entry");
  Broadcast bc;
  LLMC_RETURN_IF_ERROR(Broadcast::make(call, {&x.shape(), &shape}, bc));
  return stridedCopy(call, x, bc.out, bc.strides[0], 0, call.outputs[0]);
}

Status tileKernel(KernelCall &call) {
  const Tensor &x = *call.input(0);
  Shape reps;
  LLMC_RETURN_IF_ERROR(readInts(call, *call.input(1), reps, "repeats"));
  if (int64_t(reps.size()) != x.rank())
    return call.fail("repeats has " + std::to_string(reps.size()) + " entries for rank " +
                     std::to_string(x.rank()));
  Shape out;
  for (int64_t d = 0; d < x.rank(); ++d) {
    int64_t v;
    if (reps[size_t(d)] < 0 || __builtin_mul_overflow(x.dim(d), reps[size_t(d)], &v))
      return call.fail("invalid repeats");
    out.push_back(v);
  }
  Tensor &y = call.outputs[0];
  Shape inStrides = stridesOf(x.shape());
  return visitBytes(x.dtype(), [&](auto tag) -> Status {
    using U = typename decltype(tag)::type;
    LLMC_RETURN_IF_ERROR(Tensor::allocate(x.dtype(), out, y));
    const U *src = x.data<U>();
    U *dst = y.mutableData<U>();
    Shape idx(out.size(), 0);
    for (int64_t o = 0; o < y.numel(); ++o) {
      int64_t in = 0;
      for (size_t d = 0; d < out.size(); ++d)
        in += (idx[d] % x.dim(int64_t(d))) * inStrides[d];
      dst[o] = src[in];
      for (int64_t d = int64_t(out.size()) - 1; d >= 0; --d) {
        if (++idx[size_t(d)] < out[size_t(d)])
          break;
        idx[size_t(d)] = 0;
      }
    }
    return Status::ok();
  });
}

Status shapeKernel(KernelCall &call) {
  const Tensor &x = *call.input(0);
  int64_t rank = x.rank();
  auto clamp = [&](int64_t v) {
    if (v < 0)
      v += rank;
    return std::clamp<int64_t>(v, 0, rank);
  };
  int64_t start = clamp(call.attrs->getInt("start", 0));
  int64_t end = clamp(call.attrs->getInt("end", rank));
  Tensor &y = call.outputs[0];
  LLMC_RETURN_IF_ERROR(Tensor::allocate(DType::Int64, {std::max<int64_t>(0, end - start)}, y));
  for (int64_t i = start; i < end; ++i)
    y.mutableData<int64_t>()[i - start] = x.dim(i);
  return Status::ok();
}

Status sizeKernel(KernelCall &call) {
  Tensor &y = call.outputs[0];
  LLMC_RETURN_IF_ERROR(Tensor::allocate(DType::Int64, {}, y));
  y.mutableData<int64_t>()[0] = call.input(0)->numel();
  return Status::ok();
}

Status constantOfShapeKernel(KernelCall &call) {
  Shape shape;
  LLMC_RETURN_IF_ERROR(readInts(call, *call.input(0), shape, "shape"));
  for (int64_t d : shape)
    if (d < 0)
      return call.fail("shape has a negative entry");
  const Tensor *value = call.attrs->getTensor("value");
  DType type = value ? value->dtype() : DType::Float;
  Tensor &y = call.outputs[0];
  LLMC_RETURN_IF_ERROR(Tensor::allocate(type, shape, y));
  if (!value)
    return Status::ok(); // zero-filled f32
  if (value->numel() != 1)
    return call.fail("value must have one element");
  size_t es = storageSize(type);
  char *dst = static_cast<char *>(y.mutableRaw());
  for (int64_t i = 0; i < y.numel(); ++i)
    std::memcpy(dst + size_t(i) * es, value->raw(), es);
  return Status::ok();
}

Status rangeKernel(KernelCall &call) {
  const Tensor &s = *call.input(0), &l = *call.input(1), &d = *call.input(2);
  for (const Tensor *t : {&s, &l, &d})
    if (t->numel() != 1 || t->dtype() != s.dtype())
      return call.fail("start, limit and delta must be scalars of one type");
  std::optional<int64_t> stash = call.attrs->optInt("stash_type");
  return visitNumeric(s.dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    using C = typename Num<T>::C;
    C start = Num<T>::load(s.data<T>()[0]), limit = Num<T>::load(l.data<T>()[0]),
      delta = Num<T>::load(d.data<T>()[0]);
    if (delta == C(0))
      return call.fail("delta must not be 0");
    double n = std::ceil((double(limit) - double(start)) / double(delta));
    if (!(n < 1e15))
      return call.fail("the range has too many elements");
    int64_t count = int64_t(std::max(0.0, n));
    Tensor &y = call.outputs[0];
    LLMC_RETURN_IF_ERROR(Tensor::allocate(s.dtype(), {count}, y));
    T *out = y.mutableData<T>();
    bool wide = stash && *stash == 1 && (s.dtype() == DType::Float16 || s.dtype() == DType::BFloat16);
    for (int64_t i = 0; i < count; ++i) {
      if constexpr (std::is_integral_v<C>)
        out[i] = T(start + C(i) * delta);
      else if (wide)
        out[i] = Num<T>::store(float(start) + float(i) * float(delta));
      else
        out[i] = Num<T>::store(C(start + C(i) * delta));
    }
    return Status::ok();
  });
}

Status dropoutKernel(KernelCall &call) {
  const Tensor &x = *call.input(0);
  call.outputs[0] = x;
  if (call.outputs.size() > 1) {
    Tensor &mask = call.outputs[1];
    LLMC_RETURN_IF_ERROR(Tensor::allocate(DType::Bool, x.shape(), mask));
    std::memset(mask.mutableRaw(), 1, mask.bytes());
  }
  return Status::ok();
}

Status triluKernel(KernelCall &call) {
  const Tensor &x = *call.input(0);
  if (x.rank() < 2)
    return call.fail("input must have rank >= 2, got " + x.describe());
  int64_t k = 0;
  if (call.has(1))
    LLMC_RETURN_IF_ERROR(readScalarInt(call, *call.input(1), k, "k"));
  bool upper = call.attrs->getInt("upper", 1) != 0;
  int64_t rows = x.dim(x.rank() - 2), cols = x.dim(x.rank() - 1);
  Tensor &y = call.outputs[0];
  return visitBytes(x.dtype(), [&](auto tag) -> Status {
    using U = typename decltype(tag)::type;
    LLMC_RETURN_IF_ERROR(Tensor::allocate(x.dtype(), x.shape(), y));
    const U *src = x.data<U>();
    U *dst = y.mutableData<U>();
    for (int64_t i = 0; i < x.numel(); ++i) {
      int64_t c = i % cols, r = (i / cols) % rows;
      bool keep = upper ? (c - r >= k) : (c - r <= k);
      dst[i] = keep ? src[i] : U(0);
    }
    return Status::ok();
  });
}

} // namespace

void addDataMovementKernels(KernelTable &table) {
  table.add("onnx.reshape", reshapeKernel);
  table.add("onnx.flatten", flattenKernel);
  table.add("onnx.squeeze", squeezeKernel);
  table.add("onnx.unsqueeze", unsqueezeKernel);
  table.add("onnx.transpose", transposeKernel);
  table.add("onnx.concat", concatKernel);
  table.add("onnx.split", splitKernel);
  table.add("onnx.slice", sliceKernel);
  table.add("onnx.expand", expandKernel);
  table.add("onnx.tile", tileKernel);
  table.add("onnx.shape", shapeKernel);
  table.add("onnx.size", sizeKernel);
  table.add("onnx.constant_of_shape", constantOfShapeKernel);
  table.add("onnx.range", rangeKernel);
  table.add("onnx.dropout", dropoutKernel);
  table.add("onnx.trilu", triluKernel);
}

} // namespace llmc::cpu
