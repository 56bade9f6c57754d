// JobDef helpers (the JSON codec is in json.cpp).
#include "moka/defs/job_def.h"

namespace moka {

std::vector<std::string> JobDef::checkpoint_nodes() const {
  if (!nodes_to_checkpoint.empty()) return nodes_to_checkpoint;
  std::vector<std::string> nodes;
  for (const auto& n : init_group.nodes) nodes.push_back(n.node);
  return nodes;
}

}  // namespace moka
