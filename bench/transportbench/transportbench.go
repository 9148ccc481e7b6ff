package transportbench

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"

	"github.com/gochare/gochare/scheduler/transport"
	"github.com/gochare/gochare/scheduler/transport/protoactor"
)

// Stack names.
const (
	// StackGochareTCP is the runtime's default endpoint, transport.TCP.
	StackGochareTCP = "gochare-tcp"
	// StackGochareProtoActor is the endpoint over protoactor-go remote.
	StackGochareProtoActor = "gochare-protoactor"
	// StackProtoActor is bare protoactor remote, configured as that
	// endpoint's, without the transport's protocol.
	StackProtoActor = "protoactor"
	// StackTCP is bare TCP: length-prefixed frames, nothing else.
	StackTCP = "tcp"
)

// benchStacks lists the stacks in the order they are reported.
func benchStacks() []string {
	return []string{StackGochareTCP, StackGochareProtoActor, StackProtoActor, StackTCP}
}

// ratios are the quotients the table reports: [numerator, denominator].
var ratios = [][2]string{
	{StackGochareTCP, StackGochareProtoActor},
	{StackGochareTCP, StackTCP},
	{StackGochareProtoActor, StackTCP},
}

// endpointOf returns the constructor of a gochare endpoint stack.
func endpointOf(stack string) func(transport.Config) (transport.Endpoint, error) {
	if stack == StackGochareProtoActor {
		return func(cfg transport.Config) (transport.Endpoint, error) { return protoactor.New(cfg) }
	}
	return func(cfg transport.Config) (transport.Endpoint, error) { return transport.NewTCP(cfg) }
}

// ErrBench reports a failed measurement.
var ErrBench = errors.New("transportbench")

const benchTimeout = 2 * time.Minute

// benchDriver is the measuring side of a stack.
type benchDriver interface {
	Addr() string
	Connect(peerAddr string) error
	// PingPong makes n round trips of size-byte payloads.
	PingPong(ctx context.Context, n, size int) (time.Duration, error)
	// Stream sends n size-byte payloads one way and waits for the last.
	Stream(ctx context.Context, n, size int) (time.Duration, error)
	Close()
}

// benchEcho is the answering side of a stack.
type benchEcho interface {
	Addr() string
	Connect(driverAddr string) error
	Close()
}

func creditEvery(size int) int { return max(1, (1<<20)/max(size, 1)) }

// benchPayload returns a size-byte payload of kind (at least one byte).
func benchPayload(kind byte, size int) []byte {
	p := make([]byte, max(size, 1))
	p[0] = kind
	return p
}

// streamState runs the sender's side of the credit scheme; its owner calls
// next to get payloads to send and credit on each 'A'.
type streamState struct {
	n, sent, credits, wantCredits, every int
	plain, marked                        []byte
}

func newStreamState(n, size int) *streamState {
	every := creditEvery(size)
	return &streamState{n: n, every: every, wantCredits: (n + every - 1) / every,
		plain: benchPayload('S', size), marked: benchPayload('C', size)}
}

// next returns the next payload to send, or nil when the sender must wait.
func (s *streamState) next() []byte {
	if s.sent == s.n || s.sent-s.credits*s.every >= 4*s.every {
		return nil
	}
	s.sent++
	if s.sent%s.every == 0 || s.sent == s.n {
		return s.marked
	}
	return s.plain
}

func (s *streamState) done() bool { return s.credits == s.wantCredits }

// ---- gochare: this package's Endpoint ----

type benchRun struct {
	ping bool
	n    int
	size int
}

type gochareDriver struct {
	stack string
	ep    transport.Endpoint
	done  chan struct{}
	// Owned by the endpoint goroutine.
	pingLeft int
	ping     []byte
	stream   *streamState
}

func newGochareDriver(stack string, secret []byte, logger *slog.Logger) (*gochareDriver, error) {
	ep, err := endpointOf(stack)(transport.Config{Rank: 0, Size: 2, Host: "127.0.0.1", Secret: secret, Logger: logger})
	if err != nil {
		return nil, err
	}
	return &gochareDriver{stack: stack, ep: ep, done: make(chan struct{}, 1)}, nil
}

