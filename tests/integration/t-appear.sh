# host-agent started before QEMU (-chardev socket,server=on) connects as soon as the
# socket appears, not at its backoff's next try, which by then may be 5 s away while
# the guest boots and its agent's window fills. The wait is let grow to the longest
# first: the tries are counted in the daemon's debug log.
. "$1"
failed() { grep -c "vm1: connect $T/sock: " "$T/daemon.log"; }
longest_wait() { [ "$(failed)" -ge 8 ]; }
export G_MESSAGES_DEBUG=all
start_daemon --socket "$T/sock" --domain-name vm1
unset G_MESSAGES_DEBUG
# tries at 0, 0, 0.1, 0.3, 0.7, 1.5, 3.1 and 6.3 s: the next one is 5 s away
wait_for longest_wait || fail "the daemon did not retry ($(failed) tries)"
before=$(failed)
"$SYNTH_GUEST" --listen "$T/sock" --events 20000 --seed 9 --expect "$T/expect" \
	>"$T/guest.out" 2>"$T/guest.err" &
GUEST=$!
wait_for daemon_says "connected (socket" || fail "not connected"
daemon_says "$T/sock appeared, connecting" ||
	fail "connected by the backoff's timer, not when the socket appeared"
[ "$(failed)" = "$before" ] || fail "$(($(failed) - before)) failed tries after the socket appeared"
wait "$GUEST" || { cat "$T/guest.err"; fail "guest"; }
wait_for daemon_says "BYE" || fail "no BYE"
stop_daemon || fail "daemon exit status"
integrity_ok "$(db_of vm1)"
compare_folded vm1 "$T/expect"
ok "connected when the socket appeared, after $before tries; the stream stored whole"
