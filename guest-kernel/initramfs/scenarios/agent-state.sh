# What stackmap-guestd has done so far, read from /proc and tracefs, so that a guest
# scenario waits on state, never on time. Sourced (". /scenarios/agent-state.sh") by
# the scenarios that run the agent: tests/e2e-stream/stream.sh, the demo's demo.sh,
# the libvirt tests' lv-scenario.sh and the agent's own e2e-init.sh. The caller sets
# T (tracefs) and AGENT (the agent's pid) and defines fail MESSAGE, which reports the
# failure and normally ends the scenario (where it returns, the wait returns 1).

# streaming: the agent has every CPU's trace_pipe_raw open, and stack_map_delta when
# the kernel has one. From then on what the ring buffers hold is its to read, lost
# only if they overrun, and a map reset keeps the entries it has not read for it
# (it opens the delta file after its metadata snapshot, seconds of kallsyms on a
# loaded host: a reset before that frees the first epoch's stacks with no reader).
streaming() {
	_open=0 _cpus=0 _delta=0
	[ -e $T/stack_map_delta ] || _delta=1
	for _f in /proc/$AGENT/fd/*; do
		case "$(readlink "$_f" 2> /dev/null)" in
		*/per_cpu/cpu*/trace_pipe_raw) _open=$((_open + 1)) ;;
		*/stack_map_delta) _delta=1 ;;
		esac
	done
	for _f in $T/per_cpu/cpu*; do _cpus=$((_cpus + 1)); done
	[ $_open -ge $_cpus ] && [ $_delta = 1 ]
}

# rb_sum FIELD...: per CPU, in CPU order, the sum of these fields of its ring-buffer
# stats ("read events", "entries", "overrun", ...)
rb_sum() {
	for _d in $T/per_cpu/cpu*; do
		for _k in "$@"; do
			awk -v k="$_k:" 'index($0, k) == 1 { print $NF }' $_d/stats
		done | awk '{ n += $1 } END { print n + 0 }'
	done
}

# held: per CPU, what the agent will have read once it has caught up with the ring
# buffers as they are now (read events + entries)
held() { rb_sum 'read events' entries; }

# read_past COUNT...: every CPU's "read events" has reached its COUNT (CPU order)
read_past() {
	for _r in $(rb_sum 'read events'); do
		[ "$_r" -ge "$1" ] || return 1
		shift
	done
}

# port_sent: bytes the guest has put on the org.stackmap.0 port (virtio_console's
# debugfs); empty without such a port
port_sent() {
	for _f in /sys/kernel/debug/virtio-ports/*; do
		grep -qx 'name: org.stackmap.0' "$_f" && sed -n 's/^bytes_sent: //p' "$_f"
	done
}
sent_past() { [ "$(port_sent)" -gt "$1" ]; }

# sent_held: every event the ring buffers hold now is on its way to the host: the
# agent has read it, and the port has carried bytes since that read (the agent
# writes its frames in order, right after each read)
sent_held() {
	# shellcheck disable=SC2046
	until_state "read up to the ring buffers' events" read_past $(held) || return 1
	_sent=$(port_sent)
	[ -n "$_sent" ] || { fail "no org.stackmap.0 port in /sys/kernel/debug/virtio-ports"; return 1; }
	until_state "sent past the ring buffers' events" sent_past "$_sent"
}

# until_state WHAT CMD...: poll CMD every 50 ms while the agent runs, at most 60 s
until_state() {
	_what=$1
	shift
	_i=0
	until "$@"; do
		kill -0 "$AGENT" 2> /dev/null ||
			{ fail "stackmap-guestd exited before $_what"; return 1; }
		[ $_i -lt 1200 ] || { fail "not $_what within 60 s"; return 1; }
		_i=$((_i + 1))
		usleep 50000
	done
}
