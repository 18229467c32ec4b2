package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/amalgam-store/amalgam/runtime"
)

// rebuildPause converts --rebuild-rate to the pause data and parity servers
// take between the stripes they rebuild in the background. The rate is in
// blocks per second ("200", "200blocks/s") or megabytes per second
// ("50MB/s", 10^6 bytes); "" or "0" means no limit. Each server rebuilds one
// block per stripe, so the limit is per server.
func rebuildPause(rate string, blockSize int) (time.Duration, error) {
	s := strings.TrimSpace(rate)
	if s == "" {
		return 0, nil
	}
	perBlock := 1.0
	switch low := strings.ToLower(s); {
	case strings.HasSuffix(low, "mb/s"):
		s, perBlock = s[:len(s)-4], 1e6/float64(blockSize)
	case strings.HasSuffix(low, "blocks/s"):
		s = s[:len(s)-8]
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("--rebuild-rate must be blocks per second (200, 200blocks/s) or megabytes per second (50MB/s), got %q", rate)
	}
	return runtime.RebuildPauseFor(v * perBlock), nil
}

const rebuildRateUsage = "limit each server's background rebuild: blocks/s (200, 200blocks/s) or MB/s (50MB/s); 0: no limit"
