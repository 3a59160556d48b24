//===- Indexing.cpp - gathers, scatters, TopK, ArgMax/Min, CumSum ---------===//
//
// Every index read from a tensor is checked against its dimension (negative
// indices count from the end where ONNX allows them); an index out of range
// is an error naming the operation, never an out-of-bounds access.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/cpu/kernels/Kernels.h"
#include "runtime/src/cpu/kernels/KernelUtil.h"

#include <algorithm>
#include <numeric>

namespace llmc::cpu {

namespace {

/// Reads index i of an int32/int64 tensor.
int64_t indexAt(const Tensor &t, int64_t i) {
  return t.dtype() == DType::Int64 ? t.data<int64_t>()[i] : t.data<int32_t>()[i];
}

Status checkIndexType(const KernelCall &call, const Tensor &t) {
  if (t.dtype() != DType::Int64 && t.dtype() != DType::Int32)
    return call.fail("indices must be int32 or int64, got " + t.describe());
  return Status::ok();
}

/// Normalises an index into [0, dim) or fails.
Status normalizeIndex(const KernelCall &call, int64_t &idx, int64_t dim) {
  if (idx < -dim || idx >= dim)
    return call.fail("index " + std::to_string(idx) + " is out of range for a dimension of " +
                     std::to_string(dim));
  if (idx < 0)
    idx += dim;
  return Status::ok();
}

Status gatherKernel(KernelCall &call) {
  const Tensor &data = *call.input(0), &indices = *call.input(1);
  LLMC_RETURN_IF_ERROR(checkIndexType(call, indices));
  int64_t axis = call.attrs->getInt("axis", 0);
  if (data.rank() == 0)
    return call.fail("data must have rank >= 1");
  LLMC_RETURN_IF_ERROR(normalizeAxis(call, axis, data.rank()));
  Shape out(data.shape().begin(), data.shape().begin() + axis);
  out.insert(out.end(), indices.shape().begin(), indices.shape().end());
  out.insert(out.end(), data.shape().begin() + axis + 1, data.shape().end());
  int64_t outer = 1, inner = 1, dim = data.dim(axis);
  for (int64_t d = 0; d < axis; ++d)
    outer *= data.dim(d);
  for (int64_t d = axis + 1; d < data.rank(); ++d)
    inner *= data.dim(d);
  Shape idx(size_t(indices.numel()));
  for (int64_t j = 0; j < indices.numel(); ++j) {
    idx[size_t(j)] = indexAt(indices, j);
    LLMC_RETURN_IF_ERROR(normalizeIndex(call, idx[size_t(j)], dim));
  }
  Tensor &y = call.outputs[0];
  LLMC_RETURN_IF_ERROR(Tensor::allocate(data.dtype(), out, y));
  size_t es = storageSize(data.dtype()), block = size_t(inner) * es;
  const char *src = static_cast<const char *>(data.raw());
  char *dst = static_cast<char *>(y.mutableRaw());
  int64_t n = int64_t(idx.size());
  call.pool->parallelFor(outer * n, 256, [&](int64_t b, int64_t e) {
    for (int64_t k = b; k < e; ++k) {
      int64_t o = k / n, j = k % n;
      std::memcpy(dst + size_t(k) * block, src + size_t(o * dim + idx[size_t(j)]) * block, block);
    }
  });
  return Status::ok();
}

/// llm.embedding: rows of a [vocab, hidden] table; an id outside
/// [0, vocab) is an error (no negative ids, unlike Gather).
Status embeddingKernel(KernelCall &call) {
  const Tensor &table = *call.input(0), &ids = *call.input(1);
  LLMC_RETURN_IF_ERROR(checkIndexType(call, ids));
  if (table.rank() != 2)
    return call.fail("table must be [vocab, hidden], got " + table.describe());
  int64_t vocab = table.dim(0), hidden = table.dim(1);
  for (int64_t j = 0; j < ids.numel(); ++j)
    if (int64_t id = indexAt(ids, j); id < 0 || id >= vocab)
      return call.fail("token id " + std::to_string(id) + " is outside the vocabulary [0, " +
                       std::to_string(vocab) + ")");
  Shape out = ids.shape();
  out.push_back(hidden);
  Tensor &y = call.outputs[0];
  LLMC_RETURN_IF_ERROR(Tensor::allocate(table.dtype(), out, y));
  size_t row = size_t(hidden) * storageSize(table.dtype());
  const char *src = static_cast<const char *>(table.raw());
  char *dst = static_cast<char *>(y.mutableRaw());
  for (int64_t j = 0; j < ids.numel(); ++j)
    std::memcpy(dst + size_t(j) * row, src + size_t(indexAt(ids, j)) * row, row);
  return Status::ok();
}

/// llm.assert_equal: `value` passes through when lhs == rhs elementwise.
Status assertEqualKernel(KernelCall &call) {
  const Tensor &value = *call.input(0), &lhs = *call.input(1), &rhs = *call.input(2);
  LLMC_RETURN_IF_ERROR(checkIndexType(call, lhs));
  LLMC_RETURN_IF_ERROR(checkIndexType(call, rhs));
  int64_t n = std::max(lhs.numel(), rhs.numel());
  if ((lhs.numel() != n && lhs.numel() != 1) || (rhs.numel() != n && rhs.numel() != 1))
    return call.fail("compared tensors " + lhs.describe() + " and " + rhs.describe() +
                     " differ in size");
  for (int64_t i = 0; i < n; ++i) {
    int64_t a = indexAt(lhs, lhs.numel() == 1 ? 0 : i), b = indexAt(rhs, rhs.numel() == 1 ? 0 : i);
    if (a != b)
      return Status::error(call.attrs->getString("message", "assert_equal") + " (" +
                           std::to_string(a) + " != " + std::to_string(b) +
                           (n > 1 ? " at element " + std::to_string(i) : std::string()) + ")");
  }
  call.outputs[0] = value;
  return Status::ok();
}

Status gatherElementsKernel(KernelCall &call) {
  const Tensor &data = *call.input(0), &indices = *call.input(1);
  LLMC_RETURN_IF_ERROR(checkIndexType(call, indices));
  if (data.rank() != indices.rank())
    return call.fail("data and indices must have the same rank");
  int64_t axis = call.attrs->getInt("axis", 0);
  LLMC_RETURN_IF_ERROR(normalizeAxis(call, axis, data.rank()));
  for (int64_t d = 0; d < data.rank(); ++d)
    if (d != axis && indices.dim(d) > data.dim(d))
      return call.fail("indices " + indices.describe() + " exceed data " + data.describe());
  Shape dstr = stridesOf(data.shape());
  Tensor &y = call.outputs[0];
  return visitBytes(data.dtype(), [&](auto tag) -> Status {
    using U = typename decltype(tag)::type;
    LLMC_RETURN_IF_ERROR(Tensor::allocate(data.dtype(), indices.shape(), y));
    const U *src = data.data<U>();
    U *dst = y.mutableData<U>();
    Shape idx(size_t(indices.rank()), 0);
    for (int64_t o = 0; o < indices.numel(); ++o) {
      int64_t at = indexAt(indices, o);
      LLMC_RETURN_IF_ERROR(normalizeIndex(call, at, data.dim(axis)));
      int64_t off = 0;
      for (int64_t d = 0; d < data.rank(); ++d)
        off += (d == axis ? at : idx[size_t(d)]) * dstr[size_t(d)];
      dst[o] = src[off];
      for (int64_t d = indices.rank() - 1; d >= 0; --d) {
        if (++idx[size_t(d)] < indices.dim(d))
          break;
        idx[size_t(d)] = 0;
      }
    }
    return Status::ok();
  });
}

Status gatherNdKernel(KernelCall &call) {
  const Tensor &data = *call.input(0), &indices = *call.input(1);
  LLMC_RETURN_IF_ERROR(checkIndexType(call, indices));
  int64_t b = call.attrs->getInt("batch_dims", 0);
  int64_t r = data.rank(), q = indices.rank();
  if (q < 1 || b < 0 || b >= std::min(r, q))
    return call.fail("batch_dims and ranks do not fit");
  int64_t last = indices.dim(q - 1);
  if (last < 1 || last > r - b)
    return call.fail("the last indices dimension " + std::to_string(last) + " exceeds the data rank");
  for (int64_t d = 0; d < b; ++d)
    if (indices.dim(d) != data.dim(d))
      return call.fail("batch dimensions of data and indices differ");
  Shape out(indices.shape().begin(), indices.shape().end() - 1);
  out.insert(out.end(), data.shape().begin() + b + last, data.shape().end());
  int64_t batch = 1, inner = 1;
  for (int64_t d = 0; d < b; ++d)
    batch *= data.dim(d);
  for (int64_t d = b + last; d < r; ++d)
    inner *= data.dim(d);
  int64_t perBatchIdx = indices.numel() / std::max<int64_t>(1, batch * last) , dataBatch = 1;
  for (int64_t d = b; d < r; ++d)
    dataBatch *= data.dim(d);
  Shape dstr = stridesOf(data.shape());
  Tensor &y = call.outputs[0];
  LLMC_RETURN_IF_ERROR(Tensor::allocate(data.dtype(), out, y));
  size_t es = storageSize(data.dtype()), block = size_t(inner) * es;
  const char *src = static_cast<const char *>(data.raw());
  char *dst = static_cast<char *>(y.mutableRaw());
  for (int64_t bi = 0; bi < batch; ++bi) {
    for (int64_t j = 0; j < perBatchIdx; ++j) {
      int64_t off = 0;
      for (int64_t k = 0; k < last; ++k) {
        int64_t at = indexAt(indices, (bi * perBatchIdx + j) * last + k);
        LLMC_RETURN_IF_ERROR(normalizeIndex(call, at, data.dim(b + k)));
        off += at * dstr[size_t(b + k)];
      }
      std::memcpy(dst + size_t(bi * perBatchIdx + j) * block,
                  src + size_t(bi * dataBatch + off) * es, block);
    }
  }
  return Status::ok();
}

/// dst = combine(dst, src) for the ScatterND/ScatterElements reductions.
template <typename T> Status reduceInto(const KernelCall &call, const std::string &reduction,
                                        T &dst, T src) {
  if (reduction == "none") {
    dst = src;
    return Status::ok();
  }
  auto a = Num<T>::load(dst), b = Num<T>::load(src);
  if (reduction == "add")
    a = a + b;
  else if (reduction == "mul")
    a = a * b;
  else if (reduction == "max")
    a = std::max(a, b);
  else if (reduction == "min")
    a = std::min(a, b);
  else
    return call.fail("unknown reduction '" + reduction + "'");
  dst = Num<T>::store(decltype(a)(a));
  return Status::ok();
}

/// Runs f with the numeric storage type of `t` for a reduction, or with a
/// same-size unsigned type when only assignment is needed.
template <typename F>
Status visitScatter(const KernelCall &call, DType t, const std::string &reduction, F &&f) {
  if (reduction == "none")
    return visitBytes(t, std::forward<F>(f));
  if (!isFloat(t) && !isInteger(t))
    return call.fail("reduction '" + reduction + "' needs a numeric element type");
  return visitNumeric(t, std::forward<F>(f));
}

Status scatterNdKernel(KernelCall &call) {
  const Tensor &data = *call.input(0), &indices = *call.input(1), &updates = *call.input(2);
  LLMC_RETURN_IF_ERROR(checkIndexType(call, indices));
  if (updates.dtype() != data.dtype())
    return call.fail("updates must have the data's type");
  std::string reduction = call.attrs->getString("reduction", "none");
  int64_t q = indices.rank(), r = data.rank();
  if (q < 1)
    return call.fail("indices must have rank >= 1");
  int64_t last = indices.dim(q - 1);
  if (last > r)
    return call.fail("indices address more dimensions than the data has");
  int64_t count = 1, inner = 1;
  for (int64_t d = 0; d < q - 1; ++d)
    count *= indices.dim(d);
  for (int64_t d = last; d < r; ++d)
    inner *= data.dim(d);
  if (updates.numel() != count * inner)
    return call.fail("updates " + updates.describe() + " do not match indices and data");
  Shape dstr = stridesOf(data.shape());
  Tensor &y = call.outputs[0];
  LLMC_RETURN_IF_ERROR(Tensor::allocate(data.dtype(), data.shape(), y));
  std::memcpy(y.mutableRaw(), data.raw(), data.bytes());
  return visitScatter(call, data.dtype(), reduction, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    T *dst = y.mutableData<T>();
    const T *src = updates.data<T>();
    for (int64_t j = 0; j < count; ++j) {
      int64_t off = 0;
      for (int64_t k = 0; k < last; ++k) {
        int64_t at = indexAt(indices, j * last + k);
        LLMC_RETURN_IF_ERROR(normalizeIndex(call, at, data.dim(k)));
        off += at * dstr[size_t(k)];
      }
      for (int64_t i = 0; i < inner; ++i)
        LLMC_RETURN_IF_ERROR(reduceInto(call, reduction, dst[off + i], src[j * inner + i]));
    }
    return Status::ok();
  });
}

Status scatterElementsKernel(KernelCall &call) {
  const Tensor &data = *call.input(0), &indices = *call.input(1), &updates = *call.input(2);
  LLMC_RETURN_IF_ERROR(checkIndexType(call, indices));
  if (updates.dtype() != data.dtype() || updates.shape() != indices.shape() ||
      indices.rank() != data.rank())
    return call.fail("indices and updates must match each other and the data's rank");
  int64_t axis = call.attrs->getInt("axis", 0);
  LLMC_RETURN_IF_ERROR(normalizeAxis(call, axis, data.rank()));
  for (int64_t d = 0; d < data.rank(); ++d)
    if (d != axis && indices.dim(d) > data.dim(d))
      return call.fail("indices exceed the data");
  std::string reduction = call.attrs->getString("reduction", "none");
  Shape dstr = stridesOf(data.shape());
  Tensor &y = call.outputs[0];
  LLMC_RETURN_IF_ERROR(Tensor::allocate(data.dtype(), data.shape(), y));
  std::memcpy(y.mutableRaw(), data.raw(), data.bytes());
  return visitScatter(call, data.dtype(), reduction, [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    T *dst = y.mutableData<T>();
    const T *src = updates.data<T>();
    Shape idx(size_t(indices.rank()), 0);
    for (int64_t o = 0; o < indices.numel(); ++o) {
      int64_t at = indexAt(indices, o);
      LLMC_RETURN_IF_ERROR(normalizeIndex(call, at, data.dim(axis)));
      int64_t off = 0;
      for (int64_t d = 0; d < data.rank(); ++d)
        off += (d == axis ? at : idx[size_t(d)]) * dstr[size_t(d)];
      LLMC_RETURN_IF_ERROR(reduceInto(call, reduction, dst[off], src[o]));
      for (int64_t d = indices.rank() - 1; d >= 0; --d) {
        if (++idx[size_t(d)] < indices.dim(d))
          break;
        idx[size_t(d)] = 0;
      }
    }
    return Status::ok();
  });
}

/// Loops over every 1-D lane along `axis`: f(base offset, stride, lane index).
template <typename F> void forEachLane(const Shape &shape, int64_t axis, F &&f) {
  int64_t outer = 1, inner = 1, dim = shape[size_t(axis)];
  for (int64_t d = 0; d < axis; ++d)
    outer *= shape[size_t(d)];
  for (size_t d = size_t(axis) + 1; d < shape.size(); ++d)
    inner *= shape[d];
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i)
      f(o * dim * inner + i, inner, o * inner + i);
}

