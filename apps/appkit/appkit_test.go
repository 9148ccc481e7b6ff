package appkit_test

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/gochare/gochare/actor"
	"github.com/gochare/gochare/apps/appkit"
	"github.com/gochare/gochare/apps/appkit/apptest"
)

// sumConfig is the configuration of sumApp.
type sumConfig struct {
	Workers [3]int
	Rounds  int
}

func parseSum(args []string) (sumConfig, error) {
	cfg := sumConfig{Workers: [3]int{2, 2, 1}, Rounds: 1}
	fs := appkit.NewFlags("sum", "usage: sum [--workers X,Y,Z] [--rounds N]")
	fs.Var((*appkit.Triple)(&cfg.Workers), "workers", "workers `X,Y,Z`")
	fs.IntVar(&cfg.Rounds, "rounds", cfg.Rounds, "reductions")
	if err := fs.Parse(args); err != nil {
		return sumConfig{}, fmt.Errorf("sum: %w", err)
	}
	if cfg.Rounds < 1 {
		return sumConfig{}, fmt.Errorf("sum: --rounds %d, want at least 1", cfg.Rounds)
	}
	return cfg, nil
}

// declareSum declares a job whose workers contribute their linear index
// plus 100 times the round to Rounds sum reductions; the main element
// prints every result.
func declareSum(j *actor.Job, cfg sumConfig, clock func() time.Time, finish func(run appkit.Run) error) {
	var work *actor.Proxy[*wrapperspb.UInt64Value]
	results := appkit.Main{
		Results: cfg.Rounds,
		Clock:   clock,
		Begin:   func(ctx actor.Context) { work.Broadcast(ctx, wrapperspb.UInt64(0)) },
		Finish: func(_ actor.Context, run appkit.Run) ([]string, int, error) {
			if finish != nil {
				if err := finish(run); err != nil {
					return nil, 0, err
				}
			}
			lines := []string{fmt.Sprintf("%d PEs, %v", run.PEs, run.Elapsed)}
			for _, r := range run.Results {
				lines = append(lines, fmt.Sprintf("reduction %d: %d from %d", r.GetNumber(), r.GetInts()[0], r.GetContributors()))
			}
			return lines, 3, nil
		},
	}.Declare(j)
	shape := actor.Shape{cfg.Workers[0], cfg.Workers[1], cfg.Workers[2]}
	workers := actor.NewCollection(j, "workers", shape, actor.RoundRobinMap, func(actor.Index) *worker { return &worker{} })
	// Each worker sends itself the next round until the last, keyed by
	// round so that a round never overtakes another.
	work = actor.Handle(workers, "work", actor.AnnotateOrdered(), func(w *worker, ctx actor.Context, m *wrapperspb.UInt64Value) {
		round := m.GetValue()
		w.rounds++
		ctx.Contribute(actor.Sum, actor.Value{Ints: []int64{int64(shape.Linear(ctx.Index())) + 100*int64(round)}}, results)
		if int(round)+1 < cfg.Rounds {
			ctx.Expect(round + 1)
			work.Send(ctx, ctx.Index(), wrapperspb.UInt64(round+1))
		}
	}, actor.KeyBy(func(m *wrapperspb.UInt64Value) uint64 { return m.GetValue() }))
}

type worker struct{ rounds int64 }

func (w *worker) MarshalBinary() ([]byte, error) { return []byte(strconv.FormatInt(w.rounds, 10)), nil }
func (w *worker) UnmarshalBinary(b []byte) (err error) {
	w.rounds, err = strconv.ParseInt(string(b), 10, 64)
	return err
}

// steppingClock advances by one second at every reading.
func steppingClock() func() time.Time {
	now := time.Unix(1_700_000_000, 0)
	return func() time.Time {
		now = now.Add(time.Second)
		return now
	}
}

var sumApp = appkit.Spec[sumConfig]{
	Name:    "sum",
	Summary: "sums worker indices",
	Parse:   parseSum,
	Declare: func(j *actor.Job, cfg sumConfig) { declareSum(j, cfg, time.Now, nil) },
	LastStep: func(cfg sumConfig) (uint64, bool) {
		return uint64(cfg.Rounds), cfg.Rounds > 1
	},
}.App()

