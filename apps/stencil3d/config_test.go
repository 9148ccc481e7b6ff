package stencil3d

import (
	"errors"
	"flag"
	"strings"
	"testing"

	"github.com/gochare/gochare/actor"
)

func TestParseConfigDefaults(t *testing.T) {
	cfg, err := ParseConfig(nil)
	if err != nil {
		t.Fatal(err)
	}
	want := Config{Grid: [3]int{64, 64, 64}, Chunk: [3]int{16, 16, 16}, Iterations: 100}
	if cfg != want {
		t.Errorf("ParseConfig(nil) = %+v, want %+v", cfg, want)
	}
	if cfg.ChunkGrid() != [3]int{4, 4, 4} || cfg.NumChunks() != 64 {
		t.Errorf("chunk grid %v (%d chunks), want 4,4,4 (64)", cfg.ChunkGrid(), cfg.NumChunks())
	}
}

func TestParseConfigFlags(t *testing.T) {
	cfg, err := ParseConfig([]string{"--grid", "32,16,8", "--chunk=16,8,4", "-iterations", "30", "--json"})
	if err != nil {
		t.Fatal(err)
	}
	want := Config{Grid: [3]int{32, 16, 8}, Chunk: [3]int{16, 8, 4}, Iterations: 30, JSON: true}
	if cfg != want {
		t.Errorf("got %+v, want %+v", cfg, want)
	}
	if cfg.Block() != (Block{16, 8, 4}) || cfg.ChunkGrid() != [3]int{2, 2, 2} {
		t.Errorf("block %v chunk grid %v", cfg.Block(), cfg.ChunkGrid())
	}
}

func TestParseConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		// every fragment must appear in the error
		want []string
	}{
		{[]string{"--gird", "8,8,8"}, []string{"-gird", "not defined"}},
		{[]string{"--grid", "8,8"}, []string{"-grid", "three"}},
		{[]string{"--grid", "8,x,8"}, []string{"-grid", `"x"`}},
		{[]string{"--chunk", "0,4,4"}, []string{"-chunk", "at least 1"}},
		{[]string{"--chunk", "4,-4,4"}, []string{"-chunk", "at least 1"}},
		{[]string{"--iterations", "ten"}, []string{"-iterations", "ten"}},
		{[]string{"--iterations", "0"}, []string{"--iterations 0"}},
		{[]string{"--iterations", "-3"}, []string{"--iterations -3"}},
		{[]string{"--grid", "64,64,60", "--chunk", "16,16,16"}, []string{"--grid z extent 60", "not divisible", "--chunk z extent 16"}},
		{[]string{"--grid", "70000,16,16", "--chunk", "16,16,16"}, []string{"--grid x extent 70000"}},
		{[]string{"--grid", "1024,1024,1024", "--chunk", "512,512,512"}, []string{"--chunk 512,512,512", "points"}},
		{[]string{"--grid", "65536,1024,16", "--chunk", "1,1,16"}, []string{"chunks, at most"}},
		{[]string{"--json=maybe"}, []string{"-json"}},
		{[]string{"extra"}, []string{`unexpected argument "extra"`}},
	} {
		_, err := ParseConfig(tc.args)
		if err == nil {
			t.Errorf("ParseConfig(%q) succeeded, want an error", tc.args)
			continue
		}
		for _, frag := range tc.want {
			if !strings.Contains(err.Error(), frag) {
				t.Errorf("ParseConfig(%q) = %q, want it to mention %q", tc.args, err, frag)
			}
		}
		if !strings.HasPrefix(err.Error(), "stencil3d: ") {
			t.Errorf("ParseConfig(%q) = %q, want the package prefix", tc.args, err)
		}
	}
}

func TestParseConfigHelpReturnsUsage(t *testing.T) {
	_, err := ParseConfig([]string{"-h"})
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("ParseConfig(-h) = %v, want flag.ErrHelp", err)
	}
	for _, name := range []string{"-grid", "-chunk", "-iterations", "-json", "64,64,64"} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("help text does not mention %q:\n%v", name, err)
		}
	}
}

func TestDefineRefusesBadArguments(t *testing.T) {
	j := actor.NewJob()
	err := App.Define(j, []string{"--chunk", "16,16"})
	if err == nil || !strings.Contains(err.Error(), "-chunk") {
		t.Errorf("Define with a bad --chunk = %v, want an error naming the flag", err)
	}
}
