package job

import (
	"fmt"

	"github.com/gochare/gochare/migrate"
)

// Command is one thing the coordinator asks of its driver. Every call of
// the Coordinator returns its commands in the order the driver must carry
// them out. The set is closed: only the types of this file implement
// Command, and each one dispatches to its own method of Driver, so a
// command added here does not compile until every driver carries it out.
type Command interface {
	// Dispatch calls the method of d for this command.
	Dispatch(d Driver)
	// command seals the set.
	command()
}

// Driver carries out a coordinator's commands: it delivers Sends to PEs,
// performs the effects asked of it (writing a manifest, reading a disk
// checkpoint), reporting their outcome back to the coordinator, and
// takes note of the milestones the coordinator tells it of. The
// launcher implements it over control connections, package
// job/inprocess over in-memory queues.
type Driver interface {
	Send(Send)
	WriteManifest(WriteManifest)
	SendDiskRecords(SendDiskRecords)
	Started(Started)
	Restored(Restored)
	ProgressRegained(ProgressRegained)
}

// Destination names the PEs a Send is for: EveryPE, or one PE (ToPE).
type Destination int

// EveryPE is every live PE.
const EveryPE Destination = -1

// ToPE is PE rank alone.
func ToPE(rank int) Destination {
	if rank < 0 {
		panic(fmt.Sprintf("job: destination PE %d", rank))
	}
	return Destination(rank)
}

// PE returns the PE d names, and false if d is EveryPE.
func (d Destination) PE() (rank int, one bool) { return int(d), d >= 0 }

func (d Destination) String() string {
	if d == EveryPE {
		return "every PE"
	}
	return fmt.Sprintf("PE %d", int(d))
}

// Send asks the driver to deliver Event to the PEs To names. A PE the
// driver knows dead gets nothing.
type Send struct {
	To    Destination
	Event Event
}

// WriteManifest asks the driver to write a disk checkpoint's manifest
// (migrate.WriteManifest), the last step of writing an epoch to disk, and
// to report the outcome with Coordinator.OnManifestWritten.
type WriteManifest struct {
	Dir      string
	Manifest migrate.Manifest
}

// SendDiskRecords asks the driver to read checkpoint Epoch in Dir and give
// every live PE the records of the tasks Hosts places on it (Hosts[c][lin]
// is the PE of element lin of collection c), for the Rollback{FromDisk}
// of recovery Generation, each PE's last part marked (also if it has no
// record); and to report the outcome with Coordinator.OnDiskRecordsSent.
type SendDiskRecords struct {
	Dir        string
	Epoch      uint64
	Generation uint64
	Hosts      [][]int
}

// Started tells the driver that the job began: Begin went out for the
// first time or, with Resumed, a job restarted from a disk checkpoint
// resumed. It comes once.
type Started struct{ Resumed bool }

// Restored tells the driver that recovery Generation has put the tasks
// back. Without RolledBack, under message logging: the failed PEs' tasks
// are restored and replay starts (NoticeFailure went out, for the
// failures Failed and the Relocated tasks since the last notice). With
// RolledBack: every task is back at the committed checkpoint and the job
// goes on from there.
type Restored struct {
	Generation uint64
	Failed     []int
	Relocated  int
	RolledBack bool
}

// ProgressRegained tells the driver that the job has regained the
// progress it had when recovery Generation began: every task has offered
// step Step (or a later one) again. It comes once per recovery, and not
// at all if the job ends or another PE fails before.
type ProgressRegained struct {
	Generation uint64
	Step       uint64
}

func (c Send) Dispatch(d Driver)             { d.Send(c) }
func (c WriteManifest) Dispatch(d Driver)    { d.WriteManifest(c) }
func (c SendDiskRecords) Dispatch(d Driver)  { d.SendDiskRecords(c) }
func (c Started) Dispatch(d Driver)          { d.Started(c) }
func (c Restored) Dispatch(d Driver)         { d.Restored(c) }
func (c ProgressRegained) Dispatch(d Driver) { d.ProgressRegained(c) }

func (Send) command()             {}
func (WriteManifest) command()    {}
func (SendDiskRecords) command()  {}
func (Started) command()          {}
func (Restored) command()         {}
func (ProgressRegained) command() {}

// toEvery is a Send of ev to every live PE.
func toEvery(ev Event) Command { return Send{To: EveryPE, Event: ev} }
