// JobEngine: the one job flow behind run_job and JobRunner (src/job/job_engine.h, docs/jobs.md §2).
#include "job/job_engine.h"

#include <algorithm>
#include <chrono>
#include <exception>
#include <filesystem>
#include <type_traits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "job/background_save.h"
#include "job/checkpoint_dir_lock.h"
#include "job/process_agreement.h"
#include "moka/core/dtype.h"
#include "moka/core/error.h"
#include "moka/core/tensor.h"
#include "moka/core/trace.h"

namespace moka::detail {
namespace {

using Clock = std::chrono::steady_clock;
constexpr const char* kDefaultDbType = "minidb";

// A trace name made only while a trace records ("epoch 3", "save epoch 3"); docs/tracing.md.
template <class... A>
uint32_t trace_name(fmt::format_string<A...> f, A&&... a) {
  return trace_enabled() ? trace_name_id(fmt::format(f, std::forward<A>(a)...)) : 0;
}

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// A process's part of an epoch's manifest, as it crosses processes: its bytes and its files.
std::string files_record(uint64_t bytes, const std::vector<CheckpointFile>& files) {
  nlohmann::json j = {{"bytes", bytes}, {"files", nlohmann::json::array()}};
  for (const auto& f : files) j["files"].push_back({f.node, f.db, f.digest.records, f.digest.bytes, f.digest.xxh3});
  return j.dump();
}

void read_files_record(const std::string& record, uint64_t& bytes, std::vector<CheckpointFile>& files) {
  const auto j = nlohmann::json::parse(record);
  bytes += j.at("bytes").get<uint64_t>();
  for (const auto& f : j.at("files"))
    files.push_back(
        {.node = f.at(0).get<std::string>(),
         .db = f.at(1).get<std::string>(),
         .digest = {
             .records = f.at(2).get<uint64_t>(), .bytes = f.at(3).get<uint64_t>(), .xxh3 = f.at(4).get<uint64_t>()}});
}

class JobEngine {
 public:
  JobEngine(JobGroupRunner& groups, JobCheckpointStore* store, const JobRunOptions& options,
            const JobEngineSettings& settings)
      : groups_(groups), store_(store), opt_(options), settings_(settings), dir_(options.checkpoint_dir) {}

  JobRunResult run() {
    const bool checkpointing = store_ && !dir_.empty();
    if (checkpointing && across_ && opt_.background_save && !settings_.background_processes)
      throw InvalidInput("job engine: a background save across processes needs the writer's own agreement");
    const std::optional<int64_t> resume = checkpointing ? start() : std::nullopt;
    bool finished = false;
    if (resume) {
      const CheckpointManifest& manifest = resume_manifest_.value();  // verified by start()
      TraceSpan span(TraceCategory::checkpoint, trace_name("load epoch {}", *resume));
      everywhere([&] { store_->read(manifest); });
      finished = manifest.stop;
      result_.resumed_from = resume;
      if (!finished && settings_.own_directory && !writable_)
        throw InvalidInput(
            fmt::format("checkpoint directory '{}' is read-only ({}): resuming from epoch {} would "
                        "save epoch {} there; only an epoch where the job finished can be resumed "
                        "from a read-only directory",
                        dir_, read_only_reason_, *resume, *resume + 1));
    } else {
      {
        TraceSpan span(TraceCategory::job, "init");
        groups_.run(JobGroup::init, 0);
      }
      if (checkpointing) {
        store_->capture_blob_lists();
        save(0, EpochReport{});
      }
    }
    // Resuming from the epoch a stop condition ended: the loop is over (decision 13).
    int64_t epoch = resume ? (finished ? *resume : *resume + 1) : 1;
    for (; !finished; ++epoch) {
      EpochReport report;
      report.epoch = epoch;
      const auto t0 = Clock::now();
      {
        TraceSpan span(TraceCategory::epoch, trace_name("epoch {}", epoch));
        groups_.run(JobGroup::epoch, epoch);
      }
      report.seconds = seconds_since(t0);
      report.stop = groups_.stop_requested();  // right after the epoch, before the save: Caffe2's order
      if (checkpointing) {
        save(epoch, report);
      } else if (opt_.on_epoch) {
        opt_.on_epoch(report);
      }
      if (report.stop) break;
    }
    wait_for_background_save();
    groups_.before_download(epoch);
    {
      TraceSpan span(TraceCategory::job, "download");
      groups_.run(JobGroup::download, epoch);
    }
    {
      TraceSpan span(TraceCategory::job, "exit");
      groups_.run(JobGroup::exit, epoch);
    }
    result_.last_epoch = epoch;
    return std::move(result_);
  }

