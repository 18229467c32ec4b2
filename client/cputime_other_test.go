//go:build !unix

package client_test

import "time"

func cpuTime() (time.Duration, bool) { return 0, false }
