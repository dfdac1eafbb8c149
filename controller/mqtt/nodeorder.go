package mqtt

import (
	"hash/fnv"
	"slices"
	"strconv"
)

// NodeOrder returns urls rotated by a controller's instance key, so that the controllers of a
// cluster, all given the same list of NATS nodes, do not all sit on its first node: a NATS
// client and paho dial the nodes in the order given (the bus asks nats.go not to shuffle), and
// one node holding every controller's connections made its death cost every controller a
// reconnect at once (docs/scale-out.md, "The controllers' nodes"). The rotation is the key's
// trailing number when it ends in one (controller-1, -2, -3 in the compose file; a
// StatefulSet's ordinal), which spreads consecutively numbered controllers over distinct nodes,
// else FNV-1a of the key: a spread on average only (two of three controllers may share a node).
func NodeOrder(urls []string, key string) []string {
	n := len(urls)
	if n < 2 {
		return slices.Clone(urls)
	}
	k := nodeOffset(key, n)
	return append(slices.Clone(urls[k:]), urls[:k]...)
}

func nodeOffset(key string, n int) int {
	i := len(key)
	for i > 0 && key[i-1] >= '0' && key[i-1] <= '9' {
		i--
	}
	if d := key[i:]; d != "" && len(d) <= 9 {
		v, _ := strconv.Atoi(d)
		return v % n
	}
	h := fnv.New32a()
	h.Write([]byte(key))
	return int(h.Sum32() % uint32(n))
}
