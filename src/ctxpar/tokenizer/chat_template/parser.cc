#include "ctxpar/tokenizer/chat_template/parser.h"

#include <algorithm>
#include <initializer_list>

#include "ctxpar/core/error.h"
#include "ctxpar/tokenizer/chat_template/filters.h"
#include "ctxpar/tokenizer/chat_template/predicates.h"

namespace ctxpar::chat_template {
namespace {

// Deeper nesting than this (of expressions or blocks) is refused instead of risking the stack.
constexpr int kMaxNesting = 200;

constexpr std::string_view kSupportedTags =
    "if/elif/else, for/else, set, macro, filter, with, generation, break, continue, raw";

bool is_unsupported_jinja_tag(std::string_view name) {
  static constexpr std::string_view kTags[] = {
      "block", "extends", "include",   "import", "from",  "call", "autoescape",
      "do",    "trans",   "pluralize", "print",  "debug", "cycle"};
  return std::find(std::begin(kTags), std::end(kTags), name) != std::end(kTags);
}

std::string describe(const Token& t) {
  switch (t.type) {
    case TokenType::kData:
      return "template data";
    case TokenType::kVariableBegin:
      return "'{{'";
    case TokenType::kVariableEnd:
      return "end of print statement '}}'";
    case TokenType::kBlockBegin:
      return "'{%'";
    case TokenType::kBlockEnd:
      return "end of statement block '%}'";
    case TokenType::kName:
      return "'" + t.text + "'";
    case TokenType::kString:
      return "string literal";
    case TokenType::kInteger:
    case TokenType::kFloat:
      return "number";
    case TokenType::kOperator:
      return "'" + t.text + "'";
    case TokenType::kEnd:
      return "end of template";
  }
  return "token";
}

class Parser {
 public:
  Parser(const std::vector<Token>& tokens, const SourceMap& map) : toks_(tokens), map_(map) {}

  Body parse_all() {
    Body body = parse_body({}, nullptr, 0, "");
    return body;
  }

 private:
  // ---- token stream -------------------------------------------------------------------------
  const Token& cur() const { return toks_[pos_]; }
  const Token& peek(size_t n = 1) const { return toks_[std::min(pos_ + n, toks_.size() - 1)]; }
  const Token& next() {
    const Token& t = toks_[pos_];
    if (pos_ + 1 < toks_.size()) ++pos_;
    return t;
  }
  bool is_op(std::string_view op, const Token* t = nullptr) const {
    const Token& x = t ? *t : cur();
    return x.type == TokenType::kOperator && x.text == op;
  }
  bool is_name(std::string_view name, const Token* t = nullptr) const {
    const Token& x = t ? *t : cur();
    return x.type == TokenType::kName && x.text == name;
  }
  bool skip_op(std::string_view op) {
    if (!is_op(op)) return false;
    next();
    return true;
  }
  bool skip_name(std::string_view name) {
    if (!is_name(name)) return false;
    next();
    return true;
  }

  [[noreturn]] void fail(size_t offset, const std::string& message) const {
    CTXPAR_INPUT_FAIL("chat template {}: {}", map_.where(offset), message);
  }
  [[noreturn]] void fail_expected(std::string_view what) const {
    fail(cur().offset, fmt::format("expected {}, got {}", what, describe(cur())));
  }
  void expect_op(std::string_view op) {
    if (!skip_op(op)) fail_expected(fmt::format("'{}'", op));
  }
  std::string expect_name() {
    if (cur().type != TokenType::kName) fail_expected("a name");
    return next().text;
  }
  void expect_block_end() {
    if (cur().type != TokenType::kBlockEnd) fail_expected("end of statement block '%}'");
    next();
  }

  struct DepthGuard {
    Parser& p;
    explicit DepthGuard(Parser& parser, size_t offset) : p(parser) {
      if (++p.depth_ > kMaxNesting) {
        p.fail(offset, fmt::format("the template nests more than {} levels deep", kMaxNesting));
      }
    }
    ~DepthGuard() { --p.depth_; }
  };

  static ExprPtr make(ExprKind kind, size_t offset) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->offset = offset;
    return e;
  }

