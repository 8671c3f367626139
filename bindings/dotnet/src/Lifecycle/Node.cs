using System;
using System.Collections.Generic;
using System.Runtime.InteropServices;
using System.Text;
using System.Threading;
using SpotTimer.Interop;

namespace SpotTimer
{
    /// <summary>Owns one native node handle (spot_node_start). Releasing it calls spot_node_free:
    /// every Spot closes (<see cref="CloseReason.NodeShutdown"/>, <see cref="NodeOptions.OnClose"/>
    /// runs on the releasing thread), the node's timer runtime stops; then the GCHandle of the
    /// node's callbacks is freed. The release waits for the calls in progress (each holds a
    /// DangerousAddRef), so records a <see cref="Node.Dispatch"/> is handling stay valid.</summary>
    public sealed class NodeSafeHandle : SafeHandle
    {
        readonly ulong _id;
        GCHandle _env;

        internal NodeSafeHandle(ulong id, GCHandle env) : base(IntPtr.Zero, true)
        {
            _id = id;
            _env = env;
            SetHandle(new IntPtr(1)); // "owned" marker; the real value is the 64-bit id
        }

        /// <summary>The native node handle value.</summary>
        public ulong Id { get { return _id; } }

        /// <summary>False while the handle owns a node.</summary>
        public override bool IsInvalid { get { return handle == IntPtr.Zero; } }

        /// <summary>Frees the native node (spot_node_free; see the class summary).</summary>
        protected override bool ReleaseHandle()
        {
            // At process shutdown the closing callbacks may no longer run managed code; the OS
            // reclaims everything anyway.
            if (Environment.HasShutdownStarted) return true;
            int s = Native.spot_node_free(_id);
            if (_env.IsAllocated)
            {
                var callbacks = _env.Target as NodeCallbacks;
                if (callbacks != null) callbacks.Detach();
                _env.Free();
            }
            return s == 0 || s == (int)SpotStatus.InvalidHandle;
        }
    }

    /// <summary>The managed side of a node's native callbacks, reached through a GCHandle passed as
    /// the config's <c>env</c>. It holds the application's delegates only, never the Node (the
    /// handle must not root an abandoned Node). The two native entry points are static delegates
    /// kept for the life of the process, so no callback can reach a collected delegate.</summary>
    internal sealed unsafe class NodeCallbacks
    {
        internal static readonly spot_factory_fn s_factory = FactoryThunk;
        internal static readonly spot_closing_fn s_closing = ClosingThunk;
        internal static readonly IntPtr s_factoryPtr = Marshal.GetFunctionPointerForDelegate(s_factory);
        internal static readonly IntPtr s_closingPtr = Marshal.GetFunctionPointerForDelegate(s_closing);

        volatile Action<ulong, SpotKind> _factory;
        volatile Action<ulong, SpotKind, CloseReason> _onClose;
        volatile bool _detached;

        internal NodeCallbacks(Action<ulong, SpotKind> factory, Action<ulong, SpotKind, CloseReason> onClose)
        {
            _factory = factory;
            _onClose = onClose;
        }

        /// <summary>The node was freed: no callback reaches the application any more.</summary>
        internal void Detach()
        {
            _detached = true;
            _factory = null;
            _onClose = null;
        }

        static NodeCallbacks From(IntPtr env)
        {
            if (env == IntPtr.Zero) return null;
            return GCHandle.FromIntPtr(env).Target as NodeCallbacks;
        }

        // Nothing may unwind into native code: every exception is caught here.
        static int FactoryThunk(IntPtr env, ulong spotId, uint kind, byte* msg, UIntPtr msgLen)
        {
            try
            {
                var cb = From(env);
                if (cb == null || cb._detached)
                    return Fail(msg, msgLen, "the node was disposed");
                var f = cb._factory;
                if (f != null) f(spotId, (SpotKind)kind);
                return 0;
            }
            catch (Exception e)
            {
                return Fail(msg, msgLen, string.IsNullOrEmpty(e.Message) ? e.GetType().Name : e.Message);
            }
        }

