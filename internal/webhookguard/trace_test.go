package webhookguard

import (
	"context"
	"net/http/httptrace"
)

// withConnTrace records in local the local address of the connection a
// request goes over.
func withConnTrace(ctx context.Context, local *string) context.Context {
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) {
		*local = i.Conn.LocalAddr().String()
	}})
}
