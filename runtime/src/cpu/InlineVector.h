//===- InlineVector.h - a vector that keeps its first N elements inline ---===//
//
// std::vector's interface (the part the runtime uses) over storage for N
// elements inside the object, moving to the heap only beyond N. Shapes and
// a kernel call's operand lists are short, so building them never touches
// the allocator: the compiled entry points make no heap allocation while
// they run (docs/runtime.md, "memory"). Plain C++17.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_CPU_INLINEVECTOR_H
#define LLMC_RUNTIME_CPU_INLINEVECTOR_H

#include <algorithm>
#include <cstddef>
#include <initializer_list>
#include <iterator>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

namespace llmc::cpu {

template <typename T, size_t N> class InlineVector {
public:
  using value_type = T;
  using size_type = size_t;
  using difference_type = std::ptrdiff_t;
  using reference = T &;
  using const_reference = const T &;
  using pointer = T *;
  using const_pointer = const T *;
  using iterator = T *;
  using const_iterator = const T *;
  using reverse_iterator = std::reverse_iterator<iterator>;
  using const_reverse_iterator = std::reverse_iterator<const_iterator>;

  InlineVector() = default;
  explicit InlineVector(size_t n) { resize(n); }
  InlineVector(size_t n, const T &value) { assign(n, value); }
  template <typename It, typename = typename std::iterator_traits<It>::iterator_category>
  InlineVector(It first, It last) {
    assign(first, last);
  }
  InlineVector(std::initializer_list<T> init) { assign(init.begin(), init.end()); }
  InlineVector(const std::vector<T> &v) { assign(v.begin(), v.end()); }
  InlineVector(const InlineVector &o) { assign(o.begin(), o.end()); }
  InlineVector(InlineVector &&o) noexcept { take(std::move(o)); }
  ~InlineVector() {
    clear();
    release();
  }
  InlineVector &operator=(const InlineVector &o) {
    if (this != &o)
      assign(o.begin(), o.end());
    return *this;
  }
  InlineVector &operator=(InlineVector &&o) noexcept {
    if (this != &o) {
      clear();
      release();
      take(std::move(o));
    }
    return *this;
  }
  InlineVector &operator=(std::initializer_list<T> init) {
    assign(init.begin(), init.end());
    return *this;
  }
  operator std::vector<T>() const { return std::vector<T>(begin(), end()); }

  T *begin() { return ptr; }
  T *end() { return ptr + count; }
  const T *begin() const { return ptr; }
  const T *end() const { return ptr + count; }
  const T *cbegin() const { return ptr; }
  const T *cend() const { return ptr + count; }
  reverse_iterator rbegin() { return reverse_iterator(end()); }
  reverse_iterator rend() { return reverse_iterator(begin()); }
  const_reverse_iterator rbegin() const { return const_reverse_iterator(end()); }
  const_reverse_iterator rend() const { return const_reverse_iterator(begin()); }

  size_t size() const { return count; }
  bool empty() const { return count == 0; }
  size_t capacity() const { return cap; }
  T *data() { return ptr; }
  const T *data() const { return ptr; }
  T &operator[](size_t i) { return ptr[i]; }
  const T &operator[](size_t i) const { return ptr[i]; }
  T &front() { return ptr[0]; }
  const T &front() const { return ptr[0]; }
  T &back() { return ptr[count - 1]; }
  const T &back() const { return ptr[count - 1]; }

  void reserve(size_t n) {
    if (n <= cap)
      return;
    T *fresh = static_cast<T *>(::operator new(n * sizeof(T), std::align_val_t(alignof(T))));
    for (size_t i = 0; i < count; ++i) {
      new (fresh + i) T(std::move(ptr[i]));
      ptr[i].~T();
    }
    release();
    ptr = fresh;
    cap = n;
  }
  void clear() {
    for (size_t i = 0; i < count; ++i)
      ptr[i].~T();
    count = 0;
  }
  void resize(size_t n) {
    reserve(n);
    while (count > n)
      ptr[--count].~T();
    while (count < n)
      new (ptr + count++) T();
  }
  void resize(size_t n, const T &value) {
    reserve(n);
    while (count > n)
      ptr[--count].~T();
    while (count < n)
      new (ptr + count++) T(value);
  }
  void assign(size_t n, const T &value) {
    clear();
    resize(n, value);
  }
  template <typename It, typename = typename std::iterator_traits<It>::iterator_category>
  void assign(It first, It last) {
    clear();
    if constexpr (std::is_base_of_v<std::forward_iterator_tag,
                                    typename std::iterator_traits<It>::iterator_category>)
      reserve(size_t(std::distance(first, last)));
    for (; first != last; ++first)
      emplace_back(*first);
  }
  void assign(std::initializer_list<T> init) { assign(init.begin(), init.end()); }

  template <typename... A> T &emplace_back(A &&...args) {
    if (count == cap)
      grow(count + 1);
    new (ptr + count) T(std::forward<A>(args)...);
    return ptr[count++];
  }
  void push_back(const T &v) { emplace_back(v); }
  void push_back(T &&v) { emplace_back(std::move(v)); }
  void pop_back() { ptr[--count].~T(); }

  T *insert(const T *pos, const T &v) { return insert(pos, size_t(1), v); }
  T *insert(const T *pos, size_t n, const T &v) {
    size_t at = size_t(pos - ptr);
    T copy = v; // v may live in this vector
    openGap(at, n);
    for (size_t i = 0; i < n; ++i)
      ptr[at + i] = copy;
    return ptr + at;
  }
  template <typename It, typename = typename std::iterator_traits<It>::iterator_category>
  T *insert(const T *pos, It first, It last) {
    size_t at = size_t(pos - ptr);
    InlineVector copy(first, last); // the range may lie in this vector
    openGap(at, copy.size());
    std::move(copy.begin(), copy.end(), ptr + at);
    return ptr + at;
  }
  T *insert(const T *pos, std::initializer_list<T> init) {
    return insert(pos, init.begin(), init.end());
  }
  T *erase(const T *pos) { return erase(pos, pos + 1); }
  T *erase(const T *first, const T *last) {
    size_t at = size_t(first - ptr), n = size_t(last - first);
    std::move(ptr + at + n, ptr + count, ptr + at);
    for (size_t i = 0; i < n; ++i)
      ptr[--count].~T();
    return ptr + at;
  }

  friend bool operator==(const InlineVector &a, const InlineVector &b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin());
  }
  friend bool operator!=(const InlineVector &a, const InlineVector &b) { return !(a == b); }
  friend bool operator<(const InlineVector &a, const InlineVector &b) {
    return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end());
  }
  friend bool operator==(const InlineVector &a, const std::vector<T> &b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin());
  }
  friend bool operator!=(const InlineVector &a, const std::vector<T> &b) { return !(a == b); }

