package node

import "strconv"

// Tag opens the hash of a message or timer and names its type, so that two
// types with equal fields never hash alike. Every tag of Amalgam and its
// baselines is declared here, grouped by the room that owns the type; a
// tag's value must never change, since it feeds every state hash and so
// every state count. A protocol written against the public API alone (as
// in examples/) declares its own Tag values: tags need differ only among
// the types of one checked system.
type Tag uint64

// Client operations and the commit protocol (msg).
const (
	TagRequest     Tag = 1
	TagReply       Tag = 2
	TagPrepare     Tag = 3
	TagPrepareOK   Tag = 4
	TagCommit      Tag = 5
	TagPrepareDrop Tag = 6
)

// The deterministic client's retry timer (workload).
const TagClientRetry Tag = 7

// Reconfiguration and recovery messages (msg).
const (
	TagReplace        Tag = 20
	TagStopShard      Tag = 21
	TagStopShardOK    Tag = 22
	TagStopBackup     Tag = 23
	TagStopBackupOK   Tag = 24
	TagNewConfig      Tag = 25
	TagConfigOK       Tag = 26
	TagResending      Tag = 27
	TagRebuilt        Tag = 28
	TagRebuiltOK      Tag = 29
	TagStripeSnapshot Tag = 30
	TagSnapshotMarker Tag = 31
	TagSnapshotData   Tag = 32
	TagSnapshotParity Tag = 33
)

// The reconfiguration service and its failover (reconfig).
const (
	TagReconfigTick Tag = 40
	TagHeartbeat    Tag = 41
	TagView         Tag = 42
	TagLead         Tag = 43
	TagResumed      Tag = 44
	TagMove         Tag = 45
	TagRegister     Tag = 46
	TagFailoverTick Tag = 47
)

// Rebuild timers of replacements (data, parity).
const (
	TagDataRetryRecovery   Tag = 50
	TagParityRetryRebuild  Tag = 51
	TagDataRebuildPaused   Tag = 52
	TagParityRebuildPaused Tag = 53
)

// Scenario nodes of Amalgam's checks (check).
const (
	TagOperatorTimer  Tag = 60
	TagFailoverBeat   Tag = 900
	TagFailoverLeader Tag = 901
	TagFailoverFault  Tag = 902
)

// ShardedPaxos (baselines/shardedpaxos over baselines/paxos).
const (
	TagShardedP1a            Tag = 101
	TagShardedP1b            Tag = 102
	TagShardedP2a            Tag = 103
	TagShardedP2b            Tag = 104
	TagShardedNack           Tag = 105
	TagShardedHeartbeat      Tag = 106
	TagShardedHeartbeatOK    Tag = 107
	TagShardedLearn          Tag = 108
	TagShardedRedirect       Tag = 109
	TagShardedElectionTimer  Tag = 121
	TagShardedHeartbeatTimer Tag = 122
	TagShardedRetry          Tag = 131
)

// RSPaxos (baselines/rspaxos over baselines/paxos).
const (
	TagRSP1a            Tag = 201
	TagRSP1b            Tag = 202
	TagRSP2a            Tag = 203
	TagRSP2b            Tag = 204
	TagRSNack           Tag = 205
	TagRSHeartbeat      Tag = 206
	TagRSHeartbeatOK    Tag = 207
	TagRSLearn          Tag = 208
	TagRSRedirect       Tag = 209
	TagRSPieceReply     Tag = 210
	TagRSElectionTimer  Tag = 221
	TagRSHeartbeatTimer Tag = 222
	TagRSRetry          Tag = 231
)

// The benchmark's Amalgam client (bench).
const TagBenchRetry Tag = 907