        static void ClosingThunk(IntPtr env, ulong spotId, uint kind, uint reason)
        {
            try
            {
                var cb = From(env);
                if (cb == null) return;
                var f = cb._onClose;
                if (f != null) f(spotId, (SpotKind)kind, (CloseReason)reason);
            }
            catch (Exception)
            {
                // The Spot closes anyway (the library goes on with its close); nothing to report to.
            }
        }

        static int Fail(byte* msg, UIntPtr msgLen, string text)
        {
            Native.WriteMessage(msg, msgLen, text);
            return 1;
        }
    }

    /// <summary>A node of the Spot lifecycle (docs/lifecycle.md, L1–L7): one timer runtime of its
    /// own, its Entry Spot, the User and Instance Spots placed on it, and their lanes. Work for
    /// the Spots — messages and timer ticks — is handed to the application by
    /// <see cref="Dispatch"/>, on the calling thread.
    ///
    /// Thread-safe. After <see cref="Dispose"/> every method throws ObjectDisposedException
    /// (also a <see cref="Dispatch"/> that was waiting when another thread disposed the node).
    /// Dispose frees the native node once no call is in progress on it: from inside a Dispatch
    /// handler, when that Dispatch returns (the rest of its batch does not start).</summary>
    public sealed class Node : IDisposable
    {
        readonly NodeSafeHandle _handle;
        readonly int _cap;
        int _disposed;
        readonly object _eventLock = new object();
        EventHandler<SpotWorkFailedEventArgs> _failed;

        /// <summary>Starts a node (spot_node_start) and creates its Entry Spot (the factory runs for
        /// it). Throws ArgumentNullException, ArgumentOutOfRangeException (BatchCapacity, a
        /// non-positive InstanceIdleTimeout or OwnerLease), SpotInvalidArgumentException (a lane
        /// below 1 item or 256 bytes, an unknown Clock value, an Entry Spot id another node
        /// owns, a <see cref="NodeOptions.Listen"/> that is not "IP:PORT" or cannot be bound),
        /// CreationFailedException (the factory threw for the Entry Spot),
        /// ObjectDisposedException (a disposed Store).</summary>
        public Node(NodeOptions options)
        {
            if (options == null) throw new ArgumentNullException("options");
            if (options.BatchCapacity < 1 || options.BatchCapacity > 1 << 20)
                throw new ArgumentOutOfRangeException("options", "BatchCapacity must be in 1..1048576");
            ulong idleNs = options.InstanceIdleTimeout.HasValue
                ? Durations.PositiveNs(options.InstanceIdleTimeout.Value, "InstanceIdleTimeout") : 0;
            ulong leaseNs = options.OwnerLease.HasValue
                ? Durations.PositiveNs(options.OwnerLease.Value, "OwnerLease") : 0;
            _cap = options.BatchCapacity;

            byte[] listen = string.IsNullOrEmpty(options.Listen) ? null : Utf8Z(options.Listen);

            var callbacks = new NodeCallbacks(options.Factory, options.OnClose);
            var env = GCHandle.Alloc(callbacks, GCHandleType.Normal);
            var cfg = new spot_node_config();
            int s;
            string msg = null;
            ulong id = 0;
            bool storeAdded = false;
            Store store = options.Store;
            try
            {
                unsafe
                {
                    cfg.struct_size = (uint)sizeof(spot_node_config);
                    cfg.clock = (uint)options.Clock;
                    cfg.node_id = options.NodeId;
                    cfg.entry_spot = options.EntrySpot;
                    cfg.application_lane_items = options.ApplicationLaneItems;
                    cfg.application_lane_bytes = options.ApplicationLaneBytes;
                    cfg.lifecycle_lane_items = options.LifecycleLaneItems;
                    cfg.lifecycle_lane_bytes = options.LifecycleLaneBytes;
                    cfg.node_inbound_bytes = options.NodeInboundBytes;
                    cfg.active_cap = options.ActiveCap;
                    cfg.instance_idle_timeout_ns = idleNs;
                    cfg.owner_lease_ns = leaseNs;
                    cfg.factory = options.Factory != null ? NodeCallbacks.s_factoryPtr : IntPtr.Zero;
                    cfg.on_close = options.OnClose != null ? NodeCallbacks.s_closingPtr : IntPtr.Zero;
                    cfg.env = GCHandle.ToIntPtr(env);
                    ulong storeId = store != null ? store.Enter(ref storeAdded) : 0;
                    ulong n;
                    fixed (byte* l = listen)
                    {
                        cfg.listen = (IntPtr)l;
                        s = Native.spot_node_start(&cfg, storeId, &n);
                    }
                    if (s != 0) msg = Native.LastError();
                    id = n;
                }
            }
            catch
            {
                env.Free(); // not started: the library never calls back with it
                throw;
            }
            finally
            {
                if (storeAdded) store.Exit();
            }
            if (s != 0)
            {
                env.Free();
                throw SpotTimerException.From(s, msg);
            }
            _handle = new NodeSafeHandle(id, env);
            NodeId = options.NodeId;
            EntrySpot = options.EntrySpot;
            Clock = options.Clock;
        }

