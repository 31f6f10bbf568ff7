#pragma once
// SharedVector<T>: a vector whose elements copies share until one is changed (copy-on-write per
// element). A Case's experts are the bulk of it (~225 MB at the M shape) and a check makes a dozen
// transformed copies of it (PERM, BATCH, PAD, GSCALE, SCALE1, PARAM, ...), most changing no expert
// and GSCALE one: copying the case now copies pointers, and an element is copied when it is changed.
//
// Reading goes through the const members (const operator[], const iteration), which never copy.
// Mutable access (non-const operator[], at, front, back, dereferencing a mutable iterator) first
// gives this vector its own copy of the element if another vector shares it, so a change never
// shows through another copy. One rule follows: a mutable reference must not outlive a copy of its
// vector made after it was taken (the copy would share the element the reference then changes);
// take the reference again after copying.
//
// Content stamps: every element carries a number, new from a process-wide counter whenever the
// element is made or handed out mutably. After freeze(), every mutable access copies the element
// first (even with no other vector sharing it), so a frozen element never changes and
// content_stamp(i) names its content: a consumer can remember a hash of ~3 MB of expert weights under
// the stamp instead of hashing them again on every kernel run (core/expert_fingerprint.h). Copies of
// the vector keep the elements frozen; an element changed through a copy is a new, unfrozen one.
//
// Example:
//   moefuzz::SharedVector<Big> a(3);
//   moefuzz::SharedVector<Big> b = a;   // shares all three
//   b[1].x = 5;                          // b gets its own element 1; a[1] is unchanged
//   const bool same = a.shares(0, b);   // true: element 0 is still one object
//   a.freeze();                          // a.content_stamp(0) now names element 0's content
#include <atomic>
#include <compare>
#include <cstddef>
#include <iterator>
#include <memory>
#include <optional>
#include <stdexcept>
#include <utility>
#include <vector>

namespace moefuzz {

// The next content stamp (never 0, unique in the process).
inline uint64_t next_content_stamp() {
  static std::atomic<uint64_t> counter{0};
  return counter.fetch_add(1, std::memory_order_relaxed) + 1;
}

template <class T>
class SharedVector {
  struct Slot {
    std::shared_ptr<T> item;
    uint64_t stamp = 0;
    bool frozen = false;  // every mutable access copies first, even when no other vector shares it
  };
  static Slot make_slot(T x) { return {std::make_shared<T>(std::move(x)), next_content_stamp(), false}; }

  static T& own(Slot& s) {
    if (s.frozen || s.item.use_count() > 1) s.item = std::make_shared<T>(*s.item);
    s.frozen = false;
    s.stamp = next_content_stamp();  // the caller may change the element through the reference
    return *s.item;
  }

 public:
  using value_type = T;
  using size_type = size_t;
  using reference = T&;
  using const_reference = const T&;

  template <bool Const>
  class Iterator {
    using SlotPtr = std::conditional_t<Const, const Slot*, Slot*>;

   public:
    using iterator_category = std::random_access_iterator_tag;
    using value_type = T;
    using difference_type = std::ptrdiff_t;
    using reference = std::conditional_t<Const, const T&, T&>;
    using pointer = std::conditional_t<Const, const T*, T*>;
    Iterator() = default;
    explicit Iterator(SlotPtr p) : p_(p) {}
    operator Iterator<true>() const { return Iterator<true>(p_); }
    reference operator*() const {
      if constexpr (Const)
        return *p_->item;
      else
        return own(*p_);
    }
    pointer operator->() const { return &**this; }
    reference operator[](difference_type n) const { return *(*this + n); }
    Iterator& operator++() {
      ++p_;
      return *this;
    }
    Iterator operator++(int) { return Iterator(p_++); }
    Iterator& operator--() {
      --p_;
      return *this;
    }
    Iterator operator--(int) { return Iterator(p_--); }
    Iterator& operator+=(difference_type n) {
      p_ += n;
      return *this;
    }
    Iterator& operator-=(difference_type n) {
      p_ -= n;
      return *this;
    }
    friend Iterator operator+(Iterator it, difference_type n) { return it += n; }
    friend Iterator operator+(difference_type n, Iterator it) { return it += n; }
    friend Iterator operator-(Iterator it, difference_type n) { return it -= n; }
    friend difference_type operator-(const Iterator& a, const Iterator& b) { return a.p_ - b.p_; }
    friend bool operator==(const Iterator& a, const Iterator& b) { return a.p_ == b.p_; }
    friend auto operator<=>(const Iterator& a, const Iterator& b) { return a.p_ <=> b.p_; }

   private:
    SlotPtr p_ = nullptr;
  };
  using iterator = Iterator<false>;
  using const_iterator = Iterator<true>;

  SharedVector() = default;
  explicit SharedVector(size_t n) { resize(n); }
  SharedVector(std::vector<T>&& v) {  // NOLINT(google-explicit-constructor): a vector's drop-in
    items_.reserve(v.size());
    for (T& x : v) items_.push_back(make_slot(std::move(x)));
  }

  size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  void reserve(size_t n) { items_.reserve(n); }
  void clear() { items_.clear(); }
  void resize(size_t n) {
    const size_t old = items_.size();
    items_.resize(n);
    for (size_t i = old; i < n; ++i) items_[i] = make_slot(T());
  }
  void push_back(T x) { items_.push_back(make_slot(std::move(x))); }

  const T& operator[](size_t i) const { return *items_[i].item; }
  T& operator[](size_t i) { return own(items_[i]); }
  const T& at(size_t i) const { return *items_.at(i).item; }
  T& at(size_t i) { return own(items_.at(i)); }
  const T& front() const { return *items_.front().item; }
  T& front() { return own(items_.front()); }
  const T& back() const { return *items_.back().item; }
  T& back() { return own(items_.back()); }

  const_iterator begin() const { return const_iterator(items_.data()); }
  const_iterator end() const { return const_iterator(items_.data() + items_.size()); }
  iterator begin() { return iterator(items_.data()); }
  iterator end() { return iterator(items_.data() + items_.size()); }

  // Element i of this vector and element j of `other` are one object (a change of either would copy).
  bool shares(size_t i, const SharedVector& other, size_t j) const {
    return items_[i].item == other.items_[j].item;
  }
  bool shares(size_t i, const SharedVector& other) const { return shares(i, other, i); }
  // Element i becomes element j of `other`, shared (no copy): a permutation of elements.
  void set_shared(size_t i, const SharedVector& other, size_t j) { items_[i] = other.items_[j]; }
  // Element i becomes x (the old element is not copied first, as assignment through operator[] would).
  void set(size_t i, T x) { items_[i] = make_slot(std::move(x)); }

  // Every later mutable access copies its element first: from now on the elements are fixed, and
  // their stamps name their content (content_stamp). Call it where no mutable reference into the
  // vector is held (one taken before would change a frozen element): materialize() freezes a new
  // case's experts before returning it.
  void freeze() {
    for (Slot& s : items_) s.frozen = true;
  }
  // Element i's stamp when it is frozen (its content can no longer change), else nullopt.
  std::optional<uint64_t> content_stamp(size_t i) const {
    const Slot& s = items_[i];
    return s.frozen ? std::optional<uint64_t>(s.stamp) : std::nullopt;
  }

  friend bool operator==(const SharedVector& a, const SharedVector& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (a.items_[i].item != b.items_[i].item && !(*a.items_[i].item == *b.items_[i].item)) return false;
    return true;
  }

 private:
  std::vector<Slot> items_;
};

}  // namespace moefuzz
