// spot_timer.hpp - header-only C++17 RAII wrapper of the spot-timer C ABI (spot_timer.h).
// SPDX-License-Identifier: MIT OR Apache-2.0
//
// Hand-written (not generated). Errors are exceptions (spot::Error, carrying the status
// code and the library's message). Handles are move-only: spot::Runtime frees its runtime,
// spot::Timer requests a non-blocking cancel when it goes out of scope (call cancel() to
// wait for the terminal result, or release() to keep the timer running). The hot paths
// (Exchanger::next, batch callbacks) take no std::function and allocate nothing per batch.
// The Spot lifecycle (docs/lifecycle.md): spot::Store owns a Location Store, spot::Node a
// node started from a spot::NodeConfig (its factory and closing callback live in the Node).
//
// Thread-safety is that of the C functions: every method may be called from any thread;
// moving or destroying one wrapper object concurrently with using it is the caller's
// business, as for any C++ object.
#ifndef SPOT_TIMER_HPP
#define SPOT_TIMER_HPP

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <exception>
#include <optional>
#include <type_traits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "spot_timer.h"

namespace spot {

using std::chrono::nanoseconds;

// The C structs whose names the C functions spot_stats() and spot_timer_stats() share.
using Stats = struct ::spot_stats;
using TimerStats = struct ::spot_timer_stats;

// The calling thread's last error message (see spot_last_error).
inline std::string last_error() {
    char buf[512];
    size_t n = spot_last_error(buf, sizeof buf);
    if (n < sizeof buf) return std::string(buf, n);
    std::string s(n + 1, '\0');
    spot_last_error(s.data(), s.size());
    s.resize(n);
    return s;
}

// A failed call: the status code and the library's message.
class Error : public std::runtime_error {
public:
    Error(spot_status status, const std::string &message)
        : std::runtime_error(std::string(spot_status_name(status)) + ": " + message),
          status_(status) {}
    spot_status status() const noexcept { return status_; }

private:
    spot_status status_;
};

inline void check(spot_status st) {
    if (st != SPOT_OK) throw Error(st, last_error());
}

enum class Clock : uint32_t { Real = SPOT_CLOCK_REAL, Manual = SPOT_CLOCK_MANUAL };
enum class Policy : uint32_t {
    SkipLateTicks = SPOT_POLICY_SKIP_LATE_TICKS,
    CatchUpBounded = SPOT_POLICY_CATCH_UP_BOUNDED,
    DelayNextTick = SPOT_POLICY_DELAY_NEXT_TICK,
};
enum class Gate : uint32_t { Serial = SPOT_GATE_SERIAL, Concurrent = SPOT_GATE_CONCURRENT };
enum class Outcome : uint32_t {
    Ok = SPOT_OUTCOME_OK,
    Failed = SPOT_OUTCOME_FAILED,
    Deferred = SPOT_OUTCOME_DEFERRED,
    NotStarted = SPOT_OUTCOME_NOT_STARTED,
};
enum class EndReason : uint32_t {
    Cancelled = SPOT_END_CANCELLED,
    Superseded = SPOT_END_SUPERSEDED,
    Completed = SPOT_END_COMPLETED,
    LeaseExpired = SPOT_END_LEASE_EXPIRED,
    Revoked = SPOT_END_REVOKED,
    RuntimeClosed = SPOT_END_RUNTIME_CLOSED,
};

inline const char *to_string(EndReason r) noexcept {
    switch (r) {
    case EndReason::Cancelled: return "cancelled";
    case EndReason::Superseded: return "superseded";
    case EndReason::Completed: return "completed";
    case EndReason::LeaseExpired: return "lease expired";
    case EndReason::Revoked: return "revoked";
    case EndReason::RuntimeClosed: return "runtime closed";
    }
    return "unknown";
}

inline int64_t timeout_ns(std::optional<nanoseconds> t) {
    return t ? static_cast<int64_t>(t->count() < 0 ? 0 : t->count()) : -1;
}

// A duration as the C ABI's unsigned nanoseconds; a negative one is an error (it would wrap
// to centuries).
inline uint64_t duration_ns(nanoseconds d, const char *what) {
    if (d.count() < 0)
        throw Error(SPOT_E_INVALID_ARGUMENT, std::string(what) + " must not be negative");
    return static_cast<uint64_t>(d.count());
}

// What to register; builder style: TimerSpec::every(10ms).policy(Policy::CatchUpBounded).
// Throws spot::Error (SPOT_E_INVALID_ARGUMENT) for a negative duration or a zero period.
class TimerSpec {
public:
    static TimerSpec every(nanoseconds period) {
        if (period.count() == 0)
            throw Error(SPOT_E_INVALID_ARGUMENT,
                        "TimerSpec::every: the period must be greater than zero "
                        "(a one-shot timer is TimerSpec::after)");
        return TimerSpec(duration_ns(period, "TimerSpec::every: the period"), std::nullopt);
    }
    static TimerSpec after(nanoseconds delay) {
        return TimerSpec(0, duration_ns(delay, "TimerSpec::after: the delay"));
    }
    TimerSpec &policy(Policy p) { spec_.policy = static_cast<uint32_t>(p); return *this; }
    TimerSpec &max_catch_up_ticks(uint64_t n) { spec_.max_catch_up_ticks = n; return *this; }
    TimerSpec &first_due(nanoseconds d) {
        spec_.first_due_ns = duration_ns(d, "TimerSpec::first_due");
        return *this;
    }
    const spot_timer_spec &c() const noexcept { return spec_; }

private:
    TimerSpec(uint64_t period_ns, std::optional<uint64_t> delay_ns) {
        spec_.struct_size = sizeof spec_;
        spec_.period_ns = period_ns;
        spec_.first_due_ns = delay_ns ? *delay_ns : SPOT_FIRST_DUE_DEFAULT;
        spec_.max_catch_up_ticks = 1;
    }
    spot_timer_spec spec_{};
};

// One registered generation. Move-only; destruction requests a non-blocking cancel, so a
// Timer that is dropped at once cancels its timer: [[nodiscard]] makes that a warning. A
// Timer from Owner::register_timer holds its generation (spot_timer_register_held): its
// cancel() and stats() answer for that generation — its recorded end once it ended — as
// long as the Timer lives, however many timers come after it.
class [[nodiscard]] Timer {
public:
    Timer() = default;
    // Takes over `t`; `held`: the hold spot_timer_register_held took for it.
    Timer(uint64_t rt, spot_timer t, bool held = false) : rt_(rt), t_(t), live_(true), held_(held) {}
    Timer(const Timer &) = delete;
    Timer &operator=(const Timer &) = delete;
    Timer(Timer &&o) noexcept
        : rt_(o.rt_), t_(o.t_), live_(std::exchange(o.live_, false)), held_(std::exchange(o.held_, false)) {}
    Timer &operator=(Timer &&o) noexcept {
        if (this != &o) {
            reset();
            rt_ = o.rt_;
            t_ = o.t_;
            live_ = std::exchange(o.live_, false);
            held_ = std::exchange(o.held_, false);
        }
        return *this;
    }
    ~Timer() { reset(); }