        static byte[] Utf8Z(string v)
        {
            var b = Encoding.UTF8.GetBytes(v);
            Array.Resize(ref b, b.Length + 1);
            return b;
        }

        /// <summary>The address other processes' nodes reach this node at ("127.0.0.1:40123", the
        /// port bound when <see cref="NodeOptions.Listen"/> asked for port 0); null when the node
        /// does not listen (spot_node_address).</summary>
        public string Address
        {
            get
            {
                bool added = false;
                try
                {
                    ulong id = Enter(ref added);
                    int cap = 64;
                    while (true)
                    {
                        byte[] buf = new byte[cap];
                        ulong len;
                        unsafe
                        {
                            fixed (byte* b = buf)
                            {
                                UIntPtr n;
                                Check(Native.spot_node_address(id, b, (UIntPtr)cap, &n));
                                len = (ulong)n;
                            }
                        }
                        if (len == 0) return null;
                        if (len < (ulong)cap) return Encoding.UTF8.GetString(buf, 0, (int)len);
                        cap = (int)len + 1;
                    }
                }
                finally { Exit(added); }
            }
        }

        /// <summary>The native node handle (closed once the node is freed).</summary>
        public NodeSafeHandle Handle { get { return _handle; } }
        /// <summary>This node's id in its store (<see cref="NodeOptions.NodeId"/>).</summary>
        public ulong NodeId { get; private set; }
        /// <summary>The id of the node's Entry Spot.</summary>
        public ulong EntrySpot { get; private set; }
        /// <summary>The node's clock (<see cref="NodeOptions.Clock"/>).</summary>
        public ClockKind Clock { get; private set; }
        /// <summary>True once <see cref="Dispose"/> was called.</summary>
        public bool IsDisposed { get { return Volatile.Read(ref _disposed) != 0; } }

        /// <summary>A <see cref="Dispatch"/> handler threw: its record was completed FAILED (it
        /// counts as run: <see cref="NodeStats.MessagesCompleted"/>), the rest of the batch ran.
        /// Raised on the dispatching thread after the batch's completions were submitted, before
        /// Dispatch returns; exceptions thrown by subscribers are swallowed. Dispatch itself does
        /// not rethrow handler exceptions.</summary>
        public event EventHandler<SpotWorkFailedEventArgs> HandlerFailed
        {
            add { lock (_eventLock) _failed += value; }
            remove { lock (_eventLock) _failed -= value; }
        }

        // ------------------------------------------------------------------ call plumbing

        void ThrowIfDisposed()
        {
            if (IsDisposed) throw new ObjectDisposedException("SpotTimer.Node");
        }

        /// <summary>The raw id with the handle ref-counted (no free during the call).</summary>
        ulong Enter(ref bool added)
        {
            ThrowIfDisposed();
            try { _handle.DangerousAddRef(ref added); }
            catch (ObjectDisposedException) { throw new ObjectDisposedException("SpotTimer.Node"); }
            return _handle.Id;
        }

        void Exit(bool added)
        {
            if (added) _handle.DangerousRelease();
        }