private:
  bool isInline() const { return ptr == reinterpret_cast<const T *>(inlineStorage); }
  void release() {
    if (!isInline())
      ::operator delete(ptr, std::align_val_t(alignof(T)));
    ptr = reinterpret_cast<T *>(inlineStorage);
    cap = N;
  }
  void grow(size_t atLeast) { reserve(std::max(atLeast, cap * 2)); }
  /// Makes room for n elements at `at` (the elements there move up).
  void openGap(size_t at, size_t n) {
    if (n == 0)
      return;
    if (count + n > cap)
      grow(count + n);
    for (size_t i = count; i-- > at;) {
      if (i + n >= count)
        new (ptr + i + n) T(std::move(ptr[i]));
      else
        ptr[i + n] = std::move(ptr[i]);
    }
    // Slots [at, at + n) that lie past the old end were never constructed.
    for (size_t i = at; i < at + n; ++i)
      if (i >= count)
        new (ptr + i) T();
    count += n;
  }
  void take(InlineVector &&o) {
    if (o.isInline()) {
      for (size_t i = 0; i < o.count; ++i)
        new (ptr + i) T(std::move(o.ptr[i]));
      count = o.count;
      o.clear();
    } else {
      ptr = o.ptr, count = o.count, cap = o.cap;
      o.ptr = reinterpret_cast<T *>(o.inlineStorage), o.count = 0, o.cap = N;
    }
  }

  alignas(T) unsigned char inlineStorage[N * sizeof(T)];
  T *ptr = reinterpret_cast<T *>(inlineStorage);
  size_t count = 0, cap = N;
};

} // namespace llmc::cpu

#endif // LLMC_RUNTIME_CPU_INLINEVECTOR_H
