package recovery

// CountDegraded is the number of blocks a server has not rebuilt, from
// its flags per stripe (nil when none is degraded).
func CountDegraded(degraded []bool) int {
	n := 0
	for _, d := range degraded {
		if d {
			n++
		}
	}
	return n
}
