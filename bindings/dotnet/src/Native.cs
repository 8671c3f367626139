// P/Invoke declarations of the spot-timer C ABI (include/spot_timer.h).
//
// Every struct here mirrors its C counterpart field by field, with the C field names, so
// that tests/LayoutTests.cs can compare Marshal.SizeOf / Marshal.OffsetOf with the native
// compiler's sizeof / offsetof, and every [DllImport] with the library's exports.
// Only blittable types are used: records are read straight from the exchange buffer.
using System;
using System.Runtime.InteropServices;

namespace SpotTimer.Interop
{
    /// <summary>Marks a managed mirror of a C struct of the header.</summary>
    [AttributeUsage(AttributeTargets.Struct)]
    public sealed class NativeStructAttribute : Attribute
    {
        public NativeStructAttribute(string cName) { CName = cName; }
        public string CName { get; private set; }
    }

    /// <summary>Status codes (spot_status).</summary>
    public enum SpotStatus
    {
        Ok = 0,
        NullArgument = 1,
        InvalidArgument = 2,
        UnknownEnum = 3,
        BadStructSize = 4,
        InvalidHandle = 5,
        StaleTimer = 6,
        UnknownOwner = 7,
        LeaseExpired = 8,
        Revoked = 9,
        InvalidCompletion = 10,
        Timeout = 11,
        WouldDeadlock = 12,
        CleanupFailed = 13,
        Closed = 14,
        NotManualClock = 15,
        CapacityExhausted = 16,
        Os = 17,
        Panic = 18,
        WrongDeliveryMode = 19,
        // The Spot lifecycle (ABI 2.1).
        NotFound = 20,
        StaleRoute = 21,
        Unavailable = 22,
        CreationFailed = 23,
        WrongKind = 24,
        ApplicationLaneFull = 25,
        LifecycleLaneFull = 26,
        NodeInboundFull = 27,
        ActiveCap = 28,
        Store = 29,
    }

    /// <summary>Header #define values (SPOT_ + field name).</summary>
    public static class C
    {
        public const uint CLOCK_REAL = 0, CLOCK_MANUAL = 1;
        public const uint DELIVERY_EXCHANGE = 0, DELIVERY_CALLBACK = 1;
        public const uint GATE_SERIAL = 0, GATE_CONCURRENT = 1;
        public const uint OUTCOME_OK = 0, OUTCOME_FAILED = 1, OUTCOME_DEFERRED = 2, OUTCOME_NOT_STARTED = 3;
        public const uint RECORD_TICK = 0, RECORD_CANCEL_DONE = 1;
        public const ulong FIRST_DUE_DEFAULT = ulong.MaxValue;
        // The Spot lifecycle (ABI 2.1).
        public const uint WORK_MESSAGE = 0, WORK_TICK = 1;
        public const uint LANE_APPLICATION = 0, LANE_LIFECYCLE = 1;
        public const uint KIND_INVALID = 0, KIND_ENTRY = 1, KIND_USER = 2, KIND_INSTANCE = 3;
        public const uint CLOSE_IDLE_EVICTED = 0, CLOSE_CLOSED = 1, CLOSE_NODE_SHUTDOWN = 2;
        public const uint TARGET_SPOT = 0, TARGET_ENTRY_ACTOR = 1;
        /// <summary>The ABI version this binding is built against: (major &lt;&lt; 16) | minor.</summary>
        public const uint ABI_VERSION = 0x00020001; // 2.1: spot_runtime_close, the Spot lifecycle
    }

    [NativeStruct("spot_timer")]
    [StructLayout(LayoutKind.Sequential)]
    public struct spot_timer
    {
        public ulong generation;
        public uint slot;
        public uint reserved;
    }

    [NativeStruct("spot_runtime_config")]
    [StructLayout(LayoutKind.Sequential)]
    public struct spot_runtime_config
    {
        public uint struct_size;
        public uint clock;
        public uint delivery;
        public uint reserved;
        public IntPtr callback;            // spot_batch_fn
        public IntPtr callback_env;
        public IntPtr callback_finalizer;  // spot_finalizer_fn
        public ulong resolution_ns;        // ABI 2.0
    }

    [NativeStruct("spot_timer_spec")]
    [StructLayout(LayoutKind.Sequential)]
    public struct spot_timer_spec
    {
        public uint struct_size;
        public uint policy;
        public ulong period_ns;
        public ulong first_due_ns;
        public ulong max_catch_up_ticks;
        public ulong reserved;
    }

    [NativeStruct("spot_record")]
    [StructLayout(LayoutKind.Sequential)]
    public struct spot_record
    {
        public uint kind;
        public uint end_reason;
        public int status;
        public uint reserved;
        public ulong token;
        public spot_timer timer;
        public ulong owner_id;
        public ulong key;
        public IntPtr user_data;
        public ulong delivery_index;
        public ulong scheduled_index;
        public ulong skipped_ticks;
        public IntPtr live_word;           // uint64_t *
        public ulong live_value;
        public ulong started_value;
        public IntPtr lease_word;          // const uint64_t *
        public ulong tag;
    }

