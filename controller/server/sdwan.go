package server

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"

	"github.com/edgewan/edgewan/controller/ingest"
	"github.com/edgewan/edgewan/controller/mqtt"
	"github.com/edgewan/edgewan/controller/sdwan"
	"github.com/edgewan/edgewan/coreapi/ratelimit"
	"github.com/edgewan/edgewan/coreapi/soc"
	"github.com/edgewan/edgewan/steering"
	"github.com/edgewan/edgewan/telemetry/sink"
)

// The budget of failed MQTT logins per client address: 10 at once, then one every 2 seconds.
// An agent with a stale password retries far slower than that; a guesser is slowed to a crawl.
const (
	mqttAuthFailRate  = 0.5
	mqttAuthFailBurst = 10
)

// telemetrySink is the time-series store as the server holds it.
type telemetrySink interface {
	ingest.Sink
	Close() error
}

// startSDWAN starts the telemetry side: the time-series sink, the embedded broker or the
// connection to an external one, and the ingest engine, subscribed before the broker serves.
func (s *Server) startSDWAN(ctx context.Context) error {
	cfg := s.cfg
	var err error
	if cfg.InfluxURL != "" {
		s.sink, err = sink.NewInflux(sink.InfluxOptions{URL: cfg.InfluxURL, Token: cfg.InfluxToken, Org: cfg.InfluxOrg, Bucket: cfg.InfluxBucket})
	} else {
		s.sink, err = sink.NewEmbedded(sink.EmbeddedOptions{DataDir: cfg.DataDir, Now: s.clock.Now})
	}
	if err != nil {
		return err
	}
	var client *mqtt.ClientBus
	var owner ingest.Owner
	switch {
	case cfg.Scaled():
		if err := s.startCluster(ctx); err != nil {
			return err
		}
		owner = s.member
	case cfg.MQTTURL == "":
		refusedLogins := s.loginRefusals()
		s.broker, err = mqtt.NewBroker(mqtt.Options{
			Listen: cfg.MQTTListen, TLS: s.tls, Credentials: s.Store,
			OnViolation: func(v mqtt.Violation) {
				dir := "subscribe to"
				if v.Write {
					dir = "publish to"
				}
				s.raise(context.Background(), soc.Signal{Rule: soc.RuleMQTTACL, Subject: v.Username, Severity: "high",
					Title:       "Agent " + v.Username + " tried to use another site's topics",
					Description: fmt.Sprintf("device %s of site %s tried to %s %q", v.Username, v.Site, dir, v.Topic)})
			},
			OnRefused: func(reason string) {
				if s.Engine != nil {
					s.Engine.Refused(reason)
				}
			},
			// Failed logins spend a budget per address, like failed API tokens, and count
			// towards the same brute-force rule.
			AuthFailures: ratelimit.New(ratelimit.Options{Rate: mqttAuthFailRate, Burst: mqttAuthFailBurst}),
			OnAuthFailure: func(f mqtt.AuthFailure) {
				refusedLogins(f.Reason)
				s.watcher.Failure(f.Remote, "", "mqtt: "+f.Reason, s.clock.Now())
			},
		})
		if err != nil {
			return err
		}
		s.bus = mqtt.NewInlineBus(s.broker, mqtt.BusOptions{})
	default:
		// The broker's password and ACL files follow the database from the start, so a fresh
		// Mosquitto (the compose stack's) lets the controller in before any agent has claimed.
		s.writeMosquittoFiles(ctx, "")
		client, err = mqtt.NewClientBus(mqtt.ClientOptions{URL: cfg.MQTTURL, Username: cfg.MQTTUsername, Password: cfg.MQTTPassword, CAFile: cfg.MQTTCA})
		if err != nil {
			return err
		}
		s.bus = client
	}
	steer := steering.DefaultOptions()
	steer.HoldDown, steer.BreachAfter, steer.RecoverAfter = cfg.SteeringHoldDown, cfg.SteeringBreachAfter, cfg.SteeringRecoverAfter
	s.Engine = ingest.New(s.Store, s.bus, s.sink, ingest.Options{
		Now: s.clock.Now, Owner: owner, OfflineAfter: cfg.OfflineAfter, Notify: s.dispatcher.Notify, Registerer: s.registry, Steering: steer,
		OnClockSkew: func(c ingest.ClockSkew) {
			s.raise(context.Background(), soc.Signal{Rule: soc.RuleClockSkew, Subject: c.Device, Severity: "medium",
				Title: "Agent " + c.Device + " reports times outside the accepted window",
				Description: fmt.Sprintf("device %s of site %s sent a message dated %s, %s from the controller's clock; its reports are refused until its clock is right",
					c.Device, c.Site, c.AgentTime.UTC().Format(time.RFC3339), c.Skew.Round(time.Second))})
		},
		OnControllerClock: func(c ingest.ControllerClock) {
			if !c.Till.IsZero() {
				return // the case stays open for someone to look at why the clock stepped
			}
			s.raise(context.Background(), soc.Signal{Rule: soc.RuleControllerClock, Subject: "controller", Severity: "high",
				Title: "The controller's clock looks wrong: most agents agree",
				Description: fmt.Sprintf("%d of the %d sites heard in the last minute find the controller's clock %s off; the agents are not blamed (no agent.clock_skew case), and while their times are ahead of the window their reports are held in their spools until the clock is right. Check the controller's time synchronisation (NTP).",
					c.Sites, c.Heard, c.Offset.Round(time.Second))})
		},
		OnSiteRemoved: func(_, device string) {
			if s.broker != nil && device != "" {
				s.broker.Revoke(device)
			}
			s.writeMosquittoFiles(context.Background(), "")
			s.pushNATSAccount()
		},
		OnQuarantine: func(siteID string, q sdwan.Quarantine) {
			s.raise(context.Background(), soc.Signal{Rule: soc.RuleSiteQuarantined, Subject: siteID, Severity: "high",
				Title:       "Site " + siteID + " quarantined: the controller cannot load its state",
				Description: fmt.Sprintf("%s: %s. The site is followed (liveness, history) but not evaluated; every other site runs. Fix the site through the API, or its row.", q.Kind, q.Reason)})
		},
	})
	s.SDWAN.Attach(s.Engine, s.Engine)
	if h, ok := s.sink.(sdwan.History); ok {
		s.SDWAN.SetHistory(h, sdwan.SimulationOptions{Steering: steer})
	}
	if err := s.Engine.Start(ctx); err != nil {
		return err
	}
	s.registerSDWANMetrics()
	switch {
	case s.broker != nil:
		// A restarted controller's whole fleet CONNECTs within seconds: one query now, not
		// a database read per CONNECT then.
		if err := s.Store.LoadMQTTCredentials(ctx); err != nil {
			return err
		}
		return s.broker.Start(s.bgCtx)
	case client != nil:
		return client.Start(s.bgCtx)
	}
	return nil // the NATS bus consumes once Run's cluster member holds partitions
}

