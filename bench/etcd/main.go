// Command amalgam-etcd is the etcd side of amalgam-bench vs-etcd, in its own
// Go module so that etcd's dependencies stay out of Amalgam's.
//
//	amalgam-etcd serve --name m0 --data-dir DIR --peer-url URL --client-url URL --initial-cluster m0=URL,...
//
// runs one stock etcd member (go.etcd.io/etcd/server/v3/embed: fsync on
// every commit) until SIGINT or SIGTERM, printing "ready" once it serves.
//
//	amalgam-etcd load --system etcd|amalgam|shardedpaxos|rspaxos --endpoints A,B --workload write|add ...
//
// runs the closed-loop generator of bench/loadgen against an etcd cluster
// (etcd's Go client) or an amalgam-server dev cluster of Amalgam or a
// baseline (Amalgam's Go client; rspaxos refuses add, loadgen.Unsupported). It prints
// "start" and "end" lines as the measured interval begins and ends, then
// the loadgen.Result as one line of JSON.
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: amalgam-etcd serve|load [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "serve":
		err = serve(os.Args[2:])
	case "load":
		err = load(os.Args[2:], os.Stdout)
	default:
		err = fmt.Errorf("unknown subcommand %q (want serve or load)", os.Args[1])
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "amalgam-etcd: %v\n", err)
		os.Exit(1)
	}
}
