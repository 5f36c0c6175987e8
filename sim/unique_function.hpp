#pragma once
// A move-only callable `void()` with a small buffer, so that scheduling a lambda with a
// few captures does not allocate (STYLE 2, 12). Larger callables go to the heap.
#include <cstddef>
#include <cstring>
#include <new>
#include <type_traits>
#include <utility>

namespace shardsim {

class UniqueFunction {
 public:
  static constexpr std::size_t kInline = 40;  // with the ops pointer: 48 bytes, so an event key is one 64-byte line

  UniqueFunction() = default;
  template <class F, class D = std::decay_t<F>,
            class = std::enable_if_t<!std::is_same_v<D, UniqueFunction> && std::is_invocable_v<D&>>>
  UniqueFunction(F&& f) {  // NOLINT(google-explicit-constructor): callables convert implicitly
    if constexpr (sizeof(D) <= kInline && alignof(D) <= alignof(std::max_align_t) &&
                  std::is_nothrow_move_constructible_v<D>) {
      new (buf_) D(std::forward<F>(f));
      ops_ = &inline_ops<D>;
    } else {
      *reinterpret_cast<D**>(buf_) = new D(std::forward<F>(f));
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
    if (ops_) ops_->destroy(buf_);
    ops_ = nullptr;
  }

 private:
  struct Ops {
    bool trivial;  // trivially copyable inline callable: relocate by memcpy
    void (*call)(void*);
    void (*move)(void* dst, void* src);  // move-constructs into dst and destroys src
    void (*destroy)(void*);
  };
  template <class D>
  static constexpr Ops inline_ops{
      std::is_trivially_copyable_v<D>,
      [](void* p) { (*static_cast<D*>(p))(); },
      [](void* dst, void* src) {
        new (dst) D(std::move(*static_cast<D*>(src)));
        static_cast<D*>(src)->~D();
      },
      [](void* p) { static_cast<D*>(p)->~D(); }};
  template <class D>
  static constexpr Ops heap_ops{
      true,  // relocating the owning pointer is a copy of the pointer
      [](void* p) { (**static_cast<D**>(p))(); },
      [](void* dst, void* src) { *static_cast<D**>(dst) = *static_cast<D**>(src); },
      [](void* p) { delete *static_cast<D**>(p); }};

  void take(UniqueFunction& o) noexcept {
    ops_ = o.ops_;
    if (ops_ && ops_->trivial) {
      std::memcpy(buf_, o.buf_, kInline);
    } else if (ops_) {
      ops_->move(buf_, o.buf_);
    }
    o.ops_ = nullptr;
  }

  alignas(std::max_align_t) unsigned char buf_[kInline];
  const Ops* ops_ = nullptr;
};

}  // namespace shardsim
