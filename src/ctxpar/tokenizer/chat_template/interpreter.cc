#include "ctxpar/tokenizer/chat_template/interpreter.h"

#include <cmath>

#include "ctxpar/core/error.h"
#include "ctxpar/tokenizer/chat_template/access.h"
#include "ctxpar/tokenizer/chat_template/call_args.h"
#include "ctxpar/tokenizer/chat_template/filters.h"
#include "ctxpar/tokenizer/chat_template/methods.h"
#include "ctxpar/tokenizer/chat_template/predicates.h"
#include "ctxpar/tokenizer/chat_template/template_error.h"

namespace ctxpar::chat_template {

const Value* Frame::find(std::string_view name) const {
  for (const Frame* f = this; f; f = f->parent.get()) {
    for (const auto& [k, v] : f->vars) {
      if (k == name) return &v;
    }
  }
  return nullptr;
}

void Frame::set(std::string name, Value value) {
  for (auto& [k, v] : vars) {
    if (k == name) {
      v = std::move(value);
      return;
    }
  }
  vars.emplace_back(std::move(name), std::move(value));
}

namespace {

enum class Flow { kNormal, kBreak, kContinue };

using FramePtr = std::shared_ptr<Frame>;

constexpr std::string_view kGlobals[] = {"range", "dict", "namespace", "raise_exception",
                                         "strftime_now"};

Value make_global(std::string_view name) {
  auto c = std::make_shared<Callable>();
  c->kind = Callable::Kind::kGlobal;
  c->name = std::string(name);
  return Value(std::shared_ptr<const Callable>(std::move(c)));
}

[[noreturn]] void type_error(std::string_view op, const Value& a, const Value& b) {
  throw TemplateError(fmt::format("unsupported operand type(s) for {}: '{}' and '{}'", op,
                                  python_type_name(a), python_type_name(b)));
}

int64_t checked(bool overflow, int64_t r) {
  if (overflow) throw TemplateError("integer overflow (past the int64 range)");
  return r;
}

int64_t floor_div(int64_t a, int64_t b) {
  if (b == 0) throw TemplateError("integer division or modulo by zero");
  if (a == INT64_MIN && b == -1) throw TemplateError("integer overflow (past the int64 range)");
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

int64_t py_mod(int64_t a, int64_t b) {
  if (b == 0) throw TemplateError("integer division or modulo by zero");
  if (b == -1) return 0;
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

double py_fmod(double a, double b) {
  if (b == 0.0) throw TemplateError("float modulo");
  double r = std::fmod(a, b);
  if (r != 0.0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

class Interpreter {
 public:
  Interpreter(const SourceMap& map, const RenderLimits& limits, const Clock& now)
      : map_(map), budget_(limits), now_(now) {}

  std::string run(const Body& body, const Dict& context) {
    auto top = std::make_shared<Frame>();
    for (const auto& [k, v] : context.entries()) top->set(k, v);
    std::string out;
    exec_body(body, top, out);
    return out;
  }

 private:
  [[noreturn]] void fail(size_t offset, const std::string& message) const {
    CTXPAR_INPUT_FAIL("chat template {}: {}", map_.where(offset), message);
  }

  void append(std::string& out, std::string_view text) {
    out += text;
    budget_.check_size(out.size());
  }

  // ---- statements ---------------------------------------------------------------------------
  Flow exec_body(const Body& body, const FramePtr& frame, std::string& out) {
    for (const NodePtr& node : body) {
      const Flow flow = exec(*node, frame, out);
      if (flow != Flow::kNormal) return flow;
    }
    return Flow::kNormal;
  }

  Flow exec(const Node& n, const FramePtr& frame, std::string& out) {
    try {
      budget_.charge();
      return exec_node(n, frame, out);
    } catch (const TemplateError& e) {
      fail(n.offset, e.what());
    }
  }

  Flow exec_node(const Node& n, const FramePtr& frame, std::string& out) {
    switch (n.kind) {
      case NodeKind::kOutput:
        append(out, n.text);
        return Flow::kNormal;
      case NodeKind::kPrint:
        append(out, to_str(eval(*n.expr, frame)));
        return Flow::kNormal;
      case NodeKind::kIf:
        for (size_t i = 0; i < n.conditions.size(); ++i) {
          if (truthy(eval(*n.conditions[i], frame))) return exec_body(n.bodies[i], frame, out);
        }
        return exec_body(n.else_body, frame, out);
      case NodeKind::kFor:
        exec_for(n, frame, out);
        return Flow::kNormal;
      case NodeKind::kSet:
        assign(n, eval(*n.expr, frame), *frame);
        return Flow::kNormal;
      case NodeKind::kSetAttr: {
        const Value* target = frame->find(n.targets[0]);
        if (!target || target->kind() != Value::Kind::kNamespace) {
          throw TemplateError("Cannot assign attribute on non-namespace object");
        }
        Value v = eval(*n.expr, frame);
        if (holds_namespace(v)) {
          throw TemplateError("a namespace attribute cannot hold a namespace or loop object");
        }
        if (nesting_depth(*target) + nesting_depth(v) > kMaxValueDepth) {
          throw TemplateError(fmt::format("values nest more than {} levels deep", kMaxValueDepth));
        }
        target->as_namespace().attrs.set(n.attribute, std::move(v));
        return Flow::kNormal;
      }
      case NodeKind::kBlockSet: {
        Value v(render_child(n.bodies[0], frame));
        for (const ExprPtr& f : n.filters) v = apply_filter_node(*f, v, frame);
        frame->set(n.targets[0], std::move(v));
        return Flow::kNormal;
      }
      case NodeKind::kMacro: {
        const auto& m = static_cast<const MacroNode&>(n);
        auto c = std::make_shared<Callable>();
        c->kind = Callable::Kind::kMacro;
        c->name = m.name;
        c->macro = &m;
        c->closure = frame;
        frame->set(m.name, Value(std::shared_ptr<const Callable>(std::move(c))));
        return Flow::kNormal;
      }
      case NodeKind::kGeneration:
        append(out, render_child(n.bodies[0], frame));
        return Flow::kNormal;
      case NodeKind::kFilterBlock: {
        Value v(render_child(n.bodies[0], frame));
        for (const ExprPtr& f : n.filters) v = apply_filter_node(*f, v, frame);
        append(out, to_str(v));
        return Flow::kNormal;
      }
      case NodeKind::kWith: {
        auto child = std::make_shared<Frame>();
        child->parent = frame;
        for (size_t i = 0; i < n.targets.size(); ++i) {
          child->set(n.targets[i], eval(*n.values[i], frame));
        }
        append(out, render_in(n.bodies[0], child));
        return Flow::kNormal;
      }
      case NodeKind::kBreak:
        return Flow::kBreak;
      case NodeKind::kContinue:
        return Flow::kContinue;
    }
    return Flow::kNormal;
  }

  std::string render_in(const Body& body, const FramePtr& frame) {
    std::string out;
    exec_body(body, frame, out);
    return out;
  }

  std::string render_child(const Body& body, const FramePtr& parent) {
    auto child = std::make_shared<Frame>();
    child->parent = parent;
    return render_in(body, child);
  }

  // Binds `value` to the targets of a set / for (unpacking when there are several).
  void assign(const Node& n, const Value& value, Frame& frame) {
    if (!n.unpack) {
      frame.set(n.targets[0], value);
      return;
    }
    const std::vector<Value> items = iterate(value);
    if (items.size() != n.targets.size()) {
      if (items.size() > n.targets.size()) {
        throw TemplateError(
            fmt::format("too many values to unpack (expected {})", n.targets.size()));
      }
      throw TemplateError(fmt::format("not enough values to unpack (expected {}, got {})",
                                      n.targets.size(), items.size()));
    }
    for (size_t i = 0; i < items.size(); ++i) frame.set(n.targets[i], items[i]);
  }

  void exec_for(const Node& n, const FramePtr& frame, std::string& out) {
    const Value iterable = eval(*n.expr, frame);
    std::vector<Value> items = iterate(iterable);
    if (n.condition) {
      std::vector<Value> kept;
      for (const Value& item : items) {
        budget_.charge();
        auto probe = std::make_shared<Frame>();
        probe->parent = frame;
        assign(n, item, *probe);
        if (truthy(eval(*n.condition, probe))) kept.push_back(item);
      }
      items = std::move(kept);
    }
    if (items.empty()) {
      exec_body(n.else_body, frame, out);
      return;
    }
    auto all = std::make_shared<const ListData>(ListData{std::move(items), false});
    const int64_t length = static_cast<int64_t>(all->items.size());
    for (int64_t i = 0; i < length; ++i) {
      budget_.charge();
      auto iteration = std::make_shared<Frame>();
      iteration->parent = frame;
      assign(n, all->items[static_cast<size_t>(i)], *iteration);
      iteration->set("loop", Value(std::make_shared<const LoopInfo>(LoopInfo{i, length, all})));
      if (exec_body(n.bodies[0], iteration, out) == Flow::kBreak) break;
    }
  }

  // ---- expressions --------------------------------------------------------------------------
  Value eval(const Expr& e, const FramePtr& frame) {
    try {
      return eval_expr(e, frame);
    } catch (const TemplateError& err) {
      fail(e.offset, err.what());
    }
  }

  CallArgs eval_args(const Expr& e, size_t first, const FramePtr& frame) {
    CallArgs args;
    for (size_t i = first; i < e.args.size(); ++i)
      args.positional.push_back(eval(*e.args[i], frame));
    for (const Keyword& k : e.keywords) args.keywords.emplace_back(k.name, eval(*k.value, frame));
    return args;
  }

  Value apply_filter_node(const Expr& f, const Value& subject, const FramePtr& frame) {
    const CallArgs args = eval_args(f, 1, frame);
    try {
      return apply_filter(f.name, subject, args, budget_);
    } catch (const TemplateError& err) {
      fail(f.offset, err.what());
    }
  }

  Value eval_expr(const Expr& e, const FramePtr& frame) {
    switch (e.kind) {
      case ExprKind::kLiteral:
        return e.literal;
      case ExprKind::kName: {
        if (const Value* v = frame->find(e.name)) return *v;
        for (auto g : kGlobals) {
          if (g == e.name) return make_global(g);
        }
        return Value::undefined(fmt::format("'{}' is undefined", e.name));
      }
      case ExprKind::kList:
      case ExprKind::kTuple: {
        std::vector<Value> items;
        for (const ExprPtr& a : e.args) items.push_back(eval(*a, frame));
        return e.kind == ExprKind::kList ? Value::list(std::move(items))
                                         : Value::tuple(std::move(items));
      }
      case ExprKind::kDict: {
        Dict d;
        for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
          const Value key = eval(*e.args[i], frame);
          if (!key.is_string()) {
            throw TemplateError(
                fmt::format("dict keys must be strings in ctxpar's chat template renderer, got {}",
                            python_type_name(key)));
          }
          d.set(key.as_string(), eval(*e.args[i + 1], frame));
        }
        return Value::dict(std::move(d));
      }
      case ExprKind::kGetAttr:
        return get_attribute(eval(*e.args[0], frame), e.name);
      case ExprKind::kGetItem: {
        const Value object = eval(*e.args[0], frame);
        return get_item(object, eval(*e.args[1], frame));
      }
      case ExprKind::kSlice: {
        const Value object = eval(*e.args[0], frame);
        Value parts[3];
        const Value* ptrs[3] = {nullptr, nullptr, nullptr};
        for (int i = 0; i < 3; ++i) {
          if (e.args[1 + i]) {
            parts[i] = eval(*e.args[1 + i], frame);
            ptrs[i] = &parts[i];
          }
        }
        return get_slice(object, ptrs[0], ptrs[1], ptrs[2]);
      }
      case ExprKind::kCall: {
        const Value callee = eval(*e.args[0], frame);
        const CallArgs args = eval_args(e, 1, frame);
        return call(callee, args);
      }
      case ExprKind::kFilter:
        return apply_filter_node(e, eval(*e.args[0], frame), frame);
      case ExprKind::kTest: {
        const Value subject = eval(*e.args[0], frame);
        const CallArgs args = eval_args(e, 1, frame);
        return Value(apply_test(e.name, subject, args) != e.negated);
      }
      case ExprKind::kNeg:
      case ExprKind::kPos: {
        const Value v = eval(*e.args[0], frame);
        if (v.is_undefined()) throw TemplateError(v.undefined_hint());
        if (v.is_float()) return Value(e.kind == ExprKind::kNeg ? -v.as_double() : v.as_double());
        if (v.is_int() || v.is_bool()) {
          if (e.kind == ExprKind::kPos) return Value(v.as_int());
          return Value(checked(v.as_int() == INT64_MIN, -v.as_int()));
        }
        throw TemplateError(fmt::format("bad operand type for unary {}: '{}'",
                                        e.kind == ExprKind::kNeg ? "-" : "+", python_type_name(v)));
      }
      case ExprKind::kNot:
        return Value(!truthy(eval(*e.args[0], frame)));
      case ExprKind::kAnd: {
        Value left = eval(*e.args[0], frame);
        return truthy(left) ? eval(*e.args[1], frame) : left;
      }
      case ExprKind::kOr: {
        Value left = eval(*e.args[0], frame);
        return truthy(left) ? left : eval(*e.args[1], frame);
      }
      case ExprKind::kBinary:
        return binary(e.name, eval(*e.args[0], frame), eval(*e.args[1], frame));
      case ExprKind::kConcat: {
        std::string s;
        for (const ExprPtr& a : e.args) {
          s += to_str(eval(*a, frame));
          budget_.check_size(s.size());
        }
        return Value(std::move(s));
      }
      case ExprKind::kCompare: {
        Value left = eval(*e.args[0], frame);
        for (size_t i = 0; i < e.ops.size(); ++i) {
          Value right = eval(*e.args[i + 1], frame);
          if (!compare_op(e.ops[i], left, right)) return Value(false);
          left = std::move(right);
        }
        return Value(true);
      }
      case ExprKind::kCondition:
        if (truthy(eval(*e.args[0], frame))) return eval(*e.args[1], frame);
        if (e.args[2]) return eval(*e.args[2], frame);
        return Value::undefined(fmt::format(
            "the inline if-expression at {} evaluated to false and no else section was defined.",
            map_.where(e.offset)));
    }
    return Value();
  }

  static bool compare_op(const std::string& op, const Value& a, const Value& b) {
    if (op == "==") return equals(a, b);
    if (op == "!=") return !equals(a, b);
    if (op == "in") return contains(b, a);
    if (op == "notin") return !contains(b, a);
    const int c = compare(a, b, op);
    if (op == "<") return c < 0;
    if (op == "<=") return c <= 0;
    if (op == ">") return c > 0;
    return c >= 0;
  }

  Value repeat(const Value& seq, int64_t times) {
    if (times <= 0) return seq.is_string() ? Value("") : Value::list({});
    if (seq.is_string()) {
      budget_.check_size(seq.as_string().size() * static_cast<size_t>(times));
      std::string out;
      for (int64_t i = 0; i < times; ++i) out += seq.as_string();
      return Value(std::move(out));
    }
    budget_.check_size(seq.items().size() * static_cast<size_t>(times));
    std::vector<Value> out;
    for (int64_t i = 0; i < times; ++i)
      out.insert(out.end(), seq.items().begin(), seq.items().end());
    return seq.is_tuple() ? Value::tuple(std::move(out)) : Value::list(std::move(out));
  }

  Value binary(const std::string& op, const Value& a, const Value& b) {
    if (a.is_undefined()) throw TemplateError(a.undefined_hint());
    if (b.is_undefined()) throw TemplateError(b.undefined_hint());
    const bool ints = (a.is_int() || a.is_bool()) && (b.is_int() || b.is_bool());
    const bool nums = a.is_number() && b.is_number();
    int64_t r = 0;
    if (op == "+") {
      if (ints) {
        const bool overflow = __builtin_add_overflow(a.as_int(), b.as_int(), &r);
        return Value(checked(overflow, r));
      }
      if (nums) return Value(a.as_double() + b.as_double());
      if (a.is_string() && b.is_string()) {
        budget_.check_size(a.as_string().size() + b.as_string().size());
        return Value(a.as_string() + b.as_string());
      }
      if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
        std::vector<Value> out = a.items();
        budget_.check_size(out.size() + b.items().size());
        out.insert(out.end(), b.items().begin(), b.items().end());
        return a.is_tuple() ? Value::tuple(std::move(out)) : Value::list(std::move(out));
      }
      if (a.is_list() && b.is_list()) {
        throw TemplateError(fmt::format("can only concatenate {} (not \"{}\") to {}",
                                        python_type_name(a), python_type_name(b),
                                        python_type_name(a)));
      }
      if (a.is_string()) {
        throw TemplateError(
            fmt::format("can only concatenate str (not \"{}\") to str", python_type_name(b)));
      }
      type_error(op, a, b);
    }
    if (op == "-") {
      if (ints) {
        const bool overflow = __builtin_sub_overflow(a.as_int(), b.as_int(), &r);
        return Value(checked(overflow, r));
      }
      if (nums) return Value(a.as_double() - b.as_double());
      type_error(op, a, b);
    }
    if (op == "*") {
      if (ints) {
        const bool overflow = __builtin_mul_overflow(a.as_int(), b.as_int(), &r);
        return Value(checked(overflow, r));
      }
      if (nums) return Value(a.as_double() * b.as_double());
      if ((a.is_string() || a.is_list()) && (b.is_int() || b.is_bool()))
        return repeat(a, b.as_int());
      if ((b.is_string() || b.is_list()) && (a.is_int() || a.is_bool()))
        return repeat(b, a.as_int());
      throw TemplateError(
          fmt::format("can't multiply sequence by non-int of type '{}'", python_type_name(b)));
    }
    if (op == "/") {
      if (!nums) type_error(op, a, b);
      if (b.as_double() == 0.0) throw TemplateError("division by zero");
      return Value(a.as_double() / b.as_double());
    }
    if (op == "//") {
      if (ints) return Value(floor_div(a.as_int(), b.as_int()));
      if (!nums) type_error(op, a, b);
      if (b.as_double() == 0.0) throw TemplateError("float floor division by zero");
      return Value(std::floor(a.as_double() / b.as_double()));
    }
    if (op == "%") {
      if (ints) return Value(py_mod(a.as_int(), b.as_int()));
      if (nums) return Value(py_fmod(a.as_double(), b.as_double()));
      if (a.is_string()) {
        throw TemplateError(
            "printf-style '%' string formatting is not supported by ctxpar's "
            "chat template renderer; use '~' or str.format");
      }
      type_error(op, a, b);
    }
    if (op == "**") {
      if (ints && b.as_int() >= 0) {
        int64_t result = 1, base = a.as_int();
        for (int64_t e = b.as_int(); e > 0; e >>= 1) {
          if ((e & 1) && __builtin_mul_overflow(result, base, &result)) checked(true, 0);
          if (e > 1 && __builtin_mul_overflow(base, base, &base)) checked(true, 0);
        }
        return Value(result);
      }
      if (!nums) type_error("** or pow()", a, b);
      if (a.as_double() == 0.0 && b.as_double() < 0) {
        throw TemplateError("0.0 cannot be raised to a negative power");
      }
      return Value(std::pow(a.as_double(), b.as_double()));
    }
    throw TemplateError(fmt::format("unknown operator '{}'", op));
  }

  // ---- calls --------------------------------------------------------------------------------
  Value call(const Value& callee, const CallArgs& args) {
    budget_.charge();
    if (callee.is_undefined()) throw TemplateError(callee.undefined_hint());
    if (callee.kind() != Value::Kind::kCallable) {
      throw TemplateError(fmt::format("'{}' object is not callable", python_type_name(callee)));
    }
    const Callable& c = callee.as_callable();
    switch (c.kind) {
      case Callable::Kind::kMethod:
        return call_method(c, args, budget_);
      case Callable::Kind::kMacro:
        return call_macro(c, args);
      case Callable::Kind::kGlobal:
        return call_global(c.name, args);
    }
    return Value();
  }

  Value call_macro(const Callable& c, const CallArgs& args) {
    const MacroNode& m = *c.macro;
    if (args.positional.size() > m.params.size()) {
      throw TemplateError(
          fmt::format("macro '{}' takes not more than {} argument(s)", m.name, m.params.size()));
    }
    auto frame = std::make_shared<Frame>();
    frame->parent = c.closure.lock();
    if (!frame->parent) {
      throw TemplateError(
          fmt::format("macro '{}' was called after the block that defined it ended", m.name));
    }
    std::vector<const Value*> given(m.params.size(), nullptr);
    for (size_t i = 0; i < args.positional.size(); ++i) given[i] = &args.positional[i];
    for (const auto& [k, v] : args.keywords) {
      size_t i = 0;
      while (i < m.params.size() && m.params[i].name != k) ++i;
      if (i == m.params.size()) {
        throw TemplateError(fmt::format("macro '{}' takes no keyword argument '{}'", m.name, k));
      }
      if (given[i]) {
        throw TemplateError(
            fmt::format("macro '{}' got multiple values for argument '{}'", m.name, k));
      }
      given[i] = &v;
    }
    for (size_t i = 0; i < m.params.size(); ++i) {
      if (given[i]) {
        frame->set(m.params[i].name, *given[i]);
      } else if (m.params[i].default_value) {
        frame->set(m.params[i].name, eval(*m.params[i].default_value, frame));
      } else {
        frame->set(m.params[i].name, Value::undefined(fmt::format("parameter '{}' was not provided",
                                                                  m.params[i].name)));
      }
    }
    budget_.enter_call();
    struct Leave {
      Budget& b;
      ~Leave() { b.leave_call(); }
    } leave{budget_};
    return Value(render_in(m.bodies[0], frame));
  }

  Value call_global(const std::string& name, const CallArgs& args) {
    if (name == "raise_exception") {
      ArgBinder b(args, "raise_exception", {"message"});
      throw TemplateRaised(b.get(0) ? to_str(*b.get(0)) : "");
    }
    if (name == "strftime_now") {
      ArgBinder b(args, "strftime_now", {"format"});
      const std::string* format = b.string_or_null(0);
      if (!format) throw TemplateError("strftime_now() needs a format string");
      const std::tm now = now_();
      for (size_t size = 256; size <= (size_t{1} << 20); size *= 4) {
        std::string buf(size, '\0');
        const size_t n = std::strftime(buf.data(), buf.size(), format->c_str(), &now);
        if (n > 0 || format->empty()) return Value(buf.substr(0, n));
      }
      return Value("");  // a format whose text is empty (strftime cannot tell it apart)
    }
    if (name == "range") {
      for (const Value& a : args.positional) {
        if (!a.is_int() && !a.is_bool()) {
          throw TemplateError(
              fmt::format("'{}' object cannot be interpreted as an integer", python_type_name(a)));
        }
      }
      if (args.positional.empty() || args.positional.size() > 3 || !args.keywords.empty()) {
        throw TemplateError("range expected 1 to 3 integer arguments");
      }
      int64_t start = 0, stop = 0, step = 1;
      if (args.positional.size() == 1) {
        stop = args.positional[0].as_int();
      } else {
        start = args.positional[0].as_int();
        stop = args.positional[1].as_int();
        if (args.positional.size() == 3) step = args.positional[2].as_int();
      }
      if (step == 0) throw TemplateError("range() arg 3 must not be zero");
      const long double span = static_cast<long double>(stop) - start;
      const long double count_ld = step > 0 ? std::ceil(span / step) : std::ceil(span / step);
      const int64_t count = count_ld > 0 ? static_cast<int64_t>(count_ld) : 0;
      budget_.charge(count);
      budget_.check_size(static_cast<size_t>(count));
      std::vector<Value> items;
      items.reserve(static_cast<size_t>(count));
      for (int64_t i = 0; i < count; ++i) items.emplace_back(start + i * step);
      return Value::list(std::move(items));
    }
    if (name == "dict" || name == "namespace") {
      if (args.positional.size() > 1) {
        throw TemplateError(fmt::format("{} expected at most 1 positional argument", name));
      }
      Dict d;
      if (!args.positional.empty()) {
        const Value& init = args.positional[0];
        if (init.is_dict()) {
          d = init.as_dict();
        } else {
          for (const Value& pair : iterate(init)) {
            const std::vector<Value> kv = iterate(pair);
            if (kv.size() != 2 || !kv[0].is_string()) {
              throw TemplateError(fmt::format("{}: each item must be a (str, value) pair", name));
            }
            d.set(kv[0].as_string(), kv[1]);
          }
        }
      }
      for (const auto& [k, v] : args.keywords) d.set(k, v);
      if (name == "dict") return Value::dict(std::move(d));
      for (const auto& [k, v] : d.entries()) {
        if (holds_namespace(v)) {
          throw TemplateError("a namespace attribute cannot hold a namespace or loop object");
        }
      }
      auto ns = std::make_shared<Namespace>();
      ns->attrs = std::move(d);
      return Value(std::move(ns));
    }
    throw TemplateError(fmt::format("unknown global function '{}'", name));
  }

  const SourceMap& map_;
  Budget budget_;
  const Clock& now_;
};

}  // namespace

std::string render_body(const Body& body, const SourceMap& map, const Dict& context,
                        const RenderLimits& limits, const Clock& now) {
  try {
    return Interpreter(map, limits, now).run(body, context);
  } catch (const TemplateRaised& raised) {
    throw InputError(raised.what());
  } catch (const TemplateError& e) {
    CTXPAR_INPUT_FAIL("chat template {}: {}", map.origin(), e.what());
  }
}

}  // namespace ctxpar::chat_template
