package actor

// Context is what a handler may do. The runtime implements it; one Context
// is valid only during the handler call it was given to.
type Context interface {
	// Index is the index of the task running the handler.
	Index() Index
	// PE is the rank of the PE the task runs on now, NumPEs the job's size.
	PE() int
	NumPEs() int

	// Post hands a message to the runtime, which encodes it with the
	// target handler's codec before Post returns (m is the caller's again
	// afterwards). Proxies call it, with a message of the handler's type;
	// applications use Proxy.Send, Broadcast and Multicast.
	Post(to Target, key uint64, m any)

	// Expect states the key of the keyed messages the task accepts next.
	// Keyed messages with another key wait until the task expects theirs.
	// A task expects key 0 when created, so a common pattern keys the
	// message that starts a task 0 and the messages of its round r with
	// r+1: a neighbour's first message then waits until the task started.
	Expect(key uint64)

	// Contribute adds this task's value to the collection's next reduction.
	// Every element of the collection must contribute, with the same reducer
	// and callback; the combined value is delivered to cb as a
	// *ReductionResult.
	Contribute(r Reducer, v Value, cb Callback)

	// StartQuiescence asks for a *Quiescence message at cb once no
	// application message is in flight or being handled anywhere.
	StartQuiescence(cb CallbackTo[*Quiescence])

	// AtSync offers a sync point at the end of step (a collection declared
	// with UsesAtSync must offer one every step). It returns true when the
	// runtime takes it (a checkpoint or load-balancing period, set by the
	// launcher's --checkpoint-every): the task must then send nothing more
	// and wait; once every element of every such collection is waiting and
	// no message is in flight, the runtime checkpoints (and may migrate
	// tasks), then calls the task's ResumeFromSync (see Resumer). It
	// returns false otherwise, and the task goes on. The answer depends on
	// step only, so a re-executing task gets the same one.
	AtSync(step uint64) bool

	// Exit ends the job with the given status once this handler returns.
	Exit(status int)

	// Printf writes one line of the job's output (on the launcher's
	// standard output, in the order the calls were made on this PE). The
	// format has no trailing newline; the runtime ends the line.
	Printf(format string, args ...any)

	// Logf writes a diagnostic line on the PE's standard error.
	Logf(format string, args ...any)
}
