package migrate

import (
	"encoding/binary"
	"fmt"
)

// MapFunc is a collection's initial placement: the PE of linear position
// lin among n elements over numPEs PEs (actor.Map with the collection ID).
type MapFunc func(collection, lin, n, numPEs int) int

// Location is where a PE believes a task is, and how recent that belief is.
//
// Version orders a task's locations: its high 32 bits are the recovery
// generation (the number of failures recovered so far, known to every PE
// from the launcher), its low 32 bits count the moves since. A move adds
// one; a relocation after a failure sets the version to generation<<32,
// which beats every location from before the failure. Versions of different
// tasks are not compared.
type Location struct {
	PE      int
	Version uint64
}

// Locations is one PE's table of where every task is: a slice per
// collection, indexed by linear position.
//
// How the scheduler uses it:
//   - At start every PE builds the same table with NewLocations.
//   - Migration at a sync point: the source PE calls Move, packs the task and
//     sends it with the returned version; the destination calls Update
//     before unpacking. Other PEs learn lazily by forwarding (below).
//   - Every envelope for a task goes through Route on the PE it reaches. If
//     deliverHere, it goes to the protocol (logging.Arrive), which buffers it
//     while the task is still in transit to this PE. Otherwise the scheduler
//     sends the envelope unchanged to forwardTo and, if the envelope's
//     sender PE is another PE, sends that PE UpdateFor(task); its Update
//     makes its next sends go straight to the task, so forwarding stops.
//     A forwarding chain follows the task's own path (each PE it left knows
//     where it went), so it ends.
//   - After a failure the launcher's recovery plan reaches every PE, which
//     calls Relocate for each relocation with the new generation: every
//     table then agrees, and a forwarding update from before the failure is
//     older and ignored.
//   - Snapshot is stored with the PE's checkpoint; with the None protocol
//     the rollback calls Restore.
//
// It is not safe for concurrent use.
type Locations struct {
	collections []collectionLocations
}

type collectionLocations struct {
	pe      []int32
	version []uint64
}

// LocationUpdate tells a PE where a task now is.
type LocationUpdate struct {
	Task     TaskRef
	Location Location
}

// NewLocations places element lin of collection c (sizes[c] elements) on
// home(c, lin, sizes[c], numPEs), at version 0.
func NewLocations(sizes []int, numPEs int, home MapFunc) *Locations {
	l := &Locations{collections: make([]collectionLocations, len(sizes))}
	for c, n := range sizes {
		table := collectionLocations{pe: make([]int32, n), version: make([]uint64, n)}
		for lin := range n {
			pe := home(c, lin, n, numPEs)
			if pe < 0 || pe >= numPEs {
				panic(fmt.Sprintf("migrate: map of collection %d puts element %d on PE %d of %d", c, lin, pe, numPEs))
			}
			table.pe[lin] = int32(pe)
		}
		l.collections[c] = table
	}
	return l
}

func (l *Locations) known(task TaskRef) error {
	if task.Collection < 0 || task.Collection >= len(l.collections) ||
		task.Lin < 0 || task.Lin >= len(l.collections[task.Collection].pe) {
		return fmt.Errorf("%w: %v", ErrUnknownTask, task)
	}
	return nil
}

// Where is the task's location as this PE knows it.
func (l *Locations) Where(task TaskRef) (Location, error) {
	if err := l.known(task); err != nil {
		return Location{}, err
	}
	table := &l.collections[task.Collection]
	return Location{PE: int(table.pe[task.Lin]), Version: table.version[task.Lin]}, nil
}

// UpdateFor is the update that tells another PE where task is.
func (l *Locations) UpdateFor(task TaskRef) (LocationUpdate, error) {
	where, err := l.Where(task)
	return LocationUpdate{Task: task, Location: where}, err
}