    // Cancels and waits up to `timeout` (nullopt = forever) for the terminal result (an
    // ended generation's recorded one: the same result every time).
    // Throws spot::Error (SPOT_E_CLEANUP_FAILED, SPOT_E_TIMEOUT, SPOT_E_WOULD_DEADLOCK, ...).
    EndReason cancel(std::optional<nanoseconds> timeout = std::nullopt) {
        uint32_t reason = 0;
        check(spot_timer_cancel(rt_, t_, timeout_ns(timeout), &reason));
        live_ = false;
        return static_cast<EndReason>(reason);
    }
    // Non-blocking cancel; the result arrives as a SPOT_RECORD_CANCEL_DONE record with
    // `tag`, or is returned at once when the generation already ended.
    std::optional<EndReason> cancel_async(uint64_t tag) {
        uint32_t done = 0, reason = 0;
        check(spot_timer_cancel_async(rt_, t_, tag, &done, &reason));
        live_ = false;
        if (done) return static_cast<EndReason>(reason);
        return std::nullopt;
    }
    TimerStats stats() const {
        TimerStats s{};
        s.struct_size = sizeof s;
        check(spot_timer_stats(rt_, t_, &s));
        return s;
    }
    // Gives up the wrapper's responsibility: the timer keeps running, and the id returned
    // is a bare one (it goes stale once its slot serves another generation).
    spot_timer release() noexcept {
        live_ = false;
        unhold();
        return t_;
    }
    const spot_timer &c() const noexcept { return t_; }

private:
    void reset() noexcept {
        if (live_) spot_timer_cancel(rt_, t_, 0, nullptr); // starts the cancel, never waits
        live_ = false;
        unhold();
    }
    void unhold() noexcept {
        if (held_) spot_timer_release_hold(rt_, t_);
        held_ = false;
    }
    uint64_t rt_ = 0;
    spot_timer t_{};
    bool live_ = false;
    bool held_ = false;
};

// One authority of an owner (a value: nothing to free).
class Owner {
public:
    Owner(uint64_t rt, uint64_t id, uint64_t epoch) : rt_(rt), id_(id), epoch_(epoch) {}
    uint64_t id() const noexcept { return id_; }
    uint64_t epoch() const noexcept { return epoch_; }
    void renew(std::optional<nanoseconds> lease) {
        check(spot_owner_renew(rt_, id_, epoch_, lease ? duration_ns(*lease, "Owner::renew: the lease") : 0));
    }
    void revoke() { check(spot_owner_revoke(rt_, id_, epoch_)); }
    // Revokes and lets the runtime forget the owner once its timers have ended (an owner
    // that goes away for good: an actor stops, a session closes).
    void release() { check(spot_owner_release(rt_, id_, epoch_)); }
    // `release` (may be null) is called once with `user_data` when the generation ends.
    Timer register_timer(uint64_t key, const TimerSpec &spec, void *user_data = nullptr,
                         spot_release_fn release = nullptr) {
        spot_timer t{};
        check(spot_timer_register_held(rt_, id_, epoch_, key, &spec.c(), user_data, release, &t));
        return Timer(rt_, t, true);
    }
    // Holds the owner's gate (no timer callback of the owner starts) for a scope.
    class GateGuard {
    public:
        GateGuard(uint64_t rt, uint64_t id, std::optional<nanoseconds> timeout) : rt_(rt), id_(id) {
            check(spot_owner_gate_enter(rt_, id_, timeout_ns(timeout)));
        }
        GateGuard(const GateGuard &) = delete;
        GateGuard &operator=(const GateGuard &) = delete;
        ~GateGuard() { spot_owner_gate_leave(rt_, id_); }

