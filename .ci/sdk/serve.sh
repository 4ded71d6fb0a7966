#!/usr/bin/env bash
# Starts a real `sgam serve` for the SDK tests, and stops it.
#
#   bash .ci/sdk/serve.sh start DIR   # build, fresh database, keys, servers; writes DIR/env
#   bash .ci/sdk/serve.sh stop DIR    # stops what start started (by the pids it wrote)
#
# start builds sgam from this checkout into DIR (or uses $SGAM_BIN when set),
# creates a fresh SQLite database in DIR, API keys of four tenants (alpha and
# beta: admin, write and read; gamma: write, with a token budget of 1 a day so
# that its second "extract now" is refused 503; delta: admin, for the tests
# that apply a schema), starts the scripted fake
# model server (.ci/sdk/fakemodel.py, standard library Python: no network, no
# weights) and two servers on free loopback ports over that one database:
#
#   SGAM_URL          the server the tests use: the fake model configured
#                     (extraction now and in the background), --rate-limit 1000
#   SGAM_LIMITED_URL  a second server, no model, --rate-limit 1 (bursts of 2),
#                     so that a 429 can be provoked with SGAM_LIMITED_KEY
#
# It waits until both answer GET /readyz and writes DIR/env: KEY=value lines
# (SGAM_URL, SGAM_LIMITED_URL, the keys, the log files), which the test
# runners read. The servers' logs are DIR/serve.log and DIR/limited.log.
set -euo pipefail

cmd=${1:-}
dir=${2:-}
if [[ -z $cmd || -z $dir ]]; then
	echo "usage: $0 start|stop DIR" >&2
	exit 2
fi
root=$(cd "$(dirname "$0")/../.." && pwd)
python=${SGAM_SDK_PYTHON:-python3}

stop() {
	[[ -f $dir/pids ]] || return 0
	local pid
	# The servers first (they finish requests in flight), then the fake model.
	while read -r pid; do
		kill -TERM "$pid" 2>/dev/null || true
	done <"$dir/pids"
	for _ in $(seq 1 100); do
		local alive=0
		while read -r pid; do
			kill -0 "$pid" 2>/dev/null && alive=1
		done <"$dir/pids"
		[[ $alive == 0 ]] && break
		sleep 0.1
	done
	while read -r pid; do
		kill -KILL "$pid" 2>/dev/null || true
	done <"$dir/pids"
	rm -f "$dir/pids"
}

# wait_addr LOG PID: the address a server logged it serves on.
wait_addr() {
	local log=$1 pid=$2 addr=""
	for _ in $(seq 1 300); do
		addr=$(sed -n 's/.*"msg":"serving","addr":"\([^"]*\)".*/\1/p' "$log" | head -n1)
		[[ -n $addr ]] && break
		if ! kill -0 "$pid" 2>/dev/null; then
			echo "serve.sh: the server exited; its log:" >&2
			cat "$log" >&2
			exit 1
		fi
		sleep 0.1
	done
	if [[ -z $addr ]]; then
		echo "serve.sh: the server did not say where it serves within 30 s; its log:" >&2
		cat "$log" >&2
		exit 1
	fi
	echo "$addr"
}

# wait_ready URL: GET URL/readyz answers 200.
wait_ready() {
	for _ in $(seq 1 300); do
		if "$python" - "$1/readyz" <<'PY' 2>/dev/null; then
import sys, urllib.request
with urllib.request.urlopen(sys.argv[1], timeout=2) as r:
    sys.exit(0 if r.status == 200 else 1)
PY
			return 0
		fi
		sleep 0.1
	done
	echo "serve.sh: $1/readyz did not answer 200 within 30 s" >&2
	exit 1
}

start() {
	mkdir -p "$dir"
	dir=$(cd "$dir" && pwd)
	stop
	local bin=${SGAM_BIN:-}
	if [[ -z $bin ]]; then
		bin=$dir/sgam
		echo "serve.sh: building sgam" >&2
		(cd "$root" && go build -o "$bin" ./cmd/sgam)
	fi
	local db=$dir/sgam.db
	rm -f "$db" "$db"-* "$db".queue*
	"$bin" --db "$db" init >/dev/null

	key() { # key TENANT ROLE: a new key's token
		"$bin" --db "$db" --tenant "$1" --json keys create --role "$2" --name "sdk-tests-$2" |
			"$python" -c 'import json,sys; print(json.load(sys.stdin)["key"])'
	}
	local env=$dir/env.tmp
	: >"$env"
	chmod 600 "$env"
	for tenant in alpha beta; do
		for role in admin write read; do
			echo "SGAM_${tenant^^}_${role^^}_KEY=$(key "$tenant" "$role")" >>"$env"
		done
	done
	echo "SGAM_GAMMA_WRITE_KEY=$(key gamma write)" >>"$env"
	echo "SGAM_DELTA_ADMIN_KEY=$(key delta admin)" >>"$env"
	echo "SGAM_LIMITED_KEY=$(key alpha write)" >>"$env"
	"$bin" --db "$db" --tenant gamma budget set --tokens-per-day 1 >/dev/null

	: >"$dir/pids"
	rm -f "$dir/model.port"
	"$python" "$root/.ci/sdk/fakemodel.py" "$dir/model.port" >"$dir/model.log" 2>&1 &
	echo $! >>"$dir/pids"
	for _ in $(seq 1 100); do
		[[ -s $dir/model.port ]] && break
		sleep 0.1
	done
	[[ -s $dir/model.port ]] || { echo "serve.sh: the fake model server did not start" >&2; cat "$dir/model.log" >&2; exit 1; }
	local model_url="http://127.0.0.1:$(cat "$dir/model.port")/v1"

	SGAM_LLM_BASE_URL=$model_url SGAM_LLM_MODEL=fake-model \
		"$bin" --db "$db" serve --addr 127.0.0.1:0 --rate-limit 1000 --workers 2 --expire-every 0 \
		--llm-attempts 1 --llm-timeout 10s >/dev/null 2>"$dir/serve.log" &
	local main=$!
	echo $main >>"$dir/pids"
	env -u SGAM_LLM_BASE_URL -u SGAM_LLM_MODEL \
		"$bin" --db "$db" serve --addr 127.0.0.1:0 --rate-limit 1 --workers 0 --expire-every 0 >/dev/null 2>"$dir/limited.log" &
	local limited=$!
	echo $limited >>"$dir/pids"

	local url limited_url
	url=http://$(wait_addr "$dir/serve.log" $main)
	limited_url=http://$(wait_addr "$dir/limited.log" $limited)
	wait_ready "$url"
	wait_ready "$limited_url"
	{
		echo "SGAM_URL=$url"
		echo "SGAM_LIMITED_URL=$limited_url"
		echo "SGAM_FAKE_MODEL_URL=$model_url"
		echo "SGAM_SERVE_LOGS=$dir/serve.log:$dir/limited.log"
	} >>"$env"
	mv "$env" "$dir/env"
	echo "serve.sh: serving at $url (rate-limited twin at $limited_url); environment in $dir/env" >&2
}

case $cmd in
start) start ;;
stop) stop ;;
*)
	echo "usage: $0 start|stop DIR" >&2
	exit 2
	;;
esac
