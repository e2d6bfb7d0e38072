#!/usr/bin/env bash
# Regenerates src/gen/ from the .proto files with the pinned compiler
# (protoc 36.2.0 from npm, ts-proto 2.18.0: package.json). CI runs it and
# fails when `git status --porcelain -- proto/src/gen` is not empty after it.
set -euo pipefail
cd "$(dirname "$0")"
bin=../node_modules/.bin
rm -rf src/gen
mkdir -p src/gen
"$bin/protoc" \
  --plugin=protoc-gen-ts_proto="$bin/protoc-gen-ts_proto" \
  --ts_proto_out=src/gen \
  --ts_proto_opt=outputServices=grpc-js,esModuleInterop=true,importSuffix=.js,env=node,forceLong=bigint,useOptionals=none,oneof=unions-value,annotateFilesWithVersion=false,useDate=true \
  -I . ./*.proto