        /// <summary>Throws for a failed status (read the last error right after the call). A node
        /// disposed meanwhile (invalid or closed handle): ObjectDisposedException.</summary>
        void Check(int status)
        {
            if (status == 0) return;
            string msg = Native.LastError();
            if (IsDisposed && (status == (int)SpotStatus.InvalidHandle || status == (int)SpotStatus.Closed))
                throw new ObjectDisposedException("SpotTimer.Node", msg);
            throw SpotTimerException.From(status, msg);
        }

        static void CheckPayload(byte[] payload)
        {
            if (payload == null) throw new ArgumentNullException("payload");
        }

        // ------------------------------------------------------------------ sending and creating

        /// <summary>Sends a message to the application lane of a Ready Spot (the payload is copied).
        /// L3: a missing id throws <see cref="SpotNotFoundException"/> and nothing is created. Also
        /// <see cref="StaleRouteException"/>, <see cref="SpotUnavailableException"/>,
        /// <see cref="CapacityExceededException"/> (ApplicationLane, NodeInbound).</summary>
        public void Send(ulong spotId, byte[] payload)
        {
            Send(spotId, payload, Lane.Application);
        }

        /// <summary>Sends a message to the lifecycle lane (served first) of a Ready Spot.
        /// <see cref="CapacityExceededException"/> with Queue LifecycleLane when it is full.</summary>
        public void SendLifecycle(ulong spotId, byte[] payload)
        {
            Send(spotId, payload, Lane.Lifecycle);
        }

        /// <summary>Sends to the given lane; an undefined Lane value throws
        /// <see cref="SpotInvalidArgumentException"/> (UnknownEnum).</summary>
        public unsafe void Send(ulong spotId, byte[] payload, Lane lane)
        {
            CheckPayload(payload);
            bool added = false;
            try
            {
                ulong id = Enter(ref added);
                fixed (byte* p = payload)
                    Check(Native.spot_node_send(id, spotId, (uint)lane, p, (UIntPtr)payload.Length));
            }
            finally { Exit(added); }
        }

        /// <summary>The instance intent (L3): sends to Instance Spot <paramref name="spotId"/>,
        /// creating it first if it does not exist — the factory runs once however many callers
        /// race, on this node or another node of the Store. Returns the Spot's object generation.
        /// Errors as <see cref="Send(ulong, byte[])"/>, and <see cref="CreationFailedException"/>,
        /// <see cref="CapacityExceededException"/> (Activation), <see cref="WrongKindException"/>
        /// (the id names a User or Entry Spot).</summary>
        public unsafe ulong SendOrCreate(ulong spotId, byte[] payload)
        {
            CheckPayload(payload);
            bool added = false;
            try
            {
                ulong id = Enter(ref added);
                ulong generation;
                fixed (byte* p = payload)
                    Check(Native.spot_node_send_or_create(id, spotId, p, (UIntPtr)payload.Length, &generation));
                return generation;
            }
            finally { Exit(added); }
        }

        /// <summary>Creates User Spot <paramref name="spotId"/> (or finds it if it exists) and
        /// returns its object generation. <see cref="CreationFailedException"/>,
        /// <see cref="CapacityExceededException"/> (Activation), <see cref="WrongKindException"/>,
        /// <see cref="SpotUnavailableException"/>.</summary>
        public unsafe ulong CreateUserSpot(ulong spotId)
        {
            bool added = false;
            try
            {
                ulong id = Enter(ref added);
                ulong generation;
                Check(Native.spot_node_create_user_spot(id, spotId, &generation));
                return generation;
            }
            finally { Exit(added); }
        }

        /// <summary>The kind of Spot <paramref name="spotId"/> if it is active on this node;
        /// <see cref="SpotNotFoundException"/> otherwise.</summary>
        public unsafe SpotKind GetSpotKind(ulong spotId)
        {
            bool added = false;
            try
            {
                ulong id = Enter(ref added);
                uint kind;
                Check(Native.spot_node_spot_kind(id, spotId, &kind));
                return (SpotKind)kind;
            }
            finally { Exit(added); }
        }

