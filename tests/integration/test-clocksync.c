// SPDX-License-Identifier: MIT
/*
 * test-clocksync.c - the clock probes and the per-boot clock map (clocksync.h): probes
 * matched whichever half comes first, bounded and rate limited, foreign and repeated
 * ids ignored; the map keeps the lowest round trip per window, interpolates between
 * samples within their uncertainty, extrapolates with a growing one, converts to the
 * other host clocks; marker events recognised only in the print format's buf field.
 */
#include <glib.h>
#include <stdio.h>
#include <string.h>

#include "clocksync.h"
#include "proto.h"
#include "tap.h"

static HaHostTime at(int64_t mono)
{
	return (HaHostTime){ .mono = mono, .real = mono + 1700000000000000000,
			     .boot_off = 5000, .tai_off = 37000000000 };
}

static void test_probe(void)
{
	g_autoptr(HaClockProbe) p = ha_clock_probe_new(1000);
	HaHostTime t1 = at(1000000), t2 = at(1000000 + 40000);
	const HaClockSample *s;
	uint64_t id, id2, ids[HA_CLOCK_PENDING];
	gint64 now = 10 * G_USEC_PER_SEC;
	guint n;

	CHECK(ha_clock_probe_next(p, now, &t1, &id) && id != 0, "a first probe is due");
	CHECK(!ha_clock_probe_next(p, now + 500000, &t1, &id2), "none within the interval");
	CHECK(!ha_clock_probe_reply(p, id + 1, 0, &t2), "a reply for another id is ignored");
	CHECK(ha_clock_probe_marker(p, id, 5000, 1), "the marker first");
	ha_clock_probe_samples(p, &n);
	CHECK(n == 0, "no sample before the reply");
	CHECK(ha_clock_probe_reply(p, id, 0, &t2), "then the reply");
	s = ha_clock_probe_samples(p, &n);
	CHECK(n == 1 && s[0].guest_ts == 5000 && s[0].cpu == 1 && s[0].mono_lo == 1000000 &&
	      s[0].mono_hi == 1040000 && s[0].real_hi - s[0].real_lo == 40000 &&
	      s[0].tai_off == 37000000000, "one sample: guest ts, cpu, host bounds");
	CHECK(!ha_clock_probe_marker(p, id, 6000, 0) && !ha_clock_probe_reply(p, id, 0, &t2),
	      "a completed probe's id is no longer accepted");
	ha_clock_probe_samples_done(p);
	ha_clock_probe_samples(p, &n);
	CHECK(n == 0, "samples taken");

	/* reply first, then a marker; a failed marker write completes nothing */
	now += 1000000;
	CHECK(ha_clock_probe_next(p, now, &t1, &id), "the next probe after the interval");
	CHECK(ha_clock_probe_reply(p, id, -9, &t2), "a reply saying the marker failed");
	CHECK(!ha_clock_probe_marker(p, id, 7000, 0), "... frees the probe");
	CHECK(ha_clock_probe_stats(p)->failed == 1, "counted as failed");

	/* bounded: HA_CLOCK_PENDING outstanding, then expiry frees them */
	for (guint i = 0; i < HA_CLOCK_PENDING; i++) {
		now += 1000000;
		if (!ha_clock_probe_next(p, now, &t1, &ids[i]))
			break;
		n = i + 1;
	}
	CHECK(n == HA_CLOCK_PENDING, "%u probes outstanding", n);
	now += 1000000;
	CHECK(!ha_clock_probe_next(p, now, &t1, &id), "no more while they are unanswered");
	now += HA_CLOCK_EXPIRE_US;
	CHECK(ha_clock_probe_next(p, now, &t1, &id), "after they expired, probing resumes");
	CHECK(ha_clock_probe_stats(p)->expired >= HA_CLOCK_PENDING - 1, "expiries counted");
	CHECK(!ha_clock_probe_reply(p, ids[0], 0, &t2), "an expired probe's reply is ignored");

	ha_clock_probe_reset(p);
	CHECK(!ha_clock_probe_reply(p, id, 0, &t2), "a reset forgets outstanding probes");
	{
		g_autoptr(HaClockProbe) off = ha_clock_probe_new(0);

		CHECK(!ha_clock_probe_next(off, now, &t1, &id), "interval 0: never a probe");
	}
}

