// Package cluster shares the sites among several controllers: the site space is cut into
// partitions, each leased to one controller at a time in PostgreSQL, with a fencing epoch that
// writes check in their own transaction (docs/scale-out.md).
package cluster

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"
)

// Defaults for Options fields left zero.
const (
	DefaultPartitions = 16
	DefaultTTL        = 6 * time.Second
)

// ErrFenced is returned by CheckEpoch when the lease moved on: the write must not happen.
var ErrFenced = errors.New("cluster: lease lost (fenced)")

// Options configure a Member.
type Options struct {
	DB         *sql.DB // PostgreSQL (driver "pgx"), shared by every controller of the cluster
	ID         string  // this controller's name, unique in the cluster (e.g. the hostname)
	Partitions int     // partitions of the site space; the same on every controller. 0: DefaultPartitions
	// TTL is how long a lease lasts without renewal. Leases are renewed every TTL/3; a dead
	// controller's partitions move within TTL + TTL/3. 0: DefaultTTL.
	TTL time.Duration
	// OnAcquire is called (from Run's goroutine) when a partition becomes this member's, after
	// Owns reports it; OnRelease before a partition is given up voluntarily, or as soon as its
	// lease is known to be lost. Both may be nil. They should not block for long.
	OnAcquire func(partition int, epoch int64)
	OnRelease func(partition int)
	Logger    *slog.Logger
}

// Member is one controller's seat in the cluster. Create it with New, then Run.
type Member struct {
	o      Options
	margin time.Duration
	log    *slog.Logger

	mu   sync.Mutex
	held map[int]lease
	// abandon makes Run return without releasing anything, as a killed process would (tests).
	abandon bool
	jobs    []*job // Singleton's
}

type lease struct {
	epoch      int64
	validUntil time.Time // local clock: strictly before PostgreSQL lets another member take it
}

