// Package wire holds Amalgam's gRPC definitions (amalgam.proto, package
// amalgam.v1), the generated Go code, and the conversions between protocol
// messages (package msg, and the baselines' baselines/shardedpaxos and
// baselines/rspaxos) and their wire form.
package wire

//go:generate ./generate.sh
