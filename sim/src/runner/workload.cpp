// workload: one stream of READs and WRITEs, on its own thread (a fiber in
// the dsim build).
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

#include <algorithm>
#include <optional>
#include <random>

#include "faultlane/base/hash.hpp"
#include "faultlane/core/pattern.hpp"
#include "runner/run_state.hpp"

namespace faultlane::sim {

struct scenario_run::stream_state {
  threads::mutex mutex;
  threads::condition_variable cv;
  std::size_t inflight = 0;
};

namespace {

struct batch_context {
  recorder* rec = nullptr;
  region_ranges* ranges = nullptr;
  std::string region;
  std::vector<std::uint64_t> offsets;
  std::shared_ptr<scenario_run::stream_state> stream;
  std::vector<std::uint64_t> ids;
  std::vector<std::vector<std::byte>> buffers;
  std::vector<wire::opcode> ops;
  // One flag per op: a second callback for it (a core bug the exactly-once
  // checker reports) is recorded, but must not give its slot back twice.
  std::unique_ptr<std::atomic<bool>[]> completed;
};

std::uint64_t draw_size(const size_dist& d, std::mt19937_64& rng) {
  if (d.range) return std::uniform_int_distribution<std::uint64_t>(d.lo, d.hi)(rng);
  return d.values[std::uniform_int_distribution<std::size_t>(0, d.values.size() - 1)(rng)];
}

}  // namespace

// One stream's run: draws ops, keeps `depth` in flight, records them. A
// class of the run's own, which reads the run's topology.
class scenario_run::stream_runner {
 public:
  stream_runner(scenario_run& run, const stream_spec& st, const std::string& phase, bool liveness,
                std::uint64_t count)
      : run_(run),
        st_(st),
        phase_(phase),
        liveness_(liveness),
        count_(count),
        region_(run.topology_.region(st.region)),
        from_(run.topology_.transport(st.from)),
        target_(run.topology_.transport(region_.transport)),
        pair_(run.topology_.pair(st.from, region_.transport)),
        label_(liveness && phase != (st.phase.empty() ? run.phases_.front().name : st.phase)
                   ? st.name + "@" + phase
                   : st.name),
        rng_(stable_hash(run.seed_ ^ stable_hash(label_))),
        read_share_(st.read_weight / (st.read_weight + st.write_weight)) {
    reg_ = run.topology_.current_id(target_, region_.name);
  }

  void run() {
    const auto until = threads::clock::now() + std::chrono::milliseconds(st_.duration_ms);
    for (;;) {
      if (count_ ? submitted_ >= count_ : threads::clock::now() >= until) break;
      const auto reserved = reserve();
      if (reserved == 0) break;
      const auto n = submit(reserved);
      if (n == 0 && blocked_) {
        run_.rec_.add_mark("note", fmt::format("{} stopped after {} ops: every free range of {} "
                                               "is held by an ambiguous WRITE until the phase ends",
                                               label_, submitted_, region_.name));
        // Events at ops it never reached fire now, so a scenario's
        // sequence (unregister, then register again) still completes.
        if (label_ == st_.name && count_ > submitted_) {
          run_.events_.stream_ops(st_.name, submitted_, count_);
        }
        break;
      }
      if (n == 0) break;  // no room before the run's deadline
      // A liveness probe is not the stream its events name.
      if (label_ == st_.name) run_.events_.stream_ops(st_.name, submitted_, submitted_ + n);
      if (refused_down_) break;  // a shut-down initiator refuses every further op
      submitted_ += n;
    }
    drain();
  }

 private:
  // Waits for room under `depth`; the batch size, 0 at the run's timeout.
  std::size_t reserve() {
    std::unique_lock lock(state_->mutex);
    if (!state_->cv.wait_until(lock, run_.deadline_,
                               [&] { return state_->inflight < st_.depth; })) {
      run_.timed_out_ = true;
      return 0;
    }
    std::size_t n = std::min<std::size_t>(st_.batch, st_.depth - state_->inflight);
    if (count_) n = static_cast<std::size_t>(std::min<std::uint64_t>(n, count_ - submitted_));
    state_->inflight += n;
    return n;
  }

