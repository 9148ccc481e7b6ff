package launcher

import (
	"flag"
	"fmt"
	"io"
	"path/filepath"

	"github.com/gochare/gochare/actor"
	"github.com/gochare/gochare/scheduler"
)

// checkRecordDir refuses a --record directory that already holds a
// record: one directory holds the record of one run.
func checkRecordDir(dir string) error {
	old, err := filepath.Glob(filepath.Join(dir, "pe-*.rec"))
	if err != nil {
		return fmt.Errorf("%w: --record %s: %v", errUsage, dir, err)
	}
	if len(old) > 0 {
		return fmt.Errorf("%w: --record %s already holds a record (%s): give an empty directory", errUsage, dir, filepath.Base(old[0]))
	}
	return nil
}

// cmdReplay is gochare replay: one task of a recorded run, again, in this
// process (scheduler.Replay).
func cmdReplay(args []string, stdout, stderr io.Writer, apps map[string]actor.App) (int, error) {
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("record", "", "record directory (gochare run --record DIR)")
	task := fs.String("task", "", "the task to replay: COLLECTION[i,j,...]")
	from := fs.Uint64("from-epoch", 0, "epoch of the checkpoint to start from (default: the first recorded)")
	to := fs.Int("to-step", 0, "stop after this many runs of the task's code (default: the whole period)")
	verbose := fs.Bool("v", false, "a line per run replayed")
	if err := fs.Parse(args); err != nil {
		return 2, fmt.Errorf("%w: %v", errUsage, err)
	}
	if *dir == "" || *task == "" || fs.NArg() > 0 {
		return 2, fmt.Errorf("%w: replay needs --record DIR and --task COLLECTION[i,j,...], and nothing else", errUsage)
	}
	if *to < 0 {
		return 2, fmt.Errorf("%w: --to-step %d: want a number >= 0", errUsage, *to)
	}
	res, err := scheduler.Replay(scheduler.ReplayConfig{Dir: *dir, Apps: apps, Task: *task, FromEpoch: *from, ToStep: *to, Verbose: *verbose, Out: stdout})
	if res.Task != "" && res.File != "" {
		summary := fmt.Sprintf("replay: %s from its checkpoint %d, recorded on PE %d (generation %d) in %s, period %s\n"+
			"replay: %d of %d runs replayed as recorded (%d sends)",
			res.Task, res.Epoch, res.Rank, res.Generation, filepath.Base(res.File), res.End, res.Steps, res.Recorded, res.Sends)
		if res.StateChecked {
			summary += "; state at the period's end as recorded"
		}
		fmt.Fprintln(stdout, summary)
	}
	if err != nil {
		return 1, fmt.Errorf("replay: %w", err)
	}
	return 0, nil
}
