package workload

// Returned is how many of the client's transactions have a reply (the
// model checker's mc.Client).
func (c *Client) Returned() int { return len(c.replies) }

// Operation is the client's i-th transaction and, once it has returned,
// its reply; ok is false past the end of the script (mc.Client).
func (c *Client) Operation(i int) (input, output any, ok bool) {
	if i >= len(c.script) {
		return nil, nil, false
	}
	if i < len(c.replies) {
		return c.script[i], c.replies[i], true
	}
	return c.script[i], nil, true
}
