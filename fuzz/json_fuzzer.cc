// libFuzzer target for the read stage + JSON decoder: bytes go through ReadInputBytes (so zstd and
// gzip decompression are fuzzed too) and, when they read as JSON, through DecodeJson. Checks the
// contracts callers rely on: no crash, error messages that name a byte offset, and documents whose
// values all lie inside the input.
//
//   build/fuzz/fuzz/json_fuzzer -max_total_time=180 tests/data/fuzz/json
//
// Also compiled into json_fuzz_replay_test, which replays the seed corpus under GoogleTest.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "fr/decode/json_decoder.h"
#include "fr/read/input_file.h"

namespace {

void Check(bool condition) {
  if (!condition) std::abort();
}

void CheckDocument(const fr::Document& doc) {
  Check(doc.root() < doc.value_count());
  for (fr::ValueId id = 0; id < doc.value_count(); ++id) {
    Check(doc.source_offset(id) < doc.input().size());
    switch (doc.kind(id)) {
      case fr::ValueKind::kList:
      case fr::ValueKind::kDict:
        for (fr::ValueId child : doc.items(id)) Check(child > id && child < doc.value_count());
        if (doc.kind(id) == fr::ValueKind::kDict) {
          Check(doc.items(id).size() % 2 == 0);
          for (size_t i = 0; i < doc.items(id).size(); i += 2) {
            Check(doc.kind(doc.items(id)[i]) == fr::ValueKind::kString);
          }
        }
        break;
      case fr::ValueKind::kString:
        (void)doc.string_value(id).size();
        break;
      default:
        break;
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fr::ReadOptions options;
  options.max_decompressed_bytes = 1 << 24;  // keep each run small
  absl::StatusOr<fr::InputFile> file = fr::ReadInputBytes(
      fr::Buffer::FromString(std::string(reinterpret_cast<const char*>(data), size)), options);
  if (!file.ok() || file->encoding != fr::Encoding::kJson) return 0;
  fr::JsonLimits limits;
  limits.max_depth = 64;
  absl::StatusOr<fr::Document> doc = fr::DecodeJson(file->bytes, limits);
  if (!doc.ok()) {
    std::string message(doc.status().message());
    Check(message.rfind("byte ", 0) == 0);
    Check(doc.status().code() == absl::StatusCode::kInvalidArgument ||
          doc.status().code() == absl::StatusCode::kDataLoss);
    return 0;
  }
  CheckDocument(*doc);
  return 0;
}
