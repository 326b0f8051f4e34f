#!/usr/bin/env python3
"""Check the migrations' versions (Python 3 standard library only).

Diesel runs the directories under migrations/ in the order of their versions (the
`YYYY-MM-DD-HHMMSS` before the first `_`), and every database records the versions it has
applied. So:
1. Every directory is named `YYYY-MM-DD-HHMMSS_name` (name: lower case, digits, `_`).
2. Every version is a real UTC time (a day of its month, hour 00-23, minutes and seconds
   00-59) that is not in the future, except the GRANDFATHERED ones. "Not in the future":
   no later than now or, while the latest of APPLIED is still ahead of the clock, than the
   end of that version's day (the next migration then takes a version just after it).
3. Every version of APPLIED is still there: renaming an applied version makes every
   database run that migration a second time.
4. A version not in APPLIED (a new migration) sorts after every version of APPLIED, so a
   fresh database and an upgraded one run the migrations in the same order.

Usage: scripts/check-migrations.py [--dir DIR] [--now YYYY-MM-DD-HHMMSS]
       scripts/check-migrations.py --self-test
Exit code 1 naming each offending directory, 0 when clean.
"""

import argparse
import datetime
import os
import re
import sys
import tempfile
import unittest

# The versions databases have applied (every migration that existed when this check was
# written). They are never renamed, even the GRANDFATHERED ones; a new migration sorts
# after all of them.
APPLIED = [
    "2026-11-21-000001",
    "2026-11-21-000002",
    "2026-11-21-000003",
    "2026-11-23-140001",
    "2026-11-23-140014",
    "2026-11-23-220001",
    "2026-11-23-280001",
    "2026-11-25-100001",
    "2026-11-25-100002",
    "2026-11-25-200001",
    "2026-11-25-400001",
    "2026-11-25-500001",
    "2026-11-25-600001",
    "2026-11-25-600002",
    "2026-11-25-600003",
    "2026-11-25-700001",
    "2026-11-25-800001",
    "2026-11-25-950001",
    "2026-11-27-100001",
    "2026-11-28-100001",
    "2026-11-28-100002",
    "2026-11-29-100001",
    "2026-11-29-200001",
    "2026-11-29-200002",
    "2026-11-30-100001",
    "2026-11-30-300001",
    "2026-11-30-500001",
    "2026-11-30-600001",
    "2026-12-01-100001",
    "2026-12-01-100002",
    "2026-12-02-100001",
]

# Applied versions that break rule 2, kept as they are because databases record them.
# Written on 2026-11-29: the ones dated after that day were chosen to sort after the others.
GRANDFATHERED = {
    "2026-11-23-280001": "hour 28",
    "2026-11-25-400001": "hour 40",
    "2026-11-25-500001": "hour 50",
    "2026-11-25-600001": "hour 60",
    "2026-11-25-600002": "hour 60",
    "2026-11-25-600003": "hour 60",
    "2026-11-25-700001": "hour 70",
    "2026-11-25-800001": "hour 80",
    "2026-11-25-950001": "hour 95",
    "2026-11-30-100001": "dated after the day it was written",
    "2026-11-30-300001": "hour 30, dated after the day it was written",
    "2026-11-30-500001": "hour 50, dated after the day it was written",
    "2026-11-30-600001": "hour 60, dated after the day it was written",
    "2026-12-01-100001": "dated after the day it was written",
    "2026-12-01-100002": "dated after the day it was written",
    "2026-12-02-100001": "dated after the day it was written",
}

NAME = re.compile(r"^(\d{4}-\d{2}-\d{2}-\d{6})_[a-z0-9_]+$")
FORMAT = "%Y-%m-%d-%H%M%S"


def parse_time(version):
    """The version as a time, or None when it is not a real one."""
    try:
        return datetime.datetime.strptime(version, FORMAT)
    except ValueError:
        return None


def latest_allowed(now):
    """The latest time a version may name (rule 2)."""
    last_day = datetime.datetime.strptime(max(APPLIED)[:10], "%Y-%m-%d").date()
    return max(now, datetime.datetime.combine(last_day, datetime.time(23, 59, 59)))


