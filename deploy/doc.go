// Package deploy holds the packaging and deployment files: systemd units, Dockerfiles, the
// compose stack, Mosquitto, Prometheus and Grafana configuration and dashboards. Its test
// validates them against the code (metric, measurement and field names; flags).
package deploy
