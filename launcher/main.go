package launcher

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gochare/gochare/actor"
	"github.com/gochare/gochare/internal/jobtls"
	coord "github.com/gochare/gochare/job"
	"github.com/gochare/gochare/logging"
	"github.com/gochare/gochare/migrate"
	"github.com/gochare/gochare/scheduler"
	"github.com/gochare/gochare/scheduler/transport"
)

const usageHead = `usage:
  gochare run APP --pes N [launcher flags] [app flags]
      run APP on N PE processes on this machine
      launcher flags:
        --pes N                 number of PEs (required)
        --listen HOST:PORT      coordinator address (default 127.0.0.1:0)
        --external              start no PE: wait for N PEs started by hand,
                                ssh or srun with 'gochare pe'
        --secret-file FILE      with --external: write the job secret there
        --tls                   every PE-to-PE and PE-to-coordinator
                                connection is mutual TLS 1.3, with a CA
                                and certificates made for the job; PEs
                                read them from --secret-dir, and no
                                secret travels in the environment. A
                                connection without a certificate of the
                                job is refused and logged. Needs
                                --transport tcp
        --secret-dir DIR        with --tls: write the PEs' TLS files
                                (ca.crt, pe.crt, pe.key, mode 0600) in DIR
                                (default: a temporary directory, removed
                                at the end); for --external PEs on other
                                hosts, a directory they all read
        --heartbeat-timeout D   declare a PE dead after D without a sign of
                                life (default 5s); the launcher then
                                SIGKILLs it if it started it, and recovery
                                proceeds as for a crash. A PE that hears
                                nothing from the launcher for D stops
                                itself with an error
        --join-timeout D        kill and start again a PE this launcher
                                started that has not joined and got ready
                                within D of its start (default 30s)
        --stall-timeout D       stop the job with a diagnosis of what waits
                                for what when it makes no progress for D
                                (default 60s)
        --ft PROTOCOL           fault tolerance: none (checkpoint/restart),
                                fulldet or partialdet (default partialdet)
        --failures F            under fulldet or partialdet without
                                --event-logger: the failures f between two
                                checkpoints recovered by replaying only
                                the failed PEs' tasks (default 2; from 1
                                to 8, and below --pes). A determinant or
                                progress record rides on messages until
                                f+1 PEs hold it: f=1 costs less on the
                                forward path; one failure more since the
                                last checkpoint rolls every task back to
                                it (the log says why)
        --checkpoint-every K    checkpoint at every K-th sync point (step) of
                                the application (0: only the initial
                                checkpoint). Default with fulldet and
                                partialdet: a sync point every 10 steps,
                                which checkpoints once a PE's sender log
                                holds --log-limit; with none, and on one
                                PE without --mtbf: 0
        --log-limit MIB         without --checkpoint-every, under fulldet
                                or partialdet: the sender log size (MiB,
                                on any PE) at which a sync point
                                checkpoints; the others pass without one
                                (default: 4, or 8 times the largest
                                PE's share of the last checkpoint if more;
                                0: only the initial checkpoint)
        --mtbf D                without --checkpoint-every, under fulldet
                                or partialdet: a sync point also
                                checkpoints once Daly's optimal period for
                                a mean time between failures D (e.g. 24h)
                                and the last checkpoint's duration has
                                passed since it ended
        --loggers K             also start K logger processes, which hold
                                no task; they are watched like PEs, and
                                the job goes on when one fails (default 0)
        --log-quota BYTES       with --loggers, under fulldet or
                                partialdet: keep at most BYTES (suffix
                                KiB, MiB, GiB) of each PE's sender log in
                                memory, dumping the oldest entries to the
                                loggers; a full log holds the PE's
                                handlers until a logger stores a dump
        --event-logger          with --loggers, under fulldet or
                                partialdet: the loggers store the
                                protocol's records (determinants,
                                progress), so a record stops riding on
                                messages once a logger acknowledges it,
                                and any number of simultaneous PE
                                failures is recovered by replay
        --checkpoint-dir DIR    also write every checkpoint to DIR
        --restart DIR           start from the latest complete checkpoint in
                                DIR (written by --checkpoint-dir, with any
                                number of PEs)
        --transport NAME        PE-to-PE transport, passed to the PEs
                                (default tcp; the gochare command also has
                                protoactor)
        --tcp-only              PEs on one host connect over TCP on the
                                loopback, as across hosts (default, on
                                Linux: over Unix sockets, which cost the
                                kernel less per message)
        --record DIR            each PE records what its tasks handle and
                                send, per checkpoint period, in DIR (which
                                must hold no record yet), for gochare replay
        --trace FILE            write a Chrome trace-event file (Perfetto):
                                handlers per PE, checkpoints, recoveries
        --lb greedy|refine      balance the load at every checkpoint sync
                                point by moving tasks (measured handler time)
        --check-annotations[=K] re-run every commutative region, once
                                complete, in K other orders (default 2:
                                the reverse and a seeded one) on copies of
                                the task's state from before it; stop the
                                job, naming the collection, handler and
                                region key, at the first whose state or
                                sends differ (a debugging aid: it costs a
                                pack per region and K re-runs)
        --restore-spread K      restore a failed PE's tasks on K survivors
                                (default 0: all)
        --kill SPEC             inject a failure (repeatable; each --kill
                                fires once, when due, if its PE is alive):
                                  pe=R,at=step:S        when a task of PE R
                                    offers a sync point at step S (from 1
                                    to the application's last step)
                                  pe=R,after=D          D (e.g. 1.5s) after
                                    the job began
                                  pe=R,at=recovery:N    as soon as recovery
                                    N starts (Recover/Rollback sent)
                                  pe=R,at=checkpoint:E  as soon as
                                    checkpoint E starts (1: the initial one)
                                  pe=R,at=setup         once every PE got
                                    its setup, before the job begins
                                  random[,seed=N]       any PE at any step
                                    (the choice and seed are printed)
                                add ,signal=STOP to send SIGSTOP instead of
                                SIGKILL (a hung PE). A kill that can never
                                fire is an error; one that did not fire is
                                a warning at the end
  gochare pe --coordinator HOST:PORT [--rank R --size N] [--secret-file FILE | --tls --secret-dir DIR] [--host H] [--transport NAME] [--tcp-only]
      run one PE of a job; rank and size default to SLURM_PROCID and
      SLURM_NTASKS; the secret comes from the file or GOCHARE_JOB_SECRET,
      or, for a job run with --tls, the TLS files in DIR;
      --transport as for run (default tcp; every PE of a job must use the
      same)
  gochare pe --logger --coordinator HOST:PORT --rank L --size N [--secret-file FILE]
      run logger L (from 0) of a job of N PEs started with --loggers K.
      Under srun, 'gochare pe --loggers K' run as N+K tasks makes the last
      K tasks the loggers
  environment read by gochare pe (set for gochare run, it reaches the PEs):
      GOCHARE_CPUPROFILE=DIR      each PE writes a CPU profile DIR/pe-R.prof, each
                                  logger DIR/logger-L.prof
      GOCHARE_MEMPROFILE=DIR      each PE writes its allocations DIR/pe-R.allocs.prof
      GOCHARE_DEBUG_PROTOACTOR=1  protoactor's own log lines go to stderr
      GOMAXPROCS=N                the threads of Go code a PE runs at once; gochare
                                  run sets it, when unset and without --loggers,
                                  to the CPUs divided among the PEs (at least 1)
`

