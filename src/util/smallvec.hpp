// A vector of trivially copyable values that keeps up to N of them inline. Buffers and inboxes of
// millions of nodes are mostly one or two items long; this keeps them off the heap.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <type_traits>

namespace collv {

template <typename T, std::uint32_t N>
class SmallVec {
  static_assert(std::is_trivially_copyable_v<T>);

 public:
  static constexpr std::uint32_t kMaxSize = 0xFFFFFFFFu;

  SmallVec() = default;
  SmallVec(const SmallVec& o) { assign(o.data(), o.size_); }
  SmallVec(SmallVec&& o) noexcept { steal(o); }
  SmallVec& operator=(const SmallVec& o) {
    if (this != &o) assign(o.data(), o.size_);
    return *this;
  }
  SmallVec& operator=(SmallVec&& o) noexcept {
    if (this != &o) {
      release();
      steal(o);
    }
    return *this;
  }
  ~SmallVec() { release(); }

  std::uint32_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T* data() { return cap_ > N ? heap_ : inline_; }
  const T* data() const { return cap_ > N ? heap_ : inline_; }
  T& operator[](std::uint32_t i) { return data()[i]; }
  const T& operator[](std::uint32_t i) const { return data()[i]; }
  T* begin() { return data(); }
  T* end() { return data() + size_; }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size_; }

  void clear() { size_ = 0; }
  void reserve(std::uint32_t n) {
    if (n <= cap_) return;
    // Doubling in 64 bits: a capacity near 2^32 must not wrap to a small one.
    auto ncap = static_cast<std::uint32_t>(
        std::min<std::uint64_t>(std::max<std::uint64_t>(n, std::uint64_t{cap_} * 2), kMaxSize));
    T* p = static_cast<T*>(std::malloc(sizeof(T) * std::size_t{ncap}));
    if (!p) throw std::bad_alloc();
    if (size_) std::memcpy(p, data(), sizeof(T) * size_);
    if (cap_ > N) std::free(heap_);
    heap_ = p;
    cap_ = ncap;
  }
  void push_back(const T& v) {
    if (size_ == cap_) {
      if (size_ == kMaxSize) throw std::length_error("a buffer of more than 2^32-1 items");
      reserve(size_ + 1);
    }
    data()[size_++] = v;
  }
  void resize(std::uint32_t n, const T& fill = T{}) {
    reserve(n);
    for (std::uint32_t i = size_; i < n; ++i) data()[i] = fill;
    size_ = n;
  }
  void erase_at(std::uint32_t i) {
    T* d = data();
    if (i + 1 < size_) std::memmove(d + i, d + i + 1, sizeof(T) * (size_ - i - 1));
    --size_;
  }
  void assign(const T* src, std::uint32_t n) {
    if (n > cap_) {
      release();
      reserve(n);
    }
    if (n <= N) {  // the usual case (one or two items): no call into the C library
      T* d = data();
      for (std::uint32_t i = 0; i < n; ++i) d[i] = src[i];  // src is d itself or elsewhere
    } else {
      std::memmove(data(), src, sizeof(T) * n);  // src may overlap data()
    }
    size_ = n;
  }
  bool operator==(const SmallVec& o) const {
    return size_ == o.size_ && std::equal(begin(), end(), o.begin());
  }

 private:
  void release() {
    if (cap_ > N) std::free(heap_);
    cap_ = N;
    size_ = 0;
  }
  void steal(SmallVec& o) {
    size_ = o.size_;
    cap_ = o.cap_;
    if (o.cap_ > N) {
      heap_ = o.heap_;
    } else {
      for (std::uint32_t i = 0; i < o.size_; ++i) inline_[i] = o.inline_[i];
    }
    o.cap_ = N;
    o.size_ = 0;
  }

  std::uint32_t size_ = 0;
  std::uint32_t cap_ = N;
  union {
    T inline_[N];
    T* heap_;
  };
};

}  // namespace collv
