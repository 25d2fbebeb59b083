// The lines of a text, read lazily and without copies: each line without its '\n'. A last line
// with no '\n' is a line; a '\n' at the very end starts none (as `wc -l` and editors count).
//
//   for (std::string_view line : Lines(text)) { ... }
#ifndef FR_BASE_LINES_H_
#define FR_BASE_LINES_H_

#include <cstddef>
#include <iterator>
#include <string_view>

namespace fr {

class Lines {
 public:
  explicit Lines(std::string_view text) : text_(text) {}

  class Iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = std::string_view;
    using difference_type = std::ptrdiff_t;
    using pointer = const std::string_view*;
    using reference = std::string_view;

    Iterator() = default;
    Iterator(std::string_view text, size_t start) : text_(text), start_(start) { FindEnd(); }

    std::string_view operator*() const { return text_.substr(start_, end_ - start_); }
    Iterator& operator++() {
      start_ = end_ < text_.size() ? end_ + 1 : text_.size();
      FindEnd();
      return *this;
    }
    Iterator operator++(int) {
      Iterator before = *this;
      ++*this;
      return before;
    }
    bool operator==(const Iterator& other) const { return start_ == other.start_; }

   private:
    void FindEnd() {
      end_ = text_.find('\n', start_);
      if (end_ == std::string_view::npos) end_ = text_.size();
    }

    std::string_view text_;
    size_t start_ = 0;
    size_t end_ = 0;
  };

  Iterator begin() const { return Iterator(text_, 0); }
  Iterator end() const { return Iterator(text_, text_.size()); }

 private:
  std::string_view text_;
};

}  // namespace fr

#endif  // FR_BASE_LINES_H_
