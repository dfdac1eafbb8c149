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

// InsertSimulation implements sdwan.Store.
func (s *Store) InsertSimulation(ctx context.Context, sim *sdwan.Simulation) error {
	body, err := json.Marshal(sim)
	if err != nil {
		return fmt.Errorf("store.InsertSimulation: %w", err)
	}
	if _, err := s.exec(ctx, "INSERT INTO sdwan_simulations (id, policy_id, version, body, created_at) VALUES (?, ?, ?, ?, ?)",
		sim.ID, sim.Policy, sim.Version, string(body), micros(sim.CreatedAt)); err != nil {
		return fmt.Errorf("store.InsertSimulation: %w", err)
	}
	return nil
}

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