const usageTail = `  gochare replay --record DIR --task COLL[i,j,...] [--from-epoch E] [--to-step S] [-v]
      run one task of a run recorded with --record DIR again, in this
      process, from its checkpoint at epoch E (default: the first recorded)
      on the messages it handled then, in their order, and check that it
      sends what it sent then (and, over a whole period, that it ends in
      the state of the next checkpoint); S stops it after S runs of its
      code. Run it under a debugger to step through the task:
        dlv exec ./APP -- replay --record DIR --task COLL[i,j]
  gochare apps
      list the applications in this binary
`

// toolNames are the subcommands of the gochare command (cmd/gochare) that
// programs built on Main alone do not have.
var toolNames = []string{"bench", "chaos"}

// Command is a subcommand a program adds to Main's run, pe and apps, as
// cmd/gochare adds bench and chaos.
type Command struct {
	// Name is the first argument that selects it.
	Name string
	// Usage is its part of the usage text: lines indented by two spaces,
	// ending in a newline.
	Usage string
	// Run runs it with the arguments after Name and returns the exit
	// status; an error is printed, and with status 0 the status is 1. ctx
	// is cancelled on SIGINT and SIGTERM.
	Run func(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error)
}

// Program is a command line built on this package: the applications it
// runs and the subcommands it adds.
type Program struct {
	Apps     []actor.App
	Commands []Command
	// Transports are the PE-to-PE transports the program offers, by the
	// name --transport selects (default: DefaultTransports, "tcp" only).
	// cmd/gochare adds "protoactor".
	Transports map[string]Transport
}

// Transport builds a PE's endpoint of the PE-to-PE transport.
type Transport func(transport.Config) (transport.Endpoint, error)

// DefaultTransport is the transport PEs use without --transport.
const DefaultTransport = "tcp"

// DefaultTransports are the transports of a Program that names none: the
// TCP endpoint of package transport.
func DefaultTransports() map[string]Transport {
	return map[string]Transport{"tcp": func(cfg transport.Config) (transport.Endpoint, error) { return transport.NewTCP(cfg) }}
}

func (p Program) transports() map[string]Transport {
	if len(p.Transports) == 0 {
		return DefaultTransports()
	}
	return p.Transports
}

