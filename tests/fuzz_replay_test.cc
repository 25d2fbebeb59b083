// One fuzz target as an ordinary test: runs its LLVMFuzzerTestOneInput over every file of its seed
// corpus (the seeds, and every crash the fuzzer ever found), so that they stay fixed in builds
// without libFuzzer and under ASan. The targets abort on any broken invariant. Built once per
// target by fr_add_fuzz_replay_test (tests/CMakeLists.txt), which sets the corpus and the least
// number of files it must hold, and names the suite after the target (PickleFuzzReplayTest ...).
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "gtest/gtest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

TEST(FR_FUZZ_SUITE, EveryCorpusFileRunsCleanly) {
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(FR_FUZZ_CORPUS_DIR)) {
    if (!entry.is_regular_file()) continue;
    std::ifstream in(entry.path(), std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    SCOPED_TRACE(entry.path().string());
    EXPECT_EQ(LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()),
              0);
    ++files;
  }
  EXPECT_GE(files, FR_FUZZ_MIN_FILES)
      << "the seed corpus in " << FR_FUZZ_CORPUS_DIR << " is missing";
}

}  // namespace
