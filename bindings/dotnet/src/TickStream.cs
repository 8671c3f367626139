using System;
using System.Threading;
using System.Threading.Tasks;

namespace SpotTimer
{
    /// <summary>A repeating timer without a handler, consumed in a loop like .NET 6's
    /// <c>System.Threading.PeriodicTimer</c> (which Mono does not have):
    /// <code>
    /// using (TickStream ticks = owner.Every(key: 1, period: TimeSpan.FromSeconds(1)))
    ///     while (await ticks.WaitForNextTickAsync(ct))
    ///         await PollAsync(ticks.LastTick);
    /// </code>
    /// Each tick of the timer is taken by a handler of the binding that only records it (it
    /// returns at once; the owner's gate and the overrun policy apply to it as to any handler).
    /// <see cref="WaitForNextTickAsync"/> completes with true at the next tick; ticks that arrive
    /// while nobody waits are coalesced into one, which the next call returns at once. It
    /// completes with false once the timer has ended or is ending: <see cref="Dispose"/>, a cancel
    /// of <see cref="Timer"/>, the key registered again, the owner revoked, released or acquired
    /// again, the runtime disposed, or any other end of the generation (a lease expiry, noticed
    /// when the generation ends). A tick still pending then is dropped, as PeriodicTimer does.
    /// Thread-safe; one wait at a time.</summary>
    public sealed class TickStream : IDisposable, IAsyncDisposable
    {
        readonly TickChannel _channel;

        internal TickStream(Timer timer, TickChannel channel)
        {
            Timer = timer;
            _channel = channel;
        }

        /// <summary>The underlying timer generation: <see cref="SpotTimer.Timer.GetStats"/>,
        /// <see cref="SpotTimer.Timer.CancelAsync"/> for its terminal result. Cancelling it ends the
        /// stream.</summary>
        public Timer Timer { get; private set; }

        /// <summary>The tick the most recent <see cref="WaitForNextTickAsync"/> that returned true
        /// stood for: the newest of the ticks coalesced into it (its
        /// <see cref="Tick.DeliveryIndex"/> minus the previous one's, less one, is how many more
        /// arrived unobserved; <see cref="Tick.SkippedTicks"/> counts those the overrun policy
        /// skipped). The default <see cref="Tick"/> before the first.</summary>
        public Tick LastTick { get { return _channel.Current; } }

        /// <summary>Waits for the next tick: true when it came (at once when a tick arrived since the
        /// previous call), false once the timer has ended (see <see cref="TickStream"/>). When
        /// <paramref name="cancellationToken"/> is cancelled first the task is cancelled
        /// (<see cref="TaskCanceledException"/>) and the timer goes on: a tick that arrives later is
        /// kept for the next call. A tick already pending wins over a cancelled token. Throws
        /// <see cref="InvalidOperationException"/> while another call's wait is still pending.</summary>
        public Task<bool> WaitForNextTickAsync(CancellationToken cancellationToken = default(CancellationToken))
        {
            return _channel.WaitAsync(cancellationToken);
        }

        /// <summary>Stops the stream (a pending wait and every later one complete with false) and
        /// cancels the timer without waiting, as <see cref="SpotTimer.Timer.Dispose"/>. Idempotent.</summary>
        public void Dispose()
        {
            _channel.Signal();
            Timer.Dispose();
        }

        /// <summary>Stops the stream and completes once the timer generation has ended, as
        /// <see cref="SpotTimer.Timer.DisposeAsync"/>.</summary>
        public ValueTask DisposeAsync()
        {
            _channel.Signal();
            return Timer.DisposeAsync();
        }

        /// <summary>Describes the stream's timer.</summary>
        public override string ToString() { return "TickStream(" + Timer + ")"; }
    }

    /// <summary>The state of a <see cref="TickStream"/>: the timer's handler (<see cref="OnTick"/>,
    /// on the delivering thread), its end signal, the one waiter. Holds no reference to the Timer
    /// or the Runtime (the timer state roots it). The waiter's task runs its continuations
    /// asynchronously: completing it never runs the consumer's loop on the delivering thread.</summary>
    internal sealed class TickChannel : IEndSignal
    {
        static readonly Task<bool> s_true = Task.FromResult(true);
        static readonly Task<bool> s_false = Task.FromResult(false);

        readonly object _lock = new object();
        bool _pending, _stopped;
        Tick _pendingTick, _current;
        TaskCompletionSource<bool> _waiter;
        CancellationTokenRegistration _registration;

        public Tick Current { get { lock (_lock) return _current; } }

        public void OnTick(Tick tick)
        {
            TaskCompletionSource<bool> w;
            CancellationTokenRegistration reg;
            lock (_lock)
            {
                if (_stopped) return;
                w = _waiter;
                if (w == null)
                {
                    _pending = true;
                    _pendingTick = tick;
                    return;
                }
                _waiter = null;
                reg = _registration;
                _registration = default(CancellationTokenRegistration);
                _current = tick;
            }
            w.TrySetResult(true);
            reg.Dispose(); // outside the lock: it waits for a token callback running elsewhere
        }

        /// <summary>The generation is ending: the waiter and every later wait get false.</summary>
        public void Signal()
        {
            TaskCompletionSource<bool> w;
            CancellationTokenRegistration reg;
            lock (_lock)
            {
                if (_stopped) return;
                _stopped = true;
                _pending = false;
                w = _waiter;
                _waiter = null;
                reg = _registration;
                _registration = default(CancellationTokenRegistration);
            }
            if (w == null) return;
            w.TrySetResult(false);
            reg.Dispose();
        }

        public Task<bool> WaitAsync(CancellationToken ct)
        {
            lock (_lock)
            {
                if (_waiter != null)
                    throw new InvalidOperationException("TickStream.WaitForNextTickAsync: another wait is still pending (one wait at a time)");
                if (_stopped) return s_false;
                if (_pending)
                {
                    _pending = false;
                    _current = _pendingTick;
                    _pendingTick = default(Tick);
                    return s_true;
                }
                if (ct.IsCancellationRequested) return Task.FromCanceled<bool>(ct);
                var tcs = new TaskCompletionSource<bool>(TaskCreationOptions.RunContinuationsAsynchronously);
                _waiter = tcs;
                if (ct.CanBeCanceled)
                {
                    // A token cancelled meanwhile runs the callback here, on this thread (the lock
                    // is reentrant): the waiter is gone then, and so is the need to keep the
                    // registration.
                    var reg = ct.Register(() => CancelWait(tcs, ct));
                    if (_waiter == tcs) _registration = reg;
                    else reg.Dispose();
                }
                return tcs.Task;
            }
        }

        void CancelWait(TaskCompletionSource<bool> tcs, CancellationToken ct)
        {
            lock (_lock)
            {
                if (_waiter != tcs) return;
                _waiter = null;
                _registration = default(CancellationTokenRegistration);
            }
            tcs.TrySetCanceled(ct);
        }
    }
}
