package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/edgewan/edgewan/controller/sdwan"
	"github.com/edgewan/edgewan/coreapi/apierr"
)

// SetPolicySettings implements sdwan.Store.
func (s *Store) SetPolicySettings(ctx context.Context, p *sdwan.Policy) error {
	res, err := s.exec(ctx, "UPDATE policies SET require_simulation_minutes = ?, updated_at = ? WHERE id = ?",
		p.RequireSimulationMinutes, micros(p.UpdatedAt), p.ID)
	if err != nil {
		return fmt.Errorf("store.SetPolicySettings: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return notFound("policy", p.ID)
	}
	return nil
}

// InsertSimulation implements sdwan.Store. It prunes the version's simulations to the newest
// KeepSimulations and those a change record links.
func (s *Store) InsertSimulation(ctx context.Context, sim *sdwan.Simulation) error {
	body, err := json.Marshal(sim)
	if err != nil {
		return fmt.Errorf("store.InsertSimulation: %w", err)
	}
	err = s.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, s.q("INSERT INTO sdwan_simulations (id, policy_id, version, body, created_at) VALUES (?, ?, ?, ?, ?)"),
			sim.ID, sim.Policy, sim.Version, string(body), micros(sim.CreatedAt)); err != nil {
			return err
		}
		// Each row holds up to 1000 changed classes: keep the newest of the version, and
		// those a change record links (its simulation must stay readable).
		_, err := tx.ExecContext(ctx, s.q(`DELETE FROM sdwan_simulations WHERE policy_id = ? AND version = ?
			AND id NOT IN (SELECT id FROM sdwan_simulations WHERE policy_id = ? AND version = ? ORDER BY created_at DESC, id DESC LIMIT ?)
			AND NOT EXISTS (SELECT 1 FROM changes WHERE changes.simulation_id = sdwan_simulations.id)`),
			sim.Policy, sim.Version, sim.Policy, sim.Version, KeepSimulations)
		return err
	})
	if err != nil {
		return fmt.Errorf("store.InsertSimulation: %w", err)
	}
	return nil
}

// KeepSimulations is how many simulations of a policy version are kept (the newest), besides
// those a change record links.
const KeepSimulations = 20

// GetSimulation implements sdwan.Store.
func (s *Store) GetSimulation(ctx context.Context, id string) (*sdwan.Simulation, error) {
	return s.simulation(ctx, "store.GetSimulation", "SELECT body FROM sdwan_simulations WHERE id = ?", id)
}

// LatestSimulation implements sdwan.Store.
func (s *Store) LatestSimulation(ctx context.Context, policyID string, version int) (*sdwan.Simulation, error) {
	return s.simulation(ctx, "store.LatestSimulation",
		"SELECT body FROM sdwan_simulations WHERE policy_id = ? AND version = ? ORDER BY created_at DESC, id DESC LIMIT 1", policyID, version)
}

func (s *Store) simulation(ctx context.Context, op, query string, args ...any) (*sdwan.Simulation, error) {
	var body string
	err := s.r.QueryRowContext(ctx, s.q(query), args...).Scan(&body)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, apierr.NotFound("no such simulation")
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	var sim sdwan.Simulation
	if err := json.Unmarshal([]byte(body), &sim); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	return &sim, nil
}
