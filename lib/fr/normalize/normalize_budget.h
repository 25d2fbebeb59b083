// The hostile-input budget of one document being normalized (NormalizeLimits in normalize.h):
// how much the normalizer may keep and read for an input of a given size, so that shared
// references repeated without end (a pickle's memo, a few bytes each) cannot make it allocate or
// walk without bound. Internal to lib/fr/normalize.
//
//   NormalizeBudget budget(limits, input_bytes);
//   if (!budget.Keep(shape_bytes) || !budget.Visit(values)) return Error(budget.Describe());
#ifndef FR_NORMALIZE_NORMALIZE_BUDGET_H_
#define FR_NORMALIZE_NORMALIZE_BUDGET_H_

#include <algorithm>
#include <cstdint>
#include <string>

#include "fmt/format.h"
#include "fr/normalize/normalize.h"

namespace fr {

// The budgets of NormalizeLimits for one document. Work is charged where it happens and checked
// where a key path is at hand to name: charging is an add, and checking a compare, so that the
// per-entry paths stay as cheap as they were.
class NormalizeBudget {
 public:
  // A string costs one visit per this many bytes read.
  static constexpr uint64_t kStringBytesPerVisit = 64;

  NormalizeBudget(const NormalizeLimits& limits, uint64_t input_size)
      : limits_(limits),
        input_size_(input_size),
        max_kept_(Scaled(limits.kept_bytes_per_input_byte, input_size, limits.min_kept_bytes)),
        max_visits_(Scaled(limits.visits_per_input_byte, input_size, limits.min_visits)) {}

  // Each returns false once over its budget (and stays over).
  bool Keep(uint64_t bytes) {
    kept_ += bytes;
    return kept_ <= max_kept_;
  }
  bool Visit(uint64_t values) {
    visits_ += values;
    return visits_ <= max_visits_;
  }
  bool VisitText(size_t bytes) { return Visit(1 + bytes / kStringBytesPerVisit); }
  bool exceeded() const { return kept_ > max_kept_ || visits_ > max_visits_; }

  // Why a document went over, after "<where> (byte N): ".
  std::string Describe() const {
    bool memory = kept_ > max_kept_;
    return fmt::format(
        "normalizing would {} more than {} {}, the budget for a {}-byte input ({} per input byte, "
        "at least {}: NormalizeLimits); shared references repeat the same data too often",
        memory ? "keep" : "read", memory ? max_kept_ : max_visits_, memory ? "bytes" : "values",
        input_size_, memory ? limits_.kept_bytes_per_input_byte : limits_.visits_per_input_byte,
        memory ? limits_.min_kept_bytes : limits_.min_visits);
  }

  NormalizeCost cost() const { return NormalizeCost{kept_, visits_, max_kept_, max_visits_}; }

 private:
  static uint64_t Scaled(uint64_t per_byte, uint64_t size, uint64_t floor) {
    uint64_t scaled;
    if (__builtin_mul_overflow(per_byte, size, &scaled)) return UINT64_MAX;
    return std::max(scaled, floor);
  }

  const NormalizeLimits& limits_;
  uint64_t input_size_;
  uint64_t max_kept_;
  uint64_t max_visits_;
  uint64_t kept_ = 0;
  uint64_t visits_ = 0;
};

}  // namespace fr

#endif  // FR_NORMALIZE_NORMALIZE_BUDGET_H_
