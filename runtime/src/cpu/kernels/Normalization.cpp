//===- Normalization.cpp - softmax and the layer/RMS normalisations -------===//
//
// Statistics (max, sums, mean, variance) are computed in double whatever the
// element type; results are rounded to the element type once. The
// normalised block is [axis, rank); scale and bias broadcast over it.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/cpu/kernels/Kernels.h"
#include "runtime/src/cpu/kernels/KernelUtil.h"
#include "runtime/src/cpu/SoftmaxLine.h"
#include "runtime/src/cpu/Scratch.h"

#include <algorithm>

namespace llmc::cpu {

namespace {

template <bool Log> Status softmaxKernel(KernelCall &call) {
  const Tensor &x = *call.input(0);
  int64_t axis = call.attrs->getInt("axis", -1);
  LLMC_RETURN_IF_ERROR(normalizeAxis(call, axis, x.rank()));
  int64_t dim = x.dim(axis), inner = 1;
  for (int64_t d = axis + 1; d < x.rank(); ++d)
    inner *= x.dim(d);
  int64_t lanes = dim ? x.numel() / dim : 0;
  Tensor &y = call.outputs[0];
  return visitFloat(x.dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    LLMC_RETURN_IF_ERROR(Tensor::allocate(x.dtype(), x.shape(), y));
    const T *in = x.data<T>();
    T *out = y.mutableData<T>();
    call.pool->parallelFor(lanes, 64, [&](int64_t l0, int64_t l1) {
      for (int64_t lane = l0; lane < l1; ++lane) {
        int64_t base = (lane / inner) * dim * inner + lane % inner;
        softmaxLine(
            dim, Log, [&](int64_t j) { return double(Num<T>::load(in[base + j * inner])); },
            [&](int64_t j, double v) {
              out[base + j * inner] = Num<T>::store(typename Num<T>::C(v));
            });
      }
    });
    return Status::ok();
  });
}

/// Checks that `p` (scale or bias) broadcasts over the normalised block and
/// returns its element strides over that block.
Status paramStrides(const KernelCall &call, const Tensor &p, const Shape &block, Shape &strides,
                    const char *what) {
  if (p.rank() > int64_t(block.size()))
    return call.fail(std::string(what) + " " + p.describe() + " has more dimensions than the " +
                     "normalised block " + shapeString(block));
  Broadcast bc;
  LLMC_RETURN_IF_ERROR(Broadcast::make(call, {&block, &p.shape()}, bc));
  if (bc.out != block)
    return call.fail(std::string(what) + " " + p.describe() + " does not broadcast to " +
                     shapeString(block));
  strides = bc.strides[1];
  return Status::ok();
}

/// The shared core: per row of `cols` elements, optional residual sum,
/// mean-centring (layer norm) or not (RMS norm), scale and bias.
struct NormRequest {
  const Tensor *x, *skip = nullptr, *residualBias = nullptr, *scale = nullptr, *bias = nullptr;
  int64_t axis;
  double epsilon;
  bool centre;           // layer norm (true) or RMS norm (false)
  double scaleOffset = 0; // Gemma-style (1 + w)
  Tensor *y = nullptr, *mean = nullptr, *invStd = nullptr, *sum = nullptr;
};

Status normalize(KernelCall &call, NormRequest r) {
  const Tensor &x = *r.x;
  int64_t axis = r.axis;
  LLMC_RETURN_IF_ERROR(normalizeAxis(call, axis, x.rank()));
  Shape block(x.shape().begin() + axis, x.shape().end());
  Shape statsShape = x.shape();
  for (int64_t d = axis; d < x.rank(); ++d)
    statsShape[size_t(d)] = 1;
  int64_t cols = numElements(block), rows = cols ? x.numel() / cols : 0;
  Shape scaleStrides, biasStrides, blockStrides = stridesOf(block);
  if (r.scale)
    LLMC_RETURN_IF_ERROR(paramStrides(call, *r.scale, block, scaleStrides, "scale"));
  if (r.bias)
    LLMC_RETURN_IF_ERROR(paramStrides(call, *r.bias, block, biasStrides, "bias"));
  for (const Tensor *p : {r.scale, r.bias, r.residualBias})
    if (p && p->dtype() != x.dtype())
      return call.fail("parameters must have the input's type " + std::string(dtypeName(x.dtype())));
  if (r.residualBias && (r.residualBias->rank() != 1 || r.residualBias->numel() != cols))
    return call.fail("bias must be [" + std::to_string(cols) + "]");
  // The skip input broadcasts to the input (e.g. [S, H] against [B, S, H]).
  Broadcast skipBc;
  if (r.skip) {
    if (r.skip->dtype() != x.dtype())
      return call.fail("skip must have the input's type");
    LLMC_RETURN_IF_ERROR(Broadcast::make(call, {&x.shape(), &r.skip->shape()}, skipBc));
    if (skipBc.out != x.shape())
      return call.fail("skip " + r.skip->describe() + " does not broadcast to " + x.describe());
  }
  // Offsets of parameter elements for each column of the block.
  int64_t *scaleAt = threadScratch<int64_t>(kScratchIndex, cols);
  int64_t *biasAt = threadScratch<int64_t>(kScratchIndex2, cols);
  for (int64_t c = 0; c < cols; ++c) {
    scaleAt[c] = biasAt[c] = 0;
    int64_t rest = c;
    for (int64_t d = int64_t(block.size()) - 1; d >= 0; --d) {
      int64_t i = block[size_t(d)] ? rest % block[size_t(d)] : 0;
      rest = block[size_t(d)] ? rest / block[size_t(d)] : 0;
      if (r.scale)
        scaleAt[size_t(c)] += i * scaleStrides[size_t(d)];
      if (r.bias)
        biasAt[size_t(c)] += i * biasStrides[size_t(d)];
    }
  }
  return visitFloat(x.dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    LLMC_RETURN_IF_ERROR(Tensor::allocate(x.dtype(), x.shape(), *r.y));
    if (r.mean)
      LLMC_RETURN_IF_ERROR(Tensor::allocate(DType::Float, statsShape, *r.mean));
    if (r.invStd)
      LLMC_RETURN_IF_ERROR(Tensor::allocate(DType::Float, statsShape, *r.invStd));
    if (r.sum)
      LLMC_RETURN_IF_ERROR(Tensor::allocate(x.dtype(), x.shape(), *r.sum));
    const T *in = x.data<T>();
    const T *sk = r.skip ? r.skip->data<T>() : nullptr;
    const T *rb = r.residualBias ? r.residualBias->data<T>() : nullptr;
    const T *sc = r.scale ? r.scale->data<T>() : nullptr;
    const T *bi = r.bias ? r.bias->data<T>() : nullptr;
    T *out = r.y->mutableData<T>();
    T *sumOut = r.sum ? r.sum->mutableData<T>() : nullptr;
    auto chunk = chunkScratch<double>(*call.pool, kScratchChunk, cols);
    call.pool->parallelFor(rows, 16, [&](int64_t r0, int64_t r1) {
      double *v = chunk.get();
      for (int64_t row = r0; row < r1; ++row) {
        int64_t base = row * cols;
        for (int64_t c = 0; c < cols; ++c) {
          typename Num<T>::C e = Num<T>::load(in[base + c]);
          if (sk || rb) {
            if (sk) {
              int64_t si = 0, rest = base + c;
              for (int64_t d = x.rank() - 1; d >= 0; --d) {
                si += (rest % x.dim(d)) * skipBc.strides[1][size_t(d)];
                rest /= x.dim(d);
              }
              e = e + Num<T>::load(sk[si]);
            }
            if (rb)
              e = e + Num<T>::load(rb[c]);
            // The residual sum is an output in the element type: normalise
            // what is stored, as onnxruntime does.
            T stored = Num<T>::store(e);
            if (sumOut)
              sumOut[base + c] = stored;
            e = Num<T>::load(stored);
          }
          v[size_t(c)] = double(e);
        }
        double mean = 0;
        if (r.centre) {
          for (int64_t c = 0; c < cols; ++c)
            mean += v[c];
          mean /= double(cols);
        }
        double var = 0;
        for (int64_t c = 0; c < cols; ++c)
          var += (v[c] - mean) * (v[c] - mean);
        var /= double(cols);
        double inv = 1.0 / std::sqrt(var + r.epsilon);
        for (int64_t c = 0; c < cols; ++c) {
          double o = (v[size_t(c)] - mean) * inv;
          if (sc)
            o *= double(Num<T>::load(sc[scaleAt[size_t(c)]])) + r.scaleOffset;
          if (bi)
            o += double(Num<T>::load(bi[biasAt[size_t(c)]]));
          out[base + c] = Num<T>::store(typename Num<T>::C(o));
        }
        if (r.mean)
          r.mean->mutableData<float>()[row] = float(mean);
        if (r.invStd)
          r.invStd->mutableData<float>()[row] = float(inv);
      }
    });
    return Status::ok();
  });
}