  // ---- statements ---------------------------------------------------------------------------
  // Statements up to a `{% name %}` with name in `ends` (consumed up to and including the name;
  // *which gets it). With no ends, up to the end of the template.
  Body parse_body(std::initializer_list<std::string_view> ends, std::string* which,
                  size_t open_offset, std::string_view open_tag) {
    Body body;
    while (true) {
      const Token& t = cur();
      if (t.type == TokenType::kEnd) {
        if (ends.size() == 0) return body;
        std::string wanted;
        for (auto e : ends) {
          if (!wanted.empty()) wanted += " or ";
          wanted += fmt::format("'{}'", e);
        }
        fail(open_offset, fmt::format("unexpected end of template: the '{}' block opened here "
                                      "was never closed (expected {})",
                                      open_tag, wanted));
      }
      if (t.type == TokenType::kData) {
        auto n = std::make_unique<Node>();
        n->kind = NodeKind::kOutput;
        n->offset = t.offset;
        n->text = t.text;
        body.push_back(std::move(n));
        next();
        continue;
      }
      if (t.type == TokenType::kVariableBegin) {
        next();
        auto n = std::make_unique<Node>();
        n->kind = NodeKind::kPrint;
        n->offset = t.offset;
        n->expr = parse_tuple(true, false);
        if (cur().type != TokenType::kVariableEnd) fail_expected("end of print statement '}}'");
        next();
        body.push_back(std::move(n));
        continue;
      }
      if (t.type != TokenType::kBlockBegin) fail_expected("template data or a tag");
      const Token& name = peek();
      if (name.type == TokenType::kName &&
          std::find(ends.begin(), ends.end(), name.text) != ends.end()) {
        next();
        next();
        if (which) *which = name.text;
        return body;
      }
      next();
      body.push_back(parse_statement(t.offset));
    }
  }

  NodePtr parse_statement(size_t offset) {
    DepthGuard guard(*this, offset);
    if (cur().type != TokenType::kName) fail_expected("a tag name");
    const Token& tag = next();
    const std::string& name = tag.text;
    if (name == "if") return parse_if(offset);
    if (name == "for") return parse_for(offset);
    if (name == "set") return parse_set(offset);
    if (name == "macro") return parse_macro(offset);
    if (name == "generation")
      return parse_simple_block(offset, NodeKind::kGeneration, "generation");
    if (name == "filter") return parse_filter_block(offset);
    if (name == "with") return parse_with(offset);
    if (name == "break" || name == "continue") {
      if (loop_depth_ == 0) fail(tag.offset, fmt::format("'{}' outside of a for loop", name));
      expect_block_end();
      auto n = std::make_unique<Node>();
      n->kind = name == "break" ? NodeKind::kBreak : NodeKind::kContinue;
      n->offset = offset;
      return n;
    }
    if (is_unsupported_jinja_tag(name)) {
      fail(tag.offset, fmt::format("the '{}' tag is not supported by ctxpar's chat template "
                                   "renderer (supported tags: {})",
                                   name, kSupportedTags));
    }
    static constexpr std::string_view kEnds[] = {
        "endif",   "endfor",        "endset", "endmacro", "endfilter",
        "endwith", "endgeneration", "elif",   "else",     "endraw"};
    if (std::find(std::begin(kEnds), std::end(kEnds), name) != std::end(kEnds)) {
      fail(tag.offset, fmt::format("unexpected '{}': no open block to close here", name));
    }
    fail(tag.offset, fmt::format("unknown tag '{}' (supported tags: {})", name, kSupportedTags));
  }

  NodePtr parse_if(size_t offset) {
    auto n = std::make_unique<Node>();
    n->kind = NodeKind::kIf;
    n->offset = offset;
    n->conditions.push_back(parse_tuple(false, false));
    expect_block_end();
    while (true) {
      std::string which;
      n->bodies.push_back(parse_body({"elif", "else", "endif"}, &which, offset, "if"));
      if (which == "elif") {
        n->conditions.push_back(parse_tuple(false, false));
        expect_block_end();
        continue;
      }
      if (which == "else") {
        expect_block_end();
        n->else_body = parse_body({"endif"}, nullptr, offset, "if");
      }
      expect_block_end();
      return n;
    }
  }

  // Names of an assignment target: `x` or `a, b` (unpack). For `set`, also `ns.attr`.
  void parse_targets(Node& n, bool allow_attribute) {
    n.targets.push_back(expect_name());
    if (allow_attribute && is_op(".")) {
      next();
      n.kind = NodeKind::kSetAttr;
      n.attribute = expect_name();
      return;
    }
    while (is_op(",")) {
      next();
      n.unpack = true;
      if (cur().type != TokenType::kName) break;  // trailing comma
      n.targets.push_back(expect_name());
    }
  }