// New checks opts and creates the lease tables if they do not exist. All members must use the
// same number of partitions; a mismatch is refused.
func New(ctx context.Context, o Options) (*Member, error) {
	switch {
	case o.DB == nil:
		return nil, errors.New("cluster.New: no database")
	case o.ID == "" || len(o.ID) > 200:
		return nil, errors.New("cluster.New: ID must have 1..200 characters")
	case o.Partitions < 0 || o.Partitions > 4096:
		return nil, fmt.Errorf("cluster.New: %d partitions: want 1..4096", o.Partitions)
	case o.TTL < 0 || (o.TTL > 0 && o.TTL < 300*time.Millisecond):
		return nil, fmt.Errorf("cluster.New: lease TTL %v: want at least 300ms", o.TTL)
	}
	if o.Partitions == 0 {
		o.Partitions = DefaultPartitions
	}
	if o.TTL == 0 {
		o.TTL = DefaultTTL
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	m := &Member{o: o, margin: o.TTL / 6, log: o.Logger.With("cluster_member", o.ID), held: map[int]lease{}}
	stmts := []string{
		`CREATE TABLE IF NOT EXISTS edgewan_partition_leases (
  partition  integer PRIMARY KEY,
  owner      text,
  epoch      bigint NOT NULL DEFAULT 0,
  expires_at timestamptz NOT NULL DEFAULT 'epoch')`,
		`CREATE TABLE IF NOT EXISTS edgewan_cluster_members (
  id      text PRIMARY KEY,
  seen_at timestamptz NOT NULL)`,
		`INSERT INTO edgewan_partition_leases (partition) SELECT g FROM generate_series(0, $1::integer - 1) g ON CONFLICT DO NOTHING`,
	}
	for i, q := range stmts {
		var err error
		if i == 2 {
			_, err = o.DB.ExecContext(ctx, q, o.Partitions)
		} else {
			_, err = o.DB.ExecContext(ctx, q)
		}
		if err != nil {
			return nil, fmt.Errorf("cluster.New: creating the lease tables: %w", err)
		}
	}
	var n int
	if err := o.DB.QueryRowContext(ctx, `SELECT count(*) FROM edgewan_partition_leases`).Scan(&n); err != nil {
		return nil, fmt.Errorf("cluster.New: %w", err)
	}
	if n != o.Partitions {
		return nil, fmt.Errorf("cluster.New: the cluster has %d partitions, this controller was started with %d: all controllers must agree", n, o.Partitions)
	}
	return m, nil
}

// Partition returns the partition of site among n: FNV-1a of the site's ID modulo n, the same
// function as NATS server's subject mapping partition(n, site) (checked by a test).
func Partition(site string, n int) int {
	h := uint32(2166136261)
	for i := 0; i < len(site); i++ {
		h ^= uint32(site[i])
		h *= 16777619
	}
	return int(h % uint32(n))
}

// Partitions is the number of partitions.
func (m *Member) Partitions() int { return m.o.Partitions }

// Owns reports whether this member may decide and publish for site now.
func (m *Member) Owns(site string) bool {
	_, ok := m.Epoch(Partition(site, m.o.Partitions))
	return ok
}

// Epoch returns the fencing epoch of partition p if this member holds a valid lease on it.
func (m *Member) Epoch(p int) (int64, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	l, ok := m.held[p]
	if !ok || !time.Now().Before(l.validUntil) {
		return 0, false
	}
	return l.epoch, true
}

// Owned lists the partitions this member holds a valid lease on.
func (m *Member) Owned() []int {
	m.mu.Lock()
	now := time.Now()
	var ps []int
	for p, l := range m.held {
		if now.Before(l.validUntil) {
			ps = append(ps, p)
		}
	}
	m.mu.Unlock()
	slices.Sort(ps)
	return ps
}

// CheckEpoch makes tx fail unless partition p's lease still has epoch: call it in the
// transaction of a write that only the owner may make. It locks the lease row for share until
// tx ends, so a takeover waits for tx, and tx fails if the takeover came first.
func CheckEpoch(ctx context.Context, tx *sql.Tx, p int, epoch int64) error {
	var cur int64
	err := tx.QueryRowContext(ctx, `SELECT epoch FROM edgewan_partition_leases WHERE partition = $1 FOR SHARE`, p).Scan(&cur)
	if err != nil {
		return fmt.Errorf("cluster.CheckEpoch: %w", err)
	}
	if cur != epoch {
		return fmt.Errorf("%w: partition %d is at epoch %d, the write holds %d", ErrFenced, p, cur, epoch)
	}
	return nil
}

// PartitionOf returns site's partition in this cluster.
func (m *Member) PartitionOf(site string) int { return Partition(site, m.o.Partitions) }

// HoldsPartition reports, inside tx, whether this member still holds partition p: its lease is
// valid here and the row still has this member's epoch (CheckEpoch: the answer stands until tx
// ends, a takeover waits for tx). A lease found taken over, as a controller paused past its
// validity finds it, is dropped here at once (OnRelease), so this controller stops acting for
// the partition's sites without waiting for its next renewal. err is a database failure.
func (m *Member) HoldsPartition(ctx context.Context, tx *sql.Tx, p int) (bool, error) {
	epoch, ok := m.Epoch(p)
	if !ok {
		return false, nil
	}
	err := CheckEpoch(ctx, tx, p, epoch)
	if errors.Is(err, ErrFenced) {
		m.drop(p, epoch, err)
		return false, nil
	}
	return err == nil, err
}

// drop forgets partition p if it is still held at epoch (a newer lease is kept).
func (m *Member) drop(p int, epoch int64, why error) {
	m.mu.Lock()
	l, ok := m.held[p]
	gone := ok && l.epoch == epoch
	if gone {
		delete(m.held, p)
	}
	m.mu.Unlock()
	if gone {
		m.log.Warn("cluster: lease taken over by another controller", "partition", p, "err", why)
		m.stopUsing(p)
	}
}

// Run keeps this member's leases and share until ctx is done, then releases them (so their
// next owners start at once) and leaves.
func (m *Member) Run(ctx context.Context) error {
	tick := time.NewTicker(m.o.TTL / 3)
	defer tick.Stop()
	for {
		// A round never outlives a renewal period: a hung database must not keep expire from
		// withdrawing leases whose local validity ended.
		rctx, cancel := context.WithTimeout(ctx, m.o.TTL/3)
		err := m.round(rctx)
		cancel()
		if err != nil && ctx.Err() == nil {
			m.log.Warn("cluster: lease round failed", "err", err)
		}
		m.expire()
		select {
		case <-ctx.Done():
			m.mu.Lock()
			abandon := m.abandon
			m.mu.Unlock()
			if !abandon {
				m.leave()
			}
			return nil
		case <-tick.C:
		}
	}
}

// round renews, then takes or gives up partitions towards the fair share.
func (m *Member) round(ctx context.Context) error {
	ttl := m.o.TTL.Seconds()
	if _, err := m.o.DB.ExecContext(ctx, `INSERT INTO edgewan_cluster_members (id, seen_at) VALUES ($1, now())
ON CONFLICT (id) DO UPDATE SET seen_at = now()`, m.o.ID); err != nil {
		return fmt.Errorf("heartbeat: %w", err)
	}
	sent := time.Now()
	// Rows are locked in partition order, as fenced writes lock theirs (FOR SHARE, ascending):
	// a renewal and a write over several partitions never wait for each other in a cycle.
	rows, err := m.o.DB.QueryContext(ctx, `WITH r AS (
  SELECT partition FROM edgewan_partition_leases WHERE owner = $1 AND expires_at > now() ORDER BY partition FOR UPDATE)
UPDATE edgewan_partition_leases l SET expires_at = now() + make_interval(secs => $2)
FROM r WHERE l.partition = r.partition RETURNING l.partition, l.epoch`, m.o.ID, ttl)
	if err != nil {
		return fmt.Errorf("renewing: %w", err)
	}
	renewed, err := scanLeases(rows)
	if err != nil {
		return fmt.Errorf("renewing: %w", err)
	}
	m.update(renewed, sent, true)

	var live int
	if err := m.o.DB.QueryRowContext(ctx, `SELECT count(*) FROM edgewan_cluster_members WHERE seen_at > now() - make_interval(secs => $1)`, ttl).Scan(&live); err != nil {
		return fmt.Errorf("counting members: %w", err)
	}
	share := (m.o.Partitions + max(live, 1) - 1) / max(live, 1)
	held := m.Owned()
	switch {
	case len(held) > share:
		for _, p := range held[share:] {
			if err := m.release(ctx, p); err != nil {
				return err
			}
		}
	case len(held) < share:
		sent := time.Now()
		rows, err := m.o.DB.QueryContext(ctx, `WITH c AS (
  SELECT partition FROM edgewan_partition_leases WHERE owner IS NULL OR expires_at < now()
  ORDER BY partition LIMIT $2 FOR UPDATE SKIP LOCKED)
UPDATE edgewan_partition_leases l SET owner = $1, epoch = l.epoch + 1, expires_at = now() + make_interval(secs => $3)
FROM c WHERE l.partition = c.partition RETURNING l.partition, l.epoch`, m.o.ID, share-len(held), ttl)
		if err != nil {
			return fmt.Errorf("acquiring: %w", err)
		}
		got, err := scanLeases(rows)
		if err != nil {
			return fmt.Errorf("acquiring: %w", err)
		}
		m.update(got, sent, false)
	}
	return nil
}

func scanLeases(rows *sql.Rows) (map[int]int64, error) {
	defer rows.Close()
	out := map[int]int64{}
	for rows.Next() {
		var p int
		var e int64
		if err := rows.Scan(&p, &e); err != nil {
			return nil, err
		}
		out[p] = e
	}
	return out, rows.Err()
}

// update records leases renewed or acquired at sent; with renewal, a held lease missing from
// got was lost.
func (m *Member) update(got map[int]int64, sent time.Time, renewal bool) {
	until := sent.Add(m.o.TTL - m.margin)
	var acquired []int
	var lost []int
	m.mu.Lock()
	if renewal {
		for p := range m.held {
			if _, ok := got[p]; !ok {
				delete(m.held, p)
				lost = append(lost, p)
			}
		}
	}
	for p, e := range got {
		if _, ok := m.held[p]; !ok {
			acquired = append(acquired, p)
		}
		m.held[p] = lease{epoch: e, validUntil: until}
	}
	m.mu.Unlock()
	for _, p := range lost {
		m.log.Warn("cluster: lease lost", "partition", p)
		m.stopUsing(p)
	}
	slices.Sort(acquired)
	for _, p := range acquired {
		m.log.Info("cluster: partition acquired", "partition", p, "epoch", got[p])
		if m.o.OnAcquire != nil {
			m.o.OnAcquire(p, got[p])
		}
	}
}

// expire forgets leases whose local validity ended (PostgreSQL unreachable or slow).
func (m *Member) expire() {
	now := time.Now()
	var lost []int
	m.mu.Lock()
	for p, l := range m.held {
		if !now.Before(l.validUntil) {
			delete(m.held, p)
			lost = append(lost, p)
		}
	}
	m.mu.Unlock()
	for _, p := range lost {
		m.log.Warn("cluster: lease expired before it could be renewed", "partition", p)
		m.stopUsing(p)
	}
}

// release gives up partition p: this member stops using it first, then frees the row.
func (m *Member) release(ctx context.Context, p int) error {
	m.mu.Lock()
	l, ok := m.held[p]
	delete(m.held, p)
	m.mu.Unlock()
	if !ok {
		return nil
	}
	m.stopUsing(p) // before another member can take the lease
	if _, err := m.o.DB.ExecContext(ctx, `UPDATE edgewan_partition_leases SET owner = NULL, expires_at = 'epoch'
WHERE partition = $1 AND owner = $2 AND epoch = $3`, p, m.o.ID, l.epoch); err != nil {
		return fmt.Errorf("releasing partition %d: %w", p, err) // it expires by itself
	}
	m.log.Info("cluster: partition released", "partition", p)
	return nil
}

// leave releases every partition and removes the member, within 5 s.
func (m *Member) leave() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, p := range m.Owned() {
		if err := m.release(ctx, p); err != nil {
			m.log.Warn("cluster: leaving", "err", err)
		}
	}
	if _, err := m.o.DB.ExecContext(ctx, `DELETE FROM edgewan_cluster_members WHERE id = $1`, m.o.ID); err != nil {
		m.log.Warn("cluster: leaving", "err", err)
	}
}

