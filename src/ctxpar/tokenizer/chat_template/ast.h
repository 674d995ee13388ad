// The parsed form of a template: expressions and statements. The parser builds it once; the
// interpreter walks it for every render. Every node keeps the source offset it starts at, so
// render errors name a line and column.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ctxpar/tokenizer/chat_template/value.h"

namespace ctxpar::chat_template {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Keyword {
  std::string name;
  ExprPtr value;
};

enum class ExprKind {
  kLiteral,    // literal
  kName,       // name
  kList,       // args = items
  kTuple,      // args = items
  kDict,       // args = key0, value0, key1, value1, ...
  kGetAttr,    // args[0].name
  kGetItem,    // args[0][args[1]]
  kSlice,      // args[0][args[1]:args[2]:args[3]], absent parts are null
  kCall,       // args[0](args[1..], keywords)
  kFilter,     // args[0] | name(args[1..], keywords)
  kTest,       // args[0] is [not] name(args[1..], keywords)
  kNeg,        // -args[0]
  kPos,        // +args[0]
  kNot,        // not args[0]
  kAnd,        // args[0] and args[1]
  kOr,         // args[0] or args[1]
  kBinary,     // args[0] op args[1]: + - * / // % **
  kConcat,     // args[0] ~ args[1] ~ ...
  kCompare,    // args[0] ops[0] args[1] ops[1] args[2] ... (chained, like Python)
  kCondition,  // args[1] if args[0] else args[2] (args[2] null: Undefined)
};

struct Expr {
  ExprKind kind = ExprKind::kLiteral;
  size_t offset = 0;
  Value literal;
  std::string name;              // kName, kGetAttr, kFilter, kTest, kBinary operator
  std::vector<std::string> ops;  // kCompare: ==, !=, <, <=, >, >=, in, notin
  std::vector<ExprPtr> args;
  std::vector<Keyword> keywords;
  bool negated = false;  // kTest: `is not`
};

struct Node;
using NodePtr = std::unique_ptr<Node>;
using Body = std::vector<NodePtr>;

enum class NodeKind {
  kOutput,       // text
  kPrint,        // {{ expr }}
  kIf,           // conditions[i] -> bodies[i]; else_body
  kFor,          // for targets in expr [if condition]: body; else_body
  kSet,          // set targets = expr
  kSetAttr,      // set name.attribute = expr
  kBlockSet,     // set targets[0] [| filters] %}body{% endset
  kMacro,        // macro (see MacroNode)
  kGeneration,   // {% generation %}body{% endgeneration %} (HF: renders its body)
  kFilterBlock,  // {% filter f %}body{% endfilter %}
  kWith,         // {% with a = x, b = y %}body{% endwith %}
  kBreak,
  kContinue,
};

struct Node {
  virtual ~Node() = default;
  NodeKind kind = NodeKind::kOutput;
  size_t offset = 0;
  std::string text;                  // kOutput
  ExprPtr expr;                      // kPrint, kFor (iterable), kSet, kSetAttr
  ExprPtr condition;                 // kFor: the loop filter
  std::vector<std::string> targets;  // kFor, kSet, kBlockSet, kWith (names)
  std::string attribute;             // kSetAttr
  std::vector<ExprPtr> conditions;   // kIf
  std::vector<Body> bodies;          // kIf: one per condition; others: bodies[0]
  Body else_body;                    // kIf, kFor
  std::vector<ExprPtr> filters;      // kBlockSet, kFilterBlock: kFilter nodes, args[0] null
  std::vector<ExprPtr> values;       // kWith: one per target
  bool unpack = false;               // kFor/kSet: targets form a tuple
};

struct MacroParam {
  std::string name;
  ExprPtr default_value;  // null: required (Undefined when missing, as in jinja2)
};

struct MacroNode : Node {
  std::string name;
  std::vector<MacroParam> params;
};

}  // namespace ctxpar::chat_template
