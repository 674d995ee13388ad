#include "ctxpar/tokenizer/chat_template/content_loops.h"

#include <deque>
#include <functional>
#include <set>
#include <string>
#include <vector>

namespace ctxpar::chat_template {
namespace {

// Every statement of `body` and the statements inside it, in source order (jinja2's find_all).
void each_node(const Body& body, const std::function<void(const Node&)>& visit) {
  for (const NodePtr& node : body) {
    visit(*node);
    for (const Body& inner : node->bodies) each_node(inner, visit);
    each_node(node->else_body, visit);
  }
}

// vLLM's _is_var_or_elems_access: `varname` itself (key empty) or its `key` element, possibly
// under filters, tests and slices.
bool refers_to(const Expr& e, const std::string& varname, const std::string& key) {
  switch (e.kind) {
    case ExprKind::kFilter:
    case ExprKind::kTest:
    case ExprKind::kSlice:
      return !e.args.empty() && e.args[0] && refers_to(*e.args[0], varname, key);
    case ExprKind::kName:
      return key.empty() && e.name == varname;
    case ExprKind::kGetAttr:
      return !key.empty() && e.name == key && e.args[0]->kind == ExprKind::kName &&
             e.args[0]->name == varname;
    case ExprKind::kGetItem:
      return !key.empty() && e.args[0]->kind == ExprKind::kName && e.args[0]->name == varname &&
             e.args[1]->kind == ExprKind::kLiteral && e.args[1]->literal.is_string() &&
             e.args[1]->literal.as_string() == key;
    default:
      return false;
  }
}

// Where vLLM asserts a plain name and fails.
struct NotAName {};

}  // namespace

bool loops_over_message_content(const Body& body) {
  try {
    // The names the messages go by: `messages` and what is set from it, transitively.
    std::vector<std::string> messages = {"messages"};
    std::set<std::string> followed = {"messages"};
    for (std::deque<std::string> queue = {"messages"}; !queue.empty(); queue.pop_front()) {
      const std::string name = queue.front();
      each_node(body, [&](const Node& n) {
        if ((n.kind != NodeKind::kSet && n.kind != NodeKind::kSetAttr) || !n.expr ||
            !refers_to(*n.expr, name, "")) {
          return;
        }
        if (n.kind == NodeKind::kSetAttr || n.unpack || n.targets.size() != 1) throw NotAName{};
        messages.push_back(n.targets[0]);
        if (followed.insert(n.targets[0]).second) queue.push_back(n.targets[0]);
      });
    }
    // The names a message goes by: targets of loops over those.
    const auto loop_target = [](const Node& n) {
      if (n.unpack || n.targets.size() != 1) throw NotAName{};
      return n.targets[0];
    };
    std::vector<std::string> message_vars;
    each_node(body, [&](const Node& n) {
      if (n.kind != NodeKind::kFor || !n.expr) return;
      for (const std::string& name : messages) {
        if (refers_to(*n.expr, name, "")) {
          message_vars.push_back(loop_target(n));
          break;
        }
      }
    });
    // A loop over a message's content.
    bool found = false;
    each_node(body, [&](const Node& n) {
      if (found || n.kind != NodeKind::kFor || !n.expr) return;
      for (const std::string& name : message_vars) {
        if (refers_to(*n.expr, name, "content")) {
          loop_target(n);
          found = true;
          return;
        }
      }
    });
    return found;
  } catch (const NotAName&) {
    return false;
  }
}

}  // namespace ctxpar::chat_template
