package launcher

import (
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gochare/gochare/internal/testbin"
)

// startVariantPE starts PE rank of an external faults job from the faults
// binary, with FAULTS_VARIANT=variant: a program built from other sources.
func startVariantPE(t *testing.T, launcher *job, rank, size int, variant string) *pe {
	t.Helper()
	addr := launcher.waitLine(t, regexp.MustCompile(`--coordinator (\S+)`), 30*time.Second)[1]
	secret := launcher.waitLine(t, regexp.MustCompile(`GOCHARE_JOB_SECRET=([0-9a-f]+)`), time.Second)[1]
	p := &pe{cmd: exec.Command(testbin.Build(t, faultsPackage), "pe", "--coordinator", addr, "--rank", strconv.Itoa(rank), "--size", strconv.Itoa(size)), done: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), "GOCHARE_JOB_SECRET="+secret, "FAULTS_VARIANT="+variant)
	p.cmd.Stdout, p.cmd.Stderr = p, p
	require.NoError(t, p.cmd.Start())
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.done
	})
	return p
}

// A PE whose program declares other handlers than the launcher's (here a
// handler renamed) stops the job before it begins, with an error that
// names the PE; declaring the same handlers in another order is no
// difference: handler IDs come from names, and the job runs.
func TestPEsWithDifferentHandlersAreRefusedAtJoin(t *testing.T) {
	bin := testbin.Build(t, faultsPackage)

	j := startBinary(t, bin, "run", "faults", "--pes", "2", "--external", "--steps", "6")
	pe0 := startVariantPE(t, j, 0, 2, "")
	pe1 := startVariantPE(t, j, 1, 2, "renamed")
	require.Equal(t, 1, j.wait(t, 2*time.Minute), j.output())
	require.Regexp(t, `launcher: PEs declare different handlers: PE 1 \(pid \d+ on \S+\) declares other collections or handlers than the launcher for faults \["--steps" "6"\] \(declaration digest [0-9a-f]{24}, the launcher's [0-9a-f]{24}\): every PE of a job must run the same program`, j.output())
	require.NotContains(t, j.output(), "job begins")
	for _, p := range []*pe{pe0, pe1} {
		p.wait(t, time.Minute) // the PEs end with the job
	}

	j = startBinary(t, bin, "run", "faults", "--pes", "2", "--external", "--steps", "6")
	startVariantPE(t, j, 0, 2, "")
	startVariantPE(t, j, 1, 2, "reordered")
	require.Equal(t, 0, j.wait(t, 2*time.Minute), j.output())
	require.Contains(t, j.output(), "steps 48")
}
