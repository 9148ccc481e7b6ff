package evaluation

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Case is one job of the evaluation: an application under one protocol,
// without a failure (forward path) or with one PE killed in the middle of
// a checkpoint period.
type Case struct {
	App      string `json:"app"`
	Protocol string `json:"protocol"` // none, fulldet or partialdet
	Failure  bool   `json:"failure"`
	// Spread is --restore-spread for failure cases: 1, 2, ... or 0 for all
	// survivors.
	Spread int `json:"spread"`
	Rep    int `json:"rep"`
}

func (c Case) String() string {
	s := fmt.Sprintf("%s %s", c.App, c.Protocol)
	if c.Failure {
		s += " failure spread=" + spreadName(c.Spread)
	} else {
		s += " forward"
	}
	return fmt.Sprintf("%s rep %d", s, c.Rep+1)
}

func spreadName(k int) string {
	if k == 0 {
		return "all"
	}
	return strconv.Itoa(k)
}

// Checkpoint is one committed checkpoint of a run.
type Checkpoint struct {
	Epoch int     `json:"epoch"`
	MS    float64 `json:"ms"`
	Bytes int64   `json:"bytes"`
}

// Event is a moment of a run, timed by the arrival of its log line at the
// evaluation (ms since the launcher process started).
type Event struct {
	AtMS float64 `json:"at_ms"`
	What string  `json:"what"` // begin, kill, failed, restored, regained, recovered, checkpoint, end
}

// Run is the measured outcome of one case.
type Run struct {
	Case
	Args  []string `json:"args"`
	OK    bool     `json:"ok"`
	Error string   `json:"error,omitempty"`
	WallS float64  `json:"wall_s"`
	// CPUS is the CPU time (user + system) of the whole job: the
	// launcher and the PE and logger processes it started and waited
	// for.
	CPUS float64 `json:"cpu_s"`
	// ElapsedS is the application's own run time and StepMS its time per
	// step (from the application's JSON line).
	ElapsedS float64 `json:"elapsed_s"`
	StepMS   float64 `json:"step_ms"`
	Steps    int     `json:"steps"`
	Digest   string  `json:"digest"`
	// From `job stats` (with a failure: the survivors' counters).
	Handled          int64 `json:"handled"`
	Determinants     int64 `json:"determinants"`
	PiggybackedBytes int64 `json:"piggybacked_bytes"`
	LogBytes         int64 `json:"log_bytes"`
	RestoredTasks    int64 `json:"restored_tasks"`
	RolledBackTasks  int64 `json:"rolled_back_tasks"`
	// The log's largest per-PE high-water mark (under --log-quota, of its
	// memory), and with a quota the bytes dumped to loggers and the time
	// blocked waiting for them (summed over the PEs, from `job stats`),
	// and the bytes fetched back from them (summed over the PE stats).
	LogPeakBytes    int64 `json:"log_peak_bytes"`
	LogDumpedBytes  int64 `json:"log_dumped_bytes,omitempty"`
	LogBlockedMS    int64 `json:"log_blocked_ms,omitempty"`
	LogFetchedBytes int64 `json:"log_fetched_bytes,omitempty"`
	// With --event-logger, the records and bytes the PEs sent to the
	// loggers (from `job stats`).
	EventLogRecords int64 `json:"event_log_records,omitempty"`
	EventLogBytes   int64 `json:"event_log_bytes,omitempty"`

	Checkpoints []Checkpoint `json:"checkpoints"`
	// Recovery, for failure cases, as the launcher reports it: detection
	// from the kill to the launcher's notice; restore; the catch-up from
	// the restore until every task offered again the step the job had
	// reached at the failure (RegainedStep), and failure → that moment
	// (RegainedMS, the recovery time); replay + catch-up from the restore
	// to the first checkpoint after the failure, and failure → that
	// checkpoint (SinceFailureMS).
	DetectionMS     float64 `json:"detection_ms"`
	RestoreMS       float64 `json:"restore_ms"`
	CatchUpMS       float64 `json:"catch_up_ms"`
	RegainedMS      float64 `json:"regained_ms"`
	RegainedStep    int64   `json:"regained_step"`
	ReplayCatchUpMS float64 `json:"replay_catch_up_ms"`
	SinceFailureMS  float64 `json:"since_failure_ms"`
	Events          []Event `json:"events"`
}

