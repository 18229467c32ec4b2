//go:build !unix

package harness

import "time"

func rusage() (user, sys time.Duration, ok bool) { return 0, 0, false }