func (d *gochareDriver) Addr() string { return d.ep.Addr() }
func (d *gochareDriver) Close()       { d.ep.Close() }
func (d *gochareDriver) Connect(peer string) error {
	return d.ep.Start([]string{d.ep.Addr(), peer}, d)
}

func (d *gochareDriver) run(ctx context.Context, r benchRun) (time.Duration, error) {
	start := time.Now()
	d.ep.Post(r)
	select {
	case <-d.done:
		return time.Since(start), nil
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-time.After(benchTimeout):
		return 0, fmt.Errorf("%w: %s run %+v timed out", ErrBench, d.stack, r)
	}
}

func (d *gochareDriver) PingPong(ctx context.Context, n, size int) (time.Duration, error) {
	return d.run(ctx, benchRun{ping: true, n: n, size: size})
}

func (d *gochareDriver) Stream(ctx context.Context, n, size int) (time.Duration, error) {
	return d.run(ctx, benchRun{n: n, size: size})
}

func (d *gochareDriver) Event(ev any) {
	r := ev.(benchRun)
	if r.ping {
		d.pingLeft, d.ping = r.n, benchPayload('P', r.size)
		d.ep.Send(1, d.ping)
	} else {
		d.stream = newStreamState(r.n, r.size)
		d.pump()
	}
	d.ep.Flush()
}

func (d *gochareDriver) pump() {
	for p := d.stream.next(); p != nil; p = d.stream.next() {
		d.ep.Send(1, p)
	}
}

func (d *gochareDriver) Receive(from int, payload []byte) {
	if payload[0] == 'A' {
		d.stream.credits++
		if d.stream.done() {
			d.done <- struct{}{}
			return
		}
		d.pump()
		d.ep.Flush()
		return
	}
	d.pingLeft--
	if d.pingLeft == 0 {
		d.done <- struct{}{}
		return
	}
	d.ep.Send(1, d.ping)
	d.ep.Flush()
}

type gochareEcho struct{ ep transport.Endpoint }

func newGochareEcho(stack string, secret []byte, logger *slog.Logger) (*gochareEcho, error) {
	ep, err := endpointOf(stack)(transport.Config{Rank: 1, Size: 2, Host: "127.0.0.1", Secret: secret, Logger: logger})
	if err != nil {
		return nil, err
	}
	return &gochareEcho{ep: ep}, nil
}

func (e *gochareEcho) Addr() string { return e.ep.Addr() }
func (e *gochareEcho) Close()       { e.ep.Close() }
func (e *gochareEcho) Connect(driver string) error {
	return e.ep.Start([]string{driver, e.ep.Addr()}, e)
}
func (e *gochareEcho) Event(any) {}
func (e *gochareEcho) Receive(from int, payload []byte) {
	switch payload[0] {
	case 'P':
		e.ep.Send(from, payload)
	case 'C':
		e.ep.Send(from, []byte{'A'})
	}
	e.ep.Flush()
}

// ---- protoactor: bare remote, same configuration, no seq/ack layer ----

type paSide struct {
	system *actor.ActorSystem
	remote *remote.Remote
	self   *actor.PID
}

func newPASide(name string, secret []byte, logger *slog.Logger, a actor.Actor) (*paSide, error) {
	system, r, err := protoactor.NewBareRemote(transport.Config{Rank: 0, Size: 1, Host: "127.0.0.1", Secret: secret, Logger: logger})
	if err != nil {
		return nil, err
	}
	s := &paSide{system: system, remote: r}
	s.self, err = s.system.Root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return a }), name)
	if err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

func (s *paSide) close() {
	if s.self != nil {
		s.system.Root.StopFuture(s.self).Wait()
	}
	s.remote.Shutdown(false)
	s.system.Shutdown()
}

