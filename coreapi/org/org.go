// Package org describes the organisation that owns this controller and its device inventory
// (the agents on branch routers).
package org

import (
	"context"
	"time"

	"github.com/edgewan/edgewan/coreapi/page"
)

// Org is the organisation this controller serves (one per installation).
type Org struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Device statuses. pending: pre-staged, not yet claimed; online: reporting; offline: stopped
// reporting past the liveness timeout; decommissioned: retired with its site.
const (
	DevicePending        = "pending"
	DeviceOnline         = "online"
	DeviceOffline        = "offline"
	DeviceDecommissioned = "decommissioned"
)

// DeviceStatuses lists the device statuses.
var DeviceStatuses = []string{DevicePending, DeviceOnline, DeviceOffline, DeviceDecommissioned}

// Device is an agent on a branch router.
type Device struct {
	ID        string    `json:"id"`
	SiteID    string    `json:"site"`
	Name      string    `json:"name"`
	Serial    string    `json:"serial,omitempty"`
	Status    string    `json:"status"`
	Version   string    `json:"version,omitempty"`
	LastSeen  time.Time `json:"last_seen,omitzero"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// DeviceFilter selects devices in a list.
type DeviceFilter struct {
	Status, SiteID string
}

// Store is what the org endpoints need of the database.
type Store interface {
	Org(ctx context.Context) (*Org, error)
	ListDevices(ctx context.Context, p page.Params, f DeviceFilter) ([]*Device, error)
}