        /// <summary>Closes Spot <paramref name="spotId"/> of <paramref name="kind"/> on this node:
        /// <see cref="NodeOptions.OnClose"/> runs (Closed), its timers end, its queued messages are
        /// dropped (counted), its location is released. <see cref="WrongKindException"/> for the
        /// Entry Spot (it closes only with its node) or a kind that is not the Spot's;
        /// <see cref="SpotNotFoundException"/>; an undefined kind (0, 4, ...) throws
        /// <see cref="SpotInvalidArgumentException"/> (UnknownEnum).</summary>
        public void CloseSpot(ulong spotId, SpotKind kind)
        {
            bool added = false;
            try
            {
                ulong id = Enter(ref added);
                Check(Native.spot_node_close_spot(id, spotId, (uint)kind));
            }
            finally { Exit(added); }
        }

        /// <summary>Registers repeating timer <paramref name="key"/> (below 2^63) of Spot
        /// <paramref name="spotId"/>: each tick is application work of the Spot, handed to
        /// <see cref="Dispatch"/> as a <see cref="WorkKind.Tick"/> carrying <paramref name="value"/>.
        /// A negative period throws ArgumentOutOfRangeException, a zero period or a key of 2^63 or
        /// more <see cref="SpotInvalidArgumentException"/>; <see cref="SpotNotFoundException"/>.</summary>
        public void Every(ulong spotId, ulong key, TimeSpan period, ulong value)
        {
            ulong ns = Durations.NonNegativeNs(period, "period");
            bool added = false;
            try
            {
                ulong id = Enter(ref added);
                Check(Native.spot_node_every(id, spotId, key, ns, value));
            }
            finally { Exit(added); }
        }

        /// <summary>One idle-eviction pass (L5): examines at most 64 Instance Spots and evicts those
        /// idle past <see cref="NodeOptions.InstanceIdleTimeout"/> with no work queued or running
        /// (OnClose with IdleEvicted first). Returns how many it evicted.</summary>
        public unsafe int EvictIdle()
        {
            bool added = false;
            try
            {
                ulong id = Enter(ref added);
                UIntPtr n;
                Check(Native.spot_node_evict_idle(id, &n));
                return (int)(ulong)n;
            }
            finally { Exit(added); }
        }

        /// <summary>Manual clock only: moves the node's clock forward and lets due work become ready
        /// for <see cref="Dispatch"/>; <c>TimeSpan.Zero</c> only makes ready what is due (messages
        /// sent on a manual-clock node become ready this way). <see cref="NotManualClockException"/>
        /// on a real clock; negative: ArgumentOutOfRangeException.</summary>
        public void Advance(TimeSpan by)
        {
            ulong ns = Durations.NonNegativeNs(by, "by");
            bool added = false;
            try
            {
                ulong id = Enter(ref added);
                Check(Native.spot_node_advance(id, ns));
            }
            finally { Exit(added); }
        }

        /// <summary>Adds an actor to the node's Entry Spot: it is listed by
        /// <see cref="RelocationTargets"/> (L2).</summary>
        public void AddEntryActor(ulong actorId)
        {
            bool added = false;
            try
            {
                ulong id = Enter(ref added);
                Check(Native.spot_node_add_entry_actor(id, actorId));
            }
            finally { Exit(added); }
        }

        /// <summary>What the node would hand over if it drained now (L2): its User and Instance
        /// Spots and the actors of its Entry Spot — never the Entry Spot itself.</summary>
        public unsafe IReadOnlyList<RelocationTarget> RelocationTargets()
        {
            bool added = false;
            try
            {
                ulong id = Enter(ref added);
                int cap = 64;
                while (true)
                {
                    var buf = new spot_relocation_target[cap];
                    UIntPtr n, total;
                    fixed (spot_relocation_target* p = buf)
                        Check(Native.spot_node_relocation_targets(id, p, (UIntPtr)cap, &n, &total));
                    if ((ulong)total > (ulong)cap)
                    {
                        cap = checked((int)(ulong)total + 16); // grew meanwhile: ask again
                        continue;
                    }
                    var list = new List<RelocationTarget>((int)(ulong)n);
                    for (int i = 0; i < (int)(ulong)n; i++)
                        list.Add(buf[i].what == C.TARGET_SPOT
                            ? new RelocationTarget(RelocationTargetKind.Spot, (SpotKind)buf[i].spot_kind, buf[i].id)
                            : new RelocationTarget((RelocationTargetKind)buf[i].what, null, buf[i].id));
                    return list;
                }
            }
            finally { Exit(added); }
        }

