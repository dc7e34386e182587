// tests/fuzz/input.hpp — what the fuzz targets share: FUZZ_CHECK, and a reader of
// typed values off the input bytes (past the end every read gives zero, so any
// input is a complete program).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

// A property of the target: a violation aborts, which libFuzzer reports with the
// input (and the corpus driver as a crash).
#define FUZZ_CHECK(c)       \
  do {                      \
    if (!(c)) std::abort(); \
  } while (0)

namespace tally::fuzz {

class input {
 public:
  input(const std::uint8_t* data, std::size_t size) noexcept : p_(data), left_(size) {}

  bool empty() const noexcept { return left_ == 0; }
  template <class T>
  T take() noexcept {
    T v{};
    const std::size_t k = left_ < sizeof v ? left_ : sizeof v;
    if (k > 0) std::memcpy(&v, p_, k);
    p_ += k;
    left_ -= k;
    return v;
  }
  // A value in [0, bound) (bound > 0).
  std::uint32_t below(std::uint32_t bound) noexcept { return take<std::uint8_t>() % bound; }

 private:
  const std::uint8_t* p_;
  std::size_t left_;
};

}  // namespace tally::fuzz
