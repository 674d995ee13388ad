// Value: what a jinja2 expression evaluates to, with Python's semantics — None, bool, int,
// float, str, list, tuple, dict (insertion-ordered, string keys) — plus jinja2's Undefined,
// namespace() objects, loop objects and callables (macros, globals, bound methods).
// Containers are shared and immutable (HF renders in an ImmutableSandboxedEnvironment, where
// list.append and dict.update are refused); only a namespace's attributes change.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace ctxpar::chat_template {

class Value;
struct Frame;
struct MacroNode;

// A Python dict with string keys, in insertion order.
class Dict {
 public:
  using Entry = std::pair<std::string, Value>;
  const Value* find(std::string_view key) const;
  // Inserts, or replaces the value of an existing key in place (Python keeps its position).
  void set(std::string key, Value value);
  const std::vector<Entry>& entries() const { return entries_; }
  size_t size() const { return entries_.size(); }

 private:
  std::vector<Entry> entries_;
};

struct ListData {
  std::vector<Value> items;
  bool is_tuple = false;
  int depth = 1;  // containers nested in it, itself included
};

// Containers nest at most this deep (deeper would overflow the stack when printed or freed).
constexpr int kMaxValueDepth = 512;

// jinja2's Undefined: printing gives "", truthiness False, iteration nothing; most other uses
// raise UndefinedError with `hint` ("'foo' is undefined", "'dict object' has no attribute 'x'").
struct Undefined {
  std::shared_ptr<const std::string> hint;
};
struct None {};

// namespace(...): the one mutable object (`{% set ns.x = ... %}`).
struct Namespace {
  Dict attrs;
};

// The `loop` variable of a for block.
struct LoopInfo {
  int64_t index0 = 0;
  int64_t length = 0;
  std::shared_ptr<const ListData> items;  // the (filtered) items, for previtem / nextitem
};

struct Callable;

class Value {
 public:
  enum class Kind {
    kUndefined,
    kNone,
    kBool,
    kInt,
    kFloat,
    kString,
    kList,  // list or tuple (ListData::is_tuple)
    kDict,
    kNamespace,
    kLoop,
    kCallable
  };

  Value() : v_(Undefined{}) {}
  Value(None) : v_(None{}) {}
  Value(bool b) : v_(b) {}
  Value(int64_t i) : v_(i) {}
  Value(int i) : v_(static_cast<int64_t>(i)) {}
  Value(double d) : v_(d) {}
  Value(std::string s) : v_(std::move(s)) {}
  Value(const char* s) : v_(std::string(s)) {}
  Value(std::shared_ptr<const ListData> l) : v_(std::move(l)) {}
  Value(std::shared_ptr<const Dict> d) : v_(std::move(d)) {}
  Value(std::shared_ptr<Namespace> n) : v_(std::move(n)) {}
  Value(std::shared_ptr<const LoopInfo> l) : v_(std::move(l)) {}
  Value(std::shared_ptr<const Callable> c) : v_(std::move(c)) {}

  static Value undefined(std::string hint);
  // Containers; throw TemplateError past kMaxValueDepth levels of nesting.
  static Value list(std::vector<Value> items);
  static Value tuple(std::vector<Value> items);
  static Value dict(Dict d);

  Kind kind() const { return static_cast<Kind>(v_.index()); }
  bool is_undefined() const { return kind() == Kind::kUndefined; }
  bool is_none() const { return kind() == Kind::kNone; }
  bool is_bool() const { return kind() == Kind::kBool; }
  bool is_int() const { return kind() == Kind::kInt; }
  bool is_float() const { return kind() == Kind::kFloat; }
  // Python numbers: bool counts as int (True + 1 == 2).
  bool is_number() const { return is_bool() || is_int() || is_float(); }
  bool is_string() const { return kind() == Kind::kString; }
  bool is_list() const { return kind() == Kind::kList; }
  bool is_tuple() const { return is_list() && list_data().is_tuple; }
  bool is_dict() const { return kind() == Kind::kDict; }
  bool is_loop() const { return kind() == Kind::kLoop; }

  bool as_bool() const { return std::get<bool>(v_); }
  int64_t as_int() const;    // bool or int
  double as_double() const;  // any number
  const std::string& as_string() const { return std::get<std::string>(v_); }
  const ListData& list_data() const { return *std::get<std::shared_ptr<const ListData>>(v_); }
  const std::vector<Value>& items() const { return list_data().items; }
  const std::shared_ptr<const ListData>& list_ptr() const {
    return std::get<std::shared_ptr<const ListData>>(v_);
  }
  const Dict& as_dict() const { return *std::get<std::shared_ptr<const Dict>>(v_); }
  Namespace& as_namespace() const { return *std::get<std::shared_ptr<Namespace>>(v_); }
  const LoopInfo& as_loop() const { return *std::get<std::shared_ptr<const LoopInfo>>(v_); }
  const Callable& as_callable() const { return *std::get<std::shared_ptr<const Callable>>(v_); }
  // The UndefinedError message of an undefined value.
  std::string undefined_hint() const;

 private:
  std::variant<Undefined, None, bool, int64_t, double, std::string, std::shared_ptr<const ListData>,
               std::shared_ptr<const Dict>, std::shared_ptr<Namespace>,
               std::shared_ptr<const LoopInfo>, std::shared_ptr<const Callable>>
      v_;
};

// A macro (with the frame it was defined in), a global function, or a method bound to its
// receiver (`text.split`, `dict.items`, `loop.cycle`).
struct Callable {
  enum class Kind { kMacro, kGlobal, kMethod };
  Kind kind = Kind::kGlobal;
  std::string name;
  Value self;                        // kMethod: the receiver
  const MacroNode* macro = nullptr;  // kMacro: owned by the parsed template
  // kMacro: the frame the macro was defined in. Weak, so a frame holding its own macros is
  // not a reference cycle; a macro called after its frame ended is an error.
  std::weak_ptr<Frame> closure;
};

// How many containers deep `v` is (0 for scalars).
int nesting_depth(const Value& v);
// Whether `v` is or holds a namespace (a namespace may not hold one: no reference cycles).
bool holds_namespace(const Value& v);

// Python's type name ("str", "NoneType", "dict", ...), for error messages.
std::string python_type_name(const Value& v);
// jinja2's object_type_repr ("dict object", "None"), for UndefinedError messages.
std::string object_type_repr(const Value& v);

// Python truthiness (Undefined is false, a namespace or callable true).
bool truthy(const Value& v);
// str(v) as jinja2 prints it: Undefined -> "", None -> "None", containers as repr().
std::string to_str(const Value& v);
// repr(v).
std::string repr(const Value& v);
// a == b with Python semantics (1 == 1.0 == True, [1] != (1,)).
bool equals(const Value& a, const Value& b);
// Python's ordering for <, <=, >, >=: numbers, strings (by code point), lists and tuples
// (lexicographic). Throws TemplateError for other pairs, as Python's TypeError.
int compare(const Value& a, const Value& b, std::string_view op);

}  // namespace ctxpar::chat_template
