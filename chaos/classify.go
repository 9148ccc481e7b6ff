package chaos

import (
	"encoding/json"
	"errors"
	"regexp"
	"strconv"
	"strings"
)

// Class is the outcome of a run.
type Class string

const (
	// Right: the job ended with status 0 and the digest of its
	// failure-free configuration.
	Right Class = "right"
	// Wrong: the job printed a digest other than the failure-free one.
	Wrong Class = "wrong"
	// Error: the job exited non-zero or printed no digest (its last error
	// line says why).
	Error Class = "error"
	// Hang: the job did not end before its deadline.
	Hang Class = "hang"
)

// Classes are the classes, in the order tables list them.
var Classes = []Class{Right, Wrong, Error, Hang}

// Outcome is what a job did, as the campaign saw it.
type Outcome struct {
	// ExitCode is the launcher's exit status (-1 when a signal ended it).
	ExitCode int
	// TimedOut: the job was still running at its deadline; by then
	// StderrAtDeadline lines of Stderr had come (the rest are what its
	// processes printed as they were stopped: goroutine dumps).
	TimedOut         bool
	StderrAtDeadline int
	Stdout           []string
	Stderr           []string
}

// errNoDigest is returned when a job printed no result line with a digest.
var errNoDigest = errors.New("no JSON result line with a digest on stdout")

// Digest returns the digest in a job's JSON result line: stencil3d prints
// it as job_digest, leanmd and lulesh as digest. The last such line wins.
func Digest(stdout []string) (string, error) {
	var digest string
	var lastErr error = errNoDigest
	for _, l := range stdout {
		if !strings.HasPrefix(l, "{") {
			continue
		}
		var res struct {
			JobDigest string `json:"job_digest"`
			Digest    string `json:"digest"`
		}
		if err := json.Unmarshal([]byte(l), &res); err != nil {
			lastErr = errors.New("unreadable JSON result line: " + err.Error())
			continue
		}
		d := res.JobDigest
		if d == "" {
			d = res.Digest
		}
		if d != "" {
			digest, lastErr = d, nil
		}
	}
	return digest, lastErr
}

// LastError returns the line of a job's standard error that best says why
// it failed: the last "gochare: ..." line, else the last ERROR or WARN
// log line, else the last line.
func LastError(stderr []string) string {
	var errLine, warnLine string
	for _, l := range stderr {
		switch {
		case strings.HasPrefix(l, "gochare: "):
			return lastGochareLine(stderr)
		case strings.Contains(l, "level=ERROR") || isPanic(l):
			errLine = l
		case strings.Contains(l, "level=WARN"):
			warnLine = l
		}
	}
	switch {
	case errLine != "":
		return errLine
	case warnLine != "":
		return warnLine
	case len(stderr) > 0:
		return stderr[len(stderr)-1]
	}
	return ""
}

// isPanic reports a Go runtime's panic or fatal error line, of the
// launcher or of a PE ("[pe N] " prefix).
func isPanic(l string) bool {
	if strings.HasPrefix(l, "[pe ") {
		if i := strings.Index(l, "] "); i > 0 {
			l = l[i+2:]
		}
	}
	return strings.HasPrefix(l, "panic:") || strings.HasPrefix(l, "fatal error:")
}

func lastGochareLine(stderr []string) string {
	for i := len(stderr) - 1; i >= 0; i-- {
		if strings.HasPrefix(stderr[i], "gochare: ") {
			return stderr[i]
		}
	}
	return ""
}

// Classify returns the class of a run that ended with o, against the
// failure-free digest expected, with the digest it printed and a detail
// for anything but Right. A digest that differs is Wrong even when the job
// also failed; a hang is a hang whatever it printed.
func Classify(o Outcome, expected string) (Class, string, string) {
	digest, derr := Digest(o.Stdout)
	switch {
	case o.TimedOut:
		return Hang, digest, "no end before the deadline; last line before it: " + lastLine(o.Stderr[:min(o.StderrAtDeadline, len(o.Stderr))])
	case derr == nil && digest != expected:
		return Wrong, digest, "digest " + digest + ", failure-free " + expected
	case o.ExitCode != 0:
		return Error, digest, "exit status " + strconv.Itoa(o.ExitCode) + ": " + LastError(o.Stderr)
	case derr != nil:
		return Error, digest, derr.Error() + "; " + LastError(o.Stderr)
	}
	return Right, digest, ""
}

