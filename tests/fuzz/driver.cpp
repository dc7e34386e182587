// Runs a fuzz target over files, without libFuzzer: every build replays the seed
// corpus and the regression inputs (tests/fuzz/corpus/<target>) through the target.
// Usage: <target> FILE|DIR... ; exit 0 when every input ran (the target aborts on a
// broken property), 2 when an argument cannot be read.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {
bool run(const std::filesystem::path& file) {
  std::ifstream f(file, std::ios::binary);
  if (!f) return false;
  const std::vector<char> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
  return true;
}
}  // namespace

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  std::size_t inputs = 0;
  for (int i = 1; i < argc; ++i) {
    const fs::path arg(argv[i]);
    std::error_code ec;
    if (fs::is_directory(arg, ec)) {
      for (const auto& e : fs::directory_iterator(arg))
        if (e.is_regular_file()) inputs += run(e.path()) ? 1 : 0;
    } else if (run(arg)) {
      ++inputs;
    } else {
      std::fprintf(stderr, "%s: cannot read %s\n", argv[0], argv[i]);
      return 2;
    }
  }
  if (inputs == 0) {
    std::fprintf(stderr, "%s: no inputs\n", argv[0]);
    return 2;
  }
  std::printf("%s: %zu inputs ran\n", argv[0], inputs);
  return 0;
}
