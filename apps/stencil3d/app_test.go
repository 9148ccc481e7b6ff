package stencil3d

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gochare/gochare/actor"
	"github.com/gochare/gochare/apps/appkit"
	"github.com/gochare/gochare/apps/appkit/apptest"
)

// steppingClock returns a clock that advances by step at every reading.
func steppingClock(step time.Duration) func() time.Time {
	now := time.Unix(1_700_000_000, 0)
	return func() time.Time {
		now = now.Add(step)
		return now
	}
}

// simulate declares the app for args with a clock that makes the elapsed
// line "elapsed 1.500000 s", and runs it on the runtime double as on 4
// PEs.
func simulate(t *testing.T, args []string, seed uint64, configure func(*apptest.Double)) (*apptest.Double, Config) {
	t.Helper()
	cfg, err := ParseConfig(args)
	if err != nil {
		t.Fatal(err)
	}
	j := actor.NewJob()
	declare(j, cfg, steppingClock(1500*time.Millisecond))
	sim := apptest.NewDouble(t, j, 4, seed)
	if configure != nil {
		configure(sim)
	}
	sim.Run(args)
	return sim, cfg
}

// serialDigest is the job digest computed from the serial solver.
func serialDigest(cfg Config) string {
	var hashes []uint64
	for _, r := range SolveSerial(cfg) {
		hashes = append(hashes, r.FNV1a)
	}
	return fmt.Sprintf("job digest %016x", JobDigest(hashes))
}

func checkOutput(t *testing.T, sim *apptest.Double, want []string, wantStatus int) {
	t.Helper()
	if !slices.Equal(sim.Output, want) || sim.ExitStatus != wantStatus {
		t.Errorf("output (exit %d):\n%s\nwant (exit %d):\n%s",
			sim.ExitStatus, strings.Join(sim.Output, "\n"), wantStatus, strings.Join(want, "\n"))
	}
}

// TestAppMatchesReferenceUnderReordering runs the small test configuration
// with messages delivered in several random orders, once with every task
// packed and unpacked all along: the output is the reference every time.
func TestAppMatchesReferenceUnderReordering(t *testing.T) {
	args := []string{"--grid", "64,64,64", "--chunk", "16,16,16", "--iterations", "10"}
	cfg, _ := ParseConfig(args)
	want := []string{
		"stencil3d grid 64,64,64 chunk 16,16,16 chunks 4,4,4 iterations 10 pes 4",
		"chunk sum 465997.75732668047 fnv1a ebd12050aa174b8e (all 64 chunks equal)",
		serialDigest(cfg),
		"reference: match",
		"elapsed 1.500000 s",
	}
	for seed := range uint64(3) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			sim, _ := simulate(t, args, seed, func(s *apptest.Double) {
				if seed == 2 {
					s.PackEvery = 499
				}
			})
			checkOutput(t, sim, want, 0)
			wantDeliveries := map[string]int{"main.start": 1, "main.results": 1, "chunks.begin": 64, "chunks.face": 64 * NumSides * 10}
			for name, n := range wantDeliveries {
				if sim.Deliveries[name] != n {
					t.Errorf("%s delivered %d times, want %d", name, sim.Deliveries[name], n)
				}
			}
		})
	}
}

// TestAppSingleChunkIsItsOwnNeighbour runs a chunk grid of one chunk: all
// six faces of each iteration go to the sender itself.
func TestAppSingleChunkIsItsOwnNeighbour(t *testing.T) {
	sim, cfg := simulate(t, []string{"--grid", "16,16,16", "--chunk", "16,16,16", "--iterations", "100"}, 7, nil)
	checkOutput(t, sim, []string{
		"stencil3d grid 16,16,16 chunk 16,16,16 chunks 1,1,1 iterations 100 pes 4",
		"chunk sum 940420.95797730878 fnv1a 9bd452317f7c54a4 (all 1 chunks equal)",
		serialDigest(cfg),
		"reference: match",
		"elapsed 1.500000 s",
	}, 0)
}

// TestAppTwoWideChunkGridWithJSON runs a chunk grid two wide in every
// dimension, where the -x and +x neighbours are the same task, and checks
// the JSON line.
func TestAppTwoWideChunkGridWithJSON(t *testing.T) {
	sim, cfg := simulate(t, []string{"--grid", "32,16,8", "--chunk", "16,8,4", "--iterations", "30", "--json"}, 11, func(s *apptest.Double) { s.PackEvery = 50 })
	if len(sim.Output) != 6 || sim.ExitStatus != 0 {
		t.Fatalf("exit %d, output:\n%s", sim.ExitStatus, strings.Join(sim.Output, "\n"))
	}
	checkOutput(t, sim, append([]string{
		"stencil3d grid 32,16,8 chunk 16,8,4 chunks 2,2,2 iterations 30 pes 4",
		"chunk sum 128737.66045600719 fnv1a bb17744621cf2aaf (all 8 chunks equal)",
		serialDigest(cfg),
		"reference: match",
		"elapsed 1.500000 s",
	}, sim.Output[5]), 0)

	var got map[string]any
	dec := json.NewDecoder(strings.NewReader(sim.Output[5]))
	dec.UseNumber()
	if err := dec.Decode(&got); err != nil {
		t.Fatalf("JSON line %q: %v", sim.Output[5], err)
	}
	want := map[string]string{
		"app": "stencil3d", "grid": "[32 16 8]", "chunk": "[16 8 4]", "chunks": "8", "iterations": "30", "pes": "4",
		"chunk_sum": "128737.66045600719", "chunk_fnv1a": "bb17744621cf2aaf", "chunks_equal": "true",
		"job_digest": strings.TrimPrefix(serialDigest(cfg), "job digest "), "reference": "match", "elapsed_s": "1.5",
	}
	for key, value := range want {
		if fmt.Sprint(got[key]) != value {
			t.Errorf("JSON %s = %v, want %s", key, got[key], value)
		}
	}
}

