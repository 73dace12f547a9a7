// Package lease gives one process at a time the ownership of a data store. Two processes that both
// believed they owned one database would each take the other's live work for crash leftovers: an
// approval answered on both would run its command twice. The process that opens the store holds
// the lease for its whole life; every other process is turned away and told who holds it, so it
// can use that owner instead.
//
// File is the lease of a data directory (an OS lock that ends with the process, however it ends).
// A store of another kind (a database server) holds the same lease as a row: it implements Lease.
package lease

import (
	"encoding/json"
	"fmt"
	"time"
)

// Owner is what the holder of a lease tells the processes it turns away: who it is and where it
// serves, with the credentials a local client needs (the record is readable by the user alone).
type Owner struct {
	PID      int       `json:"pid"`
	URL      string    `json:"url,omitempty"` // empty while the owner is still starting
	Username string    `json:"username,omitempty"`
	Password string    `json:"password,omitempty"`
	Since    time.Time `json:"since"`
}

// Lease is an exclusive hold on a store, for the life of the process that opened it.
type Lease interface {
	// Announce records where the holder serves, for the processes it turns away.
	Announce(Owner) error
	// Release gives the store up; it is safe to call more than once.
	Release() error
}

// HeldError is the answer to a process that wants a store another process holds.
type HeldError struct {
	Store string // the data directory (or database) in use
	Owner Owner  // zero when the owner has not announced itself yet
}

func (e *HeldError) Error() string {
	who := "another tandem process that is still starting"
	switch {
	case e.Owner.URL != "":
		who = fmt.Sprintf("tandem (PID %d, %s)", e.Owner.PID, e.Owner.URL)
	case e.Owner.PID != 0:
		who = fmt.Sprintf("tandem (PID %d, still starting)", e.Owner.PID)
	}
	return fmt.Sprintf("the data directory %s is in use by %s; use that server (tandem attach, --attach local), stop it, or choose another data directory with --data-dir or TANDEM_DATA_DIR", e.Store, who)
}

// parseOwner decodes an owner record; a record being rewritten reads as no owner yet.
func parseOwner(b []byte) Owner {
	var o Owner
	if json.Unmarshal(b, &o) != nil {
		return Owner{}
	}
	return o
}
