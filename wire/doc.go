// Package wire holds Amalgam's gRPC definitions (amalgam.proto, package
// amalgam.v1), the generated Go code, and the conversions between
// Amalgam's protocol messages (package msg) and their wire form. Other
// protocols' conversions register themselves (Register).
package wire

//go:generate ./generate.sh
