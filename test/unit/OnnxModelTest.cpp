//===- OnnxModelTest.cpp - the ONNX reader: sorting, data, external files ===//
#include "python-free-frontend/OnnxImporter.h"
#include "python-free-frontend/OnnxModel.h"

#include "dialects/LLM/IR/LLMOps.h"
#include "dialects/LLM/IR/OnnxDataType.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cstring>
#include <fstream>
#include <vector>

using namespace mlir;
using namespace mlir::llmc;

namespace {

/// A temporary folder removed at the end of the test.
class TempDir {
public:
  TempDir() {
    llvm::SmallString<128> path;
    EXPECT_FALSE(llvm::sys::fs::createUniqueDirectory("llmc-unit", path));
    dir = std::string(path);
  }
  ~TempDir() { llvm::sys::fs::remove_directories(dir); }
  std::string file(llvm::StringRef name) const {
    llvm::SmallString<128> p(dir);
    llvm::sys::path::append(p, name);
    return std::string(p);
  }
  std::string dir;
};

onnx::ModelProto baseModel() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  m.mutable_graph()->set_name("g");
  return m;
}

void addInput(onnx::GraphProto *g, const std::string &name, int elemType,
              std::vector<int64_t> dims) {
  onnx::ValueInfoProto *in = g->add_input();
  in->set_name(name);
  auto *tt = in->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elemType);
  for (int64_t d : dims)
    tt->mutable_shape()->add_dim()->set_dim_value(d);
}

onnx::NodeProto *addNode(onnx::GraphProto *g, const std::string &name, const std::string &op,
                         std::vector<std::string> inputs, std::vector<std::string> outputs) {
  onnx::NodeProto *n = g->add_node();
  n->set_name(name);
  n->set_op_type(op);
  for (auto &i : inputs)
    n->add_input(i);
  for (auto &o : outputs)
    n->add_output(o);
  return n;
}

std::unique_ptr<OnnxModel> load(const onnx::ModelProto &m, llvm::StringRef dir = ".") {
  std::string bytes;
  EXPECT_TRUE(m.SerializeToString(&bytes));
  auto model = OnnxModel::loadFromBuffer(bytes, dir, "test.onnx");
  if (!model) {
    ADD_FAILURE() << llvm::toString(model.takeError());
    return nullptr;
  }
  return std::move(*model);
}

std::string loadError(const onnx::ModelProto &m, llvm::StringRef dir = ".") {
  std::string bytes;
  m.SerializeToString(&bytes);
  auto model = OnnxModel::loadFromBuffer(bytes, dir, "test.onnx");
  if (model)
    return "";
  return llvm::toString(model.takeError());
}

std::vector<std::string> sortedNames(const OnnxModel &model) {
  std::vector<std::string> names;
  for (const onnx::NodeProto *n : model.sortedNodes())
    names.push_back(n->name());
  return names;
}

//===----------------------------------------------------------------------===//
// Topological sort
//===----------------------------------------------------------------------===//

TEST(OnnxModel, KeepsAValidFileOrder) {
  onnx::ModelProto m = baseModel();
  auto *g = m.mutable_graph();
  addInput(g, "x", onnx::TensorProto::FLOAT, {4});
  // Independent nodes keep their file order even though any order is valid.
  addNode(g, "c", "Neg", {"x"}, {"c_out"});
  addNode(g, "a", "Abs", {"x"}, {"a_out"});
  addNode(g, "b", "Add", {"a_out", "c_out"}, {"b_out"});
  auto model = load(m);
  ASSERT_TRUE(model);
  EXPECT_EQ(sortedNames(*model), (std::vector<std::string>{"c", "a", "b"}));
}

TEST(OnnxModel, SortsUnsortedNodes) {
  onnx::ModelProto m = baseModel();
  auto *g = m.mutable_graph();
  addInput(g, "x", onnx::TensorProto::FLOAT, {4});
  addNode(g, "d", "Add", {"b_out", "c_out"}, {"d_out"});
  addNode(g, "c", "Neg", {"a_out"}, {"c_out"});
  addNode(g, "b", "Exp", {"a_out"}, {"b_out"});
  addNode(g, "a", "Abs", {"x"}, {"a_out"});
  auto model = load(m);
  ASSERT_TRUE(model);
  // a first; then c before b (file order among the ready ones); d last.
  EXPECT_EQ(sortedNames(*model), (std::vector<std::string>{"a", "c", "b", "d"}));
  EXPECT_EQ(model->fileIndex(*model->sortedNodes().front()), 3u);
}

