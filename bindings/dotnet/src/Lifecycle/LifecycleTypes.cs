// Values of the Spot lifecycle (docs/lifecycle.md): kinds, lanes, close reasons, queues,
// the work a node hands over, relocation targets, counters, node options.
using System;
using SpotTimer.Interop;

namespace SpotTimer
{
    /// <summary>The three kinds of Spot (L1; SPOT_KIND_*). 0 and every other number are refused
    /// by the C ABI (<see cref="SpotInvalidArgumentException"/> with Status UnknownEnum).</summary>
    public enum SpotKind : uint
    {
        /// <summary>The node's own Spot: one per node, created when the node starts, never moves,
        /// never evicted, closes only with its node.</summary>
        Entry = 1,
        /// <summary>Created only by <see cref="Node.CreateUserSpot"/>; moves; never evicted.</summary>
        User = 2,
        /// <summary>Created by the first <see cref="Node.SendOrCreate"/>; moves; evicted when idle.</summary>
        Instance = 3,
    }

    /// <summary>A Spot's two lanes (L6; SPOT_LANE_*).</summary>
    public enum Lane : uint
    {
        /// <summary>Application work: messages and timer ticks (default 1,024 items / 64 MiB).</summary>
        Application = 0,
        /// <summary>Lifecycle work, served first (default 128 items / 4 MiB).</summary>
        Lifecycle = 1,
    }

    /// <summary>Why a Spot closed (SPOT_CLOSE_*): the <see cref="NodeOptions.OnClose"/> argument.
    /// With IdleEvicted, Closed and NodeShutdown the node still holds the Spot's authority: save
    /// its state there. With AuthorityLost and CreationFailed it is not (or no longer) this node's:
    /// drop its object, save nothing.</summary>
    public enum CloseReason : uint
    {
        /// <summary>An Instance Spot idle past <see cref="NodeOptions.InstanceIdleTimeout"/>.</summary>
        IdleEvicted = 0,
        /// <summary>Closed by <see cref="Node.CloseSpot"/>.</summary>
        Closed = 1,
        /// <summary>Its node was disposed.</summary>
        NodeShutdown = 2,
        /// <summary>The node's authority over it ended first (its term in the store, or its owner
        /// lease): another node may own it now.</summary>
        AuthorityLost = 3,
        /// <summary>Its creation failed after the factory ran: it never became Ready.</summary>
        CreationFailed = 4,
    }

    /// <summary>The queue a <see cref="CapacityExceededException"/> names (L5, L6).</summary>
    public enum Queue
    {
        /// <summary>A Spot's application lane (SPOT_E_APPLICATION_LANE_FULL).</summary>
        ApplicationLane = 0,
        /// <summary>A Spot's lifecycle lane (SPOT_E_LIFECYCLE_LANE_FULL).</summary>
        LifecycleLane = 1,
        /// <summary>The node's pending payload bytes (SPOT_E_NODE_INBOUND_FULL).</summary>
        NodeInbound = 2,
        /// <summary>The active cap at activation, when no other node could take the Spot
        /// (SPOT_E_ACTIVE_CAP).</summary>
        Activation = 3,
    }

    /// <summary>What a piece of Spot work is (SPOT_WORK_*).</summary>
    public enum WorkKind : uint
    {
        /// <summary>A message sent to the Spot.</summary>
        Message = 0,
        /// <summary>A tick of one of the Spot's timers (<see cref="Node.Every"/>).</summary>
        Tick = 1,
    }

    /// <summary>What a relocation target is (SPOT_TARGET_*).</summary>
    public enum RelocationTargetKind : uint
    {
        /// <summary>A User or Instance Spot.</summary>
        Spot = 0,
        /// <summary>An actor living in the node's Entry Spot (<see cref="Node.AddEntryActor"/>).</summary>
        EntryActor = 1,
    }

