package runtime

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/cockroachdb/pebble"
)

// storeFormat is the store layout this build writes. A later build that
// changes what an older one would misread raises it; a store marked with a
// format above this build's is refused, not misread. 1: stream log records
// may be backed by a node record (streamback.go), which builds without a
// format key read as records with no references and drop. 2: links
// (node.Linker) may name block slots, which format 1 builds do not count
// as taken, and a data server's operation record may leave its delta to
// them.
const storeFormat = 2

// formatKey holds the store's format, a decimal number. It shares no
// prefix with the node and stream keys ("b", "i", "k", "m", "n", "o").
var formatKey = []byte("format")

// errNewerStore is the cause of refusing a store of a later format.
var errNewerStore = errors.New("written by a newer Amalgam")

// checkFormat refuses a store written in a later format and marks any
// other with this build's (synced): this build reads every earlier layout
// and migrates it as it goes.
func (s *Store) checkFormat() error {
	v, closer, err := s.db.Get(formatKey)
	switch {
	case errors.Is(err, pebble.ErrNotFound):
	case err != nil:
		return err
	default:
		n, perr := strconv.Atoi(string(v))
		_ = closer.Close()
		if perr != nil {
			return fmt.Errorf("unreadable store format %q", v)
		}
		if n > storeFormat {
			return fmt.Errorf("%w (store format %d; this build reads formats up to %d): run that version or a later one", errNewerStore, n, storeFormat)
		}
		if n == storeFormat {
			return nil
		}
	}
	return s.db.Set(formatKey, []byte(strconv.Itoa(storeFormat)), pebble.Sync)
}
