using System;
using System.Collections.Concurrent;
using System.Runtime.InteropServices;
using System.Threading;
using System.Threading.Tasks;
using SpotTimer.Interop;

namespace SpotTimer
{
    // The native callbacks: the release hook of every timer and callback-mode delivery.
    internal sealed unsafe partial class RuntimeCore
    {
        // ------------------------------------------------------------------ release hook

        static unsafe int ReleaseThunk(IntPtr userData, byte* msg, UIntPtr msgLen)
        {
            try
            {
                if (userData == IntPtr.Zero) return 0;
                var st = StateTable.Get(userData);
                // Once per generation. Outside a close no record of it is with the host any more;
                // during a close the batch in progress may still name it.
                if (st != null && st.Core.Disposed) st.Core._releasedWhileClosing.Enqueue(userData);
                else if (st != null) StateTable.Remove(userData);
                if (st == null) return 0;
                st.Ended = true;
                // Taken, not read: a Reset that could not move in place may take it at once.
                Action onRelease = Interlocked.Exchange(ref st.OnRelease, null);
                st.Sync = null; st.Async = null; st.AsyncToken = null;
                try
                {
                    if (onRelease == null) return 0;
                    try
                    {
                        onRelease();
                        return 0;
                    }
                    catch (Exception e)
                    {
                        string m = string.IsNullOrEmpty(e.Message) ? e.GetType().Name : e.Message;
                        st.CleanupError = m;
                        Native.WriteMessage(msg, msgLen, m);
                        return 1;
                    }
                }
                finally
                {
                    // The generation's result stays with its state (and every Timer of it) for
                    // as long as they live, whatever becomes of its slot in the library.
                    uint why = Native.spot_release_reason();
                    if (why <= (uint)EndReason.RuntimeClosed) st.Confirm(why);
                    st.Finished = true;
                    // A handler token is cancelled (from the thread pool), a TickStream stops.
                    st.Core.NoteReleased(st);
                }
            }
            catch (Exception)
            {
                return 1;
            }
        }

        // ------------------------------------------------------------------ callback delivery

        // The outcome cells of the batch callback's batches (the library calls it from its
        // scheduler thread, one batch at a time).
        uint[] _callbackCells;

        static void BatchThunk(IntPtr env, spot_record* records, UIntPtr n, spot_completion* completions, UIntPtr* nCompletions)
        {
            try
            {
                var core = (RuntimeCore)GCHandle.FromIntPtr(env).Target;
                int count = (int)(ulong)n;
                int nc = 0;
                // Cells as a session's batch has them, then one completion per written cell
                // (a kept record completes through the pending queue; a notice takes none).
                if (core._callbackCells == null || core._callbackCells.Length < count)
                    core._callbackCells = new uint[Math.Max(count, 64)];
                fixed (uint* cells = core._callbackCells)
                {
                    for (int i = 0; i < count; i++) cells[i] = C.BATCH_PENDING;
                    UIntPtr position;
                    core.RunBatch(records, count, cells, &position);
                    for (int i = 0; i < count; i++)
                    {
                        uint o = cells[i];
                        // A tick a dispose stopped before: not started.
                        if (o == C.BATCH_PENDING && records[i].kind == C.RECORD_TICK) o = C.OUTCOME_NOT_STARTED;
                        if (o == C.BATCH_PENDING || o == C.BATCH_KEPT) continue;
                        completions[nc].token = records[i].token;
                        completions[nc].outcome = o;
                        completions[nc].reserved = 0;
                        nc++;
                    }
                }
                if (t_dispatching == null) core.FreeReleased();
                // Room left: hand back async completions that are already waiting.
                spot_completion c;
                while (nc < count && core._pending.TryDequeue(out c)) completions[nc++] = c;
                *nCompletions = (UIntPtr)nc;
            }
            catch (Exception)
            {
                // Nothing may unwind into native code. Records left uncompleted stay in flight;
                // that only happens on a binding bug.
            }
        }

        static void FinalizerThunk(IntPtr env)
        {
            try
            {
                var h = GCHandle.FromIntPtr(env);
                var core = h.Target as RuntimeCore;
                if (core != null) core.FreeReleased(); // the runtime is gone: no batch can follow
                if (h.IsAllocated) h.Free();
            }
            catch (Exception) { }
        }

        /// <summary>Gives back the table entries of states released during a close; called where no
        /// batch is in progress on this runtime (the end of a top-level batch, the end of a
        /// dispose).</summary>
        internal void FreeReleased()
        {
            IntPtr p;
            while (_releasedWhileClosing.TryDequeue(out p)) StateTable.Remove(p);
        }
    }
}
