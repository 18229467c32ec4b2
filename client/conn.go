package client

import "google.golang.org/grpc"

// Conn is the client's connection to a machine at addr (host:port), for
// the machines' other services (wire.Online).
func (c *Client) Conn(addr string) (*grpc.ClientConn, error) {
	return c.conn(addr, c.Layout().BlockSize)
}