// transportNames lists the names of ts, sorted.
func transportNames(ts map[string]Transport) string {
	names := make([]string, 0, len(ts))
	for n := range ts {
		names = append(names, n)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// checkTransport reports an error unless ts has a transport called name.
func checkTransport(ts map[string]Transport, name string) error {
	if _, ok := ts[name]; !ok {
		return fmt.Errorf("%w: --transport %q: this program has the transports %s", errUsage, name, transportNames(ts))
	}
	return nil
}

func (p Program) usage() string {
	var b strings.Builder
	b.WriteString(usageHead)
	missing := slices.Clone(toolNames)
	for _, c := range p.Commands {
		b.WriteString(c.Usage)
		missing = slices.DeleteFunc(missing, func(n string) bool { return n == c.Name })
	}
	b.WriteString(usageTail)
	if len(missing) > 0 {
		fmt.Fprintf(&b, "  (gochare %s: in the gochare command, cmd/gochare, not in this program)\n", strings.Join(missing, ", gochare "))
	}
	return b.String()
}

// Main is the command line of a program that runs the given applications
// (gochare run, gochare pe, gochare apps); it returns the process exit
// status. Such a program links the runtime and its applications only: the
// benchmarks and the reliability campaign (gochare bench, gochare chaos)
// are subcommands of the gochare command, cmd/gochare, which adds them
// with Program.
func Main(args []string, stdout, stderr io.Writer, apps ...actor.App) int {
	return Program{Apps: apps}.Main(args, stdout, stderr)
}

// Main runs the program's command line and returns the process exit
// status.
func (p Program) Main(args []string, stdout, stderr io.Writer) int {
	usage := p.usage()
	byName := map[string]actor.App{}
	for _, a := range p.Apps {
		byName[a.Name] = a
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey && len(groups) == 0 {
			return slog.Attr{}
		}
		return a
	}}))
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	status := 0
	if i := slices.IndexFunc(p.Commands, func(c Command) bool { return c.Name == args[0] }); i >= 0 {
		status, err = p.Commands[i].Run(ctx, args[1:], stdout, stderr)
		return exitStatus(status, err, stderr)
	}
	switch args[0] {
	case "run":
		status, err = cmdRun(ctx, args[1:], stdout, stderr, log, byName, p.transports())
	case "replay":
		status, err = cmdReplay(args[1:], stdout, stderr, byName)
	case "pe":
		status, err = cmdPE(ctx, args[1:], stderr, log, byName, p.transports())
	case "apps":
		names := make([]string, 0, len(byName))
		for n := range byName {
			names = append(names, n)
		}
		slices.Sort(names)
		for _, n := range names {
			fmt.Fprintf(stdout, "%-12s %s\n", n, byName[n].Summary)
		}
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
	default:
		if slices.Contains(toolNames, args[0]) {
			fmt.Fprintf(stderr, "gochare: %q is a subcommand of the gochare command (go build github.com/gochare/gochare/cmd/gochare), not of this program, which only runs its applications\n", args[0])
			return 2
		}
		fmt.Fprintf(stderr, "gochare: unknown command %q\n%s", args[0], usage)
		return 2
	}
	return exitStatus(status, err, stderr)
}

// exitStatus prints err, if any, and returns the status to exit with:
// status, or 1 for an error with status 0.
func exitStatus(status int, err error, stderr io.Writer) int {
	if err != nil {
		fmt.Fprintf(stderr, "gochare: %v\n", err)
		if status == 0 {
			status = 1
		}
	}
	return status
}

// errUsage marks command-line mistakes (exit status 2).
var errUsage = errors.New("usage")

type runOptions struct {
	pes        int
	listen     string
	external   bool
	secretFile string
	// tls is --tls; secretDir is --secret-dir.
	tls              bool
	secretDir        string
	heartbeatTimeout time.Duration
	stallTimeout     time.Duration
	joinTimeout      time.Duration
	protocol         logging.Kind
	checkpointEvery  uint64
	checkpointSet    bool
	// logLimitMiB is --log-limit (logLimitSet: given).
	logLimitMiB int
	logLimitSet bool
	// mtbf is --mtbf (0: not given).
	mtbf          time.Duration
	checkpointDir string
	restartDir    string
	recordDir     string
	balancer      string
	traceFile     string
	spread        int
	kills         []string
	transport     string
	// tcpOnly is --tcp-only, passed to the PEs.
	tcpOnly bool
	loggers int
	// logQuota is --log-quota in bytes (0: none).
	logQuota int
	// eventLogger is --event-logger.
	eventLogger bool
	// failures is --failures, the protocol's f (0: not given, the
	// default logging.DefaultFailures).
	failures int
	// checkAnnotations is --check-annotations: the number of other orders
	// each commutative region is re-run in (0: no check).
	checkAnnotations int
}

// protocolNames are the --ft values.
var protocolNames = map[string]logging.Kind{"none": logging.KindNone, "fulldet": logging.KindFullDet, "partialdet": logging.KindPartialDet}

func protocolName(k logging.Kind) string {
	for name, kind := range protocolNames {
		if kind == k {
			return name
		}
	}
	return k.String()
}

