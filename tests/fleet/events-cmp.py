#!/usr/bin/env python3
# events-cmp.py UNION FLEET: the fleet's `report --clickhouse events --json` (FLEET: one
# line per boot with host, domain, boot_id) against the union of the stores' `report
# events --json` (UNION: lines "HOST DOMAIN JSON", one per boot). Equal when both hold
# the same events, byte for byte (text, pid, cpu, ts, the whole stack object), as many
# times each; the order of events with the same timestamp may differ. Prints the
# number of events.
#
# Events are compared as the JSON texts both print: each line's "events" array split
# at ',{"ts":' (a bare quote cannot occur inside a JSON string, so this splits
# between events only); the fleet's lines are also parsed, so that they are valid
# JSON with as many events as texts (the same texts on the stores' side are then too).
import collections
import json
import re
import sys

SEP = ',{"ts":'


def events(line, doc=None):
    arr = line[line.index('"events":[') + len('"events":['):line.rindex(']}')]
    parts = arr.split(SEP) if arr else []
    parts = [parts[0]] + ['{"ts":' + p for p in parts[1:]] if parts else []
    if doc is not None and len(parts) != len(doc["events"]):
        sys.exit(f"boot {doc['boot']}: {len(parts)} event texts, {len(doc['events'])} events")
    return parts


union = collections.Counter()
with open(sys.argv[1]) as f:
    for line in f:
        host, domain, doc = line.rstrip("\n").split(" ", 2)
        boot = int(re.match(r'\{"boot":(\d+),', doc).group(1))
        for ev in events(doc):
            union[(host, domain, boot, ev)] += 1
fleet = collections.Counter()
with open(sys.argv[2]) as f:
    for line in f:
        line = line.rstrip("\n")
        d = json.loads(line)
        for ev in events(line, d):
            fleet[(d["host"], d["domain"], d["boot"], ev)] += 1
if union != fleet:
    missing = union - fleet
    extra = fleet - union
    print(f"{sum(missing.values())} events of the stores not in the fleet, "
          f"{sum(extra.values())} in the fleet not in the stores")
    for k in list(missing)[:2]:
        print("missing:", k[:3], k[3][:300])
    for k in list(extra)[:2]:
        print("extra:", k[:3], k[3][:300])
    sys.exit(1)
print(sum(union.values()))
