package lulesh

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/gochare/gochare/apps/lulesh/kernel"
	"github.com/gochare/gochare/job/inprocess"
)

// runApp runs the app in process and returns its output and the JSON
// report of its last line.
func runApp(t *testing.T, pes int, args ...string) ([]string, Report) {
	t.Helper()
	var stderr strings.Builder
	res, err := inprocess.Run(context.Background(), App, append(args, "--json"), pes, &stderr)
	if err != nil {
		t.Fatalf("run %v on %d PEs: %v\nstderr:\n%s", args, pes, err, stderr.String())
	}
	if res.Status != 0 {
		t.Fatalf("run %v on %d PEs: exit status %d, output:\n%s\nstderr:\n%s", args, pes, res.Status, strings.Join(res.Output, "\n"), stderr.String())
	}
	if len(res.Output) == 0 {
		t.Fatalf("run %v on %d PEs: no output", args, pes)
	}
	var rep Report
	last := res.Output[len(res.Output)-1]
	if err := json.Unmarshal([]byte(last), &rep); err != nil {
		t.Fatalf("last line %q is not the JSON report: %v", last, err)
	}
	return res.Output, rep
}

func chunkedDigest(t *testing.T, size int, chunk [3]int, iterations int) kernel.Result {
	t.Helper()
	chunking, err := kernel.UniformChunking(size, [3]int{size / chunk[0], size / chunk[1], size / chunk[2]})
	if err != nil {
		t.Fatal(err)
	}
	res, err := kernel.RunChunked(size, chunking, iterations)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestDistributedRunMatchesReferenceAndChunkedDriver runs the 10³,
// 50-iteration reference row on 1, 2 and 4 PEs in several chunkings:
// every run matches the reference row, and its digest is bitwise the one
// kernel.RunChunked predicts for the chunking, whatever the PE count.
func TestDistributedRunMatchesReferenceAndChunkedDriver(t *testing.T) {
	iterations := 50
	chunks := [][3]int{{10, 10, 10}, {5, 5, 5}, {10, 5, 2}, {2, 5, 5}}
	pes := []int{1, 2, 4}
	if raceDetector {
		iterations, chunks, pes = 5, [][3]int{{5, 5, 5}, {10, 5, 2}}, []int{1, 4}
	}
	row, _ := Reference(Config{Size: 10, Iterations: 50})
	for _, chunk := range chunks {
		want := chunkedDigest(t, 10, chunk, iterations)
		for _, n := range pes {
			t.Run(fmt.Sprintf("chunk=%s/pes=%d", formatTriple(chunk), n), func(t *testing.T) {
				output, rep := runApp(t, n, "--size", "10", "--chunk", formatTriple(chunk), "--iterations", fmt.Sprint(iterations))
				if got := fmt.Sprintf("%016x", want.Digest); rep.Digest != got {
					t.Errorf("digest %s, kernel.RunChunked %s", rep.Digest, got)
				}
				if rep.Iterations != iterations || rep.PEs != n || rep.Chunk != chunk {
					t.Errorf("report %+v, want %d iterations on %d PEs in chunks %v", rep, iterations, n, chunk)
				}
				if iterations != row.Iterations {
					return
				}
				if rep.Reference != referenceMatch || !contains(output, "reference: match") {
					t.Errorf("reference %q, output:\n%s", rep.Reference, strings.Join(output, "\n"))
				}
				e0, err := rep.FinalOriginEnergy.Float64()
				if err != nil || e0 != want.FinalOriginEnergy {
					t.Errorf("final origin energy %s, kernel.RunChunked %v", rep.FinalOriginEnergy, want.FinalOriginEnergy)
				}
			})
		}
	}
}

// TestRunToStopTimeMatchesReference runs the 16³ row (434 cycles) to the
// stop time in 8³ chunks on 2 PEs.
func TestRunToStopTimeMatchesReference(t *testing.T) {
	if raceDetector || testing.Short() {
		t.Skip("434 cycles of 16³: too slow under -race or -short")
	}
	output, rep := runApp(t, 2, "--size", "16", "--chunk", "8,8,8", "--progress", "100")
	if rep.Iterations != 434 || rep.Reference != referenceMatch {
		t.Errorf("%d iterations, reference %q; output:\n%s", rep.Iterations, rep.Reference, strings.Join(output, "\n"))
	}
	if !contains(output, "cycle = 400, time = ") {
		t.Errorf("no progress line for cycle 400; output:\n%s", strings.Join(output, "\n"))
	}
}

// TestNoReferenceRowIsReported checks the reference line of a
// configuration outside the table.
func TestNoReferenceRowIsReported(t *testing.T) {
	output, rep := runApp(t, 2, "--size", "6", "--chunk", "3", "--iterations", "3")
	if rep.Reference != referenceNone || !contains(output, "reference: none (no reference row for size 6, iteration limit 3)") {
		t.Errorf("reference %q; output:\n%s", rep.Reference, strings.Join(output, "\n"))
	}
}

func TestReportFlagsMismatchWithStatusOne(t *testing.T) {
	cfg := Config{Size: 10, Chunk: [3]int{5, 5, 5}, Iterations: 50}
	res := chunkedDigest(t, 10, cfg.Chunk, 49)
	res.Iterations = 50
	lines, status := report(cfg, res, 1)
	if status != 1 || !contains(lines, "reference: MISMATCH (want 50 iterations, e(0) 81047.957518451338 within 1e-10 relative)") {
		t.Errorf("status %d, lines:\n%s", status, strings.Join(lines, "\n"))
	}
}

func contains(lines []string, want string) bool {
	for _, l := range lines {
		if strings.Contains(l, want) {
			return true
		}
	}
	return false
}