// splitRunArgs separates the launcher's flags from the application's.
func splitRunArgs(args []string) (runOptions, []string, error) {
	o := runOptions{listen: "127.0.0.1:0", transport: DefaultTransport, heartbeatTimeout: 5 * time.Second, stallTimeout: coord.DefaultStallTimeout, protocol: logging.KindPartialDet, logLimitMiB: coord.DefaultLogLimit >> 20}
	var appArgs []string
	valueOf := func(i *int, name string) (string, error) {
		a := args[*i]
		if k := strings.IndexByte(a, '='); k >= 0 {
			return a[k+1:], nil
		}
		if *i+1 >= len(args) {
			return "", fmt.Errorf("%w: %s needs a value", errUsage, name)
		}
		*i++
		return args[*i], nil
	}
	for i := 0; i < len(args); i++ {
		name := strings.TrimLeft(args[i], "-")
		if k := strings.IndexByte(name, '='); k >= 0 {
			name = name[:k]
		}
		if !strings.HasPrefix(args[i], "-") {
			appArgs = append(appArgs, args[i])
			continue
		}
		switch name {
		case "pes":
			v, err := valueOf(&i, "--pes")
			if err != nil {
				return o, nil, err
			}
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return o, nil, fmt.Errorf("%w: --pes %q: want a positive number", errUsage, v)
			}
			o.pes = n
		case "listen":
			v, err := valueOf(&i, "--listen")
			if err != nil {
				return o, nil, err
			}
			o.listen = v
		case "external":
			o.external = true
		case "check-annotations":
			o.checkAnnotations = defaultCheckOrders
			if k := strings.IndexByte(args[i], '='); k >= 0 {
				n, err := strconv.Atoi(args[i][k+1:])
				if err != nil || n < 1 || n > maxCheckOrders {
					return o, nil, fmt.Errorf("%w: %s: want --check-annotations or --check-annotations=K, K from 1 to %d", errUsage, args[i], maxCheckOrders)
				}
				o.checkAnnotations = n
			}
		case "tls":
			o.tls = true
		case "event-logger":
			o.eventLogger = true
		case "tcp-only":
			o.tcpOnly = true
		case "secret-dir":
			v, err := valueOf(&i, "--secret-dir")
			if err != nil {
				return o, nil, err
			}
			o.secretDir = v
		case "checkpoint-every", "restore-spread", "log-limit", "loggers":
			v, err := valueOf(&i, "--"+name)
			if err != nil {
				return o, nil, err
			}
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return o, nil, fmt.Errorf("%w: --%s %q: want a number >= 0", errUsage, name, v)
			}
			switch name {
			case "checkpoint-every":
				o.checkpointEvery, o.checkpointSet = uint64(n), true
			case "log-limit":
				if n > maxLogLimitMiB {
					return o, nil, fmt.Errorf("%w: --log-limit %q: at most %d (MiB)", errUsage, v, maxLogLimitMiB)
				}
				o.logLimitMiB, o.logLimitSet = n, true
			case "loggers":
				o.loggers = n
			default:
				o.spread = n
			}
		case "checkpoint-dir", "restart", "record":
			v, err := valueOf(&i, "--"+name)
			if err != nil {
				return o, nil, err
			}
			switch name {
			case "restart":
				o.restartDir = v
			case "record":
				o.recordDir = v
			default:
				o.checkpointDir = v
			}
		case "failures":
			v, err := valueOf(&i, "--failures")
			if err != nil {
				return o, nil, err
			}
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return o, nil, fmt.Errorf("%w: --failures %q: want a number of PE failures from 1 to %d", errUsage, v, logging.MaxFailures)
			}
			o.failures = n
		case "log-quota":
			v, err := valueOf(&i, "--log-quota")
			if err != nil {
				return o, nil, err
			}
			n, err := parseBytes(v)
			if err != nil {
				return o, nil, fmt.Errorf("%w: --log-quota %q: %v", errUsage, v, err)
			}
			o.logQuota = n
		case "transport":
			v, err := valueOf(&i, "--transport")
			if err != nil {
				return o, nil, err
			}
			o.transport = v
		case "trace":
			v, err := valueOf(&i, "--trace")
			if err != nil {
				return o, nil, err
			}
			o.traceFile = v
		case "lb":
			v, err := valueOf(&i, "--lb")
			if err != nil {
				return o, nil, err
			}
			if v != "greedy" && v != "refine" {
				return o, nil, fmt.Errorf("%w: --lb %q: want greedy or refine", errUsage, v)
			}
			o.balancer = v
		case "kill":
			v, err := valueOf(&i, "--kill")
			if err != nil {
				return o, nil, err
			}
			o.kills = append(o.kills, v)
		case "ft":
			v, err := valueOf(&i, "--ft")
			if err != nil {
				return o, nil, err
			}
			k, ok := protocolNames[v]
			if !ok {
				return o, nil, fmt.Errorf("%w: --ft %q: want none, fulldet or partialdet", errUsage, v)
			}
			o.protocol = k
		case "secret-file":
			v, err := valueOf(&i, "--secret-file")
			if err != nil {
				return o, nil, err
			}
			o.secretFile = v
		case "heartbeat-timeout", "stall-timeout", "join-timeout", "mtbf":
			v, err := valueOf(&i, "--"+name)
			if err != nil {
				return o, nil, err
			}
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return o, nil, fmt.Errorf("%w: --%s %q: want a duration", errUsage, name, v)
			}
			if name == "stall-timeout" {
				o.stallTimeout = d
			} else if name == "mtbf" {
				o.mtbf = d
			} else if name == "join-timeout" {
				o.joinTimeout = d
			} else {
				o.heartbeatTimeout = d
			}
		default:
			appArgs = append(appArgs, args[i])
		}
	}
	if o.pes == 0 {
		return o, nil, fmt.Errorf("%w: --pes N is required", errUsage)
	}
	if err := checkTLSFlags(o.tls, o.secretDir, o.secretFile, o.transport); err != nil {
		return o, nil, err
	}
	if o.logLimitSet && o.logLimitMiB > 0 && o.checkpointSet {
		return o, nil, fmt.Errorf("%w: --log-limit is for a job without --checkpoint-every (which checkpoints at every K-th step whatever the logs hold): give one of them", errUsage)
	}
	if o.logQuota > 0 && o.loggers < 1 {
		return o, nil, fmt.Errorf("%w: --log-quota needs --loggers K (K >= 1): the PEs dump their logs' oldest entries to the loggers", errUsage)
	}
	if o.logQuota > 0 && o.protocol == logging.KindNone {
		return o, nil, fmt.Errorf("%w: --log-quota with --ft none: checkpoint/restart keeps no sender log", errUsage)
	}
	if o.eventLogger {
		if err := logging.CheckEventLogger(o.protocol, o.loggers); err != nil {
			return o, nil, fmt.Errorf("%w: --event-logger (with --ft %s, --loggers %d): %w", errUsage, protocolName(o.protocol), o.loggers, err)
		}
	}
	if o.failures > 0 {
		if err := logging.CheckFailureBound(o.protocol, o.eventLogger, o.pes, o.failures); err != nil {
			with := fmt.Sprintf("--ft %s, --pes %d", protocolName(o.protocol), o.pes)
			if o.eventLogger {
				with += ", --event-logger"
			}
			return o, nil, fmt.Errorf("%w: --failures %d (with %s): %w", errUsage, o.failures, with, err)
		}
	}
	if o.logLimitSet && o.logLimitMiB > 0 && o.protocol == logging.KindNone {
		return o, nil, fmt.Errorf("%w: --log-limit with --ft none: checkpoint/restart keeps no sender log", errUsage)
	}
	if o.mtbf > 0 {
		switch {
		case o.checkpointSet:
			return o, nil, fmt.Errorf("%w: --mtbf chooses the checkpoint period; --checkpoint-every fixes it: give one of them", errUsage)
		case o.protocol == logging.KindNone:
			return o, nil, fmt.Errorf("%w: --mtbf with --ft none: a checkpoint/restart job checkpoints at fixed steps, give --checkpoint-every", errUsage)
		case o.logLimitMiB == 0:
			return o, nil, fmt.Errorf("%w: --mtbf with --log-limit 0 (only the initial checkpoint): give one of them", errUsage)
		}
	}
	return o, appArgs, nil
}