func TestSpecApp(t *testing.T) {
	if sumApp.Name != "sum" || sumApp.Summary == "" {
		t.Errorf("app %q %q", sumApp.Name, sumApp.Summary)
	}
	if err := sumApp.Define(actor.NewJob(), []string{"--rounds", "0"}); err == nil || !strings.Contains(err.Error(), "--rounds 0") {
		t.Errorf("Define with --rounds 0: %v, want the parser's error", err)
	}
	j := actor.NewJob()
	if err := sumApp.Define(j, []string{"--workers", "3,2,1"}); err != nil {
		t.Fatal(err)
	}
	if got := j.Collections(); len(got) != 2 || got[0].Name != "main" || got[1].Name != "workers" || got[1].Shape.Size() != 6 {
		t.Errorf("collections %+v", got)
	}
	for _, c := range []struct {
		args []string
		step uint64
		ok   bool
	}{{[]string{"--rounds", "4"}, 4, true}, {nil, 1, false}, {[]string{"--bogus"}, 0, false}} {
		if step, ok := sumApp.LastStep(c.args); ok != c.ok || ok && step != c.step {
			t.Errorf("LastStep(%q) = %d, %v; want %d, %v", c.args, step, ok, c.step, c.ok)
		}
	}
	if app := (appkit.Spec[sumConfig]{Name: "x", Parse: parseSum, Declare: func(*actor.Job, sumConfig) {}}).App(); app.LastStep != nil {
		t.Error("an app without LastStep got one")
	}
}

// The main element starts the job, waits for every result, hands them to
// Finish in number order with the PE count and the elapsed time, prints
// the lines and exits with Finish's status, in every delivery order and
// with every task packed and unpacked after each delivery.
func TestMainCollectsResultsInOrder(t *testing.T) {
	for _, rounds := range []int{1, 3} {
		for seed := range uint64(4) {
			t.Run(fmt.Sprintf("rounds=%d/seed=%d", rounds, seed), func(t *testing.T) {
				cfg := sumConfig{Workers: [3]int{3, 2, 2}, Rounds: rounds}
				j := actor.NewJob()
				declareSum(j, cfg, steppingClock(), nil)
				d := apptest.NewDouble(t, j, 3, seed)
				if seed%2 == 1 {
					d.PackEvery = 1
				}
				d.Run(nil)
				want := []string{"3 PEs, 1s"}
				for r := range rounds {
					// 0+1+...+11 plus 100·round from each of 12 workers.
					want = append(want, fmt.Sprintf("reduction %d: %d from 12", r, 66+1200*r))
				}
				if d.ExitStatus != 3 || strings.Join(d.Output, "\n") != strings.Join(want, "\n") {
					t.Errorf("exit %d, output:\n%s\nwant exit 3:\n%s", d.ExitStatus, strings.Join(d.Output, "\n"), strings.Join(want, "\n"))
				}
				if n := d.Deliveries["main.results"]; n != rounds {
					t.Errorf("%d results delivered, want %d", n, rounds)
				}
			})
		}
	}
}

// An error from Finish is the job's only output line, and status 1.
func TestMainFinishError(t *testing.T) {
	j := actor.NewJob()
	declareSum(j, sumConfig{Workers: [3]int{2, 1, 1}, Rounds: 2}, time.Now, func(run appkit.Run) error {
		return fmt.Errorf("sum: %d results", len(run.Results))
	})
	d := apptest.NewDouble(t, j, 2, 1)
	d.Run(nil)
	if d.ExitStatus != 1 || len(d.Output) != 1 || d.Output[0] != "error: sum: 2 results" {
		t.Errorf("exit %d, output %q", d.ExitStatus, d.Output)
	}
}

func TestMainNeedsBeginAndFinish(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "Begin and Finish") {
			t.Errorf("Declare without Finish: panic %v", r)
		}
	}()
	appkit.Main{Begin: func(actor.Context) {}}.Declare(actor.NewJob())
}

