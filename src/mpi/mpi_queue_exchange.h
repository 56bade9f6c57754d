// MpiQueueExchange: queues read and written by nodes on other ranks, through links — a small local queue
// on the connecting rank, moved record by record over MPI by one progress thread per rank, with credits so
// that nothing is buffered without bound (docs/queues.md §5).
#pragma once

#include <mpi.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <list>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "moka/core/blob.h"
#include "moka/operators/queue_exchange.h"
#include "mpi/mpi_comm.h"

namespace moka::detail {

/// @brief The QueueExchange of an MpiSession: an owner on this rank is served as in one process; an owner
/// on another rank is reached through a link.
///
/// A link is a local BlobsQueue of `window` records (the owner queue's capacity, at most 8) on the
/// connecting rank. A writer link's progress thread takes records from it and sends them to the owner's
/// rank, at most `window` unacknowledged; the owner's thread writes them into the queue as slots free up
/// and acknowledges. A reader link's owner thread takes records from the queue while the connecting rank
/// has credit (`window` to start with, one more for each record its readers took) and sends them; the
/// connecting rank puts them into the link's queue. So a link holds at most 2 × window records besides
/// the owner's queue. Closing follows the queue: a closed owner queue closes every link (writes fail,
/// reads drain what came, then report closed); a link closed by its node (a reader that stops, a cancelled
/// operator) closes the owner's queue; a writer node's last writer task (writers_done) sends what is left
/// and then counts the node down on the owner. Messages carry the run's number (new_run), so a run never
/// sees another's. Construction is collective (a communicator of its own); every method may be called from
/// any thread.
class MpiQueueExchange final : public QueueExchange {
 public:
  MpiQueueExchange();
  ~MpiQueueExchange() override;

  /// A run starts, on every rank (collective order, before any of its operators): the rank of each node.
  void new_run(std::map<std::string, int> rank_of);

 protected:
  bool owner_is_here(const std::string& owner) const override;
  BlobsQueuePtr connect_elsewhere(const QueueConnection& c, const std::atomic<bool>& cancelled) override;
  bool writers_done_elsewhere(const BlobsQueue* queue) override;
  void on_export(const std::string& node, const std::string& name, const BlobsQueuePtr& queue,
                 Counter* writers_left) override;

 private:
  struct Header {
    uint32_t type = 0;
    uint32_t run = 0;
    uint64_t link = 0;
    uint64_t arg = 0;
  };
  // A link this rank opened to a queue on another rank.
  struct ClientLink {
    int owner_rank = 0;
    QueueRole role = QueueRole::reader;
    BlobsQueuePtr local;  // the link's queue: what this rank's operators read or write
    int64_t window = 1;
    bool accepted = false;
    std::string error;                    // the owner refused, or a record could not be sent
    int64_t in_flight = 0;                // writer: sent, not acknowledged
    int64_t delivered = 0;                // reader: records put into `local`
    int64_t credited = 0;                 // reader: credits given back
    bool owner_closed = false;            // the owner's queue closed (CLOSED came)
    bool writers_done = false;            // writer: the node's last writer task exited
    bool finished = false;                // DONE or CLOSE sent: the link has nothing more to do
    std::deque<std::vector<Blob>> early;  // reader: records that found `local` full (never expected)
    std::vector<Blob> spare;              // records move through it; queues swap recycled storage back
    std::vector<std::vector<Blob>> sent;  // writer: records whose send completed, to hand back to the writers
  };
  // A link from another rank to a queue of this rank.
  struct ServedLink {
    QueueRole role = QueueRole::reader;
    Export queue;
    int64_t credits = 0;                    // reader: records the other rank has room for
    std::deque<std::vector<Blob>> pending;  // writer: records not in the queue yet
    std::vector<Blob> spare;                // as ClientLink::spare
    std::vector<std::vector<Blob>> sent;    // reader: as ClientLink::sent, handed back to the queue's writers
    int64_t acks = 0;
    bool done = false;  // writer: DONE came
    bool counted = false;
    bool closed_sent = false;
  };
  struct Connect {
    int rank;
    uint64_t link;
    std::string owner, name;
    QueueRole role;
    int64_t num_blobs, window;
  };
  // A message in flight: its bytes, and the record blobs whose tensor storage its data messages send from.
  struct Send {
    std::vector<MPI_Request> requests;
    std::string bytes;
    std::vector<Blob> keep;
    uint32_t run = 0;  // of the link that sent a record, whose `sent` gets `keep` back
    int rank = 0;
    uint64_t link = 0;
    bool client = false;
  };

  void progress();
  void stop_progress();  // idempotent
  bool poll();           // under mu_; whether anything happened
  void receive(int source, const Header& h, std::string_view payload, std::vector<Blob>* record);
  // A record (kToOwner, kToClient) decoded into `into`, its large tensors received from `source` straight into
  // their storage.
  void decode(int source, std::string_view payload, std::vector<Blob>& into);
  // Sends the record in `blobs` (large tensors from their own storage: the blobs are kept until sent).
  void send_record(int rank, uint32_t type, uint64_t link, std::vector<Blob>& blobs);
  // The spare record of the link a record message is for (null for a link of no current run).
  std::vector<Blob>* spare_for(int source, const Header& h);
  void accept(const Connect& c, const Export& e);
  void send(int rank, uint32_t type, uint64_t link, uint64_t arg, std::string_view payload = {});
  bool pump_client(uint64_t id, ClientLink& l);
  bool pump_served(int rank, uint64_t id, ServedLink& l);

  MpiComm comm_;
  mutable std::mutex mu_;
  std::condition_variable changed_;  // connections waiting for ACCEPTED / REFUSED
  std::condition_variable wake_;     // the progress thread, idle
  uint32_t run_ = 0;
  std::map<std::string, int> rank_of_;
  uint64_t next_link_ = 0;
  std::map<uint64_t, ClientLink> clients_;
  std::map<std::pair<int, uint64_t>, ServedLink> served_;
  std::vector<Connect> waiting_;  // connections to queues of this rank not exported yet
  std::map<std::pair<std::string, std::string>, Export> exports_;
  std::list<Send> sends_;
  // Messages of a run this rank has not begun (records decoded already: their data messages came with them).
  std::vector<std::tuple<int, Header, std::string, std::vector<Blob>>> later_;
  std::vector<char> inbox_;  // the last message received
  bool stop_ = false;
  std::thread thread_;
  uint64_t finalize_hook_;  // stops the thread if MPI is finalized first (before_finalize)
};

}  // namespace moka::detail