    private:
        uint64_t rt_, id_;
    };
    GateGuard enter_gate(std::optional<nanoseconds> timeout = std::nullopt) const {
        return GateGuard(rt_, id_, timeout);
    }

private:
    uint64_t rt_, id_, epoch_;
};

// The records of one batch handed to a batch callback, and where to complete them.
class Batch {
public:
    Batch(const spot_record *r, size_t n, spot_completion *out, size_t *n_out) noexcept
        : r_(r), n_(n), out_(out), n_out_(n_out) {}
    const spot_record *begin() const noexcept { return r_; }
    const spot_record *end() const noexcept { return r_ + n_; }
    size_t size() const noexcept { return n_; }
    // Completes a TICK record of this batch synchronously (applied when the callback returns).
    void complete(const spot_record &rec, Outcome outcome) noexcept {
        if (*n_out_ < n_) out_[(*n_out_)++] = spot_completion{rec.token, static_cast<uint32_t>(outcome), 0};
    }

private:
    const spot_record *r_;
    size_t n_;
    spot_completion *out_;
    size_t *n_out_;
};

// A runtime. Move-only; destruction frees it (ends every timer, joins the scheduler).
class Runtime {
public:
    // A runtime delivering through exchange (see Exchanger).
    static Runtime exchange(Clock clock = Clock::Real) {
        spot_runtime_config cfg{};
        cfg.struct_size = sizeof cfg;
        cfg.clock = static_cast<uint32_t>(clock);
        cfg.delivery = SPOT_DELIVERY_EXCHANGE;
        uint64_t h = 0;
        check(spot_runtime_new(&cfg, &h));
        return Runtime(h);
    }

    // A runtime delivering each batch to `handler(spot::Batch&)` on its scheduler thread.
    // The handler is moved into the runtime and destroyed when the runtime is freed.
    // Exceptions escaping it are swallowed (they cannot cross the C boundary); its
    // uncompleted records must then be completed with complete().
    template <class F>
    static Runtime with_callback(F handler, Clock clock = Clock::Real) {
        auto *env = new F(std::move(handler));
        spot_runtime_config cfg{};
        cfg.struct_size = sizeof cfg;
        cfg.clock = static_cast<uint32_t>(clock);
        cfg.delivery = SPOT_DELIVERY_CALLBACK;
        cfg.callback = &trampoline<F>;
        cfg.callback_env = env;
        cfg.callback_finalizer = &finalize<F>;
        uint64_t h = 0;
        spot_status st = spot_runtime_new(&cfg, &h);
        if (st != SPOT_OK) {
            delete env; // not finalized on failure: still ours
            check(st);
        }
        return Runtime(h);
    }

    Runtime(const Runtime &) = delete;
    Runtime &operator=(const Runtime &) = delete;
    Runtime(Runtime &&o) noexcept : h_(std::exchange(o.h_, 0)) {}
    Runtime &operator=(Runtime &&o) noexcept {
        if (this != &o) {
            reset();
            h_ = std::exchange(o.h_, 0);
        }
        return *this;
    }
    ~Runtime() { reset(); }

