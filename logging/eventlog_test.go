package logging

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gochare/gochare/commutative"
	"github.com/stretchr/testify/require"
)

func det(receiver TaskID, rsn uint64, creator PEID, seq uint64) Determinant {
	return Determinant{Message: commutative.MessageID{Sender: 9, SRN: rsn}, Receiver: receiver, RSN: rsn, Creator: creator, Seq: seq}
}

func TestEventLoggerStoresAcksAndFetches(t *testing.T) {
	l := NewEventLogger(1)
	ack, ok := l.Store(EventLogBatch{Logger: 1, Epoch: 5, Creator: 0,
		Determinants: []Determinant{det(3, 1, 0, 1), det(4, 2, 2, 7)},
		Progress:     []Progress{{Task: 3, RSN: 1, Creator: 0, Seq: 2}}})
	require.True(t, ok)
	// Only the creator's own records count: pe2's record rides along.
	require.Equal(t, EventLogAck{Logger: 1, Epoch: 5, Creator: 0, UpTo: 2}, ack)
	require.True(t, l.HoldsDeterminant(4, 2), "a record of another creator is stored too")

	envs := l.Fetch(EventLogFetch{Logger: 1, PE: 3, Epoch: 5, Recovery: 2, Tasks: []TaskID{3, 7}})
	require.Len(t, envs, 2)
	require.Equal(t, LoggerPE(1), envs[0].From)
	require.Equal(t, EnvelopeRecovery, envs[0].Kind)
	require.Equal(t, uint32(2), envs[0].Epoch)
	require.Equal(t, []Determinant{det(3, 1, 0, 1)}, envs[0].Determinants)
	require.Equal(t, []Progress{{Task: 3, RSN: 1, Creator: 0, Seq: 2}}, envs[0].Progress)
	require.Empty(t, envs[1].Determinants)

	// A failed PE's stream is closed; a batch of an older period is stale.
	l.PEsFailed([]PEID{2})
	_, ok = l.Store(EventLogBatch{Logger: 1, Epoch: 5, Creator: 2, Determinants: []Determinant{det(5, 1, 2, 8)}})
	require.False(t, ok)
	_, ok = l.Store(EventLogBatch{Logger: 1, Epoch: 4, Creator: 0})
	require.False(t, ok)
	require.Equal(t, 2, l.Stats().Stale)

	// A later period drops the earlier one.
	ack, ok = l.Store(EventLogBatch{Logger: 1, Epoch: 6, Creator: 1, Determinants: []Determinant{det(8, 1, 1, 1)}})
	require.True(t, ok)
	require.Equal(t, uint64(1), ack.UpTo)
	require.False(t, l.HoldsDeterminant(3, 1))
	require.Empty(t, l.Fetch(EventLogFetch{Logger: 1, Epoch: 5, Tasks: []TaskID{3}})[0].Determinants, "a fetch of another period gets nothing")
}

func TestEventLoggerStability(t *testing.T) {
	cfg := Config{PE: 0, PEs: 3, EventLogger: true, Loggers: 2}
	p := NewFullDet(cfg)
	e := p.(*FullDet).engine
	p.HostTask(1)
	d := receiveOne(t, p)
	p.Send(1, 2, Message{To: 5})
	r := p.Ready()
	require.Len(t, r.EventLog, 1)
	require.Equal(t, 0, r.EventLog[0].Logger, "pe0 logs to logger 0")
	require.Equal(t, []Determinant{{Message: d.Message.ID, Receiver: 1, RSN: 1, Creator: 0, Seq: 1}}, r.EventLog[0].Determinants)
	require.Len(t, r.Envelopes, 1)
	require.Len(t, r.Envelopes[0].Determinants, 1, "unstable: it rides on the send")
	p.Advance()

	// Acknowledged by the logger: stable, no longer carried.
	p.(EventLogging).EventLogAcked(EventLogAck{Logger: 0, Epoch: 0, Creator: 0, UpTo: 1})
	p.Send(1, 2, Message{To: 5})
	require.Empty(t, p.Ready().Envelopes[0].Determinants)
	require.Empty(t, p.Ready().EventLog, "nothing new to log")
	p.Advance()

	// The logger dies: the record is unstable again, rides again and goes
	// to the next live logger.
	p.(EventLogging).EventLoggerFailed(0)
	p.Send(1, 2, Message{To: 5})
	r = p.Ready()
	require.Len(t, r.Envelopes[0].Determinants, 1)
	require.Len(t, r.EventLog, 1)
	require.Equal(t, 1, r.EventLog[0].Logger)
	require.Len(t, r.EventLog[0].Determinants, 1)
	p.Advance()
	require.Equal(t, 1, e.el.target)

	// An acknowledgement of another period, or of a dead logger, counts
	// for nothing.
	p.(EventLogging).EventLogAcked(EventLogAck{Logger: 0, Epoch: 0, Creator: 0, UpTo: 1})
	p.(EventLogging).EventLogAcked(EventLogAck{Logger: 1, Epoch: 9, Creator: 0, UpTo: 1})
	p.Send(1, 2, Message{To: 5})
	require.Len(t, p.Ready().Envelopes[0].Determinants, 1)
	p.Advance()
}