  NodePtr parse_for(size_t offset) {
    auto n = std::make_unique<Node>();
    n->kind = NodeKind::kFor;
    n->offset = offset;
    parse_targets(*n, false);
    if (!skip_name("in")) fail_expected("'in'");
    n->expr = parse_tuple(false, false, "recursive");
    if (skip_name("if")) n->condition = parse_expression(true);
    if (is_name("recursive")) {
      fail(cur().offset,
           "recursive for loops are not supported by ctxpar's chat template "
           "renderer");
    }
    expect_block_end();
    ++loop_depth_;
    std::string which;
    n->bodies.push_back(parse_body({"else", "endfor"}, &which, offset, "for"));
    --loop_depth_;
    if (which == "else") {
      expect_block_end();
      // break/continue in a for's else belong to an enclosing loop, if any (as in jinja2).
      n->else_body = parse_body({"endfor"}, nullptr, offset, "for");
    }
    expect_block_end();
    return n;
  }

  NodePtr parse_set(size_t offset) {
    auto n = std::make_unique<Node>();
    n->kind = NodeKind::kSet;
    n->offset = offset;
    parse_targets(*n, true);
    if (skip_op("=")) {
      n->expr = parse_tuple(true, false);
      expect_block_end();
      return n;
    }
    if (n->kind == NodeKind::kSetAttr || n->unpack) {
      fail_expected("'=' (a block set assigns one plain name)");
    }
    n->kind = NodeKind::kBlockSet;
    while (skip_op("|")) n->filters.push_back(parse_filter(nullptr));
    expect_block_end();
    n->bodies.push_back(parse_body({"endset"}, nullptr, offset, "set"));
    expect_block_end();
    return n;
  }

  NodePtr parse_macro(size_t offset) {
    auto n = std::make_unique<MacroNode>();
    n->kind = NodeKind::kMacro;
    n->offset = offset;
    n->name = expect_name();
    expect_op("(");
    bool seen_default = false;
    while (!is_op(")")) {
      if (!n->params.empty()) expect_op(",");
      if (is_op(")")) break;
      MacroParam p;
      p.name = expect_name();
      if (skip_op("=")) {
        p.default_value = parse_expression(true);
        seen_default = true;
      } else if (seen_default) {
        fail(cur().offset, "a macro parameter without default follows one with a default");
      }
      n->params.push_back(std::move(p));
    }
    next();
    expect_block_end();
    const int saved_loops = loop_depth_;
    loop_depth_ = 0;  // a loop around the definition does not make break valid inside
    n->bodies.push_back(parse_body({"endmacro"}, nullptr, offset, "macro"));
    loop_depth_ = saved_loops;
    // `{% endmacro name %}` is not jinja2 syntax; just the end of the tag.
    expect_block_end();
    return n;
  }

  NodePtr parse_simple_block(size_t offset, NodeKind kind, std::string_view tag) {
    auto n = std::make_unique<Node>();
    n->kind = kind;
    n->offset = offset;
    expect_block_end();
    const std::string end = "end" + std::string(tag);
    n->bodies.push_back(parse_body({end}, nullptr, offset, tag));
    expect_block_end();
    return n;
  }

  NodePtr parse_filter_block(size_t offset) {
    auto n = std::make_unique<Node>();
    n->kind = NodeKind::kFilterBlock;
    n->offset = offset;
    n->filters.push_back(parse_filter(nullptr));
    while (skip_op("|")) n->filters.push_back(parse_filter(nullptr));
    expect_block_end();
    n->bodies.push_back(parse_body({"endfilter"}, nullptr, offset, "filter"));
    expect_block_end();
    return n;
  }

  NodePtr parse_with(size_t offset) {
    auto n = std::make_unique<Node>();
    n->kind = NodeKind::kWith;
    n->offset = offset;
    while (cur().type != TokenType::kBlockEnd) {
      if (!n->targets.empty()) expect_op(",");
      n->targets.push_back(expect_name());
      expect_op("=");
      n->values.push_back(parse_expression(true));
    }
    expect_block_end();
    n->bodies.push_back(parse_body({"endwith"}, nullptr, offset, "with"));
    expect_block_end();
    return n;
  }

  // ---- expressions --------------------------------------------------------------------------
  bool at_tuple_end(std::string_view extra_end) const {
    const Token& t = cur();
    if (t.type == TokenType::kVariableEnd || t.type == TokenType::kBlockEnd ||
        t.type == TokenType::kEnd) {
      return true;
    }
    if (is_op(")") || is_op("]") || is_op("}")) return true;
    return !extra_end.empty() && is_name(extra_end);
  }