    uint64_t handle() const noexcept { return h_; }
    Owner acquire(uint64_t owner_id, std::optional<nanoseconds> lease = std::nullopt,
                  Gate gate = Gate::Serial) {
        uint64_t epoch = 0;
        check(spot_owner_acquire(h_, owner_id, lease ? duration_ns(*lease, "Runtime::acquire: the lease") : 0,
                                 static_cast<uint32_t>(gate), &epoch));
        return Owner(h_, owner_id, epoch);
    }
    // Ends every timer (SPOT_END_RUNTIME_CLOSED) and stops the scheduler; the runtime is
    // freed when this object goes away. Afterwards a cancel returns the terminal result
    // and a registration throws SPOT_E_CLOSED. Closing again does nothing.
    void close() { check(spot_runtime_close(h_)); }
    void advance(nanoseconds by) { check(spot_advance(h_, duration_ns(by, "Runtime::advance"))); }
    nanoseconds now() const {
        uint64_t ns = 0;
        check(spot_now(h_, &ns));
        return nanoseconds(static_cast<int64_t>(ns));
    }
    Stats stats() const {
        Stats s{};
        s.struct_size = sizeof s;
        check(spot_stats(h_, &s));
        return s;
    }
    // Right before starting a record's handler: true = start it; false = stale, complete it
    // as Outcome::NotStarted.
    bool begin(const spot_record &rec) const {
        spot_status st = spot_record_begin(h_, &rec);
        if (st == SPOT_E_STALE_TIMER) return false;
        check(st);
        return true;
    }
    void complete(const spot_record &rec, Outcome outcome) {
        spot_completion c{rec.token, static_cast<uint32_t>(outcome), 0};
        check(spot_complete(h_, &c, 1));
    }
    int wakeup_fd() const {
        int32_t fd = -1;
        check(spot_wakeup_fd(h_, &fd));
        return fd;
    }

private:
    explicit Runtime(uint64_t h) : h_(h) {}
    void reset() noexcept {
        if (h_) spot_runtime_free(std::exchange(h_, 0));
    }
    template <class F>
    static void trampoline(void *env, const spot_record *recs, size_t n, spot_completion *out,
                           size_t *n_out) noexcept {
        Batch batch(recs, n, out, n_out);
        try {
            (*static_cast<F *>(env))(batch);
        } catch (...) {
        }
    }
    template <class F>
    static void finalize(void *env) noexcept {
        delete static_cast<F *>(env);
    }
    uint64_t h_ = 0;
};

// Exchange-mode delivery loop state: a reusable record buffer and the completions to
// hand back with the next call (one crossing per call).
class Exchanger {
public:
    explicit Exchanger(const Runtime &rt, size_t capacity = 256)
        : rt_(rt.handle()), records_(capacity), done_() {
        done_.reserve(capacity);
    }
    // Queues a completion for the next call of next().
    void complete(const spot_record &rec, Outcome outcome) {
        done_.push_back(spot_completion{rec.token, static_cast<uint32_t>(outcome), 0});
    }
    // Hands back the queued completions and waits up to `timeout` (nullopt = forever) for
    // the next batch; returns its records (valid until the next call).
    std::pair<const spot_record *, size_t> next(std::optional<nanoseconds> timeout) {
        size_t n = 0;
        check(spot_exchange(rt_, done_.data(), done_.size(), records_.data(), records_.size(),
                            timeout_ns(timeout), &n));
        done_.clear();
        return {records_.data(), n};
    }

private:
    uint64_t rt_;
    std::vector<spot_record> records_;
    std::vector<spot_completion> done_;
};

// A delivery session of the calling thread (spot_session_*): one record at a time, its
// start already checked; done() completes it. A blocking Timer::cancel on this thread never
// waits for a record this session holds. Belongs to the thread that made it (not movable
// to another thread: its handle is valid only there).
class Session {
public:
    explicit Session(const Runtime &rt, size_t capacity = 256) {
        check(spot_session_new(rt.handle(), capacity, &h_));
    }
    Session(const Session &) = delete;
    Session &operator=(const Session &) = delete;
    ~Session() {
        if (h_) spot_session_free(h_);
    }
    // The next record (a started TICK or a CANCEL_DONE), or nullopt when none arrived within
    // `timeout` (nullopt = wait until one does or the runtime closes).
    std::optional<spot_record> next(std::optional<nanoseconds> timeout) {
        spot_record r{};
        uint32_t got = 0;
        check(spot_session_next(h_, timeout_ns(timeout), &r, &got));
        if (!got) return std::nullopt;
        return r;
    }
    // Completes the TICK the last next() handed out.
    void done(Outcome outcome) { check(spot_session_done(h_, static_cast<uint32_t>(outcome))); }

