// The DRAM model's request queues, made to allocate nothing once warm and to remove their front in
// O(1): they carry every burst of a run.
//   RingQueue: first in, first out, over one ring buffer that grows by doubling and never shrinks
//     (std::deque allocates and frees a block every few hundred bytes that pass through it).
//   FrontErasingVector: a vector whose erase() at the front moves nothing (a scheduler serves its
//     oldest request most of the time); an erase elsewhere shifts the elements after it.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include "support/error.hpp"

namespace npusim::dram {

template <class T>
class RingQueue {
 public:
  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }
  // The oldest element; requires !empty().
  const T& front() const {
    NPUSIM_CHECK(size_ > 0, "ring queue: front() of an empty queue");
    return buf_[head_];
  }
  // The i-th oldest element; requires i < size().
  const T& operator[](size_t i) const { return buf_[(head_ + i) & (buf_.size() - 1)]; }
  void push_back(T value) {
    if (size_ == buf_.size()) grow();
    buf_[(head_ + size_) & (buf_.size() - 1)] = std::move(value);
    ++size_;
  }
  // Requires !empty().
  void pop_front() {
    NPUSIM_CHECK(size_ > 0, "ring queue: pop_front() of an empty queue");
    head_ = (head_ + 1) & (buf_.size() - 1);
    --size_;
  }

 private:
  void grow() {
    std::vector<T> bigger(buf_.empty() ? 16 : 2 * buf_.size());
    for (size_t i = 0; i < size_; ++i) bigger[i] = std::move(buf_[(head_ + i) & (buf_.size() - 1)]);
    buf_.swap(bigger);
    head_ = 0;
  }

  std::vector<T> buf_;  // capacity a power of two
  size_t head_ = 0, size_ = 0;
};

template <class T>
class FrontErasingVector {
 public:
  bool empty() const { return head_ == v_.size(); }
  size_t size() const { return v_.size() - head_; }
  const T& operator[](size_t i) const { return v_[head_ + i]; }
  const T& front() const { return (*this)[0]; }
  void push_back(T value) {
    // Reuse the erased front before growing, once it is half the storage: compacting whenever the
    // storage is full would move every element at each push of a queue that stays nearly full.
    if (head_ > 0 && v_.size() == v_.capacity() && 2 * head_ >= v_.size()) {
      v_.erase(v_.begin(), v_.begin() + std::ptrdiff_t(head_));
      head_ = 0;
    }
    v_.push_back(std::move(value));
  }
  // Removes element i (< size()), keeping the order of the others.
  void erase(size_t i) {
    NPUSIM_CHECK(i < size(), "front-erasing vector: erase({}) of {} elements", i, size());
    if (i == 0) {
      ++head_;
    } else {
      v_.erase(v_.begin() + std::ptrdiff_t(head_ + i));
    }
    if (head_ == v_.size()) {
      v_.clear();
      head_ = 0;
    }
  }

 private:
  std::vector<T> v_;
  size_t head_ = 0;  // v_[0, head_) are erased
};

}  // namespace npusim::dram