  // Expressions separated by commas: one expression, or a tuple if there is a comma.
  ExprPtr parse_tuple(bool with_condition, bool explicit_parentheses,
                      std::string_view extra_end = {}) {
    const size_t offset = cur().offset;
    std::vector<ExprPtr> items;
    bool is_tuple = false;
    while (true) {
      if (!items.empty()) expect_op(",");
      if (at_tuple_end(extra_end)) break;
      items.push_back(parse_expression(with_condition));
      if (is_op(",")) {
        is_tuple = true;
      } else {
        break;
      }
    }
    if (!is_tuple) {
      if (!items.empty()) return std::move(items[0]);
      if (!explicit_parentheses) fail_expected("an expression");
    }
    auto e = make(ExprKind::kTuple, offset);
    e->args = std::move(items);
    return e;
  }

  ExprPtr parse_expression(bool with_condition) {
    DepthGuard guard(*this, cur().offset);
    return with_condition ? parse_condition() : parse_or();
  }

  ExprPtr parse_condition() {
    ExprPtr expr = parse_or();
    while (is_name("if")) {
      const size_t offset = next().offset;
      auto e = make(ExprKind::kCondition, offset);
      e->args.push_back(parse_or());
      e->args.push_back(std::move(expr));
      if (skip_name("else")) {
        e->args.push_back(parse_condition());
      } else {
        e->args.push_back(nullptr);
      }
      expr = std::move(e);
    }
    return expr;
  }

  ExprPtr parse_binary_chain(ExprKind kind, std::string_view keyword, ExprPtr (Parser::*sub)()) {
    ExprPtr left = (this->*sub)();
    while (is_name(keyword)) {
      const size_t offset = next().offset;
      auto e = make(kind, offset);
      e->args.push_back(std::move(left));
      e->args.push_back((this->*sub)());
      left = std::move(e);
    }
    return left;
  }
  ExprPtr parse_or() { return parse_binary_chain(ExprKind::kOr, "or", &Parser::parse_and); }
  ExprPtr parse_and() { return parse_binary_chain(ExprKind::kAnd, "and", &Parser::parse_not); }

  ExprPtr parse_not() {
    if (is_name("not")) {
      DepthGuard guard(*this, cur().offset);
      const size_t offset = next().offset;
      auto e = make(ExprKind::kNot, offset);
      e->args.push_back(parse_not());
      return e;
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
    const size_t offset = cur().offset;
    ExprPtr first = parse_math1();
    auto e = make(ExprKind::kCompare, offset);
    e->args.push_back(std::move(first));
    while (true) {
      const Token& t = cur();
      static constexpr std::string_view kOps[] = {"==", "!=", "<", "<=", ">", ">="};
      if (t.type == TokenType::kOperator &&
          std::find(std::begin(kOps), std::end(kOps), t.text) != std::end(kOps)) {
        e->ops.push_back(next().text);
      } else if (is_name("in")) {
        next();
        e->ops.push_back("in");
      } else if (is_name("not") && is_name("in", &peek())) {
        next();
        next();
        e->ops.push_back("notin");
      } else {
        break;
      }
      e->args.push_back(parse_math1());
    }
    if (e->ops.empty()) return std::move(e->args[0]);
    return e;
  }

  ExprPtr binary(std::string op, size_t offset, ExprPtr left, ExprPtr right) {
    auto e = make(ExprKind::kBinary, offset);
    e->name = std::move(op);
    e->args.push_back(std::move(left));
    e->args.push_back(std::move(right));
    return e;
  }

  ExprPtr parse_math1() {
    ExprPtr left = parse_concat();
    while (is_op("+") || is_op("-")) {
      const Token& op = next();
      left = binary(op.text, op.offset, std::move(left), parse_concat());
    }
    return left;
  }

  ExprPtr parse_concat() {
    const size_t offset = cur().offset;
    ExprPtr first = parse_math2();
    if (!is_op("~")) return first;
    auto e = make(ExprKind::kConcat, offset);
    e->args.push_back(std::move(first));
    while (skip_op("~")) e->args.push_back(parse_math2());
    return e;
  }

  ExprPtr parse_math2() {
    ExprPtr left = parse_pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      const Token& op = next();
      left = binary(op.text, op.offset, std::move(left), parse_pow());
    }
    return left;
  }

  ExprPtr parse_pow() {
    ExprPtr left = parse_unary(true);
    while (is_op("**")) {
      const Token& op = next();
      left = binary("**", op.offset, std::move(left), parse_unary(true));
    }
    return left;
  }

