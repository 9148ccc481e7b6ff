package docs

import (
	"bufio"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const module = "github.com/gochare/gochare/"

// layers reads the package table of design.md's "Layers" section: for
// each row, its packages and the module packages it says they import.
func layers(t *testing.T) (rows [][2][]string) {
	f, err := os.Open("design.md")
	require.NoError(t, err)
	defer f.Close()
	code := regexp.MustCompile("`([^`]*)`")
	names := func(cell string) []string {
		var out []string
		for _, m := range code.FindAllStringSubmatch(cell, -1) {
			out = append(out, strings.TrimSuffix(m[1], "/"))
		}
		return out
	}
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "| package | what it is | imports of gochare |"):
			in = true
		case in && strings.HasPrefix(line, "|---"):
		case in && strings.HasPrefix(line, "|"):
			cells := strings.Split(strings.Trim(line, "|"), " | ")
			require.Len(t, cells, 3, "design.md: a table row has three cells: %s", line)
			imports := names(cells[2])
			if strings.TrimSpace(cells[2]) != "none" {
				require.NotEmpty(t, imports, "design.md: say none or name the imports: %s", line)
			}
			rows = append(rows, [2][]string{names(cells[0]), imports})
		case in:
			return rows
		}
	}
	require.NoError(t, sc.Err())
	return rows
}

// TestPackageTable checks that design.md's table names every package of
// the module once, and exactly the module packages each row imports
// outside its tests.
func TestPackageTable(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list over the module")
	}
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "../...").Output()
	require.NoError(t, err, "go list")
	imports := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(fields[0], module)
		if pkg == "docs" {
			continue
		}
		imports[pkg] = []string{}
		for _, imp := range fields[1:] {
			if strings.HasPrefix(imp, module) {
				imports[pkg] = append(imports[pkg], strings.TrimPrefix(imp, module))
			}
		}
	}
	rows := layers(t)
	require.NotEmpty(t, rows, "design.md has no package table")
	seen := map[string]bool{}
	for _, row := range rows {
		var got []string
		for _, pkg := range row[0] {
			imps, ok := imports[pkg]
			require.True(t, ok, "design.md names package %s, which the module does not have", pkg)
			require.False(t, seen[pkg], "design.md names package %s twice", pkg)
			seen[pkg] = true
			for _, imp := range imps {
				if !slices.Contains(row[0], imp) && !slices.Contains(got, imp) {
					got = append(got, imp)
				}
			}
		}
		slices.Sort(got)
		want := slices.Sorted(slices.Values(row[1]))
		require.Equal(t, want, got, "design.md: what %v import", row[0])
	}
	for pkg := range imports {
		require.True(t, seen[pkg], "design.md's package table does not name %s", pkg)
	}
}