// Move records that task leaves for toPE and returns its new version.
func (l *Locations) Move(task TaskRef, toPE int) (uint64, error) {
	if err := l.known(task); err != nil {
		return 0, err
	}
	table := &l.collections[task.Collection]
	table.pe[task.Lin] = int32(toPE)
	table.version[task.Lin]++
	return table.version[task.Lin], nil
}

// Relocate records that a failed PE's task is restored on pe in recovery
// generation (≥ 1).
func (l *Locations) Relocate(task TaskRef, pe int, generation uint32) error {
	_, err := l.Update(task, pe, uint64(generation)<<32)
	return err
}

// Update records that task is on pe at version, if that is newer than what
// this PE knows; applied says whether it was.
func (l *Locations) Update(task TaskRef, pe int, version uint64) (applied bool, err error) {
	if err := l.known(task); err != nil {
		return false, err
	}
	table := &l.collections[task.Collection]
	if version <= table.version[task.Lin] {
		return false, nil
	}
	table.pe[task.Lin], table.version[task.Lin] = int32(pe), version
	return true, nil
}

// Route says what herePE does with a message for task: deliver it here, or
// forward it to forwardTo. An unknown task gives (false, -1): the caller
// reports a malformed message.
func (l *Locations) Route(task TaskRef, herePE int) (deliverHere bool, forwardTo int) {
	where, err := l.Where(task)
	if err != nil {
		return false, -1
	}
	if where.PE == herePE {
		return true, -1
	}
	return false, where.PE
}

// Tasks lists, in task order, the tasks this PE believes are on pe.
func (l *Locations) Tasks(pe int) []TaskRef {
	var out []TaskRef
	for c, table := range l.collections {
		for lin, at := range table.pe {
			if int(at) == pe {
				out = append(out, TaskRef{Collection: c, Lin: lin})
			}
		}
	}
	return out
}

// Snapshot encodes the table: for each collection its size, then a
// (PE, version) pair per element, all uvarints.
func (l *Locations) Snapshot() []byte {
	out := binary.AppendUvarint(nil, uint64(len(l.collections)))
	for _, table := range l.collections {
		out = binary.AppendUvarint(out, uint64(len(table.pe)))
		for lin, pe := range table.pe {
			out = binary.AppendUvarint(out, uint64(pe))
			out = binary.AppendUvarint(out, table.version[lin])
		}
	}
	return out
}

// Restore replaces the table with a Snapshot. On error (wrapping
// ErrCorrupt) the table is unchanged.
func (l *Locations) Restore(snapshot []byte) error {
	rest := snapshot
	next := func(what string) (uint64, error) {
		v, n := binary.Uvarint(rest)
		if n <= 0 {
			return 0, fmt.Errorf("%w: location snapshot truncated at %s", ErrCorrupt, what)
		}
		rest = rest[n:]
		return v, nil
	}
	numCollections, err := next("collection count")
	if err != nil {
		return err
	}
	if numCollections > uint64(len(snapshot)) {
		return fmt.Errorf("%w: location snapshot claims %d collections", ErrCorrupt, numCollections)
	}
	collections := make([]collectionLocations, numCollections)
	for c := range collections {
		size, err := next("collection size")
		if err != nil {
			return err
		}
		if size > uint64(len(rest)) {
			return fmt.Errorf("%w: location snapshot claims %d elements in collection %d", ErrCorrupt, size, c)
		}
		table := collectionLocations{pe: make([]int32, size), version: make([]uint64, size)}
		for lin := range table.pe {
			pe, err := next("PE")
			if err != nil {
				return err
			}
			if pe > 1<<31-1 {
				return fmt.Errorf("%w: location snapshot puts c%d[%d] on PE %d", ErrCorrupt, c, lin, pe)
			}
			version, err := next("version")
			if err != nil {
				return err
			}
			table.pe[lin], table.version[lin] = int32(pe), version
		}
		collections[c] = table
	}
	if len(rest) != 0 {
		return fmt.Errorf("%w: %d bytes after the location snapshot", ErrCorrupt, len(rest))
	}
	l.collections = collections
	return nil
}
