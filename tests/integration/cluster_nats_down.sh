#!/bin/sh
# cluster_same.sh with one of the three nats-server processes killed (kill -9)
# while the log goes through the cluster, and started again: every message
# acknowledged and stored, none lost; a generated message that a takeover
# emits again carries the same corral.cluster_id and values.
KILL_NATS=1 exec sh "$(dirname "$0")/cluster_same.sh"
