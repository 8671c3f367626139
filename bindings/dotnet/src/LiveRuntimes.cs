using System;
using System.Collections.Generic;

namespace SpotTimer
{
    /// <summary>The runtimes still open, disposed when the process exits. A dispatcher thread waits
    /// inside the native library, where the managed runtime's shutdown cannot stop it: without this,
    /// a program that ends without disposing its Runtime would never exit.</summary>
    internal static class LiveRuntimes
    {
        static readonly object s_lock = new object();
        static readonly HashSet<RuntimeCore> s_open = new HashSet<RuntimeCore>();
        static bool s_hooked;

        internal static void Add(RuntimeCore core)
        {
            lock (s_lock)
            {
                if (!s_hooked)
                {
                    AppDomain.CurrentDomain.ProcessExit += OnExit;
                    AppDomain.CurrentDomain.DomainUnload += OnExit;
                    s_hooked = true;
                }
                s_open.Add(core);
            }
        }

        /// <summary>Called when a dispose begins (Dispose or the handle's finalizer).</summary>
        internal static void Remove(RuntimeCore core)
        {
            lock (s_lock) s_open.Remove(core);
        }

        static void OnExit(object sender, EventArgs e)
        {
            RuntimeCore[] open;
            lock (s_lock)
            {
                open = new RuntimeCore[s_open.Count];
                s_open.CopyTo(open);
            }
            foreach (var core in open)
            {
                Runtime rt;
                if (core.RuntimeRef == null || !core.RuntimeRef.TryGetTarget(out rt)) continue;
                try { rt.Dispose(); }
                catch (Exception) { } // nothing may escape an exit handler
            }
        }
    }
}