// maxLogQuota bounds --log-quota (1 TiB).
const maxLogQuota = 1 << 40

// parseBytes reads a byte count: a number, optionally followed by KiB,
// MiB or GiB (or K, M, G: the same powers of 1024).
func parseBytes(v string) (int, error) {
	mult := 1
	s := strings.TrimSpace(v)
	for _, u := range []struct {
		suffix string
		mult   int
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}} {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSuffix(s, u.suffix), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("want a positive number of bytes, optionally with KiB, MiB or GiB")
	}
	if n > maxLogQuota/int64(mult) {
		return 0, fmt.Errorf("at most %d bytes", int64(maxLogQuota))
	}
	return int(n) * mult, nil
}

// defaultCheckOrders is the number of other orders --check-annotations
// re-runs each commutative region in; maxCheckOrders bounds
// --check-annotations=K.
const (
	defaultCheckOrders = 2
	maxCheckOrders     = 1000
)

// maxLogLimitMiB bounds --log-limit: 1 PiB, far above any memory, and
// far from overflowing the byte count.
const maxLogLimitMiB = 1 << 30

// syncPolicy is the sync period the PEs get and the coordinator's log
// limit (coord.Config.LogLimit): --checkpoint-every K checkpoints at every
// K-th step's sync point (no limit); without it, a job that logs messages
// offers a sync point every coord.DefaultSyncEvery steps, which
// checkpoints once a PE's sender log holds --log-limit MiB (default
// coord.DefaultLogLimit); --log-limit 0 and --ft none take only the
// initial checkpoint, and so does a job of one PE without --mtbf: no
// protocol logs a message between two tasks of one PE, so its log stays
// empty and its sync points would stop the tasks for nothing (a PE that
// fails takes the whole job down whatever the protocol; --checkpoint-dir
// with --checkpoint-every K or --mtbf gives it checkpoints to restart
// from).
//
// Without --log-limit the limit grows with the state: to
// coord.DefaultLogPerCheckpoint times the largest PE's share of the last
// checkpoint, when that is more (logPerCheckpoint; 0 with --log-limit,
// which the limit then is).
func (o runOptions) syncPolicy() (syncEvery uint64, logLimit, logPerCheckpoint int) {
	if o.checkpointSet || o.protocol == logging.KindNone || o.logLimitMiB == 0 || (o.pes == 1 && o.mtbf == 0) {
		return o.checkpointEvery, 0, 0
	}
	if !o.logLimitSet {
		logPerCheckpoint = coord.DefaultLogPerCheckpoint
	}
	return coord.DefaultSyncEvery, o.logLimitMiB << 20, logPerCheckpoint
}

