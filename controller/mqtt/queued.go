package mqtt

// queued counts the messages waiting for a handler, over every worker's queue.
func (d *dispatcher) queued() int {
	n := 0
	for _, q := range d.queues {
		n += len(q)
	}
	return n
}

// Queued is how many received messages wait for their handler (the ingest queue's depth).
func (ib *InlineBus) Queued() int { return ib.d.queued() }

// Queued is how many received messages wait for their handler (the ingest queue's depth).
func (cb *ClientBus) Queued() int { return cb.d.queued() }
