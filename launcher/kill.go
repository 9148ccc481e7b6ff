package launcher

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// kill is a failure the launcher injects: PE Rank gets SIGKILL, After the
// job began, or when one of its tasks reaches a sync point at step AtStep.
type kill struct {
	Rank   int
	After  time.Duration
	AtStep uint64
	done   bool
}

// parseKill reads a --kill value: "pe=2,at=step:37", "pe=1,after=1.5s",
// or "random" / "random,seed=7": a random PE other than 0, at a random step
// of the first three checkpoint periods when the job has sync points
// (checkpointEvery > 0), else half a second to two seconds after the job
// began; the choice and the seed are printed.
func parseKill(v string, pes int, seed, checkpointEvery uint64) (kill, string, error) {
	var k kill
	k.Rank = -1
	fields := strings.Split(v, ",")
	if fields[0] == "random" {
		for _, f := range fields[1:] {
			name, val, _ := strings.Cut(f, "=")
			if name != "seed" {
				return k, "", fmt.Errorf("%w: --kill %q: unknown field %q", errUsage, v, name)
			}
			n, err := strconv.ParseUint(val, 10, 64)
			if err != nil {
				return k, "", fmt.Errorf("%w: --kill %q: bad seed", errUsage, v)
			}
			seed = n
		}
		if pes < 2 {
			return k, "", fmt.Errorf("%w: --kill random needs at least 2 PEs", errUsage)
		}
		r := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
		k.Rank = 1 + r.IntN(pes-1)
		if checkpointEvery > 0 {
			k.AtStep = checkpointEvery/2 + r.Uint64N(3*checkpointEvery)
			return k, fmt.Sprintf("--kill random,seed=%d chose pe=%d,at=step:%d", seed, k.Rank, k.AtStep), nil
		}
		k.After = 500*time.Millisecond + time.Duration(r.Int64N(int64(1500*time.Millisecond)))
		return k, fmt.Sprintf("--kill random,seed=%d chose pe=%d,after=%v", seed, k.Rank, k.After), nil
	}
	for _, f := range fields {
		name, val, ok := strings.Cut(f, "=")
		if !ok {
			return k, "", fmt.Errorf("%w: --kill %q: want name=value fields", errUsage, v)
		}
		switch name {
		case "pe":
			n, err := strconv.Atoi(val)
			if err != nil || n < 0 || n >= pes {
				return k, "", fmt.Errorf("%w: --kill %q: pe must be 0..%d", errUsage, v, pes-1)
			}
			k.Rank = n
		case "after":
			d, err := time.ParseDuration(val)
			if err != nil || d < 0 {
				return k, "", fmt.Errorf("%w: --kill %q: bad duration", errUsage, v)
			}
			k.After = d
		case "at":
			step, ok := strings.CutPrefix(val, "step:")
			n, err := strconv.ParseUint(step, 10, 64)
			if !ok || err != nil {
				return k, "", fmt.Errorf("%w: --kill %q: want at=step:N", errUsage, v)
			}
			k.AtStep = n
		default:
			return k, "", fmt.Errorf("%w: --kill %q: unknown field %q", errUsage, v, name)
		}
	}
	if k.Rank < 0 {
		return k, "", fmt.Errorf("%w: --kill %q: which pe?", errUsage, v)
	}
	if k.After == 0 && k.AtStep == 0 {
		return k, "", fmt.Errorf("%w: --kill %q: give after=DURATION or at=step:N", errUsage, v)
	}
	return k, "", nil
}

// killDue kills the PEs whose time has come.
func (c *coordinator) killDue(now, began time.Time) {
	if began.IsZero() || c.killProcess == nil {
		return
	}
	for i := range c.cfg.Kills {
		k := &c.cfg.Kills[i]
		if k.done || k.After == 0 || now.Sub(began) < k.After {
			continue
		}
		k.done = true
		pid, err := c.killProcess(k.Rank)
		if err != nil {
			c.cfg.Log.Warn("could not kill PE", "pe", k.Rank, "err", err)
			continue
		}
		c.cfg.Log.Info("injected failure: SIGKILL", "pe", k.Rank, "pid", pid, "after_begin", k.After)
	}
}
