// The registry of named counters: every oddity a dump can show and every count the analysis
// keeps about its input, each with a severity and a sentence, in one table (Perfetto's stats
// table is the model). Counters are data, never errors: the report lists them so that a user
// sees what was odd or lost, and how much it matters.
//
//   const CounterInfo* info = FindCounter("unknown_entry_key:foo");  // the unknown_entry_key row
//   if (info != nullptr && info->severity == CounterSeverity::kDataLoss) { ... }
#ifndef FR_MODEL_COUNTERS_H_
#define FR_MODEL_COUNTERS_H_

#include <span>
#include <string_view>

namespace fr {

enum class CounterSeverity {
  kInfo,      // odd but harmless: nothing the analysis needs is affected
  kDataLoss,  // something the analysis would have used is missing or was set aside
  kError,     // input that could not be used at all
};
std::string_view CounterSeverityName(CounterSeverity severity);  // "info", "data_loss", "error"

struct CounterInfo {
  std::string_view name;  // the counter, or its prefix before ':' ("unknown_entry_key")
  CounterSeverity severity;
  std::string_view description;
};

// The row for `name`, matching "prefix:detail" names by their prefix; nullptr when unregistered.
const CounterInfo* FindCounter(std::string_view name);
// Every registered counter, sorted by name.
std::span<const CounterInfo> AllCounters();

}  // namespace fr

#endif  // FR_MODEL_COUNTERS_H_