    [NativeStruct("spot_completion")]
    [StructLayout(LayoutKind.Sequential)]
    public struct spot_completion
    {
        public ulong token;
        public uint outcome;
        public uint reserved;
    }

    [NativeStruct("spot_stats")]
    [StructLayout(LayoutKind.Sequential)]
    public struct spot_stats
    {
        public uint struct_size;
        public uint reserved;
        public ulong scheduler_threads;
        public ulong wakeup_primitives;
        public ulong os_timers;
        public ulong queue_len;
        public ulong live_timers;
        public ulong owners;
        public ulong wakeups;
        public ulong batches;
        public ulong records_published;
        public ulong host_crossings;
        public ulong records_received;
        public ulong completed_ok;
        public ulong completed_failed;
        public ulong completed_deferred;
        public ulong not_started;
        public ulong ticks_skipped;
        public ulong ticks_dropped_authority;
        public ulong registered;
        public ulong ended;
        public ulong cleanup_failures;
        public ulong invalid_completions;
        public ulong stale_entries_dropped;
        public ulong compactions;
        public ulong gate_waits;
        // ABI 1.1
        public ulong ticks_due;
        public ulong ticks_discarded;
        // ABI 2.0
        public ulong records_taken_back;
        public ulong records_abandoned;
        public ulong scheduler_wakes_by_hosts;
    }

    [NativeStruct("spot_timer_stats")]
    [StructLayout(LayoutKind.Sequential)]
    public struct spot_timer_stats
    {
        public uint struct_size;
        public uint reserved;
        public ulong delivered;
        public ulong failed;
        public ulong skipped_ticks;
        public ulong last_scheduled_index;
    }

    // ---- the Spot lifecycle (ABI 2.1) ----

    [NativeStruct("spot_node_config")]
    [StructLayout(LayoutKind.Sequential)]
    public struct spot_node_config
    {
        public uint struct_size;
        public uint clock;
        public ulong node_id;
        public ulong entry_spot;
        public ulong application_lane_items;
        public ulong application_lane_bytes;
        public ulong lifecycle_lane_items;
        public ulong lifecycle_lane_bytes;
        public ulong node_inbound_bytes;
        public ulong active_cap;
        public ulong instance_idle_timeout_ns;
        public ulong owner_lease_ns;
        public IntPtr factory;             // spot_factory_fn
        public IntPtr on_close;            // spot_closing_fn
        public IntPtr env;
    }

    [NativeStruct("spot_node_completion")]
    [StructLayout(LayoutKind.Sequential)]
    public struct spot_node_completion
    {
        public ulong token;
        public uint outcome;
        public uint reserved;
    }

    [NativeStruct("spot_node_record")]
    [StructLayout(LayoutKind.Sequential)]
    public struct spot_node_record
    {
        public uint kind;
        public uint lane;
        public ulong spot_id;
        public ulong token;
        public IntPtr payload;             // const uint8_t *
        public UIntPtr payload_len;        // size_t
        public ulong key;
        public ulong value;
        public ulong delivery_index;
        public ulong scheduled_index;
        public ulong skipped_ticks;
    }

    [NativeStruct("spot_relocation_target")]
    [StructLayout(LayoutKind.Sequential)]
    public struct spot_relocation_target
    {
        public uint what;
        public uint spot_kind;
        public ulong id;
    }

    [NativeStruct("spot_node_stats")]
    [StructLayout(LayoutKind.Sequential)]
    public struct spot_node_stats
    {
        public uint struct_size;
        public uint reserved;
        public ulong active_spots;
        public ulong created;
        public ulong factory_runs;
        public ulong creation_failures;
        public ulong evicted;
        public ulong closed;
        public ulong messages_admitted;
        public ulong messages_completed;
        public ulong messages_dropped;
        public ulong rejected_application_lane;
        public ulong rejected_lifecycle_lane;
        public ulong rejected_node_inbound;
        public ulong rejected_activation;
        public ulong stale_routes;
        public ulong ticks_deferred;
        public ulong eviction_passes;
        public ulong eviction_examined;
    }