// line is one output line of a job and when it arrived.
type line struct {
	at     time.Duration
	stderr bool
	text   string
}

// execute runs `exe run APP args...` and parses what it prints.
func execute(ctx context.Context, exe string, c Case, args []string, timeout time.Duration) Run {
	r := Run{Case: c, Args: args}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, args...)
	// An interrupt lets the launcher stop its PE processes.
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		r.Error = fmt.Sprintf("stdout pipe: %v", err)
		return r
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		r.Error = fmt.Sprintf("stderr pipe: %v", err)
		return r
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		r.Error = fmt.Sprintf("start: %v", err)
		return r
	}
	var mu sync.Mutex
	var lines []line
	var wg sync.WaitGroup
	read := func(rd io.Reader, isErr bool) {
		defer wg.Done()
		sc := bufio.NewScanner(rd)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			l := line{at: time.Since(start), stderr: isErr, text: sc.Text()}
			mu.Lock()
			lines = append(lines, l)
			mu.Unlock()
		}
	}
	wg.Add(2)
	go read(stdout, false)
	go read(stderr, true)
	wg.Wait()
	werr := cmd.Wait()
	r.WallS = time.Since(start).Seconds()
	if st := cmd.ProcessState; st != nil {
		r.CPUS = (st.UserTime() + st.SystemTime()).Seconds()
	}
	perr := parseOutput(&r, lines)
	r.Events = append(r.Events, Event{AtMS: ms(time.Since(start)), What: "end"})
	switch {
	case ctx.Err() != nil:
		r.Error = fmt.Sprintf("timed out after %v", timeout)
	case werr != nil:
		r.Error = fmt.Sprintf("exit: %v; last lines:\n%s", werr, tail(lines, 5))
	case perr != nil:
		r.Error = perr.Error()
	default:
		r.OK = true
	}
	return r
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func tail(lines []line, n int) string {
	var b strings.Builder
	for _, l := range lines[max(0, len(lines)-n):] {
		b.WriteString("  " + l.text + "\n")
	}
	return b.String()
}

var (
	kvRE     = regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_]*)=("(?:[^"\\]|\\.)*"|\S*)`)
	stagedRE = regexp.MustCompile(`^checkpoint (\d+) staged and copied to buddies: (\d+) bytes`)
)

// logfmt parses the key=value pairs of a slog text line; a "[pe N] "
// prefix is skipped.
func logfmt(s string) map[string]string {
	if strings.HasPrefix(s, "[pe ") {
		if i := strings.Index(s, "] "); i > 0 {
			s = s[i+2:]
		}
	}
	kv := map[string]string{}
	for _, m := range kvRE.FindAllStringSubmatch(s, -1) {
		v := m[2]
		if strings.HasPrefix(v, `"`) {
			if u, err := strconv.Unquote(v); err == nil {
				v = u
			}
		}
		if _, dup := kv[m[1]]; !dup {
			kv[m[1]] = v
		}
	}
	return kv
}

// appResult holds the fields of the three applications' JSON lines that
// the evaluation uses.
type appResult struct {
	App        string  `json:"app"`
	ElapsedS   float64 `json:"elapsed_s"`
	Iterations int     `json:"iterations"`
	Steps      int     `json:"steps"`
	MsPerStep  float64 `json:"ms_per_step"`
	JobDigest  string  `json:"job_digest"`
	Digest     string  `json:"digest"`
}

// errNoResult is returned when a job printed no JSON result line.
var errNoResult = errors.New("no JSON result line on stdout")