    // One batch through the core's delivery driver (spot_session_run): `f(const spot_record&)`
    // runs each record right after its start was claimed and returns how it went (an
    // Outcome; a CANCEL_DONE record's answer is ignored). An exception out of `f` completes
    // its record FAILED, keeps the rest of the batch for the next run() and is rethrown
    // after the call. Returns what the call did.
    template <class F>
    spot_pass run(F &&f, std::optional<nanoseconds> timeout) {
        RunEnv<std::remove_reference_t<F>> env{&f, nullptr};
        spot_pass pass{};
        pass.struct_size = sizeof pass;
        spot_status st = spot_session_run(h_, timeout_ns(timeout), &run_one<std::remove_reference_t<F>>, &env, &pass);
        if (env.error) std::rethrow_exception(env.error);
        check(st);
        return pass;
    }

private:
    template <class F>
    struct RunEnv {
        F *f;
        std::exception_ptr error;
    };
    template <class F>
    static uint32_t run_one(void *p, const spot_record *r) noexcept {
        auto *env = static_cast<RunEnv<F> *>(p);
        try {
            return static_cast<uint32_t>(static_cast<Outcome>((*env->f)(*r)));
        } catch (...) {
            env->error = std::current_exception();
            return SPOT_OUTCOME_FAILED | SPOT_RUN_STOP;
        }
    }
    uint64_t h_ = 0;
};

// ---- The Spot lifecycle (docs/lifecycle.md, L1-L7) ------------------------------------

// The numbers cross the C ABI; 0 and every unknown number are refused (SPOT_E_UNKNOWN_ENUM).
enum class SpotKind : uint32_t {
    Entry = SPOT_KIND_ENTRY,
    User = SPOT_KIND_USER,
    Instance = SPOT_KIND_INSTANCE,
};
enum class Lane : uint32_t { Application = SPOT_LANE_APPLICATION, Lifecycle = SPOT_LANE_LIFECYCLE };
enum class CloseReason : uint32_t {
    IdleEvicted = SPOT_CLOSE_IDLE_EVICTED,
    Closed = SPOT_CLOSE_CLOSED,
    NodeShutdown = SPOT_CLOSE_NODE_SHUTDOWN,
    AuthorityLost = SPOT_CLOSE_AUTHORITY_LOST,
    CreationFailed = SPOT_CLOSE_CREATION_FAILED,
};

// The C structs of the lifecycle (NodeStats shares its name with spot_node_stats()).
using NodeStats = struct ::spot_node_stats;
using NodeRecord = spot_node_record;
using NodeCompletion = spot_node_completion;
using RelocationTarget = spot_relocation_target;

// A record's payload (empty for ticks); valid until the record is completed.
inline std::string_view payload_of(const NodeRecord &r) noexcept {
    return r.payload_len ? std::string_view(reinterpret_cast<const char *>(r.payload), r.payload_len)
                         : std::string_view();
}
// The completion of a record with `outcome`.
inline NodeCompletion completion_of(const NodeRecord &r, Outcome outcome) noexcept {
    return NodeCompletion{r.token, static_cast<uint32_t>(outcome), 0};
}

// A lane's limits; 0 takes the default (application 1,024 items / 64 MiB, lifecycle 128 /
// 4 MiB). Each item costs its payload + 256 bytes.
struct LaneLimits {
    uint64_t items = 0;
    uint64_t bytes = 0;
};
// What a Spot's lane holds now.
struct LaneUse {
    uint64_t items = 0;
    uint64_t bytes = 0;
};

// Builds a Spot's object when it is created (the Entry Spot's too, when its node starts).
// Throwing fails the creation with SPOT_E_CREATION_FAILED (the message is the exception's
// what()) and releases its reservation. Runs on the thread that creates the Spot — possibly
// a thread calling another node of the same store — and must not call back into the node.
using Factory = std::function<void(uint64_t spot_id, SpotKind kind)>;
// Told once when a Spot closes, before its location is released. Runs on the thread that
// closes it (also inside ~Node, with CloseReason::NodeShutdown); must not call back into
// the node. Exceptions escaping it are swallowed.
using ClosingCallback = std::function<void(uint64_t spot_id, SpotKind kind, CloseReason reason)>;

// A Location Store (embedded, with an in-process cluster): nodes started on one Store are
// simulated nodes of one cluster. Move-only; destruction frees the handle (nodes started
// on it keep their reference).
class Store {
public:
    Store() { check(spot_store_new(&h_)); }
    Store(const Store &) = delete;
    Store &operator=(const Store &) = delete;
    Store(Store &&o) noexcept : h_(std::exchange(o.h_, 0)) {}
    Store &operator=(Store &&o) noexcept {
        if (this != &o) {
            reset();
            h_ = std::exchange(o.h_, 0);
        }
        return *this;
    }
    ~Store() { reset(); }