func cmdRun(ctx context.Context, args []string, stdout, stderr io.Writer, log *slog.Logger, apps map[string]actor.App, transports map[string]Transport) (int, error) {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		fmt.Fprint(stderr, usageHead)
		return 2, fmt.Errorf("%w: run needs an application name", errUsage)
	}
	app, ok := apps[args[0]]
	if !ok {
		return 2, fmt.Errorf("%w: no application %q (gochare apps lists them)", errUsage, args[0])
	}
	o, appArgs, err := splitRunArgs(args[1:])
	if err != nil {
		return 2, err
	}
	if err := checkTransport(transports, o.transport); err != nil {
		return 2, err
	}
	// Check the application's flags here, before any PE starts.
	job, err := scheduler.Define(app, appArgs)
	if err != nil {
		return 2, err
	}
	syncEvery, logLimit, logPerCheckpoint := o.syncPolicy()
	lim := killLimits{PEs: o.pes, App: app.Name, CheckpointEvery: syncEvery, LogLimit: logLimit > 0}
	if app.LastStep != nil {
		lim.LastStep, lim.KnowLastStep = app.LastStep(appArgs)
	}
	var kills []kill
	for i, spec := range o.kills {
		k, note, err := parseKill(spec, lim, uint64(time.Now().UnixNano())+uint64(i))
		if err != nil {
			return 2, err
		}
		if note != "" {
			log.Info("failure injection", "plan", note)
		}
		kills = append(kills, k)
	}
	for _, dir := range []string{o.checkpointDir, o.recordDir} {
		if dir == "" {
			continue
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return 1, fmt.Errorf("launcher: %w", err)
		}
	}
	if o.recordDir != "" {
		if err := checkRecordDir(o.recordDir); err != nil {
			return 2, err
		}
	}
	layout := scheduler.Layout(job, o.pes)
	var restart [][]migrate.TaskRecord
	var restartEpoch uint64
	if o.restartDir != "" {
		restart, restartEpoch, err = readRestart(o.restartDir, layout, o.pes, log)
		if err != nil {
			return 1, err
		}
		log.Info("restarting from disk checkpoint", "dir", o.restartDir, "epoch", restartEpoch, "pes", o.pes)
	}
	secret := newSecret()
	var coordinatorTLS *tls.Config
	var creds *jobtls.Job
	if o.tls {
		creds, err = jobtls.New()
		if err != nil {
			return 1, fmt.Errorf("launcher: %w", err)
		}
		if o.secretDir == "" {
			if o.secretDir, err = os.MkdirTemp("", "gochare-secret-"); err != nil {
				return 1, fmt.Errorf("launcher: %w", err)
			}
			defer os.RemoveAll(o.secretDir)
		}
		secret, coordinatorTLS = creds.PE().Secret(), creds.CoordinatorConfig()
	}
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return 1, fmt.Errorf("launcher: listen: %w", err)
	}
	if creds != nil {
		// Once the coordinator listens, as the secret file: a script may
		// start PEs as soon as pe.key (written last) exists.
		if err := creds.Write(o.secretDir); err != nil {
			ln.Close()
			return 1, fmt.Errorf("launcher: --secret-dir: %w", err)
		}
	}
	cfg := coordinatorConfig{
		App: app.Name, Args: appArgs, Size: o.pes, Secret: secret,
		JobID: binary.LittleEndian.Uint64(newSecret()), HeartbeatTimeout: o.heartbeatTimeout, StallTimeout: o.stallTimeout, JoinTimeout: o.joinTimeout,
		Output: stdout, Log: log, Spawned: make([]bool, o.pes), Protocol: o.protocol,
		Layout: layout, CheckpointEvery: syncEvery, LogLimit: logLimit, LogPerCheckpoint: logPerCheckpoint, MTBF: o.mtbf, CheckpointDir: o.checkpointDir,
		Spread: o.spread, Kills: kills, Restart: restart, RestartEpoch: restartEpoch, Balancer: o.balancer, TraceFile: o.traceFile,
		RecordDir: o.recordDir,
		Transport: o.transport, HandlerDigest: job.Digest(), Loggers: o.loggers, LoggerSpawned: make([]bool, o.loggers), LogQuota: o.logQuota, EventLogger: o.eventLogger, Failures: o.failures, CheckAnnotations: o.checkAnnotations, TLS: coordinatorTLS,
	}
	if o.external {
		addr := reachableAddr(ln.Addr().(*net.TCPAddr))
		peFlags := "--transport " + o.transport // in the commands printed below
		if o.tcpOnly {
			peFlags += " --tcp-only"
		}
		if o.tls {
			fmt.Fprintf(stderr, "gochare: waiting for %d PEs: start each with\n  gochare pe --coordinator %s --rank R --size %d --tls --secret-dir %s %s\n", o.pes, addr, o.pes, o.secretDir, peFlags)
			if o.loggers > 0 {
				fmt.Fprintf(stderr, "gochare: and for %d loggers: start each with\n  gochare pe --logger --coordinator %s --rank L --size %d --tls --secret-dir %s\n", o.loggers, addr, o.pes, o.secretDir)
			}
		} else if o.secretFile != "" {
			if err := os.WriteFile(o.secretFile, []byte(hex.EncodeToString(secret)+"\n"), 0o600); err != nil {
				return 1, fmt.Errorf("launcher: %w", err)
			}
			fmt.Fprintf(stderr, "gochare: waiting for %d PEs: start each with\n  gochare pe --coordinator %s --rank R --size %d --secret-file %s %s\n", o.pes, addr, o.pes, o.secretFile, peFlags)
			if o.loggers > 0 {
				fmt.Fprintf(stderr, "gochare: and for %d loggers: start each with\n  gochare pe --logger --coordinator %s --rank L --size %d --secret-file %s\n", o.loggers, addr, o.pes, o.secretFile)
			}
		} else {
			fmt.Fprintf(stderr, "gochare: waiting for %d PEs: start each with\n  %s=%s gochare pe --coordinator %s --rank R --size %d %s\n", o.pes, secretEnv, hex.EncodeToString(secret), addr, o.pes, peFlags)
			if o.loggers > 0 {
				fmt.Fprintf(stderr, "gochare: and for %d loggers: start each with\n  %s=%s gochare pe --logger --coordinator %s --rank L --size %d\n", o.loggers, secretEnv, hex.EncodeToString(secret), addr, o.pes)
			}
		}
		return newCoordinator(cfg, ln).run(ctx)
	}
	exe, err := os.Executable()
	if err != nil {
		return 1, fmt.Errorf("launcher: %w", err)
	}
	co := newCoordinator(cfg, ln)
	sp := &spawner{exe: exe, secret: hex.EncodeToString(secret), transport: o.transport, tcpOnly: o.tcpOnly, stdout: stdout, stderr: stderr}
	if o.loggers == 0 || !o.tls {
		// With loggers too: a PE writes its dumps and event log batches
		// and reads the loggers' replies itself between handlers
		// (dumpstream.go, eventlogstream.go), and does not need its
		// goroutines for those streams to run beside its handlers. Not
		// under TLS, where those goroutines do it all.
		sp.extraEnv = gomaxprocsEnv(os.Environ(), runtime.GOMAXPROCS(0), o.pes)
	}
	sp.idlePoll = idlePollFlag(runtime.GOMAXPROCS(0), o.pes+o.loggers)
	if o.tls {
		// The PEs read the TLS files and derive the secret from them.
		sp.secret, sp.tlsDir = "", o.secretDir
	}
	co.killProcess = sp.kill
	co.restartPE, co.currentPID = sp.restart, sp.pid
	// Once run has returned, nobody reads the coordinator's events: a PE
	// process that ends then is reported here.
	var runOver atomic.Bool
	var reportMu sync.Mutex
	report := func(ev processExited) {
		reportMu.Lock()
		defer reportMu.Unlock()
		if runOver.Load() {
			co.exitsAfterRun(ev, sp.killedByStop)
			return
		}
		select {
		case co.events <- ev:
		default:
			// The loop is behind: wait for room without holding the
			// lock that the end of run takes.
			reportMu.Unlock()
			co.post(ctx, ev)
			reportMu.Lock()
		}
	}
	for r := 0; r < o.pes; r++ {
		cfg.Spawned[r] = true
		if err := sp.start(r, o.pes, ln.Addr().String(), report); err != nil {
			sp.stop(0)
			return 1, err
		}
	}
	log.Info("started PEs", "app", app.Name, "pes", o.pes, "pids", fmt.Sprint(sp.pids()), "coordinator", ln.Addr().String())
	// The loggers: a spawner of their own, whose reports say which
	// logger ended.
	lsp := &spawner{exe: exe, secret: sp.secret, tlsDir: sp.tlsDir, stdout: stdout, stderr: stderr, logger: true, extraEnv: sp.extraEnv}
	co.killLogger = lsp.kill
	reportLogger := func(ev processExited) {
		reportMu.Lock()
		defer reportMu.Unlock()
		if runOver.Load() {
			switch {
			case slices.Contains(co.deadLoggers, ev.rank):
				// Declared dead (and killed) during the job, and
				// said then; its exit came after the end.
			case lsp.killedByStop(ev.pid):
				// A hung logger (stopped, say) that the heartbeats
				// had not caught yet holds the job's end for the
				// grace: said, so the wait is explained.
				log.Warn("logger did not end after the job's end; killed", "logger", ev.rank)
			case ev.state == nil || !ev.state.Exited():
				log.Warn("logger failed after the job's end", "logger", ev.rank, "detail", describeExit(ev))
			}
			return
		}
		select {
		case co.events <- loggerExited(ev):
		default:
			reportMu.Unlock()
			co.post(ctx, loggerExited(ev))
			reportMu.Lock()
		}
	}
	for l := 0; l < o.loggers; l++ {
		cfg.LoggerSpawned[l] = true
		if err := lsp.start(l, o.pes, ln.Addr().String(), reportLogger); err != nil {
			sp.stop(0)
			lsp.stop(0)
			return 1, err
		}
	}
	if o.loggers > 0 {
		log.Info("started loggers", "loggers", o.loggers, "pids", fmt.Sprint(lsp.pids()))
	}
	if o.traceFile != "" {
		co.cfg.trace = &tracer{pid: -1}
	}
	status, err := co.run(ctx)
	reportMu.Lock()
	runOver.Store(true)
	co.drainExits(sp.killedByStop)
	reportMu.Unlock()
	grace := 5 * time.Second
	if err != nil {
		grace = 500 * time.Millisecond
	}
	sp.stop(grace)
	lsp.stop(grace)
	if o.traceFile != "" {
		if terr := co.cfg.trace.merge(o.traceFile, o.pes); terr != nil {
			log.Warn("trace not written", "err", terr)
		} else {
			log.Info("trace written (open it in Perfetto)", "file", o.traceFile)
		}
	}
	return status, err
}

