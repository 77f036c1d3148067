#!/usr/bin/env bash
# CI's check of the container image (.ci/run; docs/operations.md, "The container image"): builds
# it with `npm run image`, prints its size and largest layers, starts the service from it (the
# image's own entrypoint and command, host network, an external PostgreSQL: the repository's
# embedded one in a process of its own), measures the time until /readyz answers, and checks
# that SIGTERM stops it with exit 0. It starts the image twice on the same database: the first
# start applies every migration, the second is an ordinary restart. Then it runs the built-in
# models' program in the image, as a Kubernetes job would.
# Cleans up everything it made: containers, the database, the image, the local base image when it
# had to assemble one, and buildah's cache-mount directory when it made it. Needs root (buildah)
# and `npm ci` done (the database helper).
set -euo pipefail
cd "$(dirname "$0")/.."

PORT=18766
MAX_BYTES=$((400 * 1000 * 1000))
tag="media-platform:$(node -p 'require("./package.json").version')"
local_base=localhost/node:24-bookworm-slim
work=$(mktemp -d)
chmod 755 "$work"
base_existed=""
buildah inspect --type image "$local_base" >/dev/null 2>&1 && base_existed=yes
# buildah's directory for the build's cache mounts (npm's cache, about 350 MB).
cache_dir=${TMPDIR:-/var/tmp}/buildah-cache
cache_existed=""
[ -e "$cache_dir" ] && cache_existed=yes
pg_pid=""
ctr=""
cleanup() {
  set +e # every step, whatever failed before
  [ -n "$ctr" ] && buildah rm "$ctr" >/dev/null 2>&1
  if [ -n "$pg_pid" ]; then kill -TERM "$pg_pid" 2>/dev/null && wait "$pg_pid" 2>/dev/null; fi
  buildah rmi "$tag" >/dev/null 2>&1
  [ -z "$base_existed" ] && buildah rmi "$local_base" >/dev/null 2>&1
  [ -z "$cache_existed" ] && rm -rf "$cache_dir"
  rm -rf "$work"
  true
}
trap cleanup EXIT

load() { cut -d' ' -f1-3 /proc/loadavg; }
check_start=$(date +%s)
echo "image-check: load average $(load) (the machine has $(nproc) cores)"
IMAGE_BUILDER=buildah npm run --silent image
echo "image-check: built $tag in $(($(date +%s) - check_start)) s (load average $(load))"

# Size: the uncompressed layers, as `buildah push --disable-compression` writes them.
buildah push --quiet --disable-compression "$tag" "dir:$work/layers" >/dev/null
node - "$work/layers" "$MAX_BYTES" <<'JS'
const fs = require('node:fs');
const path = require('node:path');
const [dir, max] = process.argv.slice(2);
const manifest = JSON.parse(fs.readFileSync(path.join(dir, 'manifest.json'), 'utf8'));
const config = JSON.parse(fs.readFileSync(path.join(dir, manifest.config.digest.replace('sha256:', '')), 'utf8'));
const steps = (config.history ?? []).filter((h) => !h.empty_layer).map((h) => h.created_by ?? '');
const layers = manifest.layers.map((l, i) => ({ bytes: l.size, file: l.digest.slice(7), step: steps[i] ?? '?' }));
const total = layers.reduce((n, l) => n + l.bytes, 0);
const mb = (n) => `${(n / 1e6).toFixed(1)} MB`;
console.log(`image-check: size ${mb(total)} uncompressed, ${layers.length} layers`);
if (total > Number(max)) {
  console.error(`image-check: the image exceeds ${mb(Number(max))}`);
  process.exit(1);
}
fs.writeFileSync(path.join(dir, 'largest'), [...layers].sort((a, b) => b.bytes - a.bytes).slice(0, 3)
  .map((l) => `${l.file} ${mb(l.bytes)} ${l.step.replace(/\s+/g, ' ').slice(0, 80)}`).join('\n') + '\n');
JS
# The largest layers, and what fills each (by package, or directory two levels down).
while read -r file size unit step; do
  echo "image-check: layer of $size $unit ($step):"
  tar tvf "$work/layers/$file" | awk '{ n = split($6, p, "/"); k = p[1] "/" p[2] "/" p[3]; if (p[3] ~ /^@/) k = k "/" p[4]; s[k] += $3 }
    END { for (k in s) printf "%9.1f MB  %s\n", s[k] / 1e6, k }' | sort -rn | sed -n 1,6p
done <"$work/layers/largest"
rm -rf "$work/layers"

# The external database.
mkdir -p "$work/pg"
pg_port=$(node -e 'const s = require("node:net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })')
node -r @swc-node/register test/helpers/pg-child.ts "$work/pg" "$pg_port" >"$work/pg.url" 2>"$work/pg.log" &
pg_pid=$!
for _ in $(seq 1 120); do
  [ -s "$work/pg.url" ] && break
  kill -0 "$pg_pid" 2>/dev/null || { echo "image-check: PostgreSQL did not start"; cat "$work/pg.log"; exit 1; }
  sleep 1
done
database_url=$(head -1 "$work/pg.url")