 private:
  // Takes the directory and decides, before anything runs, where the run starts (resume epoch or
  // scratch); fixes the backend: the resumed checkpoint's, else the one asked for, else minidb.
  std::optional<int64_t> start() {
    if (!across_) return start_here();
    // Across processes every process takes the same decision: a failure anywhere (the lock, a
    // refused start, process 0's discard) is thrown on every process, once all have decided.
    std::exception_ptr failed;
    std::optional<int64_t> epoch;
    try {
      epoch = start_here();
    } catch (...) {
      failed = std::current_exception();
    }
    across_->all([&] {
      if (failed) std::rethrow_exception(failed);
      return std::string();
    });
    return epoch;
  }

  // Process 0 (or the only process) takes the directory: the lock, and the temporary files killed
  // writers left; the others learn whether it is writable.
  void take_directory() {
    auto take = [&] {
      if (settings_.own_directory) {
        dir_lock_.emplace(dir_);
      } else {
        // A directory that cannot be made stays unlocked: every save there fails (decision 8).
        std::error_code ec;
        std::filesystem::create_directories(dir_, ec);
        if (std::filesystem::is_directory(dir_, ec)) dir_lock_.emplace(dir_, /*remove_temporaries=*/false);
      }
      nlohmann::json j = {{"removed", nlohmann::json::array()}, {"writable", true}, {"reason", ""}};
      if (dir_lock_)
        j = {{"removed", dir_lock_->removed_temporaries()},
             {"writable", dir_lock_->writable()},
             {"reason", dir_lock_->read_only_reason()}};
      return j.dump();
    };
    const auto j = nlohmann::json::parse(across_ ? across_->leader(take) : take());
    result_.removed_temporaries = j.at("removed").get<std::vector<std::string>>();
    writable_ = j.at("writable").get<bool>();
    read_only_reason_ = j.at("reason").get<std::string>();
  }

  // Takes the directory and decides, before anything runs, where the run starts (resume epoch or
  // scratch); fixes the backend: the resumed checkpoint's, else the one asked for, else minidb.
  std::optional<int64_t> start_here() {
    take_directory();
    const bool read_only = settings_.own_directory && !writable_;
    ResumeRequest request{.epoch = opt_.resume_from_epoch,
                          .latest = opt_.resume_latest && !opt_.resume_from_epoch,
                          .existing = opt_.existing,
                          .nodes = {},
                          .db_type = opt_.db_type,
                          .job = settings_.job_digest,
                          .accept_changed_job = opt_.accept_changed_job};
    for (auto& [node, db] : store_->files(0)) request.nodes.push_back(node);
    if (read_only && request.existing == ExistingCheckpoints::discard)
      throw InvalidInput(fmt::format("checkpoint directory '{}' is read-only ({}): its checkpoints cannot be discarded",
                                     dir_, read_only_reason_));
    const CheckpointStartHooks hooks = start_hooks(request.nodes);
    ResumeChoice choice;
    if (request.latest) choice = prepare_checkpoint_start(dir_, request, hooks);
    const std::optional<int64_t> asked = store_->resume_epoch(request.latest ? choice.epoch : request.epoch);
    if (asked && *asked < 0) throw InvalidInput(fmt::format("resume epoch {} is negative", *asked));
    if (!request.latest || asked != choice.epoch) {
      // An epoch asked for (or changed by the store) is checked on its own: it must verify.
      auto skipped = std::move(choice.skipped);
      request.latest = false;
      request.epoch = asked;
      choice = prepare_checkpoint_start(dir_, request, hooks);
      if (choice.skipped.empty()) choice.skipped = std::move(skipped);
    }
    if (!choice.epoch && read_only)
      throw InvalidInput(fmt::format("checkpoint directory '{}' is read-only ({}): a run from scratch would save there",
                                     dir_, read_only_reason_));
    for (const auto& [e, why] : choice.skipped) log(fmt::format("skipping checkpoint epoch {}: {}", e, why));
    if (opt_.on_resume && (opt_.resume_latest || opt_.resume_from_epoch)) opt_.on_resume(choice);
    result_.skipped = choice.skipped;
    db_type_ = choice.manifest ? choice.manifest->db_type : opt_.db_type.empty() ? kDefaultDbType : opt_.db_type;
    resume_manifest_ = std::move(choice.manifest);
    return choice.epoch;
  }

