package protoactor

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"os"
	"testing"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/gochare/gochare/scheduler/transport"
	"github.com/gochare/gochare/scheduler/transport/transporttest"
)

// TestLocalEndpoint holds the only endpoint this test process starts (see
// the note in cluster_test.go); the other tests run PEs in children.
func TestLocalEndpoint(t *testing.T) {
	logger, tl := transporttest.NewTestLog(t)
	if _, err := New(transport.Config{Rank: 2, Size: 2, Secret: []byte("s")}); !errors.Is(err, transport.ErrConfig) {
		t.Errorf("rank 2 of 2: err = %v, want transport.ErrConfig", err)
	}
	if _, err := New(transport.Config{Rank: 0, Size: 1}); !errors.Is(err, transport.ErrConfig) {
		t.Errorf("empty secret: err = %v, want transport.ErrConfig", err)
	}
	secret := []byte("job-secret")
	ep, err := New(transport.Config{Rank: 0, Size: 2, Host: "127.0.0.1", Secret: secret, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	rec := transporttest.NewRecorder(0, 2, ep)
	for _, peers := range [][]string{{ep.Addr()}, {"127.0.0.1:1", "127.0.0.1:2"}} {
		if err := ep.Start(peers, rec); !errors.Is(err, transport.ErrConfig) {
			t.Errorf("Start(%q): err = %v, want transport.ErrConfig", peers, err)
		}
	}
	if err := ep.Start([]string{ep.Addr(), "127.0.0.1:1"}, rec); err != nil {
		t.Fatal(err)
	}
	if err := ep.Start([]string{ep.Addr(), "127.0.0.1:1"}, rec); !errors.Is(err, transport.ErrStarted) {
		t.Errorf("second Start: err = %v, want transport.ErrStarted", err)
	}

	t.Run("PostOrder", func(t *testing.T) { transporttest.PostOrder(t, ep, rec) })
	t.Run("Refused", func(t *testing.T) { testRefused(t, ep, tl) })
	t.Run("BadFrames", func(t *testing.T) { testBadFrames(t, ep, rec, tl, secret) })
}

// rawStream opens protoactor's Receive stream to addr with a raw gRPC
// client, presenting token unless it is empty.
func rawStream(t *testing.T, addr, token string) (remote.Remoting_ReceiveClient, *grpc.ClientConn) {
	t.Helper()
	conn, err := grpc.Dial(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	ctx := context.Background()
	if token != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, tokenKey, token)
	}
	stream, err := remote.NewRemotingClient(conn).Receive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return stream, conn
}

func testRefused(t *testing.T, ep *Endpoint, tl *transporttest.TestLog) {
	before := ep.Stats().Refused
	for _, token := range []string{"", jobToken([]byte("another job"))} {
		stream, _ := rawStream(t, ep.Addr(), token)
		_, err := stream.Recv()
		if status.Code(err) != codes.Unauthenticated {
			t.Errorf("stream with token %.8q: err = %v, want Unauthenticated", token, err)
		}
	}
	if got := ep.Stats().Refused - before; got != 2 {
		t.Errorf("Stats().Refused grew by %d, want 2", got)
	}
	if line := tl.Find("refused connection", "peer=127.0.0.1:"); line == "" {
		t.Errorf("no log line naming the refused peer")
	}
	// Unary calls are refused too, and protoactor's (which panic) never run.
	conn, err := grpc.Dial(ep.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx := metadata.AppendToOutgoingContext(context.Background(), tokenKey, jobToken([]byte("job-secret")))
	_, err = remote.NewRemotingClient(conn).ListProcesses(ctx, &remote.ListProcessesRequest{})
	if status.Code(err) != codes.Unimplemented {
		t.Errorf("ListProcesses with the token: err = %v, want Unimplemented", err)
	}
}

// testBadFrames sends, as an authenticated member, a frame from a rank
// outside the job and a batch protoactor cannot decode: both are logged,
// counted and dropped, and the PE keeps running.
func testBadFrames(t *testing.T, ep *Endpoint, rec *transporttest.Recorder, tl *transporttest.TestLog, secret []byte) {
	before := ep.Stats().Malformed
	stream, _ := rawStream(t, ep.Addr(), jobToken(secret))
	batch := func(typeName string, data []byte) *remote.RemoteMessage {
		return &remote.RemoteMessage{MessageType: &remote.RemoteMessage_MessageBatch{MessageBatch: &remote.MessageBatch{
			TypeNames: []string{typeName},
			Targets:   []*actor.PID{actor.NewPID(ep.Addr(), actorName)},
			Envelopes: []*remote.MessageEnvelope{{MessageData: data}},
		}}}
	}
	data, err := proto.Marshal(&transport.Frame{From: 99, Seq: 1, Data: []byte{1, 1}})
	if err != nil {
		t.Fatal(err)
	}
	typeName := string(proto.MessageName(&transport.Frame{}))
	for _, msg := range []*remote.RemoteMessage{
		batch(typeName, data),
		batch("no.such.Type", data),
	} {
		if err := stream.Send(msg); err != nil && !errors.Is(err, io.EOF) {
			t.Fatal(err)
		}
	}
	if _, err := stream.Recv(); err == nil {
		t.Errorf("stream that sent an undecodable batch still open")
	}
	transporttest.WaitFor(t, "bad frames counted", func() bool { return ep.Stats().Malformed-before >= 2 })
	// The counter moves just before the line is logged.
	transporttest.WaitFor(t, "a log line for the frame from rank 99", func() bool { return tl.Find("dropped frame", "rank 99") != "" })
	// Still alive: events are delivered.
	ep.Post("alive")
	transporttest.WaitFor(t, "event after bad frames", func() bool {
		events := rec.Events()
		return len(events) > 0 && events[len(events)-1] == "alive"
	})
}

func TestMain(m *testing.M) {
	os.Exit(transporttest.Main(m, func(cfg transport.Config) (transport.Endpoint, error) { return New(cfg) }))
}

// TestEndpoint runs the endpoint suite on this endpoint.
func TestEndpoint(t *testing.T) { transporttest.Run(t) }

// Config.ProtoActorLog passes protoactor's own log lines to Config.Logger;
// without it they are dropped.
func TestProtoActorLog(t *testing.T) {
	for _, on := range []bool{false, true} {
		_, tl := transporttest.NewTestLog(t)
		p := transporttest.StartPeer(t, transporttest.PeerOptions{Rank: 0, Size: 1, ProtoActorLog: on}, tl)
		p.Addr(t)
		p.Stop() // the PE's log is read to its end
		line := tl.Find("lib=protoactor", "Starting remote")
		if on && line == "" {
			t.Errorf("ProtoActorLog: protoactor's start line is not in the log")
		}
		if !on && line != "" {
			t.Errorf("protoactor's log is kept without ProtoActorLog: %s", line)
		}
	}
}

// The endpoint has no TLS: a config that asks for it is refused before
// anything starts.
func TestRefusesTLS(t *testing.T) {
	_, err := New(transport.Config{Rank: 0, Size: 2, Secret: []byte("s"), TLS: &tls.Config{}})
	if !errors.Is(err, transport.ErrConfig) {
		t.Fatalf("New with TLS: err = %v, want ErrConfig", err)
	}
}
