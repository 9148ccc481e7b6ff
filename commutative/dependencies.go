package commutative

import (
	"errors"
	"fmt"
	"slices"
)

// ErrPattern is returned when an observed reception pattern contradicts its
// own annotations.
var ErrPattern = errors.New("commutative: inconsistent reception pattern")

// Observed is one reception of an observed pattern, in reception order.
type Observed struct {
	Order Order
	// Stream names the ordered sequence an Ordered reception belongs to. A
	// commutative region also names the ordered sequence in which the
	// program places it as one step; empty puts it in a sequence of its own.
	Stream string
	// Index is the position of an Ordered reception in its stream (0, 1, …).
	Index int
	// Region names the commutative region of a Commutative reception.
	Region string
}

// Dependencies is the result of MinimalDependencies.
type Dependencies struct {
	// Count is the minimal number of dependencies that fixes the observed
	// order for replay.
	Count int
	// Receptions are the indices (into the pattern) of the receptions that
	// carry them.
	Receptions []int
}

// MinimalDependencies counts the dependencies needed to replay the observed
// reception pattern, with the construction of the partial-order theory:
//
//   - a commutative region collapses to one logical event of the ordered
//     sequence that the program places it in, and needs nothing inside;
//   - every order-dependent reception is a sequence of its own, of length 1;
//   - the longest sequence is the backbone and needs no dependency; every
//     logical event of the other sequences needs one (its position relative
//     to the backbone).
//
// This gives 0 for n ordered receptions, n−1 for n unordered ones, min(m,n)
// for two interleaved ordered sequences, Σ|Xi| − max|Xi| for k of them, n for
// n unordered receptions interleaved with an ordered sequence, and 0 for a
// commutative region of any size. For two unordered sets of m and n it gives
// m+n−1: one fewer than the m+n of the paper's Table 1, by the same argument
// that makes a single unordered set cost n−1.
//
// The pattern must be consistent: the receptions of an ordered stream appear
// with indices 0, 1, 2, …; a region's receptions are contiguous (a region is
// isolated). Otherwise the error wraps ErrPattern.
func MinimalDependencies(pattern []Observed) (Dependencies, error) {
	type sequence struct {
		length int
		first  int   // position of its first logical event, for tie-breaks
		events []int // pattern indices of the receptions it contains
	}
	var order []string // sequence names by first appearance
	sequences := map[string]*sequence{}
	add := func(name string, length int, receptions ...int) {
		s, ok := sequences[name]
		if !ok {
			s = &sequence{first: receptions[0]}
			sequences[name] = s
			order = append(order, name)
		}
		s.length += length
		if length > 0 {
			s.events = append(s.events, receptions...)
		}
	}
	nextIndex := map[string]int{}
	closedRegions := map[string]bool{}
	openRegion := ""
	for i, r := range pattern {
		if openRegion != "" && (r.Order != Commutative || r.Region != openRegion) {
			closedRegions[openRegion] = true
			openRegion = ""
		}
		switch r.Order {
		case Ordered:
			if r.Stream == "" {
				return Dependencies{}, fmt.Errorf("reception %d: ordered without a stream: %w", i, ErrPattern)
			}
			if r.Index != nextIndex[r.Stream] {
				return Dependencies{}, fmt.Errorf("reception %d: stream %q index %d, expected %d: %w",
					i, r.Stream, r.Index, nextIndex[r.Stream], ErrPattern)
			}
			nextIndex[r.Stream]++
			add("o:"+r.Stream, 1, i)
		case OrderDependent:
			add(fmt.Sprintf("d:%d", i), 1, i)
		case Commutative:
			if r.Region == "" {
				return Dependencies{}, fmt.Errorf("reception %d: commutative without a region: %w", i, ErrPattern)
			}
			if closedRegions[r.Region] {
				return Dependencies{}, fmt.Errorf("reception %d: region %q is not contiguous: %w", i, r.Region, ErrPattern)
			}
			stream := "r:" + r.Region
			if r.Stream != "" {
				stream = "o:" + r.Stream
			}
			if openRegion == r.Region {
				add(stream, 0, i)
				continue
			}
			openRegion = r.Region
			add(stream, 1, i)
		default:
			return Dependencies{}, fmt.Errorf("reception %d: order %v: %w", i, r.Order, ErrPattern)
		}
	}
	if len(order) == 0 {
		return Dependencies{}, nil
	}
	backbone := order[0]
	for _, name := range order[1:] {
		if sequences[name].length > sequences[backbone].length {
			backbone = name
		}
	}
	var result Dependencies
	for _, name := range order {
		if name == backbone {
			continue
		}
		s := sequences[name]
		result.Count += s.length
		result.Receptions = append(result.Receptions, s.events...)
	}
	slices.Sort(result.Receptions)
	return result, nil
}