// closeIngress stops taking agents' messages and hands the engine what was taken, while the
// engine still runs: the broker first (mochi acknowledges a message before the bus sees it),
// then the bus, which runs its queues. The NATS bus is left to the cluster member, whose leave
// stops its partitions; a message it has not acknowledged is delivered again to the next owner.
func (s *Server) closeIngress(ctx context.Context) {
	if s.broker != nil {
		s.broker.Shutdown(ctx)
	}
	if _, isNATS := s.bus.(*mqtt.NATSBus); s.bus != nil && !isNATS {
		s.bus.Close()
	}
}

// closeSDWAN stops the bus, the broker and the sink (each may be nil after a failed start).
func (s *Server) closeSDWAN() {
	if s.broker != nil { // before the bus, see closeIngress
		s.broker.Close()
	}
	if s.bus != nil {
		s.bus.Close()
	}
	if s.clusterDB != nil {
		_ = s.clusterDB.Close()
	}
	if s.sink != nil {
		if err := s.sink.Close(); err != nil {
			slog.Warn("closing the telemetry store", "err", err)
		}
	}
}

// MQTTAddr is the embedded broker's address, or "" with an external broker.
func (s *Server) MQTTAddr() string {
	if s.broker == nil {
		return ""
	}
	return s.broker.Addr()
}

// brokerKind is the broker's kind agents get at claim (sdwan.MQTTAccess.Broker).
func (s *Server) brokerKind() string {
	if s.cfg.Scaled() {
		return sdwan.BrokerNATS
	}
	return ""
}

// mqttPublicURL is the broker address agents get at claim.
func (s *Server) mqttPublicURL() string {
	cfg := s.cfg
	switch {
	case cfg.MQTTPublicURL != "":
		return cfg.MQTTPublicURL
	case cfg.Scaled():
		return strings.Join(cfg.NATSMQTTURLs, ",")
	case cfg.MQTTURL != "":
		return cfg.MQTTURL
	}
	addr := cfg.MQTTListen
	if s.broker != nil {
		addr = s.broker.Addr()
	}
	host, port, _ := net.SplitHostPort(addr)
	if host == "" || host == "0.0.0.0" || host == "::" {
		if h, err := os.Hostname(); err == nil {
			host = h
		}
	}
	return "mqtts://" + net.JoinHostPort(host, port)
}

// writeMosquittoFiles rewrites an external Mosquitto's password and ACL files from the
// credentials in the database (with --mosquitto-dir). Mosquitto rereads them on SIGHUP.
func (s *Server) writeMosquittoFiles(ctx context.Context, _ string) {
	if s.cfg.MosquittoDir == "" {
		return
	}
	creds, err := s.Store.MQTTCredentials(ctx)
	if err != nil {
		slog.Error("mosquitto files: reading credentials", "err", err)
		return
	}
	users := make([]mqtt.MosquittoUser, 0, len(creds))
	for _, c := range creds {
		users = append(users, mqtt.MosquittoUser{Username: c.Username, Site: c.Site, Hash: c.Hash})
	}
	files, err := mqtt.WriteMosquittoFiles(s.cfg.MosquittoDir, users, mqtt.MosquittoUser{Username: s.cfg.MQTTUsername, Password: s.cfg.MQTTPassword})
	if err != nil {
		slog.Error("mosquitto files: writing", "dir", s.cfg.MosquittoDir, "err", err)
		return
	}
	slog.Info("mosquitto password and ACL files written; send mosquitto SIGHUP to load them", "passwd", files.Passwd, "agents", len(users))
}