func lastLine(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	return lines[len(lines)-1]
}

// jobStatsPeakRE is the launcher's job stats line's largest sender log
// high-water mark.
var jobStatsPeakRE = regexp.MustCompile(`msg="job stats" .*largest_log_peak_bytes=(\d+)`)

// LogPeakBytes returns the largest PE's sender log high-water mark of a
// job's standard error (its job stats line).
func LogPeakBytes(stderr []string) (int64, bool) {
	for i := len(stderr) - 1; i >= 0; i-- {
		if m := jobStatsPeakRE.FindStringSubmatch(stderr[i]); m != nil {
			n, err := strconv.ParseInt(m[1], 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// The launcher's log lines the campaign watches.
var (
	pidsRE = regexp.MustCompile(`msg="started PEs" .*pids="\[([0-9 ]*)\]"`)
	// failedRE is the launcher's notice of a PE failure (its own line,
	// not a PE's, which would have a "[pe N] " prefix).
	failedRE = regexp.MustCompile(`^level=ERROR msg="PE failed"(?: |$)`)
	// earlyRE is the launcher's notice of a PE that failed before the
	// job began: started again, or left out with its tasks elsewhere.
	earlyRE = regexp.MustCompile(`^level=(?:WARN|ERROR) msg="PE failed before (?:it joined the job|the job began);`)
	// lateRE is the launcher's notice of a PE killed after a task asked
	// the job to exit: no recovery follows, the job ends as decided.
	lateRE     = regexp.MustCompile(`^level=WARN msg="PE failed after the job's exit was requested; the job ends as decided" pe=(\d+)`)
	selfKillRE = regexp.MustCompile(`^\[pe (\d+)\] .*msg="failure injection: killing this PE"`)
	beginRE    = regexp.MustCompile(`^level=INFO msg="all PEs ready; job begins"`)
	// loggerPidsRE: one pid is logged without quotes.
	loggerPidsRE = regexp.MustCompile(`^level=INFO msg="started loggers" .*pids="?\[([0-9 ]*)\]`)
	// loggerFailedRE is the launcher's notice of a logger's failure while
	// the job goes on; lateLoggerRE one after the job's end was decided.
	loggerFailedRE = regexp.MustCompile(`^level=ERROR msg="logger failed; the job goes on"`)
	lateLoggerRE   = regexp.MustCompile(`^level=WARN msg="logger failed after the job's end`)
	// endKilledLoggerRE: a logger that had not ended when the job did
	// (stopped, and not yet caught by the heartbeats) was killed.
	endKilledLoggerRE = regexp.MustCompile(`^level=WARN msg="logger did not end after the job's end; killed" logger=(\d+)`)
)

// LoggerKilledAtEnd returns the number of a logger the launcher killed
// because it had not ended when the job did.
func LoggerKilledAtEnd(line string) (int, bool) {
	m := endKilledLoggerRE.FindStringSubmatch(line)
	if m == nil {
		return 0, false
	}
	n, err := strconv.Atoi(m[1])
	return n, err == nil
}

// LoggerPIDs returns the logger process ids, by number, of the
// launcher's "started loggers" line.
func LoggerPIDs(line string) ([]int, bool) {
	m := loggerPidsRE.FindStringSubmatch(line)
	if m == nil {
		return nil, false
	}
	return parsePIDs(m[1])
}

// IsLoggerFailureNotice reports the launcher's line announcing a
// logger's failure, after which the job goes on.
func IsLoggerFailureNotice(line string) bool { return loggerFailedRE.MatchString(line) }

// IsLateLoggerFailure reports the launcher's line for a logger that
// failed after the job's end was decided.
func IsLateLoggerFailure(line string) bool { return lateLoggerRE.MatchString(line) }

// IsJobBegin reports the launcher's line announcing that every PE is
// ready (the initial checkpoint is committed) and the job begins.
func IsJobBegin(line string) bool { return beginRE.MatchString(line) }

// StartedPIDs returns the PE process ids, by rank, of the launcher's
// "started PEs" line.
func StartedPIDs(line string) ([]int, bool) {
	m := pidsRE.FindStringSubmatch(line)
	if m == nil {
		return nil, false
	}
	return parsePIDs(m[1])
}

func parsePIDs(list string) ([]int, bool) {
	var pids []int
	for _, f := range strings.Fields(list) {
		n, err := strconv.Atoi(f)
		if err != nil || n <= 0 {
			return nil, false
		}
		pids = append(pids, n)
	}
	return pids, len(pids) > 0
}

// IsFailureNotice reports the launcher's line announcing a PE failure, on
// which the coordinator starts a recovery.
func IsFailureNotice(line string) bool { return failedRE.MatchString(line) }

// failedPERE is the PE a launcher's failure notice names, in its detail.
var failedPERE = regexp.MustCompile(` detail="PE (\d+) `)

// FailedPE returns the rank of the PE a launcher's failure notice
// (IsFailureNotice) names.
func FailedPE(line string) (int, bool) {
	if !IsFailureNotice(line) {
		return 0, false
	}
	m := failedPERE.FindStringSubmatch(line)
	if m == nil {
		return 0, false
	}
	n, err := strconv.Atoi(m[1])
	return n, err == nil
}

// LateFailure returns the rank of a PE the launcher says failed after the
// job's exit was requested (the failure came too late to matter).
func LateFailure(line string) (int, bool) {
	m := lateRE.FindStringSubmatch(line)
	if m == nil {
		return 0, false
	}
	n, err := strconv.Atoi(m[1])
	return n, err == nil
}

// IsEarlyFailureNotice reports the launcher's line announcing a PE that
// failed before the job began, which needs no recovery: the PE is started
// again, or left out and its tasks created on the others.
func IsEarlyFailureNotice(line string) bool { return earlyRE.MatchString(line) }

// SelfKill returns the rank of a PE that announced it kills itself (a
// launcher-injected failure at a step).
func SelfKill(line string) (int, bool) {
	m := selfKillRE.FindStringSubmatch(line)
	if m == nil {
		return 0, false
	}
	n, err := strconv.Atoi(m[1])
	return n, err == nil
}

// designedError is a case the runtime documents it cannot handle (README,
// "Loggers", "Log quota", "Event logger", the buddy checkpoints): the job
// stops with an error that says so, which is not a wrong result.
type designedError struct {
	// name says the case; text is in the error; when says whether the
	// run's failures (pes of PEs, loggers of loggers) can lead to it.
	name, text string
	when       func(r Run, pes, loggers int) bool
}

var designedErrors = []designedError{
	{"both copies of a checkpoint lost, no disk checkpoint", "migrate: unrecoverable from memory",
		func(r Run, pes, _ int) bool { return pes >= 2 }},
	{"a full log and no logger left", "the sender log reached its quota and no logger is left to dump to",
		func(r Run, _, loggers int) bool { return r.Setup.Quota() && loggers >= r.Loggers }},
	{"dumped log entries lost with a logger", "logged messages dumped to a failed logger may be needed",
		func(r Run, pes, loggers int) bool { return r.Setup.Quota() && loggers > 0 && pes > 0 }},
	{"dumped log entries lost with a logger", "log entries needed by a recovery were held by a failed logger",
		func(r Run, pes, loggers int) bool { return r.Setup.Quota() && loggers > 0 && pes > 0 }},
	{"event log lost with a logger", "a PE and an event logger failed in the same checkpoint period",
		func(r Run, pes, loggers int) bool { return r.Setup.EventLogger() && loggers > 0 && pes > 0 }},
	{"a message larger than the quota", "a message is larger than the sender log's quota",
		func(r Run, _, _ int) bool { return r.Setup.Quota() }},
}

// failed counts the run's planned failures of loggers (or of PEs).
func (r Run) failed(loggers bool) int {
	n := 0
	for _, f := range r.Failures {
		if f.Logger == loggers {
			n++
		}
	}
	return n
}

// DesignedError returns the designed case (README) that the error of a
// run, as detail says it, is; "" when it is none, or when the run's
// failures cannot lead to it. Its failures are the planned ones, or as
// many as the launcher announced (PEs and loggers it declared dead by
// itself, a tuned heartbeat bound under load, count too).
func DesignedError(detail string, run Run, announcedPEs, announcedLoggers int) string {
	pes, loggers := max(run.failed(false), announcedPEs), max(run.failed(true), announcedLoggers)
	for _, d := range designedErrors {
		if strings.Contains(detail, d.text) && d.when(run, pes, loggers) {
			return d.name
		}
	}
	return ""
}
