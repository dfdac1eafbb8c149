package mqtt_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgewan/edgewan/controller/mqtt"
)

func TestWriteMosquittoFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mosquitto")
	_, ca := claim(t, "dev-b", "site-b")
	f, err := mqtt.WriteMosquittoFiles(dir, []mqtt.MosquittoUser{
		{Username: "dev-b", Site: "site-b", Hash: ca.Hash},
		{Username: "dev-a", Site: "site-a", Password: "pw-a"},
	}, mqtt.MosquittoUser{Password: "pw-c"})
	if err != nil {
		t.Fatal(err)
	}
	read := func(p string) string {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		st, _ := os.Stat(p)
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v; want 0600", p, st.Mode().Perm())
		}
		return string(b)
	}
	pw := strings.Split(strings.TrimSpace(read(f.Passwd)), "\n")
	if len(pw) != 3 || !strings.HasPrefix(pw[0], "controller:$7$") || !strings.HasPrefix(pw[1], "dev-a:$7$") || pw[2] != "dev-b:"+ca.Hash {
		t.Fatalf("password file:\n%s", strings.Join(pw, "\n"))
	}
	user, hash, _ := strings.Cut(pw[1], ":")
	if user != "dev-a" || !mqtt.VerifyPassword(hash, "pw-a") {
		t.Fatal("dev-a's hash does not verify its password")
	}
	want := `
user controller
topic readwrite #
topic read $SYS/#

user dev-a
topic write edgewan/v1/sites/site-a/telemetry
topic write edgewan/v1/sites/site-a/events
topic write edgewan/v1/sites/site-a/acks
topic write edgewan/v1/sites/site-a/status
topic read edgewan/v1/sites/site-a/policy
topic read edgewan/v1/sites/site-a/decisions
topic read edgewan/v1/sites/site-a/stored

user dev-b
topic write edgewan/v1/sites/site-b/telemetry
topic write edgewan/v1/sites/site-b/events
topic write edgewan/v1/sites/site-b/acks
topic write edgewan/v1/sites/site-b/status
topic read edgewan/v1/sites/site-b/policy
topic read edgewan/v1/sites/site-b/decisions
topic read edgewan/v1/sites/site-b/stored
`
	acl := read(f.ACL)
	if _, body, _ := strings.Cut(acl, "\n"); body != want {
		t.Fatalf("ACL file:\n%s\nwant (after the comment line):\n%s", acl, want)
	}
	conf := read(f.Conf)
	for _, line := range []string{"allow_anonymous false", "password_file " + f.Passwd, "acl_file " + f.ACL,
		"use_username_as_clientid true", "message_size_limit 65536", "max_packet_size 66560"} {
		if !strings.Contains(conf, "\n"+line+"\n") {
			t.Errorf("edgewan.conf lacks %q:\n%s", line, conf)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

func TestWriteMosquittoFilesRefuses(t *testing.T) {
	ok := mqtt.MosquittoUser{Username: "dev-a", Site: "site-a", Password: "x"}
	ctrl := mqtt.MosquittoUser{Password: "c"}
	for _, tc := range []struct {
		name       string
		agents     []mqtt.MosquittoUser
		controller mqtt.MosquittoUser
	}{
		{"agent named controller", []mqtt.MosquittoUser{{Username: "controller", Site: "site-a", Password: "x"}}, ctrl},
		{"twice", []mqtt.MosquittoUser{ok, ok}, ctrl},
		{"newline in username", []mqtt.MosquittoUser{{Username: "dev-a\nuser evil", Site: "site-a", Password: "x"}}, ctrl},
		{"colon in username", []mqtt.MosquittoUser{{Username: "dev:a", Site: "site-a", Password: "x"}}, ctrl},
		{"bad site", []mqtt.MosquittoUser{{Username: "dev-a", Site: "site-a\ntopic readwrite #", Password: "x"}}, ctrl},
		{"no site", []mqtt.MosquittoUser{{Username: "dev-a", Password: "x"}}, ctrl},
		{"no password", []mqtt.MosquittoUser{{Username: "dev-a", Site: "site-a"}}, ctrl},
		{"bad hash", []mqtt.MosquittoUser{{Username: "dev-a", Site: "site-a", Hash: "$6$abc$def"}}, ctrl},
		{"controller without password", []mqtt.MosquittoUser{ok}, mqtt.MosquittoUser{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if _, err := mqtt.WriteMosquittoFiles(dir, tc.agents, tc.controller); err == nil {
				t.Fatal("no error")
			}
			if entries, _ := os.ReadDir(dir); len(entries) > 0 {
				t.Fatalf("wrote %d files despite the error", len(entries))
			}
		})
	}
}
