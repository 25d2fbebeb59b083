// The groups of a dump: pg_config (every version's layout of it), pg_status and the
// communicators' state, and the rank lists that PyTorch writes as text.
#include <algorithm>
#include <array>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "fmt/format.h"
#include "fr/base/status_macros.h"
#include "fr/normalize/normalizer.h"

namespace fr {
namespace {

// ParseRanksString, remembering the long strings parsed on this thread: every dump of a job
// spells out the same world group, thousands of ranks long, and each of its data-parallel groups
// (as many distinct lists as the model-parallel degree, tens of thousands of ranks each at 100k
// GPUs); comparing that text is much cheaper than parsing it again for each dump. Dumps come in
// rank order, cycling through those groups, so the least recently used list makes room: with
// only a few slots the cycle evicted the world list itself, and parsing lists was the largest
// cost of reading 100k dumps.
bool ParseLongRanksStringOnce(std::string_view text, SharedRanks* ranks) {
  constexpr size_t kLongText = 512;
  constexpr size_t kSlots = 64;
  constexpr size_t kMaxHeldBytes = size_t{16} << 20;  // of text, per thread
  std::vector<int64_t> parsed_ranks;
  if (text.size() < kLongText) {
    bool ok = ParseRanksString(text, &parsed_ranks);
    *ranks = std::move(parsed_ranks);
    return ok;
  }
  // The dumps read on this thread share the list itself, not only the work of parsing it.
  struct Parsed {
    std::string text;
    SharedRanks ranks;
    bool ok = false;
    uint64_t last_used = 0;
  };
  thread_local std::vector<Parsed> recent;
  thread_local uint64_t clock = 0;
  thread_local size_t held_bytes = 0;
  ++clock;
  for (Parsed& parsed : recent) {
    if (parsed.text.size() == text.size() && parsed.text == text) {
      parsed.last_used = clock;
      *ranks = parsed.ranks;
      return parsed.ok;
    }
  }
  bool ok = ParseRanksString(text, &parsed_ranks);
  *ranks = std::move(parsed_ranks);
  if (text.size() > kMaxHeldBytes) return ok;
  // Room for this one: the least recently used lists go, to at most kSlots and kMaxHeldBytes.
  while (!recent.empty() && (recent.size() >= kSlots || held_bytes + text.size() > kMaxHeldBytes)) {
    auto oldest = std::min_element(
        recent.begin(), recent.end(),
        [](const Parsed& a, const Parsed& b) { return a.last_used < b.last_used; });
    held_bytes -= oldest->text.size();
    if (oldest + 1 != recent.end()) *oldest = std::move(recent.back());
    recent.pop_back();
  }
  recent.push_back({.text = std::string(text), .ranks = *ranks, .ok = ok, .last_used = clock});
  held_bytes += text.size();
  return ok;
}

}  // namespace

bool ParseRanksStringShared(std::string_view text, SharedRanks* ranks) {
  return ParseLongRanksStringOnce(text, ranks);
}

bool ParseRanksString(std::string_view text, std::vector<int64_t>* ranks) {
  ranks->clear();
  size_t at = 0;
  auto skip_spaces = [&] {
    while (at < text.size() && (text[at] == ' ' || text[at] == '\t' || text[at] == '\n')) ++at;
  };
  skip_spaces();
  if (at >= text.size() || text[at] != '[') return false;
  ++at;
  skip_spaces();
  if (at < text.size() && text[at] == ']') {
    ++at;
    skip_spaces();
    return at == text.size();
  }
  while (true) {
    skip_spaces();
    // Digits accumulated in place: every dump spells out its world group, thousands of ranks.
    size_t start = at;
    int64_t rank = 0;
    while (at < text.size() && text[at] >= '0' && text[at] <= '9' && at - start < 18) {
      rank = rank * 10 + (text[at] - '0');
      ++at;
    }
    if (at == start || (at < text.size() && text[at] >= '0' && text[at] <= '9')) return false;
    ranks->push_back(rank);
    skip_spaces();
    if (at >= text.size()) return false;
    if (text[at] == ']') break;
    if (text[at] != ',') return false;
    ++at;
  }
  ++at;
  skip_spaces();
  return at == text.size();
}

namespace normalize_internal {

absl::Status Normalizer::NormalizeVersion(ValueId value) {
  // Some tools write the version as a number; accept what reads unambiguously.
  std::string text;
  if (doc_.kind(value) == ValueKind::kString) {
    budget_.VisitText(doc_.string_value(value).size());
    text = std::string(doc_.string_value(value));
  } else if (doc_.kind(value) == ValueKind::kFloat) {
    text = fmt::format("{}", doc_.float_value(value));
  } else {
    return Error(value, "'version'", "expected a string such as \"2.10\"");
  }
  dump_.version = text;
  size_t dot = text.find('.');
  int64_t major = 0, minor = 0;
  if (!ParseInt(std::string_view(text).substr(0, dot), &major) ||
      (dot != std::string::npos && !ParseInt(std::string_view(text).substr(dot + 1), &minor))) {
    Oddity("unparseable_version");
    return absl::OkStatus();
  }
  dump_.version_major = static_cast<int>(major);
  dump_.version_minor = static_cast<int>(minor);
  return absl::OkStatus();
}
absl::Status Normalizer::NormalizePgConfig(ValueId config) {
  if (doc_.kind(config) != ValueKind::kDict) {
    return Error(config, "'pg_config'", "expected a dict of process groups");
  }
  std::span<const ValueId> pairs = doc_.items(config);
  for (size_t i = 0; i + 1 < pairs.size(); i += 2) {
    ValueId key = pairs[i];
    ValueId value = pairs[i + 1];
    // The key as text, formatted only for messages: a long key repeated by memo hits is then
    // read once (interned by value id), not copied per group.
    std::string_view key_text;
    std::string key_digits;
    int64_t pg_id = kUnknown;
    StringId key_id;
    if (doc_.kind(key) == ValueKind::kString) {
      key_id = InternValue(key);
      key_text = dump_.strings.view(key_id);
    } else if (doc_.kind(key) == ValueKind::kInt) {
      pg_id = doc_.int_value(key);
      key_digits = std::to_string(pg_id);
      key_text = key_digits;
      key_id = kNoString;
    } else {
      return Error(key, "'pg_config' key", "expected a group name or id");
    }
    auto where = [&](std::string_view suffix = "") {
      return fmt::format("pg_config['{}']{}", OddityKey(key_text), suffix);
    };
    if (!budget_.Visit(1)) return BudgetError(value, where());
    if (doc_.kind(value) == ValueKind::kList) {
      // 1.4: {pg_id: [global ranks]}; groups are then named by their id.
      uint32_t index = GroupByName(key_id != kNoString ? key_id : dump_.strings.Intern(key_text));
      FR_ASSIGN_OR_RETURN(const ParsedRanks* parsed, RankList(value, where()));
      ProcessGroup& group = dump_.groups[index];
      AppendRanks(parsed->ranks, &group);
      group.pg_id = pg_id;
      group.ranks_known = true;
      continue;
    }
    if (doc_.kind(value) != ValueKind::kDict) {
      return Error(value, where(), "expected a dict with name, desc and ranks");
    }
    // Find reads every pair of the group's dict, which memo hits may share between groups.
    if (!budget_.Visit(doc_.items(value).size())) return BudgetError(value, where());
    StringId name = key_id;
    ValueId name_value = doc_.Find(value, "name");
    if (name_value != kNoValue && doc_.kind(name_value) == ValueKind::kString) {
      name = InternValue(name_value);
    } else if (name == kNoString) {
      name = dump_.strings.Intern(key_text);
    }
    if (name == 0) {
      // Gloo (2.13, 2.14) writes one nameless group whose ranks are empty or belong to some
      // other group: a placeholder, not a group of this rank.
      Oddity("pg_config_placeholder_group");
      continue;
    }
    uint32_t index = GroupByName(name);
    if (ValueId desc = doc_.Find(value, "desc"); desc != kNoValue) {
      if (doc_.kind(desc) != ValueKind::kString) {
        return Error(desc, where("['desc']"), "expected a string");
      }
      dump_.groups[index].desc = InternValue(desc);
    }
    ValueId ranks = doc_.Find(value, "ranks");
    if (ranks == kNoValue) {
      Oddity("pg_config_without_ranks");
    } else if (doc_.kind(ranks) == ValueKind::kString || doc_.kind(ranks) == ValueKind::kList) {
      FR_ASSIGN_OR_RETURN(const ParsedRanks* parsed, RankList(ranks, where("['ranks']")));
      ProcessGroup& group = dump_.groups[index];
      if (doc_.kind(ranks) == ValueKind::kString) {
        group.ranks = parsed->ranks;
        group.ranks_known = parsed->ok;
        if (!group.ranks_known) Oddity("unparseable_pg_ranks");
      } else {
        AppendRanks(parsed->ranks, &group);
        group.ranks_known = true;
      }
    } else {
      return Error(ranks, where("['ranks']"), "expected a string such as \"[0, 1]\"");
    }
  }
  return absl::OkStatus();
}

// A group listed twice (1.4 ids) holds both lists, in file order.
void Normalizer::AppendRanks(const SharedRanks& ranks, ProcessGroup* group) {
  if (group->ranks.empty()) {
    group->ranks = ranks;
    return;
  }
  std::vector<int64_t> joined = group->ranks.ToVector();
  joined.insert(joined.end(), ranks.begin(), ranks.end());
  group->ranks = std::move(joined);
}

absl::StatusOr<const Normalizer::ParsedRanks*> Normalizer::RankList(ValueId value,
                                                                    const std::string& where) {
  auto [it, inserted] = parsed_rank_lists_.try_emplace(value);
  ParsedRanks& parsed = it->second;
  if (inserted) {
    if (doc_.kind(value) == ValueKind::kString) {
      std::string_view text = doc_.string_value(value);
      if (!budget_.VisitText(text.size())) return BudgetError(value, where);
      parsed.ok = ParseLongRanksStringOnce(text, &parsed.ranks);
    } else {
      std::span<const ValueId> items = doc_.items(value);
      if (!budget_.Visit(items.size())) return BudgetError(value, where);
      std::vector<int64_t> ranks;
      ranks.reserve(items.size());
      for (ValueId rank : items) {
        if (doc_.kind(rank) != ValueKind::kInt) return Error(rank, where, "expected a rank");
        ranks.push_back(doc_.int_value(rank));
      }
      parsed.ranks = std::move(ranks);
      parsed.ok = true;
    }
  }
  // Ranks are 32-bit in PyTorch (and in the report's contract): a larger one is not a rank
  // that could be shown cut to 32 bits, it is a damaged or forged file.
  for (int64_t rank : parsed.ranks) {
    if (rank < 0 || rank > std::numeric_limits<int32_t>::max()) {
      return Error(value, where,
                   fmt::format("rank {} is outside the range of ranks (0 to {})", rank,
                               std::numeric_limits<int32_t>::max()));
    }
  }
  if (!budget_.Keep(parsed.ranks.size() * sizeof(int64_t))) return BudgetError(value, where);
  return &parsed;
}

absl::Status Normalizer::NormalizePgStatus(ValueId status) {
  if (doc_.kind(status) != ValueKind::kDict) {
    return Error(status, "'pg_status'", "expected a dict keyed by process group id");
  }
  absl::flat_hash_map<int64_t, uint32_t> group_by_pg_id;
  for (uint32_t i = 0; i < dump_.groups.size(); ++i) {
    if (dump_.groups[i].pg_id != kUnknown) group_by_pg_id.emplace(dump_.groups[i].pg_id, i);
  }
  std::span<const ValueId> pairs = doc_.items(status);
  for (size_t i = 0; i + 1 < pairs.size(); i += 2) {
    FR_ASSIGN_OR_RETURN(int64_t pg_id, IntLike(pairs[i], "'pg_status' key"));
    ValueId value = pairs[i + 1];
    std::string where = fmt::format("pg_status['{}']", pg_id);
    if (doc_.kind(value) != ValueKind::kDict) {
      return Error(value, where, "expected a dict of last collectives");
    }
    PgStatus parsed;
    std::span<const ValueId> fields = doc_.items(value);
    // Memo hits may share one dict between many ids.
    if (!budget_.Visit(fields.size())) return BudgetError(value, where);
    for (size_t f = 0; f + 1 < fields.size(); f += 2) {
      if (doc_.kind(fields[f]) != ValueKind::kString) continue;
      std::string_view name = doc_.string_value(fields[f]);
      int64_t* target = name == "last_enqueued_collective"    ? &parsed.last_enqueued_collective
                        : name == "last_started_collective"   ? &parsed.last_started_collective
                        : name == "last_completed_collective" ? &parsed.last_completed_collective
                                                              : nullptr;
      if (target == nullptr) {
        Oddity(fmt::format("unknown_pg_status_key:{}", OddityKey(name)));
        continue;
      }
      FR_ASSIGN_OR_RETURN(*target, IntLike(fields[f + 1], fmt::format("{}['{}']", where, name)));
    }
    if (auto it = group_by_pg_id.find(pg_id); it != group_by_pg_id.end()) {
      dump_.groups[it->second].status = parsed;
      dump_.groups[it->second].has_status = true;
    } else {
      dump_.unmatched_pg_status.emplace_back(pg_id, parsed);
      budget_.Keep(sizeof(dump_.unmatched_pg_status[0]));
    }
    if (budget_.exceeded()) return BudgetError(value, where);
  }
  return absl::OkStatus();
}

// Flattens {comm: {key: value}} into "comm.key" -> value pairs. The pairs are kept as text, so
// a dict shared by many comms (memo hits) is copied for each of them, within the budget.
absl::Status Normalizer::NormalizeCommState(ValueId state, std::string_view name) {
  if (doc_.kind(state) != ValueKind::kDict) {
    Oddity("comm_state_not_a_dict");
    return absl::OkStatus();
  }
  std::span<const ValueId> comms = doc_.items(state);
  for (size_t i = 0; i + 1 < comms.size(); i += 2) {
    ValueId values = comms[i + 1];
    if (doc_.kind(values) != ValueKind::kDict) {
      Oddity("comm_state_not_a_dict");
      continue;
    }
    std::span<const ValueId> pairs = doc_.items(values);
    if (!budget_.Visit(pairs.size())) return BudgetError(values, fmt::format("'{}'", name));
    uint64_t bytes = 0;
    for (size_t p = 0; p + 1 < pairs.size(); p += 2) {
      bytes += RenderedSize(comms[i]) + RenderedSize(pairs[p]) + RenderedSize(pairs[p + 1]) +
               2 * sizeof(std::string);
    }
    if (!budget_.Keep(bytes)) return BudgetError(values, fmt::format("'{}'", name));
    std::string comm = RenderScalar(comms[i]);
    for (size_t p = 0; p + 1 < pairs.size(); p += 2) {
      dump_.comm_state.emplace_back(fmt::format("{}.{}", comm, RenderScalar(pairs[p])),
                                    RenderScalar(pairs[p + 1]));
    }
  }
  return absl::OkStatus();
}

// An upper bound of RenderScalar(value).size(), without rendering it.
size_t Normalizer::RenderedSize(ValueId value) const {
  switch (doc_.kind(value)) {
    case ValueKind::kString:
      return doc_.string_value(value).size();
    case ValueKind::kInt:
    case ValueKind::kFloat:
      return 32;
    default:
      return 8;
  }
}

std::string Normalizer::RenderScalar(ValueId value) const {
  switch (doc_.kind(value)) {
    case ValueKind::kString:
      return std::string(doc_.string_value(value));
    case ValueKind::kInt:
      return std::to_string(doc_.int_value(value));
    case ValueKind::kFloat:
      return fmt::format("{}", doc_.float_value(value));
    case ValueKind::kBool:
      return doc_.bool_value(value) ? "True" : "False";
    case ValueKind::kNone:
      return "None";
    default:
      return std::string(ValueKindName(doc_.kind(value)));
  }
}

}  // namespace normalize_internal
}  // namespace fr
