package kernel

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestResultJSONHasTheCLIKeys(t *testing.T) {
	r := Result{Size: 10, Iterations: 231, FinalOriginEnergy: 27205.311684703447,
		Symmetry: Symmetry{1e-12, 2e-11, 3e-14}, Elapsed: 1500 * time.Millisecond, FOM: 1234.5,
		Digest: 0x8a9546c5a721b8e2}
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var decoded map[string]any
	if err := json.Unmarshal(data, &decoded); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"iterations": 231.0, "final_origin_energy": 27205.311684703447,
		"max_abs_diff": 1e-12, "total_abs_diff": 2e-11, "max_rel_diff": 3e-14,
		"elapsed_s": 1.5, "fom": 1234.5, "digest": "8a9546c5a721b8e2",
	}
	if len(decoded) != len(want) {
		t.Fatalf("keys %v, want %v", decoded, want)
	}
	for k, v := range want {
		if decoded[k] != v {
			t.Errorf("%s = %v, want %v", k, decoded[k], v)
		}
	}
}

func TestReportShowsEnergyAtFullPrecision(t *testing.T) {
	var b strings.Builder
	r := Result{Size: 10, Iterations: 231, FinalOriginEnergy: 27205.311684703447, Digest: 0xff}
	if err := r.WriteReport(&b); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"Iteration count     =  231", "Final Origin Energy =  27205.311684703447", "Digest               = 00000000000000ff"} {
		if !strings.Contains(b.String(), line) {
			t.Errorf("report lacks %q:\n%s", line, b.String())
		}
	}
}
