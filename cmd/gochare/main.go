// Command gochare runs gochare jobs: it launches PE processes, runs the
// bundled mini-apps and the generated test programs (gen), benchmarks the runtime (gochare bench, package bench)
// and runs the reliability campaign (gochare chaos, package chaos). See the
// launcher package; programs built on launcher.Main alone carry the
// runtime and their applications, not the benchmarks.
package main

import (
	"os"

	"github.com/gochare/gochare/actor"
	"github.com/gochare/gochare/apps/leanmd"
	"github.com/gochare/gochare/apps/lulesh"
	"github.com/gochare/gochare/apps/stencil3d"
	"github.com/gochare/gochare/bench"
	"github.com/gochare/gochare/chaos"
	"github.com/gochare/gochare/launcher"
	"github.com/gochare/gochare/scheduler/transport"
	"github.com/gochare/gochare/scheduler/transport/protoactor"
	"github.com/gochare/gochare/sim/gen"
)

var program = launcher.Program{
	Apps: []actor.App{stencil3d.App, leanmd.App, lulesh.App, gen.App},
	Commands: []launcher.Command{
		{Name: "bench", Usage: bench.Usage, Run: bench.Command},
		{Name: "chaos", Usage: chaos.Summary, Run: chaos.Command},
	},
	Transports: transports(),
}

// transports are the default TCP transport and protoactor-go's remote,
// which application binaries do not link.
func transports() map[string]launcher.Transport {
	ts := launcher.DefaultTransports()
	ts["protoactor"] = func(cfg transport.Config) (transport.Endpoint, error) { return protoactor.New(cfg) }
	return ts
}

func main() { os.Exit(program.Main(os.Args[1:], os.Stdout, os.Stderr)) }
