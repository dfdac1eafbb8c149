package netlab

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"runtime"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// NS is a named network namespace, as created by `ip netns add`.
type NS struct {
	Name string // as listed by `ip netns list`
	Path string // /run/netns/NAME
}

func newNS(name string) *NS { return &NS{Name: name, Path: "/run/netns/" + name} }

// Command returns a command that runs name inside the namespace (ip netns exec),
// so it also sees the namespace's /sys.
func (n *NS) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", n.Name, name}, args...)...)
}

// Handle returns a netlink handle bound to the namespace; the caller closes it.
func (n *NS) Handle() (*netlink.Handle, error) {
	h, err := netns.GetFromPath(n.Path)
	if err != nil {
		return nil, fmt.Errorf("netlab.Handle %s: %w", n.Name, err)
	}
	defer h.Close()
	nh, err := netlink.NewHandleAt(h)
	if err != nil {
		return nil, fmt.Errorf("netlab.Handle %s: %w", n.Name, err)
	}
	return nh, nil
}

// Do runs fn on a locked OS thread switched into the namespace and switches
// back afterwards, also when fn panics. Sockets opened by fn stay in the
// namespace for their lifetime; goroutines started by fn do not run in it.
func (n *NS) Do(fn func() error) (err error) {
	target, err := netns.GetFromPath(n.Path)
	if err != nil {
		return fmt.Errorf("netlab.Do %s: %w", n.Name, err)
	}
	defer target.Close()

	runtime.LockOSThread()
	orig, err := netns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("netlab.Do %s: current namespace: %w", n.Name, err)
	}
	defer orig.Close()
	if err := netns.Set(target); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("netlab.Do %s: setns: %w", n.Name, err)
	}
	defer func() {
		if serr := netns.Set(orig); serr != nil {
			// The thread is stuck in the wrong namespace: leave it locked
			// so the runtime terminates it when this goroutine ends.
			err = errors.Join(err, fmt.Errorf("netlab.Do %s: switching back: %w", n.Name, serr))
			return
		}
		runtime.UnlockOSThread()
	}()
	return fn()
}
