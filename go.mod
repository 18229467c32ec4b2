module github.com/amalgam-store/amalgam

go 1.26.8

require (
	github.com/anishathalye/porcupine v1.3.1
	github.com/cespare/xxhash/v2 v2.3.0
	github.com/klauspost/reedsolomon v1.14.2
	github.com/spf13/cobra v1.10.2
)

require (
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/klauspost/cpuid/v2 v2.3.0 // indirect
	github.com/spf13/pflag v1.0.9 // indirect
	golang.org/x/sys v0.30.0 // indirect
)