TEST(OnnxModel, ReportsCycles) {
  onnx::ModelProto m = baseModel();
  auto *g = m.mutable_graph();
  addInput(g, "x", onnx::TensorProto::FLOAT, {4});
  addNode(g, "ok", "Abs", {"x"}, {"ok_out"});
  addNode(g, "p", "Add", {"ok_out", "q_out"}, {"p_out"});
  addNode(g, "q", "Neg", {"p_out"}, {"q_out"});
  std::string error = loadError(m);
  EXPECT_NE(error.find("the graph has a cycle"), std::string::npos) << error;
  EXPECT_NE(error.find("node 'p' (Add)"), std::string::npos) << error;
  EXPECT_NE(error.find("node 'q' (Neg)"), std::string::npos) << error;
  EXPECT_EQ(error.find("node 'ok'"), std::string::npos) << error;
}

TEST(OnnxModel, SortsALongChainQuickly) {
  // 200k nodes in reverse order: the sort must stay linear-ish (the default
  // test timeout would catch a quadratic one).
  onnx::ModelProto m = baseModel();
  auto *g = m.mutable_graph();
  addInput(g, "x", onnx::TensorProto::FLOAT, {1});
  const int n = 200000;
  for (int i = n - 1; i >= 0; --i)
    addNode(g, "n" + std::to_string(i), "Neg",
            {i == 0 ? std::string("x") : "v" + std::to_string(i - 1)},
            {"v" + std::to_string(i)});
  auto model = load(m);
  ASSERT_TRUE(model);
  ASSERT_EQ(model->sortedNodes().size(), size_t(n));
  EXPECT_EQ(model->sortedNodes().front()->name(), "n0");
  EXPECT_EQ(model->sortedNodes().back()->name(), "n" + std::to_string(n - 1));
}

//===----------------------------------------------------------------------===//
// Tensor data and dtype conversion
//===----------------------------------------------------------------------===//

std::vector<char> dataOf(const OnnxModel &model, const onnx::TensorProto &t) {
  auto data = model.tensorData(t);
  if (!data) {
    ADD_FAILURE() << llvm::toString(data.takeError());
    return {};
  }
  return std::vector<char>(data->bytes.begin(), data->bytes.end());
}

template <typename T>
std::vector<char> bytesOf(std::vector<T> values) {
  std::vector<char> out(values.size() * sizeof(T));
  std::memcpy(out.data(), values.data(), out.size());
  return out;
}

