#include "fr/decode/document_equal.h"

namespace fr {

std::string DescribeDifference(const Document& a, ValueId a_root, const Document& b,
                               ValueId b_root) {
  return "not written yet";
}

}  // namespace fr
