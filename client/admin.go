package client

import (
	"context"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/amalgam-store/amalgam/wire"
)

// Operator commands, answered by the reconfiguration service's leader.
// The entry addresses are tried in turn; a replica that does not lead
// names the leader, which is tried next.

// Replace asks the reconfiguration service to replace a server:
// "data/N", "parity/N", "witness/N" (a new incarnation where machine N is
// served now) or "machine/N" (all of its servers); with toSpare, machine
// N's slot first moves to a live spare. It returns once the service has
// the requests; the replacement itself follows (see History).
func (c *Client) Replace(ctx context.Context, server string, toSpare bool) (*wire.AdminReplaceResponse, error) {
	var out *wire.AdminReplaceResponse
	err := c.admin(ctx, func(ctx context.Context, cl wire.ReconfigClient) error {
		var err error
		out, err = cl.Replace(ctx, &wire.AdminReplaceRequest{Server: server, ToSpare: toSpare})
		return err
	})
	return out, err
}

// History returns every configuration, oldest first, and the address book.
func (c *Client) History(ctx context.Context) (*wire.HistoryResponse, error) {
	var out *wire.HistoryResponse
	err := c.admin(ctx, func(ctx context.Context, cl wire.ReconfigClient) error {
		var err error
		out, err = cl.History(ctx, &wire.HistoryRequest{})
		return err
	})
	return out, err
}

func (c *Client) admin(ctx context.Context, call func(context.Context, wire.ReconfigClient) error) error {
	entries := strings.Split(c.entry, ",")
	next := strings.TrimSpace(entries[0])
	var last error
	for try := 0; ; try++ {
		cc, err := c.conn(next, c.Layout().BlockSize)
		if err != nil {
			return err
		}
		actx, cancel := context.WithTimeout(ctx, 2*c.opts.AttemptTimeout)
		err = call(actx, wire.NewReconfigClient(cc))
		cancel()
		if err == nil {
			return nil
		}
		last = err
		st, _ := status.FromError(err)
		switch st.Code() {
		case codes.InvalidArgument, codes.Aborted, codes.PermissionDenied, codes.Unauthenticated:
			return fmt.Errorf("%s", st.Message())
		case codes.FailedPrecondition:
			if _, leader, ok := strings.Cut(st.Message(), "the leader is at "); ok {
				next = leader
				continue
			}
			return fmt.Errorf("%s", st.Message())
		case codes.Unimplemented:
			return fmt.Errorf("cluster %s has no reconfiguration service (%s)", next, st.Message())
		}
		next = strings.TrimSpace(entries[(try+1)%len(entries)])
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last error: %s)", ctx.Err(), describe(last))
		case <-time.After(100 * time.Millisecond):
		}
	}
}
