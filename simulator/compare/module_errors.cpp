#include "simulator/compare/module_errors.h"

#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

#include "simulator/support/errors.h"

namespace stickler {
namespace {

// The float tensors among a module call's outputs, flattened to fp32 on the CPU.
std::vector<at::Tensor> floatTensors(const MutableValueView& outputs) {
  std::vector<at::Tensor> tensors;
  std::vector<c10::IValue> work;
  for (size_t i = 0; i < outputs.size(); ++i) work.push_back(outputs[i]);
  while (!work.empty()) {
    const c10::IValue value = work.back();
    work.pop_back();
    if (value.isTensor()) {
      const at::Tensor& tensor = value.toTensor();
      if (at::isFloatingType(tensor.scalar_type()) && tensor.numel() > 0) {
        tensors.push_back(tensor.detach().to(at::kFloat).reshape({-1}).contiguous());
      }
    } else if (value.isTuple()) {
      for (const auto& element : value.toTupleRef().elements()) work.push_back(element);
    } else if (value.isTensorList()) {
      for (const at::Tensor& tensor : value.toTensorVector()) work.emplace_back(tensor);
    }
  }
  return tensors;
}

template <typename T>
void put(std::FILE* file, T value) {
  std::fwrite(&value, sizeof(T), 1, file);
}

template <typename T>
bool get(std::FILE* file, T* value) {
  return std::fread(value, sizeof(T), 1, file) == 1;
}

}  // namespace

ModuleErrors compareActivations(const std::vector<at::Tensor>& reference,
                                const std::vector<at::Tensor>& observed) {
  ModuleErrors errors;
  if (reference.empty() || reference.size() != observed.size()) return errors;
  const at::Tensor ref = at::cat(reference).to(at::kDouble);
  const at::Tensor obs = at::cat(observed).to(at::kDouble);
  if (ref.sizes() != obs.sizes()) return errors;
  const at::Tensor finite = at::isfinite(ref);
  errors.non_finite = (finite & ~at::isfinite(obs)).any().item<bool>();
  const at::Tensor diff = at::where(finite, obs - ref, at::zeros_like(ref));
  const double ref_norm = ref.where(finite, at::zeros_like(ref)).norm().item<double>();
  const double obs_norm = obs.where(finite, at::zeros_like(obs)).norm().item<double>();
  const double diff_norm = diff.norm().item<double>();
  errors.max_abs = diff.abs().max().item<double>();
  errors.mean_abs = diff.abs().mean().item<double>();
  errors.rel_l2 = ref_norm > 0 ? diff_norm / ref_norm : diff_norm;
  errors.cosine =
      ref_norm > 0 && obs_norm > 0
          ? (ref.where(finite, at::zeros_like(ref)) * obs.where(finite, at::zeros_like(obs)))
                    .sum()
                    .item<double>() /
                (ref_norm * obs_norm)
          : 1.0;
  errors.sqnr_db = diff_norm > 0 ? 20.0 * std::log10(ref_norm / diff_norm)
                                 : std::numeric_limits<double>::infinity();
  if (errors.non_finite) {
    errors.rel_l2 = std::numeric_limits<double>::infinity();
    errors.cosine = 0.0;
  }
  return errors;
}

ActivationRecorder::ActivationRecorder(const std::vector<ModuleCall>& calls,
                                       const std::string& path)
    : calls_(calls), file_(std::fopen(path.c_str(), "wb")) {
  if (file_ == nullptr) throw UserError(path + ": cannot write reference activations");
}

ActivationRecorder::~ActivationRecorder() {
  if (file_ != nullptr) std::fclose(file_);
}

void ActivationRecorder::onModuleExit(const ModuleCall& call, const MutableValueView& outputs) {
  const std::vector<at::Tensor> tensors = floatTensors(outputs);
  put<int64_t>(file_, &call - calls_.data());
  put<int64_t>(file_, static_cast<int64_t>(tensors.size()));
  for (const at::Tensor& tensor : tensors) {
    put<int64_t>(file_, tensor.numel());
    std::fwrite(tensor.data_ptr<float>(), sizeof(float), tensor.numel(), file_);
  }
}

LockstepComparer::LockstepComparer(const std::vector<ModuleCall>& calls,
                                   const std::string& reference_path,
                                   const std::string& errors_path)
    : calls_(calls),
      reference_(std::fopen(reference_path.c_str(), "rb")),
      errors_(std::fopen(errors_path.c_str(), "w")) {
  if (reference_ == nullptr || errors_ == nullptr) {
    throw UserError(errors_path + ": cannot compare activations in lockstep");
  }
}

LockstepComparer::~LockstepComparer() {
  std::fclose(reference_);
  std::fclose(errors_);
}

void LockstepComparer::onModuleExit(const ModuleCall& call, const MutableValueView& outputs) {
  if (!in_step_) return;
  int64_t index = -1, count = 0;
  if (!get(reference_, &index) || !get(reference_, &count) || index != &call - calls_.data()) {
    in_step_ = false;  // the runs took different paths: nothing after this compares
    return;
  }
  std::vector<at::Tensor> reference;
  for (int64_t i = 0; i < count; ++i) {
    int64_t numel = 0;
    if (!get(reference_, &numel)) {
      in_step_ = false;
      return;
    }
    at::Tensor tensor = at::empty({numel}, at::kFloat);
    if (std::fread(tensor.data_ptr<float>(), sizeof(float), numel, reference_) !=
        static_cast<size_t>(numel)) {
      in_step_ = false;
      return;
    }
    reference.push_back(tensor);
  }
  const std::vector<at::Tensor> observed = floatTensors(outputs);
  if (reference.empty() || observed.size() != reference.size()) return;
  ModuleErrors errors = compareActivations(reference, observed);
  errors.call = index;
  std::fprintf(errors_, "%lld %.9g %.9g %.9g %.9g %.9g %d\n", static_cast<long long>(index),
               errors.max_abs, errors.mean_abs, errors.cosine, errors.rel_l2, errors.sqnr_db,
               errors.non_finite ? 1 : 0);
  std::fflush(errors_);  // a worker that aborts later keeps this line
}

std::vector<ModuleErrors> readModuleErrors(const std::string& errors_path) {
  std::vector<ModuleErrors> list;
  std::ifstream in(errors_path);
  std::string line;
  while (std::getline(in, line)) {
    // std::stod reads the "inf" and "nan" that printf writes; operator>> does not.
    std::istringstream fields(line);
    std::vector<std::string> tokens;
    for (std::string token; fields >> token;) tokens.push_back(token);
    if (tokens.size() != 7) continue;
    ModuleErrors errors;
    errors.call = std::stoll(tokens[0]);
    errors.max_abs = std::stod(tokens[1]);
    errors.mean_abs = std::stod(tokens[2]);
    errors.cosine = std::stod(tokens[3]);
    errors.rel_l2 = std::stod(tokens[4]);
    errors.sqnr_db = std::stod(tokens[5]);
    errors.non_finite = tokens[6] == "1";
    list.push_back(errors);
  }
  return list;
}

}  // namespace stickler
