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

    /// <summary>An embedded Location Store with its in-process cluster (docs/lifecycle.md, L7):
    /// <see cref="Node"/>s started on the same Store are simulated nodes of one cluster, sharing
    /// the record of which node owns which Spot. Thread-safe. After <see cref="Dispose"/> every
    /// call (and starting a node on it) throws ObjectDisposedException.</summary>
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
