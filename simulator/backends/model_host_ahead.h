// A model host started ahead: made while its caller computes the model's CPU reference.
// LibTorch-free, so that tools/ can start one.
#pragma once

#include <atomic>
#include <memory>

namespace stickler {

struct LoadedModel;
struct HostAhead;  // model_host_ahead.cpp

// A command that runs a model on the device after computing its reference on the CPU (a
// localization) starts the model's host as soon as the model is adapted and recorded from shapes,
// which is what a host records from, so that the host's making (a second at 480M parameters)
// runs beside the reference run instead of after it. The first device run of the model
// (runOnModelHost) takes the host over when the records the caller then has from values are the
// ones the host made the model with; otherwise the host is ended and the run makes its own.
class ModelHostAhead {
 public:
  ModelHostAhead() = default;
  ModelHostAhead(ModelHostAhead&& other) noexcept = default;
  ModelHostAhead& operator=(ModelHostAhead&& other) noexcept;
  ModelHostAhead(const ModelHostAhead&) = delete;
  ModelHostAhead& operator=(const ModelHostAhead&) = delete;
  // Waits for the making to end; a host no run took over is ended.
  ~ModelHostAhead();

  bool started() const { return state_ != nullptr; }

 private:
  friend ModelHostAhead startModelHostAhead(std::shared_ptr<const LoadedModel> model,
                                            const std::atomic<bool>* cancelled);
  void finish();
  std::shared_ptr<HostAhead> state_;
};

// Starts `model`'s host on a thread of its own and gives it the model (recorded from shapes:
// model->records_from_shapes). Nothing is reported from here: a host that could not be made is
// made again, with the error reported, by the first device run. `cancelled` must outlive the
// returned object.
ModelHostAhead startModelHostAhead(std::shared_ptr<const LoadedModel> model,
                                   const std::atomic<bool>* cancelled);

}  // namespace stickler