    [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
    internal delegate int spot_factory_fn(IntPtr env, ulong spot_id, uint kind, IntPtr msg, UIntPtr msg_len);

    [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
    internal delegate void spot_closing_fn(IntPtr env, ulong spot_id, uint kind, uint reason);

    [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
    internal unsafe delegate void spot_batch_fn(IntPtr env, spot_record* records, UIntPtr n,
                                                spot_completion* completions, UIntPtr* n_completions);

    [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
    internal delegate void spot_finalizer_fn(IntPtr env);

    [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
    internal delegate int spot_release_fn(IntPtr user_data, IntPtr msg, UIntPtr msg_len);

    /// <summary>The raw entry points. Thread-safety and ownership as stated in the header.</summary>
    public static unsafe class Native
    {
        public const string Lib = "spot_timer";

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern IntPtr spot_status_name(int status);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern UIntPtr spot_last_error(byte* buf, UIntPtr len);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern uint spot_abi_version();

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_runtime_new(spot_runtime_config* cfg, ulong* out_rt);

        /// <summary>ABI 2.1: ends every live timer (RuntimeClosed, release hooks run), wakes blocked
        /// calls with SPOT_E_CLOSED, stops the scheduler; the handle stays valid (cancels give the
        /// recorded terminal results) until spot_runtime_free.</summary>
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_runtime_close(ulong rt);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_runtime_free(ulong rt);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_owner_acquire(ulong rt, ulong owner_id, ulong lease_ns, uint gate, ulong* out_epoch);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_owner_renew(ulong rt, ulong owner_id, ulong epoch, ulong lease_ns);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_owner_revoke(ulong rt, ulong owner_id, ulong epoch);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_owner_release(ulong rt, ulong owner_id, ulong epoch);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_owner_gate_enter(ulong rt, ulong owner_id, long timeout_ns);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_owner_gate_leave(ulong rt, ulong owner_id);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_timer_register(ulong rt, ulong owner_id, ulong epoch, ulong key,
                                                     spot_timer_spec* spec, IntPtr user_data, IntPtr release,
                                                     spot_timer* out_timer);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_timer_cancel(ulong rt, spot_timer t, long timeout_ns, uint* out_end_reason);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_timer_cancel_async(ulong rt, spot_timer t, ulong tag, uint* out_done, uint* out_end_reason);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_timer_stats(ulong rt, spot_timer t, spot_timer_stats* out_stats);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_exchange(ulong rt, spot_completion* completions, UIntPtr n_completions,
                                               spot_record* out_records, UIntPtr capacity, long timeout_ns,
                                               UIntPtr* out_count);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_complete(ulong rt, spot_completion* completions, UIntPtr n);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_record_begin(ulong rt, spot_record* rec);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_wakeup_fd(ulong rt, int* out_fd);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_advance(ulong rt, ulong ns);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_now(ulong rt, ulong* out_ns);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_stats(ulong rt, spot_stats* out_stats);

        // Metrics: Runtime.LatenessQuantile and Runtime.Prometheus.
        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_lateness_quantile(ulong rt, double q, ulong* out_ns);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_prometheus(ulong rt, byte* prefix, byte* buf, UIntPtr cap, UIntPtr* out_len);

        // ---- the Spot lifecycle (ABI 2.1): stores and nodes, generation-tagged handles of
        // their own (0, freed and made-up handles give SPOT_E_INVALID_HANDLE) ----

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_store_new(ulong* out_store);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_store_free(ulong store);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_store_mark_down(ulong store, ulong node_id);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_store_expire_node(ulong store, ulong node_id);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_node_start(spot_node_config* cfg, ulong store, ulong* out_node);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_node_free(ulong node);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_node_send(ulong node, ulong spot_id, uint lane, byte* payload, UIntPtr payload_len);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_node_send_or_create(ulong node, ulong spot_id, byte* payload, UIntPtr payload_len,
                                                          ulong* out_generation);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_node_create_user_spot(ulong node, ulong spot_id, ulong* out_generation);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_node_spot_kind(ulong node, ulong spot_id, uint* out_kind);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_node_close_spot(ulong node, ulong spot_id, uint kind);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_node_every(ulong node, ulong spot_id, ulong key, ulong period_ns, ulong value);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_node_evict_idle(ulong node, UIntPtr* out_evicted);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_node_advance(ulong node, ulong ns);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_node_exchange(ulong node, spot_node_completion* done, UIntPtr n_done,
                                                    spot_node_record* out_records, UIntPtr cap, long timeout_ns,
                                                    UIntPtr* out_n);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_node_begin(ulong node, ulong token);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_node_complete(ulong node, spot_node_completion* done, UIntPtr n_done);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_node_lane_use(ulong node, ulong spot_id, uint lane, ulong* out_items, ulong* out_bytes);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_node_add_entry_actor(ulong node, ulong actor_id);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_node_relocation_targets(ulong node, spot_relocation_target* out_targets, UIntPtr cap,
                                                              UIntPtr* out_n, UIntPtr* out_total);

        [DllImport(Lib, CallingConvention = CallingConvention.Cdecl)]
        public static extern int spot_node_stats(ulong node, spot_node_stats* out_stats);

        /// <summary>The calling thread's last error message ("" if none).</summary>
        public static string LastError()
        {
            byte* buf = stackalloc byte[1024];
            ulong full = (ulong)spot_last_error(buf, (UIntPtr)1024);
            if (full == 0) return "";
            int len = 0;
            while (len < 1023 && buf[len] != 0) len++;
            return System.Text.Encoding.UTF8.GetString(buf, len);
        }

        public static string StatusName(int status)
        {
            IntPtr p = spot_status_name(status);
            return p == IntPtr.Zero ? "SPOT_E_UNKNOWN_STATUS" : Marshal.PtrToStringAnsi(p);
        }
    }
}
