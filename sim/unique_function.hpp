#pragma once
// A move-only callable `void()` with a small buffer, so that scheduling a lambda with a
// few captures does not allocate (STYLE 2, 12). Larger callables go to the heap.
//
// Trivially relocatable by construction: only trivially copyable callables are stored inline
// (a lambda capturing pointers, indices, times); any other goes to the heap behind a pointer.
// So the bytes of a UniqueFunction can be copied out as a plain `Raw` and adopted back
// (release/adopt), and containers of Raw move by memcpy and clear in O(1): the event queue
// keeps its pending callbacks that way.
#include <cstddef>
#include <cstring>
#include <new>
#include <type_traits>
#include <utility>

namespace shardsim {

class UniqueFunction {
 public:
  static constexpr std::size_t kInline = 40;  // with the ops pointer: 48 bytes, so an event key is one 64-byte line

  /// The bytes of a UniqueFunction: trivially copyable. Owns the callable until adopted.
  struct Raw {
    alignas(std::max_align_t) unsigned char buf[kInline];
    const void* ops;
  };

  UniqueFunction() = default;
  template <class F, class D = std::decay_t<F>,
            class = std::enable_if_t<!std::is_same_v<D, UniqueFunction> && std::is_invocable_v<D&>>>
  UniqueFunction(F&& f) {  // NOLINT(google-explicit-constructor): callables convert implicitly
    if constexpr (sizeof(D) <= kInline && alignof(D) <= alignof(std::max_align_t) &&
                  std::is_trivially_copyable_v<D>) {
      new (buf_) D(std::forward<F>(f));
      // The whole buffer is copied when the function moves: give the tail a value (a
      // fixed-size store, no cost worth measuring), so no copy reads indeterminate bytes.
      if constexpr (sizeof(D) < kInline) std::memset(buf_ + sizeof(D), 0, kInline - sizeof(D));
      ops_ = &inline_ops<D>;
    } else {
      *reinterpret_cast<D**>(buf_) = new D(std::forward<F>(f));
      std::memset(buf_ + sizeof(D*), 0, kInline - sizeof(D*));
      ops_ = &heap_ops<D>;
    }
  }
  UniqueFunction(UniqueFunction&& o) noexcept { take(o); }
  UniqueFunction& operator=(UniqueFunction&& o) noexcept {
    if (this != &o) {
      reset();
      take(o);
    }
    return *this;
  }
  UniqueFunction(const UniqueFunction&) = delete;
  UniqueFunction& operator=(const UniqueFunction&) = delete;
  ~UniqueFunction() { reset(); }

  void operator()() { ops_->call(buf_); }
  explicit operator bool() const { return ops_ != nullptr; }
  void reset() {
    if (ops_ && ops_->destroy) ops_->destroy(buf_);
    ops_ = nullptr;
  }

  /// Moves the callable out as bytes; this becomes empty. Whoever holds the Raw must adopt()
  /// it exactly once (to run or destroy it).
  [[nodiscard]] Raw release() noexcept {
    Raw r{};
    if (ops_) std::memcpy(r.buf, buf_, kInline);
    r.ops = ops_;
    ops_ = nullptr;
    return r;
  }
  /// Takes ownership of a released callable.
  static UniqueFunction adopt(const Raw& r) noexcept {
    UniqueFunction f;
    if (r.ops) std::memcpy(f.buf_, r.buf, kInline);
    f.ops_ = static_cast<const Ops*>(r.ops);
    return f;
  }

 private:
  struct Ops {
    void (*call)(void*);
    void (*destroy)(void*);  // null for inline callables (trivially destructible)
  };
  template <class D>
  static constexpr Ops inline_ops{[](void* p) { (*static_cast<D*>(p))(); }, nullptr};
  template <class D>
  static constexpr Ops heap_ops{[](void* p) { (**static_cast<D**>(p))(); },
                                [](void* p) { delete *static_cast<D**>(p); }};

  void take(UniqueFunction& o) noexcept {
    ops_ = o.ops_;
    if (ops_) std::memcpy(buf_, o.buf_, kInline);
    o.ops_ = nullptr;
  }

  alignas(std::max_align_t) unsigned char buf_[kInline];
  const Ops* ops_ = nullptr;
};

}  // namespace shardsim
