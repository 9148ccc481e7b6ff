package launcher

import (
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gochare/gochare/internal/testbin"
)

// On real PE processes, --check-annotations stops a job whose handler,
// annotated commutative, sums floats in arrival order: the launcher exits
// 1 naming the collection, the handler and the region key. The same job
// adding integers passes, and so does the float job without the check.
func TestCheckAnnotationsOnPEProcesses(t *testing.T) {
	bin := testbin.Build(t, faultsPackage)
	j := startBinary(t, bin, "run", "sums", "--pes", "3", "--check-annotations", "--float")
	require.Equal(t, 1, j.wait(t, 60*time.Second), j.output())
	require.Regexp(t, `gochare: PE \d: regioncheck: handler annotated commutative is not: collection "acc", handler "add", region key 0 \(task acc\(\d\)\): in order \[3 2 1 0\] \(delivery order \[0 1 2 3\]\), the packed state differs`, j.output())

	j = startBinary(t, bin, "run", "sums", "--pes", "3", "--check-annotations=5", "--rounds", "3")
	require.Equal(t, 0, j.wait(t, 60*time.Second), j.output())
	j.waitLine(t, regexp.MustCompile(`^round 2: float sum 0, integer sum 60$`), time.Second)

	j = startBinary(t, bin, "run", "sums", "--pes", "3", "--float")
	require.Equal(t, 0, j.wait(t, 60*time.Second), j.output())
	j.waitLine(t, regexp.MustCompile(`^round 1: float sum `), time.Second)
}

// Stencil3D's faces pass the check on real PEs, and the run still matches
// the reference.
func TestStencilPassesCheckAnnotationsOnPEProcesses(t *testing.T) {
	j := startJob(t, "run", "stencil3d", "--pes", "3", "--check-annotations", "--iterations", "10")
	require.Equal(t, 0, j.wait(t, 2*time.Minute), j.output())
	j.waitLine(t, regexp.MustCompile(`^reference: match$`), time.Second)
}

func TestCheckAnnotationsFlag(t *testing.T) {
	o, rest, err := splitRunArgs([]string{"--pes", "2", "--check-annotations", "--float"})
	require.NoError(t, err)
	require.Equal(t, defaultCheckOrders, o.checkAnnotations)
	require.Equal(t, []string{"--float"}, rest)
	o, _, err = splitRunArgs([]string{"--pes", "2", "--check-annotations=7"})
	require.NoError(t, err)
	require.Equal(t, 7, o.checkAnnotations)
	o, _, err = splitRunArgs([]string{"--pes", "2"})
	require.NoError(t, err)
	require.Zero(t, o.checkAnnotations)
	for _, bad := range []string{"--check-annotations=0", "--check-annotations=x", "--check-annotations=1001"} {
		_, _, err := splitRunArgs([]string{"--pes", "2", bad})
		require.ErrorIs(t, err, errUsage, bad)
		require.ErrorContains(t, err, "K from 1 to 1000")
	}
}
