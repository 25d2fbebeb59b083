#include "fr/model/counters.h"

namespace fr {
namespace {

using enum CounterSeverity;

// Sorted by name (AllCounters promises it; counters_test checks it).
constexpr CounterInfo kCounters[] = {
    {"coalesced_member_state_from_closing_entry", kInfo,
     "members of coalesced groups or p2p batches took the state of the entry closing them "
     "(PyTorch records no events for members)"},
    {"comm_state_not_a_dict", kInfo, "nccl_comm_state (or a vendor's) is not a dict; ignored"},
    {"entry_group_not_in_pg_config", kInfo,
     "entries name a group that pg_config does not list (Gloo's pg_config is a placeholder); "
     "its members are the dumps that name it"},
    {"entry_without_profiling_name", kDataLoss,
     "entries without a profiling_name: their op is unknown and they prove no desync"},
    {"files_rejected", kError, "files that looked like dumps but could not be read"},
    {"files_skipped", kInfo, "files that are not dumps (pipes, logs, cores, reports)"},
    {"findings_not_listed", kInfo, "findings of one kind beyond the report's limit, counted only"},
    {"group_with_several_pg_ids", kInfo, "one group name with several local pg ids in a dump"},
    {"missing_version", kInfo, "a dump without a version key; read as the 2023 layout"},
    {"more_oddity_kinds", kDataLoss,
     "oddities of kinds past the per-dump limit of distinct kinds, counted together"},
    {"non_string_entry_key", kDataLoss, "entry keys that are not strings; their values ignored"},
    {"non_string_top_level_key", kDataLoss, "top-level keys that are not strings; ignored"},
    {"ops_in_flight_not_stuck", kInfo,
     "pending ops younger than their timeout at dump time: in flight, not stuck"},
    {"p2p_peer_in_group_of_unknown_ranks", kDataLoss,
     "send/recv whose peer cannot be mapped to a global rank (the group's ranks are unknown)"},
    {"p2p_peer_outside_group", kDataLoss, "send/recv naming a peer outside its group"},
    {"p2p_without_peer", kDataLoss, "send/recv whose profiling_name names no peer"},
    {"pg_config_placeholder_group", kInfo,
     "a nameless pg_config group (written by Gloo) ignored as no group"},
    {"pg_config_without_ranks", kDataLoss, "pg_config groups without ranks"},
    {"pg_status_in_op_ids", kInfo,
     "pg_status counted op ids (Gloo) and was translated to collective seq ids"},
    {"unknown_entry_key", kInfo, "entry keys of a newer PyTorch, kept out of the analysis"},
    {"unknown_pg_status_key", kInfo, "pg_status keys of a newer PyTorch, ignored"},
    {"unknown_top_level_key", kInfo, "top-level keys of a newer PyTorch, ignored"},
    {"unparseable_pg_ranks", kDataLoss, "pg_config rank lists that could not be read"},
    {"unparseable_version", kInfo, "a version string that is not major.minor"},
};

}  // namespace

std::string_view CounterSeverityName(CounterSeverity severity) {
  switch (severity) {
    case kInfo:
      return "info";
    case kDataLoss:
      return "data_loss";
    case kError:
      return "error";
  }
  return "info";
}

const CounterInfo* FindCounter(std::string_view name) {
  std::string_view key = name.substr(0, name.find(':'));
  for (const CounterInfo& info : kCounters) {
    if (info.name == key) return &info;
  }
  return nullptr;
}

std::span<const CounterInfo> AllCounters() { return kCounters; }

}  // namespace fr