type paDriver struct {
	side *paSide
	done chan struct{}
	// Owned by the actor.
	peer     *actor.PID
	pingLeft int
	ping     *transport.Frame
	stream   *streamState
}

type paConnect struct{ peer *actor.PID }

func newPADriver(secret []byte, logger *slog.Logger) (*paDriver, error) {
	d := &paDriver{done: make(chan struct{}, 1)}
	side, err := newPASide("driver", secret, logger, d)
	if err != nil {
		return nil, err
	}
	d.side = side
	return d, nil
}

func (d *paDriver) Addr() string { return d.side.system.Address() }
func (d *paDriver) Close()       { d.side.close() }
func (d *paDriver) Connect(peer string) error {
	d.side.system.Root.Send(d.side.self, paConnect{actor.NewPID(peer, "echo")})
	return nil
}

func (d *paDriver) run(ctx context.Context, r benchRun) (time.Duration, error) {
	start := time.Now()
	d.side.system.Root.Send(d.side.self, r)
	select {
	case <-d.done:
		return time.Since(start), nil
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-time.After(benchTimeout):
		return 0, fmt.Errorf("%w: %s run %+v timed out (protoactor lost a message?)", ErrBench, StackProtoActor, r)
	}
}

func (d *paDriver) PingPong(ctx context.Context, n, size int) (time.Duration, error) {
	return d.run(ctx, benchRun{ping: true, n: n, size: size})
}

func (d *paDriver) Stream(ctx context.Context, n, size int) (time.Duration, error) {
	return d.run(ctx, benchRun{n: n, size: size})
}

func (d *paDriver) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case paConnect:
		d.peer = m.peer
	case benchRun:
		if m.ping {
			d.pingLeft, d.ping = m.n, &transport.Frame{Data: benchPayload('P', m.size)}
			ctx.Send(d.peer, d.ping)
		} else {
			d.stream = newStreamState(m.n, m.size)
			d.pump(ctx)
		}
	case *transport.Frame:
		if len(m.Data) > 0 && m.Data[0] == 'A' {
			d.stream.credits++
			if d.stream.done() {
				d.done <- struct{}{}
				return
			}
			d.pump(ctx)
			return
		}
		d.pingLeft--
		if d.pingLeft == 0 {
			d.done <- struct{}{}
			return
		}
		ctx.Send(d.peer, d.ping)
	}
}

func (d *paDriver) pump(ctx actor.Context) {
	for p := d.stream.next(); p != nil; p = d.stream.next() {
		ctx.Send(d.peer, &transport.Frame{Data: p})
	}
}

type paEcho struct {
	side *paSide
	peer *actor.PID // owned by the actor
}

func newPAEcho(secret []byte, logger *slog.Logger) (*paEcho, error) {
	e := &paEcho{}
	side, err := newPASide("echo", secret, logger, e)
	if err != nil {
		return nil, err
	}
	e.side = side
	return e, nil
}

func (e *paEcho) Addr() string { return e.side.system.Address() }
func (e *paEcho) Close()       { e.side.close() }
func (e *paEcho) Connect(driver string) error {
	e.side.system.Root.Send(e.side.self, paConnect{actor.NewPID(driver, "driver")})
	return nil
}

func (e *paEcho) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case paConnect:
		e.peer = m.peer
	case *transport.Frame:
		switch {
		case len(m.Data) == 0:
		case m.Data[0] == 'P':
			ctx.Send(e.peer, m)
		case m.Data[0] == 'C':
			ctx.Send(e.peer, &transport.Frame{Data: []byte{'A'}})
		}
	}
}

// ---- tcp: length-prefixed frames on loopback ----

type tcpDriver struct {
	conn net.Conn
	r    *bufio.Reader
	w    *bufio.Writer
}

func (d *tcpDriver) Addr() string { return "" }
func (d *tcpDriver) Close() {
	if d.conn != nil {
		d.conn.Close()
	}
}

func (d *tcpDriver) Connect(peer string) error {
	conn, err := net.Dial("tcp", peer)
	if err != nil {
		return err
	}
	d.conn, d.r, d.w = conn, bufio.NewReaderSize(conn, 1<<20), bufio.NewWriterSize(conn, 1<<20)
	return nil
}