// reachableAddr is the address PEs on other hosts use to reach a
// coordinator listening on a: a itself, or this host's name and a's port
// when a is a wildcard address (--listen 0.0.0.0:P or :P), which names no
// host another machine could dial.
func reachableAddr(a *net.TCPAddr) string {
	if a.IP.IsUnspecified() {
		if host, err := os.Hostname(); err == nil && host != "" {
			return net.JoinHostPort(host, strconv.Itoa(a.Port))
		}
	}
	return a.String()
}

func cmdPE(ctx context.Context, args []string, stderr io.Writer, log *slog.Logger, apps map[string]actor.App, transports map[string]Transport) (int, error) {
	fs := flag.NewFlagSet("pe", flag.ContinueOnError)
	fs.SetOutput(stderr)
	coordinator := fs.String("coordinator", "", "coordinator address HOST:PORT")
	rank := fs.Int("rank", -1, "this PE's rank (default $SLURM_PROCID)")
	size := fs.Int("size", 0, "number of PEs (default $SLURM_NTASKS)")
	secretFile := fs.String("secret-file", "", "file holding the job secret (default $"+secretEnv+")")
	withTLS := fs.Bool("tls", false, "the job runs with --tls: read the TLS files in --secret-dir")
	secretDir := fs.String("secret-dir", "", "with --tls: the directory holding ca.crt, pe.crt and pe.key")
	host := fs.String("host", "", "address to listen on for other PEs (default: the one that reaches the coordinator)")
	transportName := fs.String("transport", DefaultTransport, "PE-to-PE transport: "+transportNames(transports))
	logger := fs.Bool("logger", false, "run a logger of the job, number --rank, not a PE")
	loggers := fs.Int("loggers", 0, "under srun: the last K tasks of the step are the job's loggers")
	idlePoll := fs.Duration("idle-poll", transport.DefaultIdlePoll, "how long the PE keeps polling its connections for input before it sleeps (0: never; gochare run gives 0 when its processes outnumber the CPUs)")
	tcpOnly := fs.Bool("tcp-only", false, "connect to PEs on this host over TCP, as to other hosts, not over Unix sockets (tcp transport, Linux)")
	if err := fs.Parse(args); err != nil {
		return 2, fmt.Errorf("%w: %v", errUsage, err)
	}
	if err := checkTransport(transports, *transportName); err != nil {
		return 2, err
	}
	if *coordinator == "" {
		return 2, fmt.Errorf("%w: pe needs --coordinator HOST:PORT", errUsage)
	}
	isLogger, r, n, err := loggerRole(*rank, *size, *logger, *loggers, os.Getenv("SLURM_PROCID"), os.Getenv("SLURM_NTASKS"))
	if err != nil {
		return 2, err
	}
	*rank, *size = r, n
	if err := checkTLSFlags(*withTLS, *secretDir, *secretFile, *transportName); err != nil {
		return 2, err
	}
	if *withTLS && *secretDir == "" {
		return 2, fmt.Errorf("%w: pe --tls needs --secret-dir DIR, the directory 'gochare run --tls' wrote the TLS files in", errUsage)
	}
	var secret []byte
	var creds *jobtls.PE
	if *withTLS {
		c, err := jobtls.Load(*secretDir)
		if err != nil {
			return 2, fmt.Errorf("launcher: PE %d: %w", *rank, err)
		}
		creds, secret = c, c.Secret()
	} else {
		s, err := readSecret(*secretFile)
		if err != nil {
			return 2, err
		}
		secret = s
	}
	if isLogger {
		if dir := os.Getenv(cpuProfileEnv); dir != "" {
			// A CPU profile of the logger, as of a PE: DIR/logger-L.prof.
			stop, err := startCPUProfile(filepath.Join(dir, fmt.Sprintf("logger-%d.prof", *rank)))
			if err != nil {
				return 1, fmt.Errorf("launcher: logger %d: %s: %w", *rank, cpuProfileEnv, err)
			}
			defer stop()
		}
		return runLogger(ctx, *coordinator, *rank, *size, secret, creds, log.With("logger", *rank))
	}
	return runPE(ctx, peOptions{
		Coordinator: *coordinator, Rank: *rank, Size: *size, Secret: secret, TLS: creds, Host: *host, Transport: transports[*transportName], TransportName: *transportName,
		IdlePoll: *idlePoll, TCPOnly: *tcpOnly, Apps: apps, Stderr: stderr, Log: log.With("pe", *rank),
		CPUProfileDir: os.Getenv(cpuProfileEnv), MemProfileDir: os.Getenv(memProfileEnv), ProtoActorLog: os.Getenv(debugProtoActorEnv) != "",
	})
}

