//===- Attributes.h - attribute values for the reference kernels ----------===//
//
// What emitted model code builds a reference kernel's attributes from (once,
// at init): the CPU target's model.cpp through ModelSupport.h, and the CUDA
// target's host steps (cuda/HostSteps.h). Defined in ModelSupport.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_MODEL_ATTRIBUTES_H
#define LLMC_RUNTIME_MODEL_ATTRIBUTES_H

#include "runtime/src/cpu/Kernel.h"

#include <initializer_list>

namespace llmc::model {

using cpu::Attribute;
using cpu::Tensor;

Attribute intAttr(int64_t v);
Attribute floatAttr(double v);
Attribute stringAttr(const char *v);
Attribute intsAttr(std::initializer_list<int64_t> v);
Attribute floatsAttr(std::initializer_list<double> v);
Attribute stringsAttr(std::initializer_list<const char *> v);
Attribute tensorAttr(Tensor v);

} // namespace llmc::model

#endif // LLMC_RUNTIME_MODEL_ATTRIBUTES_H
