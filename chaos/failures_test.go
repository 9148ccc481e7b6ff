package chaos

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gochare/gochare/logging"
)

// The campaign checks --failures against its own copy of the runtime's
// bound (the package itself imports the standard library only): the two
// must agree, or a campaign would accept an f every run then refuses, or
// refuse one the runtime takes.
func TestMaxFailuresIsTheRuntimes(t *testing.T) {
	require.Equal(t, logging.MaxFailures, maxFailures)
	cfg, err := Preset("full")
	require.NoError(t, err)
	cfg.PEs = []int{logging.MaxFailures + 2}
	cfg.Failures = logging.MaxFailures
	require.NoError(t, cfg.Validate(), "the runtime's largest f")
	cfg.Failures = logging.MaxFailures + 1
	require.ErrorIs(t, cfg.Validate(), ErrConfig, "one more than the runtime takes")
}