        /// <summary>The items and bytes (<c>payload + 256</c> per item) a Spot's lane holds now
        /// (L6). <see cref="SpotNotFoundException"/> when the Spot is not active on this node; an
        /// undefined Lane value: <see cref="SpotInvalidArgumentException"/> (UnknownEnum).</summary>
        public unsafe (ulong Items, ulong Bytes) LaneUse(ulong spotId, Lane lane)
        {
            bool added = false;
            try
            {
                ulong id = Enter(ref added);
                ulong items, bytes;
                Check(Native.spot_node_lane_use(id, spotId, (uint)lane, &items, &bytes));
                return (items, bytes);
            }
            finally { Exit(added); }
        }

        /// <summary>A snapshot of the node's counters.</summary>
        public unsafe NodeStats GetStats()
        {
            bool added = false;
            try
            {
                ulong id = Enter(ref added);
                var st = new spot_node_stats();
                st.struct_size = (uint)sizeof(spot_node_stats);
                Check(Native.spot_node_stats(id, &st));
                return new NodeStats(ref st);
            }
            finally { Exit(added); }
        }

        /// <summary>The node's counters in the Prometheus text format 0.0.4 (counters end in
        /// <c>_total</c>), every name prefixed with <paramref name="prefix"/>.</summary>
        public unsafe string Prometheus(string prefix = "spot_node")
        {
            if (prefix == null) throw new ArgumentNullException("prefix");
            byte[] p = System.Text.Encoding.ASCII.GetBytes(prefix + "\0");
            bool added = false;
            try
            {
                ulong id = Enter(ref added);
                string text;
                fixed (byte* pp = p)
                {
                    byte* pq = pp;
                    Check(Native.ReadText((b, c, l) => Native.spot_node_prometheus(id, pq, b, c, l), out text));
                }
                return text;
            }
            finally { Exit(added); }
        }

        // ------------------------------------------------------------------ dispatch

        /// <summary>Receives one batch of ready Spot work — messages and ticks together, waiting up
        /// to <paramref name="timeout"/> (TimeSpan.Zero: do not wait; Timeout.InfiniteTimeSpan:
        /// forever) — and runs <paramref name="handler"/> for each record on the calling thread, in
        /// the batch's order (a Spot's messages in the order they were admitted, run one after the
        /// other). One spot_node_run: the core's delivery driver claims each record right before
        /// its handler; a record whose Spot lost its authority meanwhile (closed, moved, lease
        /// over) does not start and is completed NOT_STARTED. A handler that returns completes its
        /// record OK; one that throws completes it FAILED and the exception is reported through
        /// <see cref="HandlerFailed"/> — it is not rethrown, and the rest of the batch runs. Every
        /// record is completed before Dispatch returns, so its lane reservation is back and its
        /// Spot is idle from then on. Returns the number of records received (0 when nothing was
        /// ready).
        ///
        /// The handler may call the node (send, create, close other Spots, Dispose). Several
        /// threads may dispatch at once; each record goes to one of them. On a manual clock,
        /// work becomes ready at <see cref="Advance"/> (TimeSpan.Zero suffices).</summary>
        public int Dispatch(Action<SpotWork> handler, TimeSpan timeout)
        {
            if (handler == null) throw new ArgumentNullException("handler");
            long ns = Durations.TimeoutNs(timeout, "timeout");
            ThrowIfDisposed();
            return DispatchWith(handler, ns);
        }

        /// <summary>One Dispatch call's state, reached from the run function through a GCHandle.</summary>
        sealed class DispatchCall
        {
            internal Node Node;
            internal Action<SpotWork> Handler;
            internal List<SpotWorkFailedEventArgs> Failed;
            internal Exception Error;
            /// <summary>A reference on the node handle, taken when the first record runs: a Dispose
            /// from a handler frees the node once the batch's outcomes are back.</summary>
            internal bool Added;
        }

        // One delegate for every node: kept alive here, its pointer handed to spot_node_run.
        static readonly unsafe spot_node_run_fn s_run = RunOne;
        static readonly IntPtr s_runPtr = Marshal.GetFunctionPointerForDelegate(s_run);

