# ACK pacing through the real daemon (protocol 1.5, host-agent/ingest.h): a guest that
# asks for an ACK at most every 200 ms gets no more than that, and every frame of its
# stream ACKed. Its window (1 MiB) holds an eighth of the stream and no byte rule is
# asked for, so the stream only ends if the daemon's timer sends the ACKs it held
# back: with no timer, the guest would wait on a full window for good (the test's
# timeout). The same stream without pacing gets an ACK per commit, many more.
. "$1"

# acks GUEST-STDERR: the ACK frames the guest received, and its acked seq
acks() { sed -n 's/.* acked \([0-9]*\), .*, \([0-9]*\) ACKs$/\2 \1/p' "$1"; }

start_daemon --listen "$T/sock" --domain-name vm1
t0=$(date +%s%N)
"$SYNTH_GUEST" --connect "$T/sock" --events 100000 --cpus 2 --seed 7 --window-mb 1 \
	--ack-ms 200 >"$T/paced.out" 2>"$T/paced.err" || fail "synth-guest (paced)"
t1=$(date +%s%N)
read -r n acked < <(acks "$T/paced.err")
frames=$(sed -n 's/.*frames=\([0-9]*\).*/\1/p' "$T/paced.out")
[ -n "${n:-}" ] && [ -n "$frames" ] || fail "guest summary not understood: $(cat "$T/paced.err")"
[ "$acked" = "$frames" ] || fail "paced: acked $acked of $frames frames"
ms=$(( (t1 - t0) / 1000000 ))
# the first ACK at once, then at most one per 200 ms, and BYE's at once
[ "$n" -le $(( ms / 200 + 3 )) ] || fail "paced: $n ACKs in $ms ms (at most $(( ms / 200 + 3 )))"
ok "paced: $n ACKs in $ms ms for $frames frames, all acknowledged"
stop_daemon || fail "daemon exit status"
grep -q "asked for ACK pacing" "$T/daemon.log" || fail "no pacing note in the durable line"

: >"$T/daemon.log"
start_daemon --listen "$T/sock2" --domain-name vm2
"$SYNTH_GUEST" --connect "$T/sock2" --events 100000 --cpus 2 --seed 7 --window-mb 1 \
	>"$T/plain.out" 2>"$T/plain.err" || fail "synth-guest (not paced)"
read -r m acked < <(acks "$T/plain.err")
[ "$acked" = "$frames" ] || fail "not paced: acked $acked of $frames frames"
[ "$m" -gt "$n" ] || fail "not paced: $m ACKs, not more than paced ($n)"
ok "not paced: $m ACKs for the same stream"
stop_daemon || fail "daemon exit status"
