// Two threads pass a value back and forth through cache lines: the physical floor of
// any shared-memory lock handoff on this machine (no MPI). "one-way": each thread
// writes a line the other spins on (the grant-line pattern); "one-word": both use
// one word. Build: g++ -O2 -std=c++20 -pthread line_pingpong.cpp -o line_pingpong
#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>

alignas(128) std::atomic<unsigned> a{0};
alignas(128) std::atomic<unsigned> b{0};

int main() {
  const unsigned n = 2000000;
  using clk = std::chrono::steady_clock;
  std::thread t([&] {
    for (unsigned i = 1; i <= n; i++) {
      while (a.load(std::memory_order_acquire) != i) {
      }
      b.store(i, std::memory_order_release);
    }
  });
  auto s = clk::now();
  for (unsigned i = 1; i <= n; i++) {
    a.store(i, std::memory_order_release);
    while (b.load(std::memory_order_acquire) != i) {
    }
  }
  auto e = clk::now();
  t.join();
  std::printf("one-way %.1f ns\n", std::chrono::duration<double, std::nano>(e - s).count() / n / 2);
  a = 0;
  std::thread t2([&] {
    for (unsigned i = 0; i < n; i++) {
      while (a.load(std::memory_order_acquire) != 2 * i + 1) {
      }
      a.store(2 * i + 2, std::memory_order_release);
    }
  });
  s = clk::now();
  for (unsigned i = 0; i < n; i++) {
    a.store(2 * i + 1, std::memory_order_release);
    while (a.load(std::memory_order_acquire) != 2 * i + 2) {
    }
  }
  e = clk::now();
  t2.join();
  std::printf("one-word one-way %.1f ns\n", std::chrono::duration<double, std::nano>(e - s).count() / n / 2);
}
