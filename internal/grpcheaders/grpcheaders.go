// Package grpcheaders keeps the Temporal SDK's request headers valid gRPC
// metadata.
//
// The Go SDK copies a run's workflow ID into the temporal-resource-id
// header of the requests that answer its tasks (and of signals, queries,
// updates). gRPC refuses a header value with a byte outside printable
// ASCII, so a run whose ID holds one — an AgentTurn of conversation
// "conv-ü", started by a kernel whose SDK sends no such header — failed
// every workflow task on a Go worker and never ended. The header only
// helps a server or a proxy route the request (the namespace header and
// the request itself still say where it goes), so where its value cannot
// be sent it is left out.
package grpcheaders

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// ResourceID is the header the SDK fills from workflow IDs.
const ResourceID = "temporal-resource-id"

// DialOption adds the interceptor to a Temporal client's connection
// (client.ConnectionOptions.DialOptions). It runs after the SDK's own
// header interceptor, so it sees the header the SDK added.
func DialOption() grpc.DialOption {
	return grpc.WithChainUnaryInterceptor(Interceptor)
}

// Interceptor drops a temporal-resource-id header whose value gRPC would
// refuse.
func Interceptor(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	if md, ok := metadata.FromOutgoingContext(ctx); ok {
		if values := md.Get(ResourceID); len(values) > 0 && !allPrintable(values) {
			md = md.Copy()
			md.Delete(ResourceID)
			ctx = metadata.NewOutgoingContext(ctx, md)
		}
	}
	return invoker(ctx, method, req, reply, cc, opts...)
}

// allPrintable reports whether every value is printable ASCII, as gRPC
// wants the value of a header whose name does not end in -bin.
func allPrintable(values []string) bool {
	for _, v := range values {
		for i := 0; i < len(v); i++ {
			if v[i] < 0x20 || v[i] > 0x7e {
				return false
			}
		}
	}
	return true
}
