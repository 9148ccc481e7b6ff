package lulesh

import (
	"strings"
	"testing"
)

func TestParseConfigDefaultsAndValues(t *testing.T) {
	for _, c := range []struct {
		args []string
		want Config
	}{
		{nil, Config{Size: 30, Chunk: [3]int{15, 15, 15}}},
		{[]string{"--size", "15"}, Config{Size: 15, Chunk: [3]int{15, 15, 15}}},
		{[]string{"--size", "48", "--chunk", "16"}, Config{Size: 48, Chunk: [3]int{16, 16, 16}}},
		{[]string{"--size", "10", "--chunk", "10,5,2", "--iterations", "50", "--progress", "7", "--json"},
			Config{Size: 10, Chunk: [3]int{10, 5, 2}, Iterations: 50, Progress: 7, JSON: true}},
	} {
		got, err := ParseConfig(c.args)
		if err != nil || got != c.want {
			t.Errorf("ParseConfig(%q) = %+v, %v; want %+v", c.args, got, err, c.want)
		}
	}
}

func TestParseConfigRefusesBadValuesNamingTheFlag(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--size", "0"}, "--size 0"},
		{[]string{"--size", "10", "--chunk", "3"}, "--chunk x extent 3 does not divide --size 10"},
		{[]string{"--size", "10", "--chunk", "5,4,5"}, "--chunk y extent 4 does not divide --size 10"},
		{[]string{"--size", "10", "--chunk", "20"}, "--chunk x extent 20, want 1 to --size 10"},
		{[]string{"--chunk", "1,2"}, "want X,Y,Z or a single extent"},
		{[]string{"--chunk", "a,b,c"}, `"a" is not an integer`},
		{[]string{"--chunk", "0,1,1"}, "extent 0, want at least 1"},
		{[]string{"--iterations", "-1"}, "--iterations -1"},
		{[]string{"--progress", "-2"}, "--progress -2"},
		{[]string{"--steps", "3"}, "flag provided but not defined: -steps"},
		{[]string{"extra"}, `unexpected argument "extra"`},
		{[]string{"--size", "1024", "--chunk", "2"}, "chunks, at most"},
	} {
		_, err := ParseConfig(c.args)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseConfig(%q) error %v, want one containing %q", c.args, err, c.want)
		}
	}
}

func TestReferenceRows(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want int // iterations of the row, 0 for none
	}{
		{Config{Size: 10}, 231},
		{Config{Size: 10, Iterations: 500}, 231},
		{Config{Size: 10, Iterations: 50}, 50},
		{Config{Size: 10, Iterations: 49}, 0},
		{Config{Size: 16}, 434},
		{Config{Size: 30}, 932},
		{Config{Size: 48}, 0},
	} {
		row, ok := Reference(c.cfg)
		if ok != (c.want != 0) || row.Iterations != c.want {
			t.Errorf("Reference(%+v) = %+v, %v; want a row of %d iterations", c.cfg, row, ok, c.want)
		}
	}
}

func TestRegionSizesCoverEveryChunk(t *testing.T) {
	shared, faces := regionSizes([3]int{1, 2, 5})
	// Positions along z: ends have 1 neighbour along z, the middle 2;
	// along y always 1; along x none.
	if want := []int{3, 5}; !equalInts(shared, want) {
		t.Errorf("shared-node region sizes %v, want %v", shared, want)
	}
	if want := []int{2, 3}; !equalInts(faces, want) {
		t.Errorf("face region sizes %v, want %v", faces, want)
	}
	if all, f := neighbourCounts([3]int{3, 3, 3}, [3]int{1, 1, 1}); all != 26 || f != 6 {
		t.Errorf("centre of 3³ has %d neighbours, %d faces; want 26, 6", all, f)
	}
	if shared, faces := regionSizes([3]int{1, 1, 1}); len(shared) != 0 || len(faces) != 0 {
		t.Errorf("one chunk has regions %v %v", shared, faces)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
