#include "simulator/interpreter/container_ops.h"

#include "simulator/support/errors.h"

namespace stickler {
namespace {

using torch::jit::Stack;
namespace prim = torch::jit::prim;
namespace attr = torch::jit::attr;

std::vector<c10::IValue> popN(Stack& stack, size_t count) {
  std::vector<c10::IValue> values(std::make_move_iterator(stack.end() - count),
                                  std::make_move_iterator(stack.end()));
  stack.erase(stack.end() - count, stack.end());
  return values;
}

}  // namespace

torch::jit::Operation containerOperation(const torch::jit::Node& node) {
  const size_t inputs = node.inputs().size();
  const size_t outputs = node.outputs().size();
  switch (node.kind()) {
    case prim::TupleConstruct: {
      auto type = node.output()->type()->expect<c10::TupleType>();
      if (type->schema()) {
        return [type, inputs](Stack& stack) {
          stack.emplace_back(c10::ivalue::Tuple::createNamed(popN(stack, inputs), type));
        };
      }
      return [inputs](Stack& stack) {
        stack.emplace_back(c10::ivalue::Tuple::create(popN(stack, inputs)));
      };
    }
    case prim::TupleUnpack:
      return [](Stack& stack) {
        auto tuple = torch::jit::pop(stack).toTuple();
        for (const auto& element : tuple->elements()) stack.push_back(element);
      };
    case prim::ListConstruct: {
      auto element_type = node.output()->type()->expectRef<c10::ListType>().getElementType();
      return [element_type, inputs](Stack& stack) {
        c10::List<c10::IValue> list(element_type);
        list.reserve(inputs);
        for (auto& value : popN(stack, inputs)) list.push_back(std::move(value));
        stack.emplace_back(std::move(list));
      };
    }
    case prim::ListUnpack:
      return [outputs](Stack& stack) {
        auto list = torch::jit::pop(stack).toList();
        if (list.size() != outputs) {
          throw UserError("expected a list of " + std::to_string(outputs) + " elements, found " +
                          std::to_string(list.size()));
        }
        for (size_t i = 0; i < list.size(); ++i) stack.push_back(list.get(i));
      };
    case prim::DictConstruct: {
      const auto& type = node.output()->type()->expectRef<c10::DictType>();
      auto key_type = type.getKeyType();
      auto value_type = type.getValueType();
      return [key_type, value_type, inputs](Stack& stack) {
        c10::impl::GenericDict dict(key_type, value_type);
        auto values = popN(stack, inputs);
        for (size_t i = 0; i + 1 < values.size(); i += 2) {
          dict.insert_or_assign(std::move(values[i]), std::move(values[i + 1]));
        }
        stack.emplace_back(std::move(dict));
      };
    }
    case prim::isinstance: {
      return [types = node.tys(attr::types)](Stack& stack) {
        c10::TypePtr type = torch::jit::pop(stack).type();
        bool matches = false;
        for (const auto& candidate : types) matches = matches || type->isSubtypeOf(*candidate);
        stack.emplace_back(matches);
      };
    }
    case prim::CreateObject: {
      auto type = node.output()->type()->expect<c10::ClassType>();
      return [type](Stack& stack) {
        stack.emplace_back(c10::ivalue::Object::create(
            c10::StrongTypePtr(type->compilation_unit(), type), type->numAttributes()));
      };
    }
    case prim::GetAttr: {
      return [name = node.s(attr::name)](Stack& stack) {
        auto object = torch::jit::pop(stack).toObject();
        stack.push_back(object->getAttr(name));
      };
    }
    case prim::SetAttr: {
      return [name = node.s(attr::name)](Stack& stack) {
        auto value = torch::jit::pop(stack);
        torch::jit::pop(stack).toObject()->setAttr(name, std::move(value));
      };
    }
    case prim::Uninitialized:
      return [](Stack& stack) { stack.push_back(c10::IValue::uninitialized()); };
    case prim::unchecked_cast:
      return [](Stack&) {};  // the input already is the output
    default:
      return nullptr;
  }
}

}  // namespace stickler
