#include "fr/logs/xid_catalog.h"

#include <iterator>

namespace fr {
namespace {

struct XidRow {
  int32_t xid;
  XidSeverity severity;
  std::string_view meaning;
};

// From NVIDIA's Xid catalog (docs.nvidia.com/deploy/xid-errors); the severity is what the code
// means for deciding whether this GPU stopped the job.
constexpr XidRow kXids[] = {
    {13, XidSeverity::kApplication, "graphics engine exception"},
    {31, XidSeverity::kApplication, "GPU memory page fault"},
    {32, XidSeverity::kApplication, "invalid or corrupted push buffer stream"},
    {38, XidSeverity::kHardware, "driver firmware error"},
    {43, XidSeverity::kApplication, "GPU stopped processing (channel reset)"},
    {45, XidSeverity::kInformational, "preemptive cleanup, due to previous errors"},
    {48, XidSeverity::kHardware, "double-bit ECC error"},
    {61, XidSeverity::kHardware, "internal micro-controller breakpoint/warning"},
    {62, XidSeverity::kHardware, "internal micro-controller halt"},
    {63, XidSeverity::kInformational, "ECC page retirement or row remapping recording event"},
    {64, XidSeverity::kHardware, "ECC page retirement or row remapping recording failure"},
    {68, XidSeverity::kApplication, "video processor exception"},
    {69, XidSeverity::kApplication, "graphics engine class error"},
    {74, XidSeverity::kHardware, "NVLink error"},
    {79, XidSeverity::kHardware, "GPU has fallen off the bus"},
    {92, XidSeverity::kInformational, "high single-bit ECC error rate"},
    {94, XidSeverity::kHardware, "contained ECC error"},
    {95, XidSeverity::kHardware, "uncontained ECC error"},
    {109, XidSeverity::kHardware, "context switch timeout"},
    {119, XidSeverity::kHardware, "GSP RPC timeout"},
    {120, XidSeverity::kHardware, "GSP error"},
    {121, XidSeverity::kInformational, "C2C link corrected error"},
    {123, XidSeverity::kHardware, "SPI PMU RPC write failure"},
    {136, XidSeverity::kHardware, "link training failed"},
    {140, XidSeverity::kHardware, "unrecovered ECC error"},
    {143, XidSeverity::kHardware, "GPU initialization failure"},
    // NVLink faults of Hopper and later (SAW, RLW, TLW, TREX, NVLPW_CTRL, NETIR, MSE units).
    {144, XidSeverity::kHardware, "NVLink SAW error"},
    {145, XidSeverity::kHardware, "NVLink RLW error"},
    {146, XidSeverity::kHardware, "NVLink TLW error"},
    {147, XidSeverity::kHardware, "NVLink TREX error"},
    {148, XidSeverity::kHardware, "NVLink NVLPW_CTRL error"},
    {149, XidSeverity::kHardware, "NVLink NETIR error"},
    {150, XidSeverity::kHardware, "NVLink MSE error"},
    {154, XidSeverity::kInformational, "GPU recovery action changed"},
};

}  // namespace

XidInfo LookUpXid(int32_t xid) {
  for (const XidRow& row : kXids) {
    if (row.xid == xid) return {row.severity, row.meaning};
  }
  return {};
}

}  // namespace fr
