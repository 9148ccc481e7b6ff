package appkit

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Flags is the command line of an application: a flag.FlagSet that
// returns its errors instead of printing them or exiting.
type Flags struct {
	*flag.FlagSet
	synopsis string
}

// NewFlags returns an empty flag set for the application name. synopsis
// is the first line of the usage text, such as
// "usage: stencil3d [--grid X,Y,Z] [--iterations N]".
func NewFlags(name, synopsis string) *Flags {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return &Flags{FlagSet: fs, synopsis: synopsis}
}

// Parse parses args, in place of FlagSet.Parse. An unknown flag or a bad
// value is flag's error, which names the flag; an argument that is not a
// flag is an error too. -h and --help give an error that wraps
// flag.ErrHelp and carries the usage text on the lines after it. The
// errors have no prefix: the application adds its own.
func (f *Flags) Parse(args []string) error {
	if err := f.FlagSet.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return fmt.Errorf("%w\n%s", err, f.Usage())
		}
		return err
	}
	if f.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", f.Arg(0))
	}
	return nil
}

// Usage returns the synopsis and, one per flag, its description and
// default value.
func (f *Flags) Usage() string {
	var b strings.Builder
	b.WriteString(f.synopsis)
	b.WriteString("\n")
	f.SetOutput(&b)
	f.PrintDefaults()
	f.SetOutput(io.Discard)
	return b.String()
}

// Triple is a flag value of three positive integers written X,Y,Z (grid
// extents, chunk sizes, cell counts).
type Triple [3]int

// String writes the value as X,Y,Z, or "" for the zero value (so that
// flag shows no default for it).
func (t *Triple) String() string { return formatNonZero((*[3]int)(t)) }

// Set reads X,Y,Z.
func (t *Triple) Set(s string) error {
	v, err := parseExtents(s, false)
	if err == nil {
		*t = v
	}
	return err
}

// TripleOrOne is a Triple that also takes a single integer, for all three.
type TripleOrOne [3]int

// String writes the value as X,Y,Z, or "" for the zero value.
func (t *TripleOrOne) String() string { return formatNonZero((*[3]int)(t)) }

// Set reads X,Y,Z or a single integer N, meaning N,N,N.
func (t *TripleOrOne) Set(s string) error {
	v, err := parseExtents(s, true)
	if err == nil {
		*t = v
	}
	return err
}

// FormatTriple writes t as X,Y,Z.
func FormatTriple(t [3]int) string { return fmt.Sprintf("%d,%d,%d", t[0], t[1], t[2]) }

func formatNonZero(t *[3]int) string {
	if t == nil || *t == ([3]int{}) {
		return ""
	}
	return FormatTriple(*t)
}

func parseExtents(s string, allowOne bool) ([3]int, error) {
	parts := strings.Split(s, ",")
	switch {
	case allowOne && len(parts) != 1 && len(parts) != 3:
		return [3]int{}, fmt.Errorf("want X,Y,Z or a single extent, got %d values", len(parts))
	case !allowOne && len(parts) != 3:
		return [3]int{}, fmt.Errorf("want three comma-separated integers X,Y,Z, got %d values", len(parts))
	}
	var v [3]int
	for d, p := range parts {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil {
			return [3]int{}, fmt.Errorf("%q is not an integer", p)
		}
		if n < 1 {
			return [3]int{}, fmt.Errorf("extent %d, want at least 1", n)
		}
		v[d] = n
	}
	if len(parts) == 1 {
		v[1], v[2] = v[0], v[0]
	}
	return v, nil
}
