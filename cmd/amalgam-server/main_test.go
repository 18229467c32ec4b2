package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/amalgam-store/amalgam/erasure"
	"github.com/amalgam-store/amalgam/internal/clitest"
)

func TestFlagValidation(t *testing.T) {
	clitest.Refuses(t, newRootCmd, []clitest.Refusal{
		{[]string{"dev", "--machines", "4"}, "need at least g+f+w=5 machines"},
		{[]string{"dev", "--g", "0"}, "--g must be at least 1"},
		{[]string{"dev", "--f", "0"}, "f must be at least 1"},
		{[]string{"dev", "--w", "-1"}, "w must not be negative"},
		{[]string{"dev", "--blocks", "0"}, "--blocks must be at least 1"},
		{[]string{"dev", "--block-size", "0"}, "block size must be at least 1"},
		{[]string{"dev", "--durability", "disk"}, "--durability must be durable or memory"},
		{[]string{"dev", "--spares", "-1"}, "--spares must not be negative"},
		{[]string{"dev", "--reconfig-replicas", "0"}, "--reconfig-replicas must be between 1 and 7"},
		{[]string{"dev", "--suspect-after", "-1s"}, "--suspect-after must not be negative"},
		{[]string{"dev", "--addr", "nope"}, "--addr"},
		{[]string{"dev", "--log-level", "loud", "--durability", "memory", "--addr", "127.0.0.1:0"}, "--log-level"},
		{[]string{"dev", "--tls-cert", "x.pem", "--durability", "memory", "--addr", "127.0.0.1:0"}, "--tls-cert, --tls-key and --tls-ca must be given together"},
		{[]string{"dev", "--protocol", "paxos"}, `--protocol must be amalgam, shardedpaxos or rspaxos, got "paxos"`},
		{[]string{"dev", "--protocol", "rspaxos", "--durability", "disk"}, "--durability must be durable or memory"},
		{[]string{"dev", "--protocol", "shardedpaxos", "--spares", "1"}, "--spares needs the reconfiguration service"},
		{[]string{"node", "--addr", ""}, "node: --addr must not be empty"},
		{[]string{"node", "--reconfig", ""}, "node: --reconfig must not be empty"},
		{[]string{"node", "--machine", "-2"}, "--machine must be -1"},
		{[]string{"node", "--spare", "--machine", "2"}, "--spare and --machine 2"},
		{[]string{"node", "--heartbeat", "0s"}, "--heartbeat must be positive"},
		{[]string{"node", "--join-timeout", "0s"}, "--join-timeout must be positive"},
		{[]string{"node", "--machine", "0"}, "--data-dir is required"},
		{[]string{"dev", "--log-format", "xml", "--durability", "memory", "--addr", "127.0.0.1:0"}, "--log-format must be text or json"},
		{[]string{"dev", "--pprof", "--durability", "memory", "--addr", "127.0.0.1:0"}, "--pprof needs --metrics-addr"},
		{[]string{"--config", "/nonexistent.yaml", "dev"}, "--config: open /nonexistent.yaml"},
		{[]string{"version", "--output", "yaml"}, `version: --output must be text or json, got "yaml"`},
		{[]string{"reconfig", "--data-dir", ""}, "reconfig: --data-dir must not be empty"},
		{[]string{"reconfig", "--id", "0"}, "--id must be at least 1"},
		{[]string{"reconfig", "--peers", "2=127.0.0.1:7500,nope"}, `--peers entry "nope"`},
		{[]string{"reconfig", "--id", "2", "--peers", "2=127.0.0.1:7500"}, "id 2 appears twice"},
		{[]string{"reconfig", "--suspect-after", "-1s"}, "--suspect-after must not be negative"},
		{[]string{"reconfig"}, "--machine-addrs must list"},
		{[]string{"reconfig", "--machine-addrs", "a:1,b:2,c:3,d:4"}, "need at least g+f+w=5 machines"},
		{[]string{"reconfig", "--machine-addrs", "a:1,b,c:3,d:4,e:5"}, "--machine-addrs entry 1"},
	})
}

func TestDataDirKeepsLayout(t *testing.T) {
	dir := t.TempDir()
	l := erasure.Layout{N: 5, G: 3, F: 2, Stripes: 4, BlockSize: 64}
	if err := checkDataDir(dir, l, "durable", "amalgam"); err != nil {
		t.Fatal(err)
	}
	// Recorded whole, with no temporary file left beside it.
	if names, err := os.ReadDir(dir); err != nil || len(names) != 1 || names[0].Name() != "cluster.json" {
		t.Fatalf("data directory after the first start: %v, %v", names, err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "cluster.json")); err != nil || fi.Mode().Perm() != 0o644 {
		t.Fatalf("cluster.json: %v, %v; want mode 0644", fi, err)
	}
	if err := checkDataDir(dir, l, "durable", "amalgam"); err != nil {
		t.Fatalf("same layout refused: %v", err)
	}
	l2 := l
	l2.BlockSize = 128
	err := checkDataDir(dir, l2, "durable", "amalgam")
	if err == nil || !strings.Contains(err.Error(), "holds a cluster with n=5 g=3 f=2 w=0, 4 stripes of 64-byte blocks") {
		t.Fatalf("different layout: err = %v", err)
	}
}

// A baseline's durable directory records its protocol and refuses another
// protocol, and an Amalgam cluster's directory refuses a baseline.
func TestDataDirKeepsProtocol(t *testing.T) {
	dir := t.TempDir()
	if err := checkProtocol(dir, "shardedpaxos", "durable"); err != nil {
		t.Fatal(err)
	}
	if err := checkProtocol(dir, "shardedpaxos", "durable"); err != nil {
		t.Fatalf("same protocol refused: %v", err)
	}
	if err := checkProtocol(dir, "rspaxos", "durable"); err == nil || !strings.Contains(err.Error(), "holds a shardedpaxos cluster") {
		t.Fatalf("other protocol: err = %v", err)
	}
	l := erasure.Layout{N: 5, G: 3, F: 2, Stripes: 4, BlockSize: 64}
	if err := checkDataDir(dir, l, "durable", "amalgam"); err == nil || !strings.Contains(err.Error(), "holds a shardedpaxos cluster; start it with --protocol shardedpaxos") {
		t.Fatalf("amalgam on a baseline's directory: err = %v", err)
	}
	if err := checkDataDir(dir, l, "durable", "shardedpaxos"); err != nil {
		t.Fatalf("the baseline on its own directory: %v", err)
	}
	amalgam := t.TempDir()
	if err := os.Mkdir(filepath.Join(amalgam, "machine-0"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := checkProtocol(amalgam, "shardedpaxos", "durable"); err == nil || !strings.Contains(err.Error(), "holds an amalgam cluster") {
		t.Fatalf("amalgam directory: err = %v", err)
	}
}