static void test_map(void)
{
	/* guest = mono - 1e12 + drift of 100 ppm; probes at 1 s, round trips 20..100 µs */
	HaClockSample s[40];
	g_autoptr(HaClockMap) m = NULL;
	int64_t host;
	uint64_t unc, g;
	int64_t off;
	guint n = 0;

	for (int i = 0; i < 40; i++) {
		int64_t mono = 2000000000000 + (int64_t)i * 1000000000;
		int64_t rtt = 20000 + (i % 5) * 20000;
		int64_t gt = mono - 1000000000000 + (mono - 2000000000000) / 10000;

		s[n++] = (HaClockSample){
			.guest_ts = (uint64_t)gt, .cpu = 0,
			.mono_lo = mono - rtt / 2, .mono_hi = mono + rtt / 2,
			.real_lo = mono - rtt / 2 + 1000, .real_hi = mono + rtt / 2 + 1000,
			.boot_off = 77, .tai_off = 37,
		};
	}
	m = ha_clockmap_new(s, n);
	CHECK(ha_clockmap_points(m) == 10, "40 s of samples: one point per 4 s window (%u)",
	      ha_clockmap_points(m));
	ha_clockmap_point(m, 0, &g, &off, &unc);
	CHECK(unc == 10000, "each window keeps its lowest round trip (half: %llu ns)",
	      (unsigned long long)unc);
	/* between points: the true host time within the uncertainty */
	{
		bool all = true;

		for (int64_t t = 1000000000000; t < 1000000000000 + 32000000000;
		     t += 123456789) {
			int64_t truth;
			/* invert gt = mono - 1e12 + (mono - 2e12) / 1e4 */
			double mono = ((double)t + 1e12 + 2e12 / 1e4) / (1 + 1e-4);

			truth = (int64_t)mono;
			if (!ha_clockmap_to_host(m, (uint64_t)t, HA_HOSTCLOCK_MONO, &host, &unc) ||
			    llabs(host - truth) > (int64_t)unc + 2)
				all = false;
		}
		CHECK(all, "interpolated host mono within its uncertainty over 32 s");
	}
	CHECK(ha_clockmap_to_host(m, (uint64_t)s[8].guest_ts, HA_HOSTCLOCK_REALTIME, &host,
				  &unc) && llabs(host - (s[8].mono_lo + s[8].mono_hi) / 2 - 1000) <=
	      (int64_t)unc, "realtime: mono + the sample's realtime offset");
	{
		int64_t mono, boot, tai, real;

		ha_clockmap_to_host(m, (uint64_t)s[8].guest_ts, HA_HOSTCLOCK_MONO, &mono, &unc);
		ha_clockmap_to_host(m, (uint64_t)s[8].guest_ts, HA_HOSTCLOCK_BOOT, &boot, &unc);
		ha_clockmap_to_host(m, (uint64_t)s[8].guest_ts, HA_HOSTCLOCK_REALTIME, &real,
				    &unc);
		ha_clockmap_to_host(m, (uint64_t)s[8].guest_ts, HA_HOSTCLOCK_TAI, &tai, &unc);
		CHECK(boot - mono == 77 && tai - real == 37, "boot and tai offsets applied");
	}
	/* far after the last sample: the last offset, a growing uncertainty */
	{
		uint64_t u1, u2;
		uint64_t last = s[39].guest_ts;

		ha_clockmap_to_host(m, last + 1000000000, HA_HOSTCLOCK_MONO, &host, &u1);
		ha_clockmap_to_host(m, last + 100000000000, HA_HOSTCLOCK_MONO, &host, &u2);
		CHECK(u2 > u1 && u2 >= 100000000000 / 1000000 * HA_CLOCK_DRIFT_PPM,
		      "extrapolation: uncertainty grows with distance (%llu ns at 100 s)",
		      (unsigned long long)u2);
	}
	{
		g_autoptr(HaClockMap) empty = ha_clockmap_new(NULL, 0);

		host = 42;
		CHECK(ha_clockmap_points(empty) == 0 &&
		      !ha_clockmap_to_host(empty, 5, HA_HOSTCLOCK_MONO, &host, &unc) && host == 42,
		      "no samples: no host time, nothing written");
	}
	{
		HaHostClock c;

		CHECK(ha_host_clock_parse("mono", &c) && c == HA_HOSTCLOCK_MONO &&
		      ha_host_clock_parse("realtime", &c) && c == HA_HOSTCLOCK_REALTIME &&
		      !ha_host_clock_parse("local", &c) &&
		      !strcmp(ha_host_clock_name(HA_HOSTCLOCK_TAI), "tai"), "clock names");
	}
}

static const char print_fmt[] =
	"name: print\nID: 5\nformat:\n"
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
	"\tfield:unsigned long ip;\toffset:8;\tsize:8;\tsigned:0;\n"
	"\tfield:char buf[];\toffset:16;\tsize:0;\tsigned:1;\n\n"
	"print fmt: \"%ps: %s\", (void *)REC->ip, REC->buf\n";

static void test_marker(void)
{
	HaMarkerFormat mf = { .type = -1 };
	uint8_t ev[64] = { 0 };
	uint64_t id = 0;
	long k;

	CHECK(ha_marker_format_parse(print_fmt, sizeof(print_fmt) - 1, &mf) && mf.type == 5 &&
	      mf.buf_off == 16, "print format: id 5, buf at 16");
	CHECK(!ha_marker_format_parse("name: x\nID: 9\n", 14, &(HaMarkerFormat){ 0 }),
	      "a format without buf[] is not the marker's");
	k = smp_time_marker(0xabcdef, (char *)ev + 16, sizeof(ev) - 16);
	ev[16 + k] = '\n';
	CHECK(ha_marker_event_id(&mf, 5, ev, (uint32_t)(16 + k + 2), &id) && id == 0xabcdef,
	      "a marker event gives its probe id");
	CHECK(!ha_marker_event_id(&mf, 6, ev, (uint32_t)(16 + k + 2), &id),
	      "another event type is not a marker");
	CHECK(!ha_marker_event_id(&mf, 5, ev, 16 + 10, &id), "a cut marker is not one");
	CHECK(!ha_marker_event_id(&mf, 5, ev, 8, &id), "an event shorter than buf's offset");
	memcpy(ev + 16, "user text\n", 10);
	CHECK(!ha_marker_event_id(&mf, 5, ev, 28, &id), "a user's trace_marker text is not one");
}

int main(void)
{
	test_probe();
	test_map();
	test_marker();
	return tap_done();
}
