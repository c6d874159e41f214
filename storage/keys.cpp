#include "storage/keys.hpp"

namespace claimsched::storage::keys {

std::string describe(std::string_view cf_name, std::string_view key) {
  std::string meaning;
  if (cf_name == cf::kJobs) {
    if (auto j = parse_job(key))
      meaning = "job " + std::to_string(j->value);
    else if (auto c = parse_job_copies(key))
      meaning = std::to_string(c->count) + " copies of job " + std::to_string(c->first.value);
  } else if (cf_name == cf::kTasks) {
    if (auto t = parse_task(key))
      meaning = "job " + std::to_string(t->job.value) + " task " + std::to_string(t->index);
    else if (auto g = parse_task_group(key))
      meaning = "job " + std::to_string(g->job.value) + " tasks from " + std::to_string(g->first) + " version " +
                std::to_string(g->version);
  } else if (cf_name == cf::kNodes || cf_name == cf::kNodeHeaders) {
    if (auto n = parse_node(key)) meaning = "node " + std::to_string(n->value);
  } else if (cf_name == cf::kNodeClaims) {
    if (auto c = parse_node_claim(key))
      meaning = "node " + std::to_string(c->node.value) + " claim " + std::to_string(c->claim.value);
  } else if (cf_name == cf::kNodeAllocations) {
    if (auto a = parse_node_allocation(key))
      meaning = "node " + std::to_string(a->node.value) + " job " +
                std::to_string(a->task.job.value) + " task " + std::to_string(a->task.index);
    else if (auto g = parse_node_claim(key))
      meaning = "node " + std::to_string(g->node.value) + " claim " + std::to_string(g->claim.value) + " allocations";
  } else if (cf_name == cf::kNodeFinished) {
    if (auto f = parse_node_finished(key))
      meaning = "node " + std::to_string(f->node.value) + " finished slot " + std::to_string(f->slot);
  } else if (cf_name == cf::kMeta) {
    bool printable = !key.empty();
    for (unsigned char c : key) printable = printable && c >= 0x20 && c < 0x7F;
    if (printable) meaning = "'" + std::string{key} + "'";
  } else {
    return "[" + hex(key) + "]";
  }
  if (meaning.empty())
    return "malformed key [" + hex(key) + "] (" + std::to_string(key.size()) + " bytes)";
  return meaning + " [" + hex(key) + "]";
}

}  // namespace claimsched::storage::keys