Status topKKernel(KernelCall &call) {
  const Tensor &x = *call.input(0);
  int64_t k;
  LLMC_RETURN_IF_ERROR(readScalarInt(call, *call.input(1), k, "K"));
  int64_t axis = call.attrs->getInt("axis", -1);
  LLMC_RETURN_IF_ERROR(normalizeAxis(call, axis, x.rank()));
  if (k < 0 || k > x.dim(axis))
    return call.fail("K = " + std::to_string(k) + " is out of range for " + x.describe());
  bool largest = call.attrs->getInt("largest", 1) != 0;
  Shape out = x.shape();
  out[size_t(axis)] = k;
  Tensor &values = call.outputs[0], &indices = call.outputs[1];
  return visitNumeric(x.dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    LLMC_RETURN_IF_ERROR(Tensor::allocate(x.dtype(), out, values));
    LLMC_RETURN_IF_ERROR(Tensor::allocate(DType::Int64, out, indices));
    const T *in = x.data<T>();
    T *pv = values.mutableData<T>();
    int64_t *pi = indices.mutableData<int64_t>();
    int64_t dim = x.dim(axis);
    Shape order(static_cast<size_t>(dim));
    forEachLane(x.shape(), axis, [&](int64_t base, int64_t stride, int64_t lane) {
      std::iota(order.begin(), order.end(), 0);
      auto value = [&](int64_t j) { return Num<T>::load(in[base + j * stride]); };
      // Ties keep the lower index first.
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
        return largest ? value(a) > value(b) : value(a) < value(b);
      });
      int64_t outer = lane / stride, inner = lane % stride;
      for (int64_t j = 0; j < k; ++j) {
        int64_t o = (outer * k + j) * stride + inner;
        pv[o] = in[base + order[size_t(j)] * stride];
        pi[o] = order[size_t(j)];
      }
    });
    return Status::ok();
  });
}

