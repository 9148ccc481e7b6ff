// Command simscale prints the simulated figures of docs/scaling.md: for
// each mini-app and protocol, the per-PE costs of a checkpoint period
// and of one failure (package sim/scale's model, on the real protocol
// cores), the real job coordinator's messages per failure, and the time
// the real protocol takes to take in the recovery envelopes of every
// survivor, at each job size of -pes.
//
//	go run ./sim/scale/cmd/simscale -pes 1024,4096,16384,65536,131072
//
// The model runs every PE of a job of up to -full PEs; at a larger size
// it prints the figures of the largest size it ran in full (marked "~"),
// and the recovery envelopes of the larger job (one per survivor and
// restored task) with the bytes of each as in the job it ran.
package main

import (
	"flag"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gochare/gochare/logging"
	"github.com/gochare/gochare/sim/scale"
)

func main() {
	pesFlag := flag.String("pes", "1024,4096,16384,65536,131072", "job sizes, comma-separated")
	full := flag.String("full", "64,512", "job sizes the model runs in full (every PE), comma-separated")
	steps := flag.Int("steps", 10, "steps of the checkpoint period")
	apps := flag.String("apps", "stencil3d,leanmd,lulesh", "mini-apps")
	protocols := flag.String("protocols", "FullDet,PartialDet", "protocols")
	coordinator := flag.Bool("coordinator", true, "drive the real job coordinator at each size")
	intake := flag.String("intake", "256,512,1024,2048", "job sizes at which to time a restored task's intake of the recovery envelopes")
	flag.Parse()
	if err := run(*pesFlag, *full, *steps, *apps, *protocols, *coordinator, *intake); err != nil {
		fmt.Fprintln(os.Stderr, "simscale:", err)
		os.Exit(1)
	}
}

func ints(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		v, err := strconv.Atoi(f)
		if err != nil || v < 1 {
			return nil, fmt.Errorf("%q is not a positive integer", f)
		}
		out = append(out, v)
	}
	sort.Ints(out)
	return out, nil
}

// The weak-scaling blocks: what one PE holds at every job size.
func pattern(app string, pes int) (scale.Pattern, error) {
	switch app {
	case "stencil3d":
		// Two chunks of 32³ points per PE.
		return scale.WeakStencil(pes, [3]int{1, 1, 2}, [3]int{32, 32, 32})
	case "leanmd":
		// Four cells of 75 atoms per PE (2×2×1), k-away 2,2,1: 156 tasks.
		return scale.WeakLeanMD(pes, [3]int{2, 2, 1}, 75)
	case "lulesh":
		// One chunk of 16³ elements per PE.
		return scale.WeakLulesh(pes, [3]int{1, 1, 1}, 16)
	}
	return nil, fmt.Errorf("unknown mini-app %q", app)
}

