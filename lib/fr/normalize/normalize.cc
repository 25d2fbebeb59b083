#include "fr/normalize/normalize.h"

#include <charconv>
#include <new>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "fmt/format.h"
#include "fr/base/status_macros.h"
#include "fr/normalize/normalizer.h"
#include "fr/normalize/recorder_semantics.h"

namespace fr {
namespace normalize_internal {
namespace {

// Oddity names that carry a key from the file keep at most this many bytes of it: a long key
// repeated by memo hits must not be copied in full each time it is counted.
constexpr size_t kMaxOddityKeyBytes = 64;
// Distinct oddity names kept per dump; further kinds are counted together under kMoreOddities.
constexpr size_t kMaxOddityNames = 256;
constexpr std::string_view kMoreOddities = "more_oddity_kinds";

}  // namespace

bool ParseInt(std::string_view text, int64_t* value) {
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, *value);
  return ec == std::errc() && ptr == end && !text.empty();
}

// `key` cut to kMaxOddityKeyBytes at a UTF-8 character boundary.
std::string_view OddityKey(std::string_view key) {
  if (key.size() <= kMaxOddityKeyBytes) return key;
  size_t end = kMaxOddityKeyBytes;
  while (end > 0 && (static_cast<unsigned char>(key[end]) & 0xc0) == 0x80) --end;
  return key.substr(0, end);
}

absl::Status Normalizer::Run() {
  ValueId root = doc_.root();
  if (root == kNoValue) return absl::InvalidArgumentError("empty document");
  dump_.shape_list_offsets.push_back(0);
  dump_.dtype_list_offsets.push_back(0);
  dump_.stack_offsets.push_back(0);
  ValueKind kind = doc_.kind(root);
  if (kind == ValueKind::kList) {
    // The 2023 format: a bare list of entries, no version.
    return NormalizeEntries(root);
  }
  if (kind != ValueKind::kDict) {
    return Error(root, "top level",
                 "expected a dict (dump version >= 1.0) or a list of entries (2023 format)");
  }
  ValueId entries = kNoValue;
  ValueId pg_config = kNoValue;
  ValueId pg_status = kNoValue;
  bool has_version = false;
  std::span<const ValueId> pairs = doc_.items(root);
  for (size_t i = 0; i + 1 < pairs.size(); i += 2) {
    ValueId key = pairs[i];
    ValueId value = pairs[i + 1];
    if (doc_.kind(key) != ValueKind::kString) {
      Oddity("non_string_top_level_key");
      continue;
    }
    std::string_view name = doc_.string_value(key);
    budget_.VisitText(name.size());
    if (name == "version") {
      FR_RETURN_IF_ERROR(NormalizeVersion(value));
      has_version = true;
    } else if (name == "entries") {
      entries = value;
    } else if (name == "pg_config") {
      pg_config = value;
    } else if (name == "pg_status") {
      pg_status = value;
    } else if (name == "nccl_version" || name == "comm_lib_version") {
      FR_ASSIGN_OR_RETURN(dump_.comm_lib_version, StringOrError(value, name));
    } else if (name.size() > 11 && name.substr(name.size() - 11) == "_comm_state") {
      // nccl_comm_state, and the renamed copies in vendor forks (hccl_, bccl_, mccl_...).
      FR_RETURN_IF_ERROR(NormalizeCommState(value, OddityKey(name)));
    } else {
      Oddity(fmt::format("unknown_top_level_key:{}", OddityKey(name)));
    }
    if (budget_.exceeded()) return BudgetError(value, fmt::format("'{}'", OddityKey(name)));
  }
  if (!has_version) Oddity("missing_version");
  if (pg_config != kNoValue) FR_RETURN_IF_ERROR(NormalizePgConfig(pg_config));
  if (entries == kNoValue) {
    dump_.has_entries_key = false;
  } else {
    FR_RETURN_IF_ERROR(NormalizeEntries(entries));
  }
  if (pg_status != kNoValue) FR_RETURN_IF_ERROR(NormalizePgStatus(pg_status));
  return absl::OkStatus();
}

absl::Status Normalizer::Error(ValueId value, std::string_view where, std::string_view what) const {
  return absl::InvalidArgumentError(fmt::format("{} (byte {}): {}, got {}", where,
                                                doc_.source_offset(value), what,
                                                ValueKindName(doc_.kind(value))));
}

// Over a budget of NormalizeLimits at `value`.
// Out of line and cold, as every error: the per-entry paths that check budgets stay small.
absl::Status Normalizer::BudgetError(ValueId value, std::string_view where) const {
  return absl::ResourceExhaustedError(
      fmt::format("{} (byte {}): {}", where, doc_.source_offset(value), budget_.Describe()));
}

absl::Status Normalizer::EntryBudgetError(ValueId entry, size_t index) const {
  return BudgetError(entry, fmt::format("entries[{}]", index));
}

// Counts an oddity by name: indexed, since a hostile file can name thousands of distinct ones.
void Normalizer::Oddity(std::string_view name) {
  auto it = oddity_index_.find(absl::string_view(name.data(), name.size()));
  if (it == oddity_index_.end()) {
    if (oddity_index_.size() >= kMaxOddityNames) {
      name = kMoreOddities;
      it = oddity_index_.find(absl::string_view(name.data(), name.size()));
    }
    if (it == oddity_index_.end()) {
      it = oddity_index_.emplace(std::string(name), dump_.oddities.size()).first;
      dump_.oddities.emplace_back(std::string(name), 0);
    }
  }
  ++dump_.oddities[it->second].second;
}

absl::StatusOr<std::string> Normalizer::StringOrError(ValueId value, std::string_view key) {
  if (doc_.kind(value) != ValueKind::kString) {
    return Error(value, fmt::format("'{}'", key), "expected a string");
  }
  budget_.VisitText(doc_.string_value(value).size());
  return std::string(doc_.string_value(value));
}

// Reads an int that may be written as a JSON string ("-1"), as pg_status values are.
absl::StatusOr<int64_t> Normalizer::IntLike(ValueId value, std::string_view where) {
  switch (doc_.kind(value)) {
    case ValueKind::kInt:
      return doc_.int_value(value);
    case ValueKind::kBool:
      return doc_.bool_value(value) ? 1 : 0;
    case ValueKind::kString: {
      int64_t parsed;
      budget_.VisitText(doc_.string_value(value).size());
      if (ParseInt(doc_.string_value(value), &parsed)) return parsed;
      break;
    }
    default:
      break;
  }
  return Error(value, where, "expected an integer");
}

// The entry key `key` of entries[index] holds a value of the wrong type.
absl::Status Normalizer::FieldError(ValueId field, size_t index, ValueId key,
                                    std::string_view expected) const {
  return Error(field, FieldWhere(index, key), expected);
}

}  // namespace normalize_internal

absl::StatusOr<RankDump> NormalizeDump(const Document& document, int64_t rank,
                                       const NormalizeLimits& limits, NormalizeCost* cost) {
  // The budgets keep memory proportional to the input, but the input itself may be too large for
  // this machine: that is this file's error, not the end of a run over many files.
  try {
    RankDump dump;
    dump.rank = rank;
    normalize_internal::Normalizer normalizer(document, limits, &dump);
    absl::Status status = normalizer.Run();
    if (cost != nullptr) *cost = normalizer.cost();
    FR_RETURN_IF_ERROR(status);
    ApplyRecorderSemantics(&dump);
    return dump;
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(
        fmt::format("out of memory normalizing a dump decoded from {} bytes into {} values",
                    document.input().size(), document.value_count()));
  }
}

}  // namespace fr