TEST(OnnxModel, ConvertsTypedFieldsToTheRawLayout) {
  onnx::ModelProto m = baseModel();
  auto *g = m.mutable_graph();
  auto add = [&](const std::string &name, int type, std::vector<int64_t> dims) {
    onnx::TensorProto *t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(type);
    for (int64_t d : dims)
      t->add_dims(d);
    return t;
  };
  auto *f32 = add("f32", onnx::TensorProto::FLOAT, {2});
  f32->add_float_data(1.5f);
  f32->add_float_data(-2.0f);
  auto *f16 = add("f16", onnx::TensorProto::FLOAT16, {2});
  f16->add_int32_data(0x3C00); // 1.0
  f16->add_int32_data(0xC000); // -2.0
  auto *bf16 = add("bf16", onnx::TensorProto::BFLOAT16, {1});
  bf16->add_int32_data(0x3F80); // 1.0
  auto *i8 = add("i8", onnx::TensorProto::INT8, {3});
  i8->add_int32_data(-128);
  i8->add_int32_data(0);
  i8->add_int32_data(127);
  auto *u16 = add("u16", onnx::TensorProto::UINT16, {1});
  u16->add_int32_data(65535);
  auto *b = add("b", onnx::TensorProto::BOOL, {3});
  b->add_int32_data(1);
  b->add_int32_data(0);
  b->add_int32_data(7); // any non-zero is true
  auto *i64 = add("i64", onnx::TensorProto::INT64, {2});
  i64->add_int64_data(-1);
  i64->add_int64_data(int64_t(1) << 40);
  auto *u32 = add("u32", onnx::TensorProto::UINT32, {2});
  u32->add_uint64_data(4000000000u);
  u32->add_uint64_data(7);
  auto *f64 = add("f64", onnx::TensorProto::DOUBLE, {1});
  f64->add_double_data(0.25);
  auto *i4 = add("i4", int(OnnxDataType::Int4), {3}); // packed: two per entry
  i4->add_int32_data(0x7 | (0x8 << 4));              // 7, -8
  i4->add_int32_data(0x1);                           // 1, padding
  auto *scalar = add("scalar", onnx::TensorProto::FLOAT, {});
  scalar->add_float_data(3.0f);
  auto model = load(m);
  ASSERT_TRUE(model);
  const auto &inits = model->graph().initializer();
  EXPECT_EQ(dataOf(*model, inits[0]), bytesOf<float>({1.5f, -2.0f}));
  EXPECT_EQ(dataOf(*model, inits[1]), bytesOf<uint16_t>({0x3C00, 0xC000}));
  EXPECT_EQ(dataOf(*model, inits[2]), bytesOf<uint16_t>({0x3F80}));
  EXPECT_EQ(dataOf(*model, inits[3]), bytesOf<int8_t>({-128, 0, 127}));
  EXPECT_EQ(dataOf(*model, inits[4]), bytesOf<uint16_t>({65535}));
  EXPECT_EQ(dataOf(*model, inits[5]), bytesOf<uint8_t>({1, 0, 1}));
  EXPECT_EQ(dataOf(*model, inits[6]), bytesOf<int64_t>({-1, int64_t(1) << 40}));
  EXPECT_EQ(dataOf(*model, inits[7]), bytesOf<uint32_t>({4000000000u, 7}));
  EXPECT_EQ(dataOf(*model, inits[8]), bytesOf<double>({0.25}));
  EXPECT_EQ(dataOf(*model, inits[9]), bytesOf<uint8_t>({0x87, 0x01}));
  EXPECT_EQ(dataOf(*model, inits[10]), bytesOf<float>({3.0f}));
  // Converted once: a second read returns the same storage.
  EXPECT_EQ(model->tensorData(inits[1])->bytes.data(),
            model->tensorData(inits[1])->bytes.data());
}

TEST(OnnxModel, RawDataIsReadInPlace) {
  onnx::ModelProto m = baseModel();
  onnx::TensorProto *t = m.mutable_graph()->add_initializer();
  t->set_name("w");
  t->set_data_type(onnx::TensorProto::FLOAT);
  t->add_dims(3);
  std::vector<char> raw = bytesOf<float>({1, 2, 3});
  t->set_raw_data(raw.data(), raw.size());
  auto model = load(m);
  ASSERT_TRUE(model);
  const onnx::TensorProto &w = model->graph().initializer(0);
  auto data = model->tensorData(w);
  ASSERT_TRUE(bool(data));
  EXPECT_EQ(data->bytes.data(), w.raw_data().data());
  EXPECT_EQ(data->numElements, 3u);
  EXPECT_FALSE(data->external);
}

TEST(OnnxModel, RejectsInconsistentTensors) {
  auto errorFor = [](auto mutate) {
    onnx::ModelProto m = baseModel();
    onnx::TensorProto *t = m.mutable_graph()->add_initializer();
    t->set_name("w");
    t->set_data_type(onnx::TensorProto::FLOAT);
    mutate(t);
    return loadError(m);
  };
  EXPECT_NE(errorFor([](onnx::TensorProto *t) {
              t->add_dims(4);
              t->set_raw_data(std::string(15, '\0'));
            }).find("has 15 bytes of raw_data; its type and shape need 16"),
            std::string::npos);
  EXPECT_NE(errorFor([](onnx::TensorProto *t) {
              t->add_dims(int64_t(1) << 40);
              t->add_dims(int64_t(1) << 40);
            }).find("element count that overflows"),
            std::string::npos);
  EXPECT_NE(errorFor([](onnx::TensorProto *t) { t->add_dims(-1); }).find("invalid dimension -1"),
            std::string::npos);
  EXPECT_NE(errorFor([](onnx::TensorProto *t) {
              t->add_dims(2);
              t->add_float_data(1);
            }).find("has 1 values; its shape needs 2"),
            std::string::npos);
  EXPECT_NE(errorFor([](onnx::TensorProto *t) {
              t->set_data_type(1000);
              t->add_dims(1);
            }).find("invalid data type 1000"),
            std::string::npos);
}