# The image's own entrypoint and command, as a container engine runs them. `buildah run` gives
# no PID namespace, so tini is not PID 1 here: it registers as the subreaper instead.
mapfile -t argv < <(buildah inspect --type image --format \
  '{{range .Docker.Config.Entrypoint}}{{println .}}{{end}}{{range .Docker.Config.Cmd}}{{println .}}{{end}}' "$tag")
data="$work/data"
mkdir -p "$data"
chown 10001:10001 "$data"

descendants() {
  local c
  for c in $(pgrep -P "$1"); do
    echo "$c"
    descendants "$c"
  done
}

run_once() {
  local label=$1 log="$work/$1.log" t0 ready="" pid
  ctr=$(buildah from --quiet --pull=false "$tag")
  t0=$(date +%s%N)
  buildah run --isolation chroot --network host --volume "$data:/var/lib/media-platform" \
    --env "DATABASE_URL=$database_url" --env "PORT=$PORT" --env "HOST=127.0.0.1" \
    --env "BRIDGE_SECRET_KEY=$(node -p "require('node:crypto').randomBytes(32).toString('hex')")" --env "BRIDGE_PORT=$((PORT + 1))" \
    --env LOG_LEVEL=warn --env TINI_SUBREAPER=1 "$ctr" -- "${argv[@]}" >"$log" 2>&1 &
  pid=$!
  for _ in $(seq 1 1200); do
    if curl -fsS "http://127.0.0.1:$PORT/readyz" >/dev/null 2>&1; then ready=yes; break; fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
  done
  if [ -z "$ready" ]; then
    echo "image-check: the image did not become ready ($label):"; cat "$log"; kill "$pid" 2>/dev/null; exit 1
  fi
  local ms=$((($(date +%s%N) - t0) / 1000000)) p tini="" node cpu="?"
  # An engine signals the container's PID 1: here, the tini below `buildah run`.
  for p in $(descendants "$pid"); do [ "$(cat "/proc/$p/comm" 2>/dev/null)" = tini ] && tini=$p; done
  # The service's CPU time until then (tini's child): what the start costs on an idle machine,
  # where the wall-clock time on a loaded one is mostly waiting for a core.
  [ -n "$tini" ] || { echo "image-check: no tini in the container's processes"; exit 1; }
  node=$(pgrep -P "$tini" | head -1 || true)
  if [ -n "$node" ]; then
    cpu=$(awk -v hz="$(getconf CLK_TCK)" '{ printf "%d", ($14 + $15) * 1000 / hz }' "/proc/$node/stat")
  fi
  echo "image-check: $label: /readyz answered 200 after $ms ms (the service used $cpu ms of CPU; load average $(load))"
  kill -TERM "$tini"
  if ! wait "$pid"; then echo "image-check: $label: SIGTERM did not stop it with exit 0:"; cat "$log"; exit 1; fi
  echo "image-check: $label: SIGTERM stopped it with exit 0"
  buildah rm "$ctr" >/dev/null
  ctr=""
}
# Without DATABASE_URL: the image has no embedded PostgreSQL, and says so in one line, exit 2.
ctr=$(buildah from --quiet --pull=false "$tag")
status=0
buildah run --isolation chroot --network host --volume "$data:/var/lib/media-platform" \
  --env TINI_SUBREAPER=1 --env "PORT=$PORT" --env "HOST=127.0.0.1" --env "BRIDGE_SECRET_KEY=$(node -p "require('node:crypto').randomBytes(32).toString('hex')")" \
  "$ctr" -- "${argv[@]}" >"$work/no-db.log" 2>&1 || status=$?
if [ "$status" != 2 ] || ! grep -q 'set DATABASE_URL' "$work/no-db.log"; then
  echo "image-check: without DATABASE_URL the image should exit 2 naming it; exit $status:"; cat "$work/no-db.log"; exit 1
fi
echo "image-check: without DATABASE_URL: exit 2, \"$(head -1 "$work/no-db.log")\""
buildah rm "$ctr" >/dev/null
ctr=""

run_once "first start (migrations)"
run_once "restart"

# The built-in models' program, as a Kubernetes job runs it in this image (KUBERNETES_BUILTIN_IMAGE):
# what was left out of node_modules must not be what it loads (sharp, tesseract.js and its data).
job="$work/job"
mkdir -p "$job/out"
printf '<svg xmlns="http://www.w3.org/2000/svg" width="96" height="48"><rect width="48" height="48"/></svg>' >"$job/in.svg"
printf 'one two\nthree\n' >"$job/in.txt"
chown -R 10001:10001 "$job"
ctr=$(buildah from --quiet --pull=false "$tag")
for args in "wordcount in.txt" "thumbnail in.svg --width=32" "ocr out/thumbnail.png"; do
  # shellcheck disable=SC2086
  if ! out=$(buildah run --isolation chroot --network host --volume "$job:/job" --workingdir /job \
    --env OUTPUT_DIR=/job/out "$ctr" -- /usr/local/bin/node /app/dist/src/demo-models/media-demo.js $args 2>&1); then
    echo "image-check: media-demo $args failed:"; echo "$out"; exit 1
  fi
  echo "image-check: media-demo $args: $(tail -1 <<<"$out")"
done
buildah rm "$ctr" >/dev/null
ctr=""
echo "image-check: passed in $(($(date +%s) - check_start)) s"