    // The etcd Location Store shared by the nodes of several processes (spot_store_new_etcd):
    // `endpoints` comma-separated client URLs, `prefix` empty for the default; a zero
    // duration takes its default. Throws spot::Error (SPOT_E_STORE when etcd cannot be
    // reached, naming the endpoints).
    static Store etcd(const std::string &endpoints, const std::string &prefix = {},
                      nanoseconds lease_ttl = nanoseconds::zero(),
                      nanoseconds connect_timeout = nanoseconds::zero()) {
        spot_etcd_config c{};
        c.struct_size = sizeof c;
        c.endpoints = endpoints.c_str();
        c.prefix = prefix.empty() ? nullptr : prefix.c_str();
        c.lease_ttl_ns = duration_ns(lease_ttl, "Store::etcd: lease_ttl");
        c.connect_timeout_ns = duration_ns(connect_timeout, "Store::etcd: connect_timeout");
        uint64_t h = 0;
        check(spot_store_new_etcd(&c, &h));
        return Store(h);
    }

    uint64_t handle() const noexcept { return h_; }
    // etcd requests this store has made (0 for the embedded store).
    uint64_t requests() const {
        uint64_t n = 0;
        check(spot_store_requests(h_, &n));
        return n;
    }
    // Node `node_id` is unusable while its lease runs: its Spots are Unavailable.
    void mark_down(uint64_t node_id) { check(spot_store_mark_down(h_, node_id)); }
    // Node `node_id`'s lease is over: its Spots' ids are Missing (may be created again).
    void expire_node(uint64_t node_id) { check(spot_store_expire_node(h_, node_id)); }

private:
    explicit Store(uint64_t h) noexcept : h_(h) {}
    void reset() noexcept {
        if (h_) spot_store_free(std::exchange(h_, 0));
    }
    uint64_t h_ = 0;
};

// How to start a node; builder style:
//   NodeConfig().clock(Clock::Manual).node_id(1).entry_spot(1001).factory(f)
// Unset limits take their defaults; an unset idle timeout means "never evicted", an unset
// owner lease "no lease". Negative durations throw SPOT_E_INVALID_ARGUMENT.
class NodeConfig {
public:
    NodeConfig &clock(Clock c) { clock_ = c; return *this; }
    NodeConfig &node_id(uint64_t id) { node_id_ = id; return *this; }
    NodeConfig &entry_spot(uint64_t id) { entry_spot_ = id; return *this; }
    NodeConfig &application_lane(LaneLimits l) { application_ = l; return *this; }
    NodeConfig &lifecycle_lane(LaneLimits l) { lifecycle_ = l; return *this; }
    NodeConfig &node_inbound_bytes(uint64_t b) { inbound_ = b; return *this; }
    NodeConfig &active_cap(uint64_t n) { active_cap_ = n; return *this; }
    NodeConfig &instance_idle_timeout(nanoseconds d) {
        idle_ns_ = duration_ns(d, "NodeConfig::instance_idle_timeout");
        return *this;
    }
    NodeConfig &owner_lease(nanoseconds d) {
        lease_ns_ = duration_ns(d, "NodeConfig::owner_lease");
        return *this;
    }
    NodeConfig &factory(Factory f) { factory_ = std::move(f); return *this; }
    NodeConfig &on_close(ClosingCallback f) { on_close_ = std::move(f); return *this; }
    // Serve the nodes of other processes over TCP on "IP:PORT" (e.g. "127.0.0.1:0", port 0:
    // any free port; Node::address() tells the port bound). Empty (the default): none. A
    // bad address makes the Node constructor throw SPOT_E_INVALID_ARGUMENT.
    NodeConfig &listen(std::string address) { listen_ = std::move(address); return *this; }

private:
    friend class Node;
    Clock clock_ = Clock::Real;
    uint64_t node_id_ = 1;
    uint64_t entry_spot_ = 0;
    LaneLimits application_{}, lifecycle_{};
    uint64_t inbound_ = 0, active_cap_ = 0, idle_ns_ = 0, lease_ns_ = 0;
    Factory factory_;
    ClosingCallback on_close_;
    std::string listen_;
};

// A node of the Spot lifecycle. Move-only; destruction shuts it down (every Spot closes
// with CloseReason::NodeShutdown) and frees it. The factory and closing callback are kept
// in a heap object owned by the Node (the C callbacks' env), so moving a Node keeps them
// where the library points; they are destroyed only after the node is freed.
// Every method may be called from any thread concurrently (as the C functions).
class Node {
public:
    // A node on `store` (a simulated node of its cluster).
    Node(const NodeConfig &cfg, const Store &store) : Node(cfg, store.handle()) {}
    // A node with a private embedded store.
    explicit Node(const NodeConfig &cfg) : Node(cfg, uint64_t{0}) {}

