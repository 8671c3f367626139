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
        /// <summary>The ABI version this binding is built against: (major &lt;&lt; 16) | minor.</summary>
        public const uint ABI_VERSION = 0x00020001; // 2.1: spot_runtime_close
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