// SingletonPartition is the partition whose holder runs the cluster's singleton jobs (Singleton).
const SingletonPartition = 0

// Singleton runs fn while this member holds partition SingletonPartition, until ctx ends: jobs
// that are idempotent but wasteful, or that would repeat their output, on every controller
// (docs/scale-out.md). fn's context ends before another member can take the lease: at once
// when this member gives the partition up (a graceful stop or a rebalance waits for fn to
// return before freeing the lease), when it finds the lease taken over, or within TTL/12 of
// the lease's local validity ending (PostgreSQL unreachable), which is TTL/6 before the lease
// ends there. So two members never run the job at once, as long as fn returns promptly when
// its context ends. It then runs on the partition's next holder: within the lease TTL after a
// controller dies, at once after a graceful stop. Singleton returns when ctx has ended and fn
// has returned.
func (m *Member) Singleton(ctx context.Context, name string, fn func(context.Context)) {
	j := &job{}
	m.mu.Lock()
	m.jobs = append(m.jobs, j)
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		m.jobs = slices.DeleteFunc(m.jobs, func(o *job) bool { return o == j })
		m.mu.Unlock()
		j.halt()
	}()
	tick := time.NewTicker(m.o.TTL / 12) // local validity ends by the clock: polled
	defer tick.Stop()
	for {
		e, ok := m.Epoch(SingletonPartition)
		j.mu.Lock()
		running, epoch := j.stop != nil, j.epoch
		j.mu.Unlock()
		if running && (!ok || e != epoch) {
			j.halt()
			m.log.Info("cluster: singleton job stopped here", "job", name)
			running = false
		}
		if ok && !running && ctx.Err() == nil {
			// Checked again under j.mu: a release deletes the lease before it halts the jobs,
			// so either this sees it gone or the halt sees this job.
			j.mu.Lock()
			if e2, ok := m.Epoch(SingletonPartition); ok && e2 == e {
				jctx, stop := context.WithCancel(ctx)
				done := make(chan struct{})
				j.stop, j.done, j.epoch = stop, done, e
				m.log.Info("cluster: running singleton job here", "job", name, "epoch", e)
				go func() {
					defer close(done)
					fn(jctx)
				}()
			}
			j.mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// job is a running Singleton's fn.
type job struct {
	mu    sync.Mutex
	stop  context.CancelFunc // nil: not running
	done  chan struct{}
	epoch int64
}

// halt stops fn and waits for it to return.
func (j *job) halt() {
	j.mu.Lock()
	stop, done := j.stop, j.done
	j.stop, j.done = nil, nil
	j.mu.Unlock()
	if stop != nil {
		stop()
		<-done
	}
}

// stopUsing is what follows every loss of partition p's lease, however it was lost: OnRelease,
// then the singleton jobs halted if p is theirs.
func (m *Member) stopUsing(p int) {
	if m.o.OnRelease != nil {
		m.o.OnRelease(p)
	}
	m.haltJobs(p)
}

// haltJobs stops the singleton jobs if p is their partition, waiting for them.
func (m *Member) haltJobs(p int) {
	if p != SingletonPartition {
		return
	}
	m.mu.Lock()
	jobs := slices.Clone(m.jobs)
	m.mu.Unlock()
	for _, j := range jobs {
		j.halt()
	}
}
