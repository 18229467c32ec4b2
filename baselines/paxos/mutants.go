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
)