template <bool Max> Status argReduce(KernelCall &call) {
  const Tensor &x = *call.input(0);
  int64_t axis = call.attrs->getInt("axis", 0);
  LLMC_RETURN_IF_ERROR(normalizeAxis(call, axis, x.rank()));
  bool keep = call.attrs->getInt("keepdims", 1) != 0;
  bool last = call.attrs->getInt("select_last_index", 0) != 0;
  if (x.dim(axis) == 0)
    return call.fail("cannot reduce an empty axis");
  Shape out = x.shape();
  if (keep)
    out[size_t(axis)] = 1;
  else
    out.erase(out.begin() + axis);
  Tensor &y = call.outputs[0];
  return visitNumeric(x.dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    LLMC_RETURN_IF_ERROR(Tensor::allocate(DType::Int64, out, y));
    const T *in = x.data<T>();
    int64_t *py = y.mutableData<int64_t>();
    int64_t dim = x.dim(axis);
    forEachLane(x.shape(), axis, [&](int64_t base, int64_t stride, int64_t lane) {
      int64_t best = 0;
      auto bv = Num<T>::load(in[base]);
      for (int64_t j = 1; j < dim; ++j) {
        auto v = Num<T>::load(in[base + j * stride]);
        bool better = Max ? (last ? v >= bv : v > bv) : (last ? v <= bv : v < bv);
        if (better) {
          best = j;
          bv = v;
        }
      }
      py[lane] = best;
    });
    return Status::ok();
  });
}