  ExprPtr parse_unary(bool with_filter) {
    DepthGuard guard(*this, cur().offset);
    ExprPtr node;
    if (is_op("-") || is_op("+")) {
      const Token& op = next();
      node = make(op.text == "-" ? ExprKind::kNeg : ExprKind::kPos, op.offset);
      node->args.push_back(parse_unary(false));
    } else {
      node = parse_primary();
    }
    node = parse_postfix(std::move(node));
    if (with_filter) node = parse_filter_expr(std::move(node));
    return node;
  }

  ExprPtr literal(Value v, size_t offset) {
    auto e = make(ExprKind::kLiteral, offset);
    e->literal = std::move(v);
    return e;
  }

  ExprPtr parse_primary() {
    const Token& t = cur();
    switch (t.type) {
      case TokenType::kName: {
        next();
        if (t.text == "true" || t.text == "True") return literal(Value(true), t.offset);
        if (t.text == "false" || t.text == "False") return literal(Value(false), t.offset);
        if (t.text == "none" || t.text == "None") return literal(Value(None{}), t.offset);
        auto e = make(ExprKind::kName, t.offset);
        e->name = t.text;
        return e;
      }
      case TokenType::kString: {
        std::string s;
        while (cur().type == TokenType::kString) s += next().text;  // adjacent literals join
        return literal(Value(std::move(s)), t.offset);
      }
      case TokenType::kInteger:
        next();
        return literal(Value(t.int_value), t.offset);
      case TokenType::kFloat:
        next();
        return literal(Value(t.float_value), t.offset);
      case TokenType::kOperator:
        if (t.text == "(") {
          next();
          ExprPtr e = parse_tuple(true, true);
          expect_op(")");
          return e;
        }
        if (t.text == "[") return parse_list();
        if (t.text == "{") return parse_dict();
        break;
      default:
        break;
    }
    fail_expected("an expression");
  }

  ExprPtr parse_list() {
    auto e = make(ExprKind::kList, next().offset);
    while (!is_op("]")) {
      if (!e->args.empty()) expect_op(",");
      if (is_op("]")) break;
      e->args.push_back(parse_expression(true));
    }
    next();
    return e;
  }

  ExprPtr parse_dict() {
    auto e = make(ExprKind::kDict, next().offset);
    while (!is_op("}")) {
      if (!e->args.empty()) expect_op(",");
      if (is_op("}")) break;
      e->args.push_back(parse_expression(true));
      expect_op(":");
      e->args.push_back(parse_expression(true));
    }
    next();
    return e;
  }

  ExprPtr parse_postfix(ExprPtr node) {
    while (true) {
      if (is_op(".")) {
        const size_t offset = next().offset;
        if (cur().type == TokenType::kName) {
          auto e = make(ExprKind::kGetAttr, offset);
          e->name = next().text;
          e->args.push_back(std::move(node));
          node = std::move(e);
        } else if (cur().type == TokenType::kInteger) {
          auto e = make(ExprKind::kGetItem, offset);
          e->args.push_back(std::move(node));
          e->args.push_back(literal(Value(next().int_value), offset));
          node = std::move(e);
        } else {
          fail_expected("an attribute name after '.'");
        }
      } else if (is_op("[")) {
        node = parse_subscript(std::move(node));
      } else if (is_op("(")) {
        node = parse_call(std::move(node));
      } else {
        return node;
      }
    }
  }

  ExprPtr parse_subscript(ExprPtr node) {
    const size_t offset = next().offset;  // '['
    std::vector<ExprPtr> parts;           // null: omitted slice part
    bool is_slice = false;
    ExprPtr index;
    if (!is_op(":")) index = parse_expression(true);
    if (is_op(":")) {
      is_slice = true;
      next();
      parts.push_back(std::move(index));
      parts.push_back(is_op("]") || is_op(":") ? nullptr : parse_expression(true));
      if (skip_op(":")) {
        parts.push_back(is_op("]") ? nullptr : parse_expression(true));
      } else {
        parts.push_back(nullptr);
      }
    } else if (is_op(",")) {
      // x[a, b]: the key is the tuple (a, b).
      auto t = make(ExprKind::kTuple, index->offset);
      t->args.push_back(std::move(index));
      while (skip_op(",")) {
        if (is_op("]")) break;
        t->args.push_back(parse_expression(true));
      }
      index = std::move(t);
    }
    expect_op("]");
    auto e = make(is_slice ? ExprKind::kSlice : ExprKind::kGetItem, offset);
    e->args.push_back(std::move(node));
    if (is_slice) {
      for (auto& p : parts) e->args.push_back(std::move(p));
    } else {
      e->args.push_back(std::move(index));
    }
    return e;
  }

