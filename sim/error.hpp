#pragma once
// Error types shared by every layer. Library code throws; only main() turns errors into
// exit codes (2 for ConfigError = bad input, 1 for anything else).
#include <stdexcept>
#include <string>

namespace shardsim {

/// Bad input: a file, a JSON pointer or a flag, what was found and what was expected.
/// what() reads "<where>: <what was found>; expected <what was expected>" when all parts
/// are given, so tests can assert the exact text.
class ConfigError : public std::runtime_error {
 public:
  explicit ConfigError(const std::string& message) : std::runtime_error(message) {}
  ConfigError(const std::string& where, const std::string& found, const std::string& expected)
      : std::runtime_error(where + ": " + found + "; expected " + expected),
        where_(where), found_(found), expected_(expected) {}

  /// Same error, with a prefix (a file name, an outer JSON pointer) put in front.
  [[nodiscard]] ConfigError prefixed(const std::string& outer) const {
    if (where_.empty()) return ConfigError(outer + ": " + what());
    return ConfigError(outer + where_, found_, expected_);
  }
  [[nodiscard]] const std::string& where() const { return where_; }

 private:
  std::string where_, found_, expected_;
};

}  // namespace shardsim