Status cumSumKernel(KernelCall &call) {
  const Tensor &x = *call.input(0);
  int64_t axis;
  LLMC_RETURN_IF_ERROR(readScalarInt(call, *call.input(1), axis, "axis"));
  LLMC_RETURN_IF_ERROR(normalizeAxis(call, axis, x.rank()));
  bool exclusive = call.attrs->getInt("exclusive", 0) != 0;
  bool reverse = call.attrs->getInt("reverse", 0) != 0;
  Tensor &y = call.outputs[0];
  return visitNumeric(x.dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    LLMC_RETURN_IF_ERROR(Tensor::allocate(x.dtype(), x.shape(), y));
    const T *in = x.data<T>();
    T *out = y.mutableData<T>();
    int64_t dim = x.dim(axis);
    forEachLane(x.shape(), axis, [&](int64_t base, int64_t stride, int64_t) {
      typename Num<T>::C acc = 0;
      for (int64_t step = 0; step < dim; ++step) {
        int64_t j = reverse ? dim - 1 - step : step;
        auto v = Num<T>::load(in[base + j * stride]);
        if (exclusive) {
          out[base + j * stride] = Num<T>::store(acc);
          acc = acc + v;
        } else {
          acc = acc + v;
          out[base + j * stride] = Num<T>::store(acc);
        }
      }
    });
    return Status::ok();
  });
}

} // namespace

void addIndexingKernels(KernelTable &table) {
  table.add("onnx.gather", gatherKernel);
  table.add("embedding", embeddingKernel);
  table.add("assert_equal", assertEqualKernel);
  table.add("onnx.gather_elements", gatherElementsKernel);
  table.add("onnx.gather_nd", gatherNdKernel);
  table.add("onnx.scatter_nd", scatterNdKernel);
  table.add("onnx.scatter_elements", scatterElementsKernel);
  table.add("onnx.top_k", topKKernel);
  table.add("onnx.arg_max", argReduce<true>);
  table.add("onnx.arg_min", argReduce<false>);
  table.add("onnx.cum_sum", cumSumKernel);
}

} // namespace llmc::cpu
