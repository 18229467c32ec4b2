package runtime

import "sync/atomic"

// NetStats counts the node traffic every Host of the process sent to
// other hosts: frames of ordered streams and the messages in them, the
// streams' acknowledgements, and the batches of unordered messages sent
// (send.go: a message on a host's SendStream connection, or a transport
// Send), and the unordered messages dropped because a sender's queue was
// full or their batch failed. Bytes are the encoded messages, without
// gRPC's and HTTP/2's framing.
type NetStats struct {
	StreamFrames, StreamMsgs, StreamBytes uint64
	StreamAcks                            uint64
	Sends, SendMsgs, SendBytes            uint64
	SendDrops                             uint64
}

var netStats struct {
	streamFrames, streamMsgs, streamBytes atomic.Uint64
	streamAcks                            atomic.Uint64
	sends, sendMsgs, sendBytes            atomic.Uint64
	sendDrops                             atomic.Uint64
}

// TransportStats returns the counts since the process started.
func TransportStats() NetStats {
	s := &netStats
	return NetStats{
		StreamFrames: s.streamFrames.Load(), StreamMsgs: s.streamMsgs.Load(), StreamBytes: s.streamBytes.Load(),
		StreamAcks: s.streamAcks.Load(),
		Sends:      s.sends.Load(), SendMsgs: s.sendMsgs.Load(), SendBytes: s.sendBytes.Load(),
		SendDrops: s.sendDrops.Load(),
	}
}

func countStreamFrame(msgs, bytes int) {
	netStats.streamFrames.Add(1)
	netStats.streamMsgs.Add(uint64(msgs))
	netStats.streamBytes.Add(uint64(bytes))
}

func countSend(msgs, bytes int) {
	netStats.sends.Add(1)
	netStats.sendMsgs.Add(uint64(msgs))
	netStats.sendBytes.Add(uint64(bytes))
}

func countSendDrops(msgs int) { netStats.sendDrops.Add(uint64(msgs)) }

func countStreamAck() { netStats.streamAcks.Add(1) }
