// Status and StatusOr: the one error type of the project. Errors are returned,
// never thrown across a module; parsers catch library exceptions at the edge.
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace shardplan {

// The code doubles as the process exit code (DESIGN.md "Exit codes").
enum class Code {
  kOk = 0,
  kNegative = 1,   // a valid question with a "no" answer: does not fit, validation failed
  kBadInput = 2,   // the user's input or usage is wrong
  kInternal = 3,   // an environment or internal error
};

class Status {
 public:
  Status() = default;
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return {}; }
  static Status BadInput(std::string m) { return {Code::kBadInput, std::move(m)}; }
  static Status Internal(std::string m) { return {Code::kInternal, std::move(m)}; }
  static Status Negative(std::string m) { return {Code::kNegative, std::move(m)}; }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  int exit_code() const { return static_cast<int>(code_); }
  const std::string& message() const { return message_; }

  // Returns a copy whose message starts with `context: ` (a file, a key).
  Status WithContext(const std::string& context) const {
    if (ok()) return *this;
    return {code_, context + ": " + message_};
  }

 private:
  Code code_ = Code::kOk;
  std::string message_;
};

// A value or the Status that explains why there is none.
template <typename T>
class StatusOr {
 public:
  StatusOr(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  StatusOr(Status status) : v_(std::move(status)) { assert(!std::get<Status>(v_).ok()); }  // NOLINT

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<Status, T> v_;
};

}  // namespace shardplan

#define SP_RETURN_IF_ERROR(expr)            \
  do {                                      \
    ::shardplan::Status sp_status_ = (expr); \
    if (!sp_status_.ok()) return sp_status_; \
  } while (0)

#define SP_CONCAT_INNER(a, b) a##b
#define SP_CONCAT(a, b) SP_CONCAT_INNER(a, b)
#define SP_ASSIGN_OR_RETURN(lhs, expr) SP_ASSIGN_OR_RETURN_IMPL(SP_CONCAT(sp_or_, __LINE__), lhs, expr)
#define SP_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                             \
  if (!tmp.ok()) return tmp.status();            \
  lhs = std::move(tmp).value()
