package main

import (
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

// serve runs one etcd member with stock durability settings.
func serve(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	name := fs.String("name", "m0", "member name")
	dir := fs.String("data-dir", "", "data directory (WAL and bbolt backend)")
	peer := fs.String("peer-url", "http://127.0.0.1:2380", "URL to listen on and advertise for peers")
	clientURL := fs.String("client-url", "http://127.0.0.1:2379", "URL to listen on and advertise for clients (also serves /metrics)")
	initial := fs.String("initial-cluster", "", "name=peer-url,... of every member (default: this member alone)")
	quota := fs.Int64("quota-backend-bytes", 8<<30, "backend size quota (etcd's default is 2 GiB; benchmarks write more without compaction)")
	logLevel := fs.String("log-level", "error", "etcd log level")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" {
		return errors.New("--data-dir is required")
	}
	pu, err := url.Parse(*peer)
	if err != nil {
		return fmt.Errorf("--peer-url: %w", err)
	}
	cu, err := url.Parse(*clientURL)
	if err != nil {
		return fmt.Errorf("--client-url: %w", err)
	}
	cfg := embed.NewConfig()
	cfg.Name, cfg.Dir = *name, *dir
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*pu}, []url.URL{*pu}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*cu}, []url.URL{*cu}
	cfg.InitialCluster = *initial
	if cfg.InitialCluster == "" {
		cfg.InitialCluster = *name + "=" + *peer
	}
	cfg.InitialClusterToken = "amalgam-bench"
	cfg.ClusterState = embed.ClusterStateFlagNew
	cfg.QuotaBackendBytes = *quota
	cfg.LogLevel = *logLevel
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return err
	}
	defer e.Close()
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
	select {
	case <-e.Server.ReadyNotify():
		fmt.Println("ready")
	case <-time.After(2 * time.Minute):
		e.Server.Stop()
		return errors.New("member not ready within 2 minutes")
	case <-stop:
		return nil
	}
	select {
	case err := <-e.Err():
		return err
	case <-stop:
		return nil
	}
}
