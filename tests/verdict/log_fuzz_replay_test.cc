// Runs log_fuzzer.cc's LLVMFuzzerTestOneInput over every file of its seed corpus, so that
// the seeds and every crash the fuzzer found stay fixed in an ordinary test run.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "gtest/gtest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

TEST(LogFuzzReplayTest, EveryCorpusFileRunsCleanly) {
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(FR_TEST_DATA_DIR "/fuzz/logs")) {
    if (!entry.is_regular_file()) continue;
    std::ifstream in(entry.path(), std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    SCOPED_TRACE(entry.path().string());
    EXPECT_EQ(LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()),
              0);
    ++files;
  }
  EXPECT_GE(files, 4) << "the seed corpus in " << FR_TEST_DATA_DIR "/fuzz/logs is missing";
}

}  // namespace