  // Across processes: the committed epochs are process 0's; an epoch verifies when every process
  // verified the files of the nodes it hosts and read the same manifest (a process that cannot veto it).
  CheckpointStartHooks start_hooks(const std::vector<std::string>& nodes) {
    CheckpointStartHooks hooks;
    if (!across_) return hooks;
    hooks.deletes = across_->leader();
    hooks.committed = [this] {
      return nlohmann::json::parse(across_->leader([&] { return nlohmann::json(committed_epochs(dir_)).dump(); }))
          .get<std::vector<int64_t>>();
    };
    hooks.verify = [this, nodes](int64_t epoch) {
      std::vector<std::string> mine;
      for (const auto& node : nodes)
        if (store_->hosts(node)) mine.push_back(node);
      const auto manifests = across_->all([&] { return to_json(verify_checkpoint(dir_, epoch, nodes, mine)); });
      for (size_t p = 1; p < manifests.size(); ++p)
        if (manifests[p] != manifests.front())
          throw CorruptData(
              fmt::format("checkpoint epoch {}: rank {} reads another manifest than rank 0 in '{}' (every rank must "
                          "see the same checkpoint directory)",
                          epoch, p, dir_));
      return manifest_from_json(manifests.front(), manifest_path(dir_, epoch));
    };
    return hooks;
  }

  // Saves and commits `epoch` (in the foreground, or snapshots it for the background writer).
  void save(int64_t epoch, EpochReport report) {
    report.epoch = epoch;
    const auto t0 = Clock::now();
    TraceSpan span(TraceCategory::checkpoint, trace_name("save epoch {}", epoch));
    // The previous epoch's save reports its own failure, under its own epoch, before this one
    // starts (inside the try below it would be re-wrapped as this epoch's failure).
    wait_for_background_save();
    try {
      if (!accessible()) {
        log(fmt::format("Checkpoint files cannot be accessed! (epoch {} not saved)", epoch));
      } else {
        report.checkpointed = true;
        // A manifest an earlier run left for this epoch (a resume from an older epoch, or one that
        // did not verify) stops counting before its files are overwritten.
        on_leader([&] { uncommit_checkpoint(dir_, epoch); });
        auto files = store_->files(epoch);
        std::vector<std::pair<std::string, std::string>> mine;  // the files this process writes
        for (const auto& f : files)
          if (!across_ || store_->hosts(f.first)) mine.push_back(f);
        if (opt_.background_save) {
          background_.discard();  // what a failed snapshot of an earlier epoch left
          report.checkpoint_bytes = summed([&] {
            uint64_t bytes = 0;
            for (const auto& [node, db] : mine)
              bytes += background_.snapshot(node, db, store_->workspace(node), store_->blob_names(node));
            return bytes;
          });
          report.background = true;
          background_bytes_ = report.checkpoint_bytes;
          background_files_ = files;
          // The writer thread touches only the snapshots, the files, its own agreement (a channel
          // of its own across processes) and background_deleted_ (read after wait()); the store,
          // the log and the result stay on this thread.
          background_deleted_.clear();
          background_.start(epoch, db_type_,
                            [this, epoch, stop = report.stop, files = std::move(files),
                             mine = std::move(mine)](std::exception_ptr write_error) {
                              TraceSpan commit_span(TraceCategory::checkpoint, trace_name("commit epoch {}", epoch));
                              if (!across_) {
                                if (write_error) std::rethrow_exception(write_error);
                                background_deleted_ = commit(epoch, stop, files);
                                return;
                              }
                              background_deleted_ =
                                  commit_across(*settings_.background_processes, epoch, stop, files, mine, [&] {
                                    if (write_error) std::rethrow_exception(write_error);
                                    return uint64_t{0};
                                  }).second;
                            });
        } else if (across_) {
          auto [bytes, deleted] =
              commit_across(*across_, epoch, report.stop, files, mine, [&] { return store_->write(epoch, db_type_); });
          report.checkpoint_bytes = bytes;
          record_deleted(deleted);
          store_->saved(epoch, nullptr);
        } else {
          {
            TraceSpan write_span(TraceCategory::checkpoint, trace_name("write epoch {}", epoch));
            report.checkpoint_bytes = store_->write(epoch, db_type_);
          }
          TraceSpan commit_span(TraceCategory::checkpoint, trace_name("commit epoch {}", epoch));
          record_deleted(commit(epoch, report.stop, files));
          store_->saved(epoch, nullptr);
        }
      }
    } catch (const Cancelled&) {
      throw;
    } catch (const std::exception& e) {
      on_save_failure(epoch, e.what());
    }
    report.checkpoint_seconds = seconds_since(t0);
    if (opt_.on_epoch) opt_.on_epoch(report);
  }