func writeFrame(w *bufio.Writer, p []byte) error {
	var head [4]byte
	binary.LittleEndian.PutUint32(head[:], uint32(len(p)))
	if _, err := w.Write(head[:]); err != nil {
		return err
	}
	_, err := w.Write(p)
	return err
}

func readFrame(r *bufio.Reader, buf []byte) ([]byte, error) {
	var head [4]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return nil, err
	}
	n := int(binary.LittleEndian.Uint32(head[:]))
	if cap(buf) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	_, err := io.ReadFull(r, buf)
	return buf, err
}

// unblockOnCancel makes the connection's reads and writes fail when ctx
// is cancelled; call the function it returns when done.
func (d *tcpDriver) unblockOnCancel(ctx context.Context) func() bool {
	return context.AfterFunc(ctx, func() { d.conn.SetDeadline(time.Now()) })
}

func (d *tcpDriver) PingPong(ctx context.Context, n, size int) (time.Duration, error) {
	defer d.unblockOnCancel(ctx)()
	p := benchPayload('P', size)
	buf := make([]byte, len(p))
	start := time.Now()
	for range n {
		if err := writeFrame(d.w, p); err != nil {
			return 0, err
		}
		if err := d.w.Flush(); err != nil {
			return 0, err
		}
		var err error
		if buf, err = readFrame(d.r, buf); err != nil {
			return 0, err
		}
	}
	return time.Since(start), nil
}

// Stream relies on TCP's own flow control: it writes everything, then
// reads the credits (a few bytes, which the socket buffers hold).
func (d *tcpDriver) Stream(ctx context.Context, n, size int) (time.Duration, error) {
	defer d.unblockOnCancel(ctx)()
	every := creditEvery(size)
	plain, marked := benchPayload('S', size), benchPayload('C', size)
	credits := 0
	start := time.Now()
	for i := 1; i <= n; i++ {
		p := plain
		if i%every == 0 || i == n {
			p = marked
			credits++
		}
		if err := writeFrame(d.w, p); err != nil {
			return 0, err
		}
	}
	if err := d.w.Flush(); err != nil {
		return 0, err
	}
	var buf []byte
	for range credits {
		var err error
		if buf, err = readFrame(d.r, buf); err != nil {
			return 0, err
		}
	}
	return time.Since(start), nil
}

type tcpEcho struct {
	lis  net.Listener
	wg   sync.WaitGroup
	mu   sync.Mutex
	conn net.Conn
}

func newTCPEcho() (*tcpEcho, error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("%w: %w", transport.ErrListen, err)
	}
	e := &tcpEcho{lis: lis}
	e.wg.Add(1)
	go e.serve()
	return e, nil
}

func (e *tcpEcho) Addr() string         { return e.lis.Addr().String() }
func (e *tcpEcho) Connect(string) error { return nil }
func (e *tcpEcho) Close() {
	e.lis.Close()
	e.mu.Lock()
	if e.conn != nil {
		e.conn.Close()
	}
	e.mu.Unlock()
	e.wg.Wait()
}

func (e *tcpEcho) serve() {
	defer e.wg.Done()
	conn, err := e.lis.Accept()
	if err != nil {
		return
	}
	e.mu.Lock()
	e.conn = conn
	e.mu.Unlock()
	r, w := bufio.NewReaderSize(conn, 1<<20), bufio.NewWriterSize(conn, 1<<20)
	var buf []byte
	credit := []byte{'A'}
	for {
		buf, err = readFrame(r, buf)
		if err != nil {
			return
		}
		switch {
		case len(buf) == 0:
		case buf[0] == 'P':
			err = writeFrame(w, buf)
		case buf[0] == 'C':
			err = writeFrame(w, credit)
		}
		if err == nil && r.Buffered() == 0 {
			err = w.Flush()
		}
		if err != nil {
			return
		}
	}
}