        unsafe int DispatchWith(Action<SpotWork> handler, long timeoutNs)
        {
            var call = new DispatchCall { Node = this, Handler = handler };
            var env = GCHandle.Alloc(call);
            var pass = new spot_pass();
            pass.struct_size = (uint)sizeof(spot_pass);
            int s;
            string msg = null;
            try
            {
                // The raw id, not ref-counted while it waits: a Dispose on another thread frees the
                // node at once, which wakes this wait (SPOT_E_CLOSED / SPOT_E_INVALID_HANDLE).
                s = Native.spot_node_run(_handle.Id, timeoutNs, (UIntPtr)_cap, s_runPtr, GCHandle.ToIntPtr(env), &pass);
                if (s != 0) msg = Native.LastError();
            }
            finally
            {
                env.Free();
                // A Dispose during the batch frees the node here, on this thread.
                if (call.Added) _handle.DangerousRelease();
            }
            if (call.Failed != null) RaiseFailed(call.Failed);
            if (s != 0)
            {
                // Disposed by a handler of this batch: the batch ended with it, no error.
                if (call.Added && IsDisposed) { }
                else if (IsDisposed && (s == (int)SpotStatus.InvalidHandle || s == (int)SpotStatus.Closed))
                    throw new ObjectDisposedException("SpotTimer.Node", msg);
                else throw SpotTimerException.From(s, msg);
            }
            if (call.Error != null) throw call.Error;
            return (int)((ulong)pass.ran + (ulong)pass.not_started);
        }

        /// <summary>The run function: one record through the handler. No exception leaves it.</summary>
        static unsafe uint RunOne(IntPtr env, spot_node_record* r)
        {
            DispatchCall call = null;
            try
            {
                call = (DispatchCall)GCHandle.FromIntPtr(env).Target;
                Node node = call.Node;
                // Disposed before or by a handler of this batch: the rest does not start.
                if (node.IsDisposed) return C.OUTCOME_NOT_STARTED;
                if (!call.Added) node._handle.DangerousAddRef(ref call.Added);
                var work = new SpotWork(ref *r, CopyPayload(ref *r));
                try
                {
                    call.Handler(work);
                    return C.OUTCOME_OK;
                }
                catch (Exception e)
                {
                    if (call.Failed == null) call.Failed = new List<SpotWorkFailedEventArgs>();
                    call.Failed.Add(new SpotWorkFailedEventArgs(work, e));
                    return C.OUTCOME_FAILED;
                }
            }
            catch (Exception e)
            {
                // A binding failure (out of memory copying, the handle disposed): the record does
                // not start, the error goes to the caller.
                if (call != null && call.Error == null && !(e is ObjectDisposedException)) call.Error = e;
                return C.OUTCOME_NOT_STARTED;
            }
        }

        static unsafe byte[] CopyPayload(ref spot_node_record r)
        {
            ulong len = (ulong)r.payload_len;
            if (len == 0 || r.payload == IntPtr.Zero) return s_empty;
            var bytes = new byte[checked((int)len)];
            Marshal.Copy(r.payload, bytes, 0, bytes.Length);
            return bytes;
        }

        static readonly byte[] s_empty = new byte[0];

        void RaiseFailed(List<SpotWorkFailedEventArgs> failed)
        {
            EventHandler<SpotWorkFailedEventArgs> h;
            lock (_eventLock) h = _failed;
            if (h == null) return;
            foreach (var a in failed)
            {
                try { h(this, a); }
                catch (Exception) { }
            }
        }

        /// <summary>Shuts the node down: every Spot closes (<see cref="NodeOptions.OnClose"/> with
        /// NodeShutdown), its timers end, and the native node is freed — at once, or, while calls
        /// are in progress on other threads or this one (a Dispatch handler), when the last of
        /// them returns. A Dispatch waiting for work on another thread wakes with
        /// ObjectDisposedException. Idempotent.</summary>
        public void Dispose()
        {
            if (Interlocked.Exchange(ref _disposed, 1) != 0) return;
            _handle.Dispose();
        }
    }
}