func run(pesFlag, fullFlag string, steps int, apps, protocols string, coordinator bool, intakeFlag string) error {
	sizes, err := ints(pesFlag)
	if err != nil {
		return err
	}
	fulls, err := ints(fullFlag)
	if err != nil {
		return err
	}
	intakes, err := ints(intakeFlag)
	if err != nil {
		return err
	}
	var kinds []logging.Kind
	for _, p := range strings.Split(protocols, ",") {
		k, err := logging.ParseKind(strings.TrimSpace(p))
		if err != nil {
			return err
		}
		kinds = append(kinds, k)
	}
	fmt.Printf("# simscale: %d steps per checkpoint period, f = %d; %s\n", steps, logging.DefaultFailures, time.Now().UTC().Format(time.RFC3339))
	fmt.Println("# per PE per step: determinants created, bytes piggybacked, bytes logged (mean / max over PEs);")
	fmt.Println("# stored: determinants a PE holds at the end of the period (mean / max); log: bytes its sender log holds then (mean)")
	fmt.Println("# failure of PE N/2 at the end of the period: recovery envelopes and bytes, logged messages resent and bytes")
	fmt.Println("# ~ : figures of the largest job run in full, carried to this size (see docs/scaling.md)")
	for _, app := range strings.Split(apps, ",") {
		if app = strings.TrimSpace(app); app == "" {
			continue
		}
		for _, kind := range kinds {
			fmt.Printf("\n## %s %v\n", app, kind)
			fmt.Printf("%8s %1s %10s %20s %22s %14s %12s %12s %10s %14s %8s %12s %8s\n",
				"PEs", "", "dets/PE", "piggyback B/PE", "log B/PE", "stored", "log held", "recov env", "recov MB", "resent", "resent MB", "elapsed", "rounds")
			var last *scale.Figures
			for _, n := range fulls {
				f, err := measure(app, kind, n, steps)
				if err != nil {
					return err
				}
				printRow(f, n, "")
				last = &f
			}
			for _, n := range sizes {
				if last != nil && n <= last.PEs {
					continue
				}
				if last == nil {
					return fmt.Errorf("no full run to carry to %d PEs", n)
				}
				printRow(*last, n, "~")
			}
		}
	}
	if coordinator {
		fmt.Println("\n## job.Coordinator (real), PartialDet, 2 tasks per PE; every PE answers at once, in rank order")
		fmt.Printf("%8s %22s %22s %22s %9s\n", "PEs", "checkpoint out/in, s", "quiescence out/in, s", "failure out/in, s", "relocated")
		for _, n := range sizes {
			r, err := scale.CoordinatorFailure(n, 2, n/2, logging.KindPartialDet)
			if err != nil {
				return err
			}
			cell := func(p scale.Phase) string {
				return fmt.Sprintf("%d/%d %.2f", p.OutTotal(), p.InTotal(), p.Elapsed.Seconds())
			}
			fmt.Printf("%8d %22s %22s %22s %9d\n", n, cell(r.Checkpoint), cell(r.Quiescence), cell(r.Recovery), r.Relocated)
		}
	}
	if len(intakes) > 0 {
		fmt.Println("\n## a restored task's host takes in one recovery envelope per survivor (real protocol, PartialDet)")
		for _, n := range intakes {
			d, err := scale.RecoveryIntake(n, logging.KindPartialDet)
			if err != nil {
				return err
			}
			fmt.Printf("%8d PEs: %.3f s\n", n, d.Seconds())
		}
	}
	return nil
}

func measure(app string, kind logging.Kind, n, steps int) (scale.Figures, error) {
	pat, err := pattern(app, n)
	if err != nil {
		return scale.Figures{}, err
	}
	f, err := scale.Measure(pat, kind, steps, true)
	if err != nil {
		return f, fmt.Errorf("%s %v at %d PEs: %w", app, kind, n, err)
	}
	return f, nil
}

// printRow prints f's figures for a job of n PEs: f's own if n is its
// size, else its per-PE figures and its per-envelope recovery bytes with
// the recovery envelopes of n PEs.
func printRow(f scale.Figures, n int, mark string) {
	rec := f.Recovery
	envs, bytes := rec.RecoveryEnvelopes, float64(rec.RecoveryBytes)
	if n != f.PEs && f.PEs > 1 {
		envs = (n - 1) * f.Relocated
		if rec.RecoveryEnvelopes > 0 {
			bytes = float64(rec.RecoveryBytes) / float64(rec.RecoveryEnvelopes) * float64(envs)
		}
	}
	pair := func(s scale.Stat) string { return fmt.Sprintf("%.0f / %.0f", s.Mean, s.Max) }
	elapsed := ""
	if mark == "" {
		elapsed = fmt.Sprintf("%.1fs", f.Elapsed.Seconds())
	}
	fmt.Printf("%8d %1s %10s %20s %22s %14s %12.0f %12d %10.2f %14d %8.2f %12s %8d\n", n, mark,
		pair(f.Determinants), pair(f.PiggybackBytes), pair(f.LogBytes), pair(f.Stored), f.LogHeld.Mean,
		envs, bytes/1e6, rec.Resent, float64(rec.ResentBytes)/1e6, elapsed, f.Rounds)
}
