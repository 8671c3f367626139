using System;
using System.Threading;

namespace SpotTimer
{
    /// <summary>The managed states the native runtimes carry as user data, by index. A record's or
    /// a release hook's user_data is one more than an index into one table of the process, so a
    /// million live timers are one array the collector scans by the cards written since its last
    /// collection, not a million GC handles it scans as roots at every collection. An entry is
    /// taken at registration and given back by the generation's release hook (during a close, once
    /// no batch is in progress: <see cref="RuntimeCore.FreeReleased"/>), so a record in hand always
    /// names a live entry (see <see cref="Timer"/>).</summary>
    internal static class StateTable
    {
        static readonly object s_lock = new object();
        // Replaced, never shrunk, under the lock; read without it. A reader reaches an entry only
        // through a record or a hook of a generation registered after the entry was written.
        static Timer[] s_items = new Timer[1024];
        static int[] s_free = new int[1024];
        static int s_freeCount, s_next;

        /// <summary>Keeps <paramref name="state"/>; returns the user data that names it.</summary>
        public static IntPtr Add(Timer state)
        {
            lock (s_lock)
            {
                int i;
                if (s_freeCount > 0)
                {
                    i = s_free[--s_freeCount];
                }
                else
                {
                    if (s_next == s_items.Length)
                    {
                        var bigger = new Timer[s_items.Length * 2];
                        Array.Copy(s_items, bigger, s_items.Length);
                        Volatile.Write(ref s_items, bigger);
                        // Room for every entry to come back: the free list never grows on the
                        // cancel path (a large array allocated there costs a collection of
                        // every live timer).
                        Array.Resize(ref s_free, s_items.Length);
                    }
                    i = s_next++;
                }
                s_items[i] = state;
                return (IntPtr)(i + 1);
            }
        }

        /// <summary>The state <paramref name="userData"/> names, or null (zero, or out of range).</summary>
        public static Timer Get(IntPtr userData)
        {
            long i = (long)userData - 1;
            var items = Volatile.Read(ref s_items);
            return (ulong)i < (ulong)items.Length ? items[i] : null;
        }

        /// <summary>Gives back the entry <paramref name="userData"/> names (once per
        /// <see cref="Add"/>).</summary>
        public static void Remove(IntPtr userData)
        {
            int i = (int)((long)userData - 1);
            lock (s_lock)
            {
                s_items[i] = null;
                if (s_freeCount == s_free.Length) Array.Resize(ref s_free, s_free.Length * 2);
                s_free[s_freeCount++] = i;
            }
        }

        /// <summary>Gives back the entries of the <paramref name="count"/> user data at
        /// <paramref name="userData"/> (each once per <see cref="Add"/>), under one lock.</summary>
        public static unsafe void RemoveAll(IntPtr* userData, int count)
        {
            lock (s_lock)
            {
                if (s_free.Length - s_freeCount < count)
                    Array.Resize(ref s_free, Math.Max(s_free.Length * 2, s_freeCount + count));
                for (int k = 0; k < count; k++)
                {
                    int i = (int)((long)userData[k] - 1);
                    s_items[i] = null;
                    s_free[s_freeCount++] = i;
                }
            }
        }

        /// <summary>Entries in use (tests).</summary>
        internal static int Live
        {
            get { lock (s_lock) return s_next - s_freeCount; }
        }
    }
}