def check(directory, now):
    """Every problem of the migrations in `directory`, one line each."""
    problems = []
    versions = set()
    limit = latest_allowed(now)
    latest_applied = max(APPLIED)
    for entry in sorted(os.listdir(directory)):
        if not os.path.isdir(os.path.join(directory, entry)):
            continue
        m = NAME.match(entry)
        if not m:
            problems.append(f"{entry}: not named YYYY-MM-DD-HHMMSS_name (lower case, digits, _)")
            continue
        version = m.group(1)
        versions.add(version)
        if version in GRANDFATHERED:
            continue
        at = parse_time(version)
        if at is None:
            problems.append(f"{entry}: {version} is not a real time (hour 00-23, minutes and seconds 00-59, a day of the month)")
        elif at > limit:
            problems.append(f"{entry}: {version} is in the future (the latest allowed now is {limit.strftime(FORMAT)})")
        if version not in APPLIED and version <= latest_applied:
            problems.append(
                f"{entry}: a new migration must sort after every applied one; use a version after {latest_applied}"
            )
    for version in APPLIED:
        if version not in versions:
            problems.append(
                f"{version}: an applied migration is missing or was renamed; databases record applied versions, restore its name"
            )
    return problems


class SelfTest(unittest.TestCase):
    NOW = datetime.datetime(2026, 11, 29, 6, 0, 0)

    def run_check(self, extra=(), drop=(), now=NOW):
        with tempfile.TemporaryDirectory() as d:
            for v in APPLIED:
                if v not in drop:
                    os.mkdir(os.path.join(d, v + "_m"))
            for name in extra:
                os.mkdir(os.path.join(d, name))
            return check(d, now)

    def test_every_grandfathered_version_is_applied(self):
        self.assertEqual(set(GRANDFATHERED) - set(APPLIED), set())

    def test_the_applied_ones_pass(self):
        self.assertEqual(self.run_check(), [])

    def test_a_new_one_after_every_applied_one_passes(self):
        self.assertEqual(self.run_check(["2026-12-02-100002_next"]), [])
        later = datetime.datetime(2027, 1, 10, 12, 0, 0)
        self.assertEqual(self.run_check(["2027-01-10-110000_next"], now=later), [])

    def test_a_new_one_dated_today_before_the_grandfathered_ones_fails(self):
        problems = self.run_check(["2026-11-29-055900_today"])
        self.assertEqual(len(problems), 1)
        self.assertIn("must sort after every applied one", problems[0])

    def test_an_impossible_hour_fails(self):
        problems = self.run_check(["2026-12-02-280001_late"])
        self.assertTrue(any("not a real time" in p for p in problems), problems)

    def test_an_impossible_day_fails(self):
        later = datetime.datetime(2027, 3, 10, 0, 0, 0)
        problems = self.run_check(["2027-02-30-100000_x"], now=later)
        self.assertTrue(any("not a real time" in p for p in problems), problems)

    def test_the_future_fails(self):
        problems = self.run_check(["2026-12-03-000001_tomorrow"])
        self.assertTrue(any("in the future" in p for p in problems), problems)
        later = datetime.datetime(2027, 1, 10, 12, 0, 0)
        problems = self.run_check(["2027-01-10-130000_soon"], now=later)
        self.assertTrue(any("in the future" in p for p in problems), problems)

    def test_a_renamed_applied_one_fails(self):
        problems = self.run_check(["2026-12-02-100002_sender_numbers"], drop=["2026-11-25-950001"])
        self.assertTrue(any(p.startswith("2026-11-25-950001: an applied migration is missing") for p in problems), problems)

    def test_a_badly_named_one_fails(self):
        problems = self.run_check(["20261203_next"])
        self.assertTrue(any("not named" in p for p in problems), problems)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--self-test", action="store_true", help="run this script's own tests")
    parser.add_argument("--dir", default=os.path.join(os.path.dirname(__file__), "..", "migrations"))
    parser.add_argument("--now", help="the current UTC time, YYYY-MM-DD-HHMMSS (default: the clock)")
    args = parser.parse_args()
    if args.self_test:
        suite = unittest.defaultTestLoader.loadTestsFromTestCase(SelfTest)
        result = unittest.TextTestRunner(verbosity=0).run(suite)
        sys.exit(0 if result.wasSuccessful() else 1)
    now = (
        datetime.datetime.strptime(args.now, FORMAT)
        if args.now
        else datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None, microsecond=0)
    )
    problems = check(args.dir, now)
    for p in problems:
        print(f"check-migrations: {p}", file=sys.stderr)
    if problems:
        sys.exit(1)
    print(f"check-migrations: {len(os.listdir(args.dir))} migrations, versions in order")


if __name__ == "__main__":
    main()