func TestEventLoggerBounds(t *testing.T) {
	el := Config{EventLogger: true, Loggers: 1, PEs: 8}
	require.NoError(t, CheckFailures(KindFullDet, el, 7), "any number of PE failures")
	require.ErrorIs(t, CheckFailures(KindFullDet, Config{PEs: 8}, 3), ErrTooManyFailures)
	require.NoError(t, CheckEventLogFailures(KindPartialDet, el, 3, 0))
	require.NoError(t, CheckEventLogFailures(KindPartialDet, el, 0, 1))
	require.ErrorIs(t, CheckEventLogFailures(KindPartialDet, el, 1, 1), ErrEventLogLost)
	require.NoError(t, CheckEventLogFailures(KindPartialDet, Config{}, 1, 1), "without an event logger a logger holds no record")
	require.ErrorIs(t, CheckEventLogger(KindNone, 1), ErrEventLoggerConfig)
	require.ErrorIs(t, CheckEventLogger(KindFullDet, 0), ErrEventLoggerConfig)
	require.NoError(t, CheckEventLogger(KindPartialDet, 2))
}

func TestEventLoggerRestoredTaskWaitsForTheLogger(t *testing.T) {
	p := NewPartialDet(Config{PE: 0, PEs: 3, EventLogger: true, Loggers: 2})
	el := p.(EventLogging)
	task := TaskID(4)
	p.RestoreTask(TaskCheckpoint{Counters: commutative.NewTaskState(task)}, []PEID{0, 1})
	p.FailureNotice([]PEID{2}, []Relocation{{Task: task, PE: 0}})
	r := p.Ready()
	require.Len(t, r.Fetches, 2, "one fetch per live logger")
	require.Equal(t, []TaskID{task}, r.Fetches[0].Tasks)
	require.Equal(t, []PEID{2}, r.Fetches[0].Failed, "a fetch names the failed PEs, for the logger to close their streams")
	require.NoError(t, el.EventLogLost())
	for _, env := range r.Envelopes {
		if env.To == 0 {
			p.Arrive(env)
		}
	}
	p.Advance()
	p.Arrive(Envelope{Kind: EnvelopeRecovery, From: 1, To: 0, Task: task, Epoch: r.Fetches[0].Recovery})
	p.Arrive(Envelope{Kind: EnvelopeRecovery, From: LoggerPE(0), To: 0, Task: task, Epoch: r.Fetches[0].Recovery})
	p.Arrive(Envelope{Kind: EnvelopeMessage, From: 1, To: 0, Message: Message{ID: commutative.MessageID{Sender: 7, SRN: 1}, To: task}})
	_, ok := p.NextDelivery(task, func(Message) bool { return true })
	require.False(t, ok, "no delivery before every logger answered")
	p.Arrive(Envelope{Kind: EnvelopeRecovery, From: LoggerPE(1), To: 0, Task: task, Epoch: r.Fetches[1].Recovery})
	_, ok = p.NextDelivery(task, func(Message) bool { return true })
	require.True(t, ok)
	// Both loggers answered: a death now costs this recovery nothing.
	el.EventLoggerFailed(1)
	require.NoError(t, el.EventLogLost())
}

