# The bookkeeping the SDKs' test scripts share, sourced by python.sh and
# typescript.sh after they set $name (their file name, for messages):
# $root (the checkout), $work (a temporary directory removed at the end, or
# $SGAM_SDK_WORK, kept), $serve (serve.sh's directory in it), $start (for
# the time the script took), and an EXIT trap that stops the servers,
# shows the server's last log lines when the script failed, and exits with
# the script's status.
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
keep=${SGAM_SDK_WORK:+1}
work=${SGAM_SDK_WORK:-$(mktemp -d -t "sgam-sdk-${name%.sh}.XXXXXX")}
mkdir -p "$work"
start=$(date +%s)
serve=$work/serve

finish() {
	local status=$?
	bash "$root/.ci/sdk/serve.sh" stop "$serve" || true
	if [[ $status != 0 && -f $serve/serve.log ]]; then
		echo "$name: the server's last log lines:" >&2
		tail -n 20 "$serve/serve.log" >&2 || true
	fi
	[[ -n $keep ]] || rm -rf "$work"
	exit $status
}
trap finish EXIT
