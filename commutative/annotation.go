package commutative

import "fmt"

// Order says how the reception order of a handler's messages affects the
// receiving task's state.
type Order uint8

const (
	// OrderDependent receptions may leave a different state in another
	// order. They need a determinant each.
	OrderDependent Order = iota
	// Ordered receptions are consumed in an order the program fixes itself
	// (keyed buffering, or at most one such message pending).
	Ordered
	// Commutative receptions form a region of a known number of messages
	// whose handlers leave the same state in any order.
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
	// RegionSize is the number of messages in one commutative region
	// (Commutative only).
	RegionSize int
}

// OrderedAnnotation declares a handler whose messages the program consumes
// in a fixed order.
func OrderedAnnotation() Annotation { return Annotation{Order: Ordered} }

// OrderDependentAnnotation declares a handler whose reception order matters.
func OrderDependentAnnotation() Annotation { return Annotation{Order: OrderDependent} }

// CommutativeAnnotation declares a handler whose messages come in regions of
// size messages. It panics if size < 1.
func CommutativeAnnotation(size int) Annotation {
	if size < 1 {
		panic(fmt.Sprintf("commutative: region of %d messages", size))
	}
	return Annotation{Order: Commutative, RegionSize: size}
}

// NeedsDeterminant reports whether a reception under this annotation must be
// recorded by a protocol that records only order-dependent receptions:
// ordered no, commutative no, order-dependent yes.
func (a Annotation) NeedsDeterminant() bool { return a.Order == OrderDependent }

func (a Annotation) String() string {
	if a.Order == Commutative {
		return fmt.Sprintf("commutative(%d)", a.RegionSize)
	}
	return a.Order.String()
}
