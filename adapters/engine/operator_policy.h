// Which operators adapter code may use. Adapters are code that agents write and that runs
// inside Stickler: they may compute on tensors and nothing else. See docs/security.md.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace torch::jit {
struct Graph;
struct Node;
}  // namespace torch::jit

namespace stickler {

// A pattern is matched, never run, and must be able to name what models contain (in-place
// operators, dropout); replacements, conditions and helpers run, in the model or beside it.
enum class AdapterCodeRole { kMatched, kRun };

// Why `node` may not appear in adapter code of that role, or nullopt when it may.
std::optional<std::string> operatorRefusal(const torch::jit::Node& node, AdapterCodeRole role);

// Throws UserError "path:line:column: ..." at the first refused operator of `graph` (blocks
// included). `graph` must come from the source that compileRewrite lays out at the file's own
// lines, so that node positions are the file's positions.
void checkAdapterOperators(const torch::jit::Graph& graph, AdapterCodeRole role,
                           const std::string& path);

// Throws UserError "path:line:column: ..." at the first call written in the file's functions
// that names a refused operator, wherever it is written: TorchScript never compiles a branch it
// decides while compiling (`if False:`, `if not torch.jit.is_scripting():`), so the graph
// check above cannot see it, yet a reviewer and the catalog would take it in. Calls are
// judged by their names: `torch.save` and `x.save` are aten::save, `print` is prim::Print,
// `x.fill_` is in place, `out=` writes its argument. Names the file defines are its own.
struct AdapterFile;
void checkWrittenCalls(const AdapterFile& file);

// Operators refused by name, whatever their arguments: for docs/security.md's table.
std::vector<std::string> operatorsRefusedByName();

}  // namespace stickler
