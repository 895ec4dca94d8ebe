#!/usr/bin/env bash
# Fetches the real n8n node-type catalogue (the `nodes.json` and `credentials.json` files that the
# npm packages `n8n-nodes-base` and `@n8n/n8n-nodes-langchain` ship under dist/types/) into a
# directory laid out as `--catalogue DIR` and AGENTGRAPH_N8N_CATALOGUE expect.
#
#   scripts/fetch-n8n-catalogue.sh [DIR] [VERSION]     # default DIR: ./.n8n-catalogue, VERSION: latest
#
# With an `agentgraph` binary on PATH (or in $AGENTGRAPH_BIN) this is `agentgraph catalogue fetch
# --version VERSION` into a scratch data folder, copied to DIR: VERSION is a dist-tag or an n8n
# version (the node packages that release pins). Otherwise it needs npm and runs `npm pack`:
# VERSION is then a dist-tag or a version of both node packages. For the builder alone,
# `agentgraph catalogue fetch` is enough (it stores the catalogue where chat, serve and validate
# find it). The packages are under n8n's Sustainable Use License: keep the files for your own use.
set -euo pipefail
dir="${1:-./.n8n-catalogue}"
version="${2:-latest}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
bin="${AGENTGRAPH_BIN:-$(command -v agentgraph || true)}"
if [ -n "$bin" ]; then
  AGENTGRAPH_DATA_DIR="$work" "$bin" catalogue fetch --version "$version"
  for short in n8n-nodes-base n8n-nodes-langchain; do
    [ -d "$work/catalogue/npm/$short" ] || continue
    mkdir -p "$dir/$short"
    cp "$work/catalogue/npm/$short/"*.json "$dir/$short/"
    echo "$short -> $dir/$short"
  done
else
  command -v npm >/dev/null || { echo "needs an agentgraph binary on PATH or npm (e.g. apt-get install npm)" >&2; exit 2; }
  for pkg in n8n-nodes-base @n8n/n8n-nodes-langchain; do
    short="${pkg##*/}"
    (cd "$work" && npm pack --silent "$pkg@$version" >/dev/null)
    tarball="$(ls "$work"/*"$short"-*.tgz | head -n1)"
    mkdir -p "$dir/$short" "$work/$short"
    tar -xzf "$tarball" -C "$work/$short"
    for f in nodes.json credentials.json; do
      if [ -f "$work/$short/package/dist/types/$f" ]; then
        cp "$work/$short/package/dist/types/$f" "$dir/$short/$f"
      fi
    done
    rm -f "$tarball"
    echo "$pkg -> $dir/$short"
  done
fi
echo "use it with: AGENTGRAPH_N8N_CATALOGUE=$dir agentgraph validate workflow.json"