Tensor *outputOrNull(KernelCall &call, size_t i) {
  return i < call.outputs.size() ? &call.outputs[i] : nullptr;
}

Status layerNormalizationKernel(KernelCall &call) {
  NormRequest r;
  r.x = call.input(0);
  r.scale = call.input(1);
  r.bias = call.input(2);
  r.axis = call.attrs->getInt("axis", -1);
  r.epsilon = call.attrs->getFloat("epsilon", 1e-5);
  r.centre = true;
  r.y = &call.outputs[0];
  r.mean = outputOrNull(call, 1);
  r.invStd = outputOrNull(call, 2);
  return normalize(call, r);
}

Status rmsNormalizationKernel(KernelCall &call) {
  NormRequest r;
  r.x = call.input(0);
  r.scale = call.input(1);
  r.axis = call.attrs->getInt("axis", -1);
  r.epsilon = call.attrs->getFloat("epsilon", 1e-5);
  r.centre = false;
  r.y = &call.outputs[0];
  if (r.scale && r.scale->dtype() != r.x->dtype())
    return call.fail("scale must have X's type (mixed-type RMSNormalization is not supported)");
  return normalize(call, r);
}

Status simplifiedLayerNormalizationKernel(KernelCall &call) {
  NormRequest r;
  r.x = call.input(0);
  r.scale = call.input(1);
  r.axis = call.attrs->getInt("axis", -1);
  r.epsilon = call.attrs->getFloat("epsilon", 1e-5);
  r.centre = false;
  r.y = &call.outputs[0];
  r.invStd = outputOrNull(call, 1);
  return normalize(call, r);
}

