package actor

import "fmt"

// Order says how the reception order of a handler's messages affects a
// task's state. It decides whether the fault-tolerance protocols must record
// a determinant for each reception.
type Order uint8

const (
	// OrderDependent receptions may change the state differently in another
	// order. One determinant per reception. The default.
	OrderDependent Order = iota
	// Ordered receptions are consumed in an order the program fixes itself
	// (keyed buffering, or at most one such message pending). No determinant.
	Ordered
	// Commutative receptions form a region of a known number of messages
	// whose handlers leave the same state in any order. No determinant.
	Commutative
)

func (o Order) String() string {
	switch o {
	case OrderDependent:
		return "order-dependent"
	case Ordered:
		return "ordered"
	case Commutative:
		return "commutative"
	}
	return fmt.Sprintf("Order(%d)", uint8(o))
}

// Annotation is the declared reception semantics of a handler.
type Annotation struct {
	Order Order
	// RegionSize is the number of messages of a commutative region
	// (Commutative only), unless the region sizes are told at run time
	// (AnnotateCommutativeBy): see RegionSizeAt.
	RegionSize int
	// regionSizeAt, if set, tells the size of each region.
	regionSizeAt func(at Index, key uint64) int
}

// RegionSizeAt returns the number of messages of the commutative region of
// key key at the task at index at.
func (a Annotation) RegionSizeAt(at Index, key uint64) int {
	if a.regionSizeAt != nil {
		return a.regionSizeAt(at, key)
	}
	return a.RegionSize
}

// SizedAtRunTime reports whether the region sizes are told at run time.
func (a Annotation) SizedAtRunTime() bool { return a.regionSizeAt != nil }

// AnnotateOrdered declares a handler whose messages are consumed in an order
// fixed by the program.
func AnnotateOrdered() Annotation { return Annotation{Order: Ordered} }

// AnnotateOrderDependent declares a handler whose reception order matters.
func AnnotateOrderDependent() Annotation { return Annotation{Order: OrderDependent} }

// AnnotateCommutative declares a handler whose messages come in regions of n
// messages with the same key; the handlers of one region commute. While a
// region is open, the task's other messages wait. When the n-th message has
// been handled the runtime runs the completion step given with
// WhenComplete.
func AnnotateCommutative(n int) Annotation {
	if n < 1 {
		panic(fmt.Sprintf("actor: commutative region of %d messages", n))
	}
	return Annotation{Order: Commutative, RegionSize: n}
}

// AnnotateCommutativeBy is AnnotateCommutative with region sizes told at
// run time, per task and per key, as the counts of a when clause are:
// size(at, key) is the number of messages of the region of key key at the
// task at index at (a task on the boundary of a grid has fewer
// neighbours, a region's key may say how many parts it has). The sender
// evaluates it for each message it sends, so it must be a pure function of
// its arguments (and of the job's declaration), at least 1 wherever a
// message is sent; a size below 1 stops the job.
func AnnotateCommutativeBy(size func(at Index, key uint64) int) Annotation {
	if size == nil {
		panic("actor: AnnotateCommutativeBy(nil)")
	}
	return Annotation{Order: Commutative, regionSizeAt: size}
}

// NeedsDeterminant reports whether a reception under this annotation must
// be recorded by a protocol that logs only order-dependent receptions.
func (a Annotation) NeedsDeterminant() bool { return a.Order == OrderDependent }

func (a Annotation) String() string {
	if a.Order == Commutative && a.regionSizeAt != nil {
		return "commutative(sized at run time)"
	}
	if a.Order == Commutative {
		return fmt.Sprintf("commutative(%d)", a.RegionSize)
	}
	return a.Order.String()
}