// parseOutput fills r from a job's output lines.
func parseOutput(r *Run, lines []line) error {
	var res *appResult
	var jsonErr error
	staged := map[int]int64{}
	var failedAt, killAt float64 = -1, -1
	regained := false
	statsMissing := ""
	for _, l := range lines {
		at := ms(l.at)
		if !l.stderr {
			if strings.HasPrefix(l.text, "{") {
				var a appResult
				if err := json.Unmarshal([]byte(l.text), &a); err != nil {
					jsonErr = fmt.Errorf("result line: %w", err)
					continue
				}
				res = &a
			}
			continue
		}
		kv := logfmt(l.text)
		msg := kv["msg"]
		num := func(k string) float64 {
			f, _ := strconv.ParseFloat(kv[k], 64)
			return f
		}
		inum := func(k string) int64 {
			n, _ := strconv.ParseInt(kv[k], 10, 64)
			return n
		}
		switch {
		case msg == "all PEs ready; job begins":
			r.Events = append(r.Events, Event{AtMS: at, What: "begin"})
		case msg == "checkpoint committed":
			r.Checkpoints = append(r.Checkpoints, Checkpoint{Epoch: int(inum("epoch")), MS: num("ms")})
			r.Events = append(r.Events, Event{AtMS: at, What: "checkpoint"})
		case stagedRE.MatchString(msg):
			m := stagedRE.FindStringSubmatch(msg)
			e, _ := strconv.Atoi(m[1])
			b, _ := strconv.ParseInt(m[2], 10, 64)
			staged[e] = b
		case strings.HasPrefix(msg, "failure injection: killing this PE"):
			killAt = at
			r.Events = append(r.Events, Event{AtMS: at, What: "kill"})
		case msg == "PE failed":
			failedAt = at
			r.Events = append(r.Events, Event{AtMS: at, What: "failed"})
		case msg == "recovery: tasks restored, replay starts" || msg == "recovery: every task rolled back to the checkpoint":
			r.RestoreMS = num("restore_ms")
			r.Events = append(r.Events, Event{AtMS: at, What: "restored"})
		case msg == "recovery report: progress at the failure regained":
			regained = true
			r.RegainedStep = inum("step")
			r.CatchUpMS = num("catch_up_ms")
			r.RegainedMS = num("since_failure_ms")
			r.Events = append(r.Events, Event{AtMS: at, What: "regained"})
		case msg == "recovery report: first checkpoint after the failure":
			r.ReplayCatchUpMS = num("replay_and_catch_up_ms")
			r.SinceFailureMS = num("since_failure_ms")
			r.Events = append(r.Events, Event{AtMS: at, What: "recovered"})
		case strings.HasPrefix(msg, "PE stats missing"):
			statsMissing = kv["pes"]
		case msg == "job stats":
			r.Handled = inum("handled")
			r.Determinants = inum("determinants")
			r.PiggybackedBytes = inum("piggybacked_bytes")
			r.LogBytes = inum("log_bytes")
			r.RestoredTasks = inum("restored_tasks")
			r.RolledBackTasks = inum("rolled_back_tasks")
			r.LogPeakBytes = inum("largest_log_peak_bytes")
			r.LogDumpedBytes = inum("log_dumped_bytes")
			r.LogBlockedMS = inum("log_blocked_ms")
			r.EventLogRecords = inum("event_log_records")
			r.EventLogBytes = inum("event_log_bytes")
		case msg == "PE stats":
			r.LogFetchedBytes += inum("log_fetched_bytes")
		}
	}
	for i := range r.Checkpoints {
		r.Checkpoints[i].Bytes = staged[r.Checkpoints[i].Epoch]
	}
	if killAt >= 0 && failedAt >= killAt {
		r.DetectionMS = failedAt - killAt
	}
	if res == nil {
		if jsonErr != nil {
			return jsonErr
		}
		return errNoResult
	}
	r.Steps = max(res.Iterations, res.Steps)
	r.Digest = res.JobDigest
	if r.Digest == "" {
		r.Digest = res.Digest
	}
	switch {
	case res.MsPerStep > 0:
		r.StepMS = res.MsPerStep
		r.ElapsedS = res.MsPerStep * float64(r.Steps) / 1000
	case r.Steps > 0:
		r.ElapsedS = res.ElapsedS
		r.StepMS = res.ElapsedS * 1000 / float64(r.Steps)
	default:
		return fmt.Errorf("result line has no step count")
	}
	if statsMissing != "" {
		return fmt.Errorf("the job stats leave out PEs %s (their counters did not come)", statsMissing)
	}
	if r.Failure && !regained {
		return fmt.Errorf("failure case without a recovery report that the progress at the failure was regained")
	}
	if r.Failure && r.SinceFailureMS == 0 {
		return fmt.Errorf("failure case without a recovery report (no checkpoint after the failure?)")
	}
	return nil
}
