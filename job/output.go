package job

// OutputFilter writes each line of job output once. A task numbers the
// lines it prints (from 0, the count checkpointed with it), so a task
// that re-executes after a failure or a rollback prints the lines it
// printed before with the same numbers: the filter admits a (task,
// number) pair the first time only. Lines that the failed PE printed but
// that never left it are admitted when the re-execution prints them.
// The zero value is ready to use.
type OutputFilter struct {
	seen map[outputLine]struct{}
}

type outputLine struct{ task, seq uint64 }

// Admit reports whether the seq-th line of task is new, and records it.
func (f *OutputFilter) Admit(task, seq uint64) bool {
	k := outputLine{task, seq}
	if _, ok := f.seen[k]; ok {
		return false
	}
	if f.seen == nil {
		f.seen = map[outputLine]struct{}{}
	}
	f.seen[k] = struct{}{}
	return true
}