func newBenchDriver(stack string, secret []byte, logger *slog.Logger) (benchDriver, error) {
	switch stack {
	case StackGochareTCP, StackGochareProtoActor:
		return newGochareDriver(stack, secret, logger)
	case StackProtoActor:
		return newPADriver(secret, logger)
	case StackTCP:
		return &tcpDriver{}, nil
	}
	return nil, fmt.Errorf("%w: unknown stack %q", ErrBench, stack)
}

func newBenchEcho(stack string, secret []byte, logger *slog.Logger) (benchEcho, error) {
	switch stack {
	case StackGochareTCP, StackGochareProtoActor:
		return newGochareEcho(stack, secret, logger)
	case StackProtoActor:
		return newPAEcho(secret, logger)
	case StackTCP:
		return newTCPEcho()
	}
	return nil, fmt.Errorf("%w: unknown stack %q", ErrBench, stack)
}

// benchResult is one measurement.
type benchResult struct {
	Stack    string
	Size     int
	RTT      time.Duration // per round trip
	RTTs     int
	MBps     float64 // one-way, 1e6 bytes per second
	MsgsPerS float64
	Msgs     int
}

// measureLoop grows n until one run of fn lasts at least minTime.
func measureLoop(minTime time.Duration, maxN int, fn func(n int) (time.Duration, error)) (int, time.Duration, error) {
	n := 1
	for {
		d, err := fn(n)
		if err != nil {
			return 0, 0, err
		}
		if d >= minTime || n >= maxN {
			return n, d, nil
		}
		next := n * 10
		if d > 0 {
			next = int(float64(n) * 1.2 * float64(minTime) / float64(d))
		}
		n = min(max(next, n+1), 100*n, maxN)
	}
}

func measure(ctx context.Context, d benchDriver, stack string, size int, minTime time.Duration) (benchResult, error) {
	res := benchResult{Stack: stack, Size: size}
	// Warm up: connections, buffers.
	if _, err := d.PingPong(ctx, 50, size); err != nil {
		return res, err
	}
	n, el, err := measureLoop(minTime, 1_000_000, func(n int) (time.Duration, error) { return d.PingPong(ctx, n, size) })
	if err != nil {
		return res, err
	}
	res.RTTs, res.RTT = n, el/time.Duration(n)
	n, el, err = measureLoop(minTime, 10_000_000, func(n int) (time.Duration, error) { return d.Stream(ctx, n, size) })
	if err != nil {
		return res, err
	}
	res.Msgs = n
	res.MsgsPerS = float64(n) / el.Seconds()
	res.MBps = res.MsgsPerS * float64(size) / 1e6
	return res, nil
}