// checkTLSFlags checks --tls, --secret-dir, --secret-file and
// --transport together, for run and pe.
func checkTLSFlags(withTLS bool, secretDir, secretFile, transportName string) error {
	switch {
	case !withTLS && secretDir != "":
		return fmt.Errorf("%w: --secret-dir is where --tls keeps its files: give --tls too", errUsage)
	case withTLS && secretFile != "":
		return fmt.Errorf("%w: --secret-file is for a job without --tls (with --tls the PEs read the TLS files in --secret-dir)", errUsage)
	case withTLS && transportName != DefaultTransport:
		return fmt.Errorf("%w: --tls needs --transport %s: the %s transport has no TLS", errUsage, DefaultTransport, transportName)
	}
	return nil
}

// readRestart reads the latest complete checkpoint in dir and places its
// tasks on numPEs PEs as the job's initial map would.
func readRestart(dir string, layout [][]int, numPEs int, log *slog.Logger) ([][]migrate.TaskRecord, uint64, error) {
	epoch, byCollection, _, err := migrate.ReadDisk(dir, func(epoch uint64, err error) {
		log.Warn("--restart: passing over a corrupt checkpoint for an older one", "epoch", epoch, "err", err)
	})
	if err != nil {
		return nil, 0, fmt.Errorf("launcher: --restart: %w", err)
	}
	if len(byCollection) != len(layout) {
		return nil, 0, fmt.Errorf("launcher: --restart: the checkpoint has %d collections, this job %d", len(byCollection), len(layout))
	}
	for c, recs := range byCollection {
		if len(recs) != len(layout[c]) {
			return nil, 0, fmt.Errorf("launcher: --restart: collection %d has %d tasks in the checkpoint, %d in this job (same application flags?)", c, len(recs), len(layout[c]))
		}
	}
	perPE := migrate.Redistribute(byCollection, numPEs, func(collection, lin, n, pes int) int { return layout[collection][lin] })
	return perPE, epoch, nil
}