    /// <summary>One piece of Spot work handed to a <see cref="Node.Dispatch"/> handler: a message
    /// or a timer tick. Everything is copied out of the native record: the object stays valid
    /// after the handler returns.</summary>
    public sealed class SpotWork
    {
        internal SpotWork(ref spot_node_record r, byte[] payload)
        {
            SpotId = r.spot_id;
            Kind = (WorkKind)r.kind;
            Lane = (Lane)r.lane;
            Payload = payload;
            Key = r.key;
            Value = r.value;
            DeliveryIndex = (long)r.delivery_index;
            ScheduledIndex = (long)r.scheduled_index;
            SkippedTicks = (long)r.skipped_ticks;
        }

        /// <summary>The Spot the work belongs to.</summary>
        public ulong SpotId { get; private set; }
        /// <summary>A message or a timer tick.</summary>
        public WorkKind Kind { get; private set; }
        /// <summary>The lane it came from (ticks: Application).</summary>
        public Lane Lane { get; private set; }
        /// <summary>Message: a copy of the payload (empty, never null, for an empty message).
        /// Tick: empty.</summary>
        public byte[] Payload { get; private set; }
        /// <summary>Tick: the timer's key. Message: 0.</summary>
        public ulong Key { get; private set; }
        /// <summary>Tick: the value given to <see cref="Node.Every"/>. Message: 0.</summary>
        public ulong Value { get; private set; }
        /// <summary>Tick: 1 for the timer's first callback, +1 per callback (T4). Message: 0.</summary>
        public long DeliveryIndex { get; private set; }
        /// <summary>Tick: the nominal tick this callback stands for. Message: 0.</summary>
        public long ScheduledIndex { get; private set; }
        /// <summary>Tick: nominal ticks skipped since the previous callback. Message: 0.</summary>
        public long SkippedTicks { get; private set; }

        /// <summary>Kind, Spot and what the work carries, for logs.</summary>
        public override string ToString()
        {
            return Kind == WorkKind.Message
                ? string.Format("SpotWork(message, spot={0}, lane={1}, {2} bytes)", SpotId, Lane, Payload.Length)
                : string.Format("SpotWork(tick, spot={0}, key={1}, value={2})", SpotId, Key, Value);
        }
    }

    /// <summary>One entry of <see cref="Node.RelocationTargets"/> (L2).</summary>
    public readonly struct RelocationTarget : IEquatable<RelocationTarget>
    {
        /// <summary>A target of kind <paramref name="what"/>: a Spot (<paramref name="kind"/> User or
        /// Instance) or an Entry-Spot actor (<paramref name="kind"/> null), with its id.</summary>
        public RelocationTarget(RelocationTargetKind what, SpotKind? kind, ulong id)
        {
            What = what; Kind = kind; Id = id;
        }

        /// <summary>A Spot or an Entry-Spot actor.</summary>
        public RelocationTargetKind What { get; }
        /// <summary>A Spot's kind (User or Instance); null for an Entry-Spot actor.</summary>
        public SpotKind? Kind { get; }
        /// <summary>The Spot's or the actor's id.</summary>
        public ulong Id { get; }

        /// <summary>The target for Spot <paramref name="id"/> of <paramref name="kind"/>.</summary>
        public static RelocationTarget Spot(ulong id, SpotKind kind)
        {
            return new RelocationTarget(RelocationTargetKind.Spot, kind, id);
        }

        /// <summary>The target for actor <paramref name="id"/> of the Entry Spot.</summary>
        public static RelocationTarget EntryActor(ulong id)
        {
            return new RelocationTarget(RelocationTargetKind.EntryActor, null, id);
        }

        /// <summary>Same kind of target, Spot kind and id.</summary>
        public bool Equals(RelocationTarget o) { return What == o.What && Kind == o.Kind && Id == o.Id; }
        /// <summary>Same kind of target, Spot kind and id.</summary>
        public override bool Equals(object obj) { return obj is RelocationTarget && Equals((RelocationTarget)obj); }
        /// <summary>Hash of the three fields.</summary>
        public override int GetHashCode() { return Id.GetHashCode() ^ ((int)What << 16) ^ (Kind.HasValue ? (int)Kind.Value : 0); }

        /// <summary>E.g. <c>Spot(42, Instance)</c> or <c>EntryActor(7)</c>.</summary>
        public override string ToString()
        {
            return What == RelocationTargetKind.Spot
                ? string.Format("Spot({0}, {1})", Id, Kind)
                : string.Format("EntryActor({0})", Id);
        }
    }

