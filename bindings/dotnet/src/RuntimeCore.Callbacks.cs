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
                if (st == null) return 0;
                // Once per generation. Outside a close no record of it is with the host any more;
                // during a close the batch in progress may still name it.
                if (st.Core.Disposed) st.Core._releasedWhileClosing.Enqueue(userData);
                else StateTable.Remove(userData);
                string failure = Finish(st, Native.spot_release_reason());
                if (failure == null) return 0;
                Native.WriteMessage(msg, msgLen, failure);
                return 1;
            }
            catch (Exception)
            {
                return 1;
            }
        }

        /// <summary>The close's hand-back: <paramref name="n"/> generations ended RuntimeClosed, in
        /// place of as many release hooks. Their entries are given back at once: the close runs
        /// where no batch of this runtime is in progress (<see cref="CloseAndFree"/>), so no
        /// record in hand names them.</summary>
        static unsafe void HandBackThunk(IntPtr env, IntPtr userData, UIntPtr n)
        {
            try
            {
                var items = (IntPtr*)userData;
                int count = (int)(ulong)n;
                for (int i = 0; i < count; i++)
                {
                    var st = StateTable.Get(items[i]);
                    if (st != null) Finish(st, (uint)EndReason.RuntimeClosed);
                }
                StateTable.RemoveAll(items, count);
            }
            catch (Exception)
            {
                // Nothing may unwind into native code.
            }
        }

        /// <summary>The end of generation <paramref name="st"/> (<paramref name="why"/>, as the
        /// library says): its OnRelease runs, its result is recorded in the state (and so in every
        /// Timer of it) for as long as they live, whatever becomes of its slot in the library, a
        /// handler token is cancelled and a TickStream stops. Returns the OnRelease's failure
        /// message, or null.</summary>
        static string Finish(Timer st, uint why)
        {
            st.Ended = true;
            // Taken, not read: a Reset that could not move in place may take it at once.
            Action onRelease = st.TakeOnRelease();
            st.DropHandlers();
            string failure = null;
            try
            {
                if (onRelease != null) onRelease();
            }
            catch (Exception e)
            {
                failure = string.IsNullOrEmpty(e.Message) ? e.GetType().Name : e.Message;
                st.CleanupError = failure;
            }
            finally
            {
                if (why <= (uint)EndReason.RuntimeClosed) st.Confirm(why);
                st.Finished = true;
                st.Core.NoteReleased(st);
            }
            return failure;
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
