#!/usr/bin/env bash
# Fetches the real n8n node-type catalogue (the `nodes.json` files that the npm packages
# `n8n-nodes-base` and `@n8n/n8n-nodes-langchain` ship under dist/types/) into a directory laid
# out as `agentgraph validate --catalogue DIR` and AGENTGRAPH_N8N_CATALOGUE expect.
#
#   scripts/fetch-n8n-catalogue.sh [DIR] [VERSION]     # default DIR: ./.n8n-catalogue, VERSION: latest
#
# Needs npm. The packages are under n8n's Sustainable Use License: keep the files for your own use.
set -euo pipefail
dir="${1:-./.n8n-catalogue}"
version="${2:-latest}"
command -v npm >/dev/null || { echo "npm is needed (e.g. apt-get install npm)" >&2; exit 2; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
for pkg in n8n-nodes-base @n8n/n8n-nodes-langchain; do
  short="${pkg##*/}"
  (cd "$work" && npm pack --silent "$pkg@$version" >/dev/null)
  tarball="$(ls "$work"/*"$short"-*.tgz | head -n1)"
  mkdir -p "$dir/$short" "$work/$short"
  tar -xzf "$tarball" -C "$work/$short"
  for f in nodes.json credentials.json; do
    cp "$work/$short/package/dist/types/$f" "$dir/$short/$f"
  done
  rm -f "$tarball"
  echo "$pkg -> $dir/$short"
done
echo "use it with: AGENTGRAPH_N8N_CATALOGUE=$dir agentgraph validate workflow.json"
