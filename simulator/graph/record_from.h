// What a rebuilt model's recording run (loaded_model.h: what each node sees on the example
// inputs) computes on. LibTorch-free, for the adapter engine's interface.
#pragma once

namespace stickler {

enum class RecordFrom {
  kAsTheBase,  // as the model it is rebuilt from did
  kShapes,     // shapes alone, the weights kept to run it (LoadOptions::records_from_shapes)
  kValues,     // a CPU run of the model: its example outputs are the reference
};

}  // namespace stickler