func TestEventLoggerDeathBeforeItsAnswerIsReported(t *testing.T) {
	p := NewFullDet(Config{PE: 0, PEs: 3, EventLogger: true, Loggers: 2})
	el := p.(EventLogging)
	task := TaskID(4)
	p.RestoreTask(TaskCheckpoint{Counters: commutative.NewTaskState(task)}, []PEID{0, 1})
	// The logger dies before the notice: the task is restored without
	// its records.
	el.EventLoggerFailed(1)
	require.NoError(t, el.EventLogLost())
	p.FailureNotice([]PEID{2}, []Relocation{{Task: task, PE: 0}})
	require.Len(t, p.Ready().Fetches, 1, "only the live logger is asked")
	require.ErrorIs(t, el.EventLogLost(), ErrEventLogLost)

	// A logger death in an earlier period costs nothing.
	q := NewFullDet(Config{PE: 0, PEs: 3, EventLogger: true, Loggers: 2})
	q.(EventLogging).EventLoggerFailed(1)
	q.Checkpoint()
	q.RestoreTask(TaskCheckpoint{Counters: commutative.NewTaskState(task)}, []PEID{0, 1})
	q.FailureNotice([]PEID{2}, []Relocation{{Task: task, PE: 0}})
	require.NoError(t, q.(EventLogging).EventLogLost())
}

// Records taken for the logger between handlers (TakeEventLog) leave the
// Ready; an envelope made while its record was unstable sheds it if the
// logger's acknowledgement comes before the Ready is taken, and the
// piggyback count says what left.
func TestEventLoggerTakeAndStrip(t *testing.T) {
	p := NewFullDet(Config{PE: 0, PEs: 3, EventLogger: true, Loggers: 1})
	el := p.(EventLogging)
	p.HostTask(1)
	receiveOne(t, p)
	p.Send(1, 2, Message{To: 5})
	p.Send(1, 1, Message{To: 6})
	require.Equal(t, 2, p.Stats().PiggybackedDeterminants, "both envelopes carry the record when made")
	taken := el.TakeEventLog()
	require.Len(t, taken, 1)
	require.Len(t, taken[0].Determinants, 1)
	require.Empty(t, el.TakeEventLog(), "taken once")
	el.EventLogAcked(EventLogAck{Logger: 0, Epoch: 0, Creator: 0, UpTo: 1})
	r := p.Ready()
	require.Empty(t, r.EventLog, "already sent")
	require.Len(t, r.Envelopes, 2)
	for _, env := range r.Envelopes {
		require.Empty(t, env.Determinants, "stable before the envelope left: it does not ride")
	}
	require.Zero(t, p.Stats().PiggybackedBytes)
	require.Zero(t, p.Stats().PiggybackedDeterminants)
	p.Advance()

	// Without the acknowledgement the record rides.
	p.Arrive(Envelope{Kind: EnvelopeMessage, From: 1, To: 0, Message: Message{ID: commutative.MessageID{Sender: 7, SRN: 2}, To: 1}})
	_, ok := p.NextDelivery(1, func(Message) bool { return true })
	require.True(t, ok)
	p.EndHandler(1)
	p.Send(1, 2, Message{To: 5})
	r = p.Ready()
	require.Len(t, r.Envelopes[0].Determinants, 1)
	require.Equal(t, uint64(2), r.Envelopes[0].Determinants[0].Seq)
	require.Equal(t, r.Envelopes[0].PiggybackBytes(), p.Stats().PiggybackedBytes)
}

