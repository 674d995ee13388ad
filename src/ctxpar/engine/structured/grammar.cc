#include "ctxpar/engine/structured/grammar.h"

#include <algorithm>

#include "ctxpar/core/error.h"

namespace ctxpar::structured {
namespace {

// Depth-first flattening; `mark`: 0 not seen, 1 on the current path, 2 done.
void flatten(Grammar& g, int32_t id, std::vector<uint8_t>& mark) {
  const auto at = static_cast<size_t>(id);
  if (mark[at] == 2) return;
  CTXPAR_CHECK_INPUT(mark[at] != 1,
                     "the schema refers to itself ($ref, anyOf or oneOf) without any JSON text "
                     "in between, so no value can satisfy it");
  mark[at] = 1;
  if (g.nodes[at].kind != NodeKind::kUnion) {
    g.nodes[at].alternatives = {id};
  } else {
    std::vector<int32_t> alts;
    for (const int32_t m : g.nodes[at].members) {
      flatten(g, m, mark);
      for (const int32_t a : g.nodes[static_cast<size_t>(m)].alternatives) {
        if (std::find(alts.begin(), alts.end(), a) == alts.end()) alts.push_back(a);
      }
    }
    g.nodes[at].alternatives = std::move(alts);
  }
  mark[at] = 2;
}

void build_object_tables(ObjectNode& o) {
  const auto n = static_cast<int32_t>(o.properties.size());
  o.by_key.resize(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) o.by_key[static_cast<size_t>(i)] = i;
  std::sort(o.by_key.begin(), o.by_key.end(), [&](int32_t a, int32_t b) {
    return o.properties[static_cast<size_t>(a)].key < o.properties[static_cast<size_t>(b)].key;
  });
  o.next_required.assign(static_cast<size_t>(n) + 1, n);
  o.required_after.assign(static_cast<size_t>(n), 0);
  o.last_required = -1;
  int32_t after = 0;
  for (int32_t i = n - 1; i >= 0; --i) {
    const bool req = o.properties[static_cast<size_t>(i)].required;
    o.next_required[static_cast<size_t>(i)] = req ? i : o.next_required[static_cast<size_t>(i) + 1];
    o.required_after[static_cast<size_t>(i)] = after;
    if (req && o.last_required < 0) o.last_required = i;
    if (req) ++after;
  }
}

}  // namespace

void Grammar::finalize() {
  std::vector<uint8_t> mark(nodes.size(), 0);
  for (size_t i = 0; i < nodes.size(); ++i) flatten(*this, static_cast<int32_t>(i), mark);
  for (Node& n : nodes) {
    if (n.kind == NodeKind::kObject) build_object_tables(n.object);
  }
  CTXPAR_CHECK_INPUT(root >= 0 && !nodes[static_cast<size_t>(root)].alternatives.empty(),
                     "the schema allows no value at all");
}

}  // namespace ctxpar::structured
