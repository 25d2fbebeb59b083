// How sure a conclusion is, as a value: logic compares these (a doubtful finding never outranks a
// certain one), and the report contract's words ("high", "medium", "low") appear only when a
// report is written.
//
//   Confidence c = Confidence::kHigh;
//   if (too_few_dumps) c = std::min(c, Confidence::kMedium);
//   verdict->set_confidence(std::string(ConfidenceName(c)));   // "medium"
#ifndef FR_BASE_CONFIDENCE_H_
#define FR_BASE_CONFIDENCE_H_

#include <cstdint>
#include <string_view>

namespace fr {

// Ordered: a larger value is more certain.
enum class Confidence : uint8_t { kLow, kMedium, kHigh };

// "low", "medium", "high": the report contract's words.
constexpr std::string_view ConfidenceName(Confidence c) {
  switch (c) {
    case Confidence::kLow:
      return "low";
    case Confidence::kMedium:
      return "medium";
    case Confidence::kHigh:
      return "high";
  }
  return "low";
}

}  // namespace fr

#endif  // FR_BASE_CONFIDENCE_H_
