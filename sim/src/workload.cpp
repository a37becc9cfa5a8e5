// workload: one stream of READs and WRITEs, on its own thread.
//
// A stream keeps `depth` tasks in flight, submitting `batch` at a time,
// drawing each op's kind, size and offset from the seed (one seed, one
// sequence of ops per stream). WRITE data is fill_pattern(length,
// data_seed), so the data checker can rebuild it; READ destinations are
// kept in the history when the READ ends ok. A stream uses the
// registration id its target had when the stream began, as an initiator
// holding a descriptor would: after a target restart that id is stale and
// the core's refresh path is what gets exercised.
#include <fmt/format.h>

#include <random>

#include "faultlane/core/hash.hpp"
#include "faultlane/core/pattern.hpp"
#include "run_state.hpp"

namespace faultlane::sim {

struct scenario_run::stream_state {
  std::mutex mutex;
  std::condition_variable cv;
  std::size_t inflight = 0;
};

namespace {

struct batch_context {
  recorder* rec = nullptr;
  std::shared_ptr<scenario_run::stream_state> stream;
  std::vector<std::uint64_t> ids;
  std::vector<std::vector<std::byte>> buffers;
  std::vector<wire::opcode> ops;
};

std::uint64_t draw_size(const size_dist& d, std::mt19937_64& rng) {
  if (d.range) return std::uniform_int_distribution<std::uint64_t>(d.lo, d.hi)(rng);
  return d.values[std::uniform_int_distribution<std::size_t>(0, d.values.size() - 1)(rng)];
}

}  // namespace

void scenario_run::run_stream(const stream_spec& st, const std::string& phase, bool liveness,
                              std::uint64_t count) {
  const auto& region = *regions_.at(st.region);
  auto& from = *transports_.at(st.from);
  auto& target = *transports_.at(region.transport);
  auto& pair = *pairs_.at({st.from, region.transport});
  const auto label = liveness && phase != (st.phase.empty() ? phases_.front().name : st.phase)
                         ? st.name + "@" + phase
                         : st.name;
  std::mt19937_64 rng(stable_hash(seed_ ^ stable_hash(label)));
  registration_id reg = 0;
  {
    std::lock_guard lock(events_mutex_);
    reg = target.ids[region.name];
  }
  auto state = std::make_shared<stream_state>();
  const auto started = std::chrono::steady_clock::now();
  const auto until = started + std::chrono::milliseconds(st.duration_ms);
  const double read_share = st.read_weight / (st.read_weight + st.write_weight);
  std::uniform_real_distribution<double> coin(0, 1);
  std::uint64_t submitted = 0;
  std::uint64_t next_offset = 0;
  std::vector<std::pair<std::shared_ptr<transfer_batch>, std::vector<std::uint64_t>>> batches;

  for (;;) {
    const auto now = std::chrono::steady_clock::now();
    if (count ? submitted >= count : now >= until) break;
    std::unique_lock lock(state->mutex);
    if (!state->cv.wait_until(lock, deadline_, [&] { return state->inflight < st.depth; })) {
      timed_out_ = true;
      break;
    }
    std::size_t n = std::min<std::size_t>(st.batch, st.depth - state->inflight);
    if (count) n = static_cast<std::size_t>(std::min<std::uint64_t>(n, count - submitted));
    state->inflight += n;
    lock.unlock();

    auto ctx = std::make_shared<batch_context>();
    ctx->rec = &rec_;
    ctx->stream = state;
    std::vector<transfer_request> requests(n);
    for (std::size_t i = 0; i < n; ++i) {
      op_record op;
      op.stream = label;
      op.phase = phase;
      op.liveness = liveness;
      op.initiator = st.from;
      op.target = region.transport;
      op.region = region.name;
      op.initiator_incarnation = from.incarnation.load();
      op.target_incarnation = target.incarnation.load();
      op.op = coin(rng) < read_share ? wire::opcode::read : wire::opcode::write;
      op.length = draw_size(st.size, rng);
      if (st.offsets == offset_mode::sequential) {
        if (next_offset + op.length > region.size) next_offset = 0;
        op.offset = next_offset;
        next_offset += op.length;
      } else {
        op.offset =
            std::uniform_int_distribution<std::uint64_t>(0, region.size - op.length)(rng);
      }
      op.registration_id = reg;
      std::vector<std::byte> buffer(op.length);
      if (op.op == wire::opcode::write) {
        op.data_seed = stable_hash(stable_hash(label) ^ stable_hash(seed_ + submitted + i + 1)) | 1;
        fill_pattern(buffer.data(), buffer.size(), op.data_seed);
      }
      requests[i] = {op.op,      buffer.data(), op.length,          pair.segment.load(),
                     reg,        op.offset,     st.start_deadline_ms};
      ctx->ops.push_back(op.op);
      ctx->buffers.push_back(std::move(buffer));
      ctx->ids.push_back(rec_.add_op(std::move(op)));
    }
    auto on_done = [ctx](std::size_t i, status code, std::uint64_t bytes) {
      std::vector<std::byte> data;
      if (ctx->ops[i] == wire::opcode::read && code == status::ok) data = std::move(ctx->buffers[i]);
      ctx->rec->complete_op(ctx->ids[i], code, bytes, std::move(data));
      std::vector<std::byte>().swap(ctx->buffers[i]);
      std::lock_guard lock(ctx->stream->mutex);
      --ctx->stream->inflight;
      ctx->stream->cv.notify_all();
    };
    result<std::shared_ptr<transfer_batch>> submitted_batch =
        error{status::shutting_down, "initiator is shut down"};
    {
      std::shared_lock up(from.lock);
      if (from.up) {
        for (auto& r : requests) r.segment = pair.segment.load();  // reopened on a restart
        submit_scope scope(ctx->ids);
        submitted_batch = from.p->local()->submit(requests, on_done);
      }
    }
    if (submitted_batch) {
      batches.emplace_back(std::move(submitted_batch.value()), ctx->ids);
    } else {
      for (auto id : ctx->ids) rec_.fail_submit(id, submitted_batch.code());
      std::lock_guard relock(state->mutex);
      state->inflight -= n;
    }
    if (!liveness) fire_stream_events(st.name, submitted, submitted + n);
    submitted += n;
  }
  std::unique_lock lock(state->mutex);
  if (!state->cv.wait_until(lock, deadline_, [&] { return state->inflight == 0; })) {
    timed_out_ = true;
    rec_.add_mark("note",
                  fmt::format("stream {}: {} ops still in flight at the run's timeout", label,
                              state->inflight),
                  false);
  }
  lock.unlock();
  // A task's status is published once its callback returned; wait for
  // that before comparing the two (exactly_once does).
  for (const auto& [batch, ids] : batches) {
    (void)batch->wait(std::chrono::duration_cast<std::chrono::milliseconds>(
        std::max(deadline_ - std::chrono::steady_clock::now(), std::chrono::steady_clock::duration{})));
    for (std::size_t i = 0; i < ids.size(); ++i) {
      if (batch->status(i).done) rec_.set_batch_status(ids[i], batch->status(i).code);
    }
  }
}

}  // namespace faultlane::sim
