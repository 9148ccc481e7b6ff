package leanmd

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/gochare/gochare/apps/appkit/apptest"
	"github.com/gochare/gochare/apps/leanmd/md"
)

// smallArgs is a configuration that runs in well under a second of
// physics, migrates atoms (60), and has cell pairs that meet in two
// computes (3 cells, 2-away).
var smallArgs = []string{"--cells", "3,3,2", "--atoms", "10", "--steps", "200", "--migrate-every", "10", "--json"}

func serialResult(t *testing.T, args []string) md.Result {
	t.Helper()
	opts, err := ParseOptions(args)
	if err != nil {
		t.Fatal(err)
	}
	sim, err := md.NewSimulation(opts.Config)
	if err != nil {
		t.Fatal(err)
	}
	return sim.Run()
}

func closeTo(got, want float64) bool { return math.Abs(got-want) <= 1e-12*math.Abs(want) }

// TestAppMatchesSerialDriver runs the distributed app on the runtime
// double in several delivery orders, PE counts, and with tasks packed and
// unpacked along the way: the final state is bitwise that of the serial
// driver, the energies agree to the last bits of summation order.
func TestAppMatchesSerialDriver(t *testing.T) {
	args := smallArgs
	if raceDetector {
		args = []string{"--cells", "3,3,2", "--atoms", "10", "--steps", "12", "--migrate-every", "4", "--json"}
	}
	want := serialResult(t, args)
	if !raceDetector && want.AtomsMigrated == 0 {
		t.Fatal("the test configuration migrates no atom")
	}
	for _, c := range []struct {
		pes  int
		seed uint64
		pack float64
	}{{1, 1, 0}, {3, 2, 0}, {4, 3, 0.01}} {
		t.Run(fmt.Sprintf("pes=%d,seed=%d,pack=%g", c.pes, c.seed, c.pack), func(t *testing.T) {
			r := apptest.NewDouble(t, apptest.Define(t, App, args), c.pes, c.seed)
			r.PackProbability = c.pack
			r.Run(args)
			if r.ExitStatus != 0 {
				t.Fatalf("exit status %d, output:\n%s", r.ExitStatus, strings.Join(r.Output, "\n"))
			}
			rep := apptest.LastJSON[Report](t, r.Output)
			if rep.Digest != fmt.Sprintf("%016x", want.Digest) || rep.AtomsMigrated != int64(want.AtomsMigrated) {
				t.Errorf("digest %s with %d migrated, serial driver %016x with %d", rep.Digest, rep.AtomsMigrated, want.Digest, want.AtomsMigrated)
			}
			for _, e := range []struct {
				name      string
				got, want float64
			}{
				{"initial kinetic", rep.KineticInitial, want.KineticInitial},
				{"initial potential", rep.PotentialInitial, want.PotentialInitial},
				{"final kinetic", rep.KineticFinal, want.KineticFinal},
				{"final potential", rep.PotentialFinal, want.PotentialFinal},
			} {
				if !closeTo(e.got, e.want) {
					t.Errorf("%s energy %.17g, serial driver %.17g", e.name, e.got, e.want)
				}
			}
			if opts, _ := ParseOptions(args); rep.PEs != c.pes || rep.Steps != opts.Steps {
				t.Errorf("report says %d PEs, %d steps", rep.PEs, rep.Steps)
			}
		})
	}
}

// TestSameRunSameBits: two runs with different delivery orders print the
// same energies and digest, bitwise.
func TestSameRunSameBits(t *testing.T) {
	args := []string{"--cells", "3,3,2", "--atoms", "10", "--steps", "12", "--migrate-every", "4", "--json"}
	var reports []Report
	for seed := range uint64(2) {
		r := apptest.NewDouble(t, apptest.Define(t, App, args), 2, seed+10)
		r.Run(args)
		rep := apptest.LastJSON[Report](t, r.Output)
		rep.MsPerStep = 0
		reports = append(reports, rep)
	}
	if reports[0] != reports[1] {
		t.Errorf("two runs differ:\n%+v\n%+v", reports[0], reports[1])
	}
}

// TestOutputFormat checks the human-readable lines and the JSON keys.
func TestOutputFormat(t *testing.T) {
	args := []string{"--cells", "3,3,2", "--atoms", "4", "--steps", "1", "--json"}
	r := apptest.NewDouble(t, apptest.Define(t, App, args), 2, 7)
	r.Run(args)
	prefixes := []string{"leanmd: 3×3×2 cells, k-away 2,2,1, 72 atoms, 1 steps, migration every 20, 2 PEs",
		"initial energy: kinetic ", "final energy: kinetic ", "atoms migrated: 0", "time per step: ", "digest: ",
		"reference: none for this configuration", "{"}
	if len(r.Output) != len(prefixes) {
		t.Fatalf("%d output lines, want %d:\n%s", len(r.Output), len(prefixes), strings.Join(r.Output, "\n"))
	}
	for k, p := range prefixes {
		if !strings.HasPrefix(r.Output[k], p) {
			t.Errorf("line %d is %q, want it to start with %q", k, r.Output[k], p)
		}
	}
	var keys map[string]any
	if err := json.Unmarshal([]byte(r.Output[len(r.Output)-1]), &keys); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"app", "cells", "steps", "ke_initial", "pe_initial", "ke_final", "pe_final", "atoms_migrated", "digest", "ms_per_step"} {
		if _, ok := keys[k]; !ok {
			t.Errorf("JSON report has no key %q: %s", k, r.Output[len(r.Output)-1])
		}
	}
	rep := apptest.LastJSON[Report](t, r.Output)
	// With one step, the first step is also the last.
	if rep.KineticInitial != rep.KineticFinal || rep.PotentialInitial != rep.PotentialFinal || rep.KineticInitial <= 0 {
		t.Errorf("one-step energies: %+v", rep)
	}
}

// TestReferenceConfigurationOnApp runs the reference configuration through
// the app (about 30 s of one core) and wants "reference: match".
func TestReferenceConfigurationOnApp(t *testing.T) {
	if testing.Short() || raceDetector {
		t.Skip("full 5×5×3, 200-step run: not in -short mode or under -race")
	}
	args := []string{"--cells", "5,5,3", "--steps", "200", "--json"}
	r := apptest.NewDouble(t, apptest.Define(t, App, args), 4, 1)
	r.Run(args)
	t.Logf("\n%s", strings.Join(r.Output, "\n"))
	if r.ExitStatus != 0 || !strings.HasPrefix(r.Output[len(r.Output)-2], "reference: match") {
		t.Errorf("exit status %d, reference line %q", r.ExitStatus, r.Output[len(r.Output)-2])
	}
}
