using System;
using SpotTimer.Interop;

namespace SpotTimer
{
    /// <summary>Owns one native store handle (spot_store_new); releasing it calls spot_store_free.
    /// Nodes started on the store keep their own reference: freeing it before them is safe.</summary>
    public sealed class StoreSafeHandle : System.Runtime.InteropServices.SafeHandle
    {
        readonly ulong _id;

        internal StoreSafeHandle(ulong id) : base(IntPtr.Zero, true)
        {
            _id = id;
            SetHandle(new IntPtr(1)); // "owned" marker; the real value is the 64-bit id
        }

        /// <summary>The native store handle value.</summary>
        public ulong Id { get { return _id; } }

        /// <summary>False while the handle owns a store.</summary>
        public override bool IsInvalid { get { return handle == IntPtr.Zero; } }

        /// <summary>Frees the native store (spot_store_free).</summary>
        protected override bool ReleaseHandle()
        {
            int s = Native.spot_store_free(_id);
            return s == 0 || s == (int)SpotStatus.InvalidHandle;
        }
    }

    /// <summary>A Location Store (docs/lifecycle.md, L7). <c>new Store()</c> is the embedded store
    /// with its in-process cluster: <see cref="Node"/>s started on the same Store are simulated
    /// nodes of one cluster, sharing the record of which node owns which Spot.
    /// <see cref="Etcd"/> connects to etcd instead: nodes of several processes agree there.
    /// Thread-safe. After <see cref="Dispose"/> every call (and starting a node on it) throws
    /// ObjectDisposedException.</summary>
    public sealed class Store : IDisposable
    {
        readonly StoreSafeHandle _handle;

        /// <summary>A new embedded Location Store (spot_store_new).</summary>
        public Store()
        {
            ulong id;
            int s;
            unsafe { s = Native.spot_store_new(&id); }
            if (s != 0) throw SpotTimerException.From(s, Native.LastError());
            _handle = new StoreSafeHandle(id);
            IsEtcd = false;
        }

        Store(ulong id, bool etcd)
        {
            _handle = new StoreSafeHandle(id);
            IsEtcd = etcd;
        }

        /// <summary>Connects to etcd (spot_store_new_etcd): a Location Store shared by the nodes of
        /// several processes. <paramref name="endpoints"/>: client URLs such as
        /// <c>http://127.0.0.1:2379</c>; <paramref name="prefix"/>: every key of the store starts with
        /// it (must end with '/'); <paramref name="leaseTtl"/>: the node's owner lease in etcd (whole
        /// seconds, at least 2 s; default 10 s); timeouts default to 5 s. Throws
        /// <see cref="LocationStoreException"/> when etcd cannot be reached (the message names the
        /// endpoints), <see cref="SpotInvalidArgumentException"/> for a bad configuration.</summary>
        public static Store Etcd(string[] endpoints, string prefix = null, TimeSpan? leaseTtl = null,
                                 TimeSpan? connectTimeout = null, TimeSpan? requestTimeout = null)
        {
            if (endpoints == null) throw new ArgumentNullException("endpoints");
            byte[] ep = Utf8Z(string.Join(",", endpoints));
            byte[] pf = prefix == null ? null : Utf8Z(prefix);
            var cfg = new spot_etcd_config();
            ulong id;
            int s;
            unsafe
            {
                cfg.struct_size = (uint)sizeof(spot_etcd_config);
                cfg.lease_ttl_ns = Ns(leaseTtl, "leaseTtl");
                cfg.connect_timeout_ns = Ns(connectTimeout, "connectTimeout");
                cfg.request_timeout_ns = Ns(requestTimeout, "requestTimeout");
                fixed (byte* e = ep)
                fixed (byte* p = pf)
                {
                    cfg.endpoints = (IntPtr)e;
                    cfg.prefix = (IntPtr)p;
                    s = Native.spot_store_new_etcd(&cfg, &id);
                }
            }
            if (s != 0) throw SpotTimerException.From(s, Native.LastError());
            return new Store(id, true);
        }

        static byte[] Utf8Z(string v)
        {
            var b = System.Text.Encoding.UTF8.GetBytes(v);
            Array.Resize(ref b, b.Length + 1);
            return b;
        }

        static ulong Ns(TimeSpan? d, string name)
        {
            if (!d.HasValue) return 0;
            if (d.Value <= TimeSpan.Zero)
                throw new ArgumentOutOfRangeException(name, d.Value, name + " must be positive");
            return (ulong)d.Value.Ticks * 100;
        }

        /// <summary>True for an etcd store (<see cref="Etcd"/>).</summary>
        public bool IsEtcd { get; private set; }

        /// <summary>The etcd requests this store has made (0 for the embedded store): a
        /// steady-state send makes none.</summary>
        public ulong Requests
        {
            get
            {
                bool added = false;
                try
                {
                    ulong id = Enter(ref added);
                    ulong n;
                    unsafe { Check(Native.spot_store_requests(id, &n)); }
                    return n;
                }
                finally { if (added) _handle.DangerousRelease(); }
            }
        }

        /// <summary>The native store handle.</summary>
        public StoreSafeHandle Handle { get { return _handle; } }
        /// <summary>True once <see cref="Dispose"/> was called.</summary>
        public bool IsDisposed { get { return _handle.IsClosed; } }

        /// <summary>Marks node <paramref name="nodeId"/> unusable while its lease runs: its Spots are
        /// Unavailable (<see cref="SpotUnavailableException"/>) and nothing re-creates them (L3).</summary>
        public void MarkDown(ulong nodeId)
        {
            bool added = false;
            try
            {
                ulong id = Enter(ref added);
                Check(Native.spot_store_mark_down(id, nodeId));
            }
            finally { if (added) _handle.DangerousRelease(); }
        }

        /// <summary>Ends node <paramref name="nodeId"/>'s lease: its authorities are released, its
        /// Spots' ids are Missing again and an explicit intent may create them elsewhere (L3).</summary>
        public void ExpireNode(ulong nodeId)
        {
            bool added = false;
            try
            {
                ulong id = Enter(ref added);
                Check(Native.spot_store_expire_node(id, nodeId));
            }
            finally { if (added) _handle.DangerousRelease(); }
        }

        /// <summary>The raw id with the handle ref-counted (no free during the call); pair with
        /// DangerousRelease when <paramref name="added"/>. ObjectDisposedException after Dispose.</summary>
        internal ulong Enter(ref bool added)
        {
            if (_handle.IsClosed) throw new ObjectDisposedException("SpotTimer.Store");
            try { _handle.DangerousAddRef(ref added); }
            catch (ObjectDisposedException) { throw new ObjectDisposedException("SpotTimer.Store"); }
            return _handle.Id;
        }

        internal void Exit() { _handle.DangerousRelease(); }

        static void Check(int status)
        {
            if (status != 0) throw SpotTimerException.From(status, Native.LastError());
        }

        /// <summary>Frees the store (its nodes keep running: the library holds its own reference).
        /// Idempotent.</summary>
        public void Dispose() { _handle.Dispose(); }
    }
}