// Main is `gochare bench transport [flags]`: it starts the echo side in a
// child process, the command line peer followed by --addr and the address
// of a control connection (gochare runs itself as `gochare bench
// transport-peer`, which calls Peer), and measures round-trip latency and
// one-way throughput between the two processes for each stack and payload
// size, then prints a Markdown table to stdout. The stacks are measured in
// turn, -rounds times, and the best figure of each is kept, so that load
// from other processes on a shared machine hurts them alike. Log lines, the
// child's output included, go to stderr. Cancelling ctx stops it.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer, peer []string) (err error) {
	fs := flag.NewFlagSet("bench transport", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sizesFlag := fs.String("sizes", "64,32768,262144,524288", "payload sizes in bytes, comma-separated")
	stacksFlag := fs.String("stacks", strings.Join(benchStacks(), ","), "stacks to measure")
	minTime := fs.Duration("time", 300*time.Millisecond, "minimum duration of each measurement")
	rounds := fs.Int("rounds", 3, "measure each stack this many times, keep the best")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return fmt.Errorf("%w: %w", ErrBench, err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", ErrBench, fs.Arg(0))
	}
	if len(peer) == 0 {
		return fmt.Errorf("%w: no command line for the peer process", ErrBench)
	}
	var sizes []int
	for _, s := range strings.Split(*sizesFlag, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return fmt.Errorf("%w: bad size %q", ErrBench, s)
		}
		sizes = append(sizes, n)
	}
	stacks := strings.Split(*stacksFlag, ",")
	for _, stack := range stacks {
		if !slices.Contains(benchStacks(), stack) {
			return fmt.Errorf("%w: unknown stack %q (%s)", ErrBench, stack, strings.Join(benchStacks(), ", "))
		}
	}

	ctl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("%w: control listener: %w", ErrBench, err)
	}
	defer ctl.Close()
	child := exec.Command(peer[0], append(peer[1:len(peer):len(peer)], "--addr", ctl.Addr().String())...)
	child.Stdout, child.Stderr = stderr, stderr
	if err := child.Start(); err != nil {
		return fmt.Errorf("%w: start peer process: %w", ErrBench, err)
	}
	// A peer process that ends closes the control listener and cancels
	// ctx, so that nothing here waits for it in vain.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	childDone := make(chan struct{})
	go func() {
		childErr := child.Wait()
		cancel(fmt.Errorf("peer process %q ended: %v", strings.Join(peer, " "), childErr))
		ctl.Close()
		close(childDone)
	}()
	defer func() {
		child.Process.Kill()
		<-childDone
	}()
	// Cancelling ctx ends the peer process, which ends any wait for it.
	defer context.AfterFunc(ctx, func() { child.Process.Kill() })()
	defer func() {
		// Whatever failed after ctx was cancelled (or the peer process
		// ended) failed because of that.
		if err != nil && ctx.Err() != nil {
			err = fmt.Errorf("%w: %w", ErrBench, context.Cause(ctx))
		}
	}()
	conn, err := acceptTimeout(ctl, 30*time.Second)
	if err != nil {
		return fmt.Errorf("%w: peer process did not connect: %w", ErrBench, err)
	}
	defer conn.Close()
	ctlIn := bufio.NewReader(conn)

	secret := make([]byte, 16)
	rand.Read(secret)
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	drivers := make(map[string]benchDriver)
	defer func() {
		for _, d := range drivers {
			d.Close()
		}
	}()
	for _, stack := range stacks {
		d, err := newBenchDriver(stack, secret, logger)
		if err != nil {
			return err
		}
		drivers[stack] = d
		fmt.Fprintf(conn, "START %s %s %s\n", stack, hex.EncodeToString(secret), orDash(d.Addr()))
		line, err := ctlIn.ReadString('\n')
		if err != nil {
			return fmt.Errorf("%w: peer process: %w", ErrBench, err)
		}
		peerAddr, ok := strings.CutPrefix(strings.TrimSpace(line), "ADDR ")
		if !ok {
			return fmt.Errorf("%w: peer process answered %q", ErrBench, line)
		}
		if err := d.Connect(peerAddr); err != nil {
			return fmt.Errorf("%w: connect %s: %w", ErrBench, stack, err)
		}
	}
	var results []benchResult
	for range max(*rounds, 1) {
		for _, size := range sizes {
			for _, stack := range stacks {
				res, err := measure(ctx, drivers[stack], stack, size, *minTime)
				if err != nil {
					return fmt.Errorf("%w: %s %d B: %w", ErrBench, stack, size, err)
				}
				results = keepBest(results, res)
			}
		}
	}
	for stack, d := range drivers {
		d.Close()
		delete(drivers, stack)
	}
	fmt.Fprintln(conn, "EXIT")
	writeBenchTable(stdout, sizes, results)
	return nil
}

