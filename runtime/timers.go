package runtime

import (
	"crypto/rand"
	"encoding/binary"
	mrand "math/rand/v2"
	"time"
)

// setTimer posts the timer to the loop after a delay drawn in [min, max].
// A timer set by an incarnation that has ended since is dropped when it
// comes (event.epoch: the epoch of the batch that set it); one that comes
// after the host stopped is dropped.
func (l *loop) setTimer(t timerEffect, epoch uint64) {
	d := t.min
	if t.max > t.min {
		d += time.Duration(mrand.Int64N(int64(t.max - t.min + 1)))
	}
	var fire func()
	fire = func() {
		if u := l.h.steer.postponed(l.addr, t.t); !u.IsZero() { // steering (steer.go)
			time.AfterFunc(time.Until(u), fire)
			return
		}
		if l.h.ctx.Err() == nil {
			_ = l.post(l.h.ctx, event{t: t.t, epoch: epoch})
		}
	}
	time.AfterFunc(d, fire)
}

// randomID draws a non-zero 64-bit id from crypto/rand.
func randomID() uint64 {
	var b [8]byte
	for {
		if _, err := rand.Read(b[:]); err != nil {
			panic(err)
		}
		if v := binary.LittleEndian.Uint64(b[:]); v != 0 {
			return v
		}
	}
}

// tickUntil calls fn every d until stop is closed.
func tickUntil(d time.Duration, stop <-chan struct{}, fn func()) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			fn()
		case <-stop:
			return
		}
	}
}