    /// <summary>A node's counters (spot_node_stats); each a counter unless marked as a gauge.
    /// Once a node is quiet: MessagesAdmitted == MessagesCompleted + MessagesDropped.</summary>
    public sealed partial class NodeStats { }

    /// <summary>How to start a <see cref="Node"/>. A zero limit takes the library's default.</summary>
    public sealed class NodeOptions
    {
        /// <summary>The defaults: node 1, Entry Spot 0, real clock, the library's lane limits, no
        /// idle eviction, no lease, no factory or closing callback, a private store, not
        /// listening.</summary>
        public NodeOptions() { }

        /// <summary>This node's id in its store.</summary>
        public ulong NodeId { get; set; } = 1;
        /// <summary>The id of the node's Entry Spot (unique in the store).</summary>
        public ulong EntrySpot { get; set; }
        /// <summary>Manual: time moves only by <see cref="Node.Advance"/> (tests).</summary>
        public ClockKind Clock { get; set; } = ClockKind.Real;
        /// <summary>Application lane: items (0: 1,024).</summary>
        public ulong ApplicationLaneItems { get; set; }
        /// <summary>Application lane: bytes, <c>payload + 256</c> per item (0: 64 MiB).</summary>
        public ulong ApplicationLaneBytes { get; set; }
        /// <summary>Lifecycle lane: items (0: 128).</summary>
        public ulong LifecycleLaneItems { get; set; }
        /// <summary>Lifecycle lane: bytes (0: 4 MiB).</summary>
        public ulong LifecycleLaneBytes { get; set; }
        /// <summary>Payload bytes pending on the whole node (0: 1 GiB).</summary>
        public ulong NodeInboundBytes { get; set; }
        /// <summary>Active Spots on the node, the Entry Spot included (0: 100,000).</summary>
        public ulong ActiveCap { get; set; }
        /// <summary>Instance Spots idle this long are evicted by <see cref="Node.EvictIdle"/>
        /// (null: never). Must be positive when set.</summary>
        public TimeSpan? InstanceIdleTimeout { get; set; }
        /// <summary>The Spots' owner lease on the node's clock (null: none). Must be positive when set.</summary>
        public TimeSpan? OwnerLease { get; set; }
        /// <summary>Builds a Spot's object when it is created (also the Entry Spot's, when the node
        /// starts): (spot id, kind). Runs on the thread that creates the Spot and must not call
        /// back into the node. If it throws, the creation fails with
        /// <see cref="CreationFailedException"/> carrying the exception's message, and the
        /// reservation is released; the exception never reaches native code. Null: Spots need no
        /// object (no factory call is counted).</summary>
        public Action<ulong, SpotKind> Factory { get; set; }
        /// <summary>Told once when a Spot closes, before its location is released; runs on the
        /// thread that closes it (<see cref="Node.CloseSpot"/>, <see cref="Node.EvictIdle"/>,
        /// <see cref="Node.Dispose"/>) and must not call back into the node. Exceptions it throws
        /// are caught and ignored.</summary>
        public Action<ulong, SpotKind, CloseReason> OnClose { get; set; }
        /// <summary>The Location Store the node joins (nodes on one Store are simulated nodes of one
        /// cluster). Null: a private store.</summary>
        public Store Store { get; set; }
        /// <summary>Serve the nodes of other processes over TCP on this address: "IP:PORT", e.g.
        /// "127.0.0.1:0" (port 0: any free port; <see cref="Node.Address"/> tells the one bound).
        /// The address bound is recorded in the store with the node, so nodes of other processes
        /// on the same etcd prefix forward messages and creations to it. Null or "": the node does
        /// not listen. A bad address, or one that cannot be bound, makes the Node constructor
        /// throw <see cref="SpotInvalidArgumentException"/> saying which.</summary>
        public string Listen { get; set; }
        /// <summary>Records per <see cref="Node.Dispatch"/> (1..1,048,576).</summary>
        public int BatchCapacity { get; set; } = 1024;
    }
}
