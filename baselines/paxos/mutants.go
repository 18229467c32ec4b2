package paxos

// The mutants (see Mutant).
const (
	// MutantP2bValueOnly is the bug of thesis 4.2: phase 2 replies carry
	// only the accepted value, not the ballot, and the leader counts every
	// reply carrying the value it proposed, so a delayed reply to an older
	// ballot can complete a quorum that never accepted at one ballot.
	MutantP2bValueOnly = "p2b-value-only"
	// MutantUnsavedAccept never writes accepted values (a/ records): an
	// acceptor acknowledges a value its restart forgets.
	MutantUnsavedAccept = "unsaved-accept"
	// MutantRestartLeads lets a restarted member 0 lead the zero ballot
	// again from slot 1, as a fresh deployment's does.
	MutantRestartLeads = "restart-leads"
	// MutantSelfVoteAtOnce counts the leader's own vote as it proposes,
	// while its accept requests leave before the acceptance is durable: a
	// crash can lose an acceptance that completed a quorum.
	MutantSelfVoteAtOnce = "self-vote-at-once"
	// MutantRestartKeepsBallot lets a restarted replica that led its
	// promised ballot lead it again, after the slots it remembers: it can
	// propose a second value in a slot whose proposal its crash lost.
	MutantRestartKeepsBallot = "restart-keeps-ballot"
	// MutantReplyAtPropose has an RSPaxos leader acknowledge a PUT as it
	// proposes it, before it is chosen; with replies sent early, the
	// acknowledgment leaves before the proposal is even durable.
	MutantReplyAtPropose = "reply-at-propose"
)