    Node(const Node &) = delete;
    Node &operator=(const Node &) = delete;
    Node(Node &&o) noexcept : h_(std::exchange(o.h_, 0)), callbacks_(std::move(o.callbacks_)) {}
    Node &operator=(Node &&o) noexcept {
        if (this != &o) {
            reset();
            h_ = std::exchange(o.h_, 0);
            callbacks_ = std::move(o.callbacks_);
        }
        return *this;
    }
    ~Node() { reset(); }

    uint64_t handle() const noexcept { return h_; }

    // Sends a message to a Ready Spot (NOT_FOUND for a missing id: nothing is created).
    void send(uint64_t spot_id, const void *data, size_t len, Lane lane = Lane::Application) {
        check(spot_node_send(h_, spot_id, static_cast<uint32_t>(lane), bytes(data), len));
    }
    void send(uint64_t spot_id, std::string_view payload, Lane lane = Lane::Application) {
        send(spot_id, payload.data(), payload.size(), lane);
    }
    // Sends lifecycle work (served before application work).
    void send_lifecycle(uint64_t spot_id, std::string_view payload) {
        send(spot_id, payload, Lane::Lifecycle);
    }
    // The instance intent: creates Instance Spot `spot_id` if it does not exist, then
    // sends. Returns the Spot's object generation.
    uint64_t send_or_create(uint64_t spot_id, const void *data, size_t len) {
        uint64_t generation = 0;
        check(spot_node_send_or_create(h_, spot_id, bytes(data), len, &generation));
        return generation;
    }
    uint64_t send_or_create(uint64_t spot_id, std::string_view payload) {
        return send_or_create(spot_id, payload.data(), payload.size());
    }
    // Creates User Spot `spot_id` (or finds it). Returns its object generation.
    uint64_t create_user_spot(uint64_t spot_id) {
        uint64_t generation = 0;
        check(spot_node_create_user_spot(h_, spot_id, &generation));
        return generation;
    }
    // The kind of Spot `spot_id` if it is active on this node (NOT_FOUND otherwise).
    SpotKind spot_kind(uint64_t spot_id) const {
        uint32_t k = 0;
        check(spot_node_spot_kind(h_, spot_id, &k));
        return static_cast<SpotKind>(k);
    }
    // Closes Spot `spot_id` of `kind` (the Entry Spot closes only with its node).
    void close_spot(uint64_t spot_id, SpotKind kind) {
        check(spot_node_close_spot(h_, spot_id, static_cast<uint32_t>(kind)));
    }
    // A repeating timer of a Spot (key below 2^63): each tick is a SPOT_WORK_TICK record.
    void every(uint64_t spot_id, uint64_t key, nanoseconds period, uint64_t value = 0) {
        check(spot_node_every(h_, spot_id, key, duration_ns(period, "Node::every: the period"), value));
    }
    // One idle-eviction pass (at most 64 Spots examined); returns how many were evicted.
    size_t evict_idle() {
        size_t n = 0;
        check(spot_node_evict_idle(h_, &n));
        return n;
    }
    // Manual clock only.
    void advance(nanoseconds by) { check(spot_node_advance(h_, duration_ns(by, "Node::advance"))); }

    // Hands back `done` and waits up to `timeout` (nullopt: forever) for ready Spot work;
    // returns at most `max` records. Complete every record once; its payload stays valid
    // until then.
    std::vector<NodeRecord> exchange(const std::vector<NodeCompletion> &done = {},
                                     std::optional<nanoseconds> timeout = nanoseconds(0),
                                     size_t max = 256) {
        std::vector<NodeRecord> out(max ? max : 1);
        size_t n = 0;
        check(spot_node_exchange(h_, done.data(), done.size(), out.data(), out.size(),
                                 timeout_ns(timeout), &n));
        out.resize(n);
        return out;
    }
    // Right before running a record's handler: true = run it; false = its Spot's
    // authority ended (complete it Outcome::NotStarted).
    bool begin(const NodeRecord &r) {
        spot_status st = spot_node_begin(h_, r.token);
        if (st == SPOT_E_STALE_ROUTE) return false;
        check(st);
        return true;
    }
    void complete(const NodeRecord &r, Outcome outcome) {
        NodeCompletion c = completion_of(r, outcome);
        check(spot_node_complete(h_, &c, 1));
    }
    void complete(const std::vector<NodeCompletion> &done) {
        check(spot_node_complete(h_, done.data(), done.size()));
    }

