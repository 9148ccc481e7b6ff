package leanmd

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/gochare/gochare/apps/leanmd/md"
)

// Options are the command-line options of the app.
type Options struct {
	md.Config
	// CellMap places cells on PEs: "block" or "round-robin". Computes
	// start on the PE of their own cell.
	CellMap string
	// JSON adds a last output line with the results as one JSON object.
	JSON bool
}

// ErrUsage is wrapped by every argument error.
var ErrUsage = errors.New("leanmd: bad arguments")

// ParseOptions parses the app's arguments.
func ParseOptions(args []string) (Options, error) {
	opts := Options{Config: md.Config{
		Cells: [3]int{3, 3, 3}, KAway: [3]int{2, 2, 1}, AtomsPerCell: 75, Steps: 200, MigrateEvery: 20,
	}, CellMap: "block"}
	fs := flag.NewFlagSet("leanmd", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Var(tripleFlag{&opts.Cells}, "cells", "cells per dimension `X,Y,Z` (periodic)")
	fs.Var(tripleFlag{&opts.KAway}, "kaway", "k-away factors `X,Y,Z`: cell size is (26+4)/k Å")
	fs.IntVar(&opts.AtomsPerCell, "atoms", opts.AtomsPerCell, "initial atoms per cell")
	fs.IntVar(&opts.Steps, "steps", opts.Steps, "time steps")
	fs.IntVar(&opts.MigrateEvery, "migrate-every", opts.MigrateEvery, "atom migration period in steps (0: never)")
	fs.StringVar(&opts.CellMap, "cell-map", opts.CellMap, "initial placement of cells: block or round-robin")
	fs.BoolVar(&opts.JSON, "json", false, "print the results as one JSON object on the last line")
	if err := fs.Parse(args); err != nil {
		return Options{}, fmt.Errorf("%w: %v", ErrUsage, err)
	}
	if fs.NArg() > 0 {
		return Options{}, fmt.Errorf("%w: unexpected argument %q", ErrUsage, fs.Arg(0))
	}
	if err := opts.Config.Validate(); err != nil {
		return Options{}, fmt.Errorf("%w: %v", ErrUsage, err)
	}
	if opts.CellMap != "block" && opts.CellMap != "round-robin" {
		return Options{}, fmt.Errorf("%w: --cell-map %q, want block or round-robin", ErrUsage, opts.CellMap)
	}
	return opts, nil
}

// tripleFlag parses "X,Y,Z" into three positive integers.
type tripleFlag struct{ v *[3]int }

func (f tripleFlag) String() string {
	if f.v == nil {
		return ""
	}
	return fmt.Sprintf("%d,%d,%d", f.v[0], f.v[1], f.v[2])
}

func (f tripleFlag) Set(s string) error {
	parts := strings.Split(s, ",")
	if len(parts) != 3 {
		return fmt.Errorf("%q is not X,Y,Z", s)
	}
	var out [3]int
	for d, p := range parts {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || n < 1 {
			return fmt.Errorf("%q is not X,Y,Z with positive integers", s)
		}
		out[d] = n
	}
	*f.v = out
	return nil
}