  // (args...) into e->args (after what is already there) and e->keywords.
  void parse_call_args(Expr& e) {
    expect_op("(");
    bool first = true;
    while (!is_op(")")) {
      if (!first) expect_op(",");
      first = false;
      if (is_op(")")) break;
      if (is_op("*") || is_op("**")) {
        fail(cur().offset,
             "*args and **kwargs in calls are not supported by ctxpar's chat "
             "template renderer");
      }
      if (cur().type == TokenType::kName && is_op("=", &peek())) {
        Keyword k;
        k.name = next().text;
        next();
        k.value = parse_expression(true);
        e.keywords.push_back(std::move(k));
      } else {
        if (!e.keywords.empty()) {
          fail(cur().offset, "a positional argument follows a keyword argument");
        }
        e.args.push_back(parse_expression(true));
      }
    }
    next();
  }

  ExprPtr parse_call(ExprPtr callee) {
    auto e = make(ExprKind::kCall, cur().offset);
    e->args.push_back(std::move(callee));
    parse_call_args(*e);
    return e;
  }

  std::string parse_dotted_name() {
    std::string name = expect_name();
    while (is_op(".")) {
      next();
      name.push_back('.');
      name += expect_name();
    }
    return name;
  }

  // `name(args)` after a '|'; subject null for filter blocks and block sets.
  ExprPtr parse_filter(ExprPtr subject) {
    const size_t offset = cur().offset;
    const std::string name = parse_dotted_name();
    switch (filter_support(name)) {
      case BuiltinSupport::kSupported:
        break;
      case BuiltinSupport::kNotSupported:
        fail(offset, fmt::format("the jinja2 filter '{}' is not supported by ctxpar's chat "
                                 "template renderer (supported: {})",
                                 name, supported_filter_names()));
      case BuiltinSupport::kUnknown:
        fail(offset,
             fmt::format("no filter named '{}' (supported: {})", name, supported_filter_names()));
    }
    auto e = make(ExprKind::kFilter, offset);
    e->name = name;
    e->args.push_back(std::move(subject));
    if (is_op("(")) parse_call_args(*e);
    return e;
  }

  ExprPtr parse_test(ExprPtr subject) {
    const size_t offset = next().offset;  // 'is'
    auto e = make(ExprKind::kTest, offset);
    e->negated = skip_name("not");
    const size_t name_offset = cur().offset;
    e->name = parse_dotted_name();
    switch (test_support(e->name)) {
      case BuiltinSupport::kSupported:
        break;
      case BuiltinSupport::kNotSupported:
        fail(name_offset, fmt::format("the jinja2 test '{}' is not supported by ctxpar's chat "
                                      "template renderer (supported: {})",
                                      e->name, supported_test_names()));
      case BuiltinSupport::kUnknown:
        fail(name_offset,
             fmt::format("no test named '{}' (supported: {})", e->name, supported_test_names()));
    }
    e->args.push_back(std::move(subject));
    const Token& t = cur();
    if (is_op("(")) {
      parse_call_args(*e);
    } else if ((t.type == TokenType::kName || t.type == TokenType::kString ||
                t.type == TokenType::kInteger || t.type == TokenType::kFloat || is_op("[") ||
                is_op("{")) &&
               !is_name("else") && !is_name("or") && !is_name("and")) {
      if (is_name("is")) fail(t.offset, "tests cannot be chained with 'is'");
      // `x is divisibleby 3`, `x is sameas none`: one argument without parentheses.
      e->args.push_back(parse_postfix(parse_primary()));
    }
    return e;
  }

  ExprPtr parse_filter_expr(ExprPtr node) {
    while (true) {
      if (is_op("|")) {
        next();
        node = parse_filter(std::move(node));
      } else if (is_name("is")) {
        node = parse_test(std::move(node));
      } else if (is_op("(")) {
        node = parse_call(std::move(node));
      } else {
        return node;
      }
    }
  }

  const std::vector<Token>& toks_;
  const SourceMap& map_;
  size_t pos_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;
};

}  // namespace

Body parse_template(const std::vector<Token>& tokens, const SourceMap& map) {
  return Parser(tokens, map).parse_all();
}

}  // namespace ctxpar::chat_template
