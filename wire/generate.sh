#!/usr/bin/env bash
# Regenerates the Go code for wire/amalgam.proto.
# Pinned tool versions:
#
#   protoc              3.21.12  (Debian 12: apt-get install -y protobuf-compiler)
#   protoc-gen-go       v1.36.12 (go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12)
#   protoc-gen-go-grpc  v1.6.2   (go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2)
#
# The generated files are committed; CI does not need protoc. Run from any
# directory: ./wire/generate.sh, or go generate ./wire.
set -euo pipefail
cd "$(dirname "$0")"
export PATH="$(go env GOPATH)/bin:$PATH"
want_protoc="libprotoc 3.21.12"
if [[ "$(protoc --version)" != "$want_protoc" ]]; then
	echo "warning: protoc is '$(protoc --version)', pinned is '$want_protoc'" >&2
fi
protoc --proto_path=. \
	--go_out=. --go_opt=paths=source_relative \
	--go-grpc_out=. --go-grpc_opt=paths=source_relative \
	amalgam.proto
