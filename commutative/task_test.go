package commutative

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNeedsDeterminant(t *testing.T) {
	require.False(t, OrderedAnnotation().NeedsDeterminant())
	require.False(t, CommutativeAnnotation(6).NeedsDeterminant())
	require.True(t, OrderDependentAnnotation().NeedsDeterminant())
	require.True(t, Annotation{}.NeedsDeterminant(), "the zero annotation is order-dependent")
	require.Panics(t, func() { CommutativeAnnotation(0) })
}

// runRegion handles the region's messages in the given order; each handler
// sends sendsPerMessage messages, then the completion step sends two. It
// returns every identity sent.
func runRegion(t *testing.T, order []MessageID, sendsPerMessage int) []MessageID {
	t.Helper()
	task := NewTaskState(7)
	var sent []MessageID
	sent = append(sent, task.NextSendID()) // a send before the region
	key := RegionKey{Handler: 1, Key: 42}
	for i, id := range order {
		require.True(t, task.Admits(CommutativeAnnotation(len(order)), key))
		task.BeginReception(id, CommutativeAnnotation(len(order)), key)
		for s := 0; s < sendsPerMessage; s++ {
			sent = append(sent, task.NextSendID())
		}
		complete := task.EndReception()
		require.Equal(t, i == len(order)-1, complete)
	}
	sent = append(sent, task.NextSendID(), task.NextSendID())
	return sent
}

func permutations(ids []MessageID) [][]MessageID {
	if len(ids) <= 1 {
		return [][]MessageID{slices.Clone(ids)}
	}
	var out [][]MessageID
	for i := range ids {
		rest := slices.Concat(ids[:i:i], ids[i+1:])
		for _, p := range permutations(rest) {
			out = append(out, append([]MessageID{ids[i]}, p...))
		}
	}
	return out
}

func TestRegionSendIdentitiesDoNotDependOnOrder(t *testing.T) {
	messages := []MessageID{
		{Sender: 1, SRN: 5},
		{Sender: 2, SRN: 9},
		{Sender: 3, SRN: 1, CPI: Child(MessageID{Sender: 4, SRN: 2}, 0)},
		{Sender: 3, SRN: 1, CPI: Child(MessageID{Sender: 4, SRN: 2}, 1)},
	}
	want := runRegion(t, messages, 3)
	wantSorted := slices.SortedFunc(slices.Values(want), MessageID.Compare)
	require.Len(t, slices.CompactFunc(slices.Clone(wantSorted), func(a, b MessageID) bool { return a == b }), len(want),
		"identities are unique")
	for _, order := range permutations(messages) {
		got := runRegion(t, order, 3)
		require.Equal(t, wantSorted, slices.SortedFunc(slices.Values(got), MessageID.Compare), "order %v", order)
		// Sends outside the region keep their positions.
		require.Equal(t, want[0], got[0])
		require.Equal(t, want[len(want)-2:], got[len(got)-2:])
	}
}

func TestSRNCountsSendsAndRegions(t *testing.T) {
	task := NewTaskState(1)
	require.Equal(t, MessageID{Sender: 1, SRN: 1}, task.NextSendID())
	task.BeginReception(MessageID{Sender: 2, SRN: 1}, OrderedAnnotation(), RegionKey{})
	require.Equal(t, MessageID{Sender: 1, SRN: 2}, task.NextSendID())
	require.False(t, task.EndReception())
	key := RegionKey{Handler: 3, Key: 1}
	task.BeginReception(MessageID{Sender: 2, SRN: 2}, CommutativeAnnotation(2), key)
	inside := task.NextSendID()
	require.Equal(t, uint64(3), inside.SRN, "the region takes one SRN")
	require.False(t, inside.CPI.IsEmpty())
	task.EndReception()
	task.BeginReception(MessageID{Sender: 5, SRN: 1}, CommutativeAnnotation(2), key)
	require.Equal(t, uint64(3), task.NextSendID().SRN)
	require.True(t, task.EndReception())
	require.Equal(t, MessageID{Sender: 1, SRN: 4}, task.NextSendID(), "completion sends are ordinary")
	require.Equal(t, uint64(3), task.RSN)
}

func TestRegionIsIsolated(t *testing.T) {
	task := NewTaskState(1)
	key := RegionKey{Handler: 3, Key: 1}
	task.BeginReception(MessageID{Sender: 2, SRN: 1}, CommutativeAnnotation(3), key)
	task.EndReception()
	require.False(t, task.Admits(OrderDependentAnnotation(), RegionKey{}))
	require.False(t, task.Admits(OrderedAnnotation(), RegionKey{}))
	require.False(t, task.Admits(CommutativeAnnotation(3), RegionKey{Handler: 3, Key: 2}), "the next iteration's region waits")
	require.True(t, task.Admits(CommutativeAnnotation(3), key))
	require.PanicsWithValue(t,
		"commutative: task 1 received t9#1 (order-dependent) while region {Handler:3 Key:1} is open",
		func() { task.BeginReception(MessageID{Sender: 9, SRN: 1}, OrderDependentAnnotation(), RegionKey{}) })
}

func TestReceptionMisuseBreaksInvariants(t *testing.T) {
	task := NewTaskState(1)
	require.Panics(t, func() { task.EndReception() })
	task.BeginReception(MessageID{Sender: 2, SRN: 1}, OrderedAnnotation(), RegionKey{})
	require.True(t, task.InReception())
	require.Panics(t, func() { task.BeginReception(MessageID{Sender: 2, SRN: 2}, OrderedAnnotation(), RegionKey{}) })
}

func TestNestedPathsStayUniqueAndReadable(t *testing.T) {
	root := MessageID{Sender: 1, SRN: 4}
	child := MessageID{Sender: 2, SRN: 7, CPI: Child(root, 1)}
	grandchild := Child(child, 0)
	require.Equal(t, "/(t2#7/(t1#4).1).0", grandchild.String())
	seen := map[Path]string{}
	for sender := TaskID(1); sender <= 3; sender++ {
		for srn := uint64(1); srn <= 3; srn++ {
			for index := uint32(0); index < 3; index++ {
				for _, parent := range []Path{{}, Child(root, 0), Child(root, 1)} {
					p := Child(MessageID{Sender: sender, SRN: srn, CPI: parent}, index)
					name := fmt.Sprint(sender, srn, index, parent)
					require.NotContains(t, seen, p, "collision between %s and %s", seen[p], name)
					seen[p] = name
				}
			}
		}
	}
}

func TestPathNamesItsTrigger(t *testing.T) {
	_, _, ok := Path{}.Trigger()
	require.False(t, ok)
	root := MessageID{Sender: 1, SRN: 4}
	nested := MessageID{Sender: 2, SRN: 7, CPI: Child(root, 1)}
	for _, trigger := range []MessageID{root, nested} {
		got, index, ok := Child(trigger, 3).Trigger()
		require.True(t, ok)
		require.Equal(t, trigger, got)
		require.Equal(t, uint32(3), index)
	}
}
