package mc

import "syscall"

// totalMemory is the machine's memory in bytes (0 if unknown).
func totalMemory() uint64 {
	var in syscall.Sysinfo_t
	if syscall.Sysinfo(&in) != nil {
		return 0
	}
	return uint64(in.Totalram) * uint64(in.Unit)
}