  std::optional<op_record> draw(std::size_t i) {
    op_record op;
    op.stream = label_;
    op.phase = phase_;
    op.liveness = liveness_;
    op.initiator = st_.from;
    op.target = region_.transport;
    op.region = region_.name;
    op.op = coin_(rng_) < read_share_ ? wire::opcode::read : wire::opcode::write;
    op.length = draw_size(st_.size, rng_);
    auto offset = take_offset(op.length, i == 0);
    if (!offset) return std::nullopt;
    op.offset = *offset;
    op.registration_id = reg_;
    if (op.op == wire::opcode::write) {
      op.data_seed =
          stable_hash(stable_hash(label_) ^ stable_hash(run_.seed_ + submitted_ + i + 1)) | 1;
    }
    return op;
  }

  // An offset whose range no op in flight touches: drawn (or the next
  // sequential one), redrawn a few times, then waited for. Only the first op
  // of a batch waits (what it waits for is already in flight); a later one
  // gives up, and the batch goes out shorter.
  std::optional<std::uint64_t> take_offset(std::uint64_t length, bool may_wait) {
    constexpr int draws_before_waiting = 16;
    for (;;) {
      const auto seen = run_.ranges_.releases();  // before trying: no release is missed
      for (int i = 0; i < draws_before_waiting; ++i) {
        std::uint64_t offset = 0;
        if (st_.offsets == offset_mode::sequential) {
          if (next_offset_ + length > region_.size) next_offset_ = 0;
          offset = next_offset_;
        } else {
          offset = std::uniform_int_distribution<std::uint64_t>(0, region_.size - length)(rng_);
        }
        if (run_.ranges_.try_take(region_.name, offset, length)) {
          if (st_.offsets == offset_mode::sequential) next_offset_ = offset + length;
          return offset;
        }
      }
      // Draws miss when most of the region is taken (ambiguous WRITEs hold
      // theirs until the phase ends): a gap that fits is still used before
      // waiting, or the stream would stop with room left.
      const auto from =
          std::uniform_int_distribution<std::uint64_t>(0, region_.size - length)(rng_);
      if (auto offset = run_.ranges_.take_first_fit(region_.name, region_.size, length, from)) {
        if (st_.offsets == offset_mode::sequential) next_offset_ = *offset + length;
        return offset;
      }
      if (!may_wait) return std::nullopt;
      switch (run_.ranges_.wait(seen, region_.name, run_.deadline_)) {
        case region_ranges::wait_result::released: break;
        case region_ranges::wait_result::blocked: blocked_ = true; return std::nullopt;
        case region_ranges::wait_result::timed_out: run_.timed_out_ = true; return std::nullopt;
      }
    }
  }

  // Submits up to `n` ops (fewer when the region has no room for more);
  // returns how many.
  std::size_t submit(std::size_t n) {
    auto ctx = std::make_shared<batch_context>();
    ctx->rec = &run_.rec_;
    ctx->ranges = &run_.ranges_;
    ctx->region = region_.name;
    ctx->stream = state_;
    std::vector<transfer_request> requests(n);
    for (std::size_t i = 0; i < n; ++i) {
      auto drawn = draw(i);
      if (!drawn) {  // no room now: send the ops drawn so far
        give_back(n - i);
        requests.resize(i);
        n = i;
        break;
      }
      auto& op = *drawn;
      std::vector<std::byte> buffer(op.length);
      if (op.op == wire::opcode::write) fill_pattern(buffer.data(), buffer.size(), op.data_seed);
      requests[i] = {op.op, buffer.data(), op.length, 0, reg_, op.offset, st_.start_deadline_ms};
      ctx->ops.push_back(op.op);
      ctx->offsets.push_back(op.offset);
      ctx->buffers.push_back(std::move(buffer));
      drawn_.push_back(std::move(op));
    }
    if (n == 0) return 0;
    ctx->completed = std::make_unique<std::atomic<bool>[]>(n);
    result<std::shared_ptr<transfer_batch>> batch =
        error{status::shutting_down, "initiator is shut down"};
    {
      // Ops are recorded under the lock a restart takes exclusively, so the
      // incarnations and submit seq they carry are the ones they ran in.
      std::shared_lock up(from_.lock);
      for (auto& op : drawn_) {
        op.initiator_incarnation = from_.incarnation.load();
        op.target_incarnation = target_.incarnation.load();
        ctx->ids.push_back(run_.rec_.add_op(std::move(op)));
      }
      drawn_.clear();
      if (from_.up) {
        for (auto& r : requests) r.segment = pair_.segment.load();  // reopened on a restart
        submit_scope scope(ctx->ids);
        batch = from_.p->local()->submit(requests,
                                         [ctx](std::size_t i, status code, std::uint64_t bytes) {
                                           on_done(*ctx, i, code, bytes);
                                         });
      }
    }
    if (batch) {
      batches_.emplace_back(std::move(batch.value()), ctx->ids);
      return n;
    }
    for (auto id : ctx->ids) run_.rec_.fail_submit(id, batch.code());
    refused_down_ = batch.code() == status::shutting_down;
    for (auto offset : ctx->offsets) run_.ranges_.release(region_.name, offset);
    give_back(n);
    return n;
  }