func TestAppWithoutReferenceValue(t *testing.T) {
	sim, cfg := simulate(t, []string{"--grid", "12,8,4", "--chunk", "4,4,4", "--iterations", "3"}, 3, nil)
	serial := SolveSerial(cfg)[0]
	checkOutput(t, sim, []string{
		"stencil3d grid 12,8,4 chunk 4,4,4 chunks 3,2,1 iterations 3 pes 4",
		fmt.Sprintf("chunk sum %s fnv1a %016x (all 6 chunks equal)", appkit.FormatExact(serial.Sum), serial.FNV1a),
		serialDigest(cfg),
		"reference: none (no reference value for chunk 4x4x4, 3 iterations)",
		"elapsed 1.500000 s",
	}, 0)
}

// TestAppReportsDifferingChunks corrupts one chunk during the run: the app
// must say which chunks differ and exit with status 1.
func TestAppReportsDifferingChunks(t *testing.T) {
	sim, _ := simulate(t, []string{"--grid", "64,64,64", "--chunk", "16,16,16", "--iterations", "10"}, 5, func(s *apptest.Double) {
		s.AfterDelivery = func(step int) {
			if step == 200 {
				c := s.Task(1, 5).(*Chunk)
				c.temperature[c.block.At(8, 8, 8)] += 1
			}
		}
	})
	out := strings.Join(sim.Output, "\n")
	if sim.ExitStatus != 1 {
		t.Errorf("exit status %d, want 1", sim.ExitStatus)
	}
	for _, fragment := range []string{
		"(chunks DIFFER: ",
		"\nchunk (0,1,1) sum ",
		"\nreference: MISMATCH (want chunk sum 465997.75732668047 fnv1a ebd12050aa174b8e)\n",
	} {
		if !strings.Contains(out, fragment) {
			t.Errorf("output does not contain %q:\n%s", fragment, out)
		}
	}
}

// TestAppDefineRunsWithTheRealClock goes through App.Define, as the runtime
// does.
func TestAppDefineRunsWithTheRealClock(t *testing.T) {
	args := []string{"--grid", "8,8,8", "--chunk", "4,4,4", "--iterations", "2"}
	sim := apptest.NewDouble(t, apptest.Define(t, App, args), 2, 1)
	sim.Run(args)
	if sim.ExitStatus != 0 || len(sim.Output) != 5 || !strings.HasPrefix(sim.Output[4], "elapsed ") {
		t.Errorf("exit %d, output:\n%s", sim.ExitStatus, strings.Join(sim.Output, "\n"))
	}
	if App.Name != "stencil3d" || App.Summary == "" {
		t.Errorf("App = %q %q", App.Name, App.Summary)
	}
}

func TestReportAllChunksEqualButWrong(t *testing.T) {
	cfg := DefaultConfig()
	wrong := ChunkResult{Sum: 1, FNV1a: 2}
	lines, status := report(cfg, slices.Repeat([]ChunkResult{wrong}, 64), 4, time.Second)
	if status != 1 || lines[1] != "chunk sum 1 fnv1a 0000000000000002 (all 64 chunks equal)" ||
		lines[3] != "reference: MISMATCH (want chunk sum 940420.95797730878 fnv1a 9bd452317f7c54a4)" {
		t.Errorf("status %d, lines:\n%s", status, strings.Join(lines, "\n"))
	}
}

func TestRecordsSurviveConcatenationInAnyOrder(t *testing.T) {
	a := encodeRecord(1, ChunkResult{Sum: 1.25, FNV1a: 11})
	b := encodeRecord(0, ChunkResult{Sum: 2.5, FNV1a: 22})
	c := encodeRecord(2, ChunkResult{Sum: -3, FNV1a: 33})
	joined := appkit.ConcatBytes(appkit.ConcatBytes(actor.Value{Bytes: a}, actor.Value{Bytes: b}), actor.Value{Bytes: c})
	if !bytes.Equal(joined.Bytes, slices.Concat(a, b, c)) {
		t.Fatalf("ConcatBytes does not concatenate in argument order")
	}
	got, err := decodeRecords(joined.Bytes, 3)
	if err != nil {
		t.Fatal(err)
	}
	want := []ChunkResult{{2.5, 22}, {1.25, 11}, {-3, 33}}
	if !slices.Equal(got, want) {
		t.Errorf("decoded %+v, want %+v", got, want)
	}
	for name, data := range map[string][]byte{
		"missing chunk":  slices.Concat(a, b),
		"repeated chunk": slices.Concat(a, b, a),
		"out of range":   slices.Concat(a, b, encodeRecord(3, ChunkResult{})),
		"torn record":    slices.Concat(a, b, c[:10]),
	} {
		if _, err := decodeRecords(data, 3); err == nil {
			t.Errorf("%s: decodeRecords accepted it", name)
		}
	}
}

func TestHaloWireNames(t *testing.T) {
	for s := range Side(NumSides) {
		back, ok := sideOf(haloOf(s))
		if !ok || back != s {
			t.Errorf("side %v -> %v -> %v", s, haloOf(s), back)
		}
	}
	if haloOf(XLow) != Halo_HALO_X_LOW || haloOf(ZHigh) != Halo_HALO_Z_HIGH {
		t.Errorf("halo names do not follow the side order")
	}
	for _, h := range []Halo{Halo_HALO_UNSPECIFIED, Halo(7), Halo(-1)} {
		if _, ok := sideOf(h); ok {
			t.Errorf("sideOf(%v) accepted", h)
		}
	}
}
