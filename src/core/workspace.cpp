// Workspace: blob lookup through forwarded names and parents, local creation, net registry, live-workspace list.
#include "moka/core/workspace.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "moka/core/error.h"

namespace moka {

namespace {
std::mutex& live_mutex() {
  static std::mutex m;
  return m;
}
std::vector<Workspace*>& live_workspaces() {
  static std::vector<Workspace*> v;
  return v;
}
}  // namespace

Workspace::Workspace() {
  std::lock_guard lk(live_mutex());
  live_workspaces().push_back(this);
}

Workspace::Workspace(Workspace* parent) : Workspace() { parent_ = parent; }

Workspace::Workspace(Workspace* parent, const ForwardMap& forwarded) : Workspace() {
  add_blob_mapping(parent, forwarded);
}

Workspace::~Workspace() {
  {
    std::lock_guard lk(live_mutex());
    auto& v = live_workspaces();
    v.erase(std::remove(v.begin(), v.end(), this), v.end());
  }
  // Nets first: their operators hold pointers to blobs.
  nets_.clear();
}

void Workspace::for_each(const std::function<void(Workspace*)>& f) {
  // Held while f runs, as in Caffe2: no workspace can be destroyed under f's feet.
  std::lock_guard lk(live_mutex());
  for (auto* ws : live_workspaces()) f(ws);
}

Blob* Workspace::find_local(std::string_view name) const {
  auto it = blobs_.find(name);
  return it == blobs_.end() ? nullptr : it->second.get();
}

bool Workspace::has_blob(std::string_view name) const { return get_blob(name) != nullptr; }

Blob* Workspace::get_blob(std::string_view name) const {
  {
    std::shared_lock lk(mu_);
    if (Blob* b = find_local(name)) return b;
    auto f = forwarded_.find(name);
    if (f != forwarded_.end()) return f->second.ws->get_blob(f->second.name);
  }
  return parent_ ? parent_->get_blob(name) : nullptr;
}

Blob& Workspace::blob(std::string_view name) const {
  Blob* b = get_blob(name);
  if (!b) throw NotFound(fmt::format("blob \"{}\" does not exist in the workspace", name));
  return *b;
}

Blob* Workspace::create_blob(std::string_view name) {
  if (Blob* b = get_blob(name)) return b;
  return create_local_blob(name);
}

Blob* Workspace::create_local_blob(std::string_view name) {
  std::unique_lock lk(mu_);
  auto it = blobs_.find(name);
  if (it != blobs_.end()) return it->second.get();
  bump_generation();
  return blobs_.emplace(std::string(name), std::make_unique<Blob>()).first->second.get();
}

bool Workspace::remove_blob(std::string_view name) {
  std::unique_lock lk(mu_);
  auto it = blobs_.find(name);
  if (it == blobs_.end()) return false;
  blobs_.erase(it);
  bump_generation();
  return true;
}

void Workspace::rename_blob(std::string_view from, std::string_view to) {
  if (from == to) return;
  std::unique_lock lk(mu_);
  // Checked under the lock so no other thread can create `to` in between (locks are only ever
  // taken child before parent, so asking the parent here cannot deadlock).
  if (find_local(to) || forwarded_.count(to) || (parent_ && parent_->has_blob(to)))
    throw InvalidInput(fmt::format("cannot rename blob \"{}\" to \"{}\": \"{}\" already exists", from, to, to));
  auto it = blobs_.find(from);
  if (it == blobs_.end()) throw NotFound(fmt::format("Blob {} is not in the local blob list", from));
  auto owned = std::move(it->second);
  blobs_.erase(it);
  blobs_.emplace(std::string(to), std::move(owned));
  bump_generation();
}

uint64_t Workspace::chain_generation() const noexcept {
  uint64_t sum = 0;
  for (const Workspace* w = this; w; w = w->parent_) sum += w->generation();
  return sum;
}

void Workspace::reset_local_blobs() {
  std::shared_lock lk(mu_);
  for (auto& [name, blob] : blobs_) blob->reset();
}

std::vector<std::string> Workspace::local_blobs() const {
  std::vector<std::string> names;
  {
    std::shared_lock lk(mu_);
    names.reserve(blobs_.size());
    for (const auto& [n, b] : blobs_) names.push_back(n);
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<std::string> Workspace::blobs() const {
  std::set<std::string> names;
  {
    std::shared_lock lk(mu_);
    for (const auto& [n, b] : blobs_) names.insert(n);
    for (const auto& [n, f] : forwarded_)
      if (f.ws->has_blob(f.name)) names.insert(n);
  }
  if (parent_)
    for (auto& n : parent_->blobs()) names.insert(std::move(n));
  return {names.begin(), names.end()};
}

void Workspace::add_blob_mapping(Workspace* parent, const ForwardMap& forwarded) {
  if (!parent) throw InvalidInput("add_blob_mapping: parent workspace is null");
  for (const Workspace* w = parent; w; w = w->parent_)
    if (w == this) throw InvalidInput("add_blob_mapping: a workspace cannot forward blobs of itself or its children");
  for (const auto& [local, remote] : forwarded)
    if (!parent->has_blob(remote)) throw NotFound(fmt::format("Invalid parent workspace blob: {}", remote));
  std::unique_lock lk(mu_);
  for (const auto& [local, remote] : forwarded)  // all checked before any is added
    if (blobs_.count(local))
      throw InvalidInput(fmt::format("cannot forward \"{}\": a local blob of that name exists", local));
  for (const auto& [local, remote] : forwarded) forwarded_[local] = Forward{parent, remote};
  bump_generation();
}

NetBase* Workspace::add_net(std::unique_ptr<NetBase> net, bool overwrite) {
  if (!net) throw InvalidInput("add_net: net is null");
  std::unique_ptr<NetBase> replaced;  // destroyed after the lock is released
  std::unique_lock lk(mu_);
  auto it = nets_.find(net->name());
  if (it != nets_.end()) {
    if (!overwrite)
      throw InvalidInput(
          fmt::format("I respectfully refuse to overwrite an existing net of the same name \"{}\", unless you "
                      "explicitly specify overwrite=true.",
                      net->name()));
    replaced = std::move(it->second);
    it->second = std::move(net);
    return it->second.get();
  }
  std::string name = net->name();
  return nets_.emplace(std::move(name), std::move(net)).first->second.get();
}

NetBase* Workspace::get_net(std::string_view name) const {
  std::shared_lock lk(mu_);
  auto it = nets_.find(name);
  return it == nets_.end() ? nullptr : it->second.get();
}

bool Workspace::remove_net(std::string_view name) {
  std::unique_ptr<NetBase> doomed;  // destroyed outside the lock
  std::unique_lock lk(mu_);
  auto it = nets_.find(name);
  if (it == nets_.end()) return false;
  doomed = std::move(it->second);
  nets_.erase(it);
  return true;
}

std::vector<std::string> Workspace::nets() const {
  std::vector<std::string> names;
  {
    std::shared_lock lk(mu_);
    for (const auto& [n, net] : nets_) names.push_back(n);
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace moka
