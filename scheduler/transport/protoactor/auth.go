package protoactor

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// tokenKey is the gRPC metadata key that carries the job token.
const tokenKey = "gochare-token"

// jobToken derives the token PEs present from the job secret. The secret
// itself never travels. Without TLS the token can be read off the wire:
// it keeps other jobs and strays out, not an eavesdropper.
func jobToken(secret []byte) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte("gochare-transport"))
	return hex.EncodeToString(mac.Sum(nil))
}

// authenticator adds the job token to outgoing gRPC calls and checks it on
// incoming ones.
type authenticator struct {
	token   string
	log     *slog.Logger
	refused func()
	// malformed is called when protoactor's stream handler panicked on
	// input it could not decode.
	malformed func()
}

func (a *authenticator) dialOptions() []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			return invoker(metadata.AppendToOutgoingContext(ctx, tokenKey, a.token), method, req, reply, cc, opts...)
		}),
		grpc.WithStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
			return streamer(metadata.AppendToOutgoingContext(ctx, tokenKey, a.token), desc, cc, method, opts...)
		}),
	}
}

func (a *authenticator) serverOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.UnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
			if err := a.check(ctx, info.FullMethod); err != nil {
				return nil, err
			}
			// protoactor's remote serves no unary call (its handlers panic).
			return nil, status.Error(codes.Unimplemented, "gochare: no unary calls")
		}),
		grpc.StreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
			if err := a.check(ss.Context(), info.FullMethod); err != nil {
				return err
			}
			defer func() {
				if r := recover(); r != nil {
					a.malformed()
					a.log.Error("transport: dropped a connection whose input broke protoactor's reader",
						"peer", peerAddr(ss.Context()), "panic", fmt.Sprint(r))
					err = status.Error(codes.InvalidArgument, "gochare: malformed input")
				}
			}()
			return handler(srv, ss)
		}),
	}
}

func (a *authenticator) check(ctx context.Context, method string) error {
	md, _ := metadata.FromIncomingContext(ctx)
	for _, got := range md.Get(tokenKey) {
		if hmac.Equal([]byte(got), []byte(a.token)) {
			return nil
		}
	}
	a.refused()
	a.log.Warn("transport: refused connection without the job token", "peer", peerAddr(ctx), "method", method)
	return status.Error(codes.Unauthenticated, "gochare: not a member of this job")
}

func peerAddr(ctx context.Context) string {
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		return p.Addr.String()
	}
	return "unknown"
}
