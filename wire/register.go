package wire

import "github.com/amalgam-store/amalgam/node"

// Codec converts the messages of a protocol whose Go types package wire
// does not own (the baselines' codecs are in baselines/wirecodec) to and
// from their bodies of Message.
type Codec interface {
	// ToProto returns m's wire form; ok is false for a type it does not
	// know.
	ToProto(m node.Message) (p *Message, ok bool)
	// FromProto decodes p; ok is false for a body it does not know.
	FromProto(p *Message) (m node.Message, ok bool, err error)
}

var codecs []Codec

// Register adds c to the codecs MessageToProto and MessageFromProto try
// after Amalgam's own messages. Call it from an init function: the list
// is not locked.
func Register(c Codec) { codecs = append(codecs, c) }
