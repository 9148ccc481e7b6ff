// Command gen runs the generated program family of package sim/gen as a
// real job, one OS process per PE:
//
//	go run ./sim/gen/cmd/gen run gen --pes 3 --ft partialdet --checkpoint-every 1 --lb greedy --kill pe=1,at=step:2 --seed 7
//
// Every flag the launcher does not know (--seed, --steps, ...) goes to
// the program; see package gen.
package main

import (
	"os"

	"github.com/gochare/gochare/launcher"
	"github.com/gochare/gochare/sim/gen"
)

func main() { os.Exit(launcher.Main(os.Args[1:], os.Stdout, os.Stderr, gen.App)) }