  // Across processes: each process writes the DBs of the nodes it hosts (`write`, which returns its
  // bytes) and reads them back; once every process's files are durable and digested, process 0 writes
  // the manifest of all of them and applies retention; every process learns the outcome. Returns the
  // bytes of all processes and the epochs retention deleted. `agree` is the engine's, or the
  // background writer's own.
  std::pair<uint64_t, std::vector<int64_t>> commit_across(ProcessAgreement& agree, int64_t epoch, bool stop,
                                                          const std::vector<std::pair<std::string, std::string>>& files,
                                                          const std::vector<std::pair<std::string, std::string>>& mine,
                                                          const std::function<uint64_t()>& write) {
    const auto parts = agree.all([&] {
      const uint64_t bytes = write();
      return files_record(bytes, digest_checkpoint_files(dir_, epoch, db_type_, mine));
    });
    uint64_t bytes = 0;
    std::vector<CheckpointFile> written;
    for (const auto& part : parts) read_files_record(part, bytes, written);
    CheckpointManifest m{.epoch = epoch, .db_type = db_type_, .files = {}, .stop = stop, .job = settings_.job_digest};
    for (const auto& [node, db] : files) {
      auto it = std::find_if(written.begin(), written.end(), [&](const CheckpointFile& f) { return f.node == node; });
      if (it == written.end())
        throw RuntimeError(fmt::format("checkpoint epoch {}: no process wrote the DB of node '{}'", epoch, node));
      m.files.push_back(*it);
    }
    const auto deleted = nlohmann::json::parse(agree.leader([&] {
      write_manifest(dir_, m);
      return nlohmann::json(apply_retention(dir_, opt_.retention)).dump();
    }));
    return {bytes, deleted.get<std::vector<int64_t>>()};
  }

  // Whether the store can write now: across processes, only when every process's can.
  bool accessible() {
    if (!across_) return store_->accessible();
    const auto all = across_->all([&] { return std::string(store_->accessible() ? "1" : "0"); });
    return std::all_of(all.begin(), all.end(), [](const std::string& a) { return a == "1"; });
  }

  // `step`'s byte count here, or summed over every process (failing everywhere if it failed anywhere).
  uint64_t summed(const std::function<uint64_t()>& step) {
    if (!across_) return step();
    uint64_t total = 0;
    for (const auto& b : across_->all([&] { return std::to_string(step()); })) total += std::stoull(b);
    return total;
  }

  // `step` on every process, failing everywhere if it failed anywhere (or just here, in one process).
  template <class F>
  void everywhere(F step) {
    if (!across_) return step();
    across_->all([&] {
      step();
      return std::string();
    });
  }
  // `step` on process 0 only (or here, in one process); a failure there fails every process.
  template <class F>
  void on_leader(F step) {
    if (!across_) return step();
    across_->leader([&] {
      step();
      return std::string();
    });
  }

