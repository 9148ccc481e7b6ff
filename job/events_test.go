package job

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"
)

// peRecorder and driverRecorder note which of their methods was called.
type (
	peRecorder     struct{ called string }
	driverRecorder struct{ called string }
)

func (r *peRecorder) Begin(Begin)                           { r.called = "Begin" }
func (r *peRecorder) Resume(Resume)                         { r.called = "Resume" }
func (r *peRecorder) Stop(Stop)                             { r.called = "Stop" }
func (r *peRecorder) Probe(Probe)                           { r.called = "Probe" }
func (r *peRecorder) QuiescenceDetected(QuiescenceDetected) { r.called = "QuiescenceDetected" }
func (r *peRecorder) TakeCheckpoint(TakeCheckpoint)         { r.called = "TakeCheckpoint" }
func (r *peRecorder) CommitCheckpoint(CommitCheckpoint)     { r.called = "CommitCheckpoint" }
func (r *peRecorder) CollectLoads(CollectLoads)             { r.called = "CollectLoads" }
func (r *peRecorder) Migrate(Migrate)                       { r.called = "Migrate" }
func (r *peRecorder) Recover(Recover)                       { r.called = "Recover" }
func (r *peRecorder) NoticeFailure(NoticeFailure)           { r.called = "NoticeFailure" }
func (r *peRecorder) Rollback(Rollback)                     { r.called = "Rollback" }
func (r *peRecorder) WatchProgress(WatchProgress)           { r.called = "WatchProgress" }
func (r *peRecorder) ReportProgress(ReportProgress)         { r.called = "ReportProgress" }
func (r *peRecorder) Diagnose(Diagnose)                     { r.called = "Diagnose" }

func (r *driverRecorder) Send(Send)                         { r.called = "Send" }
func (r *driverRecorder) WriteManifest(WriteManifest)       { r.called = "WriteManifest" }
func (r *driverRecorder) SendDiskRecords(SendDiskRecords)   { r.called = "SendDiskRecords" }
func (r *driverRecorder) Started(Started)                   { r.called = "Started" }
func (r *driverRecorder) Restored(Restored)                 { r.called = "Restored" }
func (r *driverRecorder) ProgressRegained(ProgressRegained) { r.called = "ProgressRegained" }

// checkDispatch checks, for every method of the handler interface iface,
// that it is named after the type it takes, that this type is of the
// sealed set, and that a value of it dispatches to that very method.
func checkDispatch(t *testing.T, iface, sealed reflect.Type, dispatch func(v any) string) {
	t.Helper()
	require.Positive(t, iface.NumMethod())
	for i := range iface.NumMethod() {
		m := iface.Method(i)
		require.Equal(t, 1, m.Type.NumIn(), "%s takes one argument", m.Name)
		arg := m.Type.In(0)
		require.Equal(t, m.Name, arg.Name(), "%s is named after what it takes", m.Name)
		require.True(t, arg.Implements(sealed), "%s takes %v, which is no %v", m.Name, arg, sealed)
		require.Equal(t, m.Name, dispatch(reflect.Zero(arg).Interface()), "%v dispatches to %s", arg, m.Name)
	}
}

// Every method of PEHandler has its event, which dispatches to it; every
// method of Driver has its command, likewise. (That every event and
// command has its method, the compiler checks.)
func TestEventsAndCommandsDispatchToTheirMethod(t *testing.T) {
	checkDispatch(t, reflect.TypeFor[PEHandler](), reflect.TypeFor[Event](), func(v any) string {
		var r peRecorder
		v.(Event).Dispatch(&r)
		return r.called
	})
	checkDispatch(t, reflect.TypeFor[Driver](), reflect.TypeFor[Command](), func(v any) string {
		var r driverRecorder
		v.(Command).Dispatch(&r)
		return r.called
	})
}

// A destination is every live PE or one; a negative rank is a bug.
func TestDestination(t *testing.T) {
	_, one := EveryPE.PE()
	require.False(t, one)
	rank, one := ToPE(3).PE()
	require.True(t, one)
	require.Equal(t, 3, rank)
	require.Equal(t, "PE 3", ToPE(3).String())
	require.Equal(t, "every PE", EveryPE.String())
	require.Panics(t, func() { ToPE(-1) })
}
