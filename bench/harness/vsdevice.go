package harness

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// deviceStat names the statistics file of the block device that holds
// dir (/sys/dev/block/MAJOR:MINOR/stat), or "" where there is none.
//
// The device's count of sectors written is what reached the disk from the
// whole machine: the servers' data, the kernel's metadata and writeback,
// and nothing counted twice. /proc/<pid>/io write_bytes, the other disk
// column, is charged when a process dirties a page cache folio: a file's
// tail folio dirtied again after every sync is charged again in whole,
// and kernel threads' writes are charged to nobody.
func deviceStat(dir string) string {
	var st syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil {
		return ""
	}
	dev := uint64(st.Dev)
	major := (dev>>8)&0xfff | (dev>>32)&^0xfff
	minor := dev&0xff | (dev>>12)&^0xff
	p := fmt.Sprintf("/sys/dev/block/%d:%d/stat", major, minor)
	if _, err := deviceWritten(p); err != nil {
		return ""
	}
	return p
}

// deviceWritten reads the bytes written to the device so far (sectors
// written, the stat file's seventh field, of 512 bytes).
func deviceWritten(stat string) (int64, error) {
	b, err := os.ReadFile(stat)
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(b))
	if len(f) < 7 {
		return 0, fmt.Errorf("%s: %d fields", stat, len(f))
	}
	n, err := strconv.ParseInt(f[6], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: sectors written: %v", stat, err)
	}
	return n * 512, nil
}
