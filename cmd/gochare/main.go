// Command gochare runs gochare jobs: it launches PE processes, runs the
// bundled mini-apps and benchmarks the runtime. See the launcher package.
package main

import (
	"os"

	"github.com/gochare/gochare/apps/leanmd"
	"github.com/gochare/gochare/apps/lulesh"
	"github.com/gochare/gochare/apps/stencil3d"
	"github.com/gochare/gochare/launcher"
)

func main() {
	os.Exit(launcher.Main(os.Args[1:], os.Stdout, os.Stderr, stencil3d.App, leanmd.App, lulesh.App))
}