  // Commit (every DB read back and digested, then the manifest written atomically) and retention;
  // returns the epochs retention deleted. Runs on the writer thread for a background save.
  std::vector<int64_t> commit(int64_t epoch, bool stop, const std::vector<std::pair<std::string, std::string>>& files) {
    commit_checkpoint(dir_, epoch, db_type_, files, stop, settings_.job_digest);
    return apply_retention(dir_, opt_.retention);
  }

  void record_deleted(const std::vector<int64_t>& deleted) {
    for (int64_t e : deleted) log(fmt::format("retention: deleted checkpoint epoch {}", e));
    result_.deleted_epochs.insert(result_.deleted_epochs.end(), deleted.begin(), deleted.end());
  }

  // Waits for the save in flight, if any, and reports it to the store and on_checkpoint_written
  // (outside the try: an exception of theirs is not a failed save).
  void wait_for_background_save() {
    if (!background_.in_flight()) return;
    CheckpointWritten written{.epoch = background_.epoch(), .bytes = background_bytes_};
    try {
      background_.wait();
    } catch (const Cancelled&) {
      throw;
    } catch (const std::exception& e) {
      on_save_failure(written.epoch, e.what());  // throws unless tolerated
      written.ok = false;
      written.error = result_.save_errors.back();
    }
    if (written.ok) {
      for (const auto& [db, ns] : background_.write_ns()) {
        const double seconds = static_cast<double>(ns) / 1e9;
        written.write_seconds += seconds;
        written.node_write_seconds.emplace_back(node_of_db(db), seconds);
      }
      record_deleted(background_deleted_);
      const CheckpointStats timings(background_.write_ns().begin(), background_.write_ns().end());
      store_->saved(written.epoch, &timings);
    }
    if (opt_.on_checkpoint_written) opt_.on_checkpoint_written(written);
  }

  // The checkpointed node whose DB the save in flight wrote to `db` (the path itself should none match).
  std::string node_of_db(const std::string& db) const {
    for (const auto& [node, path] : background_files_)
      if (path == db) return node;
    return db;
  }

  // Inside a catch block: a failed save is logged and counted; it ends the job unless tolerated (decision 8).
  void on_save_failure(int64_t epoch, const std::string& what) {
    std::string message = fmt::format("Unable to write checkpoint for epoch {}. Error={}", epoch, what);
    store_->save_failed(epoch, what, message);
    log(message);
    if (!opt_.tolerate_save_failures) throw RuntimeError(std::move(message));
    result_.save_errors.push_back(std::move(message));
  }

  void log(std::string_view message) const {
    if (settings_.log) settings_.log(message);
  }

  JobGroupRunner& groups_;
  JobCheckpointStore* store_;
  const JobRunOptions& opt_;
  const JobEngineSettings& settings_;
  const std::string dir_;
  ProcessAgreement* const across_ = settings_.processes;  // null: one process
  bool writable_ = true;                                  // the directory, as process 0's lock found it
  std::string read_only_reason_;
  std::optional<CheckpointManifest> resume_manifest_;
  std::string db_type_ = kDefaultDbType;                               // the checkpoint backend, fixed by start()
  uint64_t background_bytes_ = 0;                                      // the snapshot bytes of the save in flight
  std::vector<std::pair<std::string, std::string>> background_files_;  // its (node, DB path) pairs
  std::vector<int64_t> background_deleted_;                            // its retention (the writer writes it)
  JobRunResult result_;
  std::optional<CheckpointDirLock> dir_lock_;  // before background_: held until the last save is done
  BackgroundSave background_;                  // last: its destructor waits for a save that uses the members above
};

}  // namespace

JobRunResult run_job_engine(JobGroupRunner& groups, JobCheckpointStore* store, const JobRunOptions& options,
                            const JobEngineSettings& settings) {
  return JobEngine(groups, store, options, settings).run();
}

bool stop_condition_holds(const Tensor& value, std::string_view what) {
  if (value.numel() != 1 || value.dtype() == DType::String)
    throw TypeError(
        fmt::format("stop condition {} must hold one value, a bool or a number; got {}", what, value.describe()));
  return visit_dtype(value.dtype(), [&](auto tag) -> bool {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, std::string>) {
      return false;  // refused above
    } else {
      return value.item<T>() != T{};
    }
  });
}

}  // namespace moka::detail