  // Returns `k` reserved in-flight slots that were not used.
  void give_back(std::size_t k) {
    std::lock_guard lock(state_->mutex);
    state_->inflight -= k;
    state_->cv.notify_all();
  }

  static void on_done(batch_context& ctx, std::size_t i, status code, std::uint64_t bytes) {
    if (ctx.completed[i].exchange(true, std::memory_order_acq_rel)) {
      ctx.rec->complete_op(ctx.ids[i], code, bytes, {});  // counted; the slot is not ours
      return;
    }
    std::vector<std::byte> data;
    if (ctx.ops[i] == wire::opcode::read && code == status::ok) data = std::move(ctx.buffers[i]);
    ctx.rec->complete_op(ctx.ids[i], code, bytes, std::move(data));
    // An ambiguous WRITE may still land (its bytes held in a relay, or in
    // a socket): its range stays taken until the phase ends.
    if (ctx.ops[i] == wire::opcode::write && code == status::ambiguous_write) {
      ctx.ranges->defer(ctx.region, ctx.offsets[i]);
    } else {
      ctx.ranges->release(ctx.region, ctx.offsets[i]);
    }
    std::vector<std::byte>().swap(ctx.buffers[i]);
    std::lock_guard lock(ctx.stream->mutex);
    --ctx.stream->inflight;
    ctx.stream->cv.notify_all();
  }

  // Waits for every op, then compares each task's published status.
  void drain() {
    std::unique_lock lock(state_->mutex);
    if (!state_->cv.wait_until(lock, run_.deadline_, [&] { return state_->inflight == 0; })) {
      run_.timed_out_ = true;
      run_.rec_.add_mark("note",
                         fmt::format("stream {}: {} ops still in flight at the run's timeout",
                                     label_, state_->inflight),
                         false);
    }
    lock.unlock();
    // A task's status is published once its callback returned; wait for
    // that before comparing the two (exactly_once does).
    for (const auto& [batch, ids] : batches_) {
      (void)batch->wait(std::chrono::duration_cast<std::chrono::milliseconds>(
          std::max(run_.deadline_ - threads::clock::now(), threads::clock::duration{})));
      for (std::size_t i = 0; i < ids.size(); ++i) {
        if (batch->status(i).done) run_.rec_.set_batch_status(ids[i], batch->status(i).code);
      }
    }
  }

  scenario_run& run_;
  const stream_spec& st_;
  const std::string phase_;
  const bool liveness_;
  const std::uint64_t count_;
  const region_spec& region_;
  transport_slot& from_;
  transport_slot& target_;
  pair_slot& pair_;
  const std::string label_;
  std::mt19937_64 rng_;
  const double read_share_;
  std::uniform_real_distribution<double> coin_{0, 1};
  registration_id reg_ = 0;
  std::shared_ptr<scenario_run::stream_state> state_ =
      std::make_shared<scenario_run::stream_state>();
  std::uint64_t submitted_ = 0;
  std::vector<op_record> drawn_;  // drawn, not yet recorded
  bool refused_down_ = false;     // submit refused: the initiator is shut down
  bool blocked_ = false;          // no room in the region until the phase ends
  std::uint64_t next_offset_ = 0;
  std::vector<std::pair<std::shared_ptr<transfer_batch>, std::vector<std::uint64_t>>> batches_;
};

void scenario_run::run_stream(const stream_spec& st, const std::string& phase, bool liveness,
                              std::uint64_t count) {
  stream_runner(*this, st, phase, liveness, count).run();
}

}  // namespace faultlane::sim
