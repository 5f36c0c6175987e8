#pragma once
// Observers (STYLE 3, SimGrid s4u signals): the engine emits, analysis subscribes.
// Emitting a signal with no subscriber costs one branch.
#include <cstddef>
#include <functional>
#include <utility>
#include <vector>

namespace shardsim {

template <class... Args>
class Signal {
 public:
  using Slot = std::function<void(Args...)>;
  /// Returns an id for disconnect(). Slots run in connection order.
  std::size_t connect(Slot slot) {
    slots_.push_back(std::move(slot));
    return slots_.size() - 1;
  }
  void disconnect(std::size_t id) {
    if (id < slots_.size()) slots_[id] = nullptr;
  }
  [[nodiscard]] bool empty() const { return slots_.empty(); }
  void operator()(Args... args) const {
    for (const auto& s : slots_) {
      if (s) s(args...);
    }
  }

 private:
  std::vector<Slot> slots_;
};

}  // namespace shardsim