/// llm.rms_norm / llm.layer_norm: over the last dimension, with [hidden]
/// parameters of the input's type.
template <bool Centre> Status llmNormKernel(KernelCall &call) {
  NormRequest r;
  r.x = call.input(0);
  r.scale = call.input(1);
  r.bias = Centre ? call.input(2) : nullptr;
  r.axis = -1;
  r.epsilon = call.attrs->getFloat("epsilon", Centre ? 1e-5 : 1e-6);
  r.scaleOffset = Centre ? 0.0 : call.attrs->getFloat("weight_offset", 0.0);
  r.centre = Centre;
  r.y = &call.outputs[0];
  const Tensor &x = *r.x;
  int64_t hidden = x.rank() ? x.dim(x.rank() - 1) : 0;
  for (const Tensor *p : {r.scale, r.bias})
    if (p && (p->rank() != 1 || p->dim(0) != hidden || p->dtype() != x.dtype()))
      return call.fail("weight and bias must be " + std::string(dtypeName(x.dtype())) + "[" +
                       std::to_string(hidden) + "], got " + p->describe());
  return normalize(call, r);
}

template <bool Centre> Status skipNormKernel(KernelCall &call) {
  NormRequest r;
  r.x = call.input(0);
  r.skip = call.input(1);
  r.scale = call.input(2);
  r.bias = Centre ? call.input(3) : nullptr;
  r.residualBias = call.input(Centre ? 4 : 3);
  r.axis = -1;
  r.epsilon = call.attrs->getFloat("epsilon", 1e-12);
  r.centre = Centre;
  r.y = &call.outputs[0];
  r.mean = outputOrNull(call, 1);
  r.invStd = outputOrNull(call, 2);
  r.sum = outputOrNull(call, 3);
  if (r.scale->rank() != 1)
    return call.fail("gamma must be 1-D");
  return normalize(call, r);
}

