// What the generated mirror of the header (Interop.g.cs) cannot say: the marker the layout
// test finds the mirrored structs by, and the helpers that read the library's strings.
using System;
using System.Runtime.InteropServices;

namespace SpotTimer.Interop
{
    /// <summary>Marks a managed mirror of a C struct of the header.</summary>
    [AttributeUsage(AttributeTargets.Struct)]
    public sealed class NativeStructAttribute : Attribute
    {
        /// <summary>Marks the struct as the mirror of <c>struct</c> <paramref name="cName"/>.</summary>
        public NativeStructAttribute(string cName) { CName = cName; }
        /// <summary>The C struct's name (tests/LayoutTests.cs compares the layouts).</summary>
        public string CName { get; private set; }
    }

    /// <summary>The entry points of libspot_timer (declared in Interop.g.cs) and helpers over them.</summary>
    public static unsafe partial class Native
    {
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

        /// <summary>The name of a status code (<c>spot_status_name</c>), e.g. "SPOT_E_TIMEOUT";
        /// "SPOT_E_UNKNOWN_STATUS" for a code the library does not know.</summary>
        public static string StatusName(int status)
        {
            IntPtr p = spot_status_name(status);
            return p == IntPtr.Zero ? "SPOT_E_UNKNOWN_STATUS" : Marshal.PtrToStringAnsi(p);
        }

        /// <summary>Writes <paramref name="text"/> as UTF-8 into a message buffer the library
        /// handed to a callback (NUL-terminated, cut on a character boundary). Never throws: it
        /// runs on the way back into native code.</summary>
        internal static void WriteMessage(byte* msg, UIntPtr capacity, string text)
        {
            try
            {
                ulong cap = (ulong)capacity;
                if (msg == null || cap == 0) return;
                byte[] bytes = System.Text.Encoding.UTF8.GetBytes(text ?? "");
                int n = (int)Math.Min((ulong)bytes.Length, cap - 1);
                while (n > 0 && n < bytes.Length && (bytes[n] & 0xC0) == 0x80) n--; // not inside a character
                for (int i = 0; i < n; i++) msg[i] = bytes[i];
                msg[n] = 0;
            }
            catch (Exception) { }
        }

        /// <summary>A call that writes text the way <c>spot_prometheus</c> does: into
        /// <c>buf</c> of <c>cap</c> bytes, its full length to <c>*len</c>.</summary>
        internal unsafe delegate int TextCall(byte* buf, UIntPtr cap, UIntPtr* len);

        /// <summary>Runs <paramref name="call"/> with a buffer large enough for its text (again
        /// with the length it reported, when the first was too small); its status, and the text
        /// when it is 0.</summary>
        internal static unsafe int ReadText(TextCall call, out string text)
        {
            text = null;
            int cap = 16384;
            while (true)
            {
                byte[] buf = new byte[cap];
                UIntPtr n;
                int s;
                fixed (byte* bp = buf) s = call(bp, (UIntPtr)cap, &n);
                if (s != 0) return s;
                ulong len = (ulong)n;
                if (len < (ulong)cap)
                {
                    text = System.Text.Encoding.ASCII.GetString(buf, 0, (int)len);
                    return 0;
                }
                cap = checked((int)len + 1);
            }
        }
    }
}
