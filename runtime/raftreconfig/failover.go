package raftreconfig

import (
	"slices"
	"time"

	"github.com/amalgam-store/amalgam/node"
	"github.com/amalgam-store/amalgam/reconfig"
	"github.com/amalgam-store/amalgam/wire"
)

// The leader runs the failure detector (reconfig.Failover, a deterministic
// node) on its loop goroutine: heartbeats and the address book are its
// inputs, its rounds are timers of this leadership, and what it sends to
// reconfig.LogAddr is proposed. All decisions are the node's.

// failoverConfig derives the detector's rounds from Options.
func (r *Replica) failoverConfig() reconfig.FailoverConfig {
	if r.o.SuspectAfter <= 0 {
		return reconfig.FailoverConfig{Round: 600 * time.Millisecond, Retry: 5}
	}
	return reconfig.FailoverConfig{Round: r.o.SuspectAfter / 5, Suspect: 5, Grace: 3, Retry: 5}
}

// startFailover gives a new leadership a fresh detector (loop goroutine).
func (r *Replica) startFailover() {
	r.fo, r.suspected = nil, nil
	if !r.leader {
		return
	}
	r.fo = reconfig.NewFailover(r.failoverConfig())
	e := &effects{}
	r.fo.Init(e)
	r.fo.Handle(e, "", reconfig.Lead{Term: r.rn.BasicStatus().Term})
	r.foVersion = 0
	r.performFailover(e)
	r.viewFailover()
}

// toFailover delivers m to the detector, if this replica leads.
func (r *Replica) toFailover(m node.Message) {
	if r.fo == nil {
		return
	}
	e := &effects{}
	r.fo.Handle(e, "", m)
	r.performFailover(e)
}

// viewFailover shows the detector a changed address book.
func (r *Replica) viewFailover() {
	if r.fo == nil || r.sm.dir.GetVersion() == r.foVersion {
		return
	}
	r.foVersion = r.sm.dir.GetVersion()
	r.toFailover(reconfig.View{Version: r.sm.dir.GetVersion(), Hosts: r.sm.dir.GetHosts(), Spares: r.sm.dir.GetSpares()})
}

// noteTick tells the detector when the loop stalled for more than two
// rounds (the process was paused, or starved): it handled no heartbeat
// meanwhile.
func (r *Replica) noteTick(now time.Time) {
	last := r.lastTick
	r.lastTick = now
	round := r.failoverConfig().Round
	if !last.IsZero() && now.Sub(last) > 2*round {
		r.log.Info("the loop stalled: the failure detector starts a grace period", "stall", now.Sub(last).Round(time.Millisecond))
		r.toFailover(reconfig.Resumed{Rounds: int(now.Sub(last) / round)})
	}
}

// performFailover proposes what the detector sent to the log and arms its
// timers for this leadership.
func (r *Replica) performFailover(e *effects) {
	for _, s := range e.sends {
		switch m := s.m.(type) {
		case reconfig.Move:
			r.log.Warn("machine suspected: moving its slot to a spare", "machine", m.Machine, "host", m.From, "spare", m.To)
			r.proposeLocal(&wire.ReconfigEntry{Body: &wire.ReconfigEntry_Move{Move: &wire.SlotMove{Machine: int32(m.Machine), From: m.From, To: m.To}}})
		case reconfig.Register:
			r.log.Info("spare registering", "host", m.Host)
			r.proposeLocal(&wire.ReconfigEntry{Body: &wire.ReconfigEntry_Spare{Spare: m.Host}})
		}
	}
	for _, t := range e.timers {
		fo, epoch := r.fo, r.epoch
		time.AfterFunc(t.min, func() {
			r.do(func() {
				if r.fo != fo || epoch != r.epoch {
					return // another leadership's detector
				}
				e := &effects{}
				fo.Timer(e, t.t)
				r.performFailover(e)
				r.noteSuspected()
			})
		})
	}
}

// noteSuspected logs the suspected slots when they change and publishes
// them (Replica.Suspected).
func (r *Replica) noteSuspected() {
	sus := r.fo.Suspected()
	if slices.Equal(sus, r.suspected) {
		return
	}
	r.suspected = sus
	if len(sus) > 0 && r.fo.LiveSpare() == "" {
		r.log.Warn("machines suspected, and no live spare to replace them: start one with amalgam-server node --spare", "machines", sus)
	}
	r.publish()
}

// Suspected lists the machine slots the leader suspects (empty at
// followers): silent hosts not yet moved to a spare.
func (r *Replica) Suspected() []int { return r.pub.Load().suspected }
