#include "simulator/lowering/op_classes.h"

#include <unordered_map>

namespace stickler {
namespace {

const std::unordered_map<std::string, OpClass>& classTable() {
  static const std::unordered_map<std::string, OpClass> table = [] {
    std::unordered_map<std::string, OpClass> t;
    for (const char* op : {"aten::linear", "aten::addmm", "aten::mm", "aten::bmm", "aten::matmul",
                           "aten::baddbmm", "aten::_convolution", "aten::conv2d", "aten::conv1d",
                           "aten::scaled_dot_product_attention"}) {
      t[op] = OpClass::kMatmul;
    }
    for (const char* op :
         {"aten::add",         "aten::add_",        "aten::sub",      "aten::rsub",
          "aten::mul",         "aten::mul_",        "aten::div",      "aten::div_",
          "aten::where",       "aten::maximum",     "aten::minimum",  "aten::eq",
          "aten::ne",          "aten::gt",          "aten::lt",       "aten::ge",
          "aten::le",          "aten::bitwise_and", "aten::__and__",  "aten::bitwise_or",
          "aten::__or__",      "aten::masked_fill", "aten::pow",      "aten::abs",
          "aten::neg",         "aten::exp",         "aten::log",      "aten::sqrt",
          "aten::rsqrt",       "aten::reciprocal",  "aten::tanh",     "aten::sigmoid",
          "aten::gelu",        "aten::silu",        "aten::silu_",    "aten::relu",
          "aten::relu_",       "aten::softplus",    "aten::mish",     "aten::floor",
          "aten::ceil",        "aten::sign",        "aten::clamp",    "aten::logical_not",
          "aten::bitwise_not", "aten::dropout",     "aten::dropout_", "aten::sin",
          "aten::cos",         "aten::to",          "aten::type_as",  "aten::erf"}) {
      t[op] = OpClass::kPointwise;
    }
    for (const char* op : {"aten::softmax", "aten::log_softmax", "aten::layer_norm",
                           "aten::rms_norm", "aten::sum", "aten::mean", "aten::amax", "aten::amin",
                           "aten::prod", "aten::norm", "aten::linalg_vector_norm", "aten::cumsum",
                           "aten::max", "aten::min", "aten::any", "aten::all"}) {
      t[op] = OpClass::kReduction;
    }
    for (const char* op :
         {"aten::view",    "aten::reshape",    "aten::permute", "aten::transpose",
          "aten::t",       "aten::unsqueeze",  "aten::squeeze", "aten::slice",
          "aten::select",  "aten::narrow",     "aten::expand",  "aten::expand_as",
          "aten::flatten", "aten::contiguous", "aten::split",   "aten::split_with_sizes",
          "aten::chunk",   "aten::unbind",     "aten::alias",   "aten::detach",
          "aten::view_as", "aten::reshape_as"}) {
      t[op] = OpClass::kView;
    }
    return t;
  }();
  return table;
}

}  // namespace

OpClass opClassOf(const std::string& op) {
  auto it = classTable().find(op);
  return it == classTable().end() ? OpClass::kOther : it->second;
}

bool isBinaryPointwise(const std::string& op) {
  static const char* const kBinary[] = {
      "aten::add",    "aten::add_",        "aten::sub",     "aten::rsub",
      "aten::mul",    "aten::mul_",        "aten::div",     "aten::div_",
      "aten::where",  "aten::maximum",     "aten::minimum", "aten::eq",
      "aten::ne",     "aten::gt",          "aten::lt",      "aten::ge",
      "aten::le",     "aten::bitwise_and", "aten::__and__", "aten::bitwise_or",
      "aten::__or__", "aten::masked_fill", "aten::pow"};
  for (const char* name : kBinary) {
    if (op == name) return true;
  }
  return false;
}

}  // namespace stickler
