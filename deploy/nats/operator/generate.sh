#!/bin/sh
# Regenerates the operator example with nsc (github.com/nats-io/nsc, v2.15):
# an operator with a signing key and the system account SYS, the account
# HOOKBUS with JetStream and a signing key, and two users: admin (everything
# in HOOKBUS: it provisions) and loop (a worker: may not create, update,
# delete or purge a stream). Writes resolver.conf (the operator's and the
# accounts' JWTs, preloaded into a memory resolver) and the users' creds
# files here. Run from this directory:  sh generate.sh
set -eu
H=$(mktemp -d)
trap 'rm -rf "$H"' EXIT
nsc() { command nsc --data-dir "$H/stores" --keystore-dir "$H/keys" --config-dir "$H/config" "$@"; }
nsc add operator --generate-signing-key --sys --name hookbus
nsc edit operator --require-signing-keys --account-jwt-server-url nats://127.0.0.1:4222
nsc add account HOOKBUS
nsc edit account HOOKBUS --sk generate --js-mem-storage -1 --js-disk-storage -1 --js-streams -1 --js-consumer -1
nsc add user --account HOOKBUS admin
nsc add user --account HOOKBUS loop \
  --deny-pub '$JS.API.STREAM.CREATE.>,$JS.API.STREAM.UPDATE.>,$JS.API.STREAM.DELETE.>,$JS.API.STREAM.PURGE.>'
nsc generate config --mem-resolver --config-file resolver.conf --force
cp "$H/keys/creds/hookbus/HOOKBUS/admin.creds" "$H/keys/creds/hookbus/HOOKBUS/loop.creds" .
