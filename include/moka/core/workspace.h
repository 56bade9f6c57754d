// Workspace: named blobs with a parent chain and forwarded blobs, plus instantiated nets (docs/plan-execution.md §1.1).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "moka/core/blob.h"
#include "moka/core/net_base.h"

namespace moka {

/// @brief A scope of named blobs and nets, optionally a child of another workspace.
///
/// Lookups go local → forwarded → parent (recursively). create_blob() returns an existing blob
/// from anywhere up the chain and only creates locally when none exists; this is how tasks
/// running in child workspaces update blobs their parents own. Blob pointers are stable until
/// the blob is removed or the workspace destroyed. A parent must outlive its children.
///
/// @code
///   Workspace root;
///   root.create_blob("a");
///   Workspace child(&root);
///   child.create_blob("a") == root.get_blob("a");   // the parent's blob
///   child.create_local_blob("a") != root.get_blob("a");  // hides it
/// @endcode
/// Thread-safety: every method may be called from several threads at once (the blob map and
/// net registry are guarded by a reader/writer lock), including on a parent while children
/// look names up. The *contents* of blobs are not synchronised: operators and users do that.
/// Removing or renaming a blob that another thread is using is a use-after-free, as in Caffe2.
class Workspace {
 public:
  using ForwardMap = std::map<std::string, std::string>;  ///< local name -> parent name

  Workspace();
  /// A child that sees all of parent's blobs.
  explicit Workspace(Workspace* parent);
  /// A child that sees only the forwarded names of parent (throws NotFound for a missing one).
  Workspace(Workspace* parent, const ForwardMap& forwarded);
  ~Workspace();
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;

  Workspace* parent() const noexcept { return parent_; }

  bool has_blob(std::string_view name) const;
  /// The blob visible under this name, or nullptr.
  Blob* get_blob(std::string_view name) const;
  /// Like get_blob but throws NotFound naming the blob.
  Blob& blob(std::string_view name) const;
  /// The existing blob of that name anywhere up the chain, else a new empty local blob.
  Blob* create_blob(std::string_view name);
  /// Always a local blob (hides a parent's blob of the same name); idempotent.
  Blob* create_local_blob(std::string_view name);
  /// Removes a local blob; true iff one was removed.
  bool remove_blob(std::string_view name);
  /// Renames a local blob. Throws NotFound if `from` is not local, InvalidInput if `to` exists.
  void rename_blob(std::string_view from, std::string_view to);
  /// Names of local blobs, sorted.
  std::vector<std::string> local_blobs() const;
  /// Names of every visible blob (local, forwarded, parents'), sorted and without duplicates.
  std::vector<std::string> blobs() const;
  /// Makes parent's blobs visible here under local names (Caffe2 AddBlobMapping).
  void add_blob_mapping(Workspace* parent, const ForwardMap& forwarded);

  /// Registers a net under its name. If one exists: replaced when overwrite, else InvalidInput
  /// ("I respectfully refuse to overwrite ..."). Returns the registered net.
  NetBase* add_net(std::unique_ptr<NetBase> net, bool overwrite = false);
  /// A net registered in this workspace (not inherited from the parent), or nullptr.
  NetBase* get_net(std::string_view name) const;
  bool remove_net(std::string_view name);
  /// Names of local nets, sorted.
  std::vector<std::string> nets() const;

  /// Folder that relative db paths resolve against (default ".").
  const std::string& root_folder() const noexcept { return root_folder_; }
  void set_root_folder(std::string folder) { root_folder_ = std::move(folder); }

  /// @brief A count that changes whenever a blob of this workspace (not of its parents) is
  /// created, removed or renamed, or blobs are forwarded into it.
  ///
  /// Instantiated nets hold pointers to blobs and resolve names once; a prepared plan compares
  /// chain_generation() with the value it saw to know whether its bindings are still those a
  /// fresh instantiation would make. Registering or removing a net does not change it (other
  /// plans' nets do not bind to nets by pointer; a plan checks its own by NetBase::serial()).
  /// Thread-safety: an atomic read.
  uint64_t generation() const noexcept { return generation_.load(std::memory_order_acquire); }
  /// The sum of generation() over this workspace and its parents (changes when any of them does).
  uint64_t chain_generation() const noexcept;
  /// @brief Empties every local blob (the blob objects and names stay, so pointers held by
  /// instantiated operators remain valid). Used to recycle a child workspace as if it were new.
  /// Thread-safety: no other thread may use the local blobs meanwhile.
  void reset_local_blobs();

  /// Calls f on every live workspace of the process (Caffe2 Workspace::ForEach). A process-wide
  /// lock is held meanwhile, so f must not create or destroy workspaces.
  static void for_each(const std::function<void(Workspace*)>& f);

 private:
  struct Forward {
    Workspace* ws;
    std::string name;
  };
  struct NameHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
  };
  template <class V>
  using NameMap = std::unordered_map<std::string, V, NameHash, std::equal_to<>>;
  Blob* find_local(std::string_view name) const;  // requires mu_ held

  void bump_generation() noexcept { generation_.fetch_add(1, std::memory_order_acq_rel); }

  Workspace* parent_ = nullptr;
  std::atomic<uint64_t> generation_{0};
  std::string root_folder_ = ".";
  mutable std::shared_mutex mu_;
  NameMap<std::unique_ptr<Blob>> blobs_;
  NameMap<Forward> forwarded_;
  // Declared after blobs_ so nets (whose operators point at blobs) are destroyed first.
  NameMap<std::unique_ptr<NetBase>> nets_;
};

}  // namespace moka
