// libFuzzer target for DecodePickle: any bytes must give a Document or an error, never a crash,
// hang or unbounded allocation, and a Document must be internally consistent. A document is then
// normalized within small budgets, which shared references must not escape. The same bytes go
// through the direct reader of PyTorch's layout (ReadTorchPickleDirect): whenever it accepts them,
// the general path must accept them too and normalize to the identical RankDump, which must read
// the same once its entries are packed as the loader keeps them.
//
//   cmake --preset fuzz && cmake --build build/fuzz --target pickle_fuzzer
//   build/fuzz/fuzz/pickle_fuzzer -max_total_time=180 tests/data/fuzz/pickle
//
// The same function runs over the seed corpus in pickle_fuzz_replay_test.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "fr/decode/pickle_decoder.h"
#include "fr/model/rank_dump_equal.h"
#include "fr/normalize/direct_pickle_reader.h"
#include "fr/normalize/normalize.h"
#include "simdjson.h"

namespace {

// Crashes (so that the fuzzer reports it) when `condition` is false.
void Check(bool condition) {
  if (!condition) std::abort();
}

// Walks every value of `doc` and checks what consumers rely on: child ids in range, strings inside
// the input and valid UTF-8, no container deeper than the limit, so no cycle.
void CheckDocument(const fr::Document& doc, uint32_t max_depth) {
  Check(doc.root() < doc.value_count());
  std::vector<uint32_t> height(doc.value_count(), 0);
  for (fr::ValueId id = 0; id < doc.value_count(); ++id) {
    switch (doc.kind(id)) {
      case fr::ValueKind::kString: {
        std::string_view s = doc.string_value(id);
        Check(simdjson::validate_utf8(s.data(), s.size()));
        break;
      }
      case fr::ValueKind::kDict:
        Check(doc.items(id).size() % 2 == 0);
        [[fallthrough]];
      case fr::ValueKind::kList:
      case fr::ValueKind::kTuple:
        for (fr::ValueId child : doc.items(id)) Check(child < doc.value_count());
        break;
      default:
        break;
    }
  }
  // A container's id may be smaller or larger than its children's, so heights are found by
  // relaxation; it settles within max_depth rounds unless the document has a cycle.
  bool changed = true;
  for (uint32_t round = 0; changed; ++round) {
    Check(round <= max_depth + 1);  // a cycle or a too deep document never settles
    changed = false;
    for (fr::ValueId id = 0; id < doc.value_count(); ++id) {
      fr::ValueKind kind = doc.kind(id);
      if (kind != fr::ValueKind::kList && kind != fr::ValueKind::kTuple &&
          kind != fr::ValueKind::kDict) {
        continue;
      }
      uint32_t h = 1;
      for (fr::ValueId child : doc.items(id)) h = std::max(h, height[child] + 1);
      if (h != height[id]) {
        height[id] = h;
        changed = true;
      }
    }
  }
  for (uint32_t h : height) Check(h <= max_depth);
  // Shared marks: exactly the containers with several parents (consumers memoize only those by
  // value id, so a missing mark would expand a shared value once per path).
  std::vector<uint8_t> parents(doc.value_count(), 0);
  for (fr::ValueId id = 0; id < doc.value_count(); ++id) {
    fr::ValueKind kind = doc.kind(id);
    if (kind != fr::ValueKind::kList && kind != fr::ValueKind::kTuple &&
        kind != fr::ValueKind::kDict) {
      continue;
    }
    for (fr::ValueId child : doc.items(id)) parents[child] = std::min(parents[child] + 1, 2);
  }
  for (fr::ValueId id = 0; id < doc.value_count(); ++id) {
    Check(doc.shared(id) == (parents[id] > 1 && doc.kind(id) >= fr::ValueKind::kList));
  }
}

// Budgets small enough for the fuzzer to reach.
fr::NormalizeLimits SmallLimits() {
  fr::NormalizeLimits limits;
  limits.kept_bytes_per_input_byte = 16;
  limits.min_kept_bytes = 1 << 20;
  limits.visits_per_input_byte = 16;
  limits.min_visits = 1 << 16;
  return limits;
}

// Normalizes within small budgets: an error names the budget, and a success stayed within it.
void CheckNormalizes(const fr::Document& doc) {
  fr::NormalizeLimits limits = SmallLimits();
  fr::NormalizeCost cost;
  absl::StatusOr<fr::RankDump> dump = fr::NormalizeDump(doc, 0, limits, &cost);
  if (dump.ok()) {
    Check(cost.kept_bytes <= cost.max_kept_bytes && cost.visits <= cost.max_visits);
  } else if (dump.status().code() == absl::StatusCode::kResourceExhausted) {
    Check(dump.status().message().find("NormalizeLimits") != std::string_view::npos);
  } else {
    Check(dump.status().code() == absl::StatusCode::kInvalidArgument);
  }
}

// The direct reader may decline anything; what it accepts must be exactly the general path's.
void CheckDirectReader(std::string_view bytes, const absl::StatusOr<fr::Document>& doc) {
  for (const fr::NormalizeLimits& limits : {SmallLimits(), fr::NormalizeLimits{}}) {
    fr::DirectReadResult direct = fr::ReadTorchPickleDirect(bytes, 3, limits);
    if (!direct.dump.has_value()) {
      Check(!direct.decline_reason.empty());
      continue;
    }
    Check(doc.ok());
    absl::StatusOr<fr::RankDump> general = fr::NormalizeDump(*doc, 3, limits);
    Check(general.ok());
    Check(fr::DescribeRankDumpDifference(*direct.dump, *general).empty());
    // What the loader keeps: the same entries, packed, must read back exactly.
    general->entries.Pack();
    Check(fr::DescribeRankDumpDifference(*direct.dump, *general).empty());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fr::PickleLimits limits;
  limits.max_depth = 64;  // smaller than the default so that the fuzzer reaches the limit
  auto input = fr::Buffer::FromString(std::string(reinterpret_cast<const char*>(data), size));
  absl::StatusOr<fr::Document> doc = fr::DecodePickle(input, limits);
  CheckDirectReader(input->bytes(), doc);
  if (doc.ok()) {
    CheckDocument(*doc, limits.max_depth);
    CheckNormalizes(*doc);
  } else {
    // Every message names the byte offset.
    Check(doc.status().message().substr(0, 5) == "byte ");
  }
  return 0;
}