//===----------------------------------------------------------------------===//
// External data
//===----------------------------------------------------------------------===//

void writeFile(const std::string &path, const std::vector<char> &bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), std::streamsize(bytes.size()));
}

onnx::TensorProto *addExternal(onnx::ModelProto &m, const std::string &name,
                               std::vector<int64_t> dims, const std::string &location,
                               int64_t offset, int64_t length = -1) {
  onnx::TensorProto *t = m.mutable_graph()->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims)
    t->add_dims(d);
  t->set_data_location(onnx::TensorProto::EXTERNAL);
  auto kv = [&](const std::string &k, const std::string &v) {
    auto *e = t->add_external_data();
    e->set_key(k);
    e->set_value(v);
  };
  kv("location", location);
  kv("offset", std::to_string(offset));
  if (length >= 0)
    kv("length", std::to_string(length));
  return t;
}

TEST(OnnxModel, ExternalDataIsMappedNotCopied) {
  TempDir dir;
  // 1 MiB of weights: large enough to be memory-mapped.
  const int64_t n = 1 << 18;
  std::vector<float> weights(n);
  for (int64_t i = 0; i < n; ++i)
    weights[i] = float(i) * 0.5f;
  writeFile(dir.file("model.onnx.data"), bytesOf<float>(weights));

  onnx::ModelProto m = baseModel();
  addExternal(m, "w", {n / 2}, "model.onnx.data", 0, n / 2 * 4);
  addExternal(m, "v", {n / 4}, "model.onnx.data", n / 2 * 4);
  addNode(m.mutable_graph(), "id", "Identity", {"w"}, {"y"});
  auto *out = m.mutable_graph()->add_output();
  out->set_name("y");
  out->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);

  auto model = load(m, dir.dir);
  ASSERT_TRUE(model);
  auto w = model->tensorData(model->graph().initializer(0));
  auto v = model->tensorData(model->graph().initializer(1));
  ASSERT_TRUE(bool(w) && bool(v));
  EXPECT_TRUE(w->external);
  EXPECT_EQ(w->bytes.size(), size_t(n / 2 * 4));
  float first, last;
  std::memcpy(&first, v->bytes.data(), 4);
  std::memcpy(&last, v->bytes.data() + v->bytes.size() - 4, 4);
  EXPECT_EQ(first, float(n / 2) * 0.5f);
  EXPECT_EQ(last, float(n / 2 + n / 4 - 1) * 0.5f);
  // Both tensors are views of the same mapped file.
  EXPECT_EQ(v->bytes.data(), w->bytes.data() + n / 2 * 4);

  // The imported constant references the mapped bytes: no copy of the weights.
  MLIRContext ctx;
  auto module = importOnnxModel(ctx, *model);
  ASSERT_TRUE(bool(module)) << llvm::toString(module.takeError());
  ConstantOp constant;
  (*module)->walk([&](ConstantOp op) { constant = op; });
  ASSERT_TRUE(constant);
  auto resource = dyn_cast<DenseResourceElementsAttr>(constant.getValue());
  ASSERT_TRUE(resource);
  AsmResourceBlob *blob = resource.getRawHandle().getBlob();
  ASSERT_TRUE(blob);
  EXPECT_EQ(blob->getData().data(), w->bytes.data());
  EXPECT_EQ(blob->getData().size(), w->bytes.size());
}

