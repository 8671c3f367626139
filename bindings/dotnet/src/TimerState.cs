using System;
using System.Runtime.InteropServices;
using System.Threading.Tasks;
using SpotTimer.Interop;

namespace SpotTimer
{
    /// <summary>Managed state of one registration: its handler and cleanup. A record's user_data is
    /// a <see cref="GCHandle"/> of it (no lookup per record), freed by the release hook. The
    /// library runs that hook while a record of the generation is with the host only when the
    /// runtime closes; the hook then leaves the handle to <see cref="RuntimeCore.FreeReleased"/>,
    /// which runs once no batch is in progress, so a record in hand always names a live handle.</summary>
    internal sealed class TimerState // referenced by Tick (lazy Timer)
    {
        public RuntimeCore Core;
        public Action<Tick> Sync;
        public Func<Tick, Task> Async;
        public Action OnRelease;
        public volatile string CleanupError;
        public volatile bool Ended;
        public spot_timer Handle;

        /// <summary>A Timer for a tick: equal (==, Equals) to the one that registered this
        /// generation. The state keeps no reference to that Timer or to the Runtime (the handle
        /// that roots this state must not keep an abandoned Runtime alive): the Runtime comes
        /// from the core's one weak reference.</summary>
        public Timer GetTimer()
        {
            Runtime rt;
            if (Core.RuntimeRef == null || !Core.RuntimeRef.TryGetTarget(out rt)) return null;
            var t = new Timer(rt, this, OwnerId, Key);
            t.Id = Handle;
            return t;
        }
        public ulong OwnerId, Key;
        public Task<CancelResult> CancelTask;
    }
}