// tagNames names every tag. A map literal: a tag listed twice, or two
// constants with one value, do not compile.
var tagNames = map[Tag]string{
	TagRequest:     "msg.Request",
	TagReply:       "msg.Reply",
	TagPrepare:     "msg.Prepare",
	TagPrepareOK:   "msg.PrepareOK",
	TagCommit:      "msg.Commit",
	TagPrepareDrop: "msg.PrepareDrop",

	TagClientRetry: "workload.retry",

	TagReplace:        "msg.Replace",
	TagStopShard:      "msg.StopShard",
	TagStopShardOK:    "msg.StopShardOK",
	TagStopBackup:     "msg.StopBackup",
	TagStopBackupOK:   "msg.StopBackupOK",
	TagNewConfig:      "msg.NewConfig",
	TagConfigOK:       "msg.ConfigOK",
	TagResending:      "msg.Resending",
	TagRebuilt:        "msg.Rebuilt",
	TagRebuiltOK:      "msg.RebuiltOK",
	TagStripeSnapshot: "msg.StripeSnapshot",
	TagSnapshotMarker: "msg.SnapshotMarker",
	TagSnapshotData:   "msg.SnapshotData",
	TagSnapshotParity: "msg.SnapshotParity",

	TagReconfigTick: "reconfig.tick",
	TagHeartbeat:    "reconfig.Heartbeat",
	TagView:         "reconfig.View",
	TagLead:         "reconfig.Lead",
	TagResumed:      "reconfig.Resumed",
	TagMove:         "reconfig.Move",
	TagRegister:     "reconfig.Register",
	TagFailoverTick: "reconfig.round",

	TagDataRetryRecovery:   "data.retryRecovery",
	TagParityRetryRebuild:  "parity.retryRebuild",
	TagDataRebuildPaused:   "data.rebuildPaused",
	TagParityRebuildPaused: "parity.rebuildPaused",

	TagOperatorTimer:  "check.operatorTimer",
	TagFailoverBeat:   "check.beat",
	TagFailoverLeader: "check.newLeader",
	TagFailoverFault:  "check.faultTimer",

	TagShardedP1a:            "shardedpaxos.P1a",
	TagShardedP1b:            "shardedpaxos.P1b",
	TagShardedP2a:            "shardedpaxos.P2a",
	TagShardedP2b:            "shardedpaxos.P2b",
	TagShardedNack:           "shardedpaxos.Nack",
	TagShardedHeartbeat:      "shardedpaxos.Heartbeat",
	TagShardedHeartbeatOK:    "shardedpaxos.HeartbeatOK",
	TagShardedLearn:          "shardedpaxos.Learn",
	TagShardedRedirect:       "shardedpaxos.Redirect",
	TagShardedElectionTimer:  "shardedpaxos.ElectionTimer",
	TagShardedHeartbeatTimer: "shardedpaxos.HeartbeatTimer",
	TagShardedRetry:          "shardedpaxos.Retry",

	TagRSP1a:            "rspaxos.P1a",
	TagRSP1b:            "rspaxos.P1b",
	TagRSP2a:            "rspaxos.P2a",
	TagRSP2b:            "rspaxos.P2b",
	TagRSNack:           "rspaxos.Nack",
	TagRSHeartbeat:      "rspaxos.Heartbeat",
	TagRSHeartbeatOK:    "rspaxos.HeartbeatOK",
	TagRSLearn:          "rspaxos.Learn",
	TagRSRedirect:       "rspaxos.Redirect",
	TagRSPieceReply:     "rspaxos.PieceReply",
	TagRSElectionTimer:  "rspaxos.ElectionTimer",
	TagRSHeartbeatTimer: "rspaxos.HeartbeatTimer",
	TagRSRetry:          "rspaxos.Retry",

	TagBenchRetry: "bench.amalgamRetry",
}

// String returns the type the registry names by t, or "tag N".
func (t Tag) String() string {
	if s, ok := tagNames[t]; ok {
		return s
	}
	return "tag " + strconv.FormatUint(uint64(t), 10)
}

// Tag opens the hash of a message or timer with its type tag.
func (h *Hasher) Tag(t Tag) { h.Uint64(uint64(t)) }

// TagTimer is a timer that carries nothing but its type, named by its
// tag: its hash is the tag alone.
type TagTimer Tag

// Hash implements Timer.
func (t TagTimer) Hash(h *Hasher) { h.Tag(Tag(t)) }

// String names the timer's type ("data.retryRecovery").
func (t TagTimer) String() string { return Tag(t).String() }
