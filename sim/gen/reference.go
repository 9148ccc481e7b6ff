package gen

// Reference computes, serially and without the runtime, the output line a
// failure-free gen job with cfg prints: the oracle of the tests. It
// follows the program step by step over plain arrays; the order-dependent
// traces are left out, as the digest leaves them out.
func Reference(cfg Config) (string, error) {
	if err := cfg.Validate(); err != nil {
		return "", err
	}
	p := newPlan(cfg)
	n, steps := cfg.Cells, cfg.Steps
	cells := make([]cellRecord, n)
	for c := range cells {
		cells[c].Acc = initialAcc(cfg.Seed, c)
	}
	grids := make([]gridRecord, p.gridSize)
	var totals []int64
	for s := range uint64(steps) {
		// Step start: exchange values and tickets from the values before
		// the exchange.
		slots := make([][]uint64, n)
		for c := range slots {
			slots[c] = make([]uint64, cfg.Neighbours)
		}
		for c := range cells {
			for j, off := range p.offsets {
				slots[(c+off)%n][j] = exchangeValue(cells[c].Acc, s, j)
			}
			for t := range cfg.Tickets {
				x := ticketValue(cells[c].Acc, s, t)
				g := &grids[p.ticketTarget(s, c, t)]
				g.Sum += ticketWeight(x)
				g.Count++
			}
		}
		var total int64
		for c := range cells {
			cells[c].Acc = foldExchange(cells[c].Acc, s, slots[c])
			cells[c].Exchanged += uint64(cfg.Neighbours)
			total += stepContribution(cells[c].Acc, s)
		}
		totals = append(totals, total)
		for c := range cells {
			cells[c].Acc = foldTotal(cells[c].Acc, s, total)
		}
		var extreme int64
		for g := range grids {
			if p.inSection(s, g) {
				grids[g].Bonus = foldTotal(grids[g].Bonus, s, total)
			}
			v := gridContribution(grids[g].Sum, grids[g].Count, grids[g].Bonus, s)
			if g == 0 || !p.gridMin && v > extreme || p.gridMin && v < extreme {
				extreme = v
			}
		}
		for g := range grids {
			grids[g].Reduced = foldTotal(grids[g].Reduced, s, extreme)
		}
	}
	return outputLine(cfg, digest(cfg, totals, cells, grids)), nil
}