TEST(OnnxModel, ExternalDataStaysInTheModelFolder) {
  TempDir dir;
  writeFile(dir.file("data.bin"), std::vector<char>(64, 0));
  auto errorFor = [&](const std::string &location, int64_t offset = 0) {
    onnx::ModelProto m = baseModel();
    addExternal(m, "w", {4}, location, offset);
    return loadError(m, dir.dir);
  };
  EXPECT_EQ(errorFor("data.bin"), "");
  EXPECT_NE(errorFor("../data.bin").find("leaves the model's folder"), std::string::npos);
  EXPECT_NE(errorFor("sub/../../data.bin").find("leaves the model's folder"), std::string::npos);
  EXPECT_NE(errorFor("/tmp/data.bin").find("is an absolute path"), std::string::npos);
  EXPECT_NE(errorFor("nope.bin").find("not found"), std::string::npos);
  EXPECT_NE(errorFor("data.bin", 60).find("lies beyond the end"), std::string::npos);
  // An offset that would wrap around 64 bits.
  EXPECT_NE(errorFor("data.bin", -1).find("is not a non-negative integer"), std::string::npos);
  onnx::ModelProto m = baseModel();
  addExternal(m, "w", {4}, "data.bin", 0)->mutable_external_data(1)->set_value(
      "18446744073709551615");
  EXPECT_NE(loadError(m, dir.dir).find("lies beyond the end"), std::string::npos);
}

TEST(OnnxModel, TextFormat) {
  const char *text = R"(
    ir_version: 8
    opset_import { version: 17 }
    graph {
      node { name: "n" input: "x" output: "y" op_type: "Neg" }
      input { name: "x" type { tensor_type { elem_type: 1 shape { dim { dim_param: "b" } } } } }
      output { name: "y" type { tensor_type { elem_type: 1 } } }
    })";
  auto model = OnnxModel::loadFromBuffer(text, ".", "m.textproto", /*textFormat=*/true);
  ASSERT_TRUE(bool(model)) << llvm::toString(model.takeError());
  EXPECT_EQ((*model)->opsetVersion(""), 17);
  EXPECT_EQ((*model)->opsetVersion("ai.onnx"), 17);
  EXPECT_EQ((*model)->opsetVersion("com.microsoft"), -1);
  ASSERT_EQ((*model)->realInputs().size(), 1u);
  auto type = (*model)->valueType(*(*model)->realInputs()[0], "input");
  ASSERT_TRUE(bool(type));
  EXPECT_EQ(type->dims, (llvm::SmallVector<int64_t, 4>{-1}));
  EXPECT_EQ(type->dimNames[0], "b");
}

//===----------------------------------------------------------------------===//
// The data type table
//===----------------------------------------------------------------------===//

TEST(OnnxDataType, TableIsIndexedByCode) {
  for (int32_t code = 0; code <= 26; ++code) {
    const OnnxDataTypeInfo *info = lookupOnnxDataType(code);
    ASSERT_TRUE(info) << code;
    EXPECT_EQ(int32_t(info->type), code);
  }
  EXPECT_EQ(lookupOnnxDataType(27), nullptr);
  EXPECT_EQ(lookupOnnxDataType(-1), nullptr);
  EXPECT_STREQ(onnxDataTypeName(10), "FLOAT16");
  uint64_t bytes;
  ASSERT_TRUE(onnxRawByteSize(*lookupOnnxDataType(22), 3, bytes)); // int4
  EXPECT_EQ(bytes, 2u);
  ASSERT_TRUE(onnxRawByteSize(*lookupOnnxDataType(16), 5, bytes)); // bf16
  EXPECT_EQ(bytes, 10u);
  EXPECT_FALSE(onnxRawByteSize(*lookupOnnxDataType(1), UINT64_MAX / 2, bytes));
}

TEST(OnnxDataType, MlirTypesRoundTrip) {
  MLIRContext ctx;
  for (int32_t code = 1; code <= 26; ++code) {
    const OnnxDataTypeInfo *info = lookupOnnxDataType(code);
    Type t = getElementTypeForOnnx(&ctx, code);
    EXPECT_EQ(bool(t), info->supported) << info->name;
    if (t) {
      EXPECT_EQ(getOnnxCodeForElementType(t), code) << info->name;
    }
  }
}

} // namespace