func TestFlagsParse(t *testing.T) {
	cfg, err := parseSum([]string{"--workers", "4,1,2", "-rounds=5"})
	if err != nil || cfg != (sumConfig{Workers: [3]int{4, 1, 2}, Rounds: 5}) {
		t.Errorf("parse = %+v, %v", cfg, err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--bogus"}, "sum: flag provided but not defined: -bogus"},
		{[]string{"--workers", "1,2"}, `sum: invalid value "1,2" for flag -workers: want three comma-separated integers X,Y,Z, got 2 values`},
		{[]string{"--rounds", "x"}, `sum: invalid value "x" for flag -rounds`},
		{[]string{"--rounds", "2", "extra"}, `sum: unexpected argument "extra"`},
	} {
		if _, err := parseSum(c.args); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("parse %q: %v, want an error starting %q", c.args, err, c.want)
		}
	}
	_, err = parseSum([]string{"-h"})
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("parse -h: %v, want flag.ErrHelp", err)
	}
	for _, want := range []string{"\nusage: sum [--workers X,Y,Z] [--rounds N]\n", "-workers X,Y,Z", "(default 2,2,1)", "-rounds int", "(default 1)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("help does not contain %q:\n%v", want, err)
		}
	}
}

func TestTriple(t *testing.T) {
	var tr appkit.Triple
	if tr.String() != "" || (*appkit.Triple)(nil).String() != "" {
		t.Errorf("zero triple prints %q", tr.String())
	}
	for s, want := range map[string]string{
		"3,4,5":   "",
		" 3, 4,5": "",
		"3":       "want three comma-separated integers X,Y,Z, got 1 values",
		"1,2,3,4": "want three comma-separated integers X,Y,Z, got 4 values",
		"3,a,5":   `"a" is not an integer`,
		"3,0,5":   "extent 0, want at least 1",
		"3,-1,5":  "extent -1, want at least 1",
	} {
		tr = appkit.Triple{9, 9, 9}
		err := tr.Set(s)
		switch {
		case want == "" && (err != nil || tr != appkit.Triple{3, 4, 5}):
			t.Errorf("Set(%q) = %v, value %v", s, err, tr)
		case want != "" && (err == nil || err.Error() != want || tr != appkit.Triple{9, 9, 9}):
			t.Errorf("Set(%q) = %v, value %v; want error %q and the value unchanged", s, err, tr, want)
		}
	}
	if tr := (appkit.Triple{3, 4, 5}); tr.String() != "3,4,5" {
		t.Errorf("String = %q", tr.String())
	}

	var one appkit.TripleOrOne
	if err := one.Set("7"); err != nil || one != (appkit.TripleOrOne{7, 7, 7}) {
		t.Errorf("TripleOrOne.Set(7) = %v, %v", err, one)
	}
	if err := one.Set("2,3,4"); err != nil || one.String() != "2,3,4" {
		t.Errorf("TripleOrOne.Set(2,3,4) = %v, %v", err, one)
	}
	if err := one.Set("2,3"); err == nil || err.Error() != "want X,Y,Z or a single extent, got 2 values" {
		t.Errorf("TripleOrOne.Set(2,3) = %v", err)
	}
}

func TestConcatBytes(t *testing.T) {
	got := appkit.ConcatBytes(actor.Value{Bytes: []byte("ab"), Ints: []int64{1}}, actor.Value{Bytes: []byte("cd")})
	if string(got.Bytes) != "abcd" || got.Ints != nil || got.Floats != nil {
		t.Errorf("ConcatBytes = %+v", got)
	}
	a := []byte("x")
	appkit.ConcatBytes(actor.Value{Bytes: a[:0:1]}, actor.Value{Bytes: []byte("y")})
	if string(a) != "x" {
		t.Error("ConcatBytes wrote into its argument")
	}
}

func TestFormatExactReadsBackBitwise(t *testing.T) {
	for _, v := range []float64{0.1, 1.0 / 3, 940420.95797730878, -2.0021111207963637e-15, math.SmallestNonzeroFloat64, math.MaxFloat64, math.Nextafter(1, 2)} {
		back, err := strconv.ParseFloat(appkit.FormatExact(v), 64)
		if err != nil || math.Float64bits(back) != math.Float64bits(v) {
			t.Errorf("FormatExact(%v) = %q reads back as %v, %v", v, appkit.FormatExact(v), back, err)
		}
	}
	if got := appkit.FormatExact(940420.95797730878); got != "940420.95797730878" {
		t.Errorf("FormatExact = %q", got)
	}
}