// TestEventLoggerLogMatchesAMap checks the logger's append-only log and
// its index, made when asked, against a map of the first determinant
// stored at each task and RSN: batches of several creators crossing
// chunks, records of others forwarded again, RSN 0, questions between
// batches and a new period.
func TestEventLoggerLogMatchesAMap(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 11))
		l := NewEventLogger(0)
		type key struct {
			task TaskID
			rsn  uint64
		}
		want := map[key]Determinant{}
		upTo := map[PEID]uint64{}
		seq := map[PEID]uint64{}
		epoch := uint64(1)
		var seen []Determinant
		for range 300 {
			if rng.IntN(250) == 0 { // most periods fill a few chunks
				epoch++
				clear(want)
				clear(upTo)
				clear(seq)
				seen = seen[:0]
			}
			creator := PEID(rng.IntN(3))
			var batch []Determinant
			for range rng.IntN(80) {
				if len(seen) > 0 && rng.IntN(4) == 0 {
					batch = append(batch, seen[rng.IntN(len(seen))]) // another's, again
					continue
				}
				seq[creator]++
				d := det(TaskID(rng.IntN(20)), uint64(rng.IntN(200)), creator, seq[creator])
				batch = append(batch, d)
				seen = append(seen, d)
			}
			ack, ok := l.Store(EventLogBatch{Logger: 0, Epoch: epoch, Creator: creator, Determinants: batch})
			require.True(t, ok)
			for _, d := range batch {
				if d.RSN == 0 {
					continue
				}
				if d.Creator == creator {
					upTo[creator] = max(upTo[creator], d.Seq)
				}
				if _, held := want[key{d.Receiver, d.RSN}]; !held {
					want[key{d.Receiver, d.RSN}] = d
				}
			}
			require.Equal(t, EventLogAck{Logger: 0, Epoch: epoch, Creator: creator, UpTo: upTo[creator]}, ack, "seed %d", seed)
			if rng.IntN(10) != 0 {
				continue
			}
			task := TaskID(rng.IntN(20))
			var wantDets []Determinant
			for rsn := range uint64(200) {
				d, held := want[key{task, rsn}]
				require.Equal(t, held, l.HoldsDeterminant(task, rsn), "seed %d task %d rsn %d", seed, task, rsn)
				if held {
					wantDets = append(wantDets, d)
				}
			}
			got := l.Fetch(EventLogFetch{Logger: 0, PE: 1, Epoch: epoch, Tasks: []TaskID{task}})
			require.Equal(t, wantDets, got[0].Determinants, "seed %d task %d", seed, task)
		}
	}
}

// With every event logger dead the protocol's own rule is back: a record
// rides, its receivers acknowledge it, and once f+1 PEs hold it, it rides
// no more. (Before, every record made until the next checkpoint rode on
// every envelope: a job without periodic checkpoints piggybacked gigabytes
// after its only logger was killed.)
func TestEventLoggerAllDeadFallsBackToHolders(t *testing.T) {
	p := NewFullDet(Config{PE: 0, PEs: 3, EventLogger: true, Loggers: 1})
	p.HostTask(1)
	receiveOne(t, p)
	p.Ready()
	p.Advance()
	p.(EventLogging).EventLoggerFailed(0)

	p.Send(1, 2, Message{To: 5})
	r := p.Ready()
	require.Empty(t, r.EventLog, "no logger left")
	require.Len(t, r.Envelopes, 1)
	sent := r.Envelopes[0]
	sent.Determinants = slices.Clone(sent.Determinants)
	require.Len(t, sent.Determinants, 1, "unstable: it rides")
	require.NotZero(t, sent.Carry, "and its receiver is asked to acknowledge it")
	p.Advance()

	// The receiver, which knows no logger is left either, acknowledges.
	q := NewFullDet(Config{PE: 2, PEs: 3, EventLogger: true, Loggers: 1})
	q.HostTask(5)
	q.(EventLogging).EventLoggerFailed(0)
	q.Arrive(sent)
	var acks []Envelope
	for _, env := range q.Ready().Envelopes {
		if env.Kind == EnvelopeAck {
			acks = append(acks, env)
		}
	}
	require.Len(t, acks, 1)
	require.Equal(t, PEID(0), acks[0].To)
	require.Equal(t, sent.Carry, acks[0].Carry)

	// Held by pe0, pe2 and (acknowledged) pe1: f = 2 is met.
	p.Arrive(acks[0])
	p.Send(1, 1, Message{To: 6})
	require.Len(t, p.Ready().Envelopes[0].Determinants, 1, "on two PEs only: it still rides to pe1")
	p.Advance()
	p.Arrive(Envelope{Kind: EnvelopeAck, From: 1, To: 0, Determinants: sent.Determinants})
	p.Send(1, 1, Message{To: 6})
	require.Empty(t, p.Ready().Envelopes[0].Determinants, "on three PEs: stable")
	p.Advance()
}

// receiveOne has task 1 of p receive a message from task 7 and handle
// it, so that the reception makes a determinant, and returns the
// delivery.
func receiveOne(t *testing.T, p Protocol) Delivery {
	t.Helper()
	p.Arrive(Envelope{Kind: EnvelopeMessage, From: 1, To: 0, Message: Message{ID: commutative.MessageID{Sender: 7, SRN: 1}, To: 1}})
	d, ok := p.NextDelivery(1, func(Message) bool { return true })
	require.True(t, ok)
	p.EndHandler(1)
	return d
}
