package leanmd

import (
	"errors"
	"fmt"

	"github.com/gochare/gochare/apps/appkit"
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
	fs := appkit.NewFlags("leanmd", "usage: leanmd [--cells X,Y,Z] [--kaway X,Y,Z] [--atoms N] [--steps N] [--migrate-every N] [--cell-map block|round-robin] [--json]")
	fs.Var((*appkit.Triple)(&opts.Cells), "cells", "cells per dimension `X,Y,Z` (periodic)")
	fs.Var((*appkit.Triple)(&opts.KAway), "kaway", "k-away factors `X,Y,Z`: cell size is (26+4)/k Å")
	fs.IntVar(&opts.AtomsPerCell, "atoms", opts.AtomsPerCell, "initial atoms per cell")
	fs.IntVar(&opts.Steps, "steps", opts.Steps, "time steps")
	fs.IntVar(&opts.MigrateEvery, "migrate-every", opts.MigrateEvery, "atom migration period in steps (0: never)")
	fs.StringVar(&opts.CellMap, "cell-map", opts.CellMap, "initial placement of cells: block or round-robin")
	fs.BoolVar(&opts.JSON, "json", false, "print the results as one JSON object on the last line")
	if err := fs.Parse(args); err != nil {
		return Options{}, fmt.Errorf("%w: %w", ErrUsage, err)
	}
	if err := opts.Config.Validate(); err != nil {
		return Options{}, fmt.Errorf("%w: %v", ErrUsage, err)
	}
	if opts.CellMap != "block" && opts.CellMap != "round-robin" {
		return Options{}, fmt.Errorf("%w: --cell-map %q, want block or round-robin", ErrUsage, opts.CellMap)
	}
	return opts, nil
}