/// com.microsoft EmbedLayerNormalization.
Status embedLayerNormalizationKernel(KernelCall &call) {
  const Tensor &ids = *call.input(0), &word = *call.input(2), &pos = *call.input(3);
  const Tensor *segIds = call.input(1), *segEmb = call.input(4), *mask = call.input(7),
               *posIds = call.input(8);
  const Tensor &gamma = *call.input(5), &beta = *call.input(6);
  if (ids.rank() != 2 || word.rank() != 2 || pos.rank() != 2)
    return call.fail("input_ids must be [B, S] and the embeddings 2-D");
  int64_t batch = ids.dim(0), seq = ids.dim(1), hidden = word.dim(1);
  if (pos.dim(1) != hidden || (segEmb && segEmb->dim(1) != hidden))
    return call.fail("embedding widths differ");
  if (posIds && !(posIds->rank() == 2 && posIds->dim(1) == seq &&
                  (posIds->dim(0) == batch || posIds->dim(0) == 1)))
    return call.fail("position_ids must be [B, S] or [1, S]");
  // embedding_sum in the embedding type, then the layer norm over it.
  Tensor sum;
  LLMC_RETURN_IF_ERROR(Tensor::allocate(word.dtype(), {batch, seq, hidden}, sum));
  auto idAt = [](const Tensor &t, int64_t i) {
    return t.dtype() == DType::Int64 ? t.data<int64_t>()[i] : int64_t(t.data<int32_t>()[i]);
  };
  LLMC_RETURN_IF_ERROR(visitFloat(word.dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    T *ps = sum.mutableData<T>();
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t s = 0; s < seq; ++s) {
        int64_t w = idAt(ids, b * seq + s);
        int64_t p = posIds ? idAt(*posIds, (posIds->dim(0) == 1 ? 0 : b) * seq + s) : s;
        int64_t g = segIds ? idAt(*segIds, b * seq + s) : 0;
        if (w < 0 || w >= word.dim(0) || p < 0 || p >= pos.dim(0) ||
            (segEmb && (g < 0 || g >= segEmb->dim(0))))
          return call.fail("an input, position or segment id is out of range");
        for (int64_t h = 0; h < hidden; ++h) {
          auto v = Num<T>::load(word.data<T>()[w * hidden + h]) +
                   Num<T>::load(pos.data<T>()[p * hidden + h]);
          if (segEmb)
            v = v + Num<T>::load(segEmb->data<T>()[g * hidden + h]);
          ps[(b * seq + s) * hidden + h] = Num<T>::store(v);
        }
      }
    return Status::ok();
  }));
  NormRequest r;
  r.x = &sum;
  r.scale = &gamma;
  r.bias = &beta;
  r.axis = -1;
  r.epsilon = call.attrs->getFloat("epsilon", 1e-12);
  r.centre = true;
  r.y = &call.outputs[0];
  LLMC_RETURN_IF_ERROR(normalize(call, r));
  // mask_index: per batch entry, the position of the first 0 in the mask
  // (the sequence length when there is none); zeros without a mask.
  Tensor &maskIndex = call.outputs[1];
  LLMC_RETURN_IF_ERROR(Tensor::allocate(DType::Int32, {batch}, maskIndex));
  if (mask)
    for (int64_t b = 0; b < batch; ++b) {
      int32_t n = int32_t(seq);
      for (int64_t s = 0; s < seq; ++s)
        if (idAt(*mask, b * seq + s) == 0) {
          n = int32_t(s);
          break;
        }
      maskIndex.mutableData<int32_t>()[b] = n;
    }
  if (call.outputs.size() > 2)
    call.outputs[2] = sum;
  return Status::ok();
}

} // namespace

void addNormalizationKernels(KernelTable &table) {
  table.add("onnx.softmax", softmaxKernel<false>);
  table.add("onnx.log_softmax", softmaxKernel<true>);
  table.add("onnx.layer_normalization", layerNormalizationKernel);
  table.add("onnx.rms_normalization", rmsNormalizationKernel);
  table.add("rms_norm", llmNormKernel<false>);
  table.add("layer_norm", llmNormKernel<true>);
  table.add("ms.simplified_layer_normalization", simplifiedLayerNormalizationKernel);
  table.add("ms.skip_layer_normalization", skipNormKernel<true>);
  table.add("ms.skip_simplified_layer_normalization", skipNormKernel<false>);
  table.add("ms.embed_layer_normalization", embedLayerNormalizationKernel);
}

} // namespace llmc::cpu