// keepBest merges res into results, keeping the lowest round trip and the
// highest throughput of each stack and size.
func keepBest(results []benchResult, res benchResult) []benchResult {
	for i := range results {
		r := &results[i]
		if r.Stack != res.Stack || r.Size != res.Size {
			continue
		}
		if res.RTT < r.RTT {
			r.RTT, r.RTTs = res.RTT, res.RTTs
		}
		if res.MsgsPerS > r.MsgsPerS {
			r.MsgsPerS, r.MBps, r.Msgs = res.MsgsPerS, res.MBps, res.Msgs
		}
		return results
	}
	return append(results, res)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func acceptTimeout(l net.Listener, d time.Duration) (net.Conn, error) {
	if tl, ok := l.(*net.TCPListener); ok {
		tl.SetDeadline(time.Now().Add(d))
	}
	return l.Accept()
}

// Peer is the child side of Main (`gochare bench transport-peer --addr
// HOST:PORT`): it connects to the parent's control address and runs the
// echo side of each stack the parent asks for, until the parent says EXIT.
// Log lines go to stderr.
func Peer(args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench transport-peer", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "", "control address of the measuring process")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: %w", ErrBench, err)
	}
	if *addr == "" {
		return fmt.Errorf("%w: transport-peer needs --addr HOST:PORT", ErrBench)
	}
	conn, err := net.Dial("tcp", *addr)
	if err != nil {
		return fmt.Errorf("%w: control connection: %w", ErrBench, err)
	}
	defer conn.Close()
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	in := bufio.NewScanner(conn)
	echoes := make(map[string]benchEcho)
	defer func() {
		for _, e := range echoes {
			e.Close()
		}
	}()
	for in.Scan() {
		f := strings.Fields(in.Text())
		switch {
		case len(f) == 4 && f[0] == "START":
			secret, err := hex.DecodeString(f[2])
			if err != nil {
				return fmt.Errorf("%w: bad secret: %w", ErrBench, err)
			}
			if echoes[f[1]] != nil {
				return fmt.Errorf("%w: stack %s started twice", ErrBench, f[1])
			}
			echo, err := newBenchEcho(f[1], secret, logger)
			if err != nil {
				return err
			}
			echoes[f[1]] = echo
			if err := echo.Connect(f[3]); err != nil {
				return fmt.Errorf("%w: %w", ErrBench, err)
			}
			fmt.Fprintf(conn, "ADDR %s\n", echo.Addr())
		case len(f) == 1 && f[0] == "EXIT":
			return nil
		default:
			return fmt.Errorf("%w: unknown control line %q", ErrBench, in.Text())
		}
	}
	return in.Err()
}

func sizeName(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}

func writeBenchTable(w io.Writer, sizes []int, results []benchResult) {
	get := func(stack string, size int) (benchResult, bool) {
		for _, r := range results {
			if r.Stack == stack && r.Size == size {
				return r, true
			}
		}
		return benchResult{}, false
	}
	stacks := benchStacks()
	fmt.Fprintf(w, "| payload | metric | %s |", strings.Join(stacks, " | "))
	for _, q := range ratios {
		fmt.Fprintf(w, " %s/%s |", q[0], q[1])
	}
	fmt.Fprintf(w, "\n|---|---|%s%s\n", strings.Repeat("---:|", len(stacks)), strings.Repeat("---:|", len(ratios)))
	metrics := []struct {
		name, format string
		value        func(benchResult) float64
	}{
		{"round trip (µs)", "%.1f", func(r benchResult) float64 { return float64(r.RTT) / float64(time.Microsecond) }},
		{"one-way (MB/s)", "%.1f", func(r benchResult) float64 { return r.MBps }},
		{"one-way (msg/s)", "%.0f", func(r benchResult) float64 { return r.MsgsPerS }},
	}
	for _, size := range sizes {
		for _, m := range metrics {
			value := func(stack string) float64 {
				if r, ok := get(stack, size); ok {
					return m.value(r)
				}
				return 0
			}
			fmt.Fprintf(w, "| %s | %s |", sizeName(size), m.name)
			for _, stack := range stacks {
				if v := value(stack); v != 0 {
					fmt.Fprintf(w, " "+m.format+" |", v)
				} else {
					fmt.Fprint(w, " – |")
				}
			}
			for _, q := range ratios {
				if a, b := value(q[0]), value(q[1]); a != 0 && b != 0 {
					fmt.Fprintf(w, " %.2f |", a/b)
				} else {
					fmt.Fprint(w, " – |")
				}
			}
			fmt.Fprintln(w)
		}
	}
}