    NodeStats stats() const {
        NodeStats s{};
        s.struct_size = sizeof s;
        check(spot_node_stats(h_, &s));
        return s;
    }
    LaneUse lane_use(uint64_t spot_id, Lane lane) const {
        LaneUse u;
        check(spot_node_lane_use(h_, spot_id, static_cast<uint32_t>(lane), &u.items, &u.bytes));
        return u;
    }
    // The address other processes' nodes reach this node at ("127.0.0.1:40123"); nullopt
    // when it does not listen (spot_node_address).
    std::optional<std::string> address() const {
        char buf[64];
        size_t len = 0;
        check(spot_node_address(h_, buf, sizeof buf, &len));
        if (len == 0) return std::nullopt;
        if (len < sizeof buf) return std::string(buf, len);
        std::string s(len + 1, '\0');
        check(spot_node_address(h_, s.data(), s.size(), &len));
        s.resize(len < s.size() ? len : s.size() - 1);
        return s;
    }
    void add_entry_actor(uint64_t actor_id) { check(spot_node_add_entry_actor(h_, actor_id)); }
    // The node's User and Instance Spots and its Entry Spot's actors (never the Entry Spot).
    std::vector<RelocationTarget> relocation_targets() const {
        std::vector<RelocationTarget> out(16);
        for (;;) {
            size_t n = 0, total = 0;
            check(spot_node_relocation_targets(h_, out.data(), out.size(), &n, &total));
            if (total <= out.size()) {
                out.resize(n);
                return out;
            }
            out.resize(total + 16); // grew meanwhile: ask again with room to spare
        }
    }

private:
    struct Callbacks {
        Factory factory;
        ClosingCallback on_close;
    };

    Node(const NodeConfig &cfg, uint64_t store) : callbacks_(new Callbacks{cfg.factory_, cfg.on_close_}) {
        spot_node_config c{};
        c.struct_size = sizeof c;
        c.clock = static_cast<uint32_t>(cfg.clock_);
        c.node_id = cfg.node_id_;
        c.entry_spot = cfg.entry_spot_;
        c.application_lane_items = cfg.application_.items;
        c.application_lane_bytes = cfg.application_.bytes;
        c.lifecycle_lane_items = cfg.lifecycle_.items;
        c.lifecycle_lane_bytes = cfg.lifecycle_.bytes;
        c.node_inbound_bytes = cfg.inbound_;
        c.active_cap = cfg.active_cap_;
        c.instance_idle_timeout_ns = cfg.idle_ns_;
        c.owner_lease_ns = cfg.lease_ns_;
        c.factory = callbacks_->factory ? &factory_trampoline : nullptr;
        c.on_close = callbacks_->on_close ? &closing_trampoline : nullptr;
        c.env = callbacks_.get();
        c.listen = cfg.listen_.empty() ? nullptr : cfg.listen_.c_str();
        check(spot_node_start(&c, store, &h_)); // on failure the callbacks die with us
    }

    static const uint8_t *bytes(const void *data) noexcept { return static_cast<const uint8_t *>(data); }

    static void put_message(char *msg, size_t msg_len, const char *text) noexcept {
        if (!msg || msg_len == 0) return;
        size_t n = std::strlen(text);
        if (n >= msg_len) n = msg_len - 1;
        std::memcpy(msg, text, n);
        msg[n] = '\0';
    }
    static int32_t factory_trampoline(void *env, uint64_t spot_id, uint32_t kind, char *msg,
                                      size_t msg_len) noexcept {
        try {
            static_cast<Callbacks *>(env)->factory(spot_id, static_cast<SpotKind>(kind));
            return 0;
        } catch (const std::exception &e) {
            put_message(msg, msg_len, e.what());
        } catch (...) {
            put_message(msg, msg_len, "the factory threw an exception");
        }
        return 1;
    }
    static void closing_trampoline(void *env, uint64_t spot_id, uint32_t kind, uint32_t reason) noexcept {
        try {
            static_cast<Callbacks *>(env)->on_close(spot_id, static_cast<SpotKind>(kind),
                                                     static_cast<CloseReason>(reason));
        } catch (...) {
        }
    }
    void reset() noexcept {
        // Freed first: the shutdown calls the closing callback, which must still exist.
        if (h_) spot_node_free(std::exchange(h_, 0));
        callbacks_.reset();
    }

    uint64_t h_ = 0;
    std::unique_ptr<Callbacks> callbacks_;
};

} // namespace spot

#endif // SPOT_TIMER_HPP
